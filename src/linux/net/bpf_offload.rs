// SPDX-License-Identifier: GPL-2.0

//! XDP hardware offload (`bpf_offload_dev`, `kernel/bpf/offload.c`): a
//! program loaded for a device (`bpftool prog load ... offload_dev`, `ip
//! link set ... xdpoffload`) is verified by the kernel with the device
//! watching each instruction, handed to the device as instructions it
//! runs itself, and attached with `XDP_SETUP_PROG_HW`; its maps live on
//! the device (`BPF_OFFLOAD_MAP_ALLOC`) and the kernel reaches their
//! elements through the device (`bpf_map_dev_ops`). Model:
//! `drivers/net/netdevsim/bpf.c`.
//!
//! The device gets the program as the user wrote it, after the kernel
//! resolved its maps and before the verifier's rewrites: the copy is
//! taken in `prepare` (as nfp does), so helper calls still name their
//! helper and context loads are the raw `xdp_md` ones (the kernel leaves
//! an offloaded program's context accesses to the device). The
//! verifier's dead-code passes are not mirrored (no `replace_insn` /
//! `remove_insns`): the device runs the dead code's verified original,
//! which never executes.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    error::{from_result, to_result},
    ffi::{c_int, c_void},
    prelude::*,
    str::{CStr, CStrExt, CString},
};

use super::{
    ethtool::EthtoolOps,
    instance_lock::RtnlLocked,
    netdev::{NetDev, NetDevVTable},
    netdev_ops::NetDevOps,
    xdp::XdpProgRef,
};
use crate::linux::bindings;

/// eBPF opcode parts (`include/uapi/linux/bpf_common.h`, `bpf.h`).
mod op {
    /// `BPF_LD | BPF_IMM | BPF_DW`.
    pub(super) const LD_IMM64: u8 = 0x18;
    /// `BPF_JMP | BPF_CALL`.
    pub(super) const CALL: u8 = 0x85;
    /// `ld_imm64` source: a map (the kernel put its address in).
    pub(super) const PSEUDO_MAP_FD: u8 = 1;
}

/// One eBPF instruction as the device takes it: the kernel's
/// `struct bpf_insn` in little-endian byte order.
fn encode(insn: &bindings::bpf_insn) -> [u8; 8] {
    let (off, imm) = (insn.off.to_le_bytes(), insn.imm.to_le_bytes());
    let regs = (insn.dst_reg() & 0xf) | ((insn.src_reg() & 0xf) << 4);
    [
        insn.code, regs, off[0], off[1], imm[0], imm[1], imm[2], imm[3],
    ]
}

/// What the device keeps of an offloaded program: its instructions,
/// copied before the verifier's rewrites, maps renamed to the device's
/// numbers by `translate`.
struct ProgState {
    insns: KVec<bindings::bpf_insn>,
}

/// A BPF offload device: programs and maps bound to any of its net
/// devices may be used on all of them (one per card). Net devices join
/// it through [`super::netdev::Setup::bpf_offload`].
///
/// # Invariants
///
/// `raw` was made by `bpf_offload_dev_create` with the operations of
/// `vtable`'s `T` and `vtable` as its private data; it is destroyed in
/// `drop`, after every net device left it (each registration holds an
/// `Arc` of this).
pub(crate) struct BpfOffloadDev {
    raw: NonNull<bindings::bpf_offload_dev>,
    vtable: *const c_void,
}

// SAFETY: The kernel's offload device is used under its own lock from
// any thread.
unsafe impl Send for BpfOffloadDev {}
// SAFETY: As above.
unsafe impl Sync for BpfOffloadDev {}

