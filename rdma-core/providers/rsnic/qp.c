// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Queue pairs: send and receive rings the kernel allocated and mapped.
 * Posting writes WQEs in the card's format and rings the QP's doorbell
 * once per call, after a barrier that makes the WQEs visible first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>
#include <kernel-abi/rsnic-abi.h>

#include "rsnic.h"

DECLARE_DRV_CMD(ursnic_create_qp, IB_USER_VERBS_CMD_CREATE_QP, empty,
		rsnic_ib_create_qp_resp);
DECLARE_DRV_CMD(ursnic_create_qp_ex, IB_USER_VERBS_EX_CMD_CREATE_QP, empty,
		rsnic_ib_create_qp_resp);

/* The work requests the card carries out, by QP type (ibv_wr_*). */
enum {
	RSNIC_UD_SEND_OPS = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
	/* UC: no READ, atomics, nor SEND with invalidate. */
	RSNIC_UC_SEND_OPS = RSNIC_UD_SEND_OPS | IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			    IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW,
	RSNIC_RC_SEND_OPS = RSNIC_UC_SEND_OPS | IBV_QP_EX_WITH_SEND_WITH_INV |
			    IBV_QP_EX_WITH_RDMA_READ |
			    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
			    IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |
			    IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE,
	/* XRC has neither FLUSH nor ATOMIC WRITE. */
	RSNIC_XRC_SEND_OPS = RSNIC_RC_SEND_OPS & ~(IBV_QP_EX_WITH_FLUSH |
						   IBV_QP_EX_WITH_ATOMIC_WRITE),
	RSNIC_QP_INIT_ATTRS = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			      IBV_QP_INIT_ATTR_CREATE_FLAGS |
			      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
};

DECLARE_DRV_CMD(ursnic_open_qp, IB_USER_VERBS_CMD_OPEN_QP, empty, empty);

/* XRC initiators and targets: no receive queue of their own. */
static bool is_xrc(enum ibv_qp_type type)
{
	return type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV;
}

void rsnic_ring(struct rsnic_context *ctx, unsigned int reg, uint32_t id,
		uint16_t value)
{
	mmio_write32((uint8_t *)ctx->db + reg,
		     htole32((id & 0xffff) | (uint32_t)value << 16));
}

struct rsnic_qp *rsnic_find_qp(struct rsnic_context *ctx, uint32_t qpn)
{
	struct rsnic_qp **block;

	if (qpn >= RSNIC_QP_TABLE_BLOCK * RSNIC_QP_TABLE_BLOCK)
		return NULL;
	block = ctx->qp_table[qpn / RSNIC_QP_TABLE_BLOCK];
	return block ? block[qpn % RSNIC_QP_TABLE_BLOCK] : NULL;
}

static int store_qp(struct rsnic_context *ctx, uint32_t qpn,
		    struct rsnic_qp *qp)
{
	struct rsnic_qp ***block;

	if (qpn >= RSNIC_QP_TABLE_BLOCK * RSNIC_QP_TABLE_BLOCK)
		return EINVAL;
	block = &ctx->qp_table[qpn / RSNIC_QP_TABLE_BLOCK];
	pthread_mutex_lock(&ctx->qp_table_lock);
	if (!*block)
		*block = calloc(RSNIC_QP_TABLE_BLOCK, sizeof(**block));
	if (*block)
		(*block)[qpn % RSNIC_QP_TABLE_BLOCK] = qp;
	pthread_mutex_unlock(&ctx->qp_table_lock);
	return *block ? 0 : ENOMEM;
}

