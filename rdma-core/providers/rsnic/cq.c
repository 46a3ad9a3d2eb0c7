// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Completion queues: a ring the kernel allocated and mapped, which the
 * card writes and the provider polls by phase bit. Everything a CQE says
 * is checked against what was posted before the application sees it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>
#include <kernel-abi/rsnic-abi.h>

#include "rsnic.h"

DECLARE_DRV_CMD(ursnic_create_cq, IB_USER_VERBS_CMD_CREATE_CQ, empty,
		rsnic_ib_create_cq_resp);
DECLARE_DRV_CMD(ursnic_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ, empty,
		rsnic_ib_create_cq_resp);
DECLARE_DRV_CMD(ursnic_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		rsnic_ib_resize_cq, rsnic_ib_resize_cq_resp);

/*
 * Maps the ring the kernel allocated for the CQ it just created; an errno,
 * and the CQ destroyed, if that cannot be done.
 */
static int map_cq(struct ibv_context *context, struct rsnic_cq *cq,
		  const struct rsnic_ib_create_cq_resp *r)
{
	int ret = EPROTO;

	cq->cqn = r->cqn;
	cq->entries = r->entries;
	if (!cq->entries || cq->entries & (cq->entries - 1))
		goto err_destroy;
	cq->ring_len = align((size_t)cq->entries * cq->cqe_len,
			     RSNIC_DB_PAGE_SIZE);
	cq->ring = mmap(NULL, cq->ring_len, PROT_READ, MAP_SHARED,
			context->cmd_fd, r->offset);
	if (cq->ring == MAP_FAILED) {
		ret = errno;
		verbs_err(&to_rctx(context)->ibv_ctx,
			  "rsnic: cannot map CQ %u's ring\n", cq->cqn);
		goto err_destroy;
	}
	return 0;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
	return ret;
}

static struct rsnic_cq *alloc_cq(void)
{
	struct rsnic_cq *cq = calloc(1, sizeof(*cq));

	if (cq) {
		pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
		cq->cqe_len = RSNIC_CQE_LEN;
	}
	return cq;
}

static void free_cq(struct rsnic_cq *cq)
{
	pthread_spin_destroy(&cq->lock);
	free(cq);
}

struct ibv_cq *rsnic_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector)
{
	struct ursnic_create_cq_resp resp = {};
	struct ibv_create_cq cmd = {};
	struct rsnic_cq *cq;
	int ret;

	cq = alloc_cq();
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector,
				&cq->vcq.cq, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err_free;
	ret = map_cq(context, cq, &resp.drv_payload);
	if (ret)
		goto err_free;
	return &cq->vcq.cq;

err_free:
	free_cq(cq);
	errno = ret;
	return NULL;
}

/*
 * The kernel allocates a new ring; the card moves what this CQ has not
 * polled (from `consumed` on) to its first slots. Polling goes on there
 * from slot 0; the old ring is unmapped.
 */
int rsnic_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct rsnic_cq *cq = to_rcq(ibcq);
	struct ursnic_resize_cq_resp resp = {};
	struct ursnic_resize_cq cmd = {};
	uint32_t entries;
	size_t len;
	void *ring;
	int ret;

	pthread_spin_lock(&cq->lock);
	cmd.drv_payload.consumed = cq->consumed;
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto out;
	entries = resp.drv_payload.entries;
	if (!entries || entries & (entries - 1)) {
		ret = EPROTO;
		goto out;
	}
	len = align((size_t)entries * cq->cqe_len, RSNIC_DB_PAGE_SIZE);
	ring = mmap(NULL, len, PROT_READ, MAP_SHARED, ibcq->context->cmd_fd,
		    resp.drv_payload.offset);
	if (ring == MAP_FAILED) {
		ret = errno;
		goto out;
	}
	munmap(cq->ring, cq->ring_len);
	cq->ring = ring;
	cq->ring_len = len;
	cq->entries = entries;
	cq->consumed = 0;
out:
	pthread_spin_unlock(&cq->lock);
	return ret;
}