impl BpfOffloadDev {
    /// An offload device for net devices of `vtable`'s type.
    pub(crate) fn new<T: NetDevOps + EthtoolOps>(vtable: &'static NetDevVTable<T>) -> Result<Self> {
        let vtable_ptr: *const NetDevVTable<T> = vtable;
        // SAFETY: The operations and the tables are `'static`.
        let raw = kernel::error::from_err_ptr(unsafe {
            bindings::bpf_offload_dev_create(
                &BpfOffloadAdapter::<T>::PROG_OPS,
                vtable_ptr.cast_mut().cast(),
            )
        })?;
        // INVARIANT: created just now with `T`'s operations and tables.
        Ok(Self {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
            vtable: vtable_ptr.cast(),
        })
    }

    /// Whether net devices of `vtable`'s type may join this device.
    pub(super) fn serves<T>(&self, vtable: &'static NetDevVTable<T>) -> bool {
        let ptr: *const NetDevVTable<T> = vtable;
        core::ptr::eq(self.vtable, ptr.cast())
    }

    /// Adds `ndev` (not yet registered, of the type [`Self::serves`]).
    ///
    /// # Safety
    ///
    /// `ndev` is a live net device of the type this device serves; it is
    /// removed with [`Self::remove`] before it is freed.
    pub(super) unsafe fn add(&self, ndev: *mut bindings::net_device) -> Result {
        // SAFETY: Live offload device (type invariant) and net device.
        to_result(unsafe { bindings::bpf_offload_dev_netdev_register(self.raw.as_ptr(), ndev) })
    }

    /// Removes `ndev`, unregistered already: the programs and maps bound
    /// to it are destroyed (the maps through its `ndo_bpf`, which must
    /// still work).
    ///
    /// # Safety
    ///
    /// `ndev` was added with [`Self::add`] and is not yet freed.
    pub(super) unsafe fn remove(&self, ndev: *mut bindings::net_device) {
        // SAFETY: The kernel wants RTNL around it (it frees maps through
        // `ndo_bpf`); `ndev` was added (the caller's contract).
        unsafe {
            bindings::rtnl_lock();
            bindings::bpf_offload_dev_netdev_unregister(self.raw.as_ptr(), ndev);
            bindings::rtnl_unlock();
        }
    }
}

impl Drop for BpfOffloadDev {
    fn drop(&mut self) {
        // SAFETY: Created in `new`, every net device gone (type invariant).
        unsafe { bindings::bpf_offload_dev_destroy(self.raw.as_ptr()) };
    }
}

/// The attributes of a map being offloaded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MapDef {
    /// `BPF_MAP_TYPE_ARRAY` or `BPF_MAP_TYPE_HASH` (the kernel offloads
    /// no other).
    pub(crate) map_type: u32,
    pub(crate) key_size: u32,
    pub(crate) value_size: u32,
    pub(crate) max_entries: u32,
    /// `BPF_F_*` creation flags.
    pub(crate) flags: u32,
}

/// One element operation on an offloaded map (`bpf_map_dev_ops`); the
/// slices are the map's key and value sizes.
pub(crate) enum MapElem<'a> {
    /// The key's value into `value`.
    Lookup { key: &'a [u8], value: &'a mut [u8] },
    /// Sets the key's value (`BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST`).
    Update {
        key: &'a [u8],
        value: &'a [u8],
        flags: u64,
    },
    /// Deletes the key.
    Delete { key: &'a [u8] },
    /// The key after `key` (the first if `None`) into `next`.
    NextKey {
        key: Option<&'a [u8]>,
        next: &'a mut [u8],
    },
}

/// An `ndo_bpf` request to attach an offloaded program
/// (`XDP_SETUP_PROG_HW`), or to detach it.
///
/// # Invariants
///
/// `extack` is null or the request's live extended ack, for `'a`.
pub(crate) struct XdpOffloadSetup<'a> {
    prog: Option<(XdpProgRef<'a>, &'a [bindings::bpf_insn])>,
    extack: *mut bindings::netlink_ext_ack,
}