/* Maps a work queue's ring of `entries` entries of `len` bytes. */
static int map_wq(struct ibv_context *context, struct rsnic_wq *wq,
		  uint32_t entries, size_t len, uint64_t offset)
{
	if (!entries || entries & (entries - 1))
		return EPROTO;
	wq->entries = entries;
	wq->ring_len = align((size_t)entries * len, RSNIC_DB_PAGE_SIZE);
	wq->wrid = calloc(entries, sizeof(*wq->wrid));
	if (!wq->wrid)
		return ENOMEM;
	wq->ring = mmap(NULL, wq->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			context->cmd_fd, offset);
	if (wq->ring == MAP_FAILED) {
		wq->ring = NULL;
		return errno;
	}
	return 0;
}

static void unmap_wq(struct rsnic_wq *wq)
{
	if (wq->ring)
		munmap(wq->ring, wq->ring_len);
	free(wq->wrid);
	pthread_spin_destroy(&wq->lock);
}

/* Whether the card makes the QP `attr` asks for; an errno if not. */
static int check_qp_attr(const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops = attr->qp_type == IBV_QPT_UD	 ? RSNIC_UD_SEND_OPS :
		       attr->qp_type == IBV_QPT_UC	 ? RSNIC_UC_SEND_OPS :
		       attr->qp_type == IBV_QPT_XRC_SEND ? RSNIC_XRC_SEND_OPS :
		       attr->qp_type == IBV_QPT_XRC_RECV ? 0 :
							   RSNIC_RC_SEND_OPS;
	/* An XRC target is made in an XRC domain, every other QP in a PD. */
	uint64_t domain = attr->qp_type == IBV_QPT_XRC_RECV ?
				  IBV_QP_INIT_ATTR_XRCD :
				  IBV_QP_INIT_ATTR_PD;

	if (attr->comp_mask & ~RSNIC_QP_INIT_ATTRS ||
	    !(attr->comp_mask & domain))
		return EOPNOTSUPP;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS &&
	    attr->send_ops_flags & ~ops)
		return EOPNOTSUPP;
	/* The card knows no creation flag. */
	if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS &&
	    attr->create_flags)
		return EOPNOTSUPP;
	if (attr->cap.max_inline_data > RSNIC_MAX_INLINE_DATA)
		return EINVAL;
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD && !is_xrc(attr->qp_type))
		return EOPNOTSUPP;
	/* Only the connected QPs (RC, UC) receive from an SRQ. */
	if (attr->srq && attr->qp_type != IBV_QPT_RC &&
	    attr->qp_type != IBV_QPT_UC)
		return EOPNOTSUPP;
	return 0;
}

static void set_qp_ex_ops(struct rsnic_qp *qp);

/*
 * Creates the QP: the kernel's extended command for extended attributes,
 * the plain one otherwise; then maps its rings. A QP created with
 * send_ops_flags posts through ibv_wr_* too.
 */
static struct ibv_qp *create_qp(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *attr)
{
	bool ex = attr->comp_mask != IBV_QP_INIT_ATTR_PD;
	bool target = attr->qp_type == IBV_QPT_XRC_RECV;
	struct rsnic_context *ctx = to_rctx(context);
	struct rsnic_ib_create_qp_resp r;
	struct rsnic_qp *qp;
	int ret;

