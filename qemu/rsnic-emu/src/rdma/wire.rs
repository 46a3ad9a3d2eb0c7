// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 on the wire: the InfiniBand transport headers the engine sends
//! and accepts inside UDP (port 4791), and the invariant CRC (ICRC) that
//! ends every packet.
//!
//! Layouts are those of the InfiniBand Architecture Specification, volume
//! 1, chapter 9 (transport headers) and annex A17 (RoCEv2); all fields are
//! big-endian.

use crate::frame::{ETH_P_IPV4, ETH_P_IPV6};

/// Length of the Base Transport Header.
pub const BTH_LEN: usize = 12;
/// Length of the RDMA Extended Transport Header.
pub const RETH_LEN: usize = 16;
/// Length of the ACK Extended Transport Header.
pub const AETH_LEN: usize = 4;
/// Length of the Datagram Extended Transport Header.
pub const DETH_LEN: usize = 8;
/// Length of the Immediate Data header.
pub const IMMDT_LEN: usize = 4;
/// Length of the Invalidate Extended Transport Header.
pub const IETH_LEN: usize = 4;
/// Length of the Atomic Extended Transport Header.
pub const ATOMIC_ETH_LEN: usize = 28;
/// Length of the Atomic Acknowledge Extended Transport Header.
pub const ATOMIC_ACK_ETH_LEN: usize = 8;
/// Length of the FLUSH Extended Transport Header.
pub const FETH_LEN: usize = 4;
/// Payload of an ATOMIC WRITE: exactly 8 bytes (IBA oA19-28).
pub const ATOMIC_WRITE_LEN: usize = 8;
/// Length of the invariant CRC.
pub const ICRC_LEN: usize = 4;
/// XRC Extended Transport Header: 8 reserved bits, the XRC SRQ number.
pub const XRCETH_LEN: usize = 4;
/// PSNs are 24 bits.
pub const PSN_MASK: u32 = 0x00ff_ffff;
/// QP numbers are 24 bits.
pub const QPN_MASK: u32 = 0x00ff_ffff;

/// Transport service of an opcode (its top three bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// Reliable connection.
    Rc,
    /// Unreliable connection.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// Extended reliable connection.
    Xrc,
    /// Congestion notification (RoCEv2 CNP).
    Cnp,
}

/// The opcodes the engine speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Opcode {
    /// RC SEND, first packet of several.
    RcSendFirst = 0x00,
    /// RC SEND, middle packet.
    RcSendMiddle = 0x01,
    /// RC SEND, last packet.
    RcSendLast = 0x02,
    /// RC SEND, last packet, with immediate data.
    RcSendLastImm = 0x03,
    /// RC SEND in one packet.
    RcSendOnly = 0x04,
    /// RC SEND in one packet, with immediate data.
    RcSendOnlyImm = 0x05,
    /// RC RDMA WRITE, first packet.
    RcWriteFirst = 0x06,
    /// RC RDMA WRITE, middle packet.
    RcWriteMiddle = 0x07,
    /// RC RDMA WRITE, last packet.
    RcWriteLast = 0x08,
    /// RC RDMA WRITE, last packet, with immediate data.
    RcWriteLastImm = 0x09,
    /// RC RDMA WRITE in one packet.
    RcWriteOnly = 0x0a,
    /// RC RDMA WRITE in one packet, with immediate data.
    RcWriteOnlyImm = 0x0b,
    /// RC RDMA READ request.
    RcReadRequest = 0x0c,
    /// RC RDMA READ response, first packet.
    RcReadResponseFirst = 0x0d,
    /// RC RDMA READ response, middle packet.
    RcReadResponseMiddle = 0x0e,
    /// RC RDMA READ response, last packet.
    RcReadResponseLast = 0x0f,
    /// RC RDMA READ response in one packet.
    RcReadResponseOnly = 0x10,
    /// RC acknowledge (ACK, NAK, RNR NAK).
    RcAck = 0x11,
    /// The response to an atomic: AETH and the original value.
    RcAtomicAck = 0x12,
    /// Atomic compare-and-swap request.
    RcCompareSwap = 0x13,
    /// Atomic fetch-and-add request.
    RcFetchAdd = 0x14,
    /// RC SEND, last packet, invalidating an rkey at the responder.
    RcSendLastInv = 0x16,
    /// RC SEND in one packet, invalidating an rkey at the responder.
    RcSendOnlyInv = 0x17,
    /// RC RDMA FLUSH (IBA 1.5): FETH and RETH, no payload; answered by
    /// an empty READ response.
    RcFlush = 0x1c,
    /// RC RDMA ATOMIC WRITE (IBA 1.5): RETH and 8 bytes of payload;
    /// answered by an empty READ response.
    RcAtomicWrite = 0x1d,
    /// UC SEND, first packet of several.
    UcSendFirst = 0x20,
    /// UC SEND, middle packet.
    UcSendMiddle = 0x21,
    /// UC SEND, last packet.
    UcSendLast = 0x22,
    /// UC SEND, last packet, with immediate data.
    UcSendLastImm = 0x23,
    /// UC SEND in one packet.
    UcSendOnly = 0x24,
    /// UC SEND in one packet, with immediate data.
    UcSendOnlyImm = 0x25,
    /// UC RDMA WRITE, first packet.
    UcWriteFirst = 0x26,
    /// UC RDMA WRITE, middle packet.
    UcWriteMiddle = 0x27,
    /// UC RDMA WRITE, last packet.
    UcWriteLast = 0x28,
    /// UC RDMA WRITE, last packet, with immediate data.
    UcWriteLastImm = 0x29,
    /// UC RDMA WRITE in one packet.
    UcWriteOnly = 0x2a,
    /// UC RDMA WRITE in one packet, with immediate data.
    UcWriteOnlyImm = 0x2b,
    /// UD SEND in one packet.
    UdSendOnly = 0x64,
    /// UD SEND in one packet, with immediate data.
    UdSendOnlyImm = 0x65,
    /// RoCEv2 congestion notification packet.
    Cnp = 0x81,
    /// XRC SEND, first packet of several.
    XrcSendFirst = 0xa0,
    /// XRC SEND, middle packet.
    XrcSendMiddle = 0xa1,
    /// XRC SEND, last packet.
    XrcSendLast = 0xa2,
    /// XRC SEND, last packet, with immediate data.
    XrcSendLastImm = 0xa3,
    /// XRC SEND in one packet.
    XrcSendOnly = 0xa4,
    /// XRC SEND in one packet, with immediate data.
    XrcSendOnlyImm = 0xa5,
    /// XRC RDMA WRITE, first packet.
    XrcWriteFirst = 0xa6,
    /// XRC RDMA WRITE, middle packet.
    XrcWriteMiddle = 0xa7,
    /// XRC RDMA WRITE, last packet.
    XrcWriteLast = 0xa8,
    /// XRC RDMA WRITE, last packet, with immediate data.
    XrcWriteLastImm = 0xa9,
    /// XRC RDMA WRITE in one packet.
    XrcWriteOnly = 0xaa,
    /// XRC RDMA WRITE in one packet, with immediate data.
    XrcWriteOnlyImm = 0xab,
    /// XRC RDMA READ request.
    XrcReadRequest = 0xac,
    /// XRC RDMA READ response, first packet.
    XrcReadResponseFirst = 0xad,
    /// XRC RDMA READ response, middle packet.
    XrcReadResponseMiddle = 0xae,
    /// XRC RDMA READ response, last packet.
    XrcReadResponseLast = 0xaf,
    /// XRC RDMA READ response in one packet.
    XrcReadResponseOnly = 0xb0,
    /// XRC acknowledge.
    XrcAck = 0xb1,
    /// XRC atomic acknowledge.
    XrcAtomicAck = 0xb2,
    /// XRC atomic compare-and-swap request.
    XrcCompareSwap = 0xb3,
    /// XRC atomic fetch-and-add request.
    XrcFetchAdd = 0xb4,
    /// XRC SEND, last packet, invalidating an rkey.
    XrcSendLastInv = 0xb6,
    /// XRC SEND in one packet, invalidating an rkey.
    XrcSendOnlyInv = 0xb7,
}