impl<'a> XdpOffloadSetup<'a> {
    /// The program to attach, or `None` to detach the current one.
    pub(crate) fn prog(&self) -> Option<XdpProgRef<'a>> {
        self.prog.map(|(p, _)| p)
    }

    /// The program's instructions as the device takes them (8 bytes
    /// each, maps named by the device's numbers).
    pub(crate) fn image(&self) -> impl Iterator<Item = [u8; 8]> + 'a {
        self.prog
            .into_iter()
            .flat_map(|(_, insns)| insns.iter().map(encode))
    }

    /// Instructions in [`Self::image`].
    pub(crate) fn image_len(&self) -> usize {
        self.prog.map_or(0, |(_, insns)| insns.len())
    }

    /// Tells the user why the request is refused (`NL_SET_ERR_MSG`).
    pub(crate) fn refuse(&mut self, msg: &'static CStr) {
        if !self.extack.is_null() {
            // SAFETY: Live extended ack (type invariant); a static string.
            unsafe { (*self.extack)._msg = msg.as_char_ptr() };
        }
    }
}

/// The offload commands of `ndo_bpf` and the C tables of `T`'s offload
/// device and maps.
pub(super) struct BpfOffloadAdapter<T>(PhantomData<T>);

impl<T: NetDevOps> BpfOffloadAdapter<T> {
    pub(super) const PROG_OPS: bindings::bpf_prog_offload_ops = bindings::bpf_prog_offload_ops {
        insn_hook: Some(Self::insn_hook),
        finalize: None,
        replace_insn: None,
        remove_insns: None,
        prepare: Some(Self::prepare),
        translate: Some(Self::translate),
        destroy: Some(Self::destroy),
    };

    pub(super) const MAP_OPS: bindings::bpf_map_dev_ops = bindings::bpf_map_dev_ops {
        map_get_next_key: Some(Self::map_get_next_key),
        map_lookup_elem: Some(Self::map_lookup_elem),
        map_update_elem: Some(Self::map_update_elem),
        map_delete_elem: Some(Self::map_delete_elem),
    };

    /// `prepare`: copies the program (maps resolved, nothing rewritten
    /// yet) into the state the device keeps.
    ///
    /// # Safety
    ///
    /// Called by the kernel for a program being loaded for a device of
    /// this offload device: `prog` live, with its `offload` set and
    /// `len` instructions.
    unsafe extern "C" fn prepare(prog: *mut bindings::bpf_prog) -> c_int {
        from_result(|| {
            // SAFETY: Per the function's contract.
            let insns = unsafe { Self::insns(prog) };
            let mut copy = KVec::with_capacity(insns.len(), GFP_KERNEL)?;
            copy.extend_from_slice(insns, GFP_KERNEL)?;
            let state = KBox::new(ProgState { insns: copy }, GFP_KERNEL)?;
            // SAFETY: The program's live offload (contract); `destroy`
            // takes the state back.
            unsafe { (*(*(*prog).aux).offload).dev_priv = KBox::into_raw(state).cast() };
            Ok(0)
        })
    }

    /// The instructions of `prog`.
    ///
    /// # Safety
    ///
    /// `prog` is live and holds `len` instructions, unchanged for `'a`.
    unsafe fn insns<'a>(prog: *const bindings::bpf_prog) -> &'a [bindings::bpf_insn] {
        // SAFETY: Per the function's contract.
        unsafe {
            let len = (*prog).len as usize;
            core::slice::from_raw_parts(bindings::rust_ext_bpf_prog_insns(prog.cast_mut()), len)
        }
    }

