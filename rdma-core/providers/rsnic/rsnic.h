/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The rsnic provider: libibverbs' user-space half of the rsnic RDMA
 * engine (the kernel half is rsnic.ko's auxiliary RDMA driver).
 */
#ifndef RSNIC_PROVIDER_H
#define RSNIC_PROVIDER_H

#include <infiniband/driver.h>

/*
 * The card's queue entry formats this provider writes and reads
 * (src/hw/rdma.rs and Documentation/rsnic/rdma.rst in the rsnic tree).
 * alloc_ucontext's response must report the same or the device is
 * refused.
 */
enum {
	RSNIC_SQ_WQE_LEN = 128,
	RSNIC_RQ_WQE_LEN = 80,
	RSNIC_CQE_LEN = 32,
	RSNIC_MAX_SGE = 4,
};

struct rsnic_device {
	struct verbs_device ibv_dev;
};

struct rsnic_context {
	struct verbs_context ibv_ctx;
};

static inline struct rsnic_context *to_rctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct rsnic_context, ibv_ctx.context);
}

#endif /* RSNIC_PROVIDER_H */