impl Opcode {
    /// The opcode of a BTH byte; `None` for those the engine does not speak.
    pub fn from_u8(v: u8) -> Option<Self> {
        use Opcode::*;
        Some(match v {
            0x00 => RcSendFirst,
            0x01 => RcSendMiddle,
            0x02 => RcSendLast,
            0x03 => RcSendLastImm,
            0x04 => RcSendOnly,
            0x05 => RcSendOnlyImm,
            0x06 => RcWriteFirst,
            0x07 => RcWriteMiddle,
            0x08 => RcWriteLast,
            0x09 => RcWriteLastImm,
            0x0a => RcWriteOnly,
            0x0b => RcWriteOnlyImm,
            0x0c => RcReadRequest,
            0x0d => RcReadResponseFirst,
            0x0e => RcReadResponseMiddle,
            0x0f => RcReadResponseLast,
            0x10 => RcReadResponseOnly,
            0x11 => RcAck,
            0x12 => RcAtomicAck,
            0x13 => RcCompareSwap,
            0x14 => RcFetchAdd,
            0x16 => RcSendLastInv,
            0x17 => RcSendOnlyInv,
            0x1c => RcFlush,
            0x1d => RcAtomicWrite,
            0x20 => UcSendFirst,
            0x21 => UcSendMiddle,
            0x22 => UcSendLast,
            0x23 => UcSendLastImm,
            0x24 => UcSendOnly,
            0x25 => UcSendOnlyImm,
            0x26 => UcWriteFirst,
            0x27 => UcWriteMiddle,
            0x28 => UcWriteLast,
            0x29 => UcWriteLastImm,
            0x2a => UcWriteOnly,
            0x2b => UcWriteOnlyImm,
            0x64 => UdSendOnly,
            0x65 => UdSendOnlyImm,
            0x81 => Cnp,
            0xa0 => XrcSendFirst,
            0xa1 => XrcSendMiddle,
            0xa2 => XrcSendLast,
            0xa3 => XrcSendLastImm,
            0xa4 => XrcSendOnly,
            0xa5 => XrcSendOnlyImm,
            0xa6 => XrcWriteFirst,
            0xa7 => XrcWriteMiddle,
            0xa8 => XrcWriteLast,
            0xa9 => XrcWriteLastImm,
            0xaa => XrcWriteOnly,
            0xab => XrcWriteOnlyImm,
            0xac => XrcReadRequest,
            0xad => XrcReadResponseFirst,
            0xae => XrcReadResponseMiddle,
            0xaf => XrcReadResponseLast,
            0xb0 => XrcReadResponseOnly,
            0xb1 => XrcAck,
            0xb2 => XrcAtomicAck,
            0xb3 => XrcCompareSwap,
            0xb4 => XrcFetchAdd,
            0xb6 => XrcSendLastInv,
            0xb7 => XrcSendOnlyInv,
            _ => return None,
        })
    }

    /// The transport service.
    pub fn service(self) -> Service {
        match self as u8 >> 5 {
            0 => Service::Rc,
            1 => Service::Uc,
            3 => Service::Ud,
            5 => Service::Xrc,
            _ => Service::Cnp,
        }
    }

    /// A UC or XRC opcode's RC twin (the same operation and headers but
    /// XRC's XRCETH; the responder and requester share their code),
    /// others as they are.
    pub fn as_rc(self) -> Self {
        if matches!(self.service(), Service::Uc | Service::Xrc) {
            // Every UC opcode is its RC twin's value plus 0x20, every XRC
            // one plus 0xa0.
            Self::from_u8(self as u8 & 0x1f).unwrap_or(self)
        } else {
            self
        }
    }

    /// An RC SEND or WRITE opcode's UC twin; `None` for the others (UC
    /// has no READ, atomic, response or invalidating SEND).
    pub fn to_uc(self) -> Option<Self> {
        match self as u8 {
            0x00..=0x0b => Self::from_u8(self as u8 | 0x20),
            _ => None,
        }
    }