int rsnic_destroy_cq(struct ibv_cq *ibcq)
{
	struct rsnic_cq *cq = to_rcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	munmap(cq->ring, cq->ring_len);
	free_cq(cq);
	return 0;
}

/* The CQE at free-running index `pos`, if the card has written it. */
static struct rsnic_cqe *cqe_at(struct rsnic_cq *cq, uint32_t pos)
{
	struct rsnic_cqe *cqe =
		(struct rsnic_cqe *)((uint8_t *)cq->ring +
				     (size_t)(pos & (cq->entries - 1)) *
					     cq->cqe_len);
	bool lap_phase = !((pos / cq->entries) & 1);
	uint16_t flags = le16toh(mmio_read16(&cqe->flags));

	if (!!(flags & RSNIC_CQE_PHASE) != lap_phase)
		return NULL;
	/* The rest of the entry is read after its flags. */
	udma_from_device_barrier();
	return cqe;
}

/* The CQE at the consumer index, if the card has written it. */
static struct rsnic_cqe *next_cqe(struct rsnic_cq *cq)
{
	return cqe_at(cq, cq->consumed);
}

/* Under the CQ's lock, as `stale` reads the mark under it. */
void rsnic_cq_mark_stale(struct ibv_cq *ibcq, struct rsnic_stale *s)
{
	struct rsnic_cq *cq = to_rcq(ibcq);
	uint32_t pos;

	pthread_spin_lock(&cq->lock);
	pos = cq->consumed;
	while (pos - cq->consumed < cq->entries && cqe_at(cq, pos))
		pos++;
	s->active = true;
	s->until = pos;
	pthread_spin_unlock(&cq->lock);
}

/*
 * Whether the CQE at `pos` is one `qp` left before its last RESET. An
 * SRQ's slot it names is given back to the SRQ all the same.
 */
static bool stale(struct rsnic_qp *qp, const struct rsnic_cqe *cqe,
		  uint32_t pos)
{
	uint16_t flags = le16toh(cqe->flags);
	bool recv = flags & RSNIC_CQE_RECV;
	struct rsnic_stale *s = recv ? &qp->stale_recv : &qp->stale_send;
	uint64_t wr_id;

	if (!s->active)
		return false;
	if ((int32_t)(pos - s->until) >= 0) {
		s->active = false;
		return false;
	}
	if (recv && flags & RSNIC_CQE_SRQ && qp->vqp.qp.srq)
		rsnic_srq_retire(to_rsrq(qp->vqp.qp.srq),
				 le16toh(cqe->wqe_index), &wr_id);
	return true;
}

/*
 * Retires the work request in `slot` of `wq` (and, as a queue completes in
 * order, every unsignaled one before it); false if none was posted there.
 */
static bool retire(struct rsnic_wq *wq, uint16_t slot, uint64_t *wr_id)
{
	uint32_t in_flight = wq->head - wq->tail;
	uint32_t ahead = (slot - wq->tail) & (wq->entries - 1);

	if (slot >= wq->entries || ahead >= in_flight)
		return false;
	*wr_id = wq->wrid[slot];
	wq->tail += ahead + 1;
	return true;
}

