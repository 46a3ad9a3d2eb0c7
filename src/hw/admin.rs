// SPDX-License-Identifier: GPL-2.0

//! The admin queue: its entries, the commands, their parameters and
//! results, and the status the card answers with.

use super::rdma;

/// Most entries in the admin queue.
pub const AQ_MAX_ENTRIES: u32 = 64;
/// Size of an admin queue entry.
pub const AQ_ENTRY_SIZE: usize = 64;
/// Where an entry's parameters (and results) start: after the opcode (u16
/// at 0), the flags (u16 at 2, [`AQ_DONE`] set by the card) and the status
/// (u16 at 4, an [`AdminStatus`] written by the card).
pub const AQ_PARAMS: usize = 8;
/// Admin entry flag the card sets when it has written the result.
pub const AQ_DONE: u16 = 1 << 15;

wire_enum! {
    /// Status the card writes into an admin entry.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum AdminStatus: u16 {
        /// Done.
        Ok = 0,
        /// Unknown opcode.
        BadOpcode = 1,
        /// A parameter is out of range.
        BadParam = 2,
        /// The queue pair exists (create) or does not (destroy).
        BadState = 3,
        /// The card failed internally; the command had no effect.
        DeviceError = 4,
        /// The table is full.
        NoSpace = 5,
        /// No such entry.
        NotFound = 6,
    }
}

/// Fails to compile if two values of `ops` are equal.
pub const fn check_distinct(ops: &[u16]) {
    let mut i = 0;
    while i < ops.len() {
        let mut j = i + 1;
        while j < ops.len() {
            assert!(ops[i] != ops[j], "two commands share an opcode");
            j += 1;
        }
        i += 1;
    }
}