    /// An RC opcode's XRC twin; `None` for FLUSH and ATOMIC WRITE (XRC
    /// has neither) and the opcodes of other services.
    pub fn to_xrc(self) -> Option<Self> {
        match self as u8 {
            0x00..=0x17 => Self::from_u8(self as u8 | 0xa0),
            _ => None,
        }
    }

    /// A response (READ response, ACK, atomic ACK) of RC or XRC.
    pub fn is_response(self) -> bool {
        matches!(self.as_rc() as u8, 0x0d..=0x12)
    }

    /// A request the responder answers with a response of its own (READ
    /// responses, an atomic ACK, the empty READ response of a FLUSH or
    /// ATOMIC WRITE), not with an ACK: it takes a responder resource.
    pub fn answered_by_response(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            RcReadRequest | RcCompareSwap | RcFetchAdd | RcFlush | RcAtomicWrite
        )
    }

    /// The extension headers that follow the BTH, in wire order.
    pub fn layout(self) -> Layout {
        use Opcode::*;
        let mut l = Layout::default();
        match self.as_rc() {
            RcWriteFirst | RcWriteOnly | RcReadRequest | RcAtomicWrite => l.reth = true,
            RcFlush => (l.feth, l.reth) = (true, true),
            RcWriteOnlyImm => (l.reth, l.immdt) = (true, true),
            RcSendLastImm | RcSendOnlyImm | RcWriteLastImm => l.immdt = true,
            RcSendLastInv | RcSendOnlyInv => l.ieth = true,
            RcReadResponseFirst | RcReadResponseLast | RcReadResponseOnly | RcAck => l.aeth = true,
            RcAtomicAck => (l.aeth, l.atomic_ack) = (true, true),
            RcCompareSwap | RcFetchAdd => l.atomic = true,
            UdSendOnly => l.deth = true,
            UdSendOnlyImm => (l.deth, l.immdt) = (true, true),
            RcSendFirst | RcSendMiddle | RcSendLast | RcSendOnly | RcWriteMiddle | RcWriteLast
            | RcReadResponseMiddle | Cnp => {}
            // as_rc() gave their RC twins.
            UcSendFirst | UcSendMiddle | UcSendLast | UcSendLastImm | UcSendOnly
            | UcSendOnlyImm | UcWriteFirst | UcWriteMiddle | UcWriteLast | UcWriteLastImm
            | UcWriteOnly | UcWriteOnlyImm => unreachable!("as_rc maps every UC opcode"),
            XrcSendFirst
            | XrcSendMiddle
            | XrcSendLast
            | XrcSendLastImm
            | XrcSendOnly
            | XrcSendOnlyImm
            | XrcWriteFirst
            | XrcWriteMiddle
            | XrcWriteLast
            | XrcWriteLastImm
            | XrcWriteOnly
            | XrcWriteOnlyImm
            | XrcReadRequest
            | XrcReadResponseFirst
            | XrcReadResponseMiddle
            | XrcReadResponseLast
            | XrcReadResponseOnly
            | XrcAck
            | XrcAtomicAck
            | XrcCompareSwap
            | XrcFetchAdd
            | XrcSendLastInv
            | XrcSendOnlyInv => {
                unreachable!("as_rc maps every XRC opcode")
            }
        }
        // Every XRC request names its SRQ; responses are RC-shaped.
        l.xrceth = self.service() == Service::Xrc && !self.is_response();
        l
    }
}

/// Which extension headers an opcode carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// XRC Extended Transport Header (first after the BTH).
    pub xrceth: bool,
    /// FLUSH Extended Transport Header (before the RETH).
    pub feth: bool,
    /// RDMA Extended Transport Header.
    pub reth: bool,
    /// ACK Extended Transport Header.
    pub aeth: bool,
    /// Datagram Extended Transport Header.
    pub deth: bool,
    /// Immediate data.
    pub immdt: bool,
    /// Invalidate Extended Transport Header.
    pub ieth: bool,
    /// Atomic Extended Transport Header.
    pub atomic: bool,
    /// Atomic Acknowledge Extended Transport Header.
    pub atomic_ack: bool,
}

impl Layout {
    /// Bytes of extension headers.
    pub fn len(&self) -> usize {
        let n = |on: bool, len: usize| if on { len } else { 0 };
        n(self.xrceth, XRCETH_LEN)
            + n(self.deth, DETH_LEN)
            + n(self.feth, FETH_LEN)
            + n(self.reth, RETH_LEN)
            + n(self.aeth, AETH_LEN)
            + n(self.immdt, IMMDT_LEN)
            + n(self.ieth, IETH_LEN)
            + n(self.atomic, ATOMIC_ETH_LEN)
            + n(self.atomic_ack, ATOMIC_ACK_ETH_LEN)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The Base Transport Header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bth {
    /// Opcode byte.
    pub opcode: u8,
    /// Solicited event.
    pub solicited: bool,
    /// Migration state.
    pub migreq: bool,
    /// Pad bytes (0..=3) after the payload, making it a multiple of 4.
    pub pad: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward ECN (congestion seen on the way here).
    pub fecn: bool,
    /// Backward ECN.
    pub becn: bool,
    /// Destination QP number (24 bits).
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl Bth {
    /// Decodes the first [`BTH_LEN`] bytes; `None` if shorter or the
    /// transport header version is not 0.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let b: &[u8; BTH_LEN] = b.get(..BTH_LEN)?.try_into().ok()?;
        if b[1] & 0x0f != 0 {
            return None;
        }
        Some(Self {
            opcode: b[0],
            solicited: b[1] & 0x80 != 0,
            migreq: b[1] & 0x40 != 0,
            pad: (b[1] >> 4) & 0x3,
            pkey: u16::from_be_bytes([b[2], b[3]]),
            fecn: b[4] & 0x80 != 0,
            becn: b[4] & 0x40 != 0,
            dest_qp: u32::from_be_bytes([0, b[5], b[6], b[7]]),
            ack_req: b[8] & 0x80 != 0,
            psn: u32::from_be_bytes([0, b[9], b[10], b[11]]),
        })
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; BTH_LEN] {
        let qp = (self.dest_qp & QPN_MASK).to_be_bytes();
        let psn = (self.psn & PSN_MASK).to_be_bytes();
        [
            self.opcode,
            u8::from(self.solicited) << 7 | u8::from(self.migreq) << 6 | (self.pad & 3) << 4,
            (self.pkey >> 8) as u8,
            self.pkey as u8,
            u8::from(self.fecn) << 7 | u8::from(self.becn) << 6,
            qp[1],
            qp[2],
            qp[3],
            u8::from(self.ack_req) << 7,
            psn[1],
            psn[2],
            psn[3],
        ]
    }
}

/// The RDMA Extended Transport Header: the remote buffer of a WRITE or
/// READ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reth {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Length in bytes of the whole operation.
    pub len: u32,
}

impl Reth {
    /// Decodes the first [`RETH_LEN`] bytes.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let b = b.get(..RETH_LEN)?;
        Some(Self {
            va: u64::from_be_bytes(b[0..8].try_into().ok()?),
            rkey: u32::from_be_bytes(b[8..12].try_into().ok()?),
            len: u32::from_be_bytes(b[12..16].try_into().ok()?),
        })
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; RETH_LEN] {
        let mut b = [0u8; RETH_LEN];
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..16].copy_from_slice(&self.len.to_be_bytes());
        b
    }
}

