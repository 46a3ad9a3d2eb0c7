// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared receive queues: a ring of receive WQEs the kernel allocated and
 * mapped, which every QP created with the SRQ takes from. The card takes
 * entries in ring order but they complete in any order, so each slot is
 * tracked alone: a post goes to the next slot once that slot's last
 * request completed, and a full SRQ refuses with ENOMEM.
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

DECLARE_DRV_CMD(ursnic_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ, empty,
		rsnic_ib_create_srq_resp);
DECLARE_DRV_CMD(ursnic_create_xsrq, IB_USER_VERBS_CMD_CREATE_XSRQ, empty,
		rsnic_ib_create_srq_resp);

static void free_srq(struct rsnic_srq *srq)
{
	if (srq->ring)
		munmap(srq->ring, srq->ring_len);
	free(srq->wrid);
	free(srq->posted);
	pthread_spin_destroy(&srq->lock);
	free(srq);
}

/*
 * Takes the ring the kernel made for `srq` (its `r`), and the tables for
 * its slots; an errno if the answer makes no sense or memory is short.
 */
static int setup_srq(struct ibv_context *context, struct rsnic_srq *srq,
		     const struct rsnic_ib_create_srq_resp *r)
{
	uint32_t entries = r->entries;

	srq->srqn = r->srqn;
	srq->entries = entries;
	srq->max_entries = r->max_entries;
	if (!entries || entries & (entries - 1) ||
	    srq->max_entries < entries)
		return EPROTO;
	/* Per slot of the whole ring: a resize needs no new tables. */
	srq->wrid = calloc(srq->max_entries, sizeof(*srq->wrid));
	srq->posted = calloc(srq->max_entries, sizeof(*srq->posted));
	if (!srq->wrid || !srq->posted)
		return ENOMEM;
	srq->ring_len = align((size_t)srq->max_entries * RSNIC_RQ_WQE_LEN,
			      RSNIC_DB_PAGE_SIZE);
	srq->ring = mmap(NULL, srq->ring_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED, context->cmd_fd, r->offset);
	if (srq->ring == MAP_FAILED) {
		srq->ring = NULL;
		return errno;
	}
	return 0;
}

/*
 * The SRQ the kernel made (`r` its answer): its ring taken and, an XRC
 * SRQ, listed for its completions; `attr` gets the sizes granted. On
 * error the kernel's SRQ is destroyed again.
 */
static struct ibv_srq *srq_made(struct ibv_context *context,
				struct rsnic_srq *srq,
				const struct rsnic_ib_create_srq_resp *r,
				struct ibv_srq_attr *attr)
{
	struct rsnic_context *ctx = to_rctx(context);
	int ret;

	ret = setup_srq(context, srq, r);
	if (!ret && srq->xrc && srq->srqn >= RSNIC_XRC_SRQ_TABLE)
		ret = EPROTO;
	if (ret) {
		verbs_err(&ctx->ibv_ctx, "rsnic: cannot set up SRQ %u: %d\n",
			  srq->srqn, ret);
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		free_srq(srq);
		errno = ret;
		return NULL;
	}
	if (srq->xrc) {
		pthread_mutex_lock(&ctx->xrc_srq_lock);
		ctx->xrc_srqs[srq->srqn] = srq;
		pthread_mutex_unlock(&ctx->xrc_srq_lock);
	}
	attr->max_wr = srq->entries;
	attr->max_sge = RSNIC_MAX_SGE;
	return &srq->vsrq.srq;
}

struct ibv_srq *rsnic_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct ursnic_create_srq_resp resp = {};
	struct ibv_create_srq cmd = {};
	struct rsnic_srq *srq;
	int ret;

	if (attr->attr.max_sge > RSNIC_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free_srq(srq);
		errno = ret;
		return NULL;
	}
	return srq_made(pd->context, srq, &resp.drv_payload, &attr->attr);
}

struct rsnic_srq *rsnic_find_xrc_srq(struct rsnic_context *ctx, uint32_t srqn)
{
	struct rsnic_srq *srq;

	if (srqn >= RSNIC_XRC_SRQ_TABLE)
		return NULL;
	pthread_mutex_lock(&ctx->xrc_srq_lock);
	srq = ctx->xrc_srqs[srqn];
	pthread_mutex_unlock(&ctx->xrc_srq_lock);
	return srq;
}