    /// `insn_hook`: refuses, in the verifier's log, what the device
    /// cannot run: helpers it does not offer, calls of BPF functions or
    /// kernel functions, and map values addressed directly (global data).
    ///
    /// # Safety
    ///
    /// Called by the verifier with its live `env`, `insn_idx` an index
    /// into the program it verifies.
    unsafe extern "C" fn insn_hook(
        env: *mut bindings::bpf_verifier_env,
        insn_idx: c_int,
        _prev: c_int,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let insn = unsafe {
            let prog = bindings::rust_ext_bpf_verifier_prog(env);
            match usize::try_from(insn_idx) {
                Ok(i) if i < (*prog).len as usize => Self::insns(prog)[i],
                _ => return EINVAL.to_errno(),
            }
        };
        let refusal = match insn.code {
            op::CALL if insn.src_reg() != 0 => Some(CString::try_from_fmt(fmt!(
                "calls of BPF or kernel functions"
            ))),
            op::CALL if !T::xdp_offload_helper(insn.imm) => {
                // SAFETY: A static string or null.
                let name = unsafe { bindings::rust_ext_bpf_helper_name(insn.imm) };
                let name = if name.is_null() {
                    c"an unknown helper"
                } else {
                    // SAFETY: A static NUL-terminated name.
                    unsafe { CStr::from_char_ptr(name) }
                };
                Some(CString::try_from_fmt(fmt!(
                    "helper {} (#{})",
                    name.to_str().unwrap_or("?"),
                    insn.imm
                )))
            }
            op::LD_IMM64 if insn.src_reg() > op::PSEUDO_MAP_FD => Some(CString::try_from_fmt(
                fmt!("map values addressed directly (global data)"),
            )),
            _ => None,
        };
        let Some(what) = refusal else {
            return 0;
        };
        // SAFETY: The program's offload names the device it is loaded
        // for, one of this offload device's, so a `T` (contract).
        let dev = unsafe {
            let prog = bindings::rust_ext_bpf_verifier_prog(env);
            NetDev::<T>::from_raw((*(*(*prog).aux).offload).netdev)
        };
        if let Ok(what) = what {
            if let Ok(line) = CString::try_from_fmt(fmt!(
                "[{}] instruction {}: the device cannot run {}\n",
                dev.name().to_str().unwrap_or("?"),
                insn_idx,
                what.to_str().unwrap_or("?")
            )) {
                // SAFETY: Live env (contract); a NUL-terminated line.
                unsafe { bindings::rust_ext_bpf_verifier_log(env, line.as_char_ptr()) };
            }
        }
        crate::linux::eopnotsupp().to_errno()
    }

    /// `translate`: names each map by the device's number for it.
    ///
    /// # Safety
    ///
    /// Called by the kernel once the program is verified: `prog` live,
    /// `prepare` succeeded, its maps in `used_maps`.
    unsafe extern "C" fn translate(prog: *mut bindings::bpf_prog) -> c_int {
        // SAFETY: Per the function's contract; `prepare` set the state.
        let (state, maps) = unsafe {
            let aux = (*prog).aux;
            let state = &mut *(*(*aux).offload).dev_priv.cast::<ProgState>();
            let maps = if (*aux).used_maps.is_null() {
                &[][..]
            } else {
                core::slice::from_raw_parts((*aux).used_maps, (*aux).used_map_cnt as usize)
            };
            (state, maps)
        };
        let mut i = 0;
        while i + 1 < state.insns.len() {
            let insn = state.insns[i];
            if insn.code != op::LD_IMM64 || insn.src_reg() != op::PSEUDO_MAP_FD {
                i += 1;
                continue;
            }
            // CAST: the two halves of the map's address, as the kernel
            // wrote them.
            let addr =
                u64::from(insn.imm as u32) | (u64::from(state.insns[i + 1].imm as u32) << 32);
            // Only a map the program was verified with is looked at.
            let Some(&map) = maps.iter().find(|&&m| m as usize as u64 == addr) else {
                return EINVAL.to_errno();
            };
            // The verifier let an offloaded program use maps offloaded to
            // its offload device and "neutral" ones (perf event arrays,
            // the host's), which the device cannot reach.
            // SAFETY: A live map of the program's.
            if unsafe { bindings::rust_ext_bpf_map_offload_neutral(map) } {
                return crate::linux::eopnotsupp().to_errno();
            }
            // SAFETY: Offloaded, so a `bpf_offloaded_map` with its
            // `bpf_map` first, offloaded to this offload device, whose
            // `ndo_bpf` put the device's number in `dev_priv`.
            let id = unsafe { (*map.cast::<bindings::bpf_offloaded_map>()).dev_priv } as usize;
            // CAST: a number `map_alloc` gave, a u32.
            state.insns[i].imm = id as u32 as i32;
            state.insns[i + 1].imm = 0;
            i += 2;
        }
        0
    }