	ret = check_qp_attr(attr);
	if (ret) {
		errno = ret;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	qp->signal_all = attr->sq_sig_all;

	if (ex) {
		struct ursnic_create_qp_ex_resp resp = {};
		struct ibv_create_qp_ex cmd = {};

		ret = ibv_cmd_create_qp_ex2(context, &qp->vqp, attr, &cmd,
					    sizeof(cmd), &resp.ibv_resp,
					    sizeof(resp), NULL);
		r = resp.drv_payload;
	} else {
		struct ursnic_create_qp_resp resp = {};
		struct ibv_create_qp cmd = {};

		ret = ibv_cmd_create_qp_ex(context, &qp->vqp, attr, &cmd,
					   sizeof(cmd), &resp.ibv_resp,
					   sizeof(resp));
		r = resp.drv_payload;
	}
	if (ret)
		goto err_free;
	/*
	 * An XRC target has no queues (the kernel made it, and may share it
	 * with other processes); nothing completes on it in this context.
	 */
	if (!target)
		ret = map_wq(context, &qp->sq, r.sq_entries, RSNIC_SQ_WQE_LEN,
			     r.sq_offset);
	if (!ret && !attr->srq && !is_xrc(attr->qp_type))
		ret = map_wq(context, &qp->rq, r.rq_entries, RSNIC_RQ_WQE_LEN,
			     r.rq_offset);
	if (!ret && !target)
		ret = store_qp(ctx, qp->vqp.qp.qp_num, qp);
	if (ret) {
		verbs_err(&ctx->ibv_ctx, "rsnic: cannot set up QP %u: %d\n",
			  qp->vqp.qp.qp_num, ret);
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		goto err_free;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		set_qp_ex_ops(qp);
	attr->cap.max_send_wr = qp->sq.entries;
	attr->cap.max_recv_wr = qp->rq.entries;
	attr->cap.max_send_sge = target ? 0 : RSNIC_MAX_SGE;
	attr->cap.max_recv_sge =
		attr->srq || is_xrc(attr->qp_type) ? 0 : RSNIC_MAX_SGE;
	attr->cap.max_inline_data = target ? 0 : RSNIC_MAX_INLINE_DATA;
	return &qp->vqp.qp;

err_free:
	unmap_wq(&qp->sq);
	unmap_wq(&qp->rq);
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *rsnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct ibv_qp *qp;

	/* ibv_qp_init_attr is the head of ibv_qp_init_attr_ex. */
	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd;
	qp = create_qp(pd->context, &attr_ex);
	if (qp)
		attr->cap = attr_ex.cap;
	return qp;
}

struct ibv_qp *rsnic_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr)
{
	return create_qp(context, attr);
}

/*
 * Another handle on an XRC target (of the domain `attr` names), which
 * may be another process's: the kernel's object alone, as the target
 * has no queues.
 */
struct ibv_qp *rsnic_open_qp(struct ibv_context *context,
			     struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp = {};
	struct ibv_open_qp cmd = {};
	struct rsnic_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	ret = ibv_cmd_open_qp(context, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		pthread_spin_destroy(&qp->sq.lock);
		pthread_spin_destroy(&qp->rq.lock);
		free(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

int rsnic_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

/* Forgets what a work queue held, as the card does at RESET. */
static void reset_wq(struct rsnic_wq *wq)
{
	pthread_spin_lock(&wq->lock);
	wq->head = 0;
	wq->tail = 0;
	pthread_spin_unlock(&wq->lock);
}

int rsnic_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		    int attr_mask)
{
	struct rsnic_qp *qp = to_rqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret || !(attr_mask & IBV_QP_STATE) ||
	    attr->qp_state != IBV_QPS_RESET ||
	    ibqp->qp_type == IBV_QPT_XRC_RECV)
		return ret;
	/*
	 * The card starts the QP's queues again from slot 0 and forgets
	 * their requests: so does the provider, and the completions of them
	 * still in the CQs (flushed when the QP failed) are dropped, not
	 * taken for the new requests in the same slots.
	 */
	reset_wq(&qp->sq);
	if (!ibqp->srq)
		reset_wq(&qp->rq);
	rsnic_cq_mark_stale(ibqp->send_cq, &qp->stale_send);
	/* An XRC initiator has no receive CQ. */
	if (ibqp->recv_cq)
		rsnic_cq_mark_stale(ibqp->recv_cq, &qp->stale_recv);
	return 0;
}

int rsnic_destroy_qp(struct ibv_qp *ibqp)
{
	struct rsnic_context *ctx = to_rctx(ibqp->context);
	struct rsnic_qp *qp = to_rqp(ibqp);
	uint32_t qpn = ibqp->qp_num;
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	store_qp(ctx, qpn, NULL);
	unmap_wq(&qp->sq);
	unmap_wq(&qp->rq);
	free(qp->batch.rekey);
	free(qp);
	return 0;
}

int rsnic_write_recv(void *ring, uint32_t slot, const struct ibv_recv_wr *wr)
{
	struct rsnic_rq_wqe w = {};

	if (wr->num_sge < 0 || wr->num_sge > RSNIC_MAX_SGE)
		return EINVAL;
	w.num_sge = wr->num_sge;
	rsnic_put_sges(w.sge, wr->sg_list, wr->num_sge);
	memcpy((uint8_t *)ring + (size_t)slot * RSNIC_RQ_WQE_LEN, &w,
	       sizeof(w));
	return 0;
}

void rsnic_put_sges(struct rsnic_sge *out, const struct ibv_sge *sg, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		out[i].addr = htole64(sg[i].addr);
		out[i].len = htole32(sg[i].length);
		out[i].lkey = htole32(sg[i].lkey);
	}
}

/*
 * Copies the payload `wr`'s gather list points to into the WQE, where the
 * card reads it (lkeys are not looked at, as the verbs define inline
 * sends); EINVAL if it is longer than max_inline_data or the opcode
 * carries no payload of its own.
 */
static int put_inline(const struct ibv_send_wr *wr, struct rsnic_sq_wqe *w)
{
	size_t len = 0;
	int i;

	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		break;
	default:
		return EINVAL;
	}
	for (i = 0; i < wr->num_sge; i++) {
		size_t n = wr->sg_list[i].length;

		if (n > RSNIC_MAX_INLINE_DATA - len)
			return EINVAL;
		memcpy(w->inline_data + len,
		       (const void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	w->flags |= RSNIC_WQE_INLINE;
	w->inline_len = len;
	w->num_sge = 0;
	return 0;
}

/* Builds the WQE of `wr` for `qp`; an errno for what the card cannot do. */
static int build_send(struct rsnic_qp *qp, const struct ibv_send_wr *wr,
		      struct rsnic_sq_wqe *w)
{
	/* RC, and XRC's initiator (whose requests name the target's SRQ). */
	bool reliable = qp->vqp.qp.qp_type == IBV_QPT_RC ||
			qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND;

	memset(w, 0, sizeof(*w));
	if (wr->num_sge < 0 || wr->num_sge > RSNIC_MAX_SGE)
		return EINVAL;
	switch (wr->opcode) {
	case IBV_WR_SEND:
		w->opcode = RSNIC_WQE_SEND;
		break;
	case IBV_WR_SEND_WITH_IMM:
		w->opcode = RSNIC_WQE_SEND_IMM;
		w->imm = wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
		if (!reliable)
			return EINVAL;
		w->opcode = RSNIC_WQE_SEND_INV;
		w->imm = htole32(wr->invalidate_rkey);
		break;
	case IBV_WR_LOCAL_INV:
		/* A process invalidates its type 2 memory windows only. */
		w->opcode = RSNIC_WQE_LOCAL_INV;
		w->imm = htole32(wr->invalidate_rkey);
		break;
	case IBV_WR_BIND_MW: {
		const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;
		unsigned int remote = IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_REMOTE_ATOMIC;
		/* A window grants remote rights; local write means nothing. */
		unsigned int rights = b->mw_access_flags &
				      ~IBV_ACCESS_LOCAL_WRITE;

		/* Not zero-based; the card's access bits are the verbs'. */
		if (!wr->bind_mw.mw || rights & ~remote ||
		    (b->length && !b->mr))
			return EINVAL;
		w->opcode = RSNIC_WQE_BIND_MW;
		w->rkey = htole32(wr->bind_mw.rkey);
		w->remote_addr = htole64(b->addr);
		w->qkey = htole32(rights);
		w->bind.mr_key = htole32(b->mr ? b->mr->lkey : 0);
		w->bind.len = htole64(b->length);
		break;
	}
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		/* UC writes, but does not read. */
		if (!reliable && (qp->vqp.qp.qp_type != IBV_QPT_UC ||
				  wr->opcode == IBV_WR_RDMA_READ))
			return EINVAL;
		w->opcode = wr->opcode == IBV_WR_RDMA_READ ? RSNIC_WQE_READ :
			    wr->opcode == IBV_WR_RDMA_WRITE ? RSNIC_WQE_WRITE :
							      RSNIC_WQE_WRITE_IMM;
		w->imm = wr->imm_data;
		w->remote_addr = htole64(wr->wr.rdma.remote_addr);
		w->rkey = htole32(wr->wr.rdma.rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* The old value lands in the one SGE (8 bytes). */
		if (!reliable || wr->num_sge != 1)
			return EINVAL;
		w->opcode = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
				    RSNIC_WQE_CMP_SWAP :
				    RSNIC_WQE_FETCH_ADD;
		w->remote_addr = htole64(wr->wr.atomic.remote_addr);
		w->rkey = htole32(wr->wr.atomic.rkey);
		w->atomic.compare_add = htole64(wr->wr.atomic.compare_add);
		w->atomic.swap = htole64(wr->wr.atomic.swap);
		break;
	case IBV_WR_FLUSH:
	case IBV_WR_ATOMIC_WRITE: {
		const struct rsnic_wr_batch *b = &qp->batch;

		/*
		 * RC only, and through ibv_wr_flush / ibv_wr_atomic_write
		 * alone: an ibv_send_wr has no room for their operands.
		 */
		if (qp->vqp.qp.qp_type != IBV_QPT_RC || wr != &b->wr ||
		    wr->num_sge)
			return EINVAL;
		w->remote_addr = htole64(wr->wr.rdma.remote_addr);
		w->rkey = htole32(wr->wr.rdma.rkey);
		if (wr->opcode == IBV_WR_ATOMIC_WRITE) {
			w->opcode = RSNIC_WQE_ATOMIC_WRITE;
			memcpy(w->atomic_write.value, b->atomic_write, 8);
			break;
		}
		/* The wire's RETH holds a 32-bit length. */
		if (b->flush_level > IBV_FLUSH_MR ||
		    (b->flush_level == IBV_FLUSH_RANGE &&
		     b->flush_len > UINT32_MAX))
			return EINVAL;
		w->opcode = RSNIC_WQE_FLUSH;
		w->flush.len = htole64(b->flush_level == IBV_FLUSH_RANGE ?
					       b->flush_len : 0);
		w->flush.placement = b->flush_type;
		w->flush.level = b->flush_level;
		break;
	}
	default:
		return EINVAL;
	}
	if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
		if (!wr->wr.ud.ah)
			return EINVAL;
		w->av = to_rah(wr->wr.ud.ah)->av;
		w->dest_qpn = htole32(wr->wr.ud.remote_qpn);
		w->qkey = htole32(wr->wr.ud.remote_qkey);
	}
	if (qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = htole32(wr->qp_type.xrc.remote_srqn);
	if (qp->signal_all || wr->send_flags & IBV_SEND_SIGNALED)
		w->flags |= RSNIC_WQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		w->flags |= RSNIC_WQE_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		w->flags |= RSNIC_WQE_FENCE;
	if (wr->send_flags & IBV_SEND_INLINE)
		return put_inline(wr, w);
	w->num_sge = wr->num_sge;
	rsnic_put_sges(w->sge, wr->sg_list, wr->num_sge);
	return 0;
}

/*
 * Writes the WQE of `wr` at the SQ's head and moves the head (not the
 * card's: that is the doorbell's). The caller holds the SQ's lock.
 */
static int write_send(struct rsnic_qp *qp, const struct ibv_send_wr *wr)
{
	struct rsnic_wq *sq = &qp->sq;
	uint32_t slot = sq->head & (sq->entries - 1);
	struct rsnic_sq_wqe w;
	int ret;

	if (sq->head - sq->tail >= sq->entries)
		return ENOMEM;
	ret = build_send(qp, wr, &w);
	if (ret)
		return ret;
	memcpy((uint8_t *)sq->ring + (size_t)slot * RSNIC_SQ_WQE_LEN, &w,
	       sizeof(w));
	sq->wrid[slot] = wr->wr_id;
	sq->head++;
	return 0;
}

/*
 * A QP takes send requests from RTS on (libibverbs keeps `state` as
 * ibv_modify_qp set it), receive requests from INIT on.
 */
static bool can_send(const struct ibv_qp *ibqp)
{
	/* An XRC target has no send queue. */
	return ibqp->state >= IBV_QPS_RTS &&
	       ibqp->qp_type != IBV_QPT_XRC_RECV;
}

/* Tells the card of the SQ's WQEs up to its head, once they are in memory. */
static void ring_sq(struct rsnic_qp *qp)
{
	udma_to_device_barrier();
	rsnic_ring(to_rctx(qp->vqp.qp.context), RSNIC_DB_SQ,
		   qp->vqp.qp.qp_num, qp->sq.head);
}

int rsnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct rsnic_qp *qp = to_rqp(ibqp);
	struct rsnic_wq *sq = &qp->sq;
	uint32_t start;
	int ret = 0;

	if (!can_send(ibqp)) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&sq->lock);
	start = sq->head;
	for (; wr; wr = wr->next) {
		ret = write_send(qp, wr);
		if (ret)
			break;
		/* The window answers to the key the bind gives it. */
		if (wr->opcode == IBV_WR_BIND_MW)
			wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
	}
	if (sq->head != start)
		ring_sq(qp);
	pthread_spin_unlock(&sq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/*
 * ibv_wr_*: each builder fills the batch's ibv_send_wr (after writing
 * the one before it to the ring), so a request built this way is checked
 * and written exactly as ibv_post_send's are.
 */

static void batch_fail(struct rsnic_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* Writes the started request, if any, to the ring. */
static void batch_write(struct rsnic_qp *qp)
{
	struct rsnic_wr_batch *b = &qp->batch;
	struct rsnic_mw_rekey *more;

	if (!b->pending)
		return;
	b->pending = false;
	if (b->err)
		return;
	batch_fail(b, write_send(qp, &b->wr));
	if (b->err || b->wr.opcode != IBV_WR_BIND_MW)
		return;
	if (b->nr_rekey == b->max_rekey) {
		more = realloc(b->rekey, (b->max_rekey + 4) * sizeof(*more));
		if (!more) {
			batch_fail(b, ENOMEM);
			return;
		}
		b->rekey = more;
		b->max_rekey += 4;
	}
	b->rekey[b->nr_rekey++] = (struct rsnic_mw_rekey){
		b->wr.bind_mw.mw, b->wr.bind_mw.rkey };
}

/* Starts the batch's next request: `opcode`, the QP's wr_id and flags. */
static struct ibv_send_wr *batch_next(struct ibv_qp_ex *qpx,
				      enum ibv_wr_opcode opcode)
{
	struct rsnic_qp *qp = to_rqp_ex(qpx);
	struct rsnic_wr_batch *b = &qp->batch;

	batch_write(qp);
	memset(&b->wr, 0, sizeof(b->wr));
	b->wr.opcode = opcode;
	b->wr.wr_id = qpx->wr_id;
	b->wr.send_flags = qpx->wr_flags;
	b->wr.sg_list = b->sge;
	b->pending = true;
	return &b->wr;
}

/* The started request, for a setter; NULL (and the batch fails) if none. */
static struct ibv_send_wr *batch_started(struct ibv_qp_ex *qpx)
{
	struct rsnic_wr_batch *b = &to_rqp_ex(qpx)->batch;

	if (b->pending)
		return &b->wr;
	batch_fail(b, EINVAL);
	return NULL;
}

static void rsnic_wr_start(struct ibv_qp_ex *qpx)
{
	struct rsnic_qp *qp = to_rqp_ex(qpx);
	struct rsnic_wr_batch *b = &qp->batch;

	pthread_spin_lock(&qp->sq.lock);
	b->start = qp->sq.head;
	b->pending = false;
	b->err = can_send(&qpx->qp_base) ? 0 : EINVAL;
	b->nr_rekey = 0;
}

static void rsnic_wr_abort(struct ibv_qp_ex *qpx)
{
	struct rsnic_qp *qp = to_rqp_ex(qpx);

	/* The card never heard of what was written since wr_start. */
	qp->sq.head = qp->batch.start;
	qp->batch.pending = false;
	pthread_spin_unlock(&qp->sq.lock);
}

static int rsnic_wr_complete(struct ibv_qp_ex *qpx)
{
	struct rsnic_qp *qp = to_rqp_ex(qpx);
	struct rsnic_wr_batch *b = &qp->batch;
	int ret;
	uint32_t i;

	batch_write(qp);
	ret = b->err;
	if (ret) {
		rsnic_wr_abort(qpx);
		return ret;
	}
	for (i = 0; i < b->nr_rekey; i++)
		b->rekey[i].mw->rkey = b->rekey[i].rkey;
	if (qp->sq.head != b->start)
		ring_sq(qp);
	pthread_spin_unlock(&qp->sq.lock);
	return 0;
}

static void rsnic_wr_send(struct ibv_qp_ex *qpx)
{
	batch_next(qpx, IBV_WR_SEND);
}

static void rsnic_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	batch_next(qpx, IBV_WR_SEND_WITH_IMM)->imm_data = imm_data;
}

static void rsnic_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	batch_next(qpx, IBV_WR_SEND_WITH_INV)->invalidate_rkey =
		invalidate_rkey;
}

static void rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
		 uint32_t rkey, uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *wr = batch_next(qpx, opcode);

	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->imm_data = imm_data;
}

static void rsnic_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr)
{
	rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void rsnic_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm_data);
}

