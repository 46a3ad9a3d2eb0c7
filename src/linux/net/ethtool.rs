// SPDX-License-Identifier: GPL-2.0

//! ethtool operations (`struct ethtool_ops`) dispatched to a `#[vtable]`
//! trait: what a driver does not implement stays NULL, and ethtool says
//! "not supported". Sizes (RSS key and table) and supported parameters
//! (interrupt moderation) come from the driver's associated constants.

use core::fmt;

use kernel::{
    error::{to_result, VTABLE_DEFAULT_ERROR},
    prelude::*,
};

use crate::linux::{
    bindings,
    net::{
        instance_lock::{DevLocked, RtnlLocked},
        netdev::NetDev,
        tstamp::TsInfo,
    },
};

/// Interrupt moderation parameters (`ETHTOOL_COALESCE_*`, the header's
/// `BIT()` macros do not reach the bindings), for
/// [`EthtoolOps::SUPPORTED_COALESCE`]. Not every driver uses every one.
#[allow(dead_code)]
pub(crate) mod coalesce_params {
    /// `rx-usecs`.
    pub(crate) const RX_USECS: u32 = 1 << 0;
    /// `rx-frames`.
    pub(crate) const RX_MAX_FRAMES: u32 = 1 << 1;
    /// `tx-usecs`.
    pub(crate) const TX_USECS: u32 = 1 << 4;
    /// `tx-frames`.
    pub(crate) const TX_MAX_FRAMES: u32 = 1 << 5;
}

/// Interrupt moderation (`ethtool -c/-C`), the fields a driver may
/// support; those not in [`EthtoolOps::SUPPORTED_COALESCE`] are refused
/// by the core and read as zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Coalesce {
    /// `rx-usecs`: longest an RX completion waits for its interrupt.
    pub(crate) rx_usecs: u32,
    /// `rx-frames`: RX completions that raise the interrupt at once.
    pub(crate) rx_max_frames: u32,
    /// `tx-usecs`.
    pub(crate) tx_usecs: u32,
    /// `tx-frames`.
    pub(crate) tx_max_frames: u32,
}

/// `tcp-data-split` of `ethtool -g`/`-G`: whether the device writes a
/// received TCP packet's headers and payload into separate buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum TcpDataSplit {
    /// Not set by the user: the driver decides (`auto` in ethtool).
    #[default]
    Unknown,
    /// Off.
    Disabled,
    /// On.
    Enabled,
}

impl TcpDataSplit {
    /// From `ETHTOOL_TCP_DATA_SPLIT_*`; `None` for another value.
    pub(super) fn from_raw(v: u8) -> Option<Self> {
        match u32::from(v) {
            bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_UNKNOWN => Some(Self::Unknown),
            bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_DISABLED => {
                Some(Self::Disabled)
            }
            bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_ENABLED => Some(Self::Enabled),
            _ => None,
        }
    }

    /// As `ETHTOOL_TCP_DATA_SPLIT_*`.
    pub(super) fn to_raw(self) -> u8 {
        // CAST: the constants are 0, 1 and 2.
        (match self {
            Self::Unknown => bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_UNKNOWN,
            Self::Disabled => bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_DISABLED,
            Self::Enabled => bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_ENABLED,
        }) as u8
    }
}

/// Ring parameters of `ethtool -g`/`-G`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rings {
    /// RX ring entries.
    pub(crate) rx: u32,
    /// TX ring entries.
    pub(crate) tx: u32,
    /// Header/data split: as set (`-G`), or in effect (`-g`).
    pub(crate) tcp_data_split: TcpDataSplit,
    /// Packets of at most this many bytes are not split (`hds-thresh`).
    pub(crate) hds_thresh: u32,
}
/// Identity shown by `ethtool -i`.
pub(crate) struct DrvInfo<'a> {
    /// Driver name.
    pub(crate) driver: &'static str,
    /// Driver version.
    pub(crate) version: &'static str,
    /// Firmware version.
    pub(crate) fw_version: fmt::Arguments<'a>,
    /// Bus address of the device, e.g. `0000:01:00.0`.
    pub(crate) bus_info: &'a [u8],
}