/// The FLUSH Extended Transport Header: what a FLUSH makes durable and
/// how much of the memory it covers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Feth {
    /// Placement type bits (4): 1 global visibility, 2 persistence.
    pub placement: u8,
    /// Selectivity level (2 bits): 0 the RETH's range, 1 the whole
    /// memory region.
    pub level: u8,
}

impl Feth {
    /// Decodes the first [`FETH_LEN`] bytes.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let b = b.get(..FETH_LEN)?;
        Some(Self {
            placement: b[3] & 0x0f,
            level: (b[3] >> 4) & 0x3,
        })
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; FETH_LEN] {
        [0, 0, 0, (self.level & 0x3) << 4 | (self.placement & 0x0f)]
    }
}

/// The Atomic Extended Transport Header: an atomic request's target and
/// operands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicEth {
    /// Remote virtual address (8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// The value stored (compare-and-swap) or added (fetch-and-add).
    pub swap_add: u64,
    /// The value compared with (compare-and-swap).
    pub compare: u64,
}

impl AtomicEth {
    /// Decodes the first [`ATOMIC_ETH_LEN`] bytes.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let b = b.get(..ATOMIC_ETH_LEN)?;
        Some(Self {
            va: u64::from_be_bytes(b[0..8].try_into().ok()?),
            rkey: u32::from_be_bytes(b[8..12].try_into().ok()?),
            swap_add: u64::from_be_bytes(b[12..20].try_into().ok()?),
            compare: u64::from_be_bytes(b[20..28].try_into().ok()?),
        })
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; ATOMIC_ETH_LEN] {
        let mut b = [0u8; ATOMIC_ETH_LEN];
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..20].copy_from_slice(&self.swap_add.to_be_bytes());
        b[20..28].copy_from_slice(&self.compare.to_be_bytes());
        b
    }
}

/// What an acknowledge says (the AETH syndrome's top three bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckKind {
    /// Positive acknowledge; the value is the credit count (5 bits).
    Ack(u8),
    /// Receiver not ready; the value is the RNR timer code (5 bits).
    RnrNak(u8),
    /// Negative acknowledge with a NAK code.
    Nak(NakCode),
}

/// NAK codes (IBA table 44).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum NakCode {
    /// PSN sequence error: the requester must resend from the PSN.
    PsnSequenceError = 0,
    /// Invalid request.
    InvalidRequest = 1,
    /// Remote access error (rkey, bounds, permissions).
    RemoteAccessError = 2,
    /// Remote operational error.
    RemoteOperationalError = 3,
    /// Invalid RD request.
    InvalidRdRequest = 4,
}

/// The ACK Extended Transport Header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aeth {
    /// What the acknowledge says.
    pub kind: AckKind,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

impl Aeth {
    /// Decodes the first [`AETH_LEN`] bytes; `None` for reserved syndromes.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let b = b.get(..AETH_LEN)?;
        let syndrome = b[0];
        let value = syndrome & 0x1f;
        let kind = match syndrome >> 5 {
            0 => AckKind::Ack(value),
            1 => AckKind::RnrNak(value),
            3 => AckKind::Nak(match value {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                _ => return None,
            }),
            _ => return None,
        };
        Some(Self {
            kind,
            msn: u32::from_be_bytes([0, b[1], b[2], b[3]]),
        })
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; AETH_LEN] {
        let syndrome = match self.kind {
            AckKind::Ack(credits) => credits & 0x1f,
            AckKind::RnrNak(timer) => 1 << 5 | (timer & 0x1f),
            AckKind::Nak(code) => 3 << 5 | code as u8,
        };
        let msn = (self.msn & PSN_MASK).to_be_bytes();
        [syndrome, msn[1], msn[2], msn[3]]
    }
}

/// The Datagram Extended Transport Header of a UD packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deth {
    /// Queue key.
    pub qkey: u32,
    /// Source QP number (24 bits).
    pub src_qp: u32,
}

impl Deth {
    /// Decodes the first [`DETH_LEN`] bytes.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let b = b.get(..DETH_LEN)?;
        Some(Self {
            qkey: u32::from_be_bytes(b[0..4].try_into().ok()?),
            src_qp: u32::from_be_bytes([0, b[5], b[6], b[7]]),
        })
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; DETH_LEN] {
        let mut b = [0u8; DETH_LEN];
        b[0..4].copy_from_slice(&self.qkey.to_be_bytes());
        b[4..8].copy_from_slice(&(self.src_qp & QPN_MASK).to_be_bytes());
        b
    }
}

