// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: `struct ib_device` with a Rust driver state after it, and
//! `ib_device_ops` dispatched to a Rust trait.
//!
//! The pattern of [`super::netdev`]: ib_core allocates the device
//! (`ib_alloc_device`, which the driver's struct must start with), the
//! driver state `T` is pinned-initialised in place behind it, and dropped
//! in place once `ib_unregister_device` has returned, so every callback
//! sees a live `T`. One port, RoCEv2 only: the link layer is Ethernet and
//! the port's GIDs are the addresses of the net device bound to it.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    device::Device,
    error::from_result,
    ffi::{c_int, c_void},
    prelude::*,
    types::Opaque,
};

use crate::linux::bindings;
use crate::linux::net::netdev::NetDev;
use crate::linux::rdma::verbs::{
    ib_mtu, Access, AddressPath, CqHandle, IbObject, MrKeys, QpAttrs, QpCaps, QpHandle, QpInit,
    QpKind, QpQuery, RecvWrs, SendWrs, StatDesc, WcWriter,
};

/// The device's limits, reported by `query_device` (`ib_device_attr`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DeviceAttr {
    /// Firmware version.
    pub(crate) fw_ver: u64,
    /// Vendor ID (the PCI vendor).
    pub(crate) vendor_id: u32,
    /// Vendor part ID.
    pub(crate) vendor_part_id: u32,
    /// Hardware version.
    pub(crate) hw_ver: u32,
    /// Largest memory region in bytes.
    pub(crate) max_mr_size: u64,
    /// Page sizes a memory region may use (bit n: 2^n bytes).
    pub(crate) page_size_cap: u64,
    /// Queue pairs.
    pub(crate) max_qp: u32,
    /// Work requests per queue.
    pub(crate) max_qp_wr: u32,
    /// Scatter/gather entries per work request.
    pub(crate) max_sge: u32,
    /// Completion queues.
    pub(crate) max_cq: u32,
    /// Entries per completion queue.
    pub(crate) max_cqe: u32,
    /// Memory regions.
    pub(crate) max_mr: u32,
    /// Protection domains.
    pub(crate) max_pd: u32,
    /// Address handles.
    pub(crate) max_ah: u32,
    /// Outstanding RDMA READs per QP (requester and responder).
    pub(crate) max_qp_rd_atom: u32,
    /// Pages of a fast-registration page list; 0 if the device has no
    /// fast registration (`IB_DEVICE_MEM_MGT_EXTENSIONS`).
    pub(crate) max_fast_reg_page_list_len: u32,
    /// Key 0 reaches all memory by bus address for local access, for
    /// every PD (`IBK_LOCAL_DMA_LKEY`).
    pub(crate) local_dma_lkey_0: bool,
}

/// What `query_port` reports beyond what the net device says.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PortAttr {
    /// Entries of the GID table.
    pub(crate) gid_tbl_len: u32,
    /// Largest RoCE MTU in bytes (256..=4096, a power of two).
    pub(crate) max_mtu: u32,
}

/// A RoCEv2 GID table entry ib_core asks the driver to program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GidEntry {
    /// Index in the port's table.
    pub(crate) index: u32,
    /// The address (IPv6, or IPv4-mapped).
    pub(crate) gid: [u8; 16],
}

