// SPDX-License-Identifier: GPL-2.0

//! Receive coalescing (hardware GRO, `offload::GRO_HW`): consecutive TCP
//! segments of a flow that reach a queue pair in one batch leave it as
//! one frame, by the rules Linux's own GRO follows (`tcp_gro_receive`,
//! `inet_gro_receive`, `ipv6_gro_receive`), so that the stack cannot tell
//! the card's aggregate from its own.
//!
//! A segment is held only if the card verified its checksum, it carries
//! payload, its IPv4 header has no options and is no fragment (IPv6: TCP
//! right behind the fixed header), and it has none of SYN, RST, URG, PSH
//! and FIN. The next segment of the flow joins the aggregate when its
//! sequence number follows, its payload is no longer than the first's
//! (the MSS), and it matches the first in everything else GRO compares:
//! the TCP flags but PSH and FIN (so CWR starts a new aggregate), the
//! acknowledgement, the TCP options byte for byte, TOS/traffic class
//! (ECN), TTL/hop limit, DF, IPv4 IDs counting up (or all the same, as
//! the second segment decides). A
//! shorter segment, or one with PSH or FIN, joins and closes the
//! aggregate. Anything else of the flow first releases the aggregate and
//! then goes its own way, so a flow's frames never change order.
//!
//! At most [`MAX_FLOWS`] aggregates are open on a queue pair; a new flow
//! beyond that releases the oldest. Aggregates nothing closes leave,
//! oldest first, when the queue pair has received nothing for the hold
//! time (the burst they came in is over), or once they have been open
//! for [`MAX_AGE_HOLDS`] hold times; a frame that comes when they are due
//! finds them gone, however late the timer. The released frame has the IP length
//! fields (and IPv4 header checksum) of the whole, PSH and FIN of the
//! segments that joined, and the first segment's TCP checksum, which the
//! host recomputes.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::frame::{ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::{Cqe, GRO_MAX_FRAME, GRO_MAX_SEGS};
use crate::offload::{ipv4_header_checksum, set_tcp_checksum};

/// Most aggregates open on one queue pair at a time.
pub const MAX_FLOWS: usize = 512;
/// An aggregate leaves after this many hold times even while frames
/// keep coming.
pub const MAX_AGE_HOLDS: u32 = 100;

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const TCP_PSH: u8 = 0x08;
const TCP_URG: u8 = 0x20;

/// A frame leaving the coalescer for the queue pair's RX ring.
#[derive(Debug, PartialEq, Eq)]
pub struct Release<'a> {
    /// The frame.
    pub frame: &'a [u8],
    /// Its receive flags ([`Cqe`]).
    pub flags: u16,
    /// Its RSS hash.
    pub hash: u32,
    /// TCP segments in it (1: not coalesced).
    pub segs: u16,
    /// Payload bytes of its first segment (0 if not coalesced).
    pub mss: u16,
}

/// The parts of a TCP/IP segment coalescing looks at.
#[derive(Clone, Copy, Debug)]
struct Segment {
    ipv6: bool,
    /// Offset of the IP header and of the TCP header.
    l3: usize,
    l4: usize,
    /// End of the IP packet (Ethernet padding excluded).
    end: usize,
    seq: u32,
    tcp_flags: u8,
    ip_id: u16,
    df: bool,
}

impl Segment {
    /// Parses the headers of an untagged IPv4 or IPv6 TCP frame of
    /// `avail` bytes, of which `frame` holds at least the headers. `None`
    /// for anything else or malformed.
    fn parse(frame: &[u8], avail: usize) -> Option<Self> {
        let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
        let l3 = 14;
        let (ipv6, l4, end, ip_id, df) = match ethertype {
            ETH_P_IPV4 => {
                let h = frame.get(l3..l3 + 20)?;
                if h[0] >> 4 != 4 || h[9] != 6 {
                    return None;
                }
                let ihl = usize::from(h[0] & 0x0f) * 4;
                let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
                let ip_id = u16::from_be_bytes([h[4], h[5]]);
                let df = h[6] & 0x40 != 0;
                (false, l3 + ihl, l3 + total, ip_id, df)
            }
            ETH_P_IPV6 => {
                let h = frame.get(l3..l3 + 40)?;
                if h[0] >> 4 != 6 || h[6] != 6 {
                    return None;
                }
                let payload = usize::from(u16::from_be_bytes([h[4], h[5]]));
                (true, l3 + 40, l3 + 40 + payload, 0, false)
            }
            _ => return None,
        };
        let th = frame.get(l4..l4 + 20)?;
        let doff = usize::from(th[12] >> 4) * 4;
        if doff < 20 || l4 + doff > end || l4 + doff > frame.len() || end > avail {
            return None;
        }
        Some(Self {
            ipv6,
            l3,
            l4,
            end,
            seq: u32::from_be_bytes([th[4], th[5], th[6], th[7]]),
            tcp_flags: th[13],
            ip_id,
            df,
        })
    }