static void rsnic_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
		   uint32_t rkey, uint64_t remote_addr, uint64_t compare_add,
		   uint64_t swap)
{
	struct ibv_send_wr *wr = batch_next(qpx, opcode);

	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void rsnic_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare,
	       swap);
}

static void rsnic_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

static void rsnic_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
			   uint64_t remote_addr, size_t len, uint8_t type,
			   uint8_t level)
{
	struct rsnic_wr_batch *b = &to_rqp_ex(qpx)->batch;

	rdma(qpx, IBV_WR_FLUSH, rkey, remote_addr, 0);
	b->flush_len = len;
	b->flush_type = type;
	b->flush_level = level;
}

static void rsnic_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, const void *atomic_wr)
{
	struct rsnic_wr_batch *b = &to_rqp_ex(qpx)->batch;

	rdma(qpx, IBV_WR_ATOMIC_WRITE, rkey, remote_addr, 0);
	memcpy(b->atomic_write, atomic_wr, sizeof(b->atomic_write));
}

static void rsnic_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	batch_next(qpx, IBV_WR_LOCAL_INV)->invalidate_rkey = invalidate_rkey;
}

static void rsnic_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr *wr = batch_next(qpx, IBV_WR_BIND_MW);

	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *bind_info;
}

static void rsnic_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct ibv_send_wr *wr = batch_started(qpx);

	if (!wr)
		return;
	if (num_sge > RSNIC_MAX_SGE) {
		batch_fail(&to_rqp_ex(qpx)->batch, EINVAL);
		return;
	}
	memcpy(wr->sg_list, sg_list, num_sge * sizeof(*sg_list));
	wr->num_sge = num_sge;
}

