// SPDX-License-Identifier: GPL-2.0

//! The card's eBPF interpreter: an XDP program the host's verifier
//! accepted, run on one frame. Every access is checked here again (the
//! card trusts no program): a load or store outside the frame, the
//! stack, the context or a map value, or more than [`MAX_STEPS`]
//! instructions, ends the run as `XDP_ABORTED`.
//!
//! Addresses are the interpreter's own: the frame at [`PKT_BASE`] (so
//! that `xdp_md`'s 32-bit `data` and `data_end` hold them), the stack
//! below [`STACK_TOP`], the context at [`CTX_BASE`], and map values in
//! 4 GiB windows of their own above 2^32.

use super::maps::{err, Maps};

/// Instructions one run may execute (loops the verifier bounded still
/// end here).
pub const MAX_STEPS: u64 = 1 << 20;
/// Where the frame's first byte is (`xdp_md.data`).
pub const PKT_BASE: u64 = 0x1000_0000;
/// The stack's top (`r10`); it holds 512 bytes.
pub const STACK_TOP: u64 = 0x2000_0200;
const STACK_LEN: u64 = 512;
/// The `xdp_md` context (`r1` at entry).
pub const CTX_BASE: u64 = 0x3000_0000;
const CTX_LEN: u64 = 24;
/// A map's handle, as `ld_imm64` of a map loads it.
const MAP_HANDLE: u64 = 0xf000_0000_0000_0000;
/// Map values: map slot `s`'s window starts at `(s + 1) << 32`.
const VALUE_WINDOW: u32 = 32;

/// `XDP_ABORTED`.
pub const XDP_ABORTED: u32 = 0;
/// `XDP_DROP`.
pub const XDP_DROP: u32 = 1;
/// `XDP_PASS`.
pub const XDP_PASS: u32 = 2;
/// `XDP_TX`.
pub const XDP_TX: u32 = 3;

/// Helpers the card runs (`BPF_FUNC_*`).
pub mod helper {
    /// `bpf_map_lookup_elem`.
    pub const MAP_LOOKUP_ELEM: i32 = 1;
    /// `bpf_map_update_elem`.
    pub const MAP_UPDATE_ELEM: i32 = 2;
    /// `bpf_map_delete_elem`.
    pub const MAP_DELETE_ELEM: i32 = 3;
}

/// One instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Insn {
    /// Opcode.
    pub code: u8,
    /// Destination register.
    pub dst: u8,
    /// Source register.
    pub src: u8,
    /// Offset.
    pub off: i16,
    /// Immediate.
    pub imm: i32,
}

