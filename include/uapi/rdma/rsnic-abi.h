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
 * writing entries the card reads differently, and where the context's
 * doorbell page is: mmap() 4096 bytes at db_offset of the device file.
 * Its SQ, RQ, CQ_CI and CQ_ARM doorbells (offsets 0x0, 0x4, 0x8, 0xc) act
 * only on this context's queues.
 */
struct rsnic_ib_alloc_ucontext_resp {
	__u32 sq_wqe_len;	/* bytes of a send queue entry */
	__u32 rq_wqe_len;	/* bytes of a receive queue entry */
	__u32 cqe_len;		/* bytes of a completion queue entry */
	__u32 max_sge;		/* scatter/gather entries of one work request */
	__aligned_u64 db_offset;	/* mmap offset of the doorbell page */
};

/*
 * The response to create_cq: the ring the kernel allocated, to mmap()
 * (entries * cqe_len bytes, rounded up to pages) at offset. The card
 * writes entries there; the provider polls them by phase bit.
 */
struct rsnic_ib_create_cq_resp {
	__aligned_u64 offset;
	__u32 cqn;
	__u32 entries;		/* a power of two; the CQ holds entries - 1 */
};

/*
 * resize_cq: the provider's consumer index (the free-running count of
 * completions it polled; the low 16 bits count). The card moves what
 * the provider has not polled to the new ring's first slots.
 */
struct rsnic_ib_resize_cq {
	__u32 consumed;
	__u32 reserved;
};

/*
 * The response to resize_cq: the new ring, to mmap() at offset; the
 * provider polls it from slot 0, first lap. The old mapping stays valid
 * until the provider unmaps it, but the card no longer writes there.
 */
struct rsnic_ib_resize_cq_resp {
	__aligned_u64 offset;
	__u32 entries;		/* a power of two; the CQ holds entries - 1 */
	__u32 reserved;
};

/*
 * The response to create_qp: its send and receive rings, to mmap() at
 * their offsets (entries * WQE length, rounded up to pages).
 */
struct rsnic_ib_create_qp_resp {
	__aligned_u64 sq_offset;
	__aligned_u64 rq_offset;
	__u32 qpn;
	__u32 sq_entries;	/* a power of two */
	__u32 rq_entries;	/* a power of two */
	__u32 reserved;
};

/*
 * The response to create_srq: its ring of receive entries, to mmap() at
 * offset. The provider posts there and rings the SRQ doorbell of its
 * page with srqn; completions of its entries carry the SRQ flag and
 * their slot in this ring. The card takes entries in ring order, but
 * they complete in any order: a slot is free again once its completion
 * was polled. After a resize, slot 0 of the new size is the position
 * that began the lap (of the old size) the head's last post is in, so the
 * slots of that lap stay where they are (the card computes the same from
 * its doorbell).
 */
struct rsnic_ib_create_srq_resp {
	__aligned_u64 offset;
	__u32 srqn;
	__u32 entries;		/* a power of two */
	/*
	 * The ring's room, in entries, which is what to mmap(): room for
	 * max_srq_wr, so that a resize (IBV_SRQ_MAX_WR) needs no new ring.
	 */
	__u32 max_entries;
	__u32 reserved;
};

/*
 * The response to create_ah: the destination MAC ib_core resolved, which
 * a UD send carries in its address vector.
 */
struct rsnic_ib_create_ah_resp {
	__u8 dmac[6];
	__u8 reserved[2];
};

/*
 * Device memory (ibv_alloc_dm): the kernel's alloc_dm carries no driver
 * response, so each allocation is mapped at a page offset computed from
 * its handle (struct ibv_dm's): mmap() its length, rounded up to pages,
 * at RSNIC_DM_MMAP_PGOFF(handle) pages into the device file. A slot holds
 * the largest allocation (the card's device memory, 256 KiB).
 */
#define RSNIC_DM_MMAP_PGOFF_BASE 0x1000000U
#define RSNIC_DM_MMAP_SLOT_PAGES 64U
#define RSNIC_DM_MAX_HANDLE 0x3fbffffU
#define RSNIC_DM_MMAP_PGOFF(handle) \
	(RSNIC_DM_MMAP_PGOFF_BASE + (handle) * RSNIC_DM_MMAP_SLOT_PAGES)

#endif /* RSNIC_ABI_USER_H */
