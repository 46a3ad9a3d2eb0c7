// SPDX-License-Identifier: GPL-2.0

//! The RX path of a queue pair and its NAPI poll: completions in order,
//! received pages turned into skbs and replaced (or, on a streaming pair,
//! the stream's records made into skbs over their chunks), TX completions
//! handed to the TX path.

use kernel::{
    prelude::*,
    sync::{atomic::Relaxed, rcu},
};

use super::stream::{Record, StreamRx};

/// Stream frames of at most this many bytes are copied into the skb.
const STREAM_COPY_MAX: u32 = 256;
/// Most header bytes of a larger stream frame copied into the skb's
/// linear part (Ethernet, IPv6 and TCP with options); the rest stays in
/// the chunk.
const STREAM_HEAD_MAX: u32 = 128;

/// The default rx-copybreak: frames of at most this many bytes that land
/// in a page are copied into a small skb and the page posted again (as
/// bnxt and ena do): a small datagram then costs no fresh page and its
/// socket is charged about a kilobyte instead of a page. Not with an XDP
/// program (it gets the page), for GFT exceptions or chained frames.
pub(crate) const RX_COPYBREAK: u32 = 256;

/// Fresh RX buffers the card is told of at once (see
/// [`RingRx::tail_to_announce`]).
const RX_TAIL_BATCH: u16 = 32;

use super::{bump, rx_doorbells::RxDoorbells, tx::TxDone, PairCommands, QueuePair};
use crate::hw::{stream::StreamHeader, Cqe, QpDoorbell, RxDesc, GRO_MAX_BUFFERS, HDS_HDR_SLOT};
use crate::linux::dma::DmaBuffer;
use crate::linux::net::{
    napi::{Napi, NapiPoll},
    netdev::Feature,
    netmem::{PayloadBuf, PayloadPool},
    page_pool::{PagePool, RxFrame, RxPage},
    rx_chunk::ChunkFrame,
    skbuff::SkBuff,
    xdp::{
        rss_type, xdp_flush, XdpDrop, XdpProgRef, XdpRunnable, XdpRxHash, XdpRxq, XdpVerdict,
        XskMem,
    },
    xsk::{XskBuf, XskFrame, XskPool},
};
use crate::nic::ring::{read_cqe, CompletionQueue, Ring, RingIndex};

/// A buffer posted on the RX ring: a page of the queue's page pool, a
/// memory provider's payload buffer, or (AF_XDP zero copy) a buffer of
/// the socket's umem.
pub(super) enum RxBuf {
    Page(RxPage),
    Payload(PayloadBuf),
    Xsk(XskBuf),
}

/// Where a queue's RX buffers come from, with the queue as XDP programs
/// see it (its memory model matches: a frame runs only with an rxq of
/// its kind). Each variant's rxq is dropped before its pool.
pub(super) enum RxMem {
    /// Pages of the queue's page pool.
    Pages { rxq: XdpRxq, pool: PagePool },
    /// Payload buffers of the memory provider bound to the queue, which
    /// the host cannot read: the pair is payload-only (every header in
    /// a header slot), and runs no XDP (the core refuses a program
    /// beside a provider).
    Payload { pool: PayloadPool },
    /// Buffers of the AF_XDP socket bound to the queue (zero copy).
    Xsk { rxq: XdpRxq<XskMem>, pool: XskPool },
}

/// The completion queue and RX side of a running queue pair (NAPI only).
pub(super) struct RxState {
    pub(super) cq: CompletionQueue,
    pub(super) path: RxPath,
    /// How the card is told the RX tail and the CQ head.
    pub(super) doorbells: RxDoorbells,
    /// The card's commands that create the pair on these rings.
    pub(super) commands: PairCommands,
}

/// How a queue pair receives.
pub(super) enum RxPath {
    /// Into buffers posted on its RX ring, one completion each.
    Ring(RingRx),
    /// Into a stream (`hw::stream`); the completion queue carries only TX
    /// completions.
    Stream(StreamRx),
}

/// The RX ring of a pair in descriptor mode and the buffers posted on it.
pub(super) struct RingRx {
    pub(super) ring: Ring,
    /// The tail the card was last told of ([`Self::tail_to_announce`]).
    pub(super) announced: RingIndex,
    /// The buffer posted at each descriptor. Dropped before `mem`.
    pub(super) bufs: KVec<Option<RxBuf>>,
    /// A coalesced frame whose later buffers are still to come
    /// ([`Cqe::MORE`]). Dropped before `mem`.
    pub(super) chain: Option<Chain>,
    /// Header/data split: the card writes a split frame's headers into
    /// the slot of its first buffer's index ([`hw::HDS_HDR_SLOT`] bytes
    /// each); `None`: the ring does not split.
    pub(super) hdrs: Option<DmaBuffer>,
    pub(super) mem: RxMem,
}