impl Insn {
    /// The instruction in its 8 bytes (little-endian, as the kernel
    /// keeps them on x86).
    pub fn decode(b: &[u8; 8]) -> Self {
        Self {
            code: b[0],
            dst: b[1] & 0xf,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// Its 8 bytes.
    pub fn encode(&self) -> [u8; 8] {
        let o = self.off.to_le_bytes();
        let i = self.imm.to_le_bytes();
        [
            self.code,
            self.dst | self.src << 4,
            o[0],
            o[1],
            i[0],
            i[1],
            i[2],
            i[3],
        ]
    }
}

// Instruction classes and fields.
const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const ALU: u8 = 0x04;
const JMP: u8 = 0x05;
const JMP32: u8 = 0x06;
const ALU64: u8 = 0x07;
const MEM: u8 = 0x60;
const MEMSX: u8 = 0x80;
const ATOMIC: u8 = 0xc0;
const IMM: u8 = 0x00;
const SRC_X: u8 = 0x08;
/// `ld_imm64`'s source register for a map (`BPF_PSEUDO_MAP_FD`, the card
/// map's number in `imm` once the driver translated it).
pub const PSEUDO_MAP: u8 = 1;

fn size_of(code: u8) -> usize {
    match code & 0x18 {
        0x00 => 4,
        0x08 => 2,
        0x10 => 1,
        _ => 8,
    }
}

/// Why the card refuses a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub String);

/// A program the card accepted: decoded, its jumps inside it, its maps
/// known.
#[derive(Clone, Debug)]
pub struct Program {
    insns: Vec<Insn>,
}

impl Program {
    /// Checks and keeps `bytes` (8 per instruction). `map_ok` says
    /// whether a map number exists.
    pub fn load(bytes: &[u8], map_ok: impl Fn(u32) -> bool) -> Result<Self, Refused> {
        if bytes.is_empty() || !bytes.len().is_multiple_of(8) || bytes.len() / 8 > 4096 {
            return Err(Refused(format!("{} bytes is no program", bytes.len())));
        }
        let insns: Vec<Insn> = bytes
            .chunks_exact(8)
            .map(|c| Insn::decode(c.try_into().unwrap_or(&[0; 8])))
            .collect();
        let n = insns.len() as i64;
        let mut pc = 0usize;
        while pc < insns.len() {
            let i = insns[pc];
            let bad = |why: &str| Err(Refused(format!("insn {pc}: {why} ({:#04x})", i.code)));
            if i.dst > 10 || i.src > 10 {
                return bad("no such register");
            }
            match i.code & 7 {
                LD if i.code == (LD | IMM | 0x18) => {
                    if pc + 1 >= insns.len() {
                        return bad("ld_imm64 without its second half");
                    }
                    if i.src == PSEUDO_MAP && !map_ok(i.imm as u32) {
                        return bad("no such map");
                    }
                    if i.src != 0 && i.src != PSEUDO_MAP {
                        return bad("ld_imm64 of an unknown kind");
                    }
                    pc += 2;
                    continue;
                }
                LD => return bad("legacy packet loads"),
                LDX if i.code & 0xe0 != MEM && i.code & 0xe0 != MEMSX => return bad("load mode"),
                ST | STX
                    if i.code & 0xe0 != MEM && !(i.code & 7 == STX && i.code & 0xe0 == ATOMIC) =>
                {
                    return bad("store mode")
                }
                JMP | JMP32 => {
                    let op = i.code & 0xf0;
                    if op == 0x80 {
                        if i.code & 7 == JMP32 || i.src != 0 {
                            return bad("calls other than helpers");
                        }
                        if !matches!(
                            i.imm,
                            helper::MAP_LOOKUP_ELEM
                                | helper::MAP_UPDATE_ELEM
                                | helper::MAP_DELETE_ELEM
                        ) {
                            return bad("a helper the card does not run");
                        }
                    } else if op != 0x90 {
                        let by = if op == 0 && i.code & 7 == JMP32 {
                            i64::from(i.imm)
                        } else {
                            i64::from(i.off)
                        };
                        let to = pc as i64 + 1 + by;
                        if op == 0xe0 || op == 0xf0 || !(0..n).contains(&to) {
                            return bad("a jump out of the program");
                        }
                    }
                }
                _ => {}
            }
            pc += 1;
        }
        // Control must not run off the end.
        if !matches!(insns.last().map(|i| i.code), Some(0x95 | 0x05)) {
            return Err(Refused("the program falls off its end".into()));
        }
        Ok(Self { insns })
    }
}

impl Program {
    /// Whether the program names map `id`.
    pub fn uses_map(&self, id: u32) -> bool {
        self.insns
            .iter()
            .any(|i| i.code == (LD | IMM | 0x18) && i.src == PSEUDO_MAP && i.imm as u32 == id)
    }
}

/// What a run sees of its frame.
#[derive(Clone, Copy, Debug, Default)]
pub struct XdpMd {
    /// `ingress_ifindex`.
    pub ifindex: u32,
    /// `rx_queue_index`.
    pub rx_queue: u32,
}

/// Where an address points.
enum Place {
    Pkt(usize),
    Stack(usize),
    Ctx(usize),
    Value { map: u32, elem: u32, at: usize },
}

struct Run<'a> {
    pkt: &'a mut [u8],
    stack: [u8; STACK_LEN as usize],
    ctx: [u8; CTX_LEN as usize],
    maps: &'a mut dyn Maps,
    /// Map values handed out, by window: (map, element).
    windows: Vec<(u32, u32)>,
}

impl Run<'_> {
    fn place(&self, addr: u64, len: usize) -> Option<Place> {
        let len = len as u64;
        let within = |base: u64, size: u64| {
            addr.checked_sub(base)
                .filter(|&off| off.checked_add(len).is_some_and(|end| end <= size))
        };
        if let Some(off) = within(PKT_BASE, self.pkt.len() as u64) {
            return Some(Place::Pkt(off as usize));
        }
        if let Some(off) = within(STACK_TOP - STACK_LEN, STACK_LEN) {
            return Some(Place::Stack(off as usize));
        }
        if let Some(off) = within(CTX_BASE, CTX_LEN) {
            return Some(Place::Ctx(off as usize));
        }
        let window = (addr >> VALUE_WINDOW).checked_sub(1)?;
        let &(map, elem) = self.windows.get(window as usize)?;
        let at = (addr & 0xffff_ffff) as usize;
        Some(Place::Value { map, elem, at })
    }

