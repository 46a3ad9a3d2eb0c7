// SPDX-License-Identifier: GPL-2.0

//! The card's XDP offload: the program and maps the PF's admin commands
//! loaded, run on each frame from the wire before anything else sees it.
//! A card without a program pays one atomic load per frame.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::maps::{err, MapError, MapTable, Maps, MAX_KEY};
use super::vm::{self, Program, XdpMd, XDP_DROP, XDP_PASS, XDP_TX};
use crate::dma::HostMem;
use crate::hw::xdp::{map_op, KEY_ROOM, MAX_INSNS};
use crate::hw::{AdminCmd, AdminStatus};

/// What became of the frames the program saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdpStats {
    /// `XDP_PASS`: on to the GFT and the host.
    pub pass: u64,
    /// `XDP_DROP`: dropped on the card.
    pub drop: u64,
    /// `XDP_ABORTED` (or a verdict the card does not know): dropped.
    pub aborted: u64,
    /// `XDP_TX`: sent back out of the wire.
    pub tx: u64,
}

/// A frame's fate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// On, as the program left it.
    Pass(Vec<u8>),
    /// Gone (counted).
    Drop,
    /// Back out of the wire, as the program left it.
    Tx(Vec<u8>),
}

#[derive(Debug, Default)]
struct State {
    prog: Option<Program>,
    maps: MapTable,
    stats: XdpStats,
}

/// The offload state of one card (the PF configures it).
#[derive(Debug, Default)]
pub struct XdpOffload {
    on: AtomicBool,
    state: Mutex<State>,
}

impl XdpOffload {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a program runs.
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    /// Runs the program on `frame` (none loaded: it passes).
    pub fn run(&self, frame: &[u8]) -> Verdict {
        let mut s = self.lock();
        let State { prog, maps, stats } = &mut *s;
        let Some(prog) = prog.as_ref() else {
            return Verdict::Pass(frame.to_vec());
        };
        let mut frame = frame.to_vec();
        match vm::run(prog, &mut frame, XdpMd::default(), maps) {
            XDP_PASS => {
                stats.pass += 1;
                Verdict::Pass(frame)
            }
            XDP_DROP => {
                stats.drop += 1;
                Verdict::Drop
            }
            XDP_TX => {
                stats.tx += 1;
                Verdict::Tx(frame)
            }
            _ => {
                stats.aborted += 1;
                Verdict::Drop
            }
        }
    }

    /// The counters.
    pub fn stats(&self) -> XdpStats {
        self.lock().stats
    }

    /// A function reset: the program and the maps are gone.
    pub fn reset(&self) {
        self.on.store(false, Ordering::Release);
        *self.lock() = State::default();
    }

    /// One of the XDP admin commands.
    pub fn execute(&self, mem: &dyn HostMem, cmd: AdminCmd) -> AdminStatus {
        let mut s = self.lock();
        match cmd {
            AdminCmd::XdpMapCreate {
                id,
                map_type,
                key_size,
                value_size,
                max_entries,
            } => {
                let made = s.maps.create(
                    id,
                    map_type,
                    key_size as usize,
                    value_size as usize,
                    max_entries as usize,
                );
                match made {
                    Ok(()) => AdminStatus::Ok,
                    Err(MapError::Exists) => AdminStatus::BadState,
                    Err(_) => AdminStatus::BadParam,
                }
            }
            AdminCmd::XdpMapDestroy { id } => {
                if s.prog.as_ref().is_some_and(|p| p.uses_map(id)) {
                    AdminStatus::BadState
                } else if s.maps.destroy(id) {
                    AdminStatus::Ok
                } else {
                    AdminStatus::NotFound
                }
            }
            AdminCmd::XdpMapElem { id, op, flags, buf } => {
                map_elem(&mut s.maps, mem, id, op, flags, buf)
            }
            AdminCmd::XdpLoad { prog, count } => {
                if count == 0 || count > MAX_INSNS {
                    return AdminStatus::BadParam;
                }
                let mut bytes = vec![0u8; count as usize * 8];
                if mem.read(prog, &mut bytes).is_err() {
                    return AdminStatus::BadParam;
                }
                let maps = &s.maps;
                match Program::load(&bytes, |m| maps.sizes(m).is_some()) {
                    Ok(p) => {
                        s.prog = Some(p);
                        self.on.store(true, Ordering::Release);
                        AdminStatus::Ok
                    }
                    Err(why) => {
                        log::info!("XDP program refused: {}", why.0);
                        AdminStatus::BadParam
                    }
                }
            }
            AdminCmd::XdpUnload => {
                s.prog = None;
                self.on.store(false, Ordering::Release);
                AdminStatus::Ok
            }
            _ => AdminStatus::BadOpcode,
        }
    }

    /// The state for the harness (`xdp-state`).
    pub fn describe(&self) -> String {
        let s = self.lock();
        let x = s.stats;
        format!(
            "program={} pass={} drop={} aborted={} tx={}",
            u8::from(s.prog.is_some()),
            x.pass,
            x.drop,
            x.aborted,
            x.tx
        )
    }
}

fn map_elem(
    maps: &mut MapTable,
    mem: &dyn HostMem,
    id: u32,
    op: u32,
    flags: u64,
    buf: u64,
) -> AdminStatus {
    let Some((key_size, value_size)) = maps.sizes(id) else {
        return AdminStatus::NotFound;
    };
    let value_at = buf.wrapping_add(KEY_ROOM);
    let mut key = vec![0u8; key_size.min(MAX_KEY)];
    let first = op == map_op::NEXT_KEY && flags == 1;
    if !first && mem.read(buf, &mut key).is_err() {
        return AdminStatus::BadParam;
    }
    let status = |rc: i64| match rc {
        0 => AdminStatus::Ok,
        err::ENOENT => AdminStatus::NotFound,
        err::EEXIST => AdminStatus::BadState,
        err::E2BIG => AdminStatus::NoSpace,
        _ => AdminStatus::BadParam,
    };
    match op {
        map_op::LOOKUP => {
            let Some(elem) = maps.lookup(id, &key) else {
                return AdminStatus::NotFound;
            };
            let value = maps.value(id, elem).map(|v| v.to_vec()).unwrap_or_default();
            match mem.write(value_at, &value) {
                Ok(()) => AdminStatus::Ok,
                Err(_) => AdminStatus::BadParam,
            }
        }
        map_op::UPDATE => {
            let mut value = vec![0u8; value_size];
            if mem.read(value_at, &mut value).is_err() {
                return AdminStatus::BadParam;
            }
            status(maps.update(id, &key, &value, flags))
        }
        map_op::DELETE => status(maps.delete(id, &key)),
        map_op::NEXT_KEY => match maps.next_key(id, (!first).then_some(key.as_slice())) {
            Some(next) => match mem.write(value_at, &next) {
                Ok(()) => AdminStatus::Ok,
                Err(_) => AdminStatus::BadParam,
            },
            None => AdminStatus::NotFound,
        },
        _ => AdminStatus::BadParam,
    }
}