/// A frame over several RX buffers (receive coalescing), between the
/// completions of its first and last buffer.
pub(super) enum Chain {
    /// Put together so far: the skb over the first buffer with the later
    /// ones as fragments, the first buffer's completion, how many
    /// buffers, how many bytes.
    Building {
        skb: SkBuff,
        first: Cqe,
        bufs: u16,
        len: u32,
    },
    /// Not deliverable (damaged, no memory, out of the card's rules): its
    /// remaining buffers are taken and dropped.
    Dropping,
}

/// What a buffer of a frame over several adds to its skb: a page's
/// frame, or a memory provider's buffer with the bytes the card wrote
/// (never read).
enum Frag {
    Page(RxFrame),
    Payload(PayloadBuf, u32),
}

impl Frag {
    /// Adds the buffer to `skb` as its next fragment; `Err` (the buffer
    /// back to its pool) if it does not fit there.
    fn append_to(self, skb: &mut SkBuff) -> Result {
        match self {
            Frag::Page(frame) => frame.append_to(skb).map_err(|_| ENOSPC),
            Frag::Payload(buf, len) => buf.append_to(skb, len).map_err(|_| ENOSPC),
        }
    }
}

impl RxState {
    /// The AF_XDP pool bound to the queue (zero copy), if one is.
    pub(super) fn xsk(&self) -> Option<&XskPool> {
        match &self.path {
            RxPath::Ring(ring) => ring.xsk(),
            RxPath::Stream(_) => None,
        }
    }

    /// Whether something the card wrote waits for a poll.
    pub(super) fn waiting(&self) -> bool {
        read_cqe(&self.cq).is_some() || matches!(&self.path, RxPath::Stream(s) if s.waiting())
    }
}

/// What one poll works with: the RX offloads the stack has on
/// (`ethtool -K`) and the XDP program, read once per poll, and what XDP
/// left to do at its end.
struct PollCtx<'a> {
    /// `rx-checksum`: frames the card verified are `CHECKSUM_UNNECESSARY`.
    csum: bool,
    /// `receive-hashing`: the card's flow hash goes into the skb.
    hash: bool,
    xdp: Option<XdpProgRef<'a>>,
    /// Frames of at most this many bytes are copied out of their page.
    copybreak: u32,
    /// Frames were redirected: flush them on their way.
    redirected: bool,
    /// `XDP_TX` frames wait for the TX doorbell.
    xdp_tx: bool,
    /// Hardware RX time stamps are on: the card's go into the skb.
    tstamp: bool,
}

impl RingRx {
    /// Posts fresh buffers until the ring is full or an allocation fails
    /// (a page: counted in `alloc_failed`; AF_XDP: user space's fill ring
    /// is empty, and the socket is told to wake the queue when it adds
    /// to it); a later poll tries again. Returns how many were posted.
    pub(super) fn refill(&mut self, alloc_failed: &kernel::sync::atomic::Atomic<u64>) -> u16 {
        let mut posted = 0;
        while self.ring.free() > 0 {
            let Some(buf) = self.alloc() else {
                if self.xsk().is_none() {
                    bump(alloc_failed, 1);
                }
                break;
            };
            if self.post(buf).is_err() {
                break;
            }
            posted += 1;
        }
        if let Some(xsk) = self.xsk() {
            xsk.set_rx_need_wakeup(self.ring.free() > 0);
        }
        posted
    }

    /// The tail to write to the card's RX tail doorbell now, if it is
    /// time (it is then taken as told). Each doorbell costs the card a
    /// message, so new buffers are announced in batches, as ixgbe does
    /// (`IXGBE_RX_BUFFER_WRITE`): once [`RX_TAIL_BATCH`] (at most an eighth
    /// of the ring) wait, or at once when the card knows of fewer than a
    /// quarter of the ring's buffers, or when they come from an AF_XDP
    /// socket (whose fill ring may hold only a few).
    pub(super) fn tail_to_announce(&mut self) -> Option<RingIndex> {
        let size = self.ring.size;
        let waiting = size.distance(self.announced, self.ring.tail);
        if waiting == 0 {
            return None;
        }
        let known = size.distance(self.ring.head, self.announced);
        let batch = RX_TAIL_BATCH.min(size.get() / 8);
        if waiting >= batch || known < size.get() / 4 || self.xsk().is_some() {
            return Some(self.announce_all());
        }
        None
    }

    /// The tail to write to the RX tail doorbell now, whatever waits (a
    /// ring's start); it is then taken as told.
    pub(super) fn announce_all(&mut self) -> RingIndex {
        self.announced = self.ring.tail;
        self.announced
    }

    /// Ties the ring's pool to `napi` for direct recycling (the context
    /// polls for it from now on), or with `None` unties it (the pair
    /// stopped; the pool may be freed while the context polls for
    /// another).
    pub(super) fn tie_pool(&self, napi: Option<&Napi>) {
        match (&self.mem, napi) {
            (RxMem::Pages { pool, .. }, Some(napi)) => pool.enable_direct_recycling(napi),
            (RxMem::Pages { pool, .. }, None) => pool.disable_direct_recycling(),
            (RxMem::Payload { pool }, Some(napi)) => pool.enable_direct_recycling(napi),
            (RxMem::Payload { pool }, None) => pool.disable_direct_recycling(),
            (RxMem::Xsk { .. }, _) => {}
        }
    }