/// A decoded RoCEv2 packet: the UDP payload up to (not including) the
/// ICRC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Base header.
    pub bth: Bth,
    /// Opcode.
    pub opcode: Opcode,
    /// XRC requests: the XRC SRQ at the target.
    pub xrc_srqn: Option<u32>,
    /// Datagram header (UD).
    pub deth: Option<Deth>,
    /// FLUSH header.
    pub feth: Option<Feth>,
    /// RDMA header (WRITE first/only, READ request, FLUSH, ATOMIC WRITE).
    pub reth: Option<Reth>,
    /// ACK header (ACK, READ responses).
    pub aeth: Option<Aeth>,
    /// Immediate data (network order, as the verbs give it).
    pub imm: Option<u32>,
    /// Rkey to invalidate (SEND with invalidate).
    pub inv_rkey: Option<u32>,
    /// Atomic request header.
    pub atomic: Option<AtomicEth>,
    /// Atomic response: the value the target held before.
    pub atomic_ack: Option<u64>,
    /// Payload, without pad.
    pub payload: &'a [u8],
}

impl Packet<'static> {
    /// A packet of `opcode` without extension headers or payload (set
    /// the ones it needs with struct update syntax).
    pub fn bare(bth: Bth, opcode: Opcode) -> Self {
        Self {
            bth,
            opcode,
            xrc_srqn: None,
            deth: None,
            feth: None,
            reth: None,
            aeth: None,
            imm: None,
            inv_rkey: None,
            atomic: None,
            atomic_ack: None,
            payload: &[],
        }
    }
}

/// Why a UDP payload is not a RoCEv2 packet the engine accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than its headers, or the pad exceeds the payload.
    Truncated,
    /// Transport header version not 0.
    BadVersion,
    /// An opcode the engine does not speak.
    UnknownOpcode(u8),
    /// A reserved AETH syndrome.
    BadAeth,
}

impl<'a> Packet<'a> {
    /// Decodes `udp_payload` (BTH through ICRC; the ICRC is not checked
    /// here, see [`icrc_ok`]).
    pub fn parse(udp_payload: &'a [u8]) -> Result<Self, ParseError> {
        if udp_payload.len() < BTH_LEN + ICRC_LEN {
            return Err(ParseError::Truncated);
        }
        let bth = Bth::parse(udp_payload).ok_or(ParseError::BadVersion)?;
        let opcode = Opcode::from_u8(bth.opcode).ok_or(ParseError::UnknownOpcode(bth.opcode))?;
        let layout = opcode.layout();
        let body = &udp_payload[BTH_LEN..udp_payload.len() - ICRC_LEN];
        if body.len() < layout.len() {
            return Err(ParseError::Truncated);
        }
        let mut at = 0;
        let mut take = |len: usize| {
            let h = &body[at..at + len];
            at += len;
            h
        };
        let xrc_srqn = layout.xrceth.then(|| {
            u32::from_be_bytes(take(XRCETH_LEN).try_into().unwrap_or_default()) & QPN_MASK
        });
        let deth = layout.deth.then(|| Deth::parse(take(DETH_LEN))).flatten();
        let feth = layout.feth.then(|| Feth::parse(take(FETH_LEN))).flatten();
        let reth = layout.reth.then(|| Reth::parse(take(RETH_LEN))).flatten();
        let aeth = match layout.aeth {
            true => Some(Aeth::parse(take(AETH_LEN)).ok_or(ParseError::BadAeth)?),
            false => None,
        };
        let imm = layout
            .immdt
            .then(|| u32::from_be_bytes(take(IMMDT_LEN).try_into().unwrap_or_default()));
        let inv_rkey = layout
            .ieth
            .then(|| u32::from_be_bytes(take(IETH_LEN).try_into().unwrap_or_default()));
        let atomic = layout
            .atomic
            .then(|| AtomicEth::parse(take(ATOMIC_ETH_LEN)))
            .flatten();
        let atomic_ack = layout
            .atomic_ack
            .then(|| u64::from_be_bytes(take(ATOMIC_ACK_ETH_LEN).try_into().unwrap_or_default()));
        let rest = &body[at..];
        let pad = usize::from(bth.pad);
        if rest.len() < pad {
            return Err(ParseError::Truncated);
        }
        Ok(Self {
            bth,
            opcode,
            xrc_srqn,
            deth,
            feth,
            reth,
            aeth,
            imm,
            inv_rkey,
            atomic,
            atomic_ack,
            payload: &rest[..rest.len() - pad],
        })
    }
}