/// Receives the device's statistics as (name, value) pairs, in a fixed order.
pub(crate) trait StatsSink {
    /// One counter. `name` must be at most 31 bytes once formatted.
    fn stat(&mut self, name: fmt::Arguments<'_>, value: u64);
    /// Whether values are used (else only names are counted or copied,
    /// and costly values, like the card's, need not be fetched).
    fn wants_values(&self) -> bool;
}

/// The RSS configuration `ethtool -x/-X` reads and writes.
pub(crate) struct Rxfh<'a> {
    /// The indirection table, as many entries as
    /// [`EthtoolOps::rss_table_len`] said when the core sized it.
    pub(crate) table: &'a mut [u32],
    /// The hash key ([`EthtoolOps::RSS_KEY_LEN`] bytes).
    pub(crate) key: &'a mut [u8],
}

/// The IEEE 802.3 MAC counters of `ethtool -S --groups eth-mac` a
/// driver can back; `None` for those it does not count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EthMacStats {
    /// `FramesTransmittedOK`.
    pub(crate) frames_tx: Option<u64>,
    /// `FramesReceivedOK`.
    pub(crate) frames_rx: Option<u64>,
    /// `FrameCheckSequenceErrors`.
    pub(crate) fcs_errors: Option<u64>,
    /// `OctetsTransmittedOK`.
    pub(crate) octets_tx: Option<u64>,
    /// `OctetsReceivedOK`.
    pub(crate) octets_rx: Option<u64>,
    /// `MulticastFramesXmittedOK`.
    pub(crate) multicast_tx: Option<u64>,
    /// `BroadcastFramesXmittedOK`.
    pub(crate) broadcast_tx: Option<u64>,
    /// `MulticastFramesReceivedOK`.
    pub(crate) multicast_rx: Option<u64>,
    /// `BroadcastFramesReceivedOK`.
    pub(crate) broadcast_rx: Option<u64>,
}

/// The MAC control counters of `ethtool -S --groups eth-ctrl`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EthCtrlStats {
    /// `MACControlFramesTransmitted`.
    pub(crate) frames_tx: Option<u64>,
    /// `MACControlFramesReceived`.
    pub(crate) frames_rx: Option<u64>,
}

/// Where a steering rule sends its flow (`ethtool -N ... action/context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlowAction {
    /// To this RX queue.
    Queue(u32),
    /// Through RSS context `context` (0: the default one), `offset`
    /// added to the queue its table picks.
    Rss {
        /// The RSS context.
        context: u32,
        /// Added to the picked queue.
        offset: u32,
    },
    /// Dropped.
    Drop,
}

/// The flow type of a steering rule (`ethtool -N flow-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RuleFlow {
    /// `tcp4`.
    Tcp4,
    /// `udp4`.
    Udp4,
    /// `tcp6`.
    Tcp6,
    /// `udp6`.
    Udp6,
}

/// A steering rule (`ethtool -N flow-type ...`): TCP or UDP over IPv4 or
/// IPv6, each field either matched exactly or not at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlowRule {
    /// The flow type.
    pub(crate) flow: RuleFlow,
    /// Source address (IPv4 in the first 4 bytes), network order.
    pub(crate) src_ip: Option<[u8; 16]>,
    /// Destination address.
    pub(crate) dst_ip: Option<[u8; 16]>,
    /// Source port.
    pub(crate) src_port: Option<u16>,
    /// Destination port.
    pub(crate) dst_port: Option<u16>,
    /// What happens to a matching frame.
    pub(crate) action: FlowAction,
}

/// A flow type whose hashed header fields `ethtool -n/-N rx-flow-hash`
/// reads and sets (`*_FLOW` of the uapi).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HashFlow {
    /// `tcp4`.
    Tcp4,
    /// `udp4`.
    Udp4,
    /// `ip4`: IPv4 other than the above.
    Ip4,
    /// `tcp6`.
    Tcp6,
    /// `udp6`.
    Udp6,
    /// `ip6`.
    Ip6,
}

impl HashFlow {
    /// The flow type of an `ethtool_rxfh_fields`, if it is one of these.
    pub(super) fn from_raw(flow_type: u32) -> Option<Self> {
        Some(match flow_type {
            bindings::TCP_V4_FLOW => Self::Tcp4,
            bindings::UDP_V4_FLOW => Self::Udp4,
            bindings::IPV4_FLOW => Self::Ip4,
            bindings::TCP_V6_FLOW => Self::Tcp6,
            bindings::UDP_V6_FLOW => Self::Udp6,
            bindings::IPV6_FLOW => Self::Ip6,
            _ => return None,
        })
    }
}

/// An RSS input transform (`ethtool -X ... xfrm`, `RXH_XFRM_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum InputXfrm {
    /// The fields as they are.
    #[default]
    None,
    /// Each source field XORed with its destination field, hashed in
    /// both places (`RXH_XFRM_SYM_XOR`, `sym-xor`).
    SymXor,
}