    fn bytes(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        match self.place(addr, len)? {
            Place::Pkt(o) => self.pkt.get_mut(o..o + len),
            Place::Stack(o) => self.stack.get_mut(o..o + len),
            Place::Ctx(o) => self.ctx.get_mut(o..o + len),
            Place::Value { map, elem, at } => self.maps.value(map, elem)?.get_mut(at..at + len),
        }
    }

    fn load(&mut self, addr: u64, len: usize) -> Option<u64> {
        let b = self.bytes(addr, len)?;
        let mut v = [0u8; 8];
        v[..len].copy_from_slice(b);
        Some(u64::from_le_bytes(v))
    }

    fn store(&mut self, addr: u64, len: usize, value: u64) -> Option<()> {
        // The context is read-only.
        if matches!(self.place(addr, len)?, Place::Ctx(_)) {
            return None;
        }
        self.bytes(addr, len)?
            .copy_from_slice(&value.to_le_bytes()[..len]);
        Some(())
    }

    fn read_vec(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
        self.bytes(addr, len).map(|b| b.to_vec())
    }

    /// A helper call: r0, or `None` for an argument the card refuses
    /// (the run aborts).
    fn call(&mut self, id: i32, r: &[u64; 11]) -> Option<u64> {
        let map = r[1].checked_sub(MAP_HANDLE)?;
        // CAST: handles are made from 32-bit map numbers.
        let map = map as u32;
        let (key_size, value_size) = self.maps.sizes(map)?;
        let key = self.read_vec(r[2], key_size)?;
        match id {
            helper::MAP_LOOKUP_ELEM => {
                let Some(elem) = self.maps.lookup(map, &key) else {
                    return Some(0);
                };
                let window = match self.windows.iter().position(|&w| w == (map, elem)) {
                    Some(w) => w,
                    None => {
                        self.windows.push((map, elem));
                        self.windows.len() - 1
                    }
                };
                Some(((window as u64) + 1) << VALUE_WINDOW)
            }
            helper::MAP_UPDATE_ELEM => {
                let value = self.read_vec(r[3], value_size)?;
                Some(self.maps.update(map, &key, &value, r[4]) as u64)
            }
            helper::MAP_DELETE_ELEM => Some(self.maps.delete(map, &key) as u64),
            _ => Some(err::EINVAL as u64),
        }
    }
}

