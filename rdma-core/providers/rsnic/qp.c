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

struct ibv_qp *rsnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct rsnic_context *ctx = to_rctx(pd->context);
	struct ursnic_create_qp_resp resp = {};
	struct ibv_create_qp cmd = {};
	struct rsnic_qp *qp;
	int ret;

	/* Only an RC QP receives from an SRQ on this card. */
	if (attr->cap.max_inline_data ||
	    (attr->srq && attr->qp_type != IBV_QPT_RC) ||
	    (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	qp->signal_all = attr->sq_sig_all;

	ret = ibv_cmd_create_qp(pd, &qp->ibv_qp, attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = map_wq(pd->context, &qp->sq, resp.drv_payload.sq_entries,
		     RSNIC_SQ_WQE_LEN, resp.drv_payload.sq_offset);
	if (!ret && !attr->srq)
		ret = map_wq(pd->context, &qp->rq, resp.drv_payload.rq_entries,
			     RSNIC_RQ_WQE_LEN, resp.drv_payload.rq_offset);
	if (!ret)
		ret = store_qp(ctx, qp->ibv_qp.qp_num, qp);
	if (ret) {
		verbs_err(&ctx->ibv_ctx, "rsnic: cannot set up QP %u: %d\n",
			  qp->ibv_qp.qp_num, ret);
		ibv_cmd_destroy_qp(&qp->ibv_qp);
		goto err_free;
	}
	attr->cap.max_send_wr = qp->sq.entries;
	attr->cap.max_recv_wr = qp->rq.entries;
	attr->cap.max_send_sge = RSNIC_MAX_SGE;
	attr->cap.max_recv_sge = attr->srq ? 0 : RSNIC_MAX_SGE;
	attr->cap.max_inline_data = 0;
	return &qp->ibv_qp;

err_free:
	unmap_wq(&qp->sq);
	unmap_wq(&qp->rq);
	free(qp);
	errno = ret;
	return NULL;
}

int rsnic_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int rsnic_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
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

/* Builds the WQE of `wr` for `qp`; an errno for what the card cannot do. */
static int build_send(struct rsnic_qp *qp, const struct ibv_send_wr *wr,
		      struct rsnic_sq_wqe *w)
{
	memset(w, 0, sizeof(*w));
	if (wr->num_sge < 0 || wr->num_sge > RSNIC_MAX_SGE)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE)
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
		if (qp->ibv_qp.qp_type != IBV_QPT_RC)
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
		if (qp->ibv_qp.qp_type != IBV_QPT_RC)
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
		if (qp->ibv_qp.qp_type != IBV_QPT_RC || wr->num_sge != 1)
			return EINVAL;
		w->opcode = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
				    RSNIC_WQE_CMP_SWAP :
				    RSNIC_WQE_FETCH_ADD;
		w->remote_addr = htole64(wr->wr.atomic.remote_addr);
		w->rkey = htole32(wr->wr.atomic.rkey);
		w->atomic.compare_add = htole64(wr->wr.atomic.compare_add);
		w->atomic.swap = htole64(wr->wr.atomic.swap);
		break;
	default:
		return EINVAL;
	}
	if (qp->ibv_qp.qp_type == IBV_QPT_UD) {
		if (!wr->wr.ud.ah)
			return EINVAL;
		w->av = to_rah(wr->wr.ud.ah)->av;
		w->dest_qpn = htole32(wr->wr.ud.remote_qpn);
		w->qkey = htole32(wr->wr.ud.remote_qkey);
	}
	if (qp->signal_all || wr->send_flags & IBV_SEND_SIGNALED)
		w->flags |= RSNIC_WQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		w->flags |= RSNIC_WQE_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		w->flags |= RSNIC_WQE_FENCE;
	w->num_sge = wr->num_sge;
	rsnic_put_sges(w->sge, wr->sg_list, wr->num_sge);
	return 0;
}

int rsnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct rsnic_qp *qp = to_rqp(ibqp);
	struct rsnic_wq *sq = &qp->sq;
	uint32_t start;
	int ret = 0;

	pthread_spin_lock(&sq->lock);
	start = sq->head;
	for (; wr; wr = wr->next) {
		uint32_t slot = sq->head & (sq->entries - 1);
		struct rsnic_sq_wqe w;

		if (sq->head - sq->tail >= sq->entries) {
			ret = ENOMEM;
			break;
		}
		ret = build_send(qp, wr, &w);
		if (ret)
			break;
		memcpy((uint8_t *)sq->ring + (size_t)slot * RSNIC_SQ_WQE_LEN,
		       &w, sizeof(w));
		sq->wrid[slot] = wr->wr_id;
		sq->head++;
		/* The window answers to the key the bind gives it. */
		if (wr->opcode == IBV_WR_BIND_MW)
			wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
	}
	if (sq->head != start) {
		/* The WQEs are in memory before the card hears of them. */
		udma_to_device_barrier();
		rsnic_ring(to_rctx(ibqp->context), RSNIC_DB_SQ, ibqp->qp_num,
			   sq->head);
	}
	pthread_spin_unlock(&sq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int rsnic_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct rsnic_qp *qp = to_rqp(ibqp);
	struct rsnic_wq *rq = &qp->rq;
	uint32_t start;
	int ret = 0;

	if (ibqp->srq) {
		/* Its receives are posted to the SRQ. */
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
