// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The rsnic provider: device matching, the user context, and the verbs
 * that are plain kernel commands.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <kernel-abi/rsnic-abi.h>

#include "rsnic.h"

DECLARE_DRV_CMD(rsnic_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT, empty,
		rsnic_ib_alloc_ucontext_resp);
DECLARE_DRV_CMD(ursnic_create_ah, IB_USER_VERBS_CMD_CREATE_AH, empty,
		rsnic_ib_create_ah_resp);

/*
 * The kernel driver registers its RDMA device under the card's PCI
 * function (as mlx5 and mana do, though it binds through an auxiliary
 * device, rsnic.rdma.<n>): the device is matched by the PF's PCI id, not
 * by its name, which an administrator may change.
 */
static const struct verbs_match_ent rsnic_match_table[] = {
	VERBS_PCI_MATCH(RSNIC_PCI_VENDOR_ID, RSNIC_PCI_DEVICE_ID_PF, NULL),
	{},
};

static int rsnic_query_device(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

static int rsnic_query_port(struct ibv_context *context, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *rsnic_alloc_pd(struct ibv_context *context)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd = {};
	struct rsnic_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	ret = ibv_cmd_alloc_pd(context, &pd->ibv_pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	pthread_mutex_init(&pd->lock, NULL);
	return &pd->ibv_pd;
}

/*
 * A parent domain over `attr->pd` (of this context). No thread domains
 * (the provider has none to give); allocators and a PD context are
 * accepted, and the allocators never called (see struct rsnic_pd).
 */
static struct ibv_pd *
rsnic_alloc_parent_domain(struct ibv_context *context,
			  struct ibv_parent_domain_init_attr *attr)
{
	struct rsnic_pd *parent, *pd;

	if (ibv_check_alloc_parent_domain(attr))
		return NULL;
	if (attr->comp_mask & ~(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) ||
	    attr->td) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	pd = to_rpd(attr->pd);
	/* A parent of a parent, or another context's PD. */
	if (pd->protection || attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	parent = calloc(1, sizeof(*parent));
	if (!parent)
		return NULL;
	parent->protection = pd;
	ibv_initialize_parent_domain(&parent->ibv_pd, &pd->ibv_pd);
	pthread_mutex_lock(&pd->lock);
	pd->parents++;
	pthread_mutex_unlock(&pd->lock);
	return &parent->ibv_pd;
}

/*
 * A parent domain goes alone (the kernel never knew it); a PD goes in
 * the kernel, which refuses while objects use it, and not while parent
 * domains over it remain (EBUSY, as mlx5).
 */
static int rsnic_dealloc_pd(struct ibv_pd *ibpd)
{
	struct rsnic_pd *pd = to_rpd(ibpd);
	int ret;

	if (pd->protection) {
		pthread_mutex_lock(&pd->protection->lock);
		pd->protection->parents--;
		pthread_mutex_unlock(&pd->protection->lock);
		free(pd);
		return 0;
	}
	pthread_mutex_lock(&pd->lock);
	ret = pd->parents ? EBUSY : ibv_cmd_dealloc_pd(ibpd);
	pthread_mutex_unlock(&pd->lock);
	if (ret)
		return ret;
	pthread_mutex_destroy(&pd->lock);
	free(pd);
	return 0;
}

static struct ibv_mr *rsnic_reg_mr(struct ibv_pd *pd, void *addr,
				   size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd = {};
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static struct ibv_mw *rsnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

static int rsnic_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/*
 * ibv_bind_mw: a type 1 window is bound by a BIND_MW work request on
 * `qp`, with the window's next key.
 */
static int rsnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
			 struct ibv_mw_bind *bind)
{
	struct rsnic_pd *pd = rsnic_protection_domain(qp->pd);
	struct ibv_send_wr wr = {}, *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1 || rsnic_protection_domain(mw->pd) != pd)
		return EINVAL;
	if (bind->bind_info.length &&
	    rsnic_protection_domain(bind->bind_info.mr->pd) != pd)
		return EINVAL;
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	ret = rsnic_post_send(qp, &wr, &bad);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/*
 * The kernel registers a new region (new keys) with what `flags` changes
 * and the old region's values for the rest, and deregisters the old one;
 * libibverbs' ibv_cmd_rereg_mr gives the MR its new keys.
 */
static int rsnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			  void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd = {};

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

static int rsnic_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

/*
 * An address handle: the address vector UD sends carry, with the
 * destination MAC the kernel resolved.
 */
static struct ibv_ah *rsnic_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct ursnic_create_ah_resp resp = {};
	struct rsnic_ah *ah;
	int ret;

	if (!attr->is_global) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	memcpy(ah->av.dmac, resp.drv_payload.dmac, sizeof(ah->av.dmac));
	ah->av.sgid_index = attr->grh.sgid_index;
	ah->av.hop_limit = attr->grh.hop_limit;
	ah->av.traffic_class = attr->grh.traffic_class;
	ah->av.flow_label = htole32(attr->grh.flow_label & 0xfffff);
	memcpy(ah->av.dgid, attr->grh.dgid.raw, sizeof(ah->av.dgid));
	return &ah->ibv_ah;
}

static int rsnic_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_rah(ibah));
	return 0;
}