fn alu(op: u8, dst: u64, src: u64, wide: bool, off: i16) -> Option<u64> {
    let signed = off == 1;
    let v = if wide {
        match op {
            0x00 => dst.wrapping_add(src),
            0x10 => dst.wrapping_sub(src),
            0x20 => dst.wrapping_mul(src),
            0x30 if src == 0 => 0,
            0x30 if signed => (dst as i64).wrapping_div(src as i64) as u64,
            0x30 => dst / src,
            0x40 => dst | src,
            0x50 => dst & src,
            0x60 => dst << (src & 63),
            0x70 => dst >> (src & 63),
            0x80 => (dst as i64).wrapping_neg() as u64,
            0x90 if src == 0 => dst,
            0x90 if signed => (dst as i64).wrapping_rem(src as i64) as u64,
            0x90 => dst % src,
            0xa0 => dst ^ src,
            0xb0 => match off {
                8 => src as i8 as i64 as u64,
                16 => src as i16 as i64 as u64,
                32 => src as i32 as i64 as u64,
                _ => src,
            },
            0xc0 => ((dst as i64) >> (src & 63)) as u64,
            _ => return None,
        }
    } else {
        let (d, s) = (dst as u32, src as u32);
        u64::from(match op {
            0x00 => d.wrapping_add(s),
            0x10 => d.wrapping_sub(s),
            0x20 => d.wrapping_mul(s),
            0x30 if s == 0 => 0,
            0x30 if signed => (d as i32).wrapping_div(s as i32) as u32,
            0x30 => d / s,
            0x40 => d | s,
            0x50 => d & s,
            0x60 => d << (s & 31),
            0x70 => d >> (s & 31),
            0x80 => (d as i32).wrapping_neg() as u32,
            0x90 if s == 0 => d,
            0x90 if signed => (d as i32).wrapping_rem(s as i32) as u32,
            0x90 => d % s,
            0xa0 => d ^ s,
            0xb0 => match off {
                8 => s as i8 as i32 as u32,
                16 => s as i16 as i32 as u32,
                _ => s,
            },
            0xc0 => ((d as i32) >> (s & 31)) as u32,
            _ => return None,
        })
    };
    Some(v)
}

/// `BPF_END`: byte order of the low `bits` of `v`. `to_be` (or ALU64's
/// unconditional swap) swaps on this little-endian card.
fn endian(v: u64, bits: i32, swap: bool) -> Option<u64> {
    Some(match (bits, swap) {
        (16, true) => u64::from((v as u16).swap_bytes()),
        (32, true) => u64::from((v as u32).swap_bytes()),
        (64, true) => v.swap_bytes(),
        (16, false) => u64::from(v as u16),
        (32, false) => u64::from(v as u32),
        (64, false) => v,
        _ => return None,
    })
}

fn jump(op: u8, a: u64, b: u64, wide: bool) -> Option<bool> {
    let (a, b, sa, sb) = if wide {
        (a, b, a as i64, b as i64)
    } else {
        let (a, b) = (u64::from(a as u32), u64::from(b as u32));
        (a, b, i64::from(a as u32 as i32), i64::from(b as u32 as i32))
    };
    Some(match op {
        0x10 => a == b,
        0x20 => a > b,
        0x30 => a >= b,
        0x40 => a & b != 0,
        0x50 => a != b,
        0x60 => sa > sb,
        0x70 => sa >= sb,
        0xa0 => a < b,
        0xb0 => a <= b,
        0xc0 => sa < sb,
        0xd0 => sa <= sb,
        _ => return None,
    })
}

