// SPDX-License-Identifier: GPL-2.0

//! tc flower offload: `ndo_setup_tc` with `TC_SETUP_BLOCK` binds the
//! device's ingress block to a callback (`flow_block_cb_setup_simple`,
//! as most drivers do), and the callback gets the block's flower
//! requests: replace a rule, destroy one, read one's counters
//! ([`FlowerCmd`]).
//!
//! The kernel's `flow_rule_match_*` read a rule's keys; a C helper
//! flattens the ones a NIC can offload into [`FlowerMatch`] (plain data)
//! and says which other keys the rule uses, so a driver refuses what it
//! cannot match instead of matching less. Actions come one by one as
//! [`FlowerAction`]. A refusal carries a message for the user's extended
//! ack ([`FlowerRule::refuse`]).

use core::{marker::PhantomData, mem::MaybeUninit, ptr::NonNull};

use kernel::{
    ffi::{c_int, c_void},
    prelude::*,
};

use crate::linux::net::{netdev::NetDev, netdev_ops::NetDevOps, netdev_ref::NetDevRef};
use crate::linux::{bindings, eopnotsupp, EOPNOTSUPP_ERRNO};

/// A rule's matches, flattened (`struct rust_ext_flower_match`): each
/// field with its mask, addresses and MACs in network order, ports, the
/// EtherType and TCP flags in host order. `used_keys` has a bit per
/// dissector key the rule uses, `unsupported` those of them not
/// flattened here.
pub(crate) type FlowerMatch = bindings::rust_ext_flower_match;

/// `FLOW_DIS_IS_FRAGMENT`: in [`FlowerMatch::ctrl_flags`], an IP
/// fragment (`ip_flags frag`).
pub(crate) const CTRL_IS_FRAGMENT: u32 = bindings::flow_dissector_ctrl_flags_FLOW_DIS_IS_FRAGMENT;
/// `FLOW_DIS_FIRST_FRAG`: in [`FlowerMatch::ctrl_flags`], the first
/// fragment (`ip_flags firstfrag`).
pub(crate) const CTRL_FIRST_FRAG: u32 = bindings::flow_dissector_ctrl_flags_FLOW_DIS_FIRST_FRAG;

/// `FLOW_DISSECTOR_KEY_IPV4_ADDRS`: [`FlowerMatch::addr_type`] of IPv4.
pub(crate) const ADDR_IPV4: u16 =
    bindings::flow_dissector_key_id_FLOW_DISSECTOR_KEY_IPV4_ADDRS as u16;
/// `FLOW_DISSECTOR_KEY_IPV6_ADDRS`: [`FlowerMatch::addr_type`] of IPv6.
pub(crate) const ADDR_IPV6: u16 =
    bindings::flow_dissector_key_id_FLOW_DISSECTOR_KEY_IPV6_ADDRS as u16;

/// Which header a [`FlowerAction::Mangle`] rewrites
/// (`enum flow_action_mangle_base`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MangleBase {
    /// Ethernet.
    Eth,
    /// IPv4.
    Ip4,
    /// IPv6.
    Ip6,
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// Anything else.
    Other,
}

/// One action of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlowerAction {
    /// `gact pass`.
    Accept,
    /// `gact drop`.
    Drop,
    /// `mirred egress redirect` to the device with this ifindex.
    Redirect(i32),
    /// `mirred egress redirect` to a VXLAN device (this ifindex): the
    /// packet goes into the tunnel a [`FlowerAction::TunnelEncap`]
    /// before it set.
    RedirectToVxlan(i32),
    /// `tunnel_key set`: the tunnel to send into.
    TunnelEncap(TunnelKey),
    /// `tunnel_key unset`: the outer headers go.
    TunnelDecap,
    /// `vlan push`: id, priority, protocol (host order).
    VlanPush {
        /// VLAN id.
        vid: u16,
        /// PCP.
        prio: u8,
        /// TPID.
        proto: u16,
    },
    /// `vlan pop`.
    VlanPop,
    /// `pedit`: of the 32-bit word at `offset` of header `base`, keep the
    /// bits of `mask` and set the others from `val` (network order, as
    /// tc gives them).
    Mangle {
        /// Header.
        base: MangleBase,
        /// Offset of the word in it.
        offset: u32,
        /// Bits kept.
        mask: u32,
        /// New bits.
        val: u32,
    },
    /// `csum`: recompute these checksums (`TCA_CSUM_UPDATE_FLAG_*`).
    Csum(u32),
    /// `police`.
    Police(Police),
    /// Anything else (`enum flow_action_id`).
    Other(u32),
}