    /// Offset of the payload.
    fn payload(&self, frame: &[u8]) -> usize {
        self.l4 + usize::from(frame[self.l4 + 12] >> 4) * 4
    }

    /// The flow: addresses and ports.
    fn key(&self, frame: &[u8]) -> FlowKey {
        let mut key = [0u8; 36];
        if self.ipv6 {
            key[..32].copy_from_slice(&frame[self.l3 + 8..self.l3 + 40]);
        } else {
            key[..8].copy_from_slice(&frame[self.l3 + 12..self.l3 + 20]);
        }
        key[32..].copy_from_slice(&frame[self.l4..self.l4 + 4]);
        FlowKey(key, self.ipv6)
    }

    /// Whether the segment may start or join an aggregate at all.
    fn holdable(&self, frame: &[u8], flags: u16) -> bool {
        let ip_ok = if self.ipv6 {
            true
        } else {
            let h = &frame[self.l3..self.l3 + 20];
            let fragment = u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0;
            self.l4 == self.l3 + 20 && !fragment && ipv4_header_checksum(h) == 0
        };
        flags & (Cqe::CSUM_OK | Cqe::FCS_ERR | Cqe::GFT_EXCEPTION) == Cqe::CSUM_OK
            && ip_ok
            && self.payload(frame) < self.end
            && self.tcp_flags & (TCP_SYN | TCP_RST | TCP_URG) == 0
    }
}

/// A TCP flow: its addresses (IPv4 in the first 8 bytes) and ports, and
/// whether it is IPv6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FlowKey([u8; 36], bool);

/// An aggregate being built: the first segment's headers and the
/// payload of all.
#[derive(Debug)]
struct Aggregate {
    frame: Vec<u8>,
    first: Segment,
    flags: u16,
    hash: u32,
    segs: u16,
    mss: u16,
    next_seq: u32,
    /// PSH and FIN of the segments that joined.
    push_fin: u8,
    /// The IPv4 IDs are all the same (decided by the second segment).
    fixed_id: bool,
    /// When the first segment arrived.
    opened: Instant,
    /// The first segment came from a train: its TCP checksum is not
    /// computed yet (needed only if it leaves alone).
    csum_unset: bool,
}

impl Aggregate {
    /// Whether segment `s` of `frame` (of this flow) joins an aggregate
    /// of at most `max` bytes.
    fn accepts(&self, s: &Segment, frame: &[u8], max: usize) -> bool {
        // `frame` holds the headers at least.
        let (a, f) = (&self.frame, frame);
        let (ah, sh) = (self.first.l4, s.l4);
        let a_doff = usize::from(a[ah + 12] >> 4) * 4;
        let len = s.end - s.payload(f);
        let ip_same = if s.ipv6 {
            // Traffic class (not the flow label), hop limit.
            let tc = |h: &[u8]| u16::from_be_bytes([h[14], h[15]]) & 0x0ff0;
            tc(a) == tc(f) && a[14 + 7] == f[14 + 7]
        } else {
            let id_ok = if self.segs == 1 {
                s.ip_id == self.first.ip_id.wrapping_add(1) || s.ip_id == self.first.ip_id
            } else if self.fixed_id {
                s.ip_id == self.first.ip_id
            } else {
                s.ip_id == self.first.ip_id.wrapping_add(self.segs)
            };
            a[15] == f[15] && a[22] == f[22] && self.first.df == s.df && id_ok
        };
        s.seq == self.next_seq
            && len <= usize::from(self.mss)
            && (s.tcp_flags ^ self.first.tcp_flags) & !(TCP_FIN | TCP_PSH) == 0
            && a[ah + 8..ah + 12] == f[sh + 8..sh + 12]
            && a[ah + 12] >> 4 == f[sh + 12] >> 4
            && a[ah + 20..ah + a_doff] == f[sh + 20..sh + a_doff]
            && ip_same
            && self.segs < GRO_MAX_SEGS
            && self.frame.len() + len <= max
    }