    /// `destroy`: drops what `prepare` kept.
    ///
    /// # Safety
    ///
    /// Called by the kernel once for a program whose `prepare` succeeded.
    unsafe extern "C" fn destroy(prog: *mut bindings::bpf_prog) {
        // SAFETY: Per the function's contract.
        unsafe {
            let offload = (*(*prog).aux).offload;
            let state = (*offload).dev_priv.cast::<ProgState>();
            if !state.is_null() {
                drop(KBox::from_raw(state));
                (*offload).dev_priv = core::ptr::null_mut();
            }
        }
    }

    /// `ndo_bpf`'s `XDP_SETUP_PROG_HW`.
    ///
    /// # Safety
    ///
    /// The core holds RTNL and the device's instance lock; `prog` is null
    /// or a program the core checked is bound to this offload device,
    /// live for the call; `extack` null or live.
    pub(super) unsafe fn setup(
        dev: &NetDev<T>,
        rtnl: &RtnlLocked<'_>,
        prog: *mut bindings::bpf_prog,
        extack: *mut bindings::netlink_ext_ack,
    ) -> Result {
        let mut setup = XdpOffloadSetup { prog: None, extack };
        if !prog.is_null() {
            // SAFETY: Live program (contract). Under RTNL its offload
            // state is not destroyed (`bpf_prog_dev_bound_destroy` and
            // the netdev removal take RTNL).
            let state = unsafe {
                let aux = (*prog).aux;
                if !(*aux).offload_requested || (*aux).offload.is_null() {
                    None
                } else {
                    (*(*aux).offload).dev_priv.cast::<ProgState>().as_ref()
                }
            };
            let Some(state) = state else {
                setup.refuse(c"not a program loaded for offload to this device");
                return Err(EINVAL);
            };
            // SAFETY: Live for the call (contract).
            let prog_ref = unsafe { XdpProgRef::from_raw(prog) };
            setup.prog = Some((prog_ref, &state.insns[..]));
        }
        T::xdp_offload_setup(dev, rtnl, setup)
    }

    /// `ndo_bpf`'s `BPF_OFFLOAD_MAP_ALLOC`: the device makes the map;
    /// its number goes into `dev_priv`, the element operations into
    /// `dev_ops`.
    ///
    /// # Safety
    ///
    /// The core holds RTNL; `offmap` is the live map being offloaded to
    /// `dev`.
    pub(super) unsafe fn map_alloc(
        dev: &NetDev<T>,
        offmap: *mut bindings::bpf_offloaded_map,
    ) -> Result {
        // SAFETY: Live map (contract).
        let def = unsafe {
            let m = &(*offmap).map;
            MapDef {
                map_type: m.map_type,
                key_size: m.key_size,
                value_size: m.value_size,
                max_entries: m.max_entries,
                flags: m.map_flags,
            }
        };
        let id = T::xdp_map_alloc(dev, &def)?;
        // SAFETY: Live map (contract); the table is a promoted constant.
        unsafe {
            (*offmap).dev_priv = id as usize as *mut c_void;
            (*offmap).dev_ops = &Self::MAP_OPS;
        }
        Ok(())
    }

    /// `ndo_bpf`'s `BPF_OFFLOAD_MAP_FREE`.
    ///
    /// # Safety
    ///
    /// As [`Self::map_alloc`], for a map it allocated.
    pub(super) unsafe fn map_free(dev: &NetDev<T>, offmap: *mut bindings::bpf_offloaded_map) {
        // SAFETY: Live map (contract).
        let id = unsafe { (*offmap).dev_priv } as usize;
        // CAST: `map_alloc` stored a u32.
        T::xdp_map_free(dev, id as u32);
    }