impl FlowerAction {
    fn from_flat(a: &bindings::rust_ext_flower_action) -> Self {
        use bindings as b;
        match a.id {
            b::flow_action_id_FLOW_ACTION_ACCEPT => Self::Accept,
            b::flow_action_id_FLOW_ACTION_DROP => Self::Drop,
            b::flow_action_id_FLOW_ACTION_REDIRECT if a.to_vxlan => {
                Self::RedirectToVxlan(a.ifindex)
            }
            b::flow_action_id_FLOW_ACTION_REDIRECT => Self::Redirect(a.ifindex),
            b::flow_action_id_FLOW_ACTION_TUNNEL_ENCAP => Self::TunnelEncap(TunnelKey {
                ipv4: a.tun_ipv4,
                id: a.tun_id,
                src: a.tun_src,
                dst: a.tun_dst,
                dport: a.tun_dport,
            }),
            b::flow_action_id_FLOW_ACTION_TUNNEL_DECAP => Self::TunnelDecap,
            b::flow_action_id_FLOW_ACTION_VLAN_PUSH => Self::VlanPush {
                vid: a.vlan_id,
                prio: a.vlan_prio,
                proto: a.vlan_proto,
            },
            b::flow_action_id_FLOW_ACTION_VLAN_POP => Self::VlanPop,
            b::flow_action_id_FLOW_ACTION_MANGLE => Self::Mangle {
                base: match a.mangle_htype {
                    b::flow_action_mangle_base_FLOW_ACT_MANGLE_HDR_TYPE_ETH => MangleBase::Eth,
                    b::flow_action_mangle_base_FLOW_ACT_MANGLE_HDR_TYPE_IP4 => MangleBase::Ip4,
                    b::flow_action_mangle_base_FLOW_ACT_MANGLE_HDR_TYPE_IP6 => MangleBase::Ip6,
                    b::flow_action_mangle_base_FLOW_ACT_MANGLE_HDR_TYPE_TCP => MangleBase::Tcp,
                    b::flow_action_mangle_base_FLOW_ACT_MANGLE_HDR_TYPE_UDP => MangleBase::Udp,
                    _ => MangleBase::Other,
                },
                offset: a.mangle_offset,
                mask: a.mangle_mask,
                val: a.mangle_val,
            },
            b::flow_action_id_FLOW_ACTION_CSUM => Self::Csum(a.csum_flags),
            b::flow_action_id_FLOW_ACTION_POLICE => Self::Police(Police {
                rate: a.police_rate_bytes_ps,
                burst: a.police_burst,
                pkt_rate: a.police_rate_pkt_ps,
                extras: a.police_extras,
                exceed: PoliceVerdict::from_id(a.police_exceed),
                conform: PoliceVerdict::from_id(a.police_notexceed),
            }),
            id => Self::Other(id),
        }
    }
}

/// The tunnel of a `tunnel_key set` action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TunnelKey {
    /// An IPv4 tunnel (the addresses' first 4 bytes); else IPv6, which
    /// is not flattened (the addresses are zero).
    pub(crate) ipv4: bool,
    /// Tunnel id (VXLAN VNI).
    pub(crate) id: u64,
    /// Outer source address (0: the route's), network order.
    pub(crate) src: [u8; 16],
    /// Outer destination address, network order.
    pub(crate) dst: [u8; 16],
    /// Outer UDP destination port (0: the device's).
    pub(crate) dport: u16,
}

