// SPDX-License-Identifier: GPL-2.0

//! The C-ABI entry points of an [`IbDeviceOps`] implementation, the
//! `ib_device_ops` table ib_core calls.
//!
//! Longer than the layer's other files for a reason: one trampoline per
//! operation (some thirty), each turning ib_core's pointers into the safe
//! types of `verbs.rs` and back; kept together, like the C table they fill.

use core::marker::PhantomData;

use kernel::{
    error::from_result,
    ffi::{c_int, c_uint, c_void},
    prelude::*,
};

use crate::linux::rdma::{
    device::{CqInit, GidEntry, GidType, IbDevice, IbDeviceOps},
    dm::DmRequest,
    mmap,
    udata::{UserCall, UserData},
    umem::{UserMemory, UserPin, UserRange},
    verbs::{
        ib_mtu, Access, AddressPath, CqHandle, IbObject, MrKeys, MwKind, QpAttrs, QpCaps, QpHandle,
        QpInit, QpKind, RecvWrs, SendWrs, SrqAttr, SrqChange, SrqHandle, StatDesc, WcWriter,
        XrcSrq,
    },
    work_request::Sge,
};
use crate::linux::{bindings, eopnotsupp, EOPNOTSUPP_ERRNO};

/// `IB_PORT_CM_SUP` (rdma/ib_mad.h): the port runs the connection manager.
const IB_PORT_CM_SUP: u32 = 1 << 16;
/// `IB_MGMT_MAD_SIZE` (rdma/ib_mad.h): a MAD is 256 bytes.
const IB_MGMT_MAD_SIZE: u32 = 256;
/// Bytes of RoCE headers inside an Ethernet MTU (IPv4/IPv6, UDP, BTH,
/// the largest extension header, ICRC), as `rdma_mtu_from_attr` and
/// `ib_mtu_int_to_enum` callers account for them.
const ROCE_OVERHEAD: u32 = 40 + 8 + 12 + 16 + 4;

/// The C-ABI entry points of an [`IbDeviceOps`] implementation.
pub(super) struct Adapter<T>(PhantomData<T>);

impl<T: IbDeviceOps> Adapter<T> {
    pub(super) const OPS: bindings::ib_device_ops = {
        // SAFETY: All fields of `ib_device_ops` are nullable function
        // pointers, plain integers or a nullable module pointer; zero is
        // "not implemented".
        let mut ops: bindings::ib_device_ops = unsafe { core::mem::zeroed() };
        ops.driver_id = bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN;
        ops.query_device = Some(Self::query_device);
        ops.query_port = Some(Self::query_port);
        ops.get_port_immutable = Some(Self::get_port_immutable);
        ops.get_link_layer = Some(Self::get_link_layer);
        ops.query_pkey = Some(Self::query_pkey);
        if T::HAS_ADD_GID {
            ops.add_gid = Some(Self::add_gid);
        }
        if T::HAS_DEL_GID {
            ops.del_gid = Some(Self::del_gid);
        }
        if T::HAS_ALLOC_UCONTEXT {
            ops.uverbs_abi_ver = T::UVERBS_ABI_VERSION;
            ops.alloc_ucontext = Some(Self::alloc_ucontext);
            ops.dealloc_ucontext = Some(Self::dealloc_ucontext);
            ops.disassociate_ucontext = Some(Self::disassociate_ucontext);
            ops.mmap = Some(Self::mmap);
            // ib_core asks for a separate operation for a process's AHs.
            ops.create_user_ah = Some(Self::create_ah);
            ops.mmap_free = Some(Self::mmap_free);
            ops.size_ib_ucontext =
                core::mem::size_of::<IbObject<bindings::ib_ucontext, T::Ucontext>>();
        }
        ops.alloc_pd = Some(Self::alloc_pd);
        ops.dealloc_pd = Some(Self::dealloc_pd);
        ops.create_cq = Some(Self::create_cq);
        ops.destroy_cq = Some(Self::destroy_cq);
        ops.poll_cq = Some(Self::poll_cq);
        ops.req_notify_cq = Some(Self::req_notify_cq);
        ops.create_qp = Some(Self::create_qp);
        ops.modify_qp = Some(Self::modify_qp);
        ops.destroy_qp = Some(Self::destroy_qp);
        ops.post_send = Some(Self::post_send);
        ops.post_recv = Some(Self::post_recv);
        ops.create_ah = Some(Self::create_ah);
        ops.destroy_ah = Some(Self::destroy_ah);
        ops.get_dma_mr = Some(Self::get_dma_mr);
        ops.alloc_mr = Some(Self::alloc_mr);
        ops.map_mr_sg = Some(Self::map_mr_sg);
        ops.dereg_mr = Some(Self::dereg_mr);
        // ib_core counts a device without `reg_user_mr` as no kernel verbs
        // provider; a driver without user memory regions refuses them.
        ops.reg_user_mr = Some(if T::HAS_REG_USER_MR {
            Self::reg_user_mr
        } else {
            Self::refuse_reg_user_mr
        });
        if T::HAS_REREG_USER_MR {
            ops.rereg_user_mr = Some(Self::rereg_user_mr);
        }
        if T::HAS_ADVISE_MR {
            ops.advise_mr = Some(Self::advise_mr);
        }
        if T::HAS_QUERY_QP {
            ops.query_qp = Some(Self::query_qp);
        }
        if T::HAS_RESIZE_USER_CQ {
            ops.resize_user_cq = Some(Self::resize_user_cq);
        }
        if T::HAS_CREATE_SRQ {
            ops.create_srq = Some(Self::create_srq);
            ops.modify_srq = Some(Self::modify_srq);
            ops.query_srq = Some(Self::query_srq);
            ops.destroy_srq = Some(Self::destroy_srq);
            ops.post_srq_recv = Some(Self::post_srq_recv);
            ops.size_ib_srq = core::mem::size_of::<IbObject<bindings::ib_srq, T::Srq>>();
        }
        if T::HAS_ALLOC_MW {
            ops.alloc_mw = Some(Self::alloc_mw);
            ops.dealloc_mw = Some(Self::dealloc_mw);
            ops.size_ib_mw = core::mem::size_of::<IbObject<bindings::ib_mw, T::Mw>>();
        }
        if T::HAS_ALLOC_DM {
            ops.alloc_dm = Some(Self::alloc_dm);
            ops.dealloc_dm = Some(Self::dealloc_dm);
            ops.reg_dm_mr = Some(Self::reg_dm_mr);
        }
        if T::HAS_ALLOC_XRCD {
            ops.alloc_xrcd = Some(Self::alloc_xrcd);
            ops.dealloc_xrcd = Some(Self::dealloc_xrcd);
            ops.size_ib_xrcd = core::mem::size_of::<IbObject<bindings::ib_xrcd, T::Xrcd>>();
        }
        if T::HAS_ATTACH_MCAST {
            ops.attach_mcast = Some(Self::attach_mcast);
            ops.detach_mcast = Some(Self::detach_mcast);
        }
        if T::HAS_HW_STATS {
            ops.alloc_hw_port_stats = Some(Self::alloc_hw_port_stats);
            ops.get_hw_stats = Some(Self::get_hw_stats);
        }
        // ib_core allocates these objects, with room for our state.
        ops.size_ib_pd = core::mem::size_of::<IbObject<bindings::ib_pd, T::Pd>>();
        ops.size_ib_cq = core::mem::size_of::<IbObject<bindings::ib_cq, T::Cq>>();
        ops.size_ib_qp = core::mem::size_of::<IbObject<bindings::ib_qp, T::Qp>>();
        ops.size_ib_ah = core::mem::size_of::<IbObject<bindings::ib_ah, T::Ah>>();
        ops
    };