/// Encodes a packet's UDP payload: the headers `packet` has, its payload,
/// the pad to a multiple of four (`bth.pad` is set here) and room for the
/// ICRC ([`seal`] fills it in once the IP and UDP headers are in front).
pub fn encode(packet: &Packet<'_>) -> Vec<u8> {
    let pad = (4 - packet.payload.len() % 4) % 4;
    let mut bth = packet.bth;
    bth.opcode = packet.opcode as u8;
    bth.pad = pad as u8;
    let mut out = Vec::with_capacity(BTH_LEN + 32 + packet.payload.len() + 8);
    out.extend_from_slice(&bth.to_bytes());
    if let Some(srqn) = packet.xrc_srqn {
        out.extend_from_slice(&(srqn & QPN_MASK).to_be_bytes());
    }
    if let Some(d) = packet.deth {
        out.extend_from_slice(&d.to_bytes());
    }
    if let Some(f) = packet.feth {
        out.extend_from_slice(&f.to_bytes());
    }
    if let Some(r) = packet.reth {
        out.extend_from_slice(&r.to_bytes());
    }
    if let Some(a) = packet.aeth {
        out.extend_from_slice(&a.to_bytes());
    }
    if let Some(i) = packet.imm {
        out.extend_from_slice(&i.to_be_bytes());
    }
    if let Some(k) = packet.inv_rkey {
        out.extend_from_slice(&k.to_be_bytes());
    }
    if let Some(a) = packet.atomic {
        out.extend_from_slice(&a.to_bytes());
    }
    if let Some(v) = packet.atomic_ack {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.extend_from_slice(packet.payload);
    out.resize(out.len() + pad + ICRC_LEN, 0);
    out
}

/// The ICRC of an IP packet carrying RoCEv2 (`ethertype` says which IP),
/// from its IP header to just before its last four bytes (where the ICRC
/// goes). `None` if the packet is too short to hold its headers.
///
/// The CRC-32 of Ethernet, over eight bytes of ones (RoCEv2's stand-in for
/// the InfiniBand LRH) and the packet with the fields routers may change
/// set to ones: IPv4 TOS, TTL and checksum; IPv6 traffic class, flow label
/// and hop limit; the UDP checksum; the BTH's reserved/ECN byte. It is sent
/// least significant byte first, like the Ethernet FCS.
pub fn icrc(ethertype: u16, ip_packet: &[u8]) -> Option<[u8; ICRC_LEN]> {
    icrc_hasher(ethertype, ip_packet).map(|(crc, _)| crc.finalize().to_le_bytes())
}

/// The ICRC rdma_rxe gives an RDMA FLUSH (Linux 7.2): its opcode table
/// has no payload offset for FLUSH, so its "payload" is the packet's
/// transport headers from the BTH on, unmasked, and the CRC covers them a
/// second time after [`icrc`]'s bytes. `None` unless the packet is a
/// FLUSH with room for its headers.
pub fn rxe_flush_icrc(ethertype: u16, ip_packet: &[u8]) -> Option<[u8; ICRC_LEN]> {
    let (mut crc, bth) = icrc_hasher(ethertype, ip_packet)?;
    crc.update(rxe_flush_headers(ip_packet, bth)?);
    Some(crc.finalize().to_le_bytes())
}

/// The bytes rdma_rxe covers twice if `ip_packet`, whose BTH is at `bth`,
/// is a FLUSH ([`rxe_flush_icrc`]); `None` for any other packet.
fn rxe_flush_headers(ip_packet: &[u8], bth: usize) -> Option<&[u8]> {
    let end = bth + BTH_LEN + FETH_LEN + RETH_LEN;
    (ip_packet[bth] == Opcode::RcFlush as u8 && end + ICRC_LEN <= ip_packet.len())
        .then(|| &ip_packet[bth..end])
}

/// The CRC of [`icrc`] before it is finalised, and where the BTH starts.
fn icrc_hasher(ethertype: u16, ip_packet: &[u8]) -> Option<(crc32fast::Hasher, usize)> {
    let (ip_len, masks): (usize, &[(usize, u8)]) = match ethertype {
        ETH_P_IPV4 => {
            let ihl = usize::from(ip_packet.first()? & 0x0f) * 4;
            (ihl, &[(1, 0xff), (8, 0xff), (10, 0xff), (11, 0xff)])
        }
        ETH_P_IPV6 => (40, &[(0, 0x0f), (1, 0xff), (2, 0xff), (3, 0xff), (7, 0xff)]),
        _ => return None,
    };
    let udp = ip_len;
    let bth = udp + 8;
    if ip_packet.len() < bth + BTH_LEN + ICRC_LEN {
        return None;
    }
    let covered = &ip_packet[..ip_packet.len() - ICRC_LEN];
    let mut masked = covered[..bth + BTH_LEN].to_vec();
    for &(off, mask) in masks {
        masked[off] |= mask;
    }
    masked[udp + 6] = 0xff;
    masked[udp + 7] = 0xff;
    masked[bth + 4] = 0xff;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&[0xff; 8]);
    crc.update(&masked);
    crc.update(&covered[bth + BTH_LEN..]);
    Some((crc, bth))
}

/// Whether the last four bytes of `ip_packet` are its correct ICRC: as
/// IBA computes it, or for a FLUSH as rdma_rxe does ([`rxe_flush_icrc`]).
pub fn icrc_ok(ethertype: u16, ip_packet: &[u8]) -> bool {
    let Some((crc, bth)) = icrc_hasher(ethertype, ip_packet) else {
        return false;
    };
    let got = &ip_packet[ip_packet.len() - ICRC_LEN..];
    if got == crc.clone().finalize().to_le_bytes() {
        return true;
    }
    rxe_flush_headers(ip_packet, bth).is_some_and(|headers| {
        let mut crc = crc;
        crc.update(headers);
        got == crc.finalize().to_le_bytes()
    })
}