    /// Whether the ring's buffers are a memory provider's (payload only).
    pub(super) fn payload_only(&self) -> bool {
        matches!(self.mem, RxMem::Payload { .. })
    }

    /// A fresh buffer of the queue's kind.
    fn alloc(&mut self) -> Option<RxBuf> {
        match &mut self.mem {
            RxMem::Pages { pool, .. } => pool.alloc().map(RxBuf::Page),
            RxMem::Payload { pool } => pool.alloc().map(RxBuf::Payload),
            RxMem::Xsk { pool, .. } => pool.alloc().map(RxBuf::Xsk),
        }
    }

    /// Bytes of frame each buffer holds.
    fn room(&self) -> u32 {
        match &self.mem {
            RxMem::Pages { pool, .. } => pool.frame_room(),
            RxMem::Payload { pool } => pool.buf_len(),
            RxMem::Xsk { pool, .. } => pool.rx_frame_size(),
        }
    }

    /// The AF_XDP pool bound to the queue (zero copy), if one is.
    pub(super) fn xsk(&self) -> Option<&XskPool> {
        match &self.mem {
            RxMem::Pages { .. } | RxMem::Payload { .. } => None,
            RxMem::Xsk { pool, .. } => Some(pool),
        }
    }

    /// Posts `buf` at the RX tail and advances it.
    pub(super) fn post(&mut self, buf: RxBuf) -> Result {
        let slot = usize::from(self.ring.tail.get());
        let desc = RxDesc {
            addr: match &buf {
                RxBuf::Page(page) => page.frame_addr(),
                RxBuf::Payload(buf) => buf.addr(),
                RxBuf::Xsk(xsk) => xsk.frame_addr(),
            },
            len: self.room(),
        };
        self.ring
            .desc
            .write(slot * RxDesc::SIZE, &desc.to_bytes())?;
        self.bufs[slot] = Some(buf);
        self.ring.tail = self.ring.size.next(self.ring.tail);
        Ok(())
    }
}

/// The card's flow hash of a frame as XDP programs read it: the hash, and
/// what it covered (the card says whether the ports were in it; the
/// frame's headers say which protocols).
fn xdp_rx_hash(frame: &[u8], cqe: Cqe) -> XdpRxHash {
    let ethertype = frame.get(12..14).map(|t| u16::from_be_bytes([t[0], t[1]]));
    let (l3, proto) = match ethertype {
        Some(0x0800) => (rss_type::L3_IPV4, frame.get(14 + 9)),
        Some(0x86dd) => (rss_type::L3_IPV6, frame.get(14 + 6)),
        _ => (0, None),
    };
    let l4 = if cqe.flags & Cqe::HASH_L4 == 0 {
        0
    } else {
        rss_type::L4
            | match proto {
                Some(6) => rss_type::L4_TCP,
                Some(17) => rss_type::L4_UDP,
                _ => 0,
            }
    };
    XdpRxHash {
        hash: cqe.hash,
        kind: l3 | l4,
    }
}

impl QueuePair {
    /// A frame of at most the rx-copybreak's bytes: copied into a small
    /// skb, its page posted again at once (no fresh page, and the socket
    /// is charged a small skb instead of a page: more small datagrams fit
    /// its receive buffer). A split one's headers and payload are copied
    /// together ([`Self::split_head`]): its page is the pool's own,
    /// readable memory. Dropped, its page still posted, if no skb could
    /// be had.
    fn copy_small(
        &self,
        napi: &Napi,
        rx: &mut RingRx,
        page: RxPage,
        cqe: Cqe,
        ctx: &mut PollCtx<'_>,
    ) {
        let split = cqe.flags & Cqe::SPLIT != 0;
        let (skb, page) = match page.received(cqe.len) {
            Ok(frame) => {
                let skb = if split {
                    self.split_head(napi, rx.hdrs.as_ref(), cqe, frame.bytes())
                } else {
                    SkBuff::copy_of(napi, frame.bytes())
                };
                (skb, frame.into_page())
            }
            Err(page) => (None, page),
        };
        if rx.post(RxBuf::Page(page)).is_err() {
            bump(&self.stats.bad_completions, 1);
        }
        let Some(skb) = skb else {
            bump(&self.stats.rx_dropped, 1);
            return;
        };
        bump(&self.stats.rx_copybreak, 1);
        let mut len = cqe.len;
        if split {
            bump(&self.stats.rx_hds, 1);
            len += u32::from(cqe.hdr_len);
        }
        self.count_received(len, cqe.segs);
        self.to_stack(napi, skb, cqe, ctx);
    }