/// What an RDMA device driver does, called by ib_core.
///
/// Objects ib_core allocates (PD, CQ, QP, AH) hold the driver's state
/// ([`IbDeviceOps::Pd`]...) after the ib_core struct; memory regions are
/// allocated by this layer. Process context unless a method says otherwise.
pub(crate) trait IbDeviceOps: Send + Sync + Sized + 'static {
    /// A protection domain's state.
    type Pd: Send + Sync;
    /// A completion queue's state.
    type Cq: Send + Sync;
    /// A queue pair's state.
    type Qp: Send + Sync;
    /// An address handle's state.
    type Ah: Send + Sync;
    /// A memory region's state.
    type Mr: Send + Sync;

    /// `query_device`: the device's limits.
    fn query_device(dev: &IbDevice<Self>) -> DeviceAttr;
    /// `query_port` of the only port.
    fn query_port(dev: &IbDevice<Self>) -> PortAttr;
    /// `add_gid`: program a RoCEv2 GID (may sleep).
    fn add_gid(dev: &IbDevice<Self>, entry: GidEntry) -> Result;
    /// `del_gid`: clear entry `index`.
    fn del_gid(dev: &IbDevice<Self>, index: u32) -> Result;

    /// `alloc_pd`.
    fn alloc_pd(dev: &IbDevice<Self>) -> Result<impl PinInit<Self::Pd, Error>>;
    /// `dealloc_pd`.
    fn dealloc_pd(dev: &IbDevice<Self>, pd: &Self::Pd);

    /// `create_cq` with room for at least `entries` completions: the
    /// state and the room granted. The driver keeps `cq` until
    /// [`IbDeviceOps::destroy_cq`] gives it back.
    fn create_cq(
        dev: &IbDevice<Self>,
        cq: CqHandle,
        entries: u32,
    ) -> Result<(impl PinInit<Self::Cq, Error>, u32)>;
    /// `destroy_cq`: returns the handle given at creation (so nothing can
    /// notify the CQ any more).
    fn destroy_cq(dev: &IbDevice<Self>, cq: &Self::Cq) -> Result<CqHandle>;
    /// `poll_cq`: moves completions into `out` (any context).
    fn poll_cq(dev: &IbDevice<Self>, cq: &Self::Cq, out: &mut WcWriter<'_>);
    /// `req_notify_cq`: arms the CQ; returns whether completions are
    /// already waiting (for `IB_CQ_REPORT_MISSED_EVENTS`). Any context.
    fn req_notify_cq(dev: &IbDevice<Self>, cq: &Self::Cq, solicited_only: bool) -> bool;

    /// `create_qp`: the state, the QP number and the sizes granted. The
    /// driver keeps `qp` until [`IbDeviceOps::destroy_qp`] gives it back.
    fn create_qp(
        dev: &IbDevice<Self>,
        qp: QpHandle,
        init: &QpInit<'_, Self>,
    ) -> Result<(impl PinInit<Self::Qp, Error>, u32, QpCaps)>;
    /// `modify_qp`.
    fn modify_qp(dev: &IbDevice<Self>, qp: &Self::Qp, attrs: &QpAttrs) -> Result;
    /// `query_qp`.
    fn query_qp(dev: &IbDevice<Self>, qp: &Self::Qp) -> Result<QpQuery>;
    /// `destroy_qp`: returns the handle given at creation.
    fn destroy_qp(dev: &IbDevice<Self>, qp: &Self::Qp) -> Result<QpHandle>;
    /// `post_send` (any context): on failure, the request the iterator
    /// yielded last is the one reported as failed.
    fn post_send(dev: &IbDevice<Self>, qp: &Self::Qp, wrs: &mut SendWrs<'_, Self>) -> Result;
    /// `post_recv` (any context), as `post_send`.
    fn post_recv(dev: &IbDevice<Self>, qp: &Self::Qp, wrs: &mut RecvWrs<'_>) -> Result;

    /// `create_ah` (may be atomic context).
    fn create_ah(dev: &IbDevice<Self>, path: &AddressPath)
        -> Result<impl PinInit<Self::Ah, Error>>;
    /// `destroy_ah`.
    fn destroy_ah(dev: &IbDevice<Self>, ah: &Self::Ah);

    /// `get_dma_mr`: a region over all memory by bus address.
    fn get_dma_mr(
        dev: &IbDevice<Self>,
        pd: &Self::Pd,
        access: Access,
    ) -> Result<(impl PinInit<Self::Mr, Error>, MrKeys)>;
    /// `alloc_mr` of type `IB_MR_TYPE_MEM_REG` with up to `max_pages`.
    fn alloc_mr(
        dev: &IbDevice<Self>,
        pd: &Self::Pd,
        max_pages: u32,
    ) -> Result<(impl PinInit<Self::Mr, Error>, MrKeys)>;
    /// `map_mr_sg` starts: forget the pages of the last mapping.
    fn mr_clear_pages(mr: &Self::Mr);
    /// `map_mr_sg` adds a page (bus address); fails when the MR is full.
    fn mr_add_page(mr: &Self::Mr, addr: u64) -> Result;
    /// `dereg_mr`.
    fn dereg_mr(dev: &IbDevice<Self>, mr: &Self::Mr) -> Result;

    /// The port's hardware counters (`rdma statistic`), by name.
    const HW_STATS: &'static [StatDesc];
    /// Their values, in [`IbDeviceOps::HW_STATS`] order (`out` has one
    /// slot per name). Process context.
    fn hw_stats(dev: &IbDevice<Self>, out: &mut [u64]);
}

/// An RDMA device whose driver struct holds a `T` after the `ib_device`.
///
/// # Invariants
///
/// Allocated by [`Registration::new`] with `T` initialised in `data` for
/// as long as a `&IbDevice<T>` exists.
#[repr(C)]
pub(crate) struct IbDevice<T> {
    ib: Opaque<bindings::ib_device>,
    data: T,
}

// SAFETY: ib_core serialises nothing for us, so `T` must be shareable;
// the C part is used from any thread by ib_core itself.
unsafe impl<T: Send + Sync> Sync for IbDevice<T> {}

impl<T> IbDevice<T> {
    /// # Safety
    ///
    /// `ptr` must be a device allocated by [`Registration::new`] for this
    /// `T`, alive (with its `T`) for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: The `ib_device` is the first field of the `repr(C)`
        // struct; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    fn as_raw(&self) -> *mut bindings::ib_device {
        self.ib.get()
    }

    /// The driver state.
    pub(crate) fn data(&self) -> &T {
        &self.data
    }

    /// The device's name, e.g. `rsnic_0` (empty before registration).
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside the live device.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// Whether port 1 is usable: its net device is up with carrier
    /// (`ib_get_curr_port_state`), and whether that device is up at all.
    fn port_state(&self) -> (bool, bool) {
        // SAFETY: Live device; the returned net device (if any) is held.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.as_raw(), 1) };
        if ndev.is_null() {
            return (false, false);
        }
        // SAFETY: `ndev` is held; reading its state is always allowed.
        let running = unsafe { bindings::rsnic_netif_running(ndev) };
        // SAFETY: As above.
        let carrier = unsafe { bindings::rsnic_netif_carrier_ok(ndev) };
        // SAFETY: Releases the hold `ib_device_get_netdev` took.
        unsafe { bindings::rsnic_dev_put(ndev) };
        (running && carrier, running)
    }
}

/// `-EOPNOTSUPP`: the kernel crate has no constant for it.
const EOPNOTSUPP_ERRNO: c_int = -(kernel::bindings::EOPNOTSUPP as c_int);
/// `RDMA_NODE_IB_CA` (uapi/rdma/rdma_netlink.h): a channel adapter, as
/// every RoCE device is.
const RDMA_NODE_IB_CA: u8 = 1;
/// `IB_PORT_CM_SUP` (rdma/ib_mad.h): the port runs the connection manager.
const IB_PORT_CM_SUP: u32 = 1 << 16;
/// `IB_MGMT_MAD_SIZE` (rdma/ib_mad.h): a MAD is 256 bytes.
const IB_MGMT_MAD_SIZE: u32 = 256;

/// Bytes of RoCE headers inside an Ethernet MTU (IPv4/IPv6, UDP, BTH,
/// the largest extension header, ICRC), as `rdma_mtu_from_attr` and
/// `ib_mtu_int_to_enum` callers account for them.
const ROCE_OVERHEAD: u32 = 40 + 8 + 12 + 16 + 4;

/// The EUI-64 node GUID of a MAC address (`addrconf_addr_eui48`), as the
/// big-endian value `ib_device::node_guid` holds.
pub(crate) fn node_guid(mac: &[u8; 6]) -> u64 {
    u64::from_ne_bytes([
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ])
}

/// Settings applied to a device before it is registered.
pub(crate) struct Setup<'a> {
    /// Name pattern, e.g. `rsnic_%d`.
    pub(crate) name: &'a CStr,
    /// Node GUID, see [`node_guid`].
    pub(crate) node_guid: u64,
    /// Completion vectors.
    pub(crate) comp_vectors: u32,
}