impl InputXfrm {
    /// As the uapi's `RXH_XFRM_*` bits.
    pub(super) const fn bits(self) -> u8 {
        match self {
            // CAST: the uapi's bit 0.
            Self::SymXor => bindings::RXH_XFRM_SYM_XOR as u8,
            Self::None => 0,
        }
    }

    /// From the uapi's bits; `None` for a transform not listed here.
    pub(super) const fn from_bits(bits: u8) -> Option<Self> {
        match bits as u32 {
            0 => Some(Self::None),
            bindings::RXH_XFRM_SYM_XOR => Some(Self::SymXor),
            _ => None,
        }
    }
}

/// Header fields RSS hashes (a set of `RXH_*` bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HashFields(u32);

impl HashFields {
    /// Source address (`s`).
    pub(crate) const IP_SRC: Self = Self(bindings::RXH_IP_SRC);
    /// Destination address (`d`).
    pub(crate) const IP_DST: Self = Self(bindings::RXH_IP_DST);
    /// Source port (`f`).
    pub(crate) const L4_SRC: Self = Self(bindings::RXH_L4_B_0_1);
    /// Destination port (`n`).
    pub(crate) const L4_DST: Self = Self(bindings::RXH_L4_B_2_3);
    /// IPv6 flow label (`l`).
    pub(crate) const IP6_FL: Self = Self(bindings::RXH_IP6_FL);

    /// No field.
    pub(crate) const fn empty() -> Self {
        Self(0)
    }

    /// Both sets' fields.
    pub(crate) const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every field of `other` is in this set.
    pub(crate) const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// As the uapi's `RXH_*` bits.
    pub(super) const fn bits(self) -> u32 {
        self.0
    }

    /// From the uapi's `RXH_*` bits (any, known to the driver or not).
    pub(super) const fn from_bits(bits: u32) -> Self {
        Self(bits)
    }
}

/// What `ethtool DEV` shows of a link.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkSettings {
    /// Speed in Mbit/s.
    pub(crate) speed_mbps: u32,
    /// Both directions at once, or one at a time.
    pub(crate) full_duplex: bool,
    /// The connector.
    pub(crate) port: PortType,
    /// Whether speed and duplex are negotiated.
    pub(crate) autoneg: bool,
}

/// A link's connector (`PORT_*`). Not every driver has every one.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PortType {
    /// Twisted pair.
    TwistedPair,
    /// Fibre.
    Fibre,
    /// A direct-attach copper cable.
    DirectAttach,
    /// None of these.
    Other,
}