    /// Hands the frame of an RX completion on (XDP, the stack, the GFT's
    /// exception path) and posts a fresh buffer in its place. Runs with
    /// `rx` locked but `tx` free (the stack may transmit).
    fn complete_rx(&self, napi: &Napi, rx: &mut RingRx, cqe: Cqe, ctx: &mut PollCtx<'_>) {
        let len = cqe.len;
        let room = rx.room();
        let head = usize::from(rx.ring.head.get());
        // A frame's first buffer holds at least its Ethernet header; a
        // later buffer of a coalesced frame, or the payload of a split
        // one, at least a byte. A split frame is put together as a
        // chain: the headers make the skb, the buffers its fragments.
        let split = cqe.flags & Cqe::SPLIT != 0;
        let more = cqe.flags & Cqe::MORE != 0;
        let in_chain = rx.chain.is_some() || split || more;
        // A split frame of headers alone (a payload-only ring's) left its
        // buffer empty.
        let headers_only = rx.chain.is_none() && split && !more && len == 0;
        let least = match (rx.chain.is_some() || split, headers_only) {
            (_, true) => 0,
            (true, false) => 1,
            (false, false) => 14,
        };
        if rx.ring.size.index(cqe.index) != Some(rx.ring.head)
            || len < least
            || len > room
            || rx.bufs[head].is_none()
        {
            self.out_of_step(false, cqe.index, len, rx.ring.head.get());
            return;
        }
        rx.ring.head = rx.ring.size.next(rx.ring.head);
        let Some(buf) = rx.bufs[head].take() else {
            return;
        };
        if cqe.flags & Cqe::FCS_ERR != 0 {
            // Damaged on the wire: dropped, its buffer straight back to
            // the card (with the rest of its frame, if it spans buffers).
            bump(&self.stats.rx_crc_errors, 1);
            if rx.post(buf).is_err() {
                bump(&self.stats.bad_completions, 1);
            }
            if in_chain {
                self.chain_part(napi, rx, None, cqe, ctx);
            }
            return;
        }
        // A frame in one buffer (split or not) no longer than the
        // rx-copybreak, its headers counted if split, is copied whole.
        let whole = if split {
            u32::from(cqe.hdr_len) + len
        } else {
            len
        };
        let small = rx.chain.is_none()
            && !more
            && (whole <= ctx.copybreak || headers_only)
            && ctx.xdp.is_none()
            && cqe.flags & Cqe::GFT_EXCEPTION == 0;
        let buf = match buf {
            RxBuf::Page(page) if small => return self.copy_small(napi, rx, page, cqe, ctx),
            RxBuf::Payload(buf) => return self.complete_payload(napi, rx, buf, cqe, ctx),
            buf => buf,
        };
        // Replace the buffer first; without a replacement the frame is
        // dropped and its buffer goes straight back to the card, so the
        // ring never runs dry.
        let (deliver, repost) = match rx.alloc() {
            Some(fresh) => (Some(buf), fresh),
            None => {
                if rx.xsk().is_none() {
                    bump(&self.stats.rx_alloc_failed, 1);
                }
                if !in_chain {
                    bump(&self.stats.rx_dropped, 1);
                }
                (None, buf)
            }
        };
        if rx.post(repost).is_err() {
            bump(&self.stats.bad_completions, 1);
        }
        if in_chain {
            self.chain_part(napi, rx, deliver, cqe, ctx);
            return;
        }
        match (deliver, &rx.mem) {
            (Some(RxBuf::Page(page)), RxMem::Pages { rxq, .. }) => {
                self.deliver_page(napi, rxq, page, cqe, ctx)
            }
            (Some(RxBuf::Xsk(buf)), RxMem::Xsk { rxq, .. }) => {
                self.deliver_xsk(napi, rxq, room, buf, cqe, ctx)
            }
            // A buffer of the other kind cannot be on the ring; were it,
            // its frame is dropped (the buffer freed as its own kind).
            (Some(_), _) => bump(&self.stats.rx_dropped, 1),
            (None, _) => (),
        }
    }

    /// A completion of a payload-only ring (a memory provider's buffers,
    /// which the host cannot read): the card splits every frame, so its
    /// headers (from the header slot) make the skb and its payload
    /// buffers become fragments, unread; a frame of headers alone gives
    /// its empty buffer straight back. A frame the card did not split,
    /// or split in the middle, is a bad completion and dropped; a GFT
    /// exception (whose path reads the frame whole) is dropped. Nothing
    /// is copied, nothing runs XDP.
    fn complete_payload(
        &self,
        napi: &Napi,
        rx: &mut RingRx,
        buf: PayloadBuf,
        cqe: Cqe,
        ctx: &mut PollCtx<'_>,
    ) {
        let split = cqe.flags & Cqe::SPLIT != 0;
        let more = cqe.flags & Cqe::MORE != 0;
        if rx.chain.is_none() && split && !more && cqe.len == 0 {
            let skb = match cqe.flags & Cqe::GFT_EXCEPTION {
                0 => self.split_head(napi, rx.hdrs.as_ref(), cqe, &[]),
                _ => None,
            };
            if rx.post(RxBuf::Payload(buf)).is_err() {
                bump(&self.stats.bad_completions, 1);
            }
            match skb {
                Some(skb) => {
                    bump(&self.stats.rx_hds, 1);
                    self.count_received(u32::from(cqe.hdr_len), cqe.segs);
                    self.to_stack(napi, skb, cqe, ctx);
                }
                None => bump(&self.stats.rx_dropped, 1),
            }
            return;
        }
        // Replace the buffer first, as for pages; a provider with no free
        // buffer (user space holds them all) costs the frame.
        let (deliver, repost) = match rx.alloc() {
            Some(fresh) => (Some(RxBuf::Payload(buf)), fresh),
            None => {
                bump(&self.stats.rx_alloc_failed, 1);
                (None, RxBuf::Payload(buf))
            }
        };
        if rx.post(repost).is_err() {
            bump(&self.stats.bad_completions, 1);
        }
        self.chain_part(napi, rx, deliver, cqe, ctx);
    }