    /// Adds segment `s` with its `payload`. Returns whether the aggregate
    /// is closed now (a short segment, PSH or FIN, or no room for another
    /// within `max` bytes).
    fn join(&mut self, s: &Segment, payload: &[u8], max: usize) -> bool {
        if self.segs == 1 {
            self.fixed_id = s.ip_id == self.first.ip_id;
        }
        self.frame.extend_from_slice(payload);
        self.segs += 1;
        self.next_seq = self.next_seq.wrapping_add(payload.len() as u32);
        self.push_fin |= s.tcp_flags & (TCP_PSH | TCP_FIN);
        payload.len() < usize::from(self.mss)
            || s.tcp_flags & (TCP_PSH | TCP_FIN) != 0
            || self.segs == GRO_MAX_SEGS
            || self.frame.len() + usize::from(self.mss) > max
    }

    /// Writes the headers of the whole and hands the frame out.
    fn release(&mut self, out: &mut impl FnMut(Release<'_>)) {
        if self.segs > 1 {
            let (l3, l4) = (self.first.l3, self.first.l4);
            let f = &mut self.frame;
            if self.first.ipv6 {
                // CAST: at most GRO_MAX_FRAME bytes.
                let payload = (f.len() - l3 - 40) as u16;
                f[l3 + 4..l3 + 6].copy_from_slice(&payload.to_be_bytes());
            } else {
                // CAST: at most GRO_MAX_FRAME bytes.
                let total = (f.len() - l3) as u16;
                f[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
                f[l3 + 10..l3 + 12].fill(0);
                let sum = ipv4_header_checksum(&f[l3..l3 + 20]);
                f[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
            }
            f[l4 + 13] |= self.push_fin;
        } else if self.csum_unset {
            let ethertype = if self.first.ipv6 {
                ETH_P_IPV6
            } else {
                ETH_P_IPV4
            };
            let end = self.frame.len();
            set_tcp_checksum(
                &mut self.frame,
                ethertype,
                self.first.l3,
                self.first.l4,
                end,
            );
        }
        out(Release {
            frame: &self.frame,
            flags: self.flags,
            hash: self.hash,
            segs: self.segs,
            mss: if self.segs > 1 { self.mss } else { 0 },
        });
    }
}

/// A segment as its headers and payload.
struct Parts<'a> {
    headers: &'a [u8],
    payload: &'a [u8],
    /// Its TCP checksum is not computed.
    csum_unset: bool,
}

/// What [`Coalescer::offer`] did with a frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer {
    /// Held in an aggregate, to leave later.
    Held,
    /// Not for coalescing: the caller delivers it now (after what the
    /// coalescer released on the way).
    Pass,
}

/// The coalescing state of one queue pair.
#[derive(Debug, Default)]
pub struct Coalescer {
    /// Open aggregates by the order they were opened in.
    open: BTreeMap<u64, Aggregate>,
    /// Where each open flow's aggregate is in `open`.
    flows: HashMap<FlowKey, u64>,
    next_id: u64,
    /// When the last frame arrived.
    last_frame: Option<Instant>,
    /// Buffers of released aggregates, for the next ones.
    spare: Vec<Vec<u8>>,
}

impl Coalescer {
    /// Whether aggregates are open.
    pub fn holding(&self) -> bool {
        !self.open.is_empty()
    }