/// A `police` action: a token bucket, and what happens to the packets
/// over and within its rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Police {
    /// Bytes a second (0: none given).
    pub(crate) rate: u64,
    /// Bucket depth in bytes.
    pub(crate) burst: u32,
    /// Packets a second (0: none given).
    pub(crate) pkt_rate: u64,
    /// A peak rate, an average-rate estimator or a per-packet overhead
    /// was given.
    pub(crate) extras: bool,
    /// What becomes of a packet over the rate (`conform-exceed X/...`).
    pub(crate) exceed: PoliceVerdict,
    /// What becomes of one within it (`conform-exceed .../Y`).
    pub(crate) conform: PoliceVerdict,
}

/// A `police` verdict (`enum flow_action_id` of its control action).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PoliceVerdict {
    /// `drop`.
    Drop,
    /// `pipe`: on to the next action.
    Pipe,
    /// `ok`: accepted, no further action.
    Accept,
    /// `reclassify`, `continue`, `goto chain`, ...
    Other,
}

impl PoliceVerdict {
    fn from_id(id: u32) -> Self {
        use bindings as b;
        match id {
            b::flow_action_id_FLOW_ACTION_DROP => Self::Drop,
            b::flow_action_id_FLOW_ACTION_PIPE => Self::Pipe,
            b::flow_action_id_FLOW_ACTION_ACCEPT => Self::Accept,
            _ => Self::Other,
        }
    }
}

/// A flower request of the block's callback.
pub(crate) enum FlowerCmd<'a> {
    /// Add the rule, or replace the one with its cookie.
    Replace(FlowerRule<'a>),
    /// Remove the rule with this cookie.
    Destroy(u64),
    /// Report what the rule with this cookie counted since the last
    /// report.
    Stats(FlowerStats<'a>),
}

impl FlowerCmd<'_> {
    /// The request `raw` asks; `None` for another command.
    ///
    /// # Safety
    ///
    /// `raw` is a live request for as long as the result is used.
    unsafe fn from_raw(raw: *mut bindings::flow_cls_offload) -> Option<Self> {
        // SAFETY: The caller's promise.
        let command = unsafe { (*raw).command };
        Some(match command {
            bindings::flow_cls_command_FLOW_CLS_REPLACE => FlowerCmd::Replace(FlowerRule {
                raw,
                _request: PhantomData,
            }),
            bindings::flow_cls_command_FLOW_CLS_DESTROY => {
                // SAFETY: As above.
                let cookie = unsafe { (*raw).cookie };
                // CAST: As in `FlowerRule::cookie`.
                FlowerCmd::Destroy(cookie as u64)
            }
            bindings::flow_cls_command_FLOW_CLS_STATS => FlowerCmd::Stats(FlowerStats {
                raw,
                _request: PhantomData,
            }),
            _ => return None,
        })
    }
}

/// A rule tc asks the driver to carry (valid for the request).
pub(crate) struct FlowerRule<'a> {
    raw: *mut bindings::flow_cls_offload,
    _request: PhantomData<&'a mut bindings::flow_cls_offload>,
}

impl FlowerRule<'_> {
    /// tc's handle of the rule, the same in its destroy and stats.
    pub(crate) fn cookie(&self) -> u64 {
        // SAFETY: `raw` is the live request (type invariant).
        // CAST: `unsigned long` is 64 bits on every arch Rust builds for here.
        unsafe { (*self.raw).cookie as u64 }
    }

    /// The filter's priority (lower first).
    pub(crate) fn prio(&self) -> u32 {
        // SAFETY: As in `cookie`.
        unsafe { (*self.raw).common.prio }
    }

    /// The rule's matches.
    pub(crate) fn matches(&self) -> FlowerMatch {
        let mut m = MaybeUninit::<FlowerMatch>::uninit();
        // SAFETY: The request and its rule are live; the helper zeroes
        // all of `m` before it fills fields in, so it is initialized.
        unsafe {
            bindings::rust_ext_flower_match(self.raw, m.as_mut_ptr());
            m.assume_init()
        }
    }

    /// The rule's actions, in order.
    pub(crate) fn actions(&self) -> impl Iterator<Item = FlowerAction> + '_ {
        // SAFETY: As in `matches`.
        let n = unsafe { bindings::rust_ext_flower_num_actions(self.raw) };
        (0..n).map(move |i| {
            let mut a = MaybeUninit::<bindings::rust_ext_flower_action>::uninit();
            // SAFETY: `i` is below the rule's action count; the helper
            // zeroes all of `a` before it fills fields in.
            let a = unsafe {
                bindings::rust_ext_flower_action(self.raw, i, a.as_mut_ptr());
                a.assume_init()
            };
            FlowerAction::from_flat(&a)
        })
    }

    /// Says why the rule is refused, in the user's extended ack; returns
    /// the error to refuse it with (`EOPNOTSUPP`: tc keeps the rule in
    /// software unless it is `skip_sw`).
    pub(crate) fn refuse(&self, msg: &'static CStr) -> Error {
        // SAFETY: The request is live; `msg` outlives it.
        unsafe { bindings::rust_ext_extack_msg((*self.raw).common.extack, msg.as_char_ptr()) };
        eopnotsupp()
    }
}