    /// One buffer of a frame over several (receive coalescing): the first
    /// makes the skb, the later ones become its fragments, the last hands
    /// it on. `buf` is `None` when the buffer is not deliverable (damaged,
    /// or went back to the card for want of a replacement): the frame is
    /// dropped, once, at its last buffer. Frames over several buffers
    /// never run XDP (the card coalesces only while no program is
    /// attached) and never reach an AF_XDP socket; one that arrives
    /// anyway, or breaks the card's rules, is dropped.
    fn chain_part(
        &self,
        napi: &Napi,
        rx: &mut RingRx,
        buf: Option<RxBuf>,
        cqe: Cqe,
        ctx: &mut PollCtx<'_>,
    ) {
        let frame = match buf {
            Some(RxBuf::Page(page)) => page.received(cqe.len).ok().map(Frag::Page),
            Some(RxBuf::Payload(buf)) => Some(Frag::Payload(buf, cqe.len)),
            // Dropped here (an AF_XDP buffer goes back to its socket).
            Some(RxBuf::Xsk(_)) | None => None,
        };
        let usable = ctx.xdp.is_none() && cqe.flags & Cqe::GFT_EXCEPTION == 0;
        let split = cqe.flags & Cqe::SPLIT != 0;
        let next = match (rx.chain.take(), frame) {
            (None, Some(frame)) if usable && split => {
                match self.split_head(napi, rx.hdrs.as_ref(), cqe, &[]) {
                    Some(mut skb) => match frame.append_to(&mut skb) {
                        Ok(()) => {
                            bump(&self.stats.rx_hds, 1);
                            Chain::Building {
                                skb,
                                first: cqe,
                                bufs: 1,
                                len: u32::from(cqe.hdr_len) + cqe.len,
                            }
                        }
                        Err(_) => Chain::Dropping,
                    },
                    None => Chain::Dropping,
                }
            }
            (None, Some(Frag::Page(frame))) if usable => match frame.into_skb() {
                Ok(skb) => Chain::Building {
                    skb,
                    first: cqe,
                    bufs: 1,
                    len: cqe.len,
                },
                Err(_) => Chain::Dropping,
            },
            (
                Some(Chain::Building {
                    mut skb,
                    first,
                    bufs,
                    len,
                }),
                Some(frame),
            ) if bufs < GRO_MAX_BUFFERS
                && !split
                && cqe.segs == first.segs
                && cqe.mss == first.mss =>
            {
                match frame.append_to(&mut skb) {
                    Ok(()) => Chain::Building {
                        skb,
                        first,
                        bufs: bufs + 1,
                        len: len + cqe.len,
                    },
                    Err(_) => Chain::Dropping,
                }
            }
            // Split, but for XDP or the exception path (which read a
            // frame whole), or in the middle of a frame; or a payload-only
            // ring's frame not split (the card broke its promise).
            (None, Some(_)) if split => {
                bump(&self.stats.bad_completions, 1);
                Chain::Dropping
            }
            (None, Some(Frag::Payload(..))) if usable => {
                bump(&self.stats.bad_completions, 1);
                Chain::Dropping
            }
            (Some(Chain::Building { bufs, .. }), Some(_)) if bufs >= GRO_MAX_BUFFERS || split => {
                bump(&self.stats.bad_completions, 1);
                Chain::Dropping
            }
            _ => Chain::Dropping,
        };
        if cqe.flags & Cqe::MORE != 0 {
            rx.chain = Some(next);
            return;
        }
        match next {
            Chain::Building {
                skb, first, len, ..
            } => {
                self.count_received(len, first.segs);
                self.to_stack(napi, skb, first, ctx);
            }
            Chain::Dropping => bump(&self.stats.rx_dropped, 1),
        }
    }

    /// The skb of a split frame: its headers, copied out of the header
    /// slot of the completion's index, then `payload` (for a frame copied
    /// whole; empty when the payload pages become fragments). `None`
    /// (counted as a bad completion) if the ring has no header slots or
    /// the card's header length is shorter than an Ethernet header; or
    /// if no skb could be had. The length cannot pass the slot: it is a
    /// byte, the slot 256.
    fn split_head(
        &self,
        napi: &Napi,
        hdrs: Option<&DmaBuffer>,
        cqe: Cqe,
        payload: &[u8],
    ) -> Option<SkBuff> {
        let len = usize::from(cqe.hdr_len);
        let Some(hdrs) = hdrs.filter(|_| len >= 14) else {
            bump(&self.stats.bad_completions, 1);
            return None;
        };
        let slot = usize::from(cqe.index) * usize::from(HDS_HDR_SLOT);
        SkBuff::filled(napi, len + payload.len(), |out| {
            let (head, rest) = out.split_at_mut(len);
            rest.copy_from_slice(payload);
            hdrs.read(slot, head)
        })
    }