static void rsnic_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	rsnic_wr_set_sge_list(qpx, 1, &sge);
}

static void rsnic_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ibv_send_wr *wr = batch_started(qpx);

	if (!wr)
		return;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

static void rsnic_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct ibv_send_wr *wr = batch_started(qpx);

	if (wr)
		wr->qp_type.xrc.remote_srqn = remote_srqn;
}

/*
 * The payload is copied now (the caller may reuse its buffers at once)
 * into the batch, and the request becomes an IBV_SEND_INLINE one whose
 * one SGE points there: build_send copies it into the WQE.
 */
static void rsnic_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct rsnic_wr_batch *b = &to_rqp_ex(qpx)->batch;
	struct ibv_send_wr *wr = batch_started(qpx);
	size_t len = 0, i;

	if (!wr)
		return;
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > RSNIC_MAX_INLINE_DATA - len) {
			batch_fail(b, EINVAL);
			return;
		}
		memcpy(b->inline_buf + len, buf_list[i].addr,
		       buf_list[i].length);
		len += buf_list[i].length;
	}
	b->sge[0] = (struct ibv_sge){ .addr = (uintptr_t)b->inline_buf,
				      .length = len };
	wr->sg_list = b->sge;
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void rsnic_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	rsnic_wr_set_inline_data_list(qpx, 1, &buf);
}

