/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The rsnic provider: libibverbs' user-space half of the rsnic RDMA
 * engine (the kernel half is rsnic.ko's auxiliary RDMA driver). The
 * kernel allocates every ring and maps it, with the context's doorbell
 * page, into the process; the provider writes WQEs, rings doorbells and
 * polls CQEs itself.
 */
#ifndef RSNIC_PROVIDER_H
#define RSNIC_PROVIDER_H

#include <pthread.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <rdma/rsnic-abi.h>

#include "rsnic_hw.h"

struct rsnic_device {
	struct verbs_device ibv_dev;
};

/* QPs by number, for completions: 256 blocks of 256, made as needed. */
enum { RSNIC_QP_TABLE_BLOCK = 256 };
/* XRC SRQs by number (a CQE names one in 16 bits; the card has 64). */
enum { RSNIC_XRC_SRQ_TABLE = 256 };

struct rsnic_context {
	struct verbs_context ibv_ctx;
	void *db;			/* the context's doorbell page */
	pthread_mutex_t qp_table_lock;
	struct rsnic_qp **qp_table[RSNIC_QP_TABLE_BLOCK];
	/*
	 * The context's XRC SRQs: their completions name the XRC target QP,
	 * which may be another process's, so they are found by SRQ number.
	 */
	pthread_mutex_t xrc_srq_lock;
	struct rsnic_srq *xrc_srqs[RSNIC_XRC_SRQ_TABLE];
};

/*
 * A protection domain, or a parent domain over one
 * (ibv_alloc_parent_domain). A parent domain is the user-space view of its
 * PD: it carries the PD's kernel handle, so every kernel command made with
 * it acts on the PD. Its allocators are never called: the provider
 * allocates no queue memory (the kernel allocates every ring and maps
 * it), so there is nothing to allocate through them.
 */
struct rsnic_pd {
	struct ibv_pd ibv_pd;
	struct rsnic_pd *protection;	/* a parent domain's PD; NULL for a PD */
	pthread_mutex_t lock;		/* a PD: guards `parents` */
	uint32_t parents;		/* a PD: its parent domains */
};

struct rsnic_cq {
	struct verbs_cq vcq;		/* ibv_cq, or ibv_cq_ex if extended */
	pthread_spinlock_t lock;
	uint32_t cqn;
	uint32_t entries;		/* a power of two */
	uint32_t consumed;		/* free running */
	uint32_t poll_start;		/* `consumed` at start_poll */
	uint32_t cqe_len;		/* RSNIC_CQE_LEN or _STAMPED_LEN */
	void *ring;
	size_t ring_len;
	struct ibv_wc cur;		/* what the ibv_cq_ex readers read */
	uint64_t cur_timestamp;		/* and the card's clock for it */
};

/* One work queue of a QP: its mapped ring and the wr_id of each slot. */
struct rsnic_wq {
	void *ring;
	size_t ring_len;
	uint64_t *wrid;
	uint32_t entries;		/* a power of two */
	uint32_t head;			/* posted, free running */
	uint32_t tail;			/* completed, free running */
	pthread_spinlock_t lock;
};

/*
 * A shared receive queue: its mapped ring, and per slot the wr_id and
 * whether a request is posted there and not completed.
 */
struct rsnic_srq {
	struct verbs_srq vsrq;		/* ibv_srq, and an XRC SRQ's number */
	bool xrc;
	void *ring;
	size_t ring_len;
	uint64_t *wrid;
	bool *posted;
	uint32_t srqn;
	uint32_t entries;		/* slots in use, a power of two */
	uint32_t max_entries;		/* the ring's room */
	uint32_t head;			/* posted, free running */
	uint32_t origin;		/* the position that is slot 0 */
	pthread_spinlock_t lock;
};

/* A memory window's rkey, given it when the batch that binds it posts. */
struct rsnic_mw_rekey {
	struct ibv_mw *mw;
	uint32_t rkey;
};

/*
 * What an ibv_qp_ex builds between wr_start and wr_complete: the request
 * a wr_* builder started, which its setters complete and which goes to
 * the ring when the next one starts or at wr_complete. The SQ's head
 * moves only in the QP's ring until wr_complete rings the doorbell; an
 * error or wr_abort puts it back to `start`.
 */
struct rsnic_wr_batch {
	struct ibv_send_wr wr;
	struct ibv_sge sge[RSNIC_MAX_SGE];
	/* wr_set_inline_data*: the payload, copied when set. */
	uint8_t inline_buf[RSNIC_MAX_INLINE_DATA];
	/* wr_flush and wr_atomic_write: what ibv_send_wr has no room for. */
	uint64_t flush_len;
	uint8_t flush_type, flush_level;
	uint8_t atomic_write[8];
	bool pending;			/* `wr` is started, not yet written */
	uint32_t start;			/* the SQ's head at wr_start */
	int err;			/* the first error since wr_start */
	struct rsnic_mw_rekey *rekey;	/* the batch's binds */
	uint32_t nr_rekey, max_rekey;
};

/*
 * Completions a QP's earlier life (before its last RESET) left in one of
 * its CQs: those up to `until`, the CQ's free-running index, are dropped.
 */
struct rsnic_stale {
	bool active;
	uint32_t until;
};

struct rsnic_qp {
	struct verbs_qp vqp;		/* ibv_qp, and ibv_qp_ex if extended */
	struct rsnic_wq sq;
	struct rsnic_wq rq;
	bool signal_all;
	struct rsnic_wr_batch batch;
	struct rsnic_stale stale_send, stale_recv;
};

struct rsnic_ah {
	struct ibv_ah ibv_ah;
	struct rsnic_av av;
};

static inline struct rsnic_context *to_rctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct rsnic_context, ibv_ctx.context);
}