    /// Runs the XDP program, if one is attached, on a received frame and
    /// counts what it decided; `tx` sends an `XDP_TX` frame (false: no
    /// room). Returns the frame if it goes on to the stack.
    fn run_xdp<F: XdpRunnable>(
        &self,
        frame: F,
        rxq: &XdpRxq<F::Mem>,
        cqe: Cqe,
        ctx: &mut PollCtx<'_>,
        tx: impl FnOnce(F) -> bool,
    ) -> Option<F> {
        let Some(prog) = ctx.xdp else {
            return Some(frame);
        };
        let hash = Self::hash_for_xdp(frame.bytes(), cqe, ctx);
        match frame.run_xdp(prog, rxq, hash) {
            XdpVerdict::Pass(frame) => {
                bump(&self.stats.xdp_pass, 1);
                return Some(frame);
            }
            XdpVerdict::Tx(frame) => {
                if tx(frame) {
                    bump(&self.stats.xdp_tx, 1);
                    ctx.xdp_tx = true;
                } else {
                    bump(&self.stats.xdp_tx_errors, 1);
                }
            }
            XdpVerdict::Redirected => {
                bump(&self.stats.xdp_redirect, 1);
                ctx.redirected = true;
            }
            XdpVerdict::Dropped(why) => bump(
                match why {
                    XdpDrop::Drop => &self.stats.xdp_drop,
                    XdpDrop::Aborted => &self.stats.xdp_aborted,
                    XdpDrop::RedirectFailed => &self.stats.xdp_redirect_errors,
                },
                1,
            ),
        }
        None
    }

    /// Counts a received frame, before XDP (the stack's first layer).
    /// Counts a received frame of `len` bytes and `segs` wire segments
    /// (2 or more: the card coalesced it; else 1).
    fn count_received(&self, len: u32, segs: u8) {
        bump(&self.stats.rx_packets, u64::from(segs.max(1)));
        bump(&self.stats.rx_bytes, u64::from(len));
        if segs > 1 {
            bump(&self.stats.rx_hw_gro, 1);
            bump(&self.stats.rx_hw_gro_bytes, u64::from(len));
            bump(&self.stats.rx_hw_gro_segs, u64::from(segs));
        }
    }

    /// The card's flow hash of a frame for an XDP program, if it has one
    /// and `receive-hashing` is on.
    fn hash_for_xdp(frame: &[u8], cqe: Cqe, ctx: &PollCtx<'_>) -> Option<XdpRxHash> {
        (cqe.flags & Cqe::HASH != 0 && ctx.hash).then(|| xdp_rx_hash(frame, cqe))
    }

    /// Hands an AF_XDP frame on: the XDP program decides (a redirect to
    /// the socket takes the buffer as it is); a frame passed to the stack
    /// or the GFT's exception path, or sent back out (`XDP_TX`), is
    /// copied, and the buffer goes back to its pool.
    fn deliver_xsk(
        &self,
        napi: &Napi,
        rxq: &XdpRxq<XskMem>,
        room: u32,
        buf: XskBuf,
        cqe: Cqe,
        ctx: &mut PollCtx<'_>,
    ) {
        let Ok(frame) = buf.received(cqe.len, room) else {
            // Longer than a buffer holds: checked by the caller, never happens.
            bump(&self.stats.rx_dropped, 1);
            return;
        };
        if cqe.flags & Cqe::GFT_EXCEPTION != 0 {
            match frame.copy_to_skb(napi) {
                Some(skb) => self.gft_exception(skb),
                None => bump(&self.stats.rx_dropped, 1),
            }
            return;
        }
        self.count_received(cqe.len, 1);
        bump(&self.stats.rx_xsk, 1);
        let tx = |frame: XskFrame| {
            frame
                .into_xdp_frame()
                .is_some_and(|frame| self.send_xdp_frame(frame).is_ok())
        };
        let Some(frame) = self.run_xdp(frame, rxq, cqe, ctx, tx) else {
            return;
        };
        match frame.copy_to_skb(napi) {
            Some(skb) => self.to_stack(napi, skb, cqe, ctx),
            None => bump(&self.stats.rx_dropped, 1),
        }
    }