/*
 * An XRC domain is the kernel's object alone (shared through the file it
 * is opened with); the card knows it by the number the kernel gave it.
 */
static struct ibv_xrcd *rsnic_open_xrcd(struct ibv_context *context,
					struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp = {};
	struct ibv_open_xrcd cmd = {};
	struct verbs_xrcd *xrcd;
	int ret;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd)
		return NULL;
	ret = ibv_cmd_open_xrcd(context, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->xrcd;
}

static int rsnic_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd = container_of(ibxrcd, struct verbs_xrcd, xrcd);
	int ret;

	ret = ibv_cmd_close_xrcd(xrcd);
	if (ret)
		return ret;
	free(xrcd);
	return 0;
}

static void rsnic_free_context(struct ibv_context *ibctx)
{
	struct rsnic_context *ctx = to_rctx(ibctx);
	int i;

	for (i = 0; i < RSNIC_QP_TABLE_BLOCK; i++)
		free(ctx->qp_table[i]);
	pthread_mutex_destroy(&ctx->qp_table_lock);
	pthread_mutex_destroy(&ctx->xrc_srq_lock);
	munmap(ctx->db, RSNIC_DB_PAGE_SIZE);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static const struct verbs_context_ops rsnic_ctx_ops = {
	.alloc_dm = rsnic_alloc_dm,
	.alloc_mw = rsnic_alloc_mw,
	.alloc_pd = rsnic_alloc_pd,
	.alloc_parent_domain = rsnic_alloc_parent_domain,
	/* The card keeps the group table: the kernel's command is all. */
	.advise_mr = ibv_cmd_advise_mr,
	.attach_mcast = ibv_cmd_attach_mcast,
	.close_xrcd = rsnic_close_xrcd,
	.bind_mw = rsnic_bind_mw,
	.create_ah = rsnic_create_ah,
	.create_cq = rsnic_create_cq,
	.create_cq_ex = rsnic_create_cq_ex,
	.create_qp = rsnic_create_qp,
	.create_qp_ex = rsnic_create_qp_ex,
	.create_srq = rsnic_create_srq,
	.create_srq_ex = rsnic_create_srq_ex,
	.dealloc_mw = rsnic_dealloc_mw,
	.dealloc_pd = rsnic_dealloc_pd,
	.dereg_mr = rsnic_dereg_mr,
	.destroy_ah = rsnic_destroy_ah,
	.destroy_cq = rsnic_destroy_cq,
	.resize_cq = rsnic_resize_cq,
	.destroy_qp = rsnic_destroy_qp,
	.destroy_srq = rsnic_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = rsnic_free_context,
	.free_dm = rsnic_free_dm,
	.get_srq_num = rsnic_get_srq_num,
	.modify_qp = rsnic_modify_qp,
	.modify_srq = rsnic_modify_srq,
	.open_qp = rsnic_open_qp,
	.open_xrcd = rsnic_open_xrcd,
	.poll_cq = rsnic_poll_cq,
	.post_recv = rsnic_post_recv,
	.post_send = rsnic_post_send,
	.post_srq_recv = rsnic_post_srq_recv,
	.query_device_ex = rsnic_query_device,
	.query_port = rsnic_query_port,
	.query_qp = rsnic_query_qp,
	.query_rt_values = rsnic_query_rt_values,
	.query_srq = rsnic_query_srq,
	.reg_dm_mr = rsnic_reg_dm_mr,
	.reg_mr = rsnic_reg_mr,
	.rereg_mr = rsnic_rereg_mr,
	.req_notify_cq = rsnic_req_notify_cq,
};

/* Whether the kernel's card writes and reads the entries this provider does. */
static bool rsnic_formats_match(struct rsnic_context *ctx,
				const struct rsnic_ib_alloc_ucontext_resp *r)
{
	if (r->sq_wqe_len == RSNIC_SQ_WQE_LEN &&
	    r->rq_wqe_len == RSNIC_RQ_WQE_LEN && r->cqe_len == RSNIC_CQE_LEN &&
	    r->max_sge == RSNIC_MAX_SGE)
		return true;

	verbs_err(&ctx->ibv_ctx,
		  "rsnic: card formats SQ %u RQ %u CQE %u SGE %u, provider built for %u %u %u %u\n",
		  r->sq_wqe_len, r->rq_wqe_len, r->cqe_len, r->max_sge,
		  RSNIC_SQ_WQE_LEN, RSNIC_RQ_WQE_LEN, RSNIC_CQE_LEN,
		  RSNIC_MAX_SGE);
	return false;
}

static struct verbs_context *rsnic_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd, void *private_data)
{
	struct rsnic_alloc_ucontext_resp resp = {};
	struct rsnic_context *ctx;
	struct ibv_get_context cmd = {};
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd), NULL,
				  &resp.ibv_resp, sizeof(resp));
	if (ret) {
		errno = ret;
		goto err;
	}
	if (!rsnic_formats_match(ctx, &resp.drv_payload)) {
		errno = EPROTO;
		goto err;
	}
	ctx->db = mmap(NULL, RSNIC_DB_PAGE_SIZE, PROT_WRITE, MAP_SHARED, cmd_fd,
		       resp.drv_payload.db_offset);
	if (ctx->db == MAP_FAILED) {
		verbs_err(&ctx->ibv_ctx, "rsnic: cannot map the doorbell page\n");
		goto err;
	}
	pthread_mutex_init(&ctx->qp_table_lock, NULL);
	pthread_mutex_init(&ctx->xrc_srq_lock, NULL);

	verbs_set_ops(&ctx->ibv_ctx, &rsnic_ctx_ops);
	return &ctx->ibv_ctx;

err:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	return NULL;
}

static struct verbs_device *rsnic_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct rsnic_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void rsnic_uninit_device(struct verbs_device *verbs_device)
{
	free(container_of(verbs_device, struct rsnic_device, ibv_dev));
}

static const struct verbs_device_ops rsnic_dev_ops = {
	.name = "rsnic",
	.match_min_abi_version = RSNIC_UVERBS_ABI_VERSION,
	.match_max_abi_version = RSNIC_UVERBS_ABI_VERSION,
	.match_table = rsnic_match_table,
	.alloc_device = rsnic_device_alloc,
	.uninit_device = rsnic_uninit_device,
	.alloc_context = rsnic_alloc_context,
};
PROVIDER_DRIVER(rsnic, rsnic_dev_ops);