    /// A frame for the queue pair with its receive `flags` and `hash`,
    /// arrived at `now`, to coalesce into frames of at most `max` bytes
    /// (what the RX buffers a coalesced frame may fill hold, at most
    /// [`GRO_MAX_FRAME`]). Aggregates that must leave before it are
    /// handed to `out` first.
    pub fn offer(
        &mut self,
        frame: &[u8],
        flags: u16,
        hash: u32,
        now: Instant,
        max: usize,
        out: &mut impl FnMut(Release<'_>),
    ) -> Offer {
        let Some(s) = Segment::parse(frame, frame.len()) else {
            self.last_frame = Some(now);
            return Offer::Pass;
        };
        let at = s.payload(frame);
        let parts = Parts {
            headers: &frame[..at],
            payload: &frame[at..s.end],
            csum_unset: false,
        };
        self.offer_segment(s, parts, flags, hash, now, max, out)
    }

    /// As [`Self::offer`], a segment of a train given as its `headers`
    /// (its TCP checksum not computed) and its `payload`. A segment that
    /// comes back as [`Offer::Pass`] is the caller's to make whole.
    #[allow(clippy::too_many_arguments)]
    pub fn offer_parts(
        &mut self,
        headers: &[u8],
        payload: &[u8],
        flags: u16,
        hash: u32,
        now: Instant,
        max: usize,
        out: &mut impl FnMut(Release<'_>),
    ) -> Offer {
        let s = Segment::parse(headers, headers.len() + payload.len())
            .filter(|s| s.payload(headers) == headers.len());
        let Some(s) = s else {
            self.last_frame = Some(now);
            return Offer::Pass;
        };
        let parts = Parts {
            headers,
            payload,
            csum_unset: true,
        };
        self.offer_segment(s, parts, flags, hash, now, max, out)
    }

    #[allow(clippy::too_many_arguments)]
    fn offer_segment(
        &mut self,
        s: Segment,
        parts: Parts<'_>,
        flags: u16,
        hash: u32,
        now: Instant,
        max: usize,
        out: &mut impl FnMut(Release<'_>),
    ) -> Offer {
        self.last_frame = Some(now);
        let max = max.min(GRO_MAX_FRAME as usize);
        let Parts {
            headers,
            payload,
            csum_unset,
        } = parts;
        let holdable = s.holdable(headers, flags);
        let key = s.key(headers);
        if let Some(&id) = self.flows.get(&key) {
            let a = self.open.get_mut(&id).expect("flows index open aggregates");
            if holdable && a.accepts(&s, headers, max) {
                if a.join(&s, payload, max) {
                    self.release(id, out);
                }
                return Offer::Held;
            }
            log::trace!(
                "gro: segment seq {} (flags {:#x}) ends its flow's aggregate (next seq {}, {} segments)",
                s.seq,
                s.tcp_flags,
                a.next_seq,
                a.segs
            );
            self.release(id, out);
        }
        if !holdable || s.tcp_flags & (TCP_PSH | TCP_FIN) != 0 {
            return Offer::Pass;
        }
        if self.open.len() == MAX_FLOWS {
            if let Some(&oldest) = self.open.keys().next() {
                self.release(oldest, out);
            }
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(headers);
        buf.extend_from_slice(payload);
        let id = self.next_id;
        self.next_id += 1;
        self.flows.insert(key, id);
        self.open.insert(
            id,
            Aggregate {
                frame: buf,
                first: s,
                flags,
                hash,
                segs: 1,
                // CAST: a frame's payload is below 64 KiB.
                mss: payload.len() as u16,
                next_seq: s.seq.wrapping_add(payload.len() as u32),
                push_fin: 0,
                fixed_id: false,
                opened: now,
                csum_unset,
            },
        );
        Offer::Held
    }

    /// When the oldest aggregate is due to leave, for hold time `hold`.
    pub fn deadline(&self, hold: Duration) -> Option<Instant> {
        let oldest = self.open.values().next()?;
        let idle = self
            .last_frame
            .map_or(oldest.opened, |t| t.max(oldest.opened))
            + hold;
        Some(idle.min(oldest.opened + hold * MAX_AGE_HOLDS))
    }

    /// Releases the aggregates due at `now` for hold time `hold`: all of
    /// them once the queue has been idle that long, else those that have
    /// reached their age limit.
    pub fn flush_due(&mut self, now: Instant, hold: Duration, out: &mut impl FnMut(Release<'_>)) {
        while let Some(due) = self.deadline(hold) {
            if due > now {
                break;
            }
            log::trace!(
                "gro: {} aggregates idle or old, the oldest leaves",
                self.open.len()
            );
            if let Some(&oldest) = self.open.keys().next() {
                self.release(oldest, out);
            }
        }
    }

    /// Releases every open aggregate, oldest first.
    pub fn flush(&mut self, out: &mut impl FnMut(Release<'_>)) {
        while let Some(&oldest) = self.open.keys().next() {
            self.release(oldest, out);
        }
    }

    fn release(&mut self, id: u64, out: &mut impl FnMut(Release<'_>)) {
        if let Some(mut a) = self.open.remove(&id) {
            self.flows.remove(&a.first.key(&a.frame));
            a.release(out);
            self.spare.push(a.frame);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const TCP_CWR: u8 = 0x80;
    use crate::offload::l4_checksum_ok;

    /// An IPv4 TCP frame of flow `port` with `payload` bytes at `seq`,
    /// IP ID `id`, TCP `flags` (ACK added), and a correct checksum.
    pub(crate) fn tcp4(port: u16, seq: u32, payload: usize, id: u16, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20 + payload];
        f[12..14].copy_from_slice(&ETH_P_IPV4.to_be_bytes());
        let total = (20 + 20 + payload) as u16;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[18..20].copy_from_slice(&id.to_be_bytes());
        f[20] = 0x40;
        f[22] = 64;
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        let sum = ipv4_header_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&sum.to_be_bytes());
        f[34..36].copy_from_slice(&port.to_be_bytes());
        f[36..38].copy_from_slice(&8000u16.to_be_bytes());
        f[38..42].copy_from_slice(&seq.to_be_bytes());
        f[46] = 5 << 4;
        f[47] = 0x10 | flags;
        for (i, b) in f[54..].iter_mut().enumerate() {
            *b = (seq as usize + i) as u8;
        }
        crate::offload::fill_tcp_checksum(&mut f);
        assert!(l4_checksum_ok(&f));
        f
    }

    /// Offers `frames` (checksums verified) and flushes; returns what
    /// left, as (payload bytes, segs), with `Pass` frames as segs 0.
    fn run(frames: &[Vec<u8>]) -> Vec<(usize, u16)> {
        let mut c = Coalescer::default();
        let mut got = Vec::new();
        for f in frames {
            let mut out = |r: Release<'_>| got.push((r.frame.len() - 54, r.segs));
            if c.offer(f, Cqe::CSUM_OK, 0, Instant::now(), usize::MAX, &mut out) == Offer::Pass {
                got.push((f.len() - 54, 0));
            }
        }
        c.flush(&mut |r: Release<'_>| got.push((r.frame.len() - 54, r.segs)));
        got
    }

    #[test]
    fn a_train_becomes_one_frame_with_the_lengths_of_the_whole() {
        let frames: Vec<_> = (0..4)
            .map(|i| tcp4(1, 1000 + i * 100, 100, 7 + i as u16, 0))
            .collect();
        let mut c = Coalescer::default();
        for f in &frames {
            assert_eq!(
                c.offer(
                    f,
                    Cqe::CSUM_OK,
                    9,
                    Instant::now(),
                    usize::MAX,
                    &mut |_| panic!("released early")
                ),
                Offer::Held
            );
        }
        let mut got = None;
        c.flush(&mut |r: Release<'_>| got = Some((r.frame.to_vec(), r.segs, r.mss, r.hash)));
        let (f, segs, mss, hash) = got.expect("released");
        assert_eq!((segs, mss, hash), (4, 100, 9));
        assert_eq!(u16::from_be_bytes([f[16], f[17]]), 440);
        assert_eq!(ipv4_header_checksum(&f[14..34]), 0);
        let payload: Vec<u8> = frames.iter().flat_map(|f| f[54..].to_vec()).collect();
        assert_eq!(f[54..], payload[..]);
    }

    #[test]
    fn the_rules_of_linux_gro() {
        let seg = |i: u32, len, flags| tcp4(1, i * 100, len, i as u16, flags);
        // A shorter segment joins and closes; a longer one does not join.
        assert_eq!(
            run(&[seg(0, 100, 0), seg(1, 50, 0), seg(2, 100, 0)]),
            [(150, 2), (100, 1)]
        );
        assert_eq!(
            run(&[seg(0, 50, 0), tcp4(1, 50, 100, 1, 0)]),
            [(50, 1), (100, 1)]
        );
        // PSH joins and closes; a PSH first segment passes.
        assert_eq!(
            run(&[seg(0, 100, 0), seg(1, 100, TCP_PSH), seg(2, 100, 0)]),
            [(200, 2), (100, 1)]
        );
        assert_eq!(run(&[seg(0, 100, TCP_PSH)]), [(100, 0)]);
        // SYN, RST, URG and CWR never join; CWR starts an aggregate of
        // its own, the others pass. A pure ACK passes behind the
        // aggregate it ends.
        for flag in [TCP_SYN, TCP_RST, TCP_URG, TCP_CWR] {
            assert_eq!(
                run(&[seg(0, 100, 0), seg(1, 100, flag)])[0],
                (100, 1),
                "flag {flag:#x}"
            );
        }
        assert_eq!(
            run(&[
                seg(0, 100, 0),
                seg(1, 100, TCP_CWR),
                seg(2, 100, TCP_CWR),
                seg(3, 100, 0)
            ]),
            [(100, 1), (200, 2), (100, 1)]
        );
        assert_eq!(run(&[seg(0, 100, 0), seg(1, 0, 0)]), [(100, 1), (0, 0)]);
        // A gap in the sequence, a changed TTL, an ID that does not count
        // up: no join.
        assert_eq!(run(&[seg(0, 100, 0), seg(2, 100, 0)]), [(100, 1), (100, 1)]);
        let mut ttl = seg(1, 100, 0);
        ttl[22] = 63;
        ttl[24..26].fill(0);
        let sum = ipv4_header_checksum(&ttl[14..34]);
        ttl[24..26].copy_from_slice(&sum.to_be_bytes());
        crate::offload::fill_tcp_checksum(&mut ttl);
        assert_eq!(run(&[seg(0, 100, 0), ttl]), [(100, 1), (100, 1)]);
        assert_eq!(
            run(&[seg(0, 100, 0), tcp4(1, 100, 100, 5, 0)]),
            [(100, 1), (100, 1)]
        );
        // No larger than the buffers hold: the third segment does not fit.
        let mut c = Coalescer::default();
        let mut got = Vec::new();
        for i in 0..3 {
            let mut out = |r: Release<'_>| got.push(r.segs);
            c.offer(
                &seg(i, 100, 0),
                Cqe::CSUM_OK,
                0,
                Instant::now(),
                54 + 250,
                &mut out,
            );
        }
        c.flush(&mut |r: Release<'_>| got.push(r.segs));
        assert_eq!(got, [2, 1]);
        // IDs may stay the same, with DF or without, but not change mode.
        assert_eq!(
            run(&[tcp4(1, 0, 100, 3, 0), tcp4(1, 100, 100, 3, 0)]),
            [(200, 2)]
        );
        let mut no_df = [
            tcp4(1, 0, 100, 3, 0),
            tcp4(1, 100, 100, 3, 0),
            tcp4(1, 200, 100, 4, 0),
        ];
        for f in &mut no_df {
            f[20] = 0;
            f[24..26].fill(0);
            let sum = ipv4_header_checksum(&f[14..34]);
            f[24..26].copy_from_slice(&sum.to_be_bytes());
        }
        assert_eq!(run(&no_df), [(200, 2), (100, 1)]);
    }

    #[test]
    fn aggregates_leave_when_the_queue_is_idle_or_too_old() {
        let mut c = Coalescer::default();
        let t0 = Instant::now();
        let hold = Duration::from_micros(100);
        c.offer(
            &tcp4(1, 0, 100, 0, 0),
            Cqe::CSUM_OK,
            0,
            t0,
            usize::MAX,
            &mut |_| (),
        );
        c.offer(
            &tcp4(2, 0, 100, 0, 0),
            Cqe::CSUM_OK,
            0,
            t0 + hold / 2,
            usize::MAX,
            &mut |_| (),
        );
        // Idle for the hold time after the last frame: both leave.
        assert_eq!(c.deadline(hold), Some(t0 + hold + hold / 2));
        let mut n = 0;
        c.flush_due(t0 + hold, hold, &mut |_| n += 1);
        assert_eq!(n, 0, "the burst goes on");
        c.flush_due(t0 + hold + hold / 2, hold, &mut |_| n += 1);
        assert_eq!((n, c.holding()), (2, false));
        // Frames that keep coming do not hold one past its age limit.
        let mut n = 0;
        c.offer(
            &tcp4(1, 100, 100, 1, 0),
            Cqe::CSUM_OK,
            0,
            t0,
            usize::MAX,
            &mut |_| (),
        );
        let old = t0 + hold * MAX_AGE_HOLDS;
        c.offer(
            &tcp4(3, 0, 100, 0, 0),
            Cqe::CSUM_OK,
            0,
            old,
            usize::MAX,
            &mut |_| n += 1,
        );
        c.flush_due(old, hold, &mut |_| n += 1);
        assert_eq!((n, c.open.len()), (1, 1));
    }

    #[test]
    fn unverified_checksums_are_not_held() {
        let mut c = Coalescer::default();
        let f = tcp4(1, 0, 100, 0, 0);
        assert_eq!(
            c.offer(&f, 0, 0, Instant::now(), usize::MAX, &mut |_| ()),
            Offer::Pass
        );
        assert_eq!(
            c.offer(
                &f,
                Cqe::CSUM_OK | Cqe::FCS_ERR,
                0,
                Instant::now(),
                usize::MAX,
                &mut |_| ()
            ),
            Offer::Pass
        );
        assert!(!c.holding());
    }

    #[test]
    fn flows_keep_their_order_and_the_oldest_leaves_for_a_new_one() {
        // Two packets per flow, first packets then second ones (gro.c's
        // capacity test): held flows leave at their second packet, the
        // oldest first when the table is full.
        let n = MAX_FLOWS as u16 + 4;
        let mut frames: Vec<_> = (0..n).map(|p| tcp4(p, 0, 100, 0, 0)).collect();
        frames.extend((0..n).map(|p| tcp4(p, 100, 100, 1, TCP_PSH)));
        let mut c = Coalescer::default();
        let mut order = Vec::new();
        for f in &frames {
            let port = u16::from_be_bytes([f[34], f[35]]);
            let mut out = |r: Release<'_>| {
                order.push((u16::from_be_bytes([r.frame[34], r.frame[35]]), r.segs))
            };
            if c.offer(f, Cqe::CSUM_OK, 0, Instant::now(), usize::MAX, &mut out) == Offer::Pass {
                order.push((port, 0));
            }
        }
        let mut want: Vec<_> = (0..4).map(|p| (p, 1)).collect();
        want.extend((0..4).map(|p| (p, 0)));
        want.extend((4..n).map(|p| (p, 2)));
        assert_eq!(order, want);
    }

    /// What leaves a coalescer: (frame, segs, mss), a passed frame as
    /// segs 0.
    type Left = Vec<(Vec<u8>, u16, u16)>;

    #[test]
    fn a_train_coalesces_as_its_segments_do() {
        use crate::offload::{tests::tcp_frame, train_shape};
        use crate::train::TcpTrain;
        for v6 in [false, true] {
            for (payload, flags) in [(3900, 0x10), (3900, 0x18), (4950, 0x18), (60, 0x10)] {
                let payload: Vec<u8> = (0..payload).map(|i: u32| (i * 31) as u8).collect();
                let (tso, desc) = tcp_frame(v6, &payload, flags);
                let train = TcpTrain::new(&tso, train_shape(&desc)).unwrap();
                let (mut by_frames, mut by_parts) = (Coalescer::default(), Coalescer::default());
                let (mut a, mut b): (Left, Left) = (Vec::new(), Vec::new());
                let (now, max) = (Instant::now(), 2000);
                let mut headers = Vec::new();
                for i in 0..train.count() {
                    let seg = train.segment(i);
                    let mut out = |r: Release<'_>| a.push((r.frame.to_vec(), r.segs, r.mss));
                    if by_frames.offer(&seg, Cqe::CSUM_OK, 0, now, max, &mut out) == Offer::Pass {
                        a.push((seg.clone(), 0, 0));
                    }
                    train.segment_header(i, &mut headers);
                    let mut out = |r: Release<'_>| b.push((r.frame.to_vec(), r.segs, r.mss));
                    let offer = by_parts.offer_parts(
                        &headers,
                        train.payload(i),
                        Cqe::CSUM_OK,
                        0,
                        now,
                        max,
                        &mut out,
                    );
                    if offer == Offer::Pass {
                        b.push((seg, 0, 0));
                    }
                }
                by_frames.flush(&mut |r: Release<'_>| a.push((r.frame.to_vec(), r.segs, r.mss)));
                by_parts.flush(&mut |r: Release<'_>| b.push((r.frame.to_vec(), r.segs, r.mss)));
                assert!(a.len() > 1 || payload.len() < 100, "several frames leave");
                // A coalesced frame's TCP checksum is the host's to compute;
                // one segment leaving alone carries its own.
                let l4 = if v6 { 54 } else { 34 };
                for left in [&mut a, &mut b] {
                    for (f, segs, _) in left.iter_mut() {
                        if *segs > 1 {
                            f[l4 + 16..l4 + 18].fill(0);
                        } else {
                            assert!(l4_checksum_ok(f), "a lone segment verifies");
                        }
                    }
                }
                assert_eq!(a, b, "v6 {v6}, {} bytes, flags {flags:#x}", payload.len());
            }
        }
    }
}