/*
 * Every builder, whatever the QP's type and send_ops_flags: one the type
 * cannot carry out (an RDMA WRITE on a UD QP) fails its batch as
 * ibv_post_send fails it, instead of calling through a NULL pointer.
 */
static void set_qp_ex_ops(struct rsnic_qp *qp)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	qp->vqp.comp_mask |= VERBS_QP_EX;
	qpx->wr_send = rsnic_wr_send;
	qpx->wr_send_imm = rsnic_wr_send_imm;
	qpx->wr_send_inv = rsnic_wr_send_inv;
	qpx->wr_rdma_write = rsnic_wr_rdma_write;
	qpx->wr_rdma_write_imm = rsnic_wr_rdma_write_imm;
	qpx->wr_rdma_read = rsnic_wr_rdma_read;
	qpx->wr_atomic_cmp_swp = rsnic_wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = rsnic_wr_atomic_fetch_add;
	qpx->wr_flush = rsnic_wr_flush;
	qpx->wr_atomic_write = rsnic_wr_atomic_write;
	qpx->wr_local_inv = rsnic_wr_local_inv;
	qpx->wr_bind_mw = rsnic_wr_bind_mw;
	qpx->wr_set_sge = rsnic_wr_set_sge;
	qpx->wr_set_sge_list = rsnic_wr_set_sge_list;
	qpx->wr_set_inline_data = rsnic_wr_set_inline_data;
	qpx->wr_set_inline_data_list = rsnic_wr_set_inline_data_list;
	qpx->wr_set_ud_addr = rsnic_wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = rsnic_wr_set_xrc_srqn;
	qpx->wr_start = rsnic_wr_start;
	qpx->wr_complete = rsnic_wr_complete;
	qpx->wr_abort = rsnic_wr_abort;
}

int rsnic_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct rsnic_qp *qp = to_rqp(ibqp);
	struct rsnic_wq *rq = &qp->rq;
	uint32_t start;
	int ret = 0;

	/* An SRQ's QP takes its receives from the SRQ; XRC's QPs have none. */
	if (ibqp->srq || is_xrc(ibqp->qp_type) ||
	    ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&rq->lock);
	start = rq->head;
	for (; wr; wr = wr->next) {
		uint32_t slot = rq->head & (rq->entries - 1);

		if (rq->head - rq->tail >= rq->entries) {
			ret = ENOMEM;
			break;
		}
		ret = rsnic_write_recv(rq->ring, slot, wr);
		if (ret)
			break;
		rq->wrid[slot] = wr->wr_id;
		rq->head++;
	}
	if (rq->head != start) {
		udma_to_device_barrier();
		rsnic_ring(to_rctx(ibqp->context), RSNIC_DB_RQ, ibqp->qp_num,
			   rq->head);
	}
	pthread_spin_unlock(&rq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}