/// What an offloaded rule counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlowCounts {
    /// Packets it decided.
    pub(crate) packets: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// Those of them it dropped (its `police`).
    pub(crate) drops: u64,
}

/// A stats request (valid for the request).
pub(crate) struct FlowerStats<'a> {
    raw: *mut bindings::flow_cls_offload,
    _request: PhantomData<&'a mut bindings::flow_cls_offload>,
}

impl FlowerStats<'_> {
    /// The rule's cookie.
    pub(crate) fn cookie(&self) -> u64 {
        // SAFETY: `raw` is the live request (type invariant).
        // CAST: As in `FlowerRule::cookie`.
        unsafe { (*self.raw).cookie as u64 }
    }

    /// Reports what the rule counted since the last report, and the
    /// time since its last packet (`None`: none ever came).
    pub(crate) fn report(&mut self, counted: FlowCounts, idle_ms: Option<u32>) {
        // SAFETY: The request is live and ours to fill.
        unsafe {
            bindings::rust_ext_flow_stats_update(
                self.raw,
                counted.bytes,
                counted.packets,
                counted.drops,
                idle_ms.unwrap_or(u32::MAX),
            )
        };
    }
}

/// The ingress blocks of VXLAN devices (which belong to no driver: tc
/// offers them to every registered driver, as "indirect" blocks) in the
/// namespace of one device, bound to `T`'s
/// [`NetDevOps::tc_flower_tunnel`] of it while this value lives. Dropping it unbinds them; tc first takes each rule
/// offloaded through them away again (`FLOW_CLS_DESTROY`).
pub(crate) struct TunnelBlocks<T: NetDevOps> {
    reg: NonNull<c_void>,
    // The callbacks' private data: boxed, so its address is stable; held
    // (never read here) until the registration is gone.
    _dev: KBox<NetDevRef<T>>,
}

// SAFETY: The registration may be dropped from any thread; the handle is
// `Send` for a `T` that is.
unsafe impl<T: NetDevOps> Send for TunnelBlocks<T> {}
// SAFETY: `&TunnelBlocks` gives access to nothing.
unsafe impl<T: NetDevOps> Sync for TunnelBlocks<T> {}

impl<T: NetDevOps> TunnelBlocks<T> {
    /// Binds every VXLAN device's ingress block, existing and future, to
    /// `dev`'s [`NetDevOps::tc_flower_tunnel`].
    pub(crate) fn register(dev: NetDevRef<T>) -> Result<Self> {
        let hold = dev.hold();
        let dev = KBox::new(dev, GFP_KERNEL)?;
        let priv_: *const NetDevRef<T> = &*dev;
        // SAFETY: `indr_block_cb::<T>` takes `priv_` as a `NetDevRef<T>`,
        // which lives (boxed, not moved) until `drop` has unregistered;
        // the device, whose namespace the helper compares, lives as long
        // (the handle holds it).
        let reg = kernel::error::from_err_ptr(unsafe {
            bindings::rust_ext_indr_register(
                Some(indr_block_cb::<T>),
                priv_.cast_mut().cast(),
                hold.as_raw(),
            )
        })?;
        Ok(Self {
            reg: NonNull::new(reg).ok_or(ENOMEM)?,
            _dev: dev,
        })
    }
}

