/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The rsnic RDMA engine's queue formats, as the provider writes and reads
 * them: the C view of src/hw/rdma.rs in the rsnic tree (rdma.rst,
 * "Engine interface"). Every multi-byte field is little-endian. make lint
 * checks each field's offset and size and each constant against the Rust
 * declarations (qemu/hw-header.py).
 */
#ifndef RSNIC_HW_H
#define RSNIC_HW_H

#include <linux/types.h>
#include <stdint.h>

/* The card's physical function (src/hw/mod.rs). */
enum {
	RSNIC_PCI_VENDOR_ID = 0x10ee,
	RSNIC_PCI_DEVICE_ID_PF = 0x5201,
};

enum {
	RSNIC_SQ_WQE_LEN = 128,
	RSNIC_RQ_WQE_LEN = 80,
	RSNIC_CQE_LEN = 32,
	/* A CQ created with time stamps: 64-byte entries, the card's clock
	 * (nanoseconds, little-endian u64) at byte 32 of each. */
	RSNIC_CQE_STAMPED_LEN = 64,
	RSNIC_CQE_TIMESTAMP = 32,
	RSNIC_MAX_SGE = 4,
	RSNIC_MAX_INLINE_DATA = 64,
	RSNIC_DB_PAGE_SIZE = 4096,
};

/* Doorbells in a context's page: queue number in bits 0-15, the value
 * (free-running producer or consumer index, or arm bits) in 16-31. */
enum {
	RSNIC_DB_SQ = 0x0,
	RSNIC_DB_RQ = 0x4,
	RSNIC_DB_CQ_CI = 0x8,
	RSNIC_DB_CQ_ARM = 0xc,
	RSNIC_DB_SRQ = 0x10,
};

enum {
	RSNIC_ARM_NEXT = 1 << 0,
	RSNIC_ARM_SOLICITED = 1 << 1,
};

/* Send WQE opcodes and flags. */
enum {
	RSNIC_WQE_SEND = 0,
	RSNIC_WQE_SEND_IMM = 1,
	RSNIC_WQE_SEND_INV = 2,
	RSNIC_WQE_WRITE = 3,
	RSNIC_WQE_WRITE_IMM = 4,
	RSNIC_WQE_READ = 5,
	RSNIC_WQE_LOCAL_INV = 6,
	RSNIC_WQE_CMP_SWAP = 8,
	RSNIC_WQE_FETCH_ADD = 9,
	RSNIC_WQE_BIND_MW = 10,
	RSNIC_WQE_FLUSH = 11,
	RSNIC_WQE_ATOMIC_WRITE = 12,
};

enum {
	RSNIC_WQE_SIGNALED = 1 << 0,
	RSNIC_WQE_SOLICITED = 1 << 1,
	RSNIC_WQE_FENCE = 1 << 2,
	RSNIC_WQE_INLINE = 1 << 3,
};

struct rsnic_sge {
	__le64 addr;
	__le32 len;
	__le32 lkey;
};

/* Where a UD send goes (SqWqe::ext). */
struct rsnic_av {
	uint8_t dmac[6];
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t rsvd[3];
	__le32 flow_label;
	uint8_t dgid[16];
};

/* What a BIND_MW binds (SqWqe::ext, BindParams). */
struct rsnic_bind {
	__le32 mr_key;
	uint8_t rsvd[4];
	__le64 len;
	uint8_t rsvd2[16];
};

/* An atomic's operands (SqWqe::ext, AtomicParams). */
struct rsnic_atomic {
	__le64 compare_add;
	__le64 swap;
	uint8_t rsvd[16];
};

/* What a FLUSH flushes (SqWqe::ext, FlushParams); placement and level
 * numbered as enum ibv_placement_type and ibv_selectivity_level. */
struct rsnic_flush {
	__le64 len;
	uint8_t placement;
	uint8_t level;
	uint8_t rsvd[22];
};

/* What an ATOMIC WRITE writes (SqWqe::ext, AtomicWriteParams). */
struct rsnic_atomic_write {
	uint8_t value[8];
	uint8_t rsvd[24];
};

struct rsnic_sq_wqe {
	uint8_t opcode;
	uint8_t flags;
	uint8_t num_sge;
	uint8_t inline_len;	/* with RSNIC_WQE_INLINE */
	uint32_t imm;		/* as the verbs hold it (network order) */
	__le64 remote_addr;
	__le32 rkey;
	__le32 dest_qpn;
	__le32 qkey;
	__le32 xrc_srqn;	/* XRC: the target's XRC SRQ */
	union {
		struct rsnic_av av;
		struct rsnic_atomic atomic;
		struct rsnic_bind bind;
		struct rsnic_flush flush;
		struct rsnic_atomic_write atomic_write;
	};
	union {
		struct rsnic_sge sge[RSNIC_MAX_SGE];
		/* With RSNIC_WQE_INLINE: the payload in the gather list's place. */
		uint8_t inline_data[RSNIC_MAX_INLINE_DATA];
	};
};

struct rsnic_rq_wqe {
	uint8_t num_sge;
	uint8_t rsvd[15];
	struct rsnic_sge sge[RSNIC_MAX_SGE];
};

/* CQE flags; the card writes the flags word last. */
enum {
	RSNIC_CQE_RECV = 1 << 0,
	RSNIC_CQE_WITH_IMM = 1 << 1,
	RSNIC_CQE_WITH_INV = 1 << 2,
	RSNIC_CQE_GRH = 1 << 3,
	RSNIC_CQE_SRQ = 1 << 5,
	RSNIC_CQE_PHASE = 1 << 15,
};

/* CQE opcodes (numbered as enum ibv_wc_opcode). */
enum {
	RSNIC_CQE_OP_SEND = 0,
	RSNIC_CQE_OP_RDMA_WRITE = 1,
	RSNIC_CQE_OP_RDMA_READ = 2,
	RSNIC_CQE_OP_COMP_SWAP = 3,
	RSNIC_CQE_OP_FETCH_ADD = 4,
	RSNIC_CQE_OP_BIND_MW = 5,
	RSNIC_CQE_OP_LOCAL_INV = 6,
	RSNIC_CQE_OP_FLUSH = 8,
	RSNIC_CQE_OP_ATOMIC_WRITE = 9,
	RSNIC_CQE_OP_RECV = 128,
	RSNIC_CQE_OP_RECV_RDMA_WITH_IMM = 129,
};

struct rsnic_cqe {
	__le16 wqe_index;
	__le16 flags;
	__le32 qpn;
	uint8_t status;		/* numbered as enum ibv_wc_status */
	uint8_t opcode;
	__le16 srqn;		/* with RSNIC_CQE_SRQ: the SRQ */
	__le32 byte_len;
	uint32_t imm_or_key;
	__le32 src_qp;
	uint8_t smac[6];
	uint8_t rsvd2[2];
};

_Static_assert(sizeof(struct rsnic_sq_wqe) == RSNIC_SQ_WQE_LEN, "SQ WQE");
_Static_assert(sizeof(struct rsnic_rq_wqe) == RSNIC_RQ_WQE_LEN, "RQ WQE");
_Static_assert(sizeof(struct rsnic_cqe) == RSNIC_CQE_LEN, "CQE");
_Static_assert(sizeof(struct rsnic_av) == 32, "AV");

#endif /* RSNIC_HW_H */
