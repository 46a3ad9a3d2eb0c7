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

struct rsnic_context {
	struct verbs_context ibv_ctx;
	void *db;			/* the context's doorbell page */
	pthread_mutex_t qp_table_lock;
	struct rsnic_qp **qp_table[RSNIC_QP_TABLE_BLOCK];
};

struct rsnic_cq {
	struct ibv_cq ibv_cq;
	pthread_spinlock_t lock;
	uint32_t cqn;
	uint32_t entries;		/* a power of two */
	uint32_t consumed;		/* free running */
	void *ring;
	size_t ring_len;
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
	struct ibv_srq ibv_srq;
	void *ring;
	size_t ring_len;
	uint64_t *wrid;
	bool *posted;
	uint32_t srqn;
	uint32_t entries;		/* a power of two */
	uint32_t head;			/* posted, free running */
	pthread_spinlock_t lock;
};

struct rsnic_qp {
	struct ibv_qp ibv_qp;
	struct rsnic_wq sq;
	struct rsnic_wq rq;
	bool signal_all;
};

struct rsnic_ah {
	struct ibv_ah ibv_ah;
	struct rsnic_av av;
};

static inline struct rsnic_context *to_rctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct rsnic_context, ibv_ctx.context);
}

static inline struct rsnic_cq *to_rcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct rsnic_cq, ibv_cq);
}

static inline struct rsnic_qp *to_rqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct rsnic_qp, ibv_qp);
}

static inline struct rsnic_srq *to_rsrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct rsnic_srq, ibv_srq);
}

static inline struct rsnic_ah *to_rah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct rsnic_ah, ibv_ah);
}

/* Rings one of the context's doorbells. */
void rsnic_ring(struct rsnic_context *ctx, unsigned int reg, uint32_t id,
		uint16_t value);

struct rsnic_qp *rsnic_find_qp(struct rsnic_context *ctx, uint32_t qpn);
/* Writes `n` SGEs in the card's format. */
void rsnic_put_sges(struct rsnic_sge *out, const struct ibv_sge *sg, int n);
/* Writes the receive WQE of `wr` into `slot` of `ring`; EINVAL if it
 * has more SGEs than the card takes. */
int rsnic_write_recv(void *ring, uint32_t slot, const struct ibv_recv_wr *wr);

struct ibv_cq *rsnic_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
int rsnic_destroy_cq(struct ibv_cq *cq);
int rsnic_resize_cq(struct ibv_cq *cq, int cqe);
int rsnic_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int rsnic_req_notify_cq(struct ibv_cq *cq, int solicited_only);

struct ibv_qp *rsnic_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr);
int rsnic_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr);
int rsnic_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		    int attr_mask);
int rsnic_destroy_qp(struct ibv_qp *qp);
int rsnic_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int rsnic_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);

struct ibv_srq *rsnic_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr);
int rsnic_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		     int attr_mask);
int rsnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int rsnic_destroy_srq(struct ibv_srq *srq);
int rsnic_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);
/* The SRQ's request in `slot` completed: its wr_id; false if none. */
bool rsnic_srq_retire(struct rsnic_srq *srq, uint16_t slot, uint64_t *wr_id);

#endif /* RSNIC_PROVIDER_H */
