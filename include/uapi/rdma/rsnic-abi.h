/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * The user-verbs ABI of rsnic: what the kernel driver (rsnic.ko) and its
 * libibverbs provider (librsnic-rdmav65.so) exchange in the driver-private
 * part of each verb. Both build from this one file: the driver through
 * bindgen, the provider as one of rdma-core's kernel-headers.
 *
 * Compatibility follows ib_core's udata rules: a shorter response is
 * zero-padded, a shorter request zero-extended.
 */
#ifndef RSNIC_ABI_USER_H
#define RSNIC_ABI_USER_H

#include <linux/types.h>

/* Raised on any incompatible change; providers match it exactly. */
#define RSNIC_UVERBS_ABI_VERSION 1

/*
 * The response to alloc_ucontext: the entry sizes of the card's queues, so
 * a provider built for another card revision refuses the device instead of
 * writing entries the card reads differently.
 */
struct rsnic_ib_alloc_ucontext_resp {
	__u32 sq_wqe_len;	/* bytes of a send queue entry */
	__u32 rq_wqe_len;	/* bytes of a receive queue entry */
	__u32 cqe_len;		/* bytes of a completion queue entry */
	__u32 max_sge;		/* scatter/gather entries of one work request */
};

#endif /* RSNIC_ABI_USER_H */