/// Writes the ICRC into the last four bytes of `ip_packet`. A FLUSH gets
/// rdma_rxe's ([`rxe_flush_icrc`]): rxe, the one other implementation of
/// FLUSH on these wires, drops one with IBA's, and checks every FLUSH
/// the same way. The packet is read once.
pub fn seal(ethertype: u16, ip_packet: &mut [u8]) -> Option<()> {
    let (mut crc, bth) = icrc_hasher(ethertype, ip_packet)?;
    if let Some(headers) = rxe_flush_headers(ip_packet, bth) {
        crc.update(headers);
    }
    let len = ip_packet.len();
    ip_packet[len - ICRC_LEN..].copy_from_slice(&crc.finalize().to_le_bytes());
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A CNP a Mellanox ConnectX-4 Lx sent, as published with scapy's
    /// RoCE tests (Ethernet header stripped): the ICRC was computed by
    /// hardware, so it checks our masking and byte order independently.
    const CONNECTX4_CNP: &str = "45c2 003c 718c 4000 4011 9161 0a00 1101 0a00
        1201 0000 12b7 0028 0000 8100 ffff 4000 0118 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 82fd 002a";

    #[test]
    fn icrc_matches_hardware() {
        let pkt = hex(CONNECTX4_CNP);
        assert!(icrc_ok(ETH_P_IPV4, &pkt));
        let bth = Bth::parse(&pkt[28..]).unwrap();
        assert_eq!(Opcode::from_u8(bth.opcode), Some(Opcode::Cnp));
        assert!(bth.becn);
        assert_eq!(bth.dest_qp, 0x0118);
    }

    #[test]
    fn icrc_ignores_mutable_fields_only() {
        let mut pkt = hex(CONNECTX4_CNP);
        // A router may change TTL, DSCP/ECN and the checksums.
        pkt[1] = 0x03;
        pkt[8] = 0x01;
        pkt[10] = 0x12;
        pkt[26] = 0x34;
        assert!(icrc_ok(ETH_P_IPV4, &pkt));
        // Anything else is damage.
        for off in [12, 20, 28, 33, 40] {
            let mut bad = hex(CONNECTX4_CNP);
            bad[off] ^= 1;
            assert!(!icrc_ok(ETH_P_IPV4, &bad), "offset {off}");
        }
        assert!(!icrc_ok(ETH_P_IPV4, &pkt[..20]));
    }

    #[test]
    fn icrc_over_ipv6_masks_class_flow_and_hops() {
        let mut pkt = vec![0u8; 40 + 8 + BTH_LEN + 8 + ICRC_LEN];
        pkt[0] = 0x60;
        pkt[6] = 17;
        pkt[7] = 64;
        pkt[40 + 2..40 + 4].copy_from_slice(&ROCE_PORT.to_be_bytes());
        pkt[48] = Opcode::UdSendOnly as u8;
        seal(ETH_P_IPV6, &mut pkt).unwrap();
        assert!(icrc_ok(ETH_P_IPV6, &pkt));
        pkt[1] = 0xab; // traffic class and flow label
        pkt[7] = 3; // hop limit
        assert!(icrc_ok(ETH_P_IPV6, &pkt));
        pkt[8] ^= 1; // source address
        assert!(!icrc_ok(ETH_P_IPV6, &pkt));
    }

    /// An RDMA FLUSH rdma_rxe (Linux 7.2) sent to the engine, captured
    /// with tcpdump on its net device (Ethernet header stripped): its
    /// ICRC is rxe's own, so it checks [`rxe_flush_icrc`] independently.
    const RXE_FLUSH: &str = "4500 0040 2329 4000 4011 02bc 0a63 0002 0a63
        0001 c022 12b7 002c 0000 1c00 ffff 0000 0002 8000 0004 0000 0001
        0000 0000 2d09 0000 0000 0100 0000 1000 5db5 dec9";

    #[test]
    fn rxe_s_own_flush_has_rxe_s_icrc() {
        let pkt = hex(RXE_FLUSH);
        let sent = &pkt[pkt.len() - ICRC_LEN..];
        assert_eq!(rxe_flush_icrc(ETH_P_IPV4, &pkt).unwrap(), sent);
        assert_ne!(icrc(ETH_P_IPV4, &pkt).unwrap(), sent);
        assert!(icrc_ok(ETH_P_IPV4, &pkt));
        let p = Packet::parse(&pkt[28..]).unwrap();
        assert_eq!(p.opcode, Opcode::RcFlush);
        assert_eq!(
            p.feth,
            Some(Feth {
                placement: 1,
                level: 0
            })
        );
        assert_eq!(p.reth.map(|r| (r.rkey, r.len)), Some((0x100, 4096)));
    }

    #[test]
    fn flush_is_sealed_as_rxe_does_and_either_icrc_is_taken() {
        let transport = encode(&Packet {
            feth: Some(Feth {
                placement: 1,
                level: 0,
            }),
            reth: Some(Reth {
                va: 0x1000,
                rkey: 0x100,
                len: 64,
            }),
            ..Packet::bare(Bth::default(), Opcode::RcFlush)
        });
        let mut pkt = vec![0u8; 20 + 8];
        pkt[0] = 0x45;
        pkt[9] = 17;
        pkt[22..24].copy_from_slice(&ROCE_PORT.to_be_bytes());
        pkt.extend_from_slice(&transport);
        seal(ETH_P_IPV4, &mut pkt).unwrap();
        let sent = pkt[pkt.len() - ICRC_LEN..].to_vec();
        assert_eq!(
            Some(sent.as_slice()),
            rxe_flush_icrc(ETH_P_IPV4, &pkt).as_ref().map(|c| &c[..])
        );
        assert_ne!(
            Some(sent.as_slice()),
            icrc(ETH_P_IPV4, &pkt).as_ref().map(|c| &c[..])
        );
        assert!(icrc_ok(ETH_P_IPV4, &pkt));
        // IBA's ICRC is taken too; a damaged packet is neither.
        let len = pkt.len();
        let standard = icrc(ETH_P_IPV4, &pkt).unwrap();
        pkt[len - ICRC_LEN..].copy_from_slice(&standard);
        assert!(icrc_ok(ETH_P_IPV4, &pkt));
        pkt[40] ^= 1;
        assert!(!icrc_ok(ETH_P_IPV4, &pkt));
    }

    const ROCE_PORT: u16 = crate::hw::rdma::ROCE_V2_UDP_PORT;

    #[test]
    fn headers_round_trip() {
        let bth = Bth {
            opcode: Opcode::RcWriteOnlyImm as u8,
            solicited: true,
            migreq: true,
            pad: 0,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dest_qp: 0x12_3456,
            ack_req: true,
            psn: 0xab_cdef,
        };
        let reth = Reth {
            va: 0x1122_3344_5566_7788,
            rkey: 0x99aa_bbcc,
            len: 5,
        };
        let pkt = Packet {
            bth,
            opcode: Opcode::RcWriteOnlyImm,
            xrc_srqn: None,
            deth: None,
            feth: None,
            reth: Some(reth),
            aeth: None,
            imm: Some(0xdead_beef),
            inv_rkey: None,
            atomic: None,
            atomic_ack: None,
            payload: b"hello",
        };
        let bytes = encode(&pkt);
        assert_eq!(bytes.len(), BTH_LEN + RETH_LEN + IMMDT_LEN + 8 + ICRC_LEN);
        let back = Packet::parse(&bytes).unwrap();
        assert_eq!(back.bth.pad, 3);
        assert_eq!(back.payload, b"hello");
        assert_eq!(back.reth, Some(reth));
        assert_eq!(back.imm, Some(0xdead_beef));
        assert_eq!(back.bth.psn, 0xab_cdef);
        assert_eq!(back.bth.dest_qp, 0x12_3456);
        assert!(back.bth.ack_req && back.bth.solicited);
    }

    #[test]
    fn flush_has_feth_then_reth() {
        let feth = Feth {
            placement: 1,
            level: 1,
        };
        let reth = Reth {
            va: 0x1000,
            rkey: 7,
            len: 64,
        };
        let pkt = Packet {
            feth: Some(feth),
            reth: Some(reth),
            ..Packet::bare(Bth::default(), Opcode::RcFlush)
        };
        let bytes = encode(&pkt);
        assert_eq!(bytes.len(), BTH_LEN + FETH_LEN + RETH_LEN + ICRC_LEN);
        // The FETH's last byte: selectivity in bits 5-4, placement in 3-0
        // (as rxe's feth_init lays them out).
        assert_eq!(bytes[BTH_LEN + 3], 0x11);
        let back = Packet::parse(&bytes).unwrap();
        assert_eq!((back.feth, back.reth), (Some(feth), Some(reth)));
        let aw = Packet {
            reth: Some(reth),
            payload: &[1, 2, 3, 4, 5, 6, 7, 8],
            ..Packet::bare(Bth::default(), Opcode::RcAtomicWrite)
        };
        let back_bytes = encode(&aw);
        let back = Packet::parse(&back_bytes).unwrap();
        assert_eq!(back.payload, &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(back.reth, Some(reth));
    }

    #[test]
    fn xrc_requests_name_their_srq_first_and_responses_do_not() {
        let reth = Reth {
            va: 0x1000,
            rkey: 7,
            len: 4,
        };
        let op = Opcode::RcWriteOnlyImm.to_xrc().unwrap();
        assert_eq!(
            (op as u8, op.service(), op.as_rc()),
            (0xab, Service::Xrc, Opcode::RcWriteOnlyImm)
        );
        let pkt = Packet {
            xrc_srqn: Some(0x12_3456),
            reth: Some(reth),
            imm: Some(9),
            payload: b"abcd",
            ..Packet::bare(Bth::default(), op)
        };
        let bytes = encode(&pkt);
        assert_eq!(
            bytes.len(),
            BTH_LEN + XRCETH_LEN + RETH_LEN + IMMDT_LEN + 4 + ICRC_LEN
        );
        assert_eq!(&bytes[BTH_LEN..BTH_LEN + 4], &[0, 0x12, 0x34, 0x56]);
        let back = Packet::parse(&bytes).unwrap();
        assert_eq!(
            (back.xrc_srqn, back.reth, back.imm),
            (Some(0x12_3456), Some(reth), Some(9))
        );
        let ack = Opcode::RcAck.to_xrc().unwrap();
        assert_eq!(ack as u8, 0xb1);
        assert!(!ack.layout().xrceth && ack.layout().aeth);
        assert_eq!(Opcode::RcFlush.to_xrc(), None);
        assert_eq!(Opcode::RcAtomicWrite.to_xrc(), None);
        // Every XRC opcode is its RC twin's plus 0xa0, with an XRCETH
        // unless it is a response.
        for v in 0xa0..=0xb7u8 {
            let Some(op) = Opcode::from_u8(v) else {
                continue;
            };
            assert_eq!(op.as_rc() as u8 | 0xa0, v);
            assert_eq!(op.layout().xrceth, !op.is_response(), "{op:?}");
        }
    }

    #[test]
    fn aeth_syndromes() {
        for kind in [
            AckKind::Ack(31),
            AckKind::RnrNak(14),
            AckKind::Nak(NakCode::PsnSequenceError),
            AckKind::Nak(NakCode::RemoteAccessError),
        ] {
            let a = Aeth { kind, msn: 77 };
            assert_eq!(Aeth::parse(&a.to_bytes()), Some(a));
        }
        assert_eq!(Aeth::parse(&[0x40, 0, 0, 0]), None);
        assert_eq!(Aeth::parse(&[0x7f, 0, 0, 0]), None);
    }

    #[test]
    fn every_opcode_has_its_headers() {
        for v in 0..=255u8 {
            let Some(op) = Opcode::from_u8(v) else {
                continue;
            };
            assert_eq!(op as u8, v);
            let l = op.layout();
            let expect_ud = matches!(op, Opcode::UdSendOnly | Opcode::UdSendOnlyImm);
            assert_eq!(l.deth, expect_ud, "{op:?}");
            assert_eq!(op.service() == Service::Ud, expect_ud, "{op:?}");
            // A UC opcode is its RC twin's, headers and all.
            if op.service() == Service::Uc {
                let rc = op.as_rc();
                assert_eq!((rc as u8 | 0x20, rc.service()), (v, Service::Rc));
                assert_eq!(rc.layout(), l, "{op:?}");
                assert_eq!(rc.to_uc(), Some(op));
            }
        }
        let uc = (0..=255u8)
            .filter_map(Opcode::from_u8)
            .filter(|o| o.service() == Service::Uc);
        assert_eq!(uc.count(), 12);
        assert_eq!(Opcode::RcReadRequest.to_uc(), None);
        assert_eq!(Opcode::RcSendOnlyInv.to_uc(), None);
    }

    #[test]
    fn malformed_packets_are_refused() {
        assert_eq!(Packet::parse(&[0; 15]), Err(ParseError::Truncated));
        let mut b = [0u8; 16];
        b[1] = 1; // transport version 1
        assert_eq!(Packet::parse(&b), Err(ParseError::BadVersion));
        b[1] = 0;
        b[0] = 0x1f;
        assert_eq!(Packet::parse(&b), Err(ParseError::UnknownOpcode(0x1f)));
        // WRITE ONLY needs a RETH.
        b[0] = Opcode::RcWriteOnly as u8;
        assert_eq!(Packet::parse(&b), Err(ParseError::Truncated));
        // Pad longer than the payload.
        b[0] = Opcode::RcSendOnly as u8;
        b[1] = 0x30;
        assert_eq!(Packet::parse(&b), Err(ParseError::Truncated));
    }
}