/// A registered RDMA device; unregistered and freed on drop.
pub(crate) struct Registration<T: IbDeviceOps> {
    ibdev: NonNull<bindings::ib_device>,
    _t: PhantomData<T>,
}

// SAFETY: The registration only holds the device pointer; the device and
// `T` may be used and dropped from any thread.
unsafe impl<T: IbDeviceOps> Send for Registration<T> {}
// SAFETY: As above.
unsafe impl<T: IbDeviceOps> Sync for Registration<T> {}

/// Alignment `kzalloc` guarantees (`ARCH_KMALLOC_MINALIGN` on x86-64).
const KMALLOC_MIN_ALIGN: usize = 8;

impl<T: IbDeviceOps> Registration<T> {
    /// The registered device.
    pub(crate) fn dev(&self) -> &IbDevice<T> {
        // SAFETY: Registered by `new`, with its `T`, until we are dropped.
        unsafe { IbDevice::from_raw(self.ibdev.as_ptr()) }
    }

    /// Allocates a device, applies `setup`, initialises `T` with `init`,
    /// binds port 1 to `netdev` (its GIDs and state follow that device)
    /// and registers it as a child of `parent` doing DMA as `dma`.
    pub(crate) fn new<N>(
        parent: &Device,
        dma: &Device,
        netdev: &NetDev<N>,
        setup: Setup<'_>,
        init: impl PinInit<T, Error>,
    ) -> Result<Self> {
        const { assert!(core::mem::align_of::<T>() <= KMALLOC_MIN_ALIGN) };
        // SAFETY: Plain allocation of a zeroed `IbDevice<T>`-sized block
        // that starts with an initialised `ib_device`; NULL on failure.
        let raw = unsafe { bindings::rsnic_ib_alloc_device(core::mem::size_of::<IbDevice<T>>()) };
        let ibdev = NonNull::new(raw).ok_or(ENOMEM)?;
        let free = move || {
            // SAFETY: Allocated above, not registered, `T` dropped or never
            // initialised.
            unsafe { bindings::ib_dealloc_device(raw) }
        };
        let mut ops = Adapter::<T>::OPS;
        ops.owner = crate::THIS_MODULE.as_ptr().cast();
        let parent_raw: *const Device = parent;
        // SAFETY: `raw` is a live, unregistered device; `ops` is copied by
        // `ib_set_device_ops`; `Device` is `repr(transparent)` over
        // `struct device`.
        unsafe {
            bindings::ib_set_device_ops(raw, &ops);
            bindings::rsnic_ib_set_parent(raw, parent_raw.cast_mut().cast());
            (*raw).node_type = RDMA_NODE_IB_CA;
            (*raw).phys_port_cnt = 1;
            (*raw).num_comp_vectors = setup.comp_vectors as c_int;
            (*raw).node_guid = setup.node_guid;
        }
        // SAFETY: `data` is inside the allocation, suitably aligned
        // (asserted above), unused, and never moves while the device lives.
        let slot = unsafe { &raw mut (*raw.cast::<IbDevice<T>>()).data };
        // SAFETY: `slot` is valid for a `T` and pinned (see above).
        if let Err(e) = unsafe { init.__pinned_init(slot) } {
            free();
            return Err(e);
        }
        let drop_data = || {
            // SAFETY: `T` was initialised above and the device is not
            // registered, so nothing else can reach it.
            unsafe { core::ptr::drop_in_place(slot) };
            free();
        };
        // SAFETY: Both devices are live; ib_core takes its own hold on
        // the net device.
        let ret = unsafe { bindings::ib_device_set_netdev(raw, netdev.as_raw(), 1) };
        if ret != 0 {
            drop_data();
            return Err(Error::from_errno(ret));
        }
        let dma_raw: *const Device = dma;
        // SAFETY: The device is fully set up and `T` initialised; `dma`
        // is a bound bus device with DMA parameters, alive for as long as
        // we are (the caller's driver data owns us).
        let ret = unsafe {
            bindings::ib_register_device(raw, setup.name.as_char_ptr(), dma_raw.cast_mut().cast())
        };
        if ret != 0 {
            drop_data();
            return Err(Error::from_errno(ret));
        }
        Ok(Self {
            ibdev,
            _t: PhantomData,
        })
    }
}