/// Declares the admin commands: each variant with its opcode and its
/// parameters at their byte offsets in the entry (a tuple variant's one
/// structure goes at [`AQ_PARAMS`]). Generates the enum, `opcode`,
/// `to_bytes` and `from_bytes`, and proves at compile time that no
/// parameter overlaps the entry's header or another parameter and that
/// opcodes are distinct.
macro_rules! admin_commands {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident
                $( ( $tname:ident : $tty:ty ) )?
                $( { $( $(#[$fmeta:meta])* $field:ident @ $off:literal : $fty:ty ),* $(,)? } )?
                = $op:literal
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $(
                $(#[$vmeta])*
                $variant $( ($tty) )? $( { $( $(#[$fmeta])* $field: $fty, )* } )?,
            )*
        }

        impl $name {
            /// The command's opcode.
            pub const fn opcode(&self) -> u16 {
                match self {
                    $( Self::$variant { .. } => $op, )*
                }
            }

            /// The admin entry for this command (flags and status zero).
            #[allow(clippy::wrong_self_convention)]
            pub fn to_bytes(&self) -> [u8; AQ_ENTRY_SIZE] {
                use $crate::hw::layout::{CheckedField, Field};
                let mut b = [0u8; AQ_ENTRY_SIZE];
                Field::put(&self.opcode(), &mut b[..2]);
                match self {
                    $(
                        Self::$variant $( ($tname) )? $( { $( $field ),* } )? => {
                            $(
                                CheckedField::put(
                                    $tname,
                                    &mut b[AQ_PARAMS..AQ_PARAMS + <$tty as CheckedField>::LEN],
                                );
                            )?
                            $($(
                                CheckedField::put(
                                    $field,
                                    &mut b[$off..$off + <$fty as CheckedField>::LEN],
                                );
                            )*)?
                        }
                    )*
                }
                b
            }

            /// Decodes an admin entry: [`AdminStatus::BadOpcode`] for an
            /// unknown opcode, [`AdminStatus::BadParam`] for a parameter
            /// the interface does not define.
            pub fn from_bytes(b: &[u8; AQ_ENTRY_SIZE]) -> Result<Self, AdminStatus> {
                use $crate::hw::layout::{CheckedField, Field};
                let op = <u16 as Field>::get(&b[..2]);
                $(
                    if op == $op {
                        return Ok(Self::$variant
                            $( (
                                <$tty as CheckedField>::get(
                                    &b[AQ_PARAMS..AQ_PARAMS + <$tty as CheckedField>::LEN],
                                )
                                .ok_or(AdminStatus::BadParam)?
                            ) )?
                            $( { $(
                                $field: <$fty as CheckedField>::get(
                                    &b[$off..$off + <$fty as CheckedField>::LEN],
                                )
                                .ok_or(AdminStatus::BadParam)?,
                            )* } )?
                        );
                    }
                )*
                Err(AdminStatus::BadOpcode)
            }
        }

        const _: () = {
            use $crate::hw::layout::{check_layout, CheckedField};
            $(
                check_layout(AQ_ENTRY_SIZE, &[
                    (0, AQ_PARAMS),
                    $( (AQ_PARAMS, <$tty as CheckedField>::LEN), )?
                    $($( ($off, <$fty as CheckedField>::LEN), )*)?
                ]);
            )*
            check_distinct(&[$($op),*]);
        };
    };
}

/// Declares a command's result, which the card writes into the admin
/// entry from [`AQ_PARAMS`] on: a structure laid over the whole entry
/// whose fields (at entry offsets) are proved to lie past the header.
macro_rules! admin_result {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident @ $off:literal : $fty:ty ),* $(,)?
        }
    ) => {
        wire_struct! {
            $(#[$meta])*
            pub struct $name[$crate::hw::admin::AQ_ENTRY_SIZE] {
                $( $(#[$fmeta])* pub $field @ $off : $fty, )*
            }
        }

        impl $name {
            /// Reads the result from a completed admin entry.
            pub fn read_result(entry: &[u8; $crate::hw::admin::AQ_ENTRY_SIZE]) -> Self {
                <Self as $crate::hw::layout::Field>::get(entry)
            }

            /// Writes the result into an admin entry (card side), before
            /// the card sets [`AQ_DONE`]; the header is left as it is.
            pub fn write_result(&self, entry: &mut [u8; $crate::hw::admin::AQ_ENTRY_SIZE]) {
                $crate::hw::layout::Field::put(self, entry);
            }
        }

        const _: () = $crate::hw::layout::check_layout(
            $crate::hw::admin::AQ_ENTRY_SIZE,
            &[
                (0, $crate::hw::admin::AQ_PARAMS),
                $(($off, <$fty as $crate::hw::layout::Field>::LEN)),*
            ],
        );
    };
}

admin_commands! {
    /// An admin command, encoded in an [`AQ_ENTRY_SIZE`]-byte entry.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum AdminCmd {
        /// Read the card's limits and features; result: [`DeviceInfo`].
        QueryDevice = 1,
        /// Create and start a queue pair.
        CreateQp(config: QpConfig) = 2,
        /// Stop and forget a queue pair; in-flight buffers are abandoned.
        DestroyQp {
            /// Queue pair index.
            qp @ 8: u16,
        } = 3,
        /// Set the station MAC address RX filters on.
        SetMac {
            /// New address.
            mac @ 8: [u8; 6],
        } = 4,
        /// Set the largest frame payload the card sends and accepts.
        SetMtu {
            /// MTU in bytes, [`super::MIN_MTU`]..=[`super::MAX_MTU`].
            mtu @ 8: u32,
        } = 5,
        /// Set the RX filter.
        SetRxMode {
            /// [`super::rx_mode`] bits.
            flags @ 8: u32,
            /// Multicast filter, see [`super::mc_filter_bit`].
            mc_filter @ 16: u64,
        } = 6,
        /// Enable offloads ([`super::offload`] bits); others are disabled.
        SetOffloads {
            /// [`super::offload`] bits.
            flags @ 8: u32,
        } = 7,
        /// Set the RSS key, indirection table and hashed fields of an
        /// RSS context from a [`super::RSS_CONFIG_LEN`]-byte block in
        /// host memory. Context 0 is the default one (every frame no
        /// steering rule claims); setting another creates it.
        SetRss {
            /// Bus address of the block.
            config @ 8: u64,
            /// The context, below [`super::MAX_RSS_CONTEXTS`].
            context @ 16: u32,
        } = 8,
        /// Set interrupt moderation of every queue pair (running and
        /// future): an armed pair raises its vector once `frames`
        /// completions are pending or the oldest has waited `usecs`,
        /// whichever comes first.
        SetCoalesce {
            /// Longest wait in microseconds,
            /// 0..=[`super::MAX_COALESCE_USECS`]; 0: at once.
            usecs @ 8: u32,
            /// Pending completions that raise at once,
            /// 0..=[`super::MAX_COALESCE_FRAMES`] (0: no count limit).
            frames @ 12: u32,
        } = 9,
        /// Read the card's counters of a queue pair (running or not; they
        /// survive destroy and create, and reset with the function).
        /// Result: [`QpCardStats`].
        QueryQpStats {
            /// Queue pair index.
            qp @ 8: u16,
        } = 10,
        /// PF only: where the card delivers received frames. With `vf`
        /// set, frames go to the card's VF while the VF has a running
        /// queue pair (and back to the PF the moment it has none, e.g.
        /// when unplugged); otherwise to the PF's queues (the synthetic
        /// data path). The completion is the acknowledgement: once it is
        /// seen, no further frame goes the old way.
        SetDatapath {
            /// Deliver to the VF (0 or 1).
            vf @ 8: bool,
        } = 11,
        /// PF only: turn the GFT on or off and size its table. Shrinking
        /// below the flows held is [`AdminStatus::BadState`].
        GftConfig {
            /// [`super::gft::config`] bits.
            flags @ 8: u32,
            /// Capacity, 1..=[`super::gft::MAX_FLOWS_LIMIT`].
            max_flows @ 12: u32,
        } = 12,
        /// PF only: the current policy generation; a hit on a flow of
        /// another generation is an exception
        /// ([`super::gft::ExceptionReason::Stale`]).
        GftSetGeneration {
            /// Generation.
            generation @ 8: u32,
        } = 13,
        /// PF only: add a flow, or replace the flow with the same key, from
        /// a [`super::gft::FLOW_RECORD_LEN`]-byte block ([`super::gft::FlowRecord`]). A
        /// full table is [`AdminStatus::NoSpace`].
        GftInstall {
            /// Bus address of the block.
            record @ 8: u64,
        } = 14,
        /// PF only: remove the flow whose [`super::gft::KEY_LEN`]-byte key is at
        /// `key`; [`AdminStatus::NotFound`] if there is none.
        GftDelete {
            /// Bus address of the key.
            key @ 8: u64,
        } = 15,
        /// PF only: remove every flow.
        GftFlush = 16,
        /// PF only: write up to `max` [`super::gft::FlowCounters`] records to
        /// `buf`, from table slot `cursor` on. Result: [`GftDumpResult`].
        GftDump {
            /// Bus address of the buffer.
            buf @ 8: u64,
            /// Records it holds.
            max @ 16: u32,
            /// Slot to start at (0, then the previous result's `next`).
            cursor @ 20: u32,
        } = 17,
        /// PF only: the card's GFT counters; result: [`super::gft::CardGftStats`].
        GftQueryStats = 18,
        /// PF only: the RDMA engine's limits; result: [`rdma::RdmaCaps`].
        RdmaQueryCaps = 19,
        /// PF only: set entry `index` of the RDMA engine's GID table (the
        /// RoCEv2 addresses it sends from and accepts packets for).
        RdmaSetGid {
            /// Entry, below [`rdma::GID_TABLE_LEN`].
            index @ 8: u32,
            /// Address.
            gid @ 16: rdma::Gid,
        } = 20,
        /// PF only: clear entry `index` of the GID table.
        RdmaDelGid {
            /// Entry, below [`rdma::GID_TABLE_LEN`].
            index @ 8: u32,
        } = 21,
        /// PF only: set up the RDMA event queue (one per function).
        RdmaCreateEq {
            /// Bus address of the ring ([`rdma::EQE_LEN`]-byte entries).
            ring @ 8: u64,
            /// Entries (power of two, 64..=4096).
            entries @ 16: u32,
            /// MSI-X vector raised when an event is written.
            vector @ 20: u16,
        } = 22,
        /// PF only: stop using the event queue.
        RdmaDestroyEq = 23,
        /// PF only: create completion queue `cqn`.
        RdmaCreateCq {
            /// CQ number, below `max_cq`.
            cqn @ 8: u32,
            /// Bus address of the ring ([`rdma::CQE_LEN`]-byte entries, or
            /// [`rdma::CQE_STAMPED_LEN`] with [`rdma::cq_create::TIMESTAMP`]).
            ring @ 16: u64,
            /// Entries (power of two, up to `max_cqe`).
            entries @ 24: u32,
            /// The [`rdma::udb`] page that rings it; 0 for a kernel CQ.
            db_page @ 28: u32,
            /// [`rdma::cq_create`] bits.
            flags @ 32: u32,
        } = 24,
        /// PF only: destroy a completion queue no QP uses.
        RdmaDestroyCq {
            /// CQ number.
            cqn @ 8: u32,
        } = 25,
        /// PF only: create a queue pair in the reset state.
        RdmaCreateQp(create: rdma::QpCreate) = 26,
        /// PF only: change a queue pair's attributes and state from a
        /// [`rdma::QP_MODIFY_LEN`]-byte [`rdma::QpModify`] block.
        RdmaModifyQp {
            /// QP number.
            qpn @ 8: u32,
            /// Bus address of the block.
            block @ 16: u64,
        } = 27,
        /// PF only: a queue pair's state; result: [`rdma::QpQueryResult`].
        RdmaQueryQp {
            /// QP number.
            qpn @ 8: u32,
        } = 28,
        /// PF only: destroy a queue pair; its outstanding WQEs are dropped.
        RdmaDestroyQp {
            /// QP number.
            qpn @ 8: u32,
        } = 29,
        /// PF only: create a memory region.
        RdmaRegMr(reg: rdma::MrReg) = 30,
        /// PF only: destroy a memory region.
        RdmaDeregMr {
            /// Its key.
            key @ 8: u32,
        } = 31,
        /// PF only: write the RDMA engine's counters, an
        /// [`rdma::COUNTERS_LEN`]-byte [`rdma::RdmaCounters`] block, to
        /// `buf`.
        RdmaQueryStats {
            /// Bus address of the block.
            buf @ 8: u64,
        } = 32,
        /// Delete an RSS context other than 0; steering rules that name
        /// it fall back to context 0.
        DelRssContext {
            /// The context.
            context @ 8: u32,
        } = 33,
        /// Add or replace a steering rule.
        SetFlowRule(rule: super::FlowRule) = 34,
        /// Delete a steering rule.
        DelFlowRule {
            /// Its index, below [`super::MAX_FLOW_RULES`].
            index @ 8: u32,
        } = 35,
        /// Write the function's MAC counters, a [`super::MacStats`]
        /// block, to `buf`.
        QueryMacStats {
            /// Bus address of the block.
            buf @ 8: u64,
        } = 36,
        /// Choose how queue pair `qp` receives from its next
        /// [`AdminCmd::CreateQp`] on (the choice stays until changed or
        /// the function resets): with `bytes` 0, into the buffers of its
        /// RX ring; otherwise into a stream ([`super::stream`]): frames
        /// back to back in the `bytes`-byte ring whose chunks the table at
        /// `table` lists, the card's write position published in the
        /// 4-byte word at `tail`, and the create command's RX ring unused.
        /// A running pair is [`AdminStatus::BadState`]; a shape that is
        /// not [`super::stream::StreamGeometry::valid`],
        /// [`AdminStatus::BadParam`].
        SetRxStream {
            /// Queue pair index.
            qp @ 8: u16,
            /// Ring bytes: 0 (no stream), or as
            /// [`super::stream::StreamGeometry::bytes`].
            bytes @ 12: u32,
            /// Bus address of the chunk table, 8-byte aligned: one 64-bit
            /// chunk address ([`super::stream::ALIGN`]-aligned) per chunk.
            table @ 16: u64,
            /// Bus address of the tail word, 4-byte aligned.
            tail @ 24: u64,
            /// Chunk bytes ([`super::stream::StreamGeometry::chunk_bytes`]).
            chunk_bytes @ 32: u32,
            /// Room in front of each frame
            /// ([`super::stream::StreamGeometry::headroom`]).
            headroom @ 36: u16,
            /// Room behind each frame
            /// ([`super::stream::StreamGeometry::tailroom`]).
            tailroom @ 38: u16,
        } = 37,
        /// PF only: move a completion queue to a new ring. The card
        /// copies the completions from the driver's consumer index
        /// `consumed` (free running, as the CQ_CI doorbell holds it) up
        /// to its producer into the new ring's first slots, in order and
        /// with the first lap's phase, and goes on there; the driver then
        /// consumes from slot 0. Completions that do not fit in `entries`
        /// less one is [`AdminStatus::BadParam`], nothing changed.
        RdmaResizeCq {
            /// CQ number.
            cqn @ 8: u32,
            /// Bus address of the new ring (entries of the size the CQ was
            /// created with).
            ring @ 16: u64,
            /// Its entries (power of two, up to `max_cqe`).
            entries @ 24: u32,
            /// The driver's consumer index (16 bits).
            consumed @ 28: u32,
        } = 38,
        /// PF only: create shared receive queue `srqn`: a ring of
        /// [`rdma::RqWqe`]s any QP created with it takes from in order,
        /// rung through [`rdma::db::SRQ`] (or that register of
        /// `db_page`).
        RdmaCreateSrq {
            /// SRQ number, 1..=max_srq.
            srqn @ 8: u32,
            /// Bus address of the ring.
            ring @ 16: u64,
            /// Entries (power of two, up to `max_qp_wr`).
            entries @ 24: u32,
            /// Protection domain.
            pd @ 28: u32,
            /// The [`rdma::udb`] page that rings it; 0 for a kernel SRQ.
            db_page @ 32: u32,
            /// 0: a basic SRQ, which QPs created with it take from. Else an
            /// XRC SRQ of this XRC domain (1..=[`rdma::MAX_XRCD`], with
            /// [`rdma::rdma_cap::XRC`]): the XRC targets of the domain put
            /// the SENDs that name it there, and its receives complete on
            /// `cq` (a user SRQ's on a CQ of the same `db_page`).
            xrcd @ 36: u32,
            /// An XRC SRQ's completion queue.
            cq @ 40: u32,
        } = 39,
        /// PF only: arm a shared receive queue's limit: once fewer than
        /// `limit` requests are posted and not taken, the card writes an
        /// [`rdma::eqe_type::SRQ_LIMIT`] event and disarms it (0: disarm).
        /// A limit at or above the requests posted now fires at once.
        RdmaArmSrq {
            /// SRQ number.
            srqn @ 8: u32,
            /// The limit.
            limit @ 12: u32,
        } = 40,
        /// PF only: give a shared receive queue `entries` slots (power of
        /// two, more than it has, within the ring the driver allocated).
        /// Slot 0 of the new size is the position that began the lap
        /// (of the old size) the last position rung is in: that lap's
        /// slots stay as they are, the positions after it go on to the
        /// new slots, and positions of the lap before, still to be taken,
        /// keep the old size until the card's head reaches that start.
        /// So WQEs posted and not completed keep the slot numbers their
        /// completions name, and the new room is free at once. The
        /// driver computes the same start from its own head. One resize
        /// at a time: another before the card reached that start is
        /// [`AdminStatus::BadState`].
        RdmaResizeSrq {
            /// SRQ number.
            srqn @ 8: u32,
            /// The new number of slots.
            entries @ 12: u32,
        } = 59,
        /// PF only: give pages `first..first + count` of the on-demand
        /// region `key` ([`rdma::mr_kind::ODP`]) the translations in
        /// `count` little-endian [`rdma::odp_pte`] entries at `pbl`
        /// (`count` 1..=[`rdma::MAX_ODP_MAP_PAGES`]). An entry without
        /// [`rdma::odp_pte::VALID`] removes that page's.
        RdmaOdpMap {
            /// The region's key.
            key @ 8: u32,
            /// First page (4 KiB, from the region's first).
            first @ 12: u32,
            /// Pages.
            count @ 16: u32,
            /// Bus address of the entries.
            pbl @ 24: u64,
        } = 60,
        /// PF only: forget the translations of pages `first..first +
        /// count` of the on-demand region `key`. Once the command
        /// completes the card no longer reaches those pages: the driver
        /// may unmap them.
        RdmaOdpUnmap {
            /// The region's key.
            key @ 8: u32,
            /// First page.
            first @ 12: u32,
            /// Pages.
            count @ 16: u32,
        } = 61,
        /// PF only: make BPF map `id` ([`super::xdp`]): `map_type` (array or
        /// hash), key and value sizes in bytes (an array's key is 4; at
        /// most [`super::xdp::KEY_ROOM`] and 256), `max_entries` (at most
        /// 65536). An array's values start at zero. A taken `id`:
        /// [`AdminStatus::BadState`]; other sizes or types:
        /// [`AdminStatus::BadParam`].
        XdpMapCreate {
            /// Map number.
            id @ 8: u32,
            /// [`super::xdp::map_type`].
            map_type @ 12: u32,
            /// Key bytes.
            key_size @ 16: u32,
            /// Value bytes.
            value_size @ 20: u32,
            /// Entries.
            max_entries @ 24: u32,
        } = 62,
        /// PF only: forget BPF map `id` (a loaded program may not use it).
        XdpMapDestroy {
            /// Map number.
            id @ 8: u32,
        } = 63,
        /// PF only: one element of BPF map `id`, through the buffer at
        /// `buf` (key at 0, value at [`super::xdp::KEY_ROOM`]), as `op`
        /// ([`super::xdp::map_op`]) says.
        XdpMapElem {
            /// Map number.
            id @ 8: u32,
            /// [`super::xdp::map_op`].
            op @ 12: u32,
            /// UPDATE: `BPF_ANY`, `BPF_NOEXIST` or `BPF_EXIST`.
            /// NEXT_KEY: 1 for the first key.
            flags @ 16: u64,
            /// Bus address of the buffer.
            buf @ 24: u64,
        } = 64,
        /// PF only: run the `count` eBPF instructions at `prog` on every
        /// frame from the wire from now on, in place of any program
        /// before; its maps (`ld_imm64` with source 1) named by their
        /// numbers. A program the card cannot run (a helper other than
        /// the map ones, a call, a jump out of it, an unknown map):
        /// [`AdminStatus::BadParam`], the program before kept.
        XdpLoad {
            /// Bus address of the instructions.
            prog @ 8: u64,
            /// Instructions, 1..=[`super::xdp::MAX_INSNS`].
            count @ 16: u32,
        } = 65,
        /// PF only: stop running the offloaded program (its maps stay).
        XdpUnload = 66,
        /// PF only: allocate `len` bytes (rounded up to whole
        /// [`rdma::dm::PAGE`]s) of device memory. Result:
        /// [`RdmaDmAllocated`]. No room: [`AdminStatus::NoSpace`].
        RdmaAllocDm {
            /// Bytes, 1..=[`rdma::dm::SIZE`].
            len @ 8: u64,
        } = 68,
        /// PF only: free the allocation at `offset` (its device-memory
        /// MRs must be gone: [`AdminStatus::BadState`] otherwise).
        RdmaFreeDm {
            /// Offset of the allocation in device memory.
            offset @ 8: u64,
        } = 69,
        /// PF only: what became of the frames offloaded programs saw since
        /// the function's last reset. Result: [`XdpStatsResult`].
        XdpStats = 67,
        /// PF only: destroy a shared receive queue no QP uses.
        RdmaDestroySrq {
            /// SRQ number.
            srqn @ 8: u32,
        } = 41,
        /// Where the function's [`super::db_page`] lies: a 4 KiB-aligned
        /// page of host memory (0: none). Only while no queue pair keeps
        /// its tail there; a function reset forgets it.
        SetDoorbellPage {
            /// Bus address of the page.
            addr @ 8: u64,
        } = 42,
        /// PF only: add or replace `count` flows from consecutive
        /// [`super::gft::FLOW_RECORD_LEN`]-byte blocks
        /// ([`super::gft::FlowRecord`]), in order, stopping at the first
        /// that fails. `count` is 1..=[`super::gft::MAX_INSTALL_BATCH`].
        /// Result: [`GftBatchResult`].
        GftInstallBatch {
            /// Bus address of the first block.
            records @ 8: u64,
            /// Blocks.
            count @ 16: u32,
        } = 43,
        /// PF only: the card's exception-path counters; result:
        /// [`super::gft::CardExceptionStats`].
        GftQueryExceptionStats = 44,
        /// PF only: police exceptions: each remote address (source of a
        /// packet from the wire, destination of one from the host) may
        /// send `rate` a second (0: no limit), `burst` at once (1 to
        /// [`super::gft::MAX_EXCEPTION_BURST`]).
        GftSetExceptionRate {
            /// Exceptions a second.
            rate @ 8: u32,
            /// Exceptions at once.
            burst @ 12: u32,
        } = 45,
        /// PF only: the engine's multicast limits; result:
        /// [`rdma::McastCaps`]. A card without UD multicast answers
        /// [`AdminStatus::BadOpcode`].
        RdmaQueryMcastCaps = 46,
        /// PF only: attach UD queue pair `qpn` to multicast group `gid`:
        /// UD SENDs to the group (destination QP 0xffffff) reach it. Again
        /// for a QP attached is a no-op; a full table is
        /// [`AdminStatus::NoSpace`]; a group address that is not
        /// multicast, or a QP that is not UD, [`AdminStatus::BadParam`].
        RdmaAttachMcast {
            /// QP number.
            qpn @ 8: u32,
            /// Group address (IPv6 multicast, or IPv4-mapped 224.0.0.0/4).
            gid @ 16: rdma::Gid,
        } = 47,
        /// PF only: detach a queue pair from a multicast group; the group
        /// goes with its last QP. Not attached: [`AdminStatus::NotFound`].
        RdmaDetachMcast {
            /// QP number.
            qpn @ 8: u32,
            /// Group address.
            gid @ 16: rdma::Gid,
        } = 48,
        /// Set TX shaper `node` ([`super::shaper`]): the frames of every
        /// queue pair below it leave at most at `rate` bits a second (0:
        /// no limit), in bursts of at most `burst` bytes (0: the card's
        /// default, [`super::shaper::default_burst`]); it hangs under
        /// `parent`, the root or a group node. A queue pair's shaper and
        /// every group node always exist: rate 0 under the root is no
        /// shaping. Only with [`super::feature::TX_SHAPERS`]. A `node`
        /// that is the root with a parent, a parent that is not the root
        /// or a group node, a loop, a tree deeper than
        /// [`super::shaper::MAX_DEPTH`] or a rate above
        /// [`super::shaper::MAX_RATE`]: [`AdminStatus::BadParam`]. A
        /// queue pair's `weight` (0 counts as 1) is its share against its
        /// siblings when their common parent is the bottleneck.
        SetShaper {
            /// The shaper.
            node @ 8: u16,
            /// Its parent.
            parent @ 10: u16,
            /// Bytes at once (0: default).
            burst @ 12: u32,
            /// Bits a second (0: no limit).
            rate @ 16: u64,
            /// A queue pair's weight (0: 1); ignored for other nodes.
            weight @ 24: u32,
        } = 49,
        /// Set the card's clock ([`super::feature::PTP`]; PF only).
        PtpSetTime {
            /// Nanoseconds.
            ns @ 8: u64,
        } = 50,
        /// Move the card's clock by `delta` nanoseconds (PF only).
        PtpAdjTime {
            /// Nanoseconds, either way.
            delta @ 8: i64,
        } = 51,
        /// Run the card's clock faster or slower than its oscillator by
        /// `scaled_ppm`: parts per million with a 16-bit binary fraction,
        /// at most [`super::ptp::MAX_SCALED_PPM`] either way (PF only).
        PtpAdjFreq {
            /// Scaled parts per million, either way.
            scaled_ppm @ 8: i64,
        } = 52,
        /// Stamp every received frame's completion with the card's clock
        /// ([`super::Cqe::TSTAMP`]) or none (the state after a reset).
        SetTimestamps {
            /// 1: stamp, 0: do not.
            rx @ 8: u8,
        } = 53,
        /// PF only: add a masked rule from a
        /// [`super::gft_rule::RULE_RECORD_LEN`]-byte block
        /// ([`super::gft_rule::RuleRecord`]). A rule with the same id is
        /// [`AdminStatus::BadState`], a full table
        /// [`AdminStatus::NoSpace`], an action the card cannot do
        /// [`AdminStatus::BadParam`].
        GftRuleAdd {
            /// Bus address of the block.
            record @ 8: u64,
        } = 54,
        /// PF only: remove rule `id`; [`AdminStatus::NotFound`] if there
        /// is none. Result: its [`super::gft_rule::RuleCounters`].
        GftRuleDelete {
            /// The rule's id.
            id @ 8: u32,
        } = 55,
        /// PF only: rule `id`'s counters; result:
        /// [`super::gft_rule::RuleCounters`].
        GftRuleQuery {
            /// The rule's id.
            id @ 8: u32,
        } = 56,
        /// PF only: remove every masked rule.
        GftRuleFlush = 57,
        /// PF only: the card's switch mode. Legacy (0, after a reset):
        /// the GFT and the data-path switch as ever. Switchdev (1): the
        /// masked rules decide each packet from the wire and from the
        /// VF; what none forwards goes to the PF (from the wire) or up
        /// the exception queue as [`super::gft::ExceptionReason::PortMiss`]
        /// (from the VF); the PF's own frames go to the wire; the data
        /// path is the PF's.
        SetEswitchMode {
            /// 0 legacy, 1 switchdev; anything else: "bad parameter".
            mode @ 8: u8,
        } = 58,
    }
}

wire_struct! {
    /// Rings of one queue pair, the parameters of [`AdminCmd::CreateQp`]
    /// (offsets from [`AQ_PARAMS`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct QpConfig[56] {
        /// Queue pair index, below [`super::MAX_QUEUE_PAIRS`].
        pub qp @ 0: u16,
        /// MSI-X vector of the pair's completions.
        pub vector @ 2: u16,
        /// TX ring entries (power of two,
        /// [`super::MIN_RING_ENTRIES`]..=[`super::MAX_RING_ENTRIES`]).
        pub tx_entries @ 4: u16,
        /// RX ring entries (as `tx_entries`).
        pub rx_entries @ 6: u16,
        /// Bus address of the TX ring.
        pub tx_ring @ 8: u64,
        /// Bus address of the RX ring.
        pub rx_ring @ 16: u64,
        /// Bus address of the completion queue.
        pub cq @ 24: u64,
        /// Completion queue entries: at least `tx_entries + rx_entries`,
        /// power of two.
        pub cq_entries @ 32: u32,
        /// [`super::qp_flags`] bits.
        pub flags @ 36: u32,
        /// Header/data split: bus address of `rx_entries` header slots
        /// of [`super::HDS_HDR_SLOT`] bytes, one per RX ring index; 0:
        /// the pair does not split.
        pub hdr_ring @ 40: u64,
        /// Header/data split: frames of at most this many bytes are not
        /// split (at most [`super::HDS_THRESH_MAX`]).
        pub hds_thresh @ 48: u32,
    }
}

admin_result! {
    /// Result of [`AdminCmd::QueryDevice`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DeviceInfo {
        /// Queue pairs available.
        pub max_qps @ 8: u32,
        /// Largest ring.
        pub max_ring_entries @ 12: u32,
        /// Link speed in Mbit/s.
        pub speed_mbps @ 16: u32,
        /// [`super::offload`] bits the card supports.
        pub offloads @ 20: u32,
        /// Largest MTU.
        pub max_mtu @ 24: u32,
        /// [`super::feature`] bits.
        pub features @ 28: u32,
    }
}

admin_result! {
    /// Result of [`AdminCmd::RdmaAllocDm`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RdmaDmAllocated {
        /// Offset of the allocation in device memory (page aligned).
        pub offset @ 8: u64,
    }
}

admin_result! {
    /// Result of [`AdminCmd::XdpStats`]: frames by the action the
    /// offloaded program returned.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct XdpStatsResult {
        /// `XDP_PASS`: on to the GFT and the host.
        pub pass @ 8: u64,
        /// `XDP_DROP`: dropped on the card.
        pub drop @ 16: u64,
        /// `XDP_ABORTED`, or an action the card does not know: dropped.
        pub aborted @ 24: u64,
        /// `XDP_TX`: sent back out of the wire.
        pub tx @ 32: u64,
    }
}

admin_result! {
    /// Result of [`AdminCmd::QueryQpStats`]: what the card counted for a
    /// queue pair, independent of the driver's own counters.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct QpCardStats {
        /// RX frames dropped for lack of a posted buffer.
        pub rx_no_buffer @ 8: u64,
        /// Metadata bytes moved over PCIe: descriptors and completions
        /// the card read or wrote, 4 per doorbell written to the pair, 4
        /// per MSI-X message the card sent.
        pub dma_meta_bytes @ 16: u64,
        /// Bytes of frame data the card moved (TX read plus RX written).
        pub dma_payload_bytes @ 24: u64,
        /// Doorbells or descriptors the card rejected.
        pub bad_requests @ 32: u64,
        /// Interrupts raised.
        pub irqs @ 40: u64,
        /// Of those, raised while interrupt moderation was on.
        pub irqs_moderated @ 48: u64,
        /// TCP segments the card cut from TSO frames.
        pub tso_segments @ 56: u64,
    }
}

impl QpCardStats {
    /// The counters in result order, with their `ethtool -S` names.
    pub fn named(&self) -> [(&'static str, u64); 7] {
        [
            ("card_rx_no_buffer", self.rx_no_buffer),
            ("card_dma_meta_bytes", self.dma_meta_bytes),
            ("card_dma_payload_bytes", self.dma_payload_bytes),
            ("card_bad_requests", self.bad_requests),
            ("card_irqs", self.irqs),
            ("card_irqs_moderated", self.irqs_moderated),
            ("card_tso_segments", self.tso_segments),
        ]
    }
}

admin_result! {
    /// Result of [`AdminCmd::GftDump`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct GftDumpResult {
        /// Records written.
        pub count @ 8: u32,
        /// Cursor of the next call; 0 when the table has been walked.
        pub next @ 12: u32,
    }
}

admin_result! {
    /// Result of [`AdminCmd::GftInstallBatch`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct GftBatchResult {
        /// Records installed: the first `installed` of the batch.
        pub installed @ 8: u32,
        /// Why record `installed` was not (an [`AdminStatus`]); `Ok` when
        /// all were.
        pub status @ 12: u16,
    }
}