    /// Reads up to `budget` records of the stream and hands their frames
    /// on (XDP, the stack or the GFT's exception path). Returns how many
    /// it read. A stream out of step is reported once and read no further.
    fn poll_stream(
        &self,
        napi: &Napi,
        s: &mut StreamRx,
        budget: u32,
        ctx: &mut PollCtx<'_>,
    ) -> u32 {
        let mut read = 0;
        let tail = match s.tail() {
            Ok(tail) => tail,
            Err(e) => {
                self.stream_out_of_step(e);
                return 0;
            }
        };
        while read < budget {
            match s.next(tail) {
                Ok(Some(record)) => {
                    self.deliver_record(napi, s, record, ctx);
                    read += 1;
                }
                Ok(None) => break,
                Err(e) => {
                    self.stream_out_of_step(e);
                    break;
                }
            }
        }
        read
    }

    /// Hands a stream record's frame on: XDP where it lies (the records
    /// leave room for it while a program is attached), then an skb over
    /// its chunk.
    fn deliver_record(&self, napi: &Napi, s: &StreamRx, record: Record, ctx: &mut PollCtx<'_>) {
        let h = record.header;
        let cqe = Cqe {
            index: 0,
            flags: h.flags & StreamHeader::FLAGS_MASK,
            len: u32::from(h.len),
            hash: h.hash,
            ..Cqe::default()
        };
        if cqe.flags & Cqe::FCS_ERR != 0 {
            bump(&self.stats.rx_crc_errors, 1);
            return;
        }
        let Some(frame) = s.frame(&record) else {
            // Outside its record: `next` checked it, never happens.
            bump(&self.stats.rx_dropped, 1);
            return;
        };
        if cqe.flags & Cqe::GFT_EXCEPTION != 0 {
            match self.stream_skb(napi, frame) {
                Some(skb) => self.gft_exception(skb),
                None => bump(&self.stats.rx_dropped, 1),
            }
            return;
        }
        self.count_received(cqe.len, 1);
        let frame = match (ctx.xdp, s.xdp_rxq()) {
            (None, _) => frame,
            (Some(_), Some(rxq)) => {
                let tx = |frame: ChunkFrame| {
                    frame
                        .into_xdp_frame(rxq)
                        .is_some_and(|frame| self.send_xdp_frame(frame).is_ok())
                };
                match self.run_xdp(frame, rxq, cqe, ctx, tx) {
                    Some(frame) => frame,
                    None => return,
                }
            }
            (Some(_), None) => {
                // A program without room for it: the queues restart with
                // room before a program is installed, so this is a frame
                // from before; it does not bypass the program.
                bump(&self.stats.rx_dropped, 1);
                return;
            }
        };
        match self.stream_skb(napi, frame) {
            Some(skb) => self.to_stack(napi, skb, cqe, ctx),
            None => bump(&self.stats.rx_dropped, 1),
        }
    }

    /// An skb for a stream frame: built around its record if the record
    /// has room for it, else the headers copied and the rest a fragment
    /// of the chunk; a frame of at most [`STREAM_COPY_MAX`] bytes is
    /// copied whole. `None` (counted) if no skb could be allocated.
    fn stream_skb(&self, napi: &Napi, frame: ChunkFrame) -> Option<SkBuff> {
        let frame = match frame.into_built_skb() {
            Ok(skb) => {
                bump(&self.stats.rx_stream_frags, 1);
                return Some(skb);
            }
            Err(frame) => frame,
        };
        let copied = frame.len() <= STREAM_COPY_MAX;
        let Some(skb) = frame.into_skb(napi, STREAM_COPY_MAX, STREAM_HEAD_MAX) else {
            bump(&self.stats.rx_alloc_failed, 1);
            return None;
        };
        bump(
            if copied {
                &self.stats.rx_stream_copies
            } else {
                &self.stats.rx_stream_frags
            },
            1,
        );
        Some(skb)
    }

    /// Gives a received frame's skb to the stack with what the card
    /// found (flow hash, checksum, the segments it coalesced).
    fn to_stack(&self, napi: &Napi, mut skb: SkBuff, cqe: Cqe, ctx: &PollCtx<'_>) {
        if cqe.flags & Cqe::HASH != 0 && ctx.hash {
            skb.set_hash(cqe.hash, cqe.flags & Cqe::HASH_L4 != 0);
        }
        if cqe.flags & Cqe::TSTAMP != 0 && ctx.tstamp {
            skb.set_hwtstamp(cqe.timestamp);
        }
        if cqe.segs > 1 {
            bump(&self.stats.rx_csum_unnecessary, 1);
            if skb
                .receive_coalesced(napi, self.index, u16::from(cqe.segs), cqe.mss)
                .is_err()
            {
                // Not the TCP/IP packet the card says it coalesced.
                bump(&self.stats.bad_completions, 1);
                bump(&self.stats.rx_dropped, 1);
            }
            return;
        }
        if cqe.flags & Cqe::CSUM_OK != 0 && ctx.csum {
            skb.set_csum_unnecessary();
            bump(&self.stats.rx_csum_unnecessary, 1);
        } else {
            bump(&self.stats.rx_csum_none, 1);
        }
        skb.receive(napi, self.index);
    }