/*
 * An XRC SRQ (a basic one comes through rsnic_create_srq): the XRC
 * targets of its domain put the SENDs that name it there, and its
 * receives complete on its own CQ.
 */
struct ibv_srq *rsnic_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr)
{
	enum {
		XRC = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
	};
	struct ursnic_create_xsrq_resp resp = {};
	struct ibv_create_xsrq cmd = {};
	struct rsnic_srq *srq;
	int ret;

	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ||
	    attr->srq_type != IBV_SRQT_XRC ||
	    (attr->comp_mask & XRC) != XRC || attr->comp_mask & ~XRC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->attr.max_sge > RSNIC_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	srq->xrc = true;
	ret = ibv_cmd_create_srq_ex(context, &srq->vsrq, attr, &cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free_srq(srq);
		errno = ret;
		return NULL;
	}
	return srq_made(context, srq, &resp.drv_payload, &attr->attr);
}

int rsnic_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct rsnic_srq *srq = to_rsrq(ibsrq);

	if (!srq->xrc)
		return EINVAL;
	*srq_num = srq->srqn;
	return 0;
}

/*
 * A resize (IBV_SRQ_MAX_WR) grows the SRQ within its ring. Posts are held
 * off meanwhile, so the card's last doorbell is this head. Slot 0 of the
 * new size is the position that began the lap (of the old size) the last
 * post is in: that lap's slots stay where they are, every later post goes
 * on to the new slots, and WQEs posted and not completed keep the slot
 * numbers their completions name. The card computes the same start from
 * its doorbell.
 */
int rsnic_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		     int attr_mask)
{
	struct rsnic_srq *srq = to_rsrq(ibsrq);
	struct ibv_modify_srq cmd = {};
	struct ibv_query_srq qcmd = {};
	struct ibv_srq_attr now;
	uint32_t last;
	int ret;

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd,
					  sizeof(cmd));
	pthread_spin_lock(&srq->lock);
	/* The card refuses another resize before it reached this one's. */
	ret = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
	if (!ret)
		ret = ibv_cmd_query_srq(ibsrq, &now, &qcmd, sizeof(qcmd));
	if (!ret && now.max_wr != srq->entries) {
		if (now.max_wr & (now.max_wr - 1) ||
		    now.max_wr > srq->max_entries) {
			ret = EPROTO;
			goto out;
		}
		last = srq->head - 1;
		srq->origin = last - ((last - srq->origin) & (srq->entries - 1));
		srq->entries = now.max_wr;
	}
out:
	pthread_spin_unlock(&srq->lock);
	return ret;
}

int rsnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int rsnic_destroy_srq(struct ibv_srq *ibsrq)
{
	struct rsnic_context *ctx = to_rctx(ibsrq->context);
	struct rsnic_srq *srq = to_rsrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	if (srq->xrc) {
		pthread_mutex_lock(&ctx->xrc_srq_lock);
		ctx->xrc_srqs[srq->srqn] = NULL;
		pthread_mutex_unlock(&ctx->xrc_srq_lock);
	}
	free_srq(srq);
	return 0;
}

int rsnic_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct rsnic_srq *srq = to_rsrq(ibsrq);
	uint32_t start;
	int ret = 0;

	pthread_spin_lock(&srq->lock);
	start = srq->head;
	for (; wr; wr = wr->next) {
		uint32_t slot = (srq->head - srq->origin) & (srq->entries - 1);

		if (srq->posted[slot]) {
			ret = ENOMEM;
			break;
		}
		ret = rsnic_write_recv(srq->ring, slot, wr);
		if (ret)
			break;
		srq->wrid[slot] = wr->wr_id;
		srq->posted[slot] = true;
		srq->head++;
	}
	if (srq->head != start) {
		/* The WQEs are in memory before the card hears of them. */
		udma_to_device_barrier();
		rsnic_ring(to_rctx(ibsrq->context), RSNIC_DB_SRQ, srq->srqn,
			   srq->head);
	}
	pthread_spin_unlock(&srq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

bool rsnic_srq_retire(struct rsnic_srq *srq, uint16_t slot, uint64_t *wr_id)
{
	bool ok = false;

	pthread_spin_lock(&srq->lock);
	if (slot < srq->max_entries && srq->posted[slot]) {
		*wr_id = srq->wrid[slot];
		srq->posted[slot] = false;
		ok = true;
	}
	pthread_spin_unlock(&srq->lock);
	return ok;
}