impl<T: NetDevOps> Drop for TunnelBlocks<T> {
    fn drop(&mut self) {
        // SAFETY: Registered in `register`, unregistered once, here; after
        // it no callback runs with the handle, which goes after.
        unsafe { bindings::rust_ext_indr_unregister(self.reg.as_ptr()) };
    }
}

/// A VXLAN device's block callback: flower requests go to
/// `T::tc_flower_tunnel` of the registered device.
///
/// # Safety
///
/// Called by tc with the `priv_` [`TunnelBlocks::register`] gave, live
/// while the registration is, and a live request of `type_`.
unsafe extern "C" fn indr_block_cb<T: NetDevOps>(
    type_: bindings::tc_setup_type,
    type_data: *mut c_void,
    priv_: *mut c_void,
) -> c_int {
    if type_ != bindings::tc_setup_type_TC_SETUP_CLSFLOWER {
        return EOPNOTSUPP_ERRNO;
    }
    let raw: *mut bindings::flow_cls_offload = type_data.cast();
    // SAFETY: The request is live (the function's contract).
    if unsafe { (*raw).common.chain_index } != 0 {
        return EOPNOTSUPP_ERRNO;
    }
    // SAFETY: `priv_` is the registration's handle (the contract).
    let handle = unsafe { &*priv_.cast::<NetDevRef<T>>() };
    let Some(dev) = handle.try_access() else {
        return ENODEV.to_errno();
    };
    // SAFETY: As above.
    let Some(cmd) = (unsafe { FlowerCmd::from_raw(raw) }) else {
        return EOPNOTSUPP_ERRNO;
    };
    match T::tc_flower_tunnel(&dev, cmd) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ndo_setup_tc` of a `T` with [`NetDevOps::tc_flower`]: binds the
/// ingress block to [`block_cb`]; other setup types are not supported.
///
/// # Safety
///
/// Called by the core with a live device and request of `type_`.
pub(crate) unsafe extern "C" fn setup_tc<T: NetDevOps>(
    ndev: *mut bindings::net_device,
    type_: bindings::tc_setup_type,
    type_data: *mut c_void,
) -> c_int {
    if type_ != bindings::tc_setup_type_TC_SETUP_BLOCK {
        return EOPNOTSUPP_ERRNO;
    }
    // SAFETY: For `TC_SETUP_BLOCK` the request is a live
    // `flow_block_offload`; the callback is registered with the device as
    // its private data and unregistered (block unbind) before the device
    // goes away.
    unsafe {
        bindings::rust_ext_flow_block_cb_setup_simple(
            type_data.cast(),
            Some(block_cb::<T>),
            ndev.cast(),
        )
    }
}

/// The block's callback: flower requests go to `T::tc_flower`
/// ([`NetDevOps::tc_flower`]).
///
/// # Safety
///
/// Called by tc with the device given at bind as `priv_`, live while the
/// callback is bound, and a live request of `type_`.
unsafe extern "C" fn block_cb<T: NetDevOps>(
    type_: bindings::tc_setup_type,
    type_data: *mut c_void,
    priv_: *mut c_void,
) -> c_int {
    if type_ != bindings::tc_setup_type_TC_SETUP_CLSFLOWER {
        return EOPNOTSUPP_ERRNO;
    }
    let ndev: *mut bindings::net_device = priv_.cast();
    let raw: *mut bindings::flow_cls_offload = type_data.cast();
    // SAFETY: Both live (the function's contract).
    if !unsafe { bindings::rust_ext_tc_can_offload_chain0(ndev, raw) } {
        return EOPNOTSUPP_ERRNO;
    }
    // SAFETY: As above.
    let Some(cmd) = (unsafe { FlowerCmd::from_raw(raw) }) else {
        return EOPNOTSUPP_ERRNO;
    };
    // SAFETY: The device is live (above) and its ops are `T`'s: the
    // callback was bound through `T`'s `ndo_setup_tc`.
    let dev = unsafe { NetDev::<T>::from_raw(ndev) };
    match T::tc_flower(dev, cmd) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