static enum ibv_wc_opcode wc_opcode(const struct rsnic_cqe *cqe, bool recv)
{
	if (recv)
		return cqe->opcode == RSNIC_CQE_OP_RECV_RDMA_WITH_IMM ?
			       IBV_WC_RECV_RDMA_WITH_IMM :
			       IBV_WC_RECV;
	switch (cqe->opcode) {
	case RSNIC_CQE_OP_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case RSNIC_CQE_OP_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case RSNIC_CQE_OP_COMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case RSNIC_CQE_OP_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case RSNIC_CQE_OP_BIND_MW:
		return IBV_WC_BIND_MW;
	case RSNIC_CQE_OP_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case RSNIC_CQE_OP_FLUSH:
		return IBV_WC_FLUSH;
	case RSNIC_CQE_OP_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * Turns the CQE at `pos` into a work completion; false if it names
 * nothing posted.
 */
static bool fill_wc(struct rsnic_context *ctx, const struct rsnic_cqe *cqe,
		    uint32_t pos, struct ibv_wc *wc)
{
	uint16_t flags = le16toh(cqe->flags);
	bool recv = flags & RSNIC_CQE_RECV;
	uint32_t qpn = le32toh(cqe->qpn);
	struct rsnic_qp *qp = rsnic_find_qp(ctx, qpn);
	struct rsnic_srq *xrc = NULL;
	struct rsnic_wq *wq;
	bool ok;

	if (recv && (flags & RSNIC_CQE_SRQ))
		xrc = rsnic_find_xrc_srq(ctx, le16toh(cqe->srqn));
	if (xrc) {
		/*
		 * A receive of one of the context's XRC SRQs: the XRC target
		 * it names may be another process's.
		 */
		if (!rsnic_srq_retire(xrc, le16toh(cqe->wqe_index),
				      &wc->wr_id))
			return false;
	} else if (!qp || stale(qp, cqe, pos)) {
		return false;
	} else if (recv && (flags & RSNIC_CQE_SRQ)) {
		/* A slot of the QP's SRQ, not of its own receive queue. */
		if (!qp->vqp.qp.srq ||
		    !rsnic_srq_retire(to_rsrq(qp->vqp.qp.srq),
				      le16toh(cqe->wqe_index), &wc->wr_id))
			return false;
	} else {
		if (recv && qp->vqp.qp.srq)
			return false;
		wq = recv ? &qp->rq : &qp->sq;
		pthread_spin_lock(&wq->lock);
		ok = retire(wq, le16toh(cqe->wqe_index), &wc->wr_id);
		pthread_spin_unlock(&wq->lock);
		if (!ok)
			return false;
	}

	memset(&wc->status, 0, sizeof(*wc) - offsetof(struct ibv_wc, status));
	wc->status = cqe->status <= IBV_WC_TM_RNDV_INCOMPLETE ?
			     (enum ibv_wc_status)cqe->status :
			     IBV_WC_GENERAL_ERR;
	wc->opcode = wc_opcode(cqe, recv);
	wc->byte_len = le32toh(cqe->byte_len);
	wc->qp_num = qpn;
	wc->src_qp = le32toh(cqe->src_qp) & 0xffffff;
	if (flags & RSNIC_CQE_WITH_IMM) {
		wc->wc_flags |= IBV_WC_WITH_IMM;
		wc->imm_data = cqe->imm_or_key;
	} else if (flags & RSNIC_CQE_WITH_INV) {
		wc->wc_flags |= IBV_WC_WITH_INV;
		wc->invalidated_rkey = cqe->imm_or_key;
	}
	if (flags & RSNIC_CQE_GRH)
		wc->wc_flags |= IBV_WC_GRH;
	return true;
}

/* The next completion into `wc`; false if the ring holds none. */
static bool poll_one(struct rsnic_cq *cq, struct ibv_wc *wc)
{
	struct rsnic_context *ctx = to_rctx(cq->vcq.cq.context);
	struct rsnic_cqe *cqe;

	while ((cqe = next_cqe(cq))) {
		cq->consumed++;
		/* A CQE for nothing posted (a QP destroyed since) is dropped. */
		if (fill_wc(ctx, cqe, cq->consumed - 1, wc)) {
			if (cq->cqe_len == RSNIC_CQE_STAMPED_LEN)
				cq->cur_timestamp = le64toh(*(__le64 *)(
					(uint8_t *)cqe + RSNIC_CQE_TIMESTAMP));
			return true;
		}
	}
	return false;
}

/* Gives the card back the slots polled since `start`. */
static void give_back(struct rsnic_cq *cq, uint32_t start)
{
	if (cq->consumed != start)
		rsnic_ring(to_rctx(cq->vcq.cq.context), RSNIC_DB_CQ_CI, cq->cqn,
			   cq->consumed);
}

int rsnic_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct rsnic_cq *cq = to_rcq(ibcq);
	uint32_t start;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	start = cq->consumed;
	while (n < ne && poll_one(cq, &wc[n]))
		n++;
	give_back(cq, start);
	pthread_spin_unlock(&cq->lock);
	return n;
}

/*
 * The extended CQ's poll: start_poll takes the CQ's lock and its first
 * completion, next_poll each further one, end_poll gives the slots back
 * and unlocks. The readers read the current completion, which poll_one
 * checked as it checks ibv_poll_cq's.
 */
static int poll_next(struct rsnic_cq *cq)
{
	if (!poll_one(cq, &cq->cur))
		return ENOENT;
	cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
	cq->vcq.cq_ex.status = cq->cur.status;
	return 0;
}

static int rsnic_start_poll(struct ibv_cq_ex *cq_ex,
			    struct ibv_poll_cq_attr *attr)
{
	struct rsnic_cq *cq = to_rcq_ex(cq_ex);

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	cq->poll_start = cq->consumed;
	if (poll_next(cq)) {
		/* No end_poll follows an empty start_poll. */
		give_back(cq, cq->poll_start);
		pthread_spin_unlock(&cq->lock);
		return ENOENT;
	}
	return 0;
}

static int rsnic_next_poll(struct ibv_cq_ex *cq_ex)
{
	return poll_next(to_rcq_ex(cq_ex));
}

static void rsnic_end_poll(struct ibv_cq_ex *cq_ex)
{
	struct rsnic_cq *cq = to_rcq_ex(cq_ex);

	give_back(cq, cq->poll_start);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode rsnic_read_opcode(struct ibv_cq_ex *cq_ex)
{
	return to_rcq_ex(cq_ex)->cur.opcode;
}

static uint32_t rsnic_read_vendor_err(struct ibv_cq_ex *cq_ex)
{
	return to_rcq_ex(cq_ex)->cur.vendor_err;
}

static uint32_t rsnic_read_byte_len(struct ibv_cq_ex *cq_ex)
{
	return to_rcq_ex(cq_ex)->cur.byte_len;
}

static __be32 rsnic_read_imm_data(struct ibv_cq_ex *cq_ex)
{
	return to_rcq_ex(cq_ex)->cur.imm_data;
}

static uint32_t rsnic_read_qp_num(struct ibv_cq_ex *cq_ex)
{
	return to_rcq_ex(cq_ex)->cur.qp_num;
}

static uint32_t rsnic_read_src_qp(struct ibv_cq_ex *cq_ex)
{
	return to_rcq_ex(cq_ex)->cur.src_qp;
}

static unsigned int rsnic_read_wc_flags(struct ibv_cq_ex *cq_ex)
{
	return to_rcq_ex(cq_ex)->cur.wc_flags;
}

/* RoCE: no LID, SL or path bits; ibv_poll_cq gives them as 0 too. */
static uint32_t rsnic_read_slid(struct ibv_cq_ex *cq_ex)
{
	return 0;
}

static uint8_t rsnic_read_sl(struct ibv_cq_ex *cq_ex)
{
	return 0;
}

static uint8_t rsnic_read_dlid_path_bits(struct ibv_cq_ex *cq_ex)
{
	return 0;
}

/*
 * The card's clock counts nanoseconds (the kernel reports hca_core_clock
 * 1000000 kHz), and it is the PHC's time, which the driver sets from the
 * system's real time and ptp4l or phc2sys may steer: the raw time stamp
 * and the wall-clock one are the same number, read by this one function.
 */
static uint64_t rsnic_read_timestamp(struct ibv_cq_ex *cq_ex)
{
	return to_rcq_ex(cq_ex)->cur_timestamp;
}

/*
 * The card's clock now, through its PTP hardware clock (the PHC of the
 * PCI function the RDMA device is registered under, which reads the
 * card's time registers): IBV_VALUES_MASK_RAW_CLOCK in nanoseconds.
 */
int rsnic_query_rt_values(struct ibv_context *context,
			  struct ibv_values_ex *values)
{
	struct verbs_device *vdev = verbs_get_device(context->device);
	char path[IBV_SYSFS_PATH_MAX + 16];
	struct dirent *e;
	struct timespec ts;
	int fd = -1, ret;
	DIR *dir;

	if (!check_comp_mask(values->comp_mask, IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	if (!(values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return 0;
	snprintf(path, sizeof(path), "%s/device/ptp", vdev->sysfs->ibdev_path);
	dir = opendir(path);
	if (!dir)
		return EOPNOTSUPP;
	ret = EOPNOTSUPP;	/* no PHC under the device */
	while ((e = readdir(dir)))
		if (!strncmp(e->d_name, "ptp", 3)) {
			snprintf(path, sizeof(path), "/dev/%s", e->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			ret = fd < 0 ? errno : 0;
			break;
		}
	closedir(dir);
	if (fd < 0)
		return ret;
	/* FD_TO_CLOCKID of linux/posix-timers.h: a dynamic clock's id. */
	ret = clock_gettime((clockid_t)((~(unsigned int)fd << 3) | 3), &ts);
	close(fd);
	if (ret)
		return errno;
	values->raw_clock = ts;
	values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	return 0;
}

/*
 * An extended CQ: the same ring as ibv_create_cq's, polled through the
 * callbacks above. Beyond IBV_WC_STANDARD_FLAGS it takes the completion
 * time stamp (raw or wall clock): the kernel then makes a ring of
 * 64-byte entries the card stamps. The card tags no flow; the
 * single-threaded hint is taken.
 */
struct ibv_cq_ex *rsnic_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct ursnic_create_cq_ex_resp resp = {};
	struct ibv_create_cq_ex cmd = {};
	struct ibv_cq_ex *cq_ex;
	struct rsnic_cq *cq;
	int ret;

	const uint64_t stamps = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

	if (attr->wc_flags & ~((uint64_t)IBV_WC_STANDARD_FLAGS | stamps) ||
	    attr->comp_mask & ~(IBV_CQ_INIT_ATTR_MASK_FLAGS |
				IBV_CQ_INIT_ATTR_MASK_PD) ||
	    (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
	     attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/*
	 * A CQ takes a parent domain only (as mlx5): one of this context,
	 * whose allocators have nothing to allocate (struct rsnic_pd).
	 */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD &&
	    (!attr->parent_domain || !to_rpd(attr->parent_domain)->protection ||
	     attr->parent_domain->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	cq = alloc_cq();
	if (!cq)
		return NULL;
	/* libibverbs asks the kernel for IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION. */
	if (attr->wc_flags & stamps)
		cq->cqe_len = RSNIC_CQE_STAMPED_LEN;
	ret = ibv_cmd_create_cq_ex(context, attr, NULL, &cq->vcq, &cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (ret)
		goto err_free;
	ret = map_cq(context, cq, &resp.drv_payload);
	if (ret)
		goto err_free;
	cq_ex = &cq->vcq.cq_ex;
	cq_ex->start_poll = rsnic_start_poll;
	cq_ex->next_poll = rsnic_next_poll;
	cq_ex->end_poll = rsnic_end_poll;
	cq_ex->read_opcode = rsnic_read_opcode;
	cq_ex->read_vendor_err = rsnic_read_vendor_err;
	cq_ex->read_byte_len = rsnic_read_byte_len;
	cq_ex->read_imm_data = rsnic_read_imm_data;
	cq_ex->read_qp_num = rsnic_read_qp_num;
	cq_ex->read_src_qp = rsnic_read_src_qp;
	cq_ex->read_wc_flags = rsnic_read_wc_flags;
	cq_ex->read_slid = rsnic_read_slid;
	cq_ex->read_sl = rsnic_read_sl;
	cq_ex->read_dlid_path_bits = rsnic_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		cq_ex->read_completion_ts = rsnic_read_timestamp;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		cq_ex->read_completion_wallclock_ns = rsnic_read_timestamp;
	return cq_ex;

err_free:
	free_cq(cq);
	errno = ret;
	return NULL;
}

int rsnic_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct rsnic_cq *cq = to_rcq(ibcq);

	rsnic_ring(to_rctx(ibcq->context), RSNIC_DB_CQ_ARM, cq->cqn,
		   solicited_only ? RSNIC_ARM_SOLICITED : RSNIC_ARM_NEXT);
	return 0;
}