/// Runs `prog` on `frame` (which it may rewrite): the XDP verdict, or
/// `XDP_ABORTED` for a run the card stopped.
pub fn run(prog: &Program, frame: &mut [u8], md: XdpMd, maps: &mut dyn Maps) -> u32 {
    let mut ctx = [0u8; CTX_LEN as usize];
    let data = PKT_BASE as u32;
    // CAST: frames are at most 64 KiB.
    let end = data + frame.len() as u32;
    for (i, v) in [data, end, data, md.ifindex, md.rx_queue, 0]
        .iter()
        .enumerate()
    {
        ctx[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    let mut r = Run {
        pkt: frame,
        stack: [0; STACK_LEN as usize],
        ctx,
        maps,
        windows: Vec::new(),
    };
    execute(prog, &mut r).map_or(XDP_ABORTED, |v| v as u32)
}

fn execute(prog: &Program, m: &mut Run<'_>) -> Option<u64> {
    let mut reg = [0u64; 11];
    reg[1] = CTX_BASE;
    reg[10] = STACK_TOP;
    let mut pc = 0usize;
    for _ in 0..MAX_STEPS {
        let i = *prog.insns.get(pc)?;
        let (d, s) = (usize::from(i.dst), usize::from(i.src));
        let imm = i64::from(i.imm) as u64;
        let class = i.code & 7;
        pc += 1;
        // r10, the frame pointer, is read-only.
        if d == 10 && matches!(class, ALU | ALU64 | LD | LDX) {
            return None;
        }
        match class {
            ALU | ALU64 => {
                let wide = class == ALU64;
                let op = i.code & 0xf0;
                if op == 0xd0 {
                    let swap = wide || i.code & SRC_X != 0;
                    reg[d] = endian(reg[d], i.imm, swap)?;
                    continue;
                }
                let src = if i.code & SRC_X != 0 { reg[s] } else { imm };
                reg[d] = alu(op, reg[d], src, wide, i.off)?;
            }
            JMP | JMP32 => {
                let op = i.code & 0xf0;
                match op {
                    0x00 => {
                        // JMP32's JA is `gotol`: its offset in imm.
                        let by = if class == JMP32 {
                            i64::from(i.imm)
                        } else {
                            i64::from(i.off)
                        };
                        pc = (pc as i64 + by) as usize;
                        continue;
                    }
                    0x80 => {
                        reg[0] = m.call(i.imm, &reg)?;
                        // The helpers clobber r1-r5.
                        reg[1..6].fill(0);
                        continue;
                    }
                    0x90 => return Some(reg[0]),
                    _ => {}
                }
                let b = if i.code & SRC_X != 0 { reg[s] } else { imm };
                if jump(op, reg[d], b, class == JMP)? {
                    pc = (pc as i64 + i64::from(i.off)) as usize;
                }
            }
            LD => {
                let hi = prog.insns.get(pc)?;
                pc += 1;
                reg[d] = if i.src == PSEUDO_MAP {
                    MAP_HANDLE + u64::from(i.imm as u32)
                } else {
                    u64::from(i.imm as u32) | u64::from(hi.imm as u32) << 32
                };
            }
            LDX => {
                let len = size_of(i.code);
                let addr = reg[s].wrapping_add(i64::from(i.off) as u64);
                let v = m.load(addr, len)?;
                reg[d] = if i.code & 0xe0 == MEMSX {
                    match len {
                        1 => v as i8 as i64 as u64,
                        2 => v as i16 as i64 as u64,
                        4 => v as i32 as i64 as u64,
                        _ => v,
                    }
                } else {
                    v
                };
            }
            ST => {
                let addr = reg[d].wrapping_add(i64::from(i.off) as u64);
                m.store(addr, size_of(i.code), imm)?;
            }
            STX if i.code & 0xe0 == ATOMIC => {
                let len = size_of(i.code);
                if len != 4 && len != 8 {
                    return None;
                }
                let addr = reg[d].wrapping_add(i64::from(i.off) as u64);
                let old = m.load(addr, len)?;
                let mask = if len == 4 {
                    u64::from(u32::MAX)
                } else {
                    u64::MAX
                };
                let src = reg[s] & mask;
                let (new, fetch) = match i.imm {
                    0x00 | 0x01 => (old.wrapping_add(src), i.imm & 1 != 0),
                    0x40 | 0x41 => (old | src, i.imm & 1 != 0),
                    0x50 | 0x51 => (old & src, i.imm & 1 != 0),
                    0xa0 | 0xa1 => (old ^ src, i.imm & 1 != 0),
                    0xe1 => (src, true),
                    0xf1 => {
                        // CMPXCHG: r0 against the old value.
                        let new = if reg[0] & mask == old { src } else { old };
                        m.store(addr, len, new & mask)?;
                        reg[0] = old;
                        continue;
                    }
                    _ => return None,
                };
                m.store(addr, len, new & mask)?;
                if fetch {
                    reg[s] = old;
                }
            }
            STX => {
                let addr = reg[d].wrapping_add(i64::from(i.off) as u64);
                m.store(addr, size_of(i.code), reg[s])?;
            }
            _ => return None,
        }
    }
    None
}