    /// # Safety
    ///
    /// `ibdev` must be a registered device of this `T`.
    unsafe fn dev<'a>(ibdev: *mut bindings::ib_device) -> &'a IbDevice<T> {
        // SAFETY: ib_core only calls us for our registered devices, whose
        // `T` lives until after unregistration (see `Registration`).
        unsafe { IbDevice::from_raw(ibdev) }
    }

    /// `port` if the device has it (ports are numbered from 1).
    ///
    /// # Safety
    ///
    /// `ibdev` is a live device.
    unsafe fn port(ibdev: *mut bindings::ib_device, port: u32) -> Result<u32> {
        // SAFETY: Reading a field fixed before registration.
        let count = unsafe { (*ibdev).phys_port_cnt };
        (1..=count).contains(&port).then_some(port).ok_or(EINVAL)
    }

    /// # Safety
    ///
    /// `ibdev` is one of our registered devices; `props` is writable.
    unsafe extern "C" fn query_device(
        ibdev: *mut bindings::ib_device,
        props: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A registered device of ours.
            let dev = unsafe { Self::dev(ibdev) };
            // SAFETY: NULL or the udata of this call.
            if let Some(mut udata) = unsafe { UserData::from_raw(udata) } {
                // The attributes are the whole answer: no driver data.
                udata.expect_no_request()?;
                udata.respond_empty()?;
            }
            let a = T::query_device(dev);
            // CAST: bounded by `c_int::MAX` just before.
            let int = |v: u32| v.min(c_int::MAX as u32) as c_int;
            // SAFETY: ib_core passes a zeroed, writable attribute struct.
            let p = unsafe { &mut *props };
            p.fw_ver = a.fw_ver;
            // SAFETY: Live device; the GUID is read-only after set-up.
            p.sys_image_guid = unsafe { (*ibdev).node_guid };
            p.vendor_id = a.vendor_id;
            p.vendor_part_id = a.vendor_part_id;
            p.hw_ver = a.hw_ver;
            p.max_mr_size = a.max_mr_size;
            p.page_size_cap = a.page_size_cap;
            p.max_qp = int(a.max_qp);
            p.max_qp_wr = int(a.max_qp_wr);
            p.max_send_sge = int(a.max_send_sge);
            p.max_recv_sge = int(a.max_recv_sge);
            p.max_sge_rd = int(a.max_sge_rd);
            p.max_cq = int(a.max_cq);
            p.max_cqe = int(a.max_cqe);
            p.max_mr = int(a.max_mr);
            p.max_mw = int(a.max_mw);
            p.max_pd = int(a.max_pd);
            p.max_srq = int(a.max_srq);
            p.max_srq_wr = int(a.max_srq_wr);
            p.max_srq_sge = int(a.max_srq_sge);
            p.max_ah = int(a.max_ah);
            p.max_qp_rd_atom = int(a.max_qp_rd_atom);
            p.max_qp_init_rd_atom = int(a.max_qp_rd_atom);
            p.max_res_rd_atom = int(a.max_qp_rd_atom.saturating_mul(a.max_qp));
            p.max_pkeys = 1;
            p.local_ca_ack_delay = a.local_ca_ack_delay;
            p.atomic_cap = if a.atomic_hca {
                bindings::ib_atomic_cap_IB_ATOMIC_HCA
            } else {
                bindings::ib_atomic_cap_IB_ATOMIC_NONE
            };
            p.max_fast_reg_page_list_len = a.max_fast_reg_page_list_len;
            p.device_cap_flags = bindings::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN as u64;
            if a.local_dma_lkey_0 {
                p.kernel_cap_flags |= u64::from(bindings::ib_kernel_cap_flags_IBK_LOCAL_DMA_LKEY);
            }
            if a.max_mw != 0 {
                p.device_cap_flags |= (bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW
                    | bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B)
                    as u64;
            }
            if a.max_fast_reg_page_list_len != 0 {
                p.device_cap_flags |=
                    bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
            }
            if a.flush_global {
                p.device_cap_flags |= bindings::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL as u64;
            }
            if a.atomic_write {
                p.device_cap_flags |= bindings::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE as u64;
            }
            p.max_dm_size = a.max_dm_size;
            if a.srq_resize {
                p.device_cap_flags |= bindings::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE as u64;
            }
            if a.xrc && T::HAS_ALLOC_XRCD {
                p.device_cap_flags |= bindings::ib_device_cap_flags_IB_DEVICE_XRC as u64;
            }
            p.timestamp_mask = a.timestamp_mask;
            p.hca_core_clock = a.hca_core_clock_khz;
            if let Some(odp) = a.odp.filter(|_| T::HAS_REG_USER_MR_ON_DEMAND) {
                p.kernel_cap_flags |= u64::from(bindings::ib_kernel_cap_flags_IBK_ON_DEMAND_PAGING);
                p.odp_caps.general_caps =
                    u64::from(bindings::ib_odp_general_cap_bits_IB_ODP_SUPPORT);
                if odp.rc_all {
                    p.odp_caps.per_transport_caps.rc_odp_caps =
                        bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND
                            | bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_RECV
                            | bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_WRITE
                            | bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_READ
                            | bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC
                            | bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SRQ_RECV
                            | bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_FLUSH
                            | bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC_WRITE;
                }
                if a.xrc && T::HAS_ALLOC_XRCD {
                    // An XRC initiator's requests are RC's; its target's
                    // receives are an SRQ's.
                    p.odp_caps.per_transport_caps.xrc_odp_caps =
                        p.odp_caps.per_transport_caps.rc_odp_caps;
                }
                if odp.ud_send {
                    p.odp_caps.per_transport_caps.ud_odp_caps =
                        bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND;
                }
            }
            if T::HAS_ATTACH_MCAST {
                p.max_mcast_grp = int(a.max_mcast_grp);
                p.max_mcast_qp_attach = int(a.max_mcast_qp_attach);
                p.max_total_mcast_qp_attach = int(a.max_total_mcast_qp_attach);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibdev` is one of our registered devices; `props` is writable.
    unsafe extern "C" fn query_port(
        ibdev: *mut bindings::ib_device,
        port: u32,
        props: *mut bindings::ib_port_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A registered device of ours.
            let (dev, port) = unsafe { (Self::dev(ibdev), Self::port(ibdev, port)?) };
            let a = T::query_port(dev, port);
            let (active, running) = dev.port_state(port);
            // SAFETY: ib_core passes a zeroed, writable attribute struct.
            let p = unsafe { &mut *props };
            // CAST: a GID table length the driver declares (tens of entries).
            p.gid_tbl_len = a.gid_tbl_len as c_int;
            p.max_mtu = ib_mtu(a.max_mtu);
            p.active_mtu = p.max_mtu;
            // SAFETY: Live device; the net device (if any) is held inside.
            let ndev = unsafe { bindings::ib_device_get_netdev(ibdev, port) };
            if !ndev.is_null() {
                // SAFETY: `ndev` is held; reading the MTU is always allowed.
                let mtu = unsafe { (*ndev).mtu };
                // SAFETY: Releases the hold taken just above.
                unsafe { bindings::rust_ext_dev_put(ndev) };
                p.active_mtu = ib_mtu(mtu.saturating_sub(ROCE_OVERHEAD).min(a.max_mtu));
            }
            p.phys_mtu = a.max_mtu;
            p.port_cap_flags = IB_PORT_CM_SUP;
            p.max_msg_sz = 1 << 31;
            p.pkey_tbl_len = 1;
            (p.state, p.phys_state) = match (active, running) {
                (true, _) => (
                    bindings::ib_port_state_IB_PORT_ACTIVE,
                    // CAST: the physical states are small enum values (1 to 7).
                    bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8,
                ),
                (false, true) => (
                    bindings::ib_port_state_IB_PORT_DOWN,
                    bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING as u8,
                ),
                (false, false) => (
                    bindings::ib_port_state_IB_PORT_DOWN,
                    bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED as u8,
                ),
            };
            // SAFETY: Live device and writable fields of `props`.
            unsafe {
                bindings::ib_get_eth_speed(ibdev, port, &mut p.active_speed, &mut p.active_width)
            };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibdev` is one of our devices being registered; `immutable` is writable.
    unsafe extern "C" fn get_port_immutable(
        ibdev: *mut bindings::ib_device,
        port: u32,
        immutable: *mut bindings::ib_port_immutable,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A registered device of ours (during registration).
            let (dev, port) = unsafe { (Self::dev(ibdev), Self::port(ibdev, port)?) };
            // SAFETY: ib_core passes a writable struct.
            let im = unsafe { &mut *immutable };
            im.pkey_tbl_len = 1;
            // CAST: a GID table length the driver declares (tens of entries).
            im.gid_tbl_len = T::query_port(dev, port).gid_tbl_len as c_int;
            im.core_cap_flags = T::ROCE_VERSIONS.core_caps();
            im.max_mad_size = IB_MGMT_MAD_SIZE;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for one of our devices.
    unsafe extern "C" fn get_link_layer(
        _ibdev: *mut bindings::ib_device,
        _port: u32,
    ) -> bindings::rdma_link_layer {
        bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET
    }

    /// # Safety
    ///
    /// `pkey` is writable.
    unsafe extern "C" fn query_pkey(
        ibdev: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        // SAFETY: A live device of ours.
        if unsafe { Self::port(ibdev, port) }.is_err() || index != 0 {
            return EINVAL.to_errno();
        }
        // SAFETY: ib_core passes a writable `u16`.
        unsafe { *pkey = 0xffff };
        0
    }

    /// # Safety
    ///
    /// `attr` is a valid GID attribute of one of our registered devices.
    unsafe extern "C" fn add_gid(
        attr: *const bindings::ib_gid_attr,
        _context: *mut *mut c_void,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a valid attribute of one of our devices.
            let a = unsafe { &*attr };
            let kind = match a.gid_type {
                bindings::ib_gid_type_IB_GID_TYPE_ROCE => GidType::RoceV1,
                bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP => GidType::RoceV2,
                _ => return Err(EINVAL),
            };
            // SAFETY: As above.
            let dev = unsafe { Self::dev(a.device) };
            // SAFETY: Every bit pattern of the union is a valid byte array.
            let gid = unsafe { a.gid.raw };
            T::add_gid(
                dev,
                GidEntry {
                    port: a.port_num,
                    index: a.index.into(),
                    kind,
                    gid,
                },
            )?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `attr` is a valid GID attribute of one of our registered devices.
    unsafe extern "C" fn del_gid(
        attr: *const bindings::ib_gid_attr,
        _context: *mut *mut c_void,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a valid attribute of one of our devices.
            let a = unsafe { &*attr };
            // SAFETY: As above.
            let dev = unsafe { Self::dev(a.device) };
            T::del_gid(dev, a.port_num, a.index.into())?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `uctx` is a context ib_core allocated for one of our devices;
    /// `udata` is the call's.
    unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core sets `device` before calling us.
            let dev = unsafe { Self::dev((*uctx).device) };
            // SAFETY: The udata of this call and the context it creates; a
            // context is only ever allocated for user space, which always
            // passes one.
            let mut udata = unsafe { UserData::for_new_context(udata, uctx) }.ok_or(EINVAL)?;
            udata.expect_no_request()?;
            let data = T::alloc_ucontext(dev, &mut udata)?;
            // SAFETY: Allocated with `size_ib_ucontext`, state not
            // initialised.
            unsafe { IbObject::<bindings::ib_ucontext, T::Ucontext>::init(uctx, data)? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `uctx` is a context `alloc_ucontext` initialised, with no objects
    /// left.
    unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: As the function's contract says.
        let dev = unsafe { Self::dev((*uctx).device) };
        // SAFETY: Initialised by `alloc_ucontext`.
        let data = unsafe { IbObject::<bindings::ib_ucontext, T::Ucontext>::data(uctx) };
        T::dealloc_ucontext(dev, data);
        // SAFETY: Not used after this.
        unsafe { IbObject::<bindings::ib_ucontext, T::Ucontext>::drop_data(uctx) };
    }

    /// The device is going away under a live context: ib_core destroys
    /// the context's objects through the usual callbacks and zaps its
    /// mappings (`rdma_user_mmap_entry`) itself, so there is nothing left
    /// for the driver to do here; providing the operation is what lets
    /// unregistration go ahead without waiting for the process.
    extern "C" fn disassociate_ucontext(_uctx: *mut bindings::ib_ucontext) {}

    /// # Safety
    ///
    /// ib_core's `mmap` call on a context of ours.
    unsafe extern "C" fn mmap(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        unsafe { mmap::mmap(uctx, vma) }
    }

    /// # Safety
    ///
    /// ib_core's `mmap_free` call on an entry of ours.
    unsafe extern "C" fn mmap_free(entry: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: As the function's contract says.
        unsafe { mmap::mmap_free(entry) }
    }

    /// # Safety
    ///
    /// `pd` is a PD ib_core allocated for one of our devices.
    unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: NULL or the udata of this call.
            if let Some(udata) = unsafe { UserData::from_raw(udata) } {
                udata.expect_no_request()?;
            }
            // SAFETY: ib_core sets `device` before calling us.
            let dev = unsafe { Self::dev((*pd).device) };
            let data = T::alloc_pd(dev)?;
            // SAFETY: Allocated with `size_ib_pd`, state not initialised.
            unsafe { IbObject::<bindings::ib_pd, T::Pd>::init(pd, data)? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `pd` is a PD `alloc_pd` initialised.
    unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        let dev = unsafe { Self::dev((*pd).device) };
        // SAFETY: Initialised by `alloc_pd`.
        T::dealloc_pd(dev, unsafe { IbObject::<bindings::ib_pd, T::Pd>::data(pd) });
        // SAFETY: Not used after this.
        unsafe { IbObject::<bindings::ib_pd, T::Pd>::drop_data(pd) };
        0
    }

    /// # Safety
    ///
    /// ib_core's `DM_ALLOC` handler: `ibdev` is ours, `uctx` the calling
    /// process's context, `attr` and `attrs` the call's.
    unsafe extern "C" fn alloc_dm(
        ibdev: *mut bindings::ib_device,
        uctx: *mut bindings::ib_ucontext,
        attr: *mut bindings::ib_dm_alloc_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> *mut bindings::ib_dm {
        // SAFETY: As the function's contract says.
        let (dev, attr) = unsafe { (Self::dev(ibdev), &*attr) };
        if attr.flags != 0 {
            return err_ptr(EOPNOTSUPP_ERRNO);
        }
        // SAFETY: As the function's contract says, for this call.
        let req = match unsafe { DmRequest::new(uctx, attr, attrs) } {
            Ok(req) => req,
            Err(e) => return err_ptr(e.to_errno()),
        };
        let made = T::alloc_dm(dev, &req).and_then(IbObject::<bindings::ib_dm, T::Dm>::boxed);
        match made {
            Ok(dm) => dm,
            Err(e) => err_ptr(e.to_errno()),
        }
    }

    /// # Safety
    ///
    /// `dm` is ours (from `alloc_dm`), no memory region on it; nothing
    /// uses it after a success.
    unsafe extern "C" fn dealloc_dm(
        dm: *mut bindings::ib_dm,
        _attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says; ib_core set
            // `device` after `alloc_dm`.
            let (dev, data) = unsafe {
                (
                    Self::dev((*dm).device),
                    IbObject::<bindings::ib_dm, T::Dm>::data(dm),
                )
            };
            T::dealloc_dm(dev, data)?;
            // SAFETY: Allocated by `alloc_dm`; freed once.
            unsafe { IbObject::<bindings::ib_dm, T::Dm>::free_boxed(dm) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `pd` and `dm` are live objects of ours; ib_core checked that
    /// `attr`'s range lies inside `dm` and that it is zero-based.
    unsafe extern "C" fn reg_dm_mr(
        pd: *mut bindings::ib_pd,
        dm: *mut bindings::ib_dm,
        attr: *mut bindings::ib_dm_mr_attr,
        _attrs: *mut bindings::uverbs_attr_bundle,
    ) -> *mut bindings::ib_mr {
        // SAFETY: As the function's contract says.
        let (dev, pd, dm, attr) = unsafe {
            (
                Self::dev((*pd).device),
                IbObject::<bindings::ib_pd, T::Pd>::data(pd),
                IbObject::<bindings::ib_dm, T::Dm>::data(dm),
                &*attr,
            )
        };
        let access = attr.access_flags & !bindings::ib_access_flags_IB_ZERO_BASED;
        if access & !USER_MR_ACCESS != 0 {
            return err_ptr(EOPNOTSUPP_ERRNO);
        }
        Self::new_mr(T::reg_dm_mr(
            dev,
            pd,
            dm,
            attr.offset,
            attr.length,
            Access::from_raw(access),
        ))
    }

    /// # Safety
    ///
    /// `xrcd` is an XRC domain ib_core allocated for one of our devices.
    unsafe extern "C" fn alloc_xrcd(
        xrcd: *mut bindings::ib_xrcd,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: NULL or the udata of this call.
            if let Some(udata) = unsafe { UserData::from_raw(udata) } {
                udata.expect_no_request()?;
            }
            // SAFETY: ib_core sets `device` before calling us.
            let dev = unsafe { Self::dev((*xrcd).device) };
            let data = T::alloc_xrcd(dev)?;
            // SAFETY: Allocated with `size_ib_xrcd`, state not initialised.
            unsafe { IbObject::<bindings::ib_xrcd, T::Xrcd>::init(xrcd, data)? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `xrcd` is an XRC domain `alloc_xrcd` initialised.
    unsafe extern "C" fn dealloc_xrcd(
        xrcd: *mut bindings::ib_xrcd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        let dev = unsafe { Self::dev((*xrcd).device) };
        // SAFETY: Initialised by `alloc_xrcd`.
        T::dealloc_xrcd(dev, unsafe {
            IbObject::<bindings::ib_xrcd, T::Xrcd>::data(xrcd)
        });
        // SAFETY: Not used after this.
        unsafe { IbObject::<bindings::ib_xrcd, T::Xrcd>::drop_data(xrcd) };
        0
    }

    /// # Safety
    ///
    /// `cq` is a CQ ib_core allocated for one of our devices; `attr` valid.
    unsafe extern "C" fn create_cq(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            // Kernel consumers pass no attribute bundle; user CQs do.
            let mut user = if attrs.is_null() {
                None
            } else {
                // SAFETY: A user call's bundle, whose udata names the
                // process's context on this device.
                unsafe { UserCall::<T>::from_raw(bindings::rust_ext_attrs_udata(attrs)) }
            };
            if let Some(u) = &user {
                u.udata.expect_no_request()?;
            }
            // SAFETY: ib_core sets `device` before calling us.
            let dev = unsafe { Self::dev((*cq).device) };
            // SAFETY: Valid attribute (contract).
            let (entries, flags) = unsafe { ((*attr).cqe, (*attr).flags) };
            let stamp =
                bindings::ib_uverbs_ex_create_cq_flags_IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
            // Completion timestamps at most; no ignored overruns.
            if flags & !stamp != 0 {
                return Err(eopnotsupp());
            }
            let init = CqInit {
                entries,
                timestamps: flags & stamp != 0,
            };
            let (data, granted) = T::create_cq(dev, CqHandle::new(cq), init, user.as_mut())?;
            // SAFETY: Allocated with `size_ib_cq`; the CQ's own fields are
            // ours to set in `create_cq`.
            unsafe {
                // CAST: bounded by `c_int::MAX` just before.
                (*cq).cqe = granted.min(c_int::MAX as u32) as c_int;
                IbObject::<bindings::ib_cq, T::Cq>::init(cq, data)?;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `cq` is a CQ `create_cq` initialised.
    unsafe extern "C" fn destroy_cq(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says.
            let dev = unsafe { Self::dev((*cq).device) };
            // SAFETY: Initialised by `create_cq`.
            let handle =
                T::destroy_cq(dev, unsafe { IbObject::<bindings::ib_cq, T::Cq>::data(cq) })?;
            // The handle proves the driver let go of the object.
            debug_assert!(handle.as_raw() == cq);
            // SAFETY: Not used after this: the driver gave the handle back.
            unsafe { IbObject::<bindings::ib_cq, T::Cq>::drop_data(cq) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `cq` is a process's CQ `create_cq` initialised; `udata` the call's.
    unsafe extern "C" fn resize_user_cq(
        cq: *mut bindings::ib_cq,
        cqe: c_uint,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The running call's udata (contract).
            let mut user = unsafe { UserCall::<T>::from_raw(udata) }.ok_or(EINVAL)?;
            // SAFETY: As the function's contract says.
            let (dev, data) = unsafe {
                (
                    Self::dev((*cq).device),
                    IbObject::<bindings::ib_cq, T::Cq>::data(cq),
                )
            };
            let granted = T::resize_user_cq(dev, data, cqe, &mut user)?;
            // SAFETY: The CQ's own fields are the driver's to set in its
            // callbacks; ib_uverbs reports `cqe` back.
            // CAST: bounded by `c_int::MAX` just before.
            unsafe { (*cq).cqe = granted.min(c_int::MAX as u32) as c_int };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `cq` is a live CQ of ours; `wc` has room for `num` completions.
    unsafe extern "C" fn poll_cq(
        cq: *mut bindings::ib_cq,
        num: c_int,
        wc: *mut bindings::ib_wc,
    ) -> c_int {
        let n = usize::try_from(num).unwrap_or(0);
        if n == 0 || wc.is_null() {
            return 0;
        }
        // SAFETY: As the function's contract says.
        let (dev, data) = unsafe {
            (
                Self::dev((*cq).device),
                IbObject::<bindings::ib_cq, T::Cq>::data(cq),
            )
        };
        // SAFETY: `wc` has room for `n` entries, ours for the call.
        let out = unsafe { core::slice::from_raw_parts_mut(wc, n) };
        let mut writer = WcWriter::new(out);
        T::poll_cq(dev, data, &mut writer);
        // CAST: at most the entries ib_core asked for, a c_int.
        writer.written() as c_int
    }

    /// # Safety
    ///
    /// `cq` is a live CQ of ours.
    unsafe extern "C" fn req_notify_cq(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        let (dev, data) = unsafe {
            (
                Self::dev((*cq).device),
                IbObject::<bindings::ib_cq, T::Cq>::data(cq),
            )
        };
        let solicited = flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED;
        let pending = T::req_notify_cq(dev, data, solicited);
        c_int::from(pending && flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0)
    }

    /// # Safety
    ///
    /// `qp` is a QP ib_core allocated (with `device`, `pd` set) for one of
    /// our devices; `attr` is valid, its CQs ours.
    unsafe extern "C" fn create_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: NULL or this call's udata, on our device.
            let mut user = unsafe { UserCall::<T>::from_raw(udata) };
            if let Some(u) = &user {
                u.udata.expect_no_request()?;
            }
            // SAFETY: As the function's contract says.
            let a = unsafe { &mut *attr };
            let kind = QpKind::from_raw(a.qp_type).ok_or_else(eopnotsupp)?;
            if kind == QpKind::XrcTgt {
                // SAFETY: As the function's contract says; ib_core created
                // no queues for it (`a.xrcd` set instead of a PD).
                return unsafe { Self::create_xrc_target(qp, a) };
            }
            // An XRC initiator receives nothing: ib_core gives it no
            // receive CQ.
            if kind == QpKind::XrcIni && a.recv_cq.is_null() {
                a.recv_cq = a.send_cq;
            }
            if a.send_cq.is_null() || a.recv_cq.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: `device` and `pd` are set by ib_core; the CQs and PD
            // are ours and initialised (ib_core holds references on them).
            let (dev, init) = unsafe {
                (
                    Self::dev((*qp).device),
                    QpInit {
                        kind,
                        pd: IbObject::<bindings::ib_pd, T::Pd>::data((*qp).pd),
                        send_cq: IbObject::<bindings::ib_cq, T::Cq>::data(a.send_cq),
                        recv_cq: IbObject::<bindings::ib_cq, T::Cq>::data(a.recv_cq),
                        // ib_core holds a reference on the SRQ too.
                        srq: (!a.srq.is_null())
                            .then(|| IbObject::<bindings::ib_srq, T::Srq>::data(a.srq)),
                        caps: QpCaps {
                            max_send_wr: a.cap.max_send_wr,
                            max_recv_wr: a.cap.max_recv_wr,
                            max_send_sge: a.cap.max_send_sge,
                            max_recv_sge: a.cap.max_recv_sge,
                            max_inline_data: a.cap.max_inline_data,
                        },
                        signal_all: a.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
                    },
                )
            };
            // No creation flags (multicast loopback blocking, LSO, ...).
            if a.create_flags != 0 {
                return Err(eopnotsupp());
            }
            let (data, qpn, caps) = T::create_qp(dev, QpHandle::new(qp), &init, user.as_mut())?;
            a.cap.max_send_wr = caps.max_send_wr;
            a.cap.max_recv_wr = caps.max_recv_wr;
            a.cap.max_send_sge = caps.max_send_sge;
            a.cap.max_recv_sge = caps.max_recv_sge;
            a.cap.max_inline_data = caps.max_inline_data;
            // SAFETY: Allocated with `size_ib_qp`; `qp_num` is ours to set.
            unsafe {
                (*qp).qp_num = qpn;
                IbObject::<bindings::ib_qp, T::Qp>::init(qp, data)?;
            }
            Ok(0)
        })
    }

    /// `create_qp` of an XRC target.
    ///
    /// # Safety
    ///
    /// As `create_qp`'s, with `a` an XRC target's attributes.
    unsafe fn create_xrc_target(
        qp: *mut bindings::ib_qp,
        a: &bindings::ib_qp_init_attr,
    ) -> Result<c_int> {
        if !T::HAS_ALLOC_XRCD || a.xrcd.is_null() {
            return Err(EINVAL);
        }
        if a.create_flags != 0 {
            return Err(eopnotsupp());
        }
        // SAFETY: `device` is set by ib_core; the domain is ours and
        // initialised (ib_core holds a reference on it).
        let (dev, xrcd) = unsafe {
            (
                Self::dev((*qp).device),
                IbObject::<bindings::ib_xrcd, T::Xrcd>::data(a.xrcd),
            )
        };
        let (data, qpn) = T::create_xrc_target(dev, QpHandle::new(qp), xrcd)?;
        // SAFETY: Allocated with `size_ib_qp`; `qp_num` is ours to set.
        unsafe {
            (*qp).qp_num = qpn;
            IbObject::<bindings::ib_qp, T::Qp>::init(qp, data)?;
        }
        Ok(0)
    }

    /// # Safety
    ///
    /// `qp` is a live QP of ours; `attr` valid for the fields `mask` names.
    unsafe extern "C" fn modify_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: c_int,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: NULL or this call's udata.
            if let Some(udata) = unsafe { UserData::from_raw(udata) } {
                // A process's QP changes as a kernel one does.
                udata.expect_no_request()?;
            }
            // SAFETY: As the function's contract says.
            let (dev, data, attrs) = unsafe {
                (
                    Self::dev((*qp).device),
                    IbObject::<bindings::ib_qp, T::Qp>::data(qp),
                    // CAST: `enum ib_qp_attr_mask` bits, kept in an int.
                    QpAttrs::from_raw(attr, mask as u32),
                )
            };
            T::modify_qp(dev, data, &attrs)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `qp` is a QP `create_qp` initialised; `gid` readable.
    unsafe extern "C" fn attach_mcast(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        unsafe { Self::with_group(qp, gid, T::attach_mcast) }
    }

    /// # Safety
    ///
    /// `qp` is a QP `create_qp` initialised; `gid` readable.
    unsafe extern "C" fn detach_mcast(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        unsafe { Self::with_group(qp, gid, T::detach_mcast) }
    }

    /// Calls `op` (attach or detach) for QP `qp` and group `gid`.
    ///
    /// # Safety
    ///
    /// As `attach_mcast`.
    unsafe fn with_group(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        op: fn(&IbDevice<T>, &T::Qp, &[u8; 16]) -> Result,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says; every bit pattern
            // of the union is a valid `raw`.
            let (dev, data, gid) = unsafe {
                (
                    Self::dev((*qp).device),
                    IbObject::<bindings::ib_qp, T::Qp>::data(qp),
                    (*gid).raw,
                )
            };
            op(dev, data, &gid)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `qp` is a QP `create_qp` initialised.
    unsafe extern "C" fn destroy_qp(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says.
            let dev = unsafe { Self::dev((*qp).device) };
            // SAFETY: Initialised by `create_qp`.
            let handle =
                T::destroy_qp(dev, unsafe { IbObject::<bindings::ib_qp, T::Qp>::data(qp) })?;
            // The handle proves the driver let go of the object.
            debug_assert!(handle.as_raw() == qp);
            // SAFETY: Not used after this: the driver gave the handle back.
            unsafe { IbObject::<bindings::ib_qp, T::Qp>::drop_data(qp) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `qp` is a live QP of ours; `wr` a valid chain; `bad` writable.
    unsafe extern "C" fn post_send(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad: *mut *const bindings::ib_send_wr,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        let (dev, data, kind) = unsafe {
            (
                Self::dev((*qp).device),
                IbObject::<bindings::ib_qp, T::Qp>::data(qp),
                QpKind::from_raw((*qp).qp_type).unwrap_or(QpKind::Rc),
            )
        };
        // SAFETY: A valid chain for the call (contract).
        let mut wrs = unsafe { SendWrs::<T>::new(wr, kind) };
        match T::post_send(dev, data, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                // SAFETY: `bad` is writable (contract).
                unsafe { *bad = wrs.current() };
                e.to_errno()
            }
        }
    }

    /// # Safety
    ///
    /// As `post_send`.
    unsafe extern "C" fn post_recv(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        let (dev, data) = unsafe {
            (
                Self::dev((*qp).device),
                IbObject::<bindings::ib_qp, T::Qp>::data(qp),
            )
        };
        // SAFETY: A valid chain and a writable `bad` (contract).
        unsafe { post_recv_chain(wr, bad, |wrs| T::post_recv(dev, data, wrs)) }
    }

    /// # Safety
    ///
    /// `srq` is an SRQ ib_core allocated (with `device`, `pd` set) for one
    /// of our devices; `attr` is valid.
    unsafe extern "C" fn create_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: NULL or this call's udata, on our device.
            let mut user = unsafe { UserCall::<T>::from_raw(udata) };
            if let Some(u) = &user {
                u.udata.expect_no_request()?;
            }
            // SAFETY: As the function's contract says.
            let a = unsafe { &mut *attr };
            let is_xrc = match a.srq_type {
                bindings::ib_srq_type_IB_SRQT_BASIC => false,
                bindings::ib_srq_type_IB_SRQT_XRC if T::HAS_ALLOC_XRCD => true,
                _ => return Err(eopnotsupp()),
            };
            // SAFETY: `device` and `pd` are set by ib_core; the PD is ours
            // and initialised (ib_core holds a reference on it).
            let (dev, pd) = unsafe {
                (
                    Self::dev((*srq).device),
                    IbObject::<bindings::ib_pd, T::Pd>::data((*srq).pd),
                )
            };
            let xrc = if is_xrc {
                // SAFETY: ib_core set them from the attributes and holds
                // references on the domain and the CQ, ours and
                // initialised (both checked non-NULL here).
                unsafe {
                    let (xrcd, cq) = ((*srq).ext.__bindgen_anon_1.xrc.xrcd, (*srq).ext.cq);
                    if xrcd.is_null() || cq.is_null() {
                        return Err(EINVAL);
                    }
                    Some(XrcSrq {
                        xrcd: IbObject::<bindings::ib_xrcd, T::Xrcd>::data(xrcd),
                        cq: IbObject::<bindings::ib_cq, T::Cq>::data(cq),
                    })
                }
            } else {
                None
            };
            let asked = SrqAttr::from_raw(&a.attr);
            let (data, granted, srqn) =
                T::create_srq(dev, SrqHandle::new(srq), pd, asked, xrc, user.as_mut())?;
            granted.write(&mut a.attr);
            if is_xrc {
                // SAFETY: An XRC SRQ's; what ib_uverbs reports as its
                // number.
                unsafe { (*srq).ext.__bindgen_anon_1.xrc.srq_num = srqn };
            }
            // SAFETY: Allocated with `size_ib_srq`, state not initialised.
            unsafe { IbObject::<bindings::ib_srq, T::Srq>::init(srq, data)? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `srq` is a live SRQ of ours; `attr` valid for the fields `mask`
    /// names.
    unsafe extern "C" fn modify_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: NULL or this call's udata.
            if let Some(udata) = unsafe { UserData::from_raw(udata) } {
                udata.expect_no_request()?;
            }
            let known =
                bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR | bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;
            if mask & !known != 0 {
                return Err(EINVAL);
            }
            // SAFETY: As the function's contract says.
            let (dev, data, a) = unsafe {
                (
                    Self::dev((*srq).device),
                    IbObject::<bindings::ib_srq, T::Srq>::data(srq),
                    SrqAttr::from_raw(&*attr),
                )
            };
            let change = SrqChange {
                max_wr: (mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0).then_some(a.max_wr),
                limit: (mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0).then_some(a.limit),
            };
            T::modify_srq(dev, data, change)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `srq` is a live SRQ of ours; `attr` writable.
    unsafe extern "C" fn query_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says.
            let (dev, data) = unsafe {
                (
                    Self::dev((*srq).device),
                    IbObject::<bindings::ib_srq, T::Srq>::data(srq),
                )
            };
            let a = T::query_srq(dev, data)?;
            // SAFETY: Writable (contract).
            a.write(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `srq` is an SRQ `create_srq` initialised.
    unsafe extern "C" fn destroy_srq(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says.
            let dev = unsafe { Self::dev((*srq).device) };
            // SAFETY: Initialised by `create_srq`.
            let handle = T::destroy_srq(dev, unsafe {
                IbObject::<bindings::ib_srq, T::Srq>::data(srq)
            })?;
            // The handle proves the driver let go of the object.
            debug_assert!(handle.as_raw() == srq);
            // SAFETY: Not used after this: the driver gave the handle back.
            unsafe { IbObject::<bindings::ib_srq, T::Srq>::drop_data(srq) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `srq` is a live SRQ of ours; `wr` a valid chain; `bad` writable.
    unsafe extern "C" fn post_srq_recv(
        srq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        let (dev, data) = unsafe {
            (
                Self::dev((*srq).device),
                IbObject::<bindings::ib_srq, T::Srq>::data(srq),
            )
        };
        // SAFETY: A valid chain and a writable `bad` (contract).
        unsafe { post_recv_chain(wr, bad, |wrs| T::post_srq_recv(dev, data, wrs)) }
    }

    /// # Safety
    ///
    /// `mw` is an MW ib_core allocated (with `device`, `pd`, `type_` set)
    /// for one of our devices.
    unsafe extern "C" fn alloc_mw(
        mw: *mut bindings::ib_mw,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: NULL or this call's udata.
            if let Some(udata) = unsafe { UserData::from_raw(udata) } {
                udata.expect_no_request()?;
            }
            // SAFETY: As the function's contract says; the PD is ours and
            // initialised (ib_core holds a reference on it).
            let (dev, pd, kind) = unsafe {
                (
                    Self::dev((*mw).device),
                    IbObject::<bindings::ib_pd, T::Pd>::data((*mw).pd),
                    MwKind::from_raw((*mw).type_).ok_or(EINVAL)?,
                )
            };
            let (data, rkey) = T::alloc_mw(dev, pd, kind)?;
            // SAFETY: Allocated with `size_ib_mw`; `rkey` is ours to set.
            unsafe {
                (*mw).rkey = rkey;
                IbObject::<bindings::ib_mw, T::Mw>::init(mw, data)?;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `mw` is an MW `alloc_mw` initialised.
    unsafe extern "C" fn dealloc_mw(mw: *mut bindings::ib_mw) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says.
            let (dev, data) = unsafe {
                (
                    Self::dev((*mw).device),
                    IbObject::<bindings::ib_mw, T::Mw>::data(mw),
                )
            };
            T::dealloc_mw(dev, data)?;
            // SAFETY: Not used after this.
            unsafe { IbObject::<bindings::ib_mw, T::Mw>::drop_data(mw) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ah` is an AH ib_core allocated for one of our devices; `attr`
    /// valid.
    unsafe extern "C" fn create_ah(
        ah: *mut bindings::ib_ah,
        attr: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: NULL or this call's udata, on our device.
            let mut user = unsafe { UserCall::<T>::from_raw(udata) };
            if let Some(u) = &user {
                u.udata.expect_no_request()?;
            }
            // SAFETY: As the function's contract says.
            let (dev, path) = unsafe {
                (
                    Self::dev((*ah).device),
                    AddressPath::from_raw((*attr).ah_attr),
                )
            };
            let data = T::create_ah(dev, &path, user.as_mut())?;
            // SAFETY: Allocated with `size_ib_ah`, not initialised.
            unsafe { IbObject::<bindings::ib_ah, T::Ah>::init(ah, data)? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ah` is an AH `create_ah` initialised.
    unsafe extern "C" fn destroy_ah(ah: *mut bindings::ib_ah, _flags: u32) -> c_int {
        // SAFETY: As the function's contract says.
        let dev = unsafe { Self::dev((*ah).device) };
        // SAFETY: Initialised by `create_ah`.
        T::destroy_ah(dev, unsafe { IbObject::<bindings::ib_ah, T::Ah>::data(ah) });
        // SAFETY: Not used after this.
        unsafe { IbObject::<bindings::ib_ah, T::Ah>::drop_data(ah) };
        0
    }

    /// Publishes a new MR: an allocation of this layer whose `ib_mr` ib_core
    /// completes.
    fn new_mr(made: Result<(impl PinInit<T::Mr, Error>, MrKeys)>) -> *mut bindings::ib_mr {
        match made.and_then(|(data, keys)| {
            IbObject::<bindings::ib_mr, T::Mr>::boxed(data).map(|p| (p, keys))
        }) {
            Ok((mr, keys)) => {
                // SAFETY: Just allocated, zeroed, ours until returned.
                unsafe {
                    (*mr).lkey = keys.lkey;
                    (*mr).rkey = keys.rkey;
                }
                mr
            }
            Err(e) => err_ptr(e.to_errno()),
        }
    }

    /// # Safety
    ///
    /// `pd` is a live PD of ours.
    unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: As the function's contract says.
        let (dev, data) = unsafe {
            (
                Self::dev((*pd).device),
                IbObject::<bindings::ib_pd, T::Pd>::data(pd),
            )
        };
        // CAST: access flags, a bit mask kept in an int.
        Self::new_mr(T::get_dma_mr(dev, data, Access::from_raw(access as u32)))
    }

    /// # Safety
    ///
    /// `pd` is a live PD of ours.
    unsafe extern "C" fn alloc_mr(
        pd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return err_ptr(EINVAL.to_errno());
        }
        // SAFETY: As the function's contract says.
        let (dev, data) = unsafe {
            (
                Self::dev((*pd).device),
                IbObject::<bindings::ib_pd, T::Pd>::data(pd),
            )
        };
        Self::new_mr(T::alloc_mr(dev, data, max_num_sg))
    }

    /// # Safety
    ///
    /// `mr` is one of our MRs (from `new_mr`).
    unsafe extern "C" fn set_page(mr: *mut bindings::ib_mr, addr: u64) -> c_int {
        // SAFETY: As the function's contract says.
        let data = unsafe { IbObject::<bindings::ib_mr, T::Mr>::data(mr) };
        match T::mr_add_page(data, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `mr` is one of our MRs; `sg` a valid list of `sg_nents` entries;
    /// `sg_offset` NULL or valid.
    unsafe extern "C" fn map_mr_sg(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: c_int,
        sg_offset: *mut c_uint,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        T::mr_clear_pages(unsafe { IbObject::<bindings::ib_mr, T::Mr>::data(mr) });
        // SAFETY: As the function's contract says; `set_page` is called
        // synchronously for this MR only.
        unsafe { bindings::ib_sg_to_pages(mr, sg, sg_nents, sg_offset, Some(Self::set_page)) }
    }

    /// # Safety
    ///
    /// `mr` is one of our MRs (from `new_mr`); nothing uses it afterwards.
    unsafe extern "C" fn dereg_mr(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says.
            let (dev, data) = unsafe {
                (
                    Self::dev((*mr).device),
                    IbObject::<bindings::ib_mr, T::Mr>::data(mr),
                )
            };
            T::dereg_mr(dev, data)?;
            // SAFETY: Allocated by `new_mr`; freed once.
            unsafe { IbObject::<bindings::ib_mr, T::Mr>::free_boxed(mr) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `qp` is a live QP of ours; `attr` and `init` are writable.
    unsafe extern "C" fn query_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says.
            let (dev, data) = unsafe {
                (
                    Self::dev((*qp).device),
                    IbObject::<bindings::ib_qp, T::Qp>::data(qp),
                )
            };
            let q = T::query_qp(dev, data)?;
            let cap = bindings::ib_qp_cap {
                max_send_wr: q.caps.max_send_wr,
                max_recv_wr: q.caps.max_recv_wr,
                max_send_sge: q.caps.max_send_sge,
                max_recv_sge: q.caps.max_recv_sge,
                max_inline_data: q.caps.max_inline_data,
                max_rdma_ctxs: 0,
            };
            // SAFETY: Writable (contract); all-zero is valid for both.
            unsafe {
                *attr = core::mem::zeroed();
                *init = core::mem::zeroed();
                let a = &mut *attr;
                a.qp_state = q.state.to_raw();
                a.cur_qp_state = q.state.to_raw();
                a.path_mtu = ib_mtu(q.path_mtu);
                a.dest_qp_num = q.dest_qpn;
                a.rq_psn = q.rq_psn;
                a.sq_psn = q.sq_psn;
                a.qkey = q.qkey;
                a.max_rd_atomic = q.max_rd_atomic;
                a.max_dest_rd_atomic = q.max_dest_rd_atomic;
                a.timeout = q.retry.timeout;
                a.retry_cnt = q.retry.retry_cnt;
                a.rnr_retry = q.retry.rnr_retry;
                a.min_rnr_timer = q.retry.min_rnr_timer;
                // CAST: access flags, a bit mask kept in an int.
                a.qp_access_flags = q.access.to_raw() as c_int;
                a.port_num = qp_port((*qp).port);
                if let Some(path) = q.path {
                    a.ah_attr = path.to_raw(a.port_num);
                }
                a.cap = cap;
                let i = &mut *init;
                i.qp_type = q.kind.to_raw();
                i.cap = cap;
                i.send_cq = (*qp).send_cq;
                i.recv_cq = (*qp).recv_cq;
                i.port_num = qp_port((*qp).port);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for one of our devices.
    unsafe extern "C" fn alloc_hw_port_stats(
        _ibdev: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        let descs: *const StatDesc = T::HW_STATS.as_ptr();
        // SAFETY: The descriptors are `'static`; `StatDesc` is
        // `repr(transparent)` over `rdma_stat_desc`. Lifespan: 10 ms.
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                descs.cast(),
                // CAST: a count of counters the driver declares (tens).
                T::HW_STATS.len() as c_int,
                kernel::time::msecs_to_jiffies(10),
            )
        }
    }

    /// # Safety
    ///
    /// `ibdev` is a registered device of ours; `stats` came from
    /// `alloc_hw_port_stats`.
    unsafe extern "C" fn get_hw_stats(
        ibdev: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: c_int,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        let dev = unsafe { Self::dev(ibdev) };
        let n = T::HW_STATS.len();
        // SAFETY: The struct was allocated with `n` values after it.
        let values = unsafe { (*stats).value.as_mut_slice(n) };
        T::hw_stats(dev, port, values);
        // CAST: a count of counters the driver declares (tens).
        n as c_int
    }

    /// # Safety
    ///
    /// `pd` is a live PD of ours; ib_core's call from the process whose
    /// memory `start..start + length` names.
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        virt: u64,
        access: c_int,
        dmah: *mut bindings::ib_dmah,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // CAST: access flags, a bit mask kept in an int.
        let on_demand = access as u32 & bindings::ib_access_flags_IB_ACCESS_ON_DEMAND != 0;
        // CAST: as above.
        let access = access as u32 & !bindings::ib_access_flags_IB_ACCESS_ON_DEMAND;
        if access & !USER_MR_ACCESS != 0 || !dmah.is_null() {
            return err_ptr(EOPNOTSUPP_ERRNO);
        }
        // SAFETY: NULL or this call's udata.
        if let Some(udata) = unsafe { UserData::from_raw(udata) } {
            if let Err(e) = udata.expect_no_request() {
                return err_ptr(e.to_errno());
            }
        }
        // SAFETY: As the function's contract says.
        let (ibdev, data) = unsafe { ((*pd).device, IbObject::<bindings::ib_pd, T::Pd>::data(pd)) };
        if on_demand {
            if !T::HAS_REG_USER_MR_ON_DEMAND {
                return err_ptr(EOPNOTSUPP_ERRNO);
            }
            // SAFETY: A registered device of ours, in the calling
            // process's call.
            let (dev, pin) = unsafe { (Self::dev(ibdev), UserPin::new(ibdev)) };
            let range = UserRange {
                addr: start,
                len: length,
                iova: virt,
            };
            return Self::new_mr(T::reg_user_mr_on_demand(
                dev,
                data,
                &pin,
                range,
                Access::from_raw(access),
            ));
        }
        // SAFETY: A registered device of ours, in the calling process.
        // CAST: access flags, a bit mask kept in an int.
        let mem = match unsafe { UserMemory::get(ibdev, start, length, access as i32) } {
            Ok(mem) => mem,
            Err(e) => return err_ptr(e.to_errno()),
        };
        // SAFETY: A registered device of ours.
        let dev = unsafe { Self::dev(ibdev) };
        Self::new_mr(T::reg_user_mr(
            dev,
            data,
            mem,
            virt,
            Access::from_raw(access),
        ))
    }

    /// `ibv_advise_mr`: prefetch (map for the device now) the memory
    /// `sg_list` names, faulting it in unless the advice says not to.
    /// Done before returning, whether or not `IB_UVERBS_ADVISE_MR_FLAG_FLUSH`
    /// asked for that.
    ///
    /// # Safety
    ///
    /// `pd` is a live PD of ours; `sg_list` holds `num_sge` entries.
    unsafe extern "C" fn advise_mr(
        pd: *mut bindings::ib_pd,
        advice: bindings::ib_uverbs_advise_mr_advice,
        flags: u32,
        sg_list: *mut bindings::ib_sge,
        num_sge: u32,
        _attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        let (write, fault) = match advice {
            bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH => {
                (false, true)
            }
            bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE => {
                (true, true)
            }
            bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT => {
                (false, false)
            }
            _ => return EOPNOTSUPP_ERRNO,
        };
        if flags & !bindings::ib_uverbs_advise_mr_flag_IB_UVERBS_ADVISE_MR_FLAG_FLUSH != 0 {
            return EOPNOTSUPP_ERRNO;
        }
        let mut sges = KVec::new();
        for i in 0..num_sge as usize {
            // SAFETY: `sg_list` holds `num_sge` entries (the contract).
            let s = unsafe { &*sg_list.add(i) };
            let sge = Sge {
                addr: s.addr,
                len: s.length,
                lkey: s.lkey,
            };
            if let Err(e) = sges.push(sge, GFP_KERNEL) {
                return Error::from(e).to_errno();
            }
        }
        // SAFETY: A live PD of ours (the contract), on our device.
        let (dev, data) = unsafe {
            (
                Self::dev((*pd).device),
                IbObject::<bindings::ib_pd, T::Pd>::data(pd),
            )
        };
        match T::advise_mr(dev, data, &sges, write, fault) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// `ibv_rereg_mr`, in place: the region keeps its keys; a range
    /// (`IB_MR_REREG_TRANS`), PD or access not named in `flags` stays as
    /// it was.
    ///
    /// # Safety
    ///
    /// `mr` is a live MR of ours, `pd` a live PD of ours (the new one, or
    /// `mr`'s own); ib_core's call from the process that owns `mr`.
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn rereg_user_mr(
        mr: *mut bindings::ib_mr,
        flags: c_int,
        start: u64,
        length: u64,
        virt: u64,
        access: c_int,
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // CAST: `IB_MR_REREG_*` bits, kept in an int.
        let flags = flags as u32;
        let change_access = flags & bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS != 0;
        if flags & !bindings::ib_mr_rereg_flags_IB_MR_REREG_SUPPORTED != 0
            || (change_access && access as u32 & !USER_MR_ACCESS != 0)
        {
            return err_ptr(EOPNOTSUPP_ERRNO);
        }
        // SAFETY: NULL or this call's udata.
        if let Some(udata) = unsafe { UserData::from_raw(udata) } {
            if let Err(e) = udata.expect_no_request() {
                return err_ptr(e.to_errno());
            }
        }
        // SAFETY: As the function's contract says: both live and ours, on
        // a registered device, in the owning process's call.
        let (dev, data, pd_data, pin) = unsafe {
            (
                Self::dev((*mr).device),
                IbObject::<bindings::ib_mr, T::Mr>::data(mr),
                IbObject::<bindings::ib_pd, T::Pd>::data(pd),
                UserPin::new((*mr).device),
            )
        };
        let range =
            (flags & bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS != 0).then_some(UserRange {
                addr: start,
                len: length,
                iova: virt,
            });
        // CAST: access flags, a bit mask kept in an int.
        let access = change_access.then(|| Access::from_raw(access as u32));
        match T::rereg_user_mr(dev, data, pd_data, &pin, range, access) {
            // NULL: the same region, changed in place.
            Ok(()) => core::ptr::null_mut(),
            Err(e) => err_ptr(e.to_errno()),
        }
    }

    /// # Safety
    ///
    /// Called by ib_core; nothing is dereferenced.
    unsafe extern "C" fn refuse_reg_user_mr(
        _pd: *mut bindings::ib_pd,
        _start: u64,
        _length: u64,
        _virt: u64,
        _access: c_int,
        _dmah: *mut bindings::ib_dmah,
        _udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // No user-space provider: kernel consumers only.
        err_ptr(EOPNOTSUPP_ERRNO)
    }
}

/// The access flags a process's memory region may have (ib_core refuses
/// `IB_ACCESS_FLUSH_*` a device does not report before it asks).
const USER_MR_ACCESS: u32 = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
    | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
    | bindings::ib_access_flags_IB_ACCESS_REMOTE_READ
    | bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC
    | bindings::ib_access_flags_IB_ACCESS_MW_BIND
    | bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL
    | bindings::ib_access_flags_IB_ACCESS_OPTIONAL;

/// The port of a QP as ib_core records it (`qp->port`, 0 until a modify
/// sets it): port 1 then, the one a single-port device has.
/// Runs `post` over the receive chain at `wr`; on failure `*bad` names
/// the request it stopped at.
///
/// # Safety
///
/// `wr` is a valid chain for the call; `bad` is writable.
unsafe fn post_recv_chain(
    wr: *const bindings::ib_recv_wr,
    bad: *mut *const bindings::ib_recv_wr,
    post: impl FnOnce(&mut RecvWrs<'_>) -> Result,
) -> c_int {
    // SAFETY: A valid chain (contract).
    let mut wrs = unsafe { RecvWrs::new(wr) };
    match post(&mut wrs) {
        Ok(()) => 0,
        Err(e) => {
            // SAFETY: `bad` is writable (contract).
            unsafe { *bad = wrs.current() };
            e.to_errno()
        }
    }
}

fn qp_port(port: u32) -> u32 {
    port.max(1)
}

/// `ERR_PTR(errno)`.
fn err_ptr<P>(errno: c_int) -> *mut P {
    // CAST: ERR_PTR: a negative errno sign-extended to a pointer's width.
    core::ptr::without_provenance_mut(errno as isize as usize)
}