static inline struct rsnic_pd *to_rpd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct rsnic_pd, ibv_pd);
}

/* The protection domain `ibpd` is, or is the parent domain of. */
static inline struct rsnic_pd *rsnic_protection_domain(struct ibv_pd *ibpd)
{
	struct rsnic_pd *pd = to_rpd(ibpd);

	return pd->protection ? pd->protection : pd;
}

static inline struct rsnic_cq *to_rcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct rsnic_cq, vcq.cq);
}

static inline struct rsnic_cq *to_rcq_ex(struct ibv_cq_ex *cq_ex)
{
	return container_of(cq_ex, struct rsnic_cq, vcq.cq_ex);
}

static inline struct rsnic_qp *to_rqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct rsnic_qp, vqp.qp);
}

static inline struct rsnic_qp *to_rqp_ex(struct ibv_qp_ex *qp_ex)
{
	return container_of(qp_ex, struct rsnic_qp, vqp.qp_ex);
}

static inline struct rsnic_srq *to_rsrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct rsnic_srq, vsrq.srq);
}

static inline struct rsnic_ah *to_rah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct rsnic_ah, ibv_ah);
}

/* Rings one of the context's doorbells. */
void rsnic_ring(struct rsnic_context *ctx, unsigned int reg, uint32_t id,
		uint16_t value);

struct rsnic_qp *rsnic_find_qp(struct rsnic_context *ctx, uint32_t qpn);
/* Marks what `cq` holds now as stale (`s`, one of a QP's, at RESET). */
void rsnic_cq_mark_stale(struct ibv_cq *cq, struct rsnic_stale *s);
/* Writes `n` SGEs in the card's format. */
void rsnic_put_sges(struct rsnic_sge *out, const struct ibv_sge *sg, int n);
/* Writes the receive WQE of `wr` into `slot` of `ring`; EINVAL if it
 * has more SGEs than the card takes. */
int rsnic_write_recv(void *ring, uint32_t slot, const struct ibv_recv_wr *wr);

struct ibv_cq *rsnic_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
struct ibv_cq_ex *rsnic_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr);
int rsnic_destroy_cq(struct ibv_cq *cq);
int rsnic_resize_cq(struct ibv_cq *cq, int cqe);
int rsnic_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int rsnic_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int rsnic_query_rt_values(struct ibv_context *context,
			  struct ibv_values_ex *values);

struct ibv_qp *rsnic_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr);
struct ibv_qp *rsnic_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr);
int rsnic_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr);
int rsnic_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		    int attr_mask);
int rsnic_destroy_qp(struct ibv_qp *qp);
int rsnic_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int rsnic_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
struct ibv_qp *rsnic_open_qp(struct ibv_context *context,
			     struct ibv_qp_open_attr *attr);

struct ibv_srq *rsnic_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr);
int rsnic_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		     int attr_mask);
int rsnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int rsnic_destroy_srq(struct ibv_srq *srq);
int rsnic_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);
struct ibv_srq *rsnic_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr);
int rsnic_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
/* The context's XRC SRQ `srqn`, if it has one. */
struct rsnic_srq *rsnic_find_xrc_srq(struct rsnic_context *ctx, uint32_t srqn);
struct ibv_dm *rsnic_alloc_dm(struct ibv_context *context,
			      struct ibv_alloc_dm_attr *attr);
int rsnic_free_dm(struct ibv_dm *dm);
struct ibv_mr *rsnic_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
			       uint64_t offset, size_t length,
			       unsigned int access);

/* The SRQ's request in `slot` completed: its wr_id; false if none. */
bool rsnic_srq_retire(struct rsnic_srq *srq, uint16_t slot, uint64_t *wr_id);

#endif /* RSNIC_PROVIDER_H */