    /// The device and number of an offloaded map, and its key and value
    /// sizes.
    ///
    /// # Safety
    ///
    /// `offmap` is live and offloaded to a device of `T` (the kernel
    /// calls the element operations under its offload lock, with the
    /// map's device set only while it is registered).
    unsafe fn map_of<'a>(
        offmap: *mut bindings::bpf_offloaded_map,
    ) -> (&'a NetDev<T>, u32, usize, usize) {
        // SAFETY: Per the function's contract: `map_alloc` set `dev_ops`
        // only on maps of `T`'s devices, and maps only move between
        // devices of one offload device, which serves one type.
        unsafe {
            let dev = NetDev::from_raw((*offmap).netdev);
            // CAST: `map_alloc` stored a u32.
            let id = (*offmap).dev_priv as usize as u32;
            let m = &(*offmap).map;
            (dev, id, m.key_size as usize, m.value_size as usize)
        }
    }

    /// # Safety
    ///
    /// As [`Self::map_of`]; `key` and `value` hold the map's key and
    /// value sizes.
    unsafe extern "C" fn map_lookup_elem(
        offmap: *mut bindings::bpf_offloaded_map,
        key: *mut c_void,
        value: *mut c_void,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, id, ks, vs) = unsafe { Self::map_of(offmap) };
        // SAFETY: Per the function's contract.
        let (key, value) = unsafe {
            (
                core::slice::from_raw_parts(key.cast::<u8>(), ks),
                core::slice::from_raw_parts_mut(value.cast::<u8>(), vs),
            )
        };
        from_result(|| T::xdp_map_elem(dev, id, MapElem::Lookup { key, value }).map(|()| 0))
    }

    /// # Safety
    ///
    /// As [`Self::map_lookup_elem`].
    unsafe extern "C" fn map_update_elem(
        offmap: *mut bindings::bpf_offloaded_map,
        key: *mut c_void,
        value: *mut c_void,
        flags: u64,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, id, ks, vs) = unsafe { Self::map_of(offmap) };
        // SAFETY: Per the function's contract.
        let (key, value) = unsafe {
            (
                core::slice::from_raw_parts(key.cast::<u8>(), ks),
                core::slice::from_raw_parts(value.cast::<u8>(), vs),
            )
        };
        from_result(|| T::xdp_map_elem(dev, id, MapElem::Update { key, value, flags }).map(|()| 0))
    }

    /// # Safety
    ///
    /// As [`Self::map_of`]; `key` holds the map's key size.
    unsafe extern "C" fn map_delete_elem(
        offmap: *mut bindings::bpf_offloaded_map,
        key: *mut c_void,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, id, ks, _) = unsafe { Self::map_of(offmap) };
        // SAFETY: Per the function's contract.
        let key = unsafe { core::slice::from_raw_parts(key.cast::<u8>(), ks) };
        from_result(|| T::xdp_map_elem(dev, id, MapElem::Delete { key }).map(|()| 0))
    }

    /// # Safety
    ///
    /// As [`Self::map_of`]; `key` null or the map's key size, `next` the
    /// map's key size.
    unsafe extern "C" fn map_get_next_key(
        offmap: *mut bindings::bpf_offloaded_map,
        key: *mut c_void,
        next: *mut c_void,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, id, ks, _) = unsafe { Self::map_of(offmap) };
        // SAFETY: Per the function's contract.
        let (key, next) = unsafe {
            (
                (!key.is_null()).then(|| core::slice::from_raw_parts(key.cast::<u8>(), ks)),
                core::slice::from_raw_parts_mut(next.cast::<u8>(), ks),
            )
        };
        from_result(|| T::xdp_map_elem(dev, id, MapElem::NextKey { key, next }).map(|()| 0))
    }
}