/// Reads the flags and status of a completed admin entry.
pub fn aq_entry_state(b: &[u8; AQ_ENTRY_SIZE]) -> (u16, u16) {
    (
        u16::from_le_bytes([b[2], b[3]]),
        u16::from_le_bytes([b[4], b[5]]),
    )
}

/// Marks an admin entry done with `status` (card side).
pub fn aq_complete(b: &mut [u8; AQ_ENTRY_SIZE], status: AdminStatus) {
    b[2..4].copy_from_slice(&AQ_DONE.to_le_bytes());
    b[4..6].copy_from_slice(&(status as u16).to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip() {
        let cmds = [
            AdminCmd::QueryDevice,
            AdminCmd::CreateQp(QpConfig {
                qp: 3,
                vector: 4,
                tx_entries: 256,
                rx_entries: 512,
                tx_ring: 0x1000,
                rx_ring: 0x2000,
                cq: 0x3000,
                cq_entries: 1024,
                flags: crate::hw::qp_flags::TX_TAIL_IN_PAGE,
                hdr_ring: 0x4000,
                hds_thresh: 1024,
            }),
            AdminCmd::SetMac {
                mac: [2, 0, 0, 0, 0, 1],
            },
            AdminCmd::SetRxMode {
                flags: 5,
                mc_filter: 1 << 63,
            },
            AdminCmd::SetDatapath { vf: true },
            AdminCmd::GftDump {
                buf: 0xdead_beef_0000,
                max: 7,
                cursor: 9,
            },
            AdminCmd::RdmaSetGid {
                index: 2,
                gid: rdma::Gid::from_ipv4([10, 0, 0, 1]),
            },
            AdminCmd::RdmaQueryStats { buf: 0x4000 },
        ];
        for cmd in cmds {
            assert_eq!(AdminCmd::from_bytes(&cmd.to_bytes()), Ok(cmd));
        }
    }

    #[test]
    fn entry_offsets_are_the_documented_ones() {
        let b = AdminCmd::CreateQp(QpConfig {
            qp: 0x0102,
            cq_entries: 0x0a0b_0c0d,
            flags: 0x1122_3344,
            hdr_ring: 0x5566_7788,
            hds_thresh: 0x99aa_bbcc,
            ..QpConfig::default()
        })
        .to_bytes();
        assert_eq!(&b[0..2], &[2, 0]);
        assert_eq!(&b[8..10], &[0x02, 0x01]);
        assert_eq!(&b[40..44], &[0x0d, 0x0c, 0x0b, 0x0a]);
        assert_eq!(&b[44..48], &[0x44, 0x33, 0x22, 0x11]);
        assert_eq!(&b[48..52], &[0x88, 0x77, 0x66, 0x55]);
        assert_eq!(&b[56..60], &[0xcc, 0xbb, 0xaa, 0x99]);
        let b = AdminCmd::RdmaCreateEq {
            ring: 1,
            entries: 2,
            vector: 3,
        }
        .to_bytes();
        assert_eq!((b[8], b[16], b[20]), (1, 2, 3));
    }

    #[test]
    fn bad_entries_are_refused() {
        let mut b = AdminCmd::SetDatapath { vf: false }.to_bytes();
        b[8] = 2;
        assert_eq!(AdminCmd::from_bytes(&b), Err(AdminStatus::BadParam));
        b[0] = 0xff;
        assert_eq!(AdminCmd::from_bytes(&b), Err(AdminStatus::BadOpcode));
    }

    #[test]
    fn results_leave_the_header_alone() {
        let mut b = [0xaau8; AQ_ENTRY_SIZE];
        let info = DeviceInfo {
            max_qps: 8,
            max_mtu: 9000,
            ..DeviceInfo::default()
        };
        info.write_result(&mut b);
        assert_eq!(&b[..AQ_PARAMS], &[0xaa; AQ_PARAMS]);
        assert_eq!(DeviceInfo::read_result(&b), info);
        let stats = QpCardStats {
            tso_segments: 77,
            ..QpCardStats::default()
        };
        stats.write_result(&mut b);
        assert_eq!(&b[..AQ_PARAMS], &[0xaa; AQ_PARAMS]);
        assert_eq!(QpCardStats::read_result(&b).tso_segments, 77);
    }
}