impl<T: IbDeviceOps> Drop for Registration<T> {
    fn drop(&mut self) {
        let raw = self.ibdev.as_ptr();
        // SAFETY: Registered in `new`. Unregistration removes every client
        // (they destroy their objects through our callbacks, which still
        // see `T`) and returns once no callback runs any more.
        unsafe { bindings::ib_unregister_device(raw) };
        // SAFETY: No callback can run now; `T` is dropped exactly once.
        unsafe { core::ptr::drop_in_place(&raw mut (*raw.cast::<IbDevice<T>>()).data) };
        // SAFETY: Unregistered and its `T` dropped; ib_core frees the
        // memory when its last reference goes.
        unsafe { bindings::ib_dealloc_device(raw) };
    }
}

/// The C-ABI entry points of an [`IbDeviceOps`] implementation.
struct Adapter<T>(PhantomData<T>);

impl<T: IbDeviceOps> Adapter<T> {
    const OPS: bindings::ib_device_ops = {
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
        ops.add_gid = Some(Self::add_gid);
        ops.del_gid = Some(Self::del_gid);
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
        ops.reg_user_mr = Some(Self::refuse_reg_user_mr);
        ops.query_qp = Some(Self::query_qp);
        ops.alloc_hw_port_stats = Some(Self::alloc_hw_port_stats);
        ops.get_hw_stats = Some(Self::get_hw_stats);
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
            if !udata.is_null() {
                // No user-space provider: kernel consumers only.
                return Err(Error::from_errno(EOPNOTSUPP_ERRNO));
            }
            let a = T::query_device(dev);
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
            p.max_send_sge = int(a.max_sge);
            p.max_recv_sge = int(a.max_sge);
            p.max_sge_rd = int(a.max_sge);
            p.max_cq = int(a.max_cq);
            p.max_cqe = int(a.max_cqe);
            p.max_mr = int(a.max_mr);
            p.max_pd = int(a.max_pd);
            p.max_ah = int(a.max_ah);
            p.max_qp_rd_atom = int(a.max_qp_rd_atom);
            p.max_qp_init_rd_atom = int(a.max_qp_rd_atom);
            p.max_res_rd_atom = int(a.max_qp_rd_atom.saturating_mul(a.max_qp));
            p.max_pkeys = 1;
            p.local_ca_ack_delay = 15;
            p.atomic_cap = bindings::ib_atomic_cap_IB_ATOMIC_NONE;
            p.max_fast_reg_page_list_len = a.max_fast_reg_page_list_len;
            p.device_cap_flags = bindings::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN as u64;
            if a.local_dma_lkey_0 {
                p.kernel_cap_flags |= u64::from(bindings::ib_kernel_cap_flags_IBK_LOCAL_DMA_LKEY);
            }
            if a.max_fast_reg_page_list_len != 0 {
                p.device_cap_flags |=
                    bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
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
            if port != 1 {
                return Err(EINVAL);
            }
            // SAFETY: A registered device of ours.
            let dev = unsafe { Self::dev(ibdev) };
            let a = T::query_port(dev);
            let (active, running) = dev.port_state();
            // SAFETY: ib_core passes a zeroed, writable attribute struct.
            let p = unsafe { &mut *props };
            p.gid_tbl_len = a.gid_tbl_len as c_int;
            p.max_mtu = ib_mtu(a.max_mtu);
            p.active_mtu = p.max_mtu;
            // SAFETY: Live device; the net device (if any) is held inside.
            let ndev = unsafe { bindings::ib_device_get_netdev(ibdev, 1) };
            if !ndev.is_null() {
                // SAFETY: `ndev` is held; reading the MTU is always allowed.
                let mtu = unsafe { (*ndev).mtu };
                // SAFETY: Releases the hold taken just above.
                unsafe { bindings::rsnic_dev_put(ndev) };
                p.active_mtu = ib_mtu(mtu.saturating_sub(ROCE_OVERHEAD).min(a.max_mtu));
            }
            p.phys_mtu = a.max_mtu;
            p.port_cap_flags = IB_PORT_CM_SUP;
            p.max_msg_sz = 1 << 31;
            p.pkey_tbl_len = 1;
            (p.state, p.phys_state) = match (active, running) {
                (true, _) => (
                    bindings::ib_port_state_IB_PORT_ACTIVE,
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
            if port != 1 {
                return Err(EINVAL);
            }
            // SAFETY: A registered device of ours (during registration).
            let dev = unsafe { Self::dev(ibdev) };
            // SAFETY: ib_core passes a writable struct.
            let im = unsafe { &mut *immutable };
            im.pkey_tbl_len = 1;
            im.gid_tbl_len = T::query_port(dev).gid_tbl_len as c_int;
            im.core_cap_flags = bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
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
        _ibdev: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        if port != 1 || index != 0 {
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
            if a.gid_type != bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP {
                return Err(EINVAL);
            }
            // SAFETY: As above.
            let dev = unsafe { Self::dev(a.device) };
            // SAFETY: Every bit pattern of the union is a valid byte array.
            let gid = unsafe { a.gid.raw };
            T::add_gid(
                dev,
                GidEntry {
                    index: a.index.into(),
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
            T::del_gid(dev, a.index.into())?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `pd` is a PD ib_core allocated for one of our devices.
    unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
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
    /// `cq` is a CQ ib_core allocated for one of our devices; `attr` valid.
    unsafe extern "C" fn create_cq(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            // Kernel consumers pass no attribute bundle; user CQs do.
            if !attrs.is_null() {
                return Err(Error::from_errno(EOPNOTSUPP_ERRNO));
            }
            // SAFETY: ib_core sets `device` before calling us.
            let dev = unsafe { Self::dev((*cq).device) };
            // SAFETY: Valid attribute (contract).
            let entries = unsafe { (*attr).cqe };
            let (data, granted) = T::create_cq(dev, CqHandle::new(cq), entries)?;
            // SAFETY: Allocated with `size_ib_cq`; the CQ's own fields are
            // ours to set in `create_cq`.
            unsafe {
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
            if !udata.is_null() {
                return Err(Error::from_errno(EOPNOTSUPP_ERRNO));
            }
            // SAFETY: As the function's contract says.
            let a = unsafe { &mut *attr };
            let kind = QpKind::from_raw(a.qp_type).ok_or(Error::from_errno(EOPNOTSUPP_ERRNO))?;
            if a.send_cq.is_null() || a.recv_cq.is_null() || !a.srq.is_null() {
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
                        caps: QpCaps {
                            max_send_wr: a.cap.max_send_wr,
                            max_recv_wr: a.cap.max_recv_wr,
                            max_send_sge: a.cap.max_send_sge,
                            max_recv_sge: a.cap.max_recv_sge,
                        },
                        signal_all: a.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
                    },
                )
            };
            if a.cap.max_inline_data != 0 {
                return Err(EINVAL);
            }
            let (data, qpn, caps) = T::create_qp(dev, QpHandle::new(qp), &init)?;
            a.cap.max_send_wr = caps.max_send_wr;
            a.cap.max_recv_wr = caps.max_recv_wr;
            a.cap.max_send_sge = caps.max_send_sge;
            a.cap.max_recv_sge = caps.max_recv_sge;
            // SAFETY: Allocated with `size_ib_qp`; `qp_num` is ours to set.
            unsafe {
                (*qp).qp_num = qpn;
                IbObject::<bindings::ib_qp, T::Qp>::init(qp, data)?;
            }
            Ok(0)
        })
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
            if !udata.is_null() {
                return Err(Error::from_errno(EOPNOTSUPP_ERRNO));
            }
            // SAFETY: As the function's contract says.
            let (dev, data, attrs) = unsafe {
                (
                    Self::dev((*qp).device),
                    IbObject::<bindings::ib_qp, T::Qp>::data(qp),
                    QpAttrs::from_raw(attr, mask as u32),
                )
            };
            T::modify_qp(dev, data, &attrs)?;
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
        // SAFETY: A valid chain for the call (contract).
        let mut wrs = unsafe { RecvWrs::new(wr) };
        match T::post_recv(dev, data, &mut wrs) {
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
    /// `ah` is an AH ib_core allocated for one of our devices; `attr`
    /// valid.
    unsafe extern "C" fn create_ah(
        ah: *mut bindings::ib_ah,
        attr: *mut bindings::rdma_ah_init_attr,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As the function's contract says.
            let (dev, path) = unsafe {
                (
                    Self::dev((*ah).device),
                    AddressPath::from_raw((*attr).ah_attr),
                )
            };
            let data = T::create_ah(dev, &path)?;
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
        sg_offset: *mut core::ffi::c_uint,
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
                max_inline_data: 0,
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
                a.port_num = 1;
                a.cap = cap;
                let i = &mut *init;
                i.qp_type = q.kind.to_raw();
                i.cap = cap;
                i.send_cq = (*qp).send_cq;
                i.recv_cq = (*qp).recv_cq;
                i.port_num = 1;
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
        _port: u32,
        _index: c_int,
    ) -> c_int {
        // SAFETY: As the function's contract says.
        let dev = unsafe { Self::dev(ibdev) };
        let n = T::HW_STATS.len();
        // SAFETY: The struct was allocated with `n` values after it.
        let values = unsafe { (*stats).value.as_mut_slice(n) };
        T::hw_stats(dev, values);
        n as c_int
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

/// `ERR_PTR(errno)`.
fn err_ptr<P>(errno: c_int) -> *mut P {
    core::ptr::without_provenance_mut(errno as isize as usize)
}