    /// Hands a frame received into a page on: XDP, then the stack (the
    /// skb built around the page), or the GFT's exception path.
    fn deliver_page(
        &self,
        napi: &Napi,
        rxq: &XdpRxq,
        page: RxPage,
        cqe: Cqe,
        ctx: &mut PollCtx<'_>,
    ) {
        let len = cqe.len;
        let Ok(frame) = page.received(len) else {
            // Longer than a buffer holds: checked above, never happens.
            bump(&self.stats.rx_dropped, 1);
            return;
        };
        if cqe.flags & Cqe::GFT_EXCEPTION != 0 {
            // Not for the stack (nor XDP): the GFT's exception path decides it.
            match frame.into_skb() {
                Ok(skb) => self.gft_exception(skb),
                Err(_) => bump(&self.stats.rx_dropped, 1),
            }
            return;
        }
        // Received, whatever XDP decides: it is the stack's first layer.
        self.count_received(len, cqe.segs);
        let Some(frame) = self.run_xdp(frame, rxq, cqe, ctx, |frame| self.xdp_tx(frame)) else {
            return;
        };
        match frame.into_skb() {
            Ok(skb) => self.to_stack(napi, skb, cqe, ctx),
            Err(page) => {
                drop(page);
                bump(&self.stats.rx_dropped, 1);
            }
        }
    }

    /// A GFT exception for the PF's exception work; dropped if the device
    /// is going away.
    fn gft_exception(&self, skb: SkBuff) {
        match self.dev.try_access() {
            Some(dev) => dev.data().gft_exception(self.index, skb),
            None => bump(&self.stats.rx_dropped, 1),
        }
    }
}

impl NapiPoll for QueuePair {
    fn poll(&self, napi: &Napi, budget: u32) -> u32 {
        self.polls.fetch_add(1, Relaxed);
        let Some(dev) = self.dev.try_access() else {
            // The device is going away: its removal waits for no poll.
            napi.complete_done(0);
            return 0;
        };
        let dev = &*dev;
        let features = dev.features();
        let rcu = rcu::read_lock();
        let mut ctx = PollCtx {
            csum: features.contains(Feature::RxCsum),
            hash: features.contains(Feature::RxHash),
            xdp: dev.data().xdp.get(&rcu),
            copybreak: dev.data().rx_copybreak.load(Relaxed),
            redirected: false,
            xdp_tx: false,
            tstamp: dev.data().tstamp.rx_on(),
        };
        let mut received = 0;
        let mut guard = self.rx.lock();
        let Some(rx) = &mut *guard else {
            // Stopped meanwhile: nothing to poll, nothing to re-arm.
            drop(guard);
            napi.complete_done(0);
            return 0;
        };
        let RxState { cq, path, .. } = rx;
        let mut tx_done = TxDone::default();
        while received < budget {
            let Some(cqe) = read_cqe(cq) else {
                break;
            };
            cq.advance();
            if cqe.flags & Cqe::RX == 0 {
                self.complete_tx(dev, cqe, &mut tx_done);
                continue;
            }
            match path {
                RxPath::Ring(ring) => self.complete_rx(napi, ring, cqe, &mut ctx),
                // A streaming pair has no RX buffers to complete.
                RxPath::Stream(_) => self.out_of_step(false, cqe.index, cqe.len, 0),
            }
            received += 1;
        }
        if let RxPath::Stream(s) = path {
            received += self.poll_stream(napi, s, budget - received, &mut ctx);
            let done = s.give_back();
            if let Some(head) = done.head {
                self.doorbell(QpDoorbell::StreamHead, head);
            }
            bump(&self.stats.rx_stream_chunks_replaced, done.replaced);
            if done.starved {
                // No chunk to put in place of a busy one: poll again.
                bump(&self.stats.rx_alloc_failed, 1);
                received = budget;
            }
        }
        if ctx.redirected {
            xdp_flush();
        }
        if ctx.xdp_tx {
            self.ring_xdp_tx();
        }
        // An AF_XDP socket's frames go out after the completions made room
        // (only a queue with one bound takes the TX lock for it).
        if rx.xsk().is_some() && self.xsk_xmit() {
            received = budget;
        }
        if tx_done.packets > 0 && super::tx_batching() {
            dev.tx_completed(self.index, tx_done.packets, tx_done.bytes);
        }
        let RxState {
            path, doorbells, ..
        } = rx;
        if let RxPath::Ring(ring) = path {
            // A ring that could not be filled (allocations failed at start
            // or since) gets what it lacks.
            if ring.ring.free() > 0 {
                ring.refill(&self.stats.rx_alloc_failed);
            }
            self.announce_rx_tail(doorbells, ring);
        }
        drop(guard);
        let armed = received < budget && napi.complete_done(received);
        // Under the RX lock again: a poll that the interrupt started on
        // another CPU since may have read further; the head told is the
        // latest.
        let mut guard = self.rx.lock();
        if let Some(rx) = &mut *guard {
            if self.announce_cq_head(rx, armed) {
                // A completion came before the card saw the arm.
                drop(guard);
                bump(&self.stats.rearm_polls, 1);
                napi.schedule();
            }
        }
        received
    }
}