/// What a driver reports to ethtool. Every method runs with RTNL held.
#[vtable]
pub(crate) trait EthtoolOps: Send + Sync + Sized + 'static {
    /// Names of the `ethtool -t` tests, in the order of
    /// [`Self::self_test`]'s results; each at most 31 bytes.
    const SELF_TESTS: &'static [&'static str] = &[];
    /// Bytes of the RSS hash key (0: no RSS configuration).
    const RSS_KEY_LEN: usize = 0;
    /// RSS context IDs are below this (0: no additional contexts).
    const RSS_CONTEXTS: u32 = 0;
    /// Steering rule locations are below this.
    const FLOW_RULES: u32 = 0;
    /// Most entries the RSS indirection table can have (the device's
    /// table space, `rxfh_indir_space`).
    const RSS_TABLE_LEN: usize = 0;
    /// [`coalesce_params`] bits the driver supports.
    const SUPPORTED_COALESCE: u32 = 0;
    /// Largest `hds-thresh`; not 0: the device splits headers from data
    /// ([`Rings::tcp_data_split`], [`Rings::hds_thresh`] are supported).
    const HDS_THRESH_MAX: u32 = 0;
    /// Names of the private flags (`ethtool --show-priv-flags`), bit `i`
    /// of [`Self::priv_flags`] being entry `i`; each at most 31 bytes, at
    /// most 32 of them.
    const PRIV_FLAGS: &'static [&'static str] = &[];

    /// `ethtool -i`.
    fn drvinfo(_dev: &NetDev<Self>, _locked: &DevLocked, _out: &mut dyn FnMut(DrvInfo<'_>)) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The link's settings (`ethtool DEV`); its speed and duplex are
    /// shown while the carrier is up, unknown otherwise.
    fn link_settings(_dev: &NetDev<Self>, _locked: &DevLocked) -> LinkSettings {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Every counter of `ethtool -S`, always the same names in the same
    /// order.
    fn stats(_dev: &NetDev<Self>, _locked: &DevLocked, _sink: &mut dyn StatsSink) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -l`: (maximum, current) combined channels.
    fn channels(_dev: &NetDev<Self>, _locked: &DevLocked) -> (u32, u32) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -L combined N`; on error nothing changed.
    fn set_channels(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _combined: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -g`: the most ring entries, and the rings in effect.
    fn rings(_dev: &NetDev<Self>, _locked: &DevLocked) -> (u32, Rings) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -G`: every parameter as it is to be (those not given on
    /// the command line as the core keeps them; `hds_thresh` at most
    /// [`Self::HDS_THRESH_MAX`], checked by the core); on error nothing
    /// changed.
    fn set_rings(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _want: Rings) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool --get-tunable rx-copybreak`: received frames of at most
    /// this many bytes are copied out of their buffer.
    fn rx_copybreak(_dev: &NetDev<Self>, _locked: &DevLocked) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool --set-tunable rx-copybreak N`; on error nothing changed.
    fn set_rx_copybreak(_dev: &NetDev<Self>, _locked: &DevLocked, _bytes: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool --show-priv-flags`: bit `i` is [`Self::PRIV_FLAGS`] entry `i`.
    fn priv_flags(_dev: &NetDev<Self>, _locked: &DevLocked) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool --set-priv-flags`: the whole set (bits beyond
    /// [`Self::PRIV_FLAGS`] are clear; the core checked). On error nothing
    /// changed.
    fn set_priv_flags(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _flags: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -T`: what the device can time stamp, and its PTP clock.
    /// Any context the core asks from (it may not hold the instance lock).
    fn ts_info(_dev: &NetDev<Self>) -> TsInfo {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -c`: interrupt moderation.
    fn coalesce(_dev: &NetDev<Self>, _locked: &DevLocked) -> Coalesce {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -C`; only [`Self::SUPPORTED_COALESCE`] fields may be set
    /// (the core checked). On error nothing changed.
    fn set_coalesce(_dev: &NetDev<Self>, _locked: &DevLocked, _coalesce: Coalesce) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -t`: runs the tests (those that disturb traffic only if
    /// `offline`) and stores 0 (passed or not run) or an error code per
    /// test in `results`, one per [`Self::SELF_TESTS`] entry.
    fn self_test(
        _dev: &NetDev<Self>,
        _rtnl: &RtnlLocked<'_>,
        _offline: bool,
        _results: &mut [u64],
    ) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Entries of the RSS indirection table now (a power of two dividing
    /// [`Self::RSS_TABLE_LEN`], so that the core can fold and unfold
    /// tables between sizes); a driver whose size follows its queue
    /// count resizes the core's tables in `set_channels` with
    /// [`rxfh_indir_can_resize`] and [`rxfh_ctxs_resize`].
    fn rss_table_len(_dev: &NetDev<Self>) -> u32 {
        // CAST: a table length the driver declares (hundreds of entries).
        Self::RSS_TABLE_LEN as u32
    }

    /// `ethtool -x`: fills the RSS indirection table and hash key.
    fn rss(_dev: &NetDev<Self>, _locked: &DevLocked, _out: Rxfh<'_>) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The input transforms `set_rss` takes besides none.
    const INPUT_XFRMS: &'static [InputXfrm] = &[];

    /// The default context's input transform (`ethtool -x`).
    fn rss_input_xfrm(_dev: &NetDev<Self>, _locked: &DevLocked) -> InputXfrm {
        InputXfrm::None
    }

    /// `ethtool -X`: a new table, key and/or input transform (each
    /// `None` if unchanged; a transform is one of
    /// [`Self::INPUT_XFRMS`]). The core already checked the table
    /// against the channel count, and a symmetric transform against the
    /// hashed fields.
    fn set_rss(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _table: Option<&[u32]>,
        _key: Option<&[u8]>,
        _xfrm: Option<InputXfrm>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -S --groups eth-mac`.
    fn eth_mac_stats(_dev: &NetDev<Self>, _locked: &DevLocked) -> EthMacStats {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -S --groups eth-ctrl`.
    fn eth_ctrl_stats(_dev: &NetDev<Self>, _locked: &DevLocked) -> EthCtrlStats {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -X ... context new`: creates RSS context `id` (below
    /// [`Self::RSS_CONTEXTS`]) with the table and key given, or the
    /// driver's defaults for those not given, which it writes into `out`
    /// (the core keeps the context's settings there).
    /// `xfrm` is the context's input transform (one of
    /// [`Self::INPUT_XFRMS`], or none).
    fn create_rss_context(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _id: u32,
        _table: Option<&[u32]>,
        _key: Option<&[u8]>,
        _xfrm: InputXfrm,
        _out: Rxfh<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -X ... context N`: a new table, key and/or input
    /// transform for context `id` (each `None` if unchanged); `old` holds
    /// its current table and key.
    fn modify_rss_context(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _id: u32,
        _table: Option<&[u32]>,
        _key: Option<&[u8]>,
        _xfrm: Option<InputXfrm>,
        _old: Rxfh<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -X ... context N delete` (the core refuses while a rule
    /// steers to it).
    fn remove_rss_context(_dev: &NetDev<Self>, _locked: &DevLocked, _id: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -n`: calls `each` with every steering rule's location and
    /// rule, in location order.
    fn flow_rules(_dev: &NetDev<Self>, _locked: &DevLocked, _each: &mut dyn FnMut(u32, &FlowRule)) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -N ... loc N`: adds or replaces the rule at `location`
    /// (below [`Self::FLOW_RULES`]). Returns the location the rule took:
    /// a driver may replace a rule with the same match elsewhere instead,
    /// and ethtool reports that location.
    fn set_flow_rule(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _location: u32,
        _rule: FlowRule,
    ) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -N delete N` (`ENOENT` if there is none).
    fn del_flow_rule(_dev: &NetDev<Self>, _locked: &DevLocked, _location: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Each RSS context hashes fields of its own (`rxfh_fields` and
    /// `set_rxfh_fields` name the context); else one set for all, the
    /// default context's. The core asks a driver with input transforms
    /// and contexts with keys of their own for this.
    const RSS_PER_CONTEXT_FIELDS: bool = false;

    /// `ethtool -n rx-flow-hash [context N]`: the fields context
    /// `context` hashes for `flow` (`EOPNOTSUPP` if the device does not
    /// say, `ENOENT` for no such context).
    fn rxfh_fields(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _context: u32,
        _flow: HashFlow,
    ) -> Result<HashFields> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -N rx-flow-hash [context N]`: context `context` hashes
    /// `fields` for `flow` (`EINVAL` for a set the device cannot hash).
    fn set_rxfh_fields(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _context: u32,
        _flow: HashFlow,
        _fields: HashFields,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// Whether the default context's table `table` (its current entries) can
/// be resized to `new_len` entries without changing what it says: always
/// when the user did not set it; otherwise at least as long as the user's
/// table, and when shrinking, periodic with `new_len`
/// (`ethtool_rxfh_indir_can_resize`).
pub(crate) fn rxfh_indir_can_resize<T: EthtoolOps>(
    dev: &NetDev<T>,
    _rtnl: &RtnlLocked<'_>,
    table: &[u32],
    new_len: u32,
) -> bool {
    let Ok(old_len) = u32::try_from(table.len()) else {
        return false;
    };
    // SAFETY: `dev` is a registered device (RTNL held, so its ethtool
    // state is stable); the helper reads `old_len` entries of `table`.
    unsafe {
        bindings::ethtool_rxfh_indir_can_resize(dev.as_raw(), table.as_ptr(), old_len, new_len)
    }
}

/// Checks that every additional RSS context's table can be resized to
/// `new_len` entries (`ethtool_rxfh_ctxs_can_resize`): `EINVAL` if one
/// cannot, or if `new_len` is beyond [`EthtoolOps::RSS_TABLE_LEN`].
pub(crate) fn rxfh_ctxs_can_resize<T: EthtoolOps>(
    dev: &NetDev<T>,
    _rtnl: &RtnlLocked<'_>,
    new_len: u32,
) -> Result {
    // SAFETY: As in `rxfh_indir_can_resize`; the helper takes the RSS
    // lock itself.
    to_result(unsafe { bindings::ethtool_rxfh_ctxs_can_resize(dev.as_raw(), new_len) })
}

/// Resizes every additional RSS context's table, as the core keeps it,
/// to `new_len` entries (folded or unfolded) and notifies listeners
/// (`ethtool_rxfh_ctxs_resize`). Checked with [`rxfh_ctxs_can_resize`]
/// first. The notification reads the tables back through the driver's
/// ethtool ops: the caller holds none of the locks they take.
pub(crate) fn rxfh_ctxs_resize<T: EthtoolOps>(
    dev: &NetDev<T>,
    _rtnl: &RtnlLocked<'_>,
    new_len: u32,
) {
    // SAFETY: As in `rxfh_ctxs_can_resize`.
    unsafe { bindings::ethtool_rxfh_ctxs_resize(dev.as_raw(), new_len) }
}
