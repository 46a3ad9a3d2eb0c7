# SPDX-License-Identifier: GPL-2.0
#
# Shared helpers of the rsnic selftests: KTAP output (the kselftest format)
# and access to the cards, the driver and the test harness.

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

# The module to load: the project's VM says which (qemu/guest-init.sh).
RSNIC_KO=${RSNIC_KO:-/rsnic/rsnic.ko}
RSNIC_VENDOR=0x10ee
RSNIC_PF_DEVICE=0x5201
RSNIC_VF_DEVICE=0x5202
RSNIC_DEBUGFS=/sys/kernel/debug/rsnic
RSNIC_CTL=/dev/virtio-ports/org.rsnic.ctl

ktap_count=0
ktap_failed=0
ktap_skipped=0

ktap_header() { echo "TAP version 13"; echo "1..$1"; }

ktap_result() { # ok|fail|skip description [reason]
	ktap_count=$((ktap_count + 1))
	# Seconds since the previous result (or the start), for ktap_finish.
	ktap_times+="$ktap_count:$((SECONDS - ${ktap_last:-0})) "
	ktap_last=$SECONDS
	case $1 in
	ok) echo "ok $ktap_count $2" ;;
	skip) echo "ok $ktap_count $2 # SKIP ${3:-}"; ktap_skipped=$((ktap_skipped + 1)) ;;
	*) echo "not ok $ktap_count $2${3:+ # $3}"; ktap_failed=$((ktap_failed + 1)) ;;
	esac
}

# check DESCRIPTION COMMAND...: one KTAP result from a command's status.
check() {
	local desc=$1
	shift
	if "$@"; then ktap_result ok "$desc"; else ktap_result fail "$desc"; fi
}

# expect WHAT GOT WANT: whether GOT is WANT; if not, says what was
# compared and both values, so a failed check shows why.
expect() {
	[ "$2" = "$3" ] && return 0
	echo "# $1: got '$2', want '$3'"
	return 1
}

# expect_num WHAT GOT OP WANT: an integer comparison (OP: -eq, -gt, -ge,
# -lt, -le), saying both values if it does not hold.
expect_num() {
	[ "$2" "$3" "$4" ] 2>/dev/null && return 0
	echo "# $1: got '$2', want $3 $4"
	return 1
}

# expect_has WHAT TEXT REGEX: whether a line of TEXT matches REGEX
# (grep); if none does, says so and shows TEXT.
expect_has() {
	grep -q -- "$3" <<<"$2" && return 0
	echo "# $1: no line matches '$3' in:"
	sed 's/^/#   /' <<<"$2"
	return 1
}

# check_eq DESCRIPTION GOT WANT: a check that GOT is WANT, printing both
# when it is not.
check_eq() { check "$1" expect "$1" "$2" "$3"; }

# missing DESCRIPTION REASON: one result for a check whose prerequisite
# is missing: a SKIP elsewhere, a failure in the project's VM (see
# skip_all).
missing() {
	if [ -n "${RSNIC_IN_VM:-}" ]; then ktap_result fail "$1" "$2"; else ktap_result skip "$1" "$2"; fi
}

ktap_finish() {
	# Where the test's time went: what keeps `make check` short.
	echo "# seconds taken up to each result: ${ktap_times% }"
	echo "# totals: $((ktap_count - ktap_failed - ktap_skipped)) pass, $ktap_failed fail, $ktap_skipped skip"
	[ "$ktap_failed" -eq 0 ] && exit $KSFT_PASS
	exit $KSFT_FAIL
}

# The debug kernel (KERNEL=debug: KASAN, lockdep...) runs several times
# slower; tests that need a rate the VM can sustain scale down on it.
is_debug_kernel() { case $(uname -r) in *-debug) return 0 ;; esac; return 1; }

# skip_all REASON: a prerequisite is missing. Elsewhere the whole test
# skips (kselftest's convention); in the project's VM (guest-check.sh
# sets RSNIC_IN_VM) the project provides every card, device, module and
# tool, so a missing one is a failure.
skip_all() {
	[ -n "${RSNIC_IN_VM:-}" ] && bail_out "$1 (the project's VM provides it: a failure there)"
	echo "TAP version 13"
	echo "1..0 # SKIP $1"
	exit $KSFT_SKIP
}
# bail_out REASON: the test cannot run in an environment that should have
# everything it needs: a failure (KTAP "Bail out!"), never a skip.
bail_out() { echo "Bail out! $1"; exit 1; }

# The PCI addresses of the rsnic functions with device ID $1, in bus
# order. Shell built-ins only: every test asks, and each process started
# costs some 70 ms in this VM.
rsnic_addrs() { # DEVICE-ID
	local d v
	for d in /sys/bus/pci/devices/*; do
		read -r v <"$d/device" && [ "$v" = "$1" ] || continue
		read -r v <"$d/vendor" && [ "$v" = "$RSNIC_VENDOR" ] || continue
		echo "${d##*/}"
	done
}

# PCI addresses of the cards' PFs in bus order; the harness puts card A
# on the first root port and card B on the second.
rsnic_pf_addrs() { rsnic_addrs $RSNIC_PF_DEVICE; }

# The permanent MAC address of a PCI function's netdev (the card's own,
# which a PF and its VF share), wherever that netdev is.
perm_mac() { # PCI-ADDR
	local n
	n=$(netif_of "$1")
	[ -n "$n" ] && ethtool -P "$n" 2>/dev/null | awk '{print $3}'
}

# PCI address of a card's VF (none until plugged): the VF whose
# permanent MAC is its PF's.
vf_addr() { # A|B
	local want d vfs
	vfs=$(rsnic_addrs $RSNIC_VF_DEVICE)
	[ -n "$vfs" ] || return 0
	want=$(perm_mac "$(card_addr "$1")")
	for d in $vfs; do
		[ "$(perm_mac "$d")" = "$want" ] && echo "$d"
	done
}

# nap SECONDS: sleeps without starting a process (a read that times out
# on a pipe no one writes to): on the debug kernel a process start takes
# 0.3-0.75 s, which stretched each 0.1 s step of wait_until several-fold.
exec {NAP_FD}<> <(:)
nap() { read -r -t "$1" -u "$NAP_FD" _ || :; }

# wait_until TENTHS CMD...: runs CMD every 0.1 s until it succeeds, for
# up to TENTHS tenths of a second, three times that on the debug kernel
# (everything there takes 3-7 times longer; the runner's time limits are
# three times as long too); fails if it never did. Every wait of the
# tests is this loop. (With a sleep process a step, the debug kernel's
# waits had been several times longer than asked, and rdma_user.sh's wait
# for a pyverbs process there came to depend on that.)
# KERNEL_FACTOR: how much longer a hang bound is on this kernel (3 on the
# debug kernel, as the runner's limits).
KERNEL_FACTOR=1
is_debug_kernel && KERNEL_FACTOR=3
wait_until() {
	local tenths=$(($1 * KERNEL_FACTOR)) i
	shift
	for ((i = 0; i < tenths; i++)); do
		"$@" && return 0
		nap 0.1
	done
	return 1
}

# Plugs card $1's VF in and waits up to 10 s for its netdev. The first
# time, the harness hot-plugs it (QMP device_add); after that the device
# stays in QEMU and a replug is a PCI rescan, because QEMU 11.1 aborts on
# device_del of a vfio-user-pci device with MSI-X (see testing.rst).
vf_plug() { # A|B
	local reply
	reply=$(harness vf "$1" plug) || return 1
	[ "$reply" = "ok already plugged" ] && echo 1 >/sys/bus/pci/rescan
	wait_until 100 vf_present "$1" || return 1
	# Under rx_stream.sh the VF streams too.
	[ -z "$RSNIC_RX_STREAM" ] ||
		ethtool --set-priv-flags "$(netif_of "$(vf_addr "$1")")" rx-stream on
}
vf_present() { [ -n "$(vf_addr "$1")" ]; }

# Waits up to 10 s until card $1 delivers to data path $2 (vf or
# synthetic), as the card itself reports it.
wait_datapath() { wait_until 100 datapath_is "$@"; } # A|B vf|synthetic
datapath_is() { harness card "$1" datapath | grep -q "datapath=$2 "; }

# Removes card $1's VF the way a hot-unplug does for the driver: the PCI
# core unbinds the driver and deletes the device.
vf_unplug() { # A|B
	local addr
	addr=$(vf_addr "$1")
	[ -n "$addr" ] || return 1
	echo 1 >"/sys/bus/pci/devices/$addr/remove"
}

# Removes every VF the guest sees. A PCI rescan (fault_removal.sh's, to
# find a removed PF again) also finds the VFs QEMU still holds from an
# earlier test's plug (vf_plug): a test that rescans takes them away
# again.
vf_remove_all() {
	local d
	for d in $(rsnic_addrs $RSNIC_VF_DEVICE); do
		echo 1 >"/sys/bus/pci/devices/$d/remove"
	done
}

card_addr() { # A|B
	local addrs
	addrs=($(rsnic_pf_addrs))
	case $1 in A) echo "${addrs[0]:-}" ;; B) echo "${addrs[1]:-}" ;; esac
}

# fill_tx_ring IP: 2000 small UDP datagrams to IP at once, more than a
# TX ring holds; a forced large send buffer keeps the unsent skbs from
# blocking the socket first (for a stalled TX queue to fill).
fill_tx_ring() {
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 32, 16 << 20)  # SO_SNDBUFFORCE
s.setblocking(False)
for _ in range(2000):
    try:
        s.sendto(b"x" * 64, (sys.argv[1], 9))
    except BlockingIOError:
        pass
' "$1"
}

# "IRQ count" for each of a card's MSI-X vectors, from the kernel's own
# count (/proc/interrupts, summed over CPUs).
vector_irqs() { # A|B
	local irq
	for irq in $(ls /sys/bus/pci/devices/"$(card_addr "$1")"/msi_irqs); do
		awk -v irq="$irq:" '$1 == irq { n = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i; print irq, n }' /proc/interrupts
	done
}
card_irqs() { vector_irqs "$1" | awk '{n += $2} END {print n + 0}'; } # A|B

is_bound() { [ -e "/sys/bus/pci/drivers/rsnic/$1" ]; }

# fresh_probe A|B: the card's PF unbound and bound again, so its netdev
# has the driver's defaults whatever an earlier test set; true once the
# new netdev is there.
fresh_probe() {
	local addr
	addr=$(card_addr "$1")
	echo "$addr" >/sys/bus/pci/drivers/rsnic/unbind &&
		echo "$addr" >/sys/bus/pci/drivers/rsnic/bind &&
		wait_until 50 netif_present "$addr"
}
netif_present() { [ -n "$(netif_of "$1")" ]; }

# Combined channels of netdev $1 (card A's by default): the most it
# offers, and how many are in use.
channels_max() { ethtool -l "${1:-$NETIF_A}" | awk '/^Combined:/ {print $2; exit}'; }
channels_in_use() { ethtool -l "${1:-$NETIF_A}" | awk '/^Combined:/ {v=$2} END {print v}'; }

bound_count() { ls -d /sys/bus/pci/drivers/rsnic/0000:* 2>/dev/null | wc -l; }

load_driver() { lsmod | grep -q '^rsnic ' || insmod "$RSNIC_KO"; }

unload_driver() { ! lsmod | grep -q '^rsnic ' || rmmod rsnic; }

# Sends one request to the harness on the host (see qemu/vm.py,
# HarnessControl) and prints its reply; fails unless the reply is "ok...".
harness() {
	local reply
	[ -c "$RSNIC_CTL" ] || { echo "no harness control port $RSNIC_CTL" >&2; return 1; }
	exec {fd}<>"$RSNIC_CTL"
	echo "$*" >&$fd
	read -r -t 20 reply <&$fd
	exec {fd}>&-
	echo "$reply"
	[[ $reply == ok* ]]
}

# Kernel log lines since the mark set by dmesg_mark: a line of its own
# in the log, not a line count, which the ring buffer's wrapping makes
# wrong. Should the mark have scrolled out, the whole log is returned:
# a false alarm rather than a missed warning.
dmesg_mark() {
	dmesg_mark_text="rsnic-selftest-mark $$ $RANDOM$RANDOM"
	echo "$dmesg_mark_text" >/dev/kmsg
}
dmesg_since_mark() {
	dmesg | awk -v m="$dmesg_mark_text" '
		{ lines[NR] = $0 }
		index($0, m) { start = NR }
		END { for (i = start + 1; i <= NR; i++) print lines[i] }'
}

# Network set-up of the two-card VM: card A's netdev stays in the default
# netns as $NETIF_A (10.99.0.1, fd99::1), card B's moves into netns
# "remote" as $NETIF_B (10.99.0.2, fd99::2).
NS=remote
IP_A=10.99.0.1
IP_B=10.99.0.2
IP6_A=fd99::1
IP6_B=fd99::2

netif_of() { # PCI-ADDR: its netdev in this netns, if any
	local n
	# In switchdev mode the PF's device also parents its VF's
	# representor (pf0vf0), as mlx5's do: not the function's own netdev.
	for n in "/sys/bus/pci/devices/$1/net/"*; do
		[ -e "$n" ] || continue
		[[ $(cat "$n/phys_port_name" 2>/dev/null) == pf*vf* ]] && continue
		echo "${n##*/}"
		return 0
	done
	return 0
}

# The virtio-net netdevs (the benchmarks' reference pair), one a line.
virtio_ifs() {
	local d
	for d in /sys/bus/virtio/drivers/virtio_net/virtio*/net/*; do basename "$d"; done
}
# virtio_pair_ifs tap|dgram: the two virtio-net interfaces of one of the
# benchmark's pairs (qemu/vm.py VIRTIO_MACS), near end first.
virtio_pair_ifs() {
	local prefix d
	case $1 in
	tap) prefix=52:54:00:7a ;;
	dgram) prefix=52:54:00:d6 ;;
	*) return 1 ;;
	esac
	for d in $(virtio_ifs); do
		echo "$(cat "/sys/class/net/$d/address") $d"
	done | grep "^$prefix:" | sort | cut -d' ' -f2
}

# find_netifs: sets NETIF_A and NETIF_B, the two cards' netdevs (both in
# the default netns); skips the whole test if a card or netdev is missing.
find_netifs() {
	local a b
	a=$(card_addr A)
	b=$(card_addr B)
	[ -n "$a" ] && [ -n "$b" ] || skip_all "expected 2 rsnic PFs (not in the rsnic VM?)"
	NETIF_A=$(netif_of "$a")
	[ -n "$NETIF_A" ] || skip_all "card A has no netdev"
	NETIF_B=$(netif_of "$b")
	[ -n "$NETIF_B" ] || skip_all "card B has no netdev"
}

# Finds the netdevs and builds the two-host network; skips the whole test
# if the cards are missing.
# The ip commands go in batches (-force: each runs, an error is shown and
# the next runs all the same): a process start costs 0.3-0.7 s on the
# debug kernel, and the fault tests set up again after each reload.
net_setup() {
	find_netifs
	[ ! -e /run/netns/$NS ] || ip netns del $NS
	ip netns add $NS
	ip -force -batch - <<-EOF
		link set $NETIF_B netns $NS
		addr flush dev $NETIF_A
		addr add $IP_A/24 dev $NETIF_A
		addr add $IP6_A/64 dev $NETIF_A nodad
		link set $NETIF_A up
	EOF
	ip -n $NS -force -batch - <<-EOF
		link set lo up
		addr add $IP_B/24 dev $NETIF_B
		addr add $IP6_B/64 dev $NETIF_B nodad
	EOF
	if [ -n "$RSNIC_RX_STREAM" ]; then
		# Both ends receive into streams (rx_stream.sh runs tests so).
		ethtool --set-priv-flags "$NETIF_A" rx-stream on || bail_out "rx-stream on $NETIF_A refused"
		ip netns exec $NS ethtool --set-priv-flags "$NETIF_B" rx-stream on ||
			bail_out "rx-stream on $NETIF_B refused"
	fi
	ip -n $NS link set "$NETIF_B" up
	wait_carrier "$NETIF_A" 1 && wait_carrier "$NETIF_B" 1 $NS
}

# Undoes net_setup: what runs in netns "remote" (servers a test started
# there) ends, and card B's netdev returns to the default netns.
net_cleanup() {
	local pids
	pids=$(ip netns pids $NS 2>/dev/null)
	[ -z "$pids" ] || { kill $pids; wait_until 20 no_netns_pids; kill -9 $(ip netns pids $NS 2>/dev/null) 2>/dev/null; }
	ip netns exec $NS ethtool --set-priv-flags "$NETIF_B" rx-stream off 2>/dev/null
	ethtool --set-priv-flags "$NETIF_A" rx-stream off 2>/dev/null
	# Its name may be taken here meanwhile (card A rebound): then it
	# comes back under the next free ethN.
	ip -n $NS link set "$NETIF_B" netns 1 2>/dev/null ||
		ip -n $NS link set "$NETIF_B" netns 1 name "eth%d" 2>/dev/null
	ip -force -batch - 2>/dev/null <<-EOF
		netns del $NS
		addr flush dev $NETIF_A
		link set $NETIF_A mtu 1500
		link set $NETIF_B mtu 1500
	EOF
	harness cable up >/dev/null 2>&1
}

no_netns_pids() { [ -z "$(ip netns pids $NS 2>/dev/null)" ]; }

# wait_carrier IFACE 0|1 [NETNS]: waits up to 5 s for the carrier state.
wait_carrier() { wait_until 50 carrier_of "$@"; }
# In this netns from sysfs (no process; a down or missing interface
# reads as no carrier), in another through ip.
carrier_of() {
	local c
	if [ -z "${3:-}" ]; then
		read -r c 2>/dev/null </sys/class/net/"$1"/carrier
		[ "${c:-0}" = "$2" ]
	else
		[ "$(ip -n "$3" -o link show "$1" 2>/dev/null | grep -c LOWER_UP)" = "$2" ]
	fi
}

# The kernel's driver selftests built for the running kernel: their YNL
# library reads the netdev netlink family.
KSFT=/rsnic-cache/ksft/normal
is_debug_kernel && KSFT=/rsnic-cache/ksft/debug
export KSFT

# "ID NAPI_ID INFLIGHT" for each page pool of card A's netdev, as the
# netdev netlink family lists them (page-pool-get).
page_pools() {
	python3 - "$KSFT/net" "$(cat /sys/class/net/$NETIF_A/ifindex)" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from lib.py import NetdevFamily
for p in NetdevFamily().page_pool_get({}, dump=True):
    if p.get("ifindex") == int(sys.argv[2]):
        print(p["id"], p.get("napi-id", 0), p.get("inflight", 0))
PY
}
# Frees the skbs each CPU's deferred-free list holds: an skb freed on
# another CPU than the one that received it waits there (a page pool's
# page with it) until that CPU next runs the network softirq, which a
# loopback packet sent from it does.
flush_deferred_skbs() {
	local cpu
	for cpu in $(seq 0 $(($(nproc) - 1))); do
		taskset -c "$cpu" ping -q -c 1 -W 1 127.0.0.1 >/dev/null 2>&1
	done
}
# Waits up to 10 s for card A's netdev to have N page pools (old ones go
# once all their pages are back).
wait_page_pools() { wait_until 100 page_pools_are "$1"; } # N
page_pools_are() { [ "$(page_pools | wc -l)" = "$1" ] || { flush_deferred_skbs; return 1; }; }

# Statistics of card A's netdev: rtnl (ip -s link) and qstats (netdev
# netlink, through qstats.py).
QSTATS="$(dirname "${BASH_SOURCE[0]}")/qstats.py"

# "rx_packets rx_bytes tx_packets tx_bytes" from rtnl (ip -s: the line
# after "RX:" or "TX:" starts with bytes, packets).
rtnl() {
	ip -s link show "$NETIF_A" | awk '/^ *RX:/ { getline; rp = $2; rb = $1 }
		/^ *TX:/ { getline; tp = $2; tb = $1 } END { print rp, rb, tp, tb }'
}
# The same four from qstats: "device" totals, or "queues" summed.
qstats() { "$QSTATS" "$NETIF_A" "$1"; }

# tcp_sink PORT OUT [ipv6]: in netns $NS, accepts one TCP connection on
# PORT (any address; with the third argument, IPv6) and writes what
# arrives to OUT, giving up after 60 s without a connection or data.
# Run it in the background before tcp_send_file.
tcp_sink() {
	ip netns exec $NS python3 -c '
import socket, sys
six = len(sys.argv) > 3
s = socket.socket(socket.AF_INET6 if six else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::" if six else "0.0.0.0", int(sys.argv[1]))); s.listen(1)
s.settimeout(60)
c, _ = s.accept()
c.settimeout(60)
with open(sys.argv[2], "wb") as f:
    while (b := c.recv(65536)):
        f.write(b)
' "$@"
}

# tcp_send_file DST PORT FILE: sends FILE to DST:PORT over one TCP
# connection.
tcp_send_file() {
	python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
s.sendall(open(sys.argv[3], "rb").read()); s.close()
' "$@"
}
# tcp_file_sha DST PORT FILE: sends FILE to DST:PORT over one TCP
# connection to a tcp_sink in $NS; prints the SHA-256 of what arrived.
tcp_file_sha() {
	local six= out=/tmp/tcp_file_sha.$2
	[[ $1 == *:* ]] && six=ipv6
	rm -f "$out"
	tcp_sink "$2" "$out" $six &
	local server=$!
	sleep 0.5
	tcp_send_file "$1" "$2" "$3"
	wait $server
	sha256sum <"$out" | cut -d" " -f1
}
# rtnl minus what the VF path counted (ethtool -S vf_*): what the
# synthetic NIC's own queues must add up to.
rtnl_own_queues() {
	local r=($(rtnl)) v
	v=($(ethtool -S "$NETIF_A" | awk '$1 == "vf_rx_packets:" {a=$2} $1 == "vf_rx_bytes:" {b=$2}
		$1 == "vf_tx_packets:" {c=$2} $1 == "vf_tx_bytes:" {d=$2} END {print a+0, b+0, c+0, d+0}'))
	echo $((r[0] - v[0])) $((r[1] - v[1])) $((r[2] - v[2])) $((r[3] - v[3]))
}
# Packets "rx tx" of card B's netdev (in $NS), from rtnl.
peer_packets() {
	ip -n $NS -s link show "$NETIF_B" | awk '/^ *RX:/ { getline; r = $2 } /^ *TX:/ { getline; t = $2 } END { print r, t }'
}
# Packets "rx tx" card A's function counted on its queue pairs (harness).
card_packets() {
	harness card A stats | tr ' ' '\n' |
		awk -F= '/^q[0-9]+_rx_packets=/ {r += $2} /^q[0-9]+_tx_packets=/ {t += $2} END {print r + 0, t + 0}'
}
# independent_count [card]: over 200 pings, what card A's netdev counted
# (rtnl) equals what the peer's netdev counted the other way, and (with
# "card") what card A's own queue pairs counted: counts that do not come
# from the driver. Retries a few times in case a stray frame (IPv6
# neighbour discovery) is filtered on one side inside the window.
independent_count() {
	local i a0 a1 b0 b1 c0 c1 da_rx da_tx db_rx db_tx dc_rx dc_tx
	for i in 1 2 3 4 5; do
		a0=($(rtnl)) b0=($(peer_packets)) c0=($(card_packets))
		ping -c 200 -i 0.01 -q $IP_B >/dev/null
		sleep 0.3
		a1=($(rtnl)) b1=($(peer_packets)) c1=($(card_packets))
		da_rx=$((a1[0] - a0[0])) da_tx=$((a1[2] - a0[2]))
		db_rx=$((b1[0] - b0[0])) db_tx=$((b1[1] - b0[1]))
		dc_rx=$((c1[0] - c0[0])) dc_tx=$((c1[1] - c0[1]))
		echo "# A rx $da_rx tx $da_tx; peer rx $db_rx tx $db_tx; card A rx $dc_rx tx $dc_tx"
		[ $da_tx -ge 200 ] && [ $da_rx -ge 200 ] && [ $da_tx = $db_rx ] && [ $da_rx = $db_tx ] &&
			{ [ "${1:-}" != card ] || { [ $da_tx = $dc_tx ] && [ $da_rx = $dc_rx ]; }; } && return 0
	done
	return 1
}
# Whether qstats $1 ("device" totals or "queues" summed, the latter
# without the VF's share) equal rtnl, reading with no traffic running
# (retries a few times in case a stray frame arrives between the reads).
agree() {
	local i a b
	for i in 1 2 3 4 5; do
		if [ "$1" = queues ]; then a=$(rtnl_own_queues); else a=$(rtnl); fi
		b=$(qstats "$1")
		[ "$a" = "$b" ] && return 0
		sleep 0.2
	done
	echo "# rtnl:   $a"
	echo "# qstats: $b ($1; $(channels_in_use) of $(channels_max) queues in use)"
	return 1
}

# GFT: card A's debugfs directory, writes that report the errno, counters.
GFT_PY="$(dirname "${BASH_SOURCE[0]}")/gft.py"
# How long a test connection stays open while its flows are inspected.
GFT_HOLD=4
is_debug_kernel && GFT_HOLD=10
gft_w() { "$GFT_PY" write "$GFT/$1" "$2"; } # FILE TEXT: prints OK or ENAME
gft_stat() { awk -v n="$1" '$1 == n {print $2}' "$GFT/stats"; }
gft_clear() { gft_w rules flush >/dev/null; gft_w flows flush >/dev/null; }
# What card A's GFT really holds ("ok flows=N max=M; flow; flow..."), and
# one of its counters ("gft-stats" key=value).
card_gft_flows() { harness card A gft-flows; }
card_gft_stat() { harness card A gft-stats | tr ' ' '\n' | awk -F= -v n="$1" '$1 == n {print $2}'; }
# Flows of card A whose line has all the words given, as the card sees
# them and as the driver lists them.
card_flows_with() { card_gft_flows | tr ';' '\n' | grep -c -- "$(printf '%s.*' "$@")"; }
drv_flows_with() { grep -c -- "$(printf '%s.*' "$@")" "$GFT/flows"; }
# Waits up to 10 s until a receiver started in the background is ready: a
# UDP socket bound to PORT, or a TCP socket listening on it, in netns
# "remote" (or in NETNS; "" for this one). A TCP connect before then is
# refused, and the SYN and RST would cross the GFT too.
# udp|tcp PORT [NETNS]: NETNS defaults to the remote one ($NS); "" is
# the VM's own. Says so when nothing came to listen.
wait_listening() {
	local ns=${3-$NS}
	wait_until 100 listening "$@" && return 0
	echo "# nothing listens on $1 port $2 ${ns:+in netns $ns }after 10 s"
	return 1
}
listening() {
	local ns=${3-$NS}
	[ -n "$(${ns:+ip netns exec "$ns"} ss -Hl"${1:0:1}"n "sport = :$2")" ]
}
# Starts an iperf3 server in netns "remote" on PORT (more iperf3 server
# options may follow) and returns once it listens: `iperf3 -s -D` binds
# only after it has forked, and a client started before then is refused
# and exits.
iperf3_server() { # PORT [ARGS...]
	local port=$1
	shift
	ip netns exec $NS iperf3 -s -D -p "$port" "$@" && wait_listening tcp "$port"
}
# Waits up to 10 s until card A holds N flows whose line has all WORDS.
wait_card_flows() { wait_until 100 card_flows_are "$@"; } # N WORDS...
card_flows_are() {
	local n=$1
	shift
	[ "$(card_flows_with "$@")" = "$n" ]
}
# Starts tcpdump in the background (in netns NS if given, else "") and
# returns once it listens. Its decoded packets go to OUT, a line each as
# it arrives: in immediate mode, as the kernel otherwise hands captured
# packets over in blocks, up to a second late, and a capture stopped
# before then has seen none of them. Immediate mode gives each packet a
# ring slot of the snap length: at tcpdump's default (256 KiB) its 2 MiB
# ring holds 8 packets, and a burst the decoder cannot keep up with is
# dropped (55 of 400 echoes in one xsk.sh run); 512 bytes hold every
# header the tests read. tcpdump verifies checksums only of whole
# packets: a test that reads its verdicts sets CAPTURE_SNAP=0 (tcpdump's
# default) for its few packets.
capture() { # NS|"" IFACE COUNT FILTER OUT
	local err
	err=$(mktemp)
	${1:+ip netns exec "$1"} tcpdump --immediate-mode -s "${CAPTURE_SNAP:-512}" -l -i "$2" -nn -vv -c "$3" "$4" >"$5" 2>"$err" &
	wait_until 100 grep -q "listening on" "$err"
	rm -f "$err"
}
# Stops the captures whose PIDs are given: each may run up to 5 s more to
# reach its COUNT and end by itself; what is left is ended then.
capture_stop() { # PID...
	wait_until 50 all_ended "$@"
	kill "$@" 2>/dev/null
	wait "$@" 2>/dev/null
	return 0
}
all_ended() { # PID...
	local p
	for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}
# Sends N datagrams from source port SPORT to B:PORT, 10 ms apart; prints
# how many arrived.
udp_burst() { # PORT N SPORT
	local got
	got=$(mktemp)
	ip netns exec $NS "$GFT_PY" udp-recv "$1" "$2" 5 >"$got" &
	wait_listening udp "$1"
	"$GFT_PY" udp-send $IP_B "$1" "$2" "$3"
	wait $!
	cat "$got"
	rm -f "$got"
}
# udp_burst_settled PORT N SPORT WORDS...: udp_burst, but the first
# datagram alone and the other N-1 once card A holds one flow whose line
# has all WORDS (what the first one's exception installed or updated):
# that the driver is done before the next datagram, 10 ms later, is not
# the exception path's promise (on a loaded host an install took longer,
# and two datagrams missed). Prints how many arrived.
udp_burst_settled() {
	local port=$1 n=$2 sport=$3 got
	shift 3
	got=$(udp_burst "$port" 1 "$sport")
	wait_card_flows 1 "$@"
	echo $((got + $(udp_burst "$port" $((n - 1)) "$sport")))
}
# A flow's counter from the driver's listing.
drv_flow_field() { # FIELD WORDS...
	local field=$1
	shift
	grep -- "$(printf '%s.*' "$@")" "$GFT/flows" | head -n1 | tr ' ' '\n' |
		awk -F= -v f="$field" '$1 == f {print $2}'
}

# The two-host network with quiet links for exact GFT counts: no IPv6
# (router solicitations, MLD), static neighbours (ARP bypasses the GFT
# anyway), card A's GFT empty.
gft_setup() {
	net_setup || echo "# no carrier after set-up"
	GFT=$RSNIC_DEBUGFS/$(card_addr A)/gft
	[ -d "$GFT" ] || skip_all "no $GFT (driver without GFT?)"
	sysctl -qw "net.ipv6.conf.$NETIF_A.disable_ipv6=1"
	ip netns exec $NS sysctl -qw "net.ipv6.conf.$NETIF_B.disable_ipv6=1"
	MAC_A=$(cat "/sys/class/net/$NETIF_A/address")
	MAC_B=$(ip netns exec $NS cat "/sys/class/net/$NETIF_B/address")
	ip neigh replace $IP_B lladdr "$MAC_B" dev "$NETIF_A"
	ip -n $NS neigh replace $IP_A lladdr "$MAC_A" dev "$NETIF_B"
	gft_clear
	ethtool -K "$NETIF_A" hw-tc-offload on
}

gft_cleanup() {
	gft_clear
	ethtool -K "$NETIF_A" hw-tc-offload on 2>/dev/null
	"$GFT_PY" write "$GFT/max_flows" 65536 >/dev/null
	"$GFT_PY" write "$GFT/idle_timeout_ms" 30000 >/dev/null
	"$GFT_PY" write "$GFT/fail_installs" 0 >/dev/null
	"$GFT_PY" write "$GFT/exception_rate" 50000 >/dev/null
	"$GFT_PY" write "$GFT/exception_burst" 1024 >/dev/null
	sysctl -qw "net.ipv6.conf.$NETIF_A.disable_ipv6=0"
	net_cleanup
}

# No kernel warning, oops or sanitizer report since dmesg_mark.
dmesg_clean() { ! dmesg_since_mark | grep -Eq 'WARNING|BUG|Oops|KASAN|UBSAN|lockdep|circular locking'; }

# RDMA ------------------------------------------------------------------

# The auxiliary driver of the RDMA half (the kernel crate names an
# auxiliary driver <module>.<name>).
RDMA_AUX_DRV=/sys/bus/auxiliary/drivers/rsnic.rsnic

# The RDMA device (ib_device name) of a PF, e.g. rsnic_0: it sits under
# the PF itself (registered there, as mlx5 and mana do, though it binds
# through the auxiliary device rsnic.rdma.<card>).
ibdev_of() { ls /sys/bus/pci/devices/"$1"/infiniband 2>/dev/null | head -n1; }

# The auxiliary device of a PF's RDMA half, e.g. rsnic.rdma.1.
rdma_aux_of() { basename "$(ls -d /sys/bus/pci/devices/"$1"/rsnic.rdma.* 2>/dev/null | head -n1)"; }

# "STATE PHYS_STATE" of port 1 of an RDMA device, as `rdma link` shows them.
rdma_port_state() { rdma link show "$1/1" | awk '{for (i = 1; i < NF; i++) if ($i == "state" || $i == "physical_state") printf "%s ", $(i + 1)}'; }

# The GIDs ib_core lists for port 1 of an RDMA device, one per line,
# sorted, as addresses (IPv4-mapped ones as dotted quads).
sysfs_gids() {
	local g
	for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do cat "$g"; done |
		python3 -c 'import ipaddress, sys
for line in sys.stdin:
    a = ipaddress.IPv6Address(line.strip())
    if int(a):
        print(a.ipv4_mapped or a)' | sort
}

# roce_gid_index IBDEV IPV4: the index of the RoCE v2 GID of an IPv4
# address in port 1's table (what ibv_*_pingpong -g and perftest -x take).
roce_gid_index() {
	local f i want
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${f##*/}
		[ "$(cat "$f")" = "$want" ] || continue
		[ "$(cat /sys/class/infiniband/"$1"/ports/1/gid_attrs/types/"$i" 2>/dev/null)" = "RoCE v2" ] &&
			echo "$i" && return 0
	done
	return 1
}

# pyverbs_card_a_setup: the set-up of a pyverbs test on card A's RDMA
# device: the network (torn down on exit), the kernel log mark, and
# IB_A and GID_A (its RoCE v2 GID of IP_A).
pyverbs_card_a_setup() {
	net_setup || echo "# no carrier after set-up"
	python3 -c 'import pyverbs' 2>/dev/null || skip_all "python3-pyverbs not installed"
	trap net_cleanup EXIT
	dmesg_mark
	IB_A=$(ibdev_of "$(card_addr A)")
	[ -n "$IB_A" ] || bail_out "no RDMA device under card A's PF"
	GID_A=$(roce_gid_index "$IB_A" "$IP_A")
}

# The GIDs the card's RDMA engine holds, one per line, sorted.
card_gids() { harness card "$1" rdma-gids | tr ' ' '\n' | sed -n 's/^[0-9]*=//p' | sort; }

# wait_port IBDEV "STATE PHYS ": waits up to 5 s for port 1 to be so.
wait_port() { wait_until 50 port_is "$@"; }
port_is() { [ "$(rdma_port_state "$1")" = "$2" ]; }

# wait_gids A|B IBDEV ADDR...: waits up to 5 s until ib_core lists the
# addresses as GIDs and the card holds the same table.
wait_gids() { wait_until 50 gids_are "$@"; }
gids_are() {
	local card=$1 ibdev=$2
	shift 2
	[ "$(sysfs_gids "$ibdev" | grep -cxF "${@/#/-e}")" = $# ] &&
		[ "$(sysfs_gids "$ibdev")" = "$(card_gids "$card")" ]
}

# NVMe over RDMA -----------------------------------------------------------

# nvmet and nvme-rdma open their RDMA endpoints in init_net only, so for
# them card B's netdev stays in the default namespace, in a VRF of its own
# (table 20): 10.99.0.2 is then not a local address for card A's side and
# the traffic crosses the cable between the cards, as with two hosts.
VRF_B=vrf-b
rdma_vrf_setup() {
	find_netifs
	ip link add $VRF_B type vrf table 20 || skip_all "no VRF support in this kernel"
	# The VRF's table before the local one, or card B would find card A's
	# address local and drop its packets as martians.
	ip rule add pref 32765 table local
	ip rule del pref 0
	ip link set $VRF_B up
	ip link set "$NETIF_B" master $VRF_B
	for dev in "$NETIF_A" "$NETIF_B"; do ip addr flush dev "$dev"; done
	ip addr add $IP_A/24 dev "$NETIF_A"
	ip addr add $IP_B/24 dev "$NETIF_B"
	ip link set "$NETIF_A" up
	ip link set "$NETIF_B" up
	wait_carrier "$NETIF_A" 1 && wait_carrier "$NETIF_B" 1
}

rdma_vrf_cleanup() {
	ip link set "$NETIF_B" nomaster 2>/dev/null
	ip link del $VRF_B 2>/dev/null
	ip rule add pref 0 table local 2>/dev/null && ip rule del pref 32765 table local 2>/dev/null
	ip addr flush dev "$NETIF_A" 2>/dev/null
	ip addr flush dev "$NETIF_B" 2>/dev/null
}

NVMET=/sys/kernel/config/nvmet
NVME_NQN=rsnic-test

# nvmet_setup FILE [TRADDR [ipv4|ipv6]]: an NVMe/RDMA target on TRADDR
# (default card B's address), exporting FILE as namespace 1.
nvmet_setup() {
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	modprobe nvmet-rdma || return 1
	mkdir $NVMET/subsystems/$NVME_NQN &&
		echo 1 > $NVMET/subsystems/$NVME_NQN/attr_allow_any_host &&
		mkdir $NVMET/subsystems/$NVME_NQN/namespaces/1 &&
		echo "$1" > $NVMET/subsystems/$NVME_NQN/namespaces/1/device_path &&
		echo 1 > $NVMET/subsystems/$NVME_NQN/namespaces/1/enable &&
		nvmet_port 1 "${2:-$IP_B}" "${3:-ipv4}"
}

# nvmet_port N TRADDR [ipv4|ipv6]: port N serves the subsystem over RDMA
# on TRADDR:4420.
nvmet_port() {
	mkdir $NVMET/ports/$1 &&
		echo rdma > $NVMET/ports/$1/addr_trtype &&
		echo "${3:-ipv4}" > $NVMET/ports/$1/addr_adrfam &&
		echo $2 > $NVMET/ports/$1/addr_traddr &&
		echo 4420 > $NVMET/ports/$1/addr_trsvcid &&
		ln -s $NVMET/subsystems/$NVME_NQN $NVMET/ports/$1/subsystems/$NVME_NQN
}

# nvmet_port_del N: port N gone.
nvmet_port_del() {
	rm -f $NVMET/ports/$1/subsystems/$NVME_NQN 2>/dev/null
	rmdir $NVMET/ports/$1 2>/dev/null
}

nvmet_cleanup() {
	nvmet_port_del 1
	[ -e $NVMET/subsystems/$NVME_NQN/namespaces/1 ] &&
		echo 0 > $NVMET/subsystems/$NVME_NQN/namespaces/1/enable
	rmdir $NVMET/subsystems/$NVME_NQN/namespaces/1 2>/dev/null
	rmdir $NVMET/subsystems/$NVME_NQN 2>/dev/null
}

# The block device of the NVMe controller connected to $NVME_NQN.
nvme_disk() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = $NVME_NQN ] || continue
		ls "$c" | grep -m1 '^nvme[0-9]*n[0-9]*$' && return 0
	done
	return 1
}

# wait_nvme_disk: prints the block device of the controller connected to
# $NVME_NQN once it is there (up to 10 s); fails if it does not come.
wait_nvme_disk() { wait_until 100 nvme_disk; }

# nvme_connect [TRADDR HOST_TRADDR]: the host connects to the target at
# TRADDR from HOST_TRADDR through rdma_cm (default: card B's address,
# from card A's).
nvme_connect() {
	modprobe nvme-rdma || return 1
	echo "transport=rdma,traddr=${1:-$IP_B},trsvcid=4420,nqn=$NVME_NQN,host_traddr=${2:-$IP_A}" > /dev/nvme-fabrics
}

nvme_disconnect() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = $NVME_NQN ] && echo 1 > "$c/delete_controller"
	done
	return 0
}

# nvme_rdma_require: sets IB_A and IB_B (the cards' RDMA devices), or
# skips the test when they or the NVMe over RDMA modules are missing.
nvme_rdma_require() {
	IB_A=$(ibdev_of "$(card_addr A)")
	IB_B=$(ibdev_of "$(card_addr B)")
	[ -n "$IB_A" ] && [ -n "$IB_B" ] || skip_all "no RDMA device under the PFs"
	have_nvme_rdma || skip_all "the kernel has no NVMe over RDMA modules"
}

# have_nvme_rdma: whether the kernel has nvme-rdma and nvmet-rdma.
have_nvme_rdma() { modinfo nvme-rdma >/dev/null 2>&1 && modinfo nvmet-rdma >/dev/null 2>&1; }

# RoCE interop with rdma_rxe ----------------------------------------------

# rxe_interop_setup: card A's engine ($IB_A) with both cards' addresses
# in the default namespace (nvme-rdma's), card B's RDMA device unbound
# and rdma_rxe (rxe_b) on card B's netdev instead. rxe cannot take a
# VRF's packets (it finds its device by skb->dev, which a VRF replaces),
# so policy routing sends traffic between the two addresses over the
# cable: a packet arriving on either NIC is looked up in the local table
# first; any other lookup from one card's address to the other's (sent
# packets, and rdma_cm's check that a connection request came in on the
# netdev that routes back to its sender, which has no input interface)
# gets the sender's NIC. The receiver accepts a source address that is
# its own host's. Both links go down and up first: an earlier test's
# `ip addr flush` took their IPv6 link-local addresses, without which
# rdma_cm's neighbour solicitations (sent with no source packet) are never
# sent. A missing piece of what the project provides bails out (a
# failure, not a skip).
RXE_AUX=
rxe_interop_setup() {
	find_netifs
	IB_A=$(ibdev_of "$(card_addr A)")
	[ -n "$IB_A" ] || bail_out "no RDMA device under card A"
	have_nvme_rdma || bail_out "the kernel has no NVMe over RDMA modules"
	modprobe rdma_rxe || bail_out "no rdma_rxe module"
	RXE_AUX=$(rdma_aux_of "$(card_addr B)")
	[ -n "$RXE_AUX" ] || bail_out "no RDMA auxiliary device under card B"
	echo "$RXE_AUX" > $RDMA_AUX_DRV/unbind || bail_out "cannot unbind $RXE_AUX"
	local dev
	for dev in "$NETIF_A" "$NETIF_B"; do
		ip link set "$dev" down
		ip addr flush dev "$dev"
	done
	ip addr add $IP_A/24 dev "$NETIF_A"
	ip addr add $IP_B/24 dev "$NETIF_B"
	ip addr add $IP6_A/64 dev "$NETIF_A" nodad
	ip addr add $IP6_B/64 dev "$NETIF_B" nodad
	ip link set "$NETIF_A" up
	ip link set "$NETIF_B" up
	wait_carrier "$NETIF_A" 1 && wait_carrier "$NETIF_B" 1 || bail_out "no carrier"
	ip route add $IP_B/32 dev "$NETIF_A" table 30
	ip route add $IP_A/32 dev "$NETIF_B" table 31
	ip -6 route add $IP6_B/128 dev "$NETIF_A" table 30
	ip -6 route add $IP6_A/128 dev "$NETIF_B" table 31
	local fam
	for fam in -4 -6; do
		ip $fam rule add pref 90 iif "$NETIF_A" table local
		ip $fam rule add pref 91 iif "$NETIF_B" table local
	done
	ip rule add pref 100 from $IP_A to $IP_B table 30
	ip rule add pref 101 from $IP_B to $IP_A table 31
	ip -6 rule add pref 100 from $IP6_A to $IP6_B table 30
	ip -6 rule add pref 101 from $IP6_B to $IP6_A table 31
	# Local table after the policy rules, so a packet to the other
	# card's address is not delivered locally.
	ip rule add pref 32765 table local && ip rule del pref 0
	ip -6 rule add pref 32765 table local && ip -6 rule del pref 0
	for dev in all "$NETIF_A" "$NETIF_B"; do
		sysctl -qw net.ipv4.conf.$dev.accept_local=1 net.ipv4.conf.$dev.rp_filter=0
	done
	rdma link add rxe_b type rxe netdev "$NETIF_B" || bail_out "cannot add rxe on $NETIF_B"
	wait_port "$IB_A" "ACTIVE LINK_UP " || bail_out "$IB_A's port did not come up"
	for dev in "$NETIF_A" "$NETIF_B"; do
		wait_until 50 has_link_local "$dev"
	done
}
# has_link_local IFACE: its IPv6 link-local address passed DAD.
has_link_local() { [ -n "$(ip -6 addr show dev "$1" scope link -tentative)" ]; }

rxe_interop_cleanup() {
	rdma link del rxe_b 2>/dev/null
	modprobe -r rdma_rxe 2>/dev/null
	local fam pref
	for fam in -4 -6; do
		for pref in 90 91 100 101; do
			ip $fam rule del pref $pref 2>/dev/null
		done
	done
	ip rule add pref 0 table local 2>/dev/null && ip rule del pref 32765 table local 2>/dev/null
	ip -6 rule add pref 0 table local 2>/dev/null && ip -6 rule del pref 32765 table local 2>/dev/null
	ip route flush table 30 2>/dev/null
	ip route flush table 31 2>/dev/null
	ip -6 route flush table 30 2>/dev/null
	ip -6 route flush table 31 2>/dev/null
	ip addr flush dev "$NETIF_A" 2>/dev/null
	ip addr flush dev "$NETIF_B" 2>/dev/null
	[ -n "$RXE_AUX" ] && echo "$RXE_AUX" > $RDMA_AUX_DRV/bind 2>/dev/null
	return 0
}

# nvme_rdma_cleanup: what the nvme-rdma tests undo, whatever they got to.
nvme_rdma_cleanup() {
	nvme_disconnect
	nvmet_cleanup
	modprobe -r nvme-rdma nvmet-rdma 2>/dev/null
}

# json_true EXPR CMD...: the Python expression EXPR holds on CMD's JSON
# output, `j`.
json_true() {
	local expr=$1
	shift
	"$@" | python3 -c "import json, sys; j = json.load(sys.stdin); sys.exit(0 if ($expr) else 1)"
}

# health_field DEVLINK REPORTER FIELD: a field of `devlink health show`
# for the reporter (error, recover, state...), lower case.
health_field() {
	devlink -j health show "$1" reporter "$2" | python3 -c '
import json, sys
r = json.load(sys.stdin)["health"][sys.argv[1]][0]
print(str(r[sys.argv[2]]).lower())' "$1" "$3"
}

# health_is DEVLINK REPORTER FIELD VALUE: the field is VALUE (a count: at
# least VALUE).
health_is() {
	local v
	v=$(health_field "$1" "$2" "$3")
	if [[ $4 =~ ^[0-9]+$ ]]; then
		[ "$v" -ge "$4" ]
	else
		[ "$v" = "$4" ]
	fi
}
# wait_health DEVLINK REPORTER FIELD VALUE: up to 15 s for health_is.
wait_health() { wait_until 150 health_is "$@"; }
# completion_fault: a bad-index completion from card A, under a ping
# train to B (with one queue pair, on the pair every frame uses).
completion_fault() {
	harness card A cqe-fault index 1 >/dev/null
	ping -c 20 -i 0.05 -W 1 -q $IP_B >/dev/null 2>&1
	harness card A cqe-fault index 0 >/dev/null
}

# rdma_objects: PDs, CQs in use, QPs and MRs of $IB_A and $IB_B.
rdma_objects() {
	local d
	for d in $IB_A $IB_B; do
		echo -n "$d: $(rdma_res $d pd) $(rdma_cqs_in_use $d) $(rdma_res $d qp) $(rdma_res $d mr) $(rdma_res $d srq); "
	done
}
rdma_objects_are() { [ "$(rdma_objects)" = "$1" ]; }

# wait_rdma_objects EXPECTED: waits up to 5 s for rdma_objects to be
# EXPECTED again (ib_core frees some objects from work items).
wait_rdma_objects() {
	wait_until 50 rdma_objects_are "$1" && return 0
	echo "# PDs, CQs in use, QPs, MRs: $(rdma_objects)"
	echo "#                  expected: $1"
	return 1
}

# rdma_counter IBDEV NAME: a port counter of `rdma statistic`.
rdma_counter() { rdma statistic show link "$1/1" | tr ' ' '\n' | awk -v n="$2" 'p {print; exit} $0 == n {p = 1}'; }

# rdma_cqs_in_use IBDEV: CQs some QP uses (ib_core keeps pooled CQs after
# their last user leaves, until the device goes).
rdma_cqs_in_use() { rdma res show cq dev "$1" | grep -c 'users [1-9]'; }

# rdma_res IBDEV KIND: how many objects of KIND (pd, cq, qp, mr) `rdma res` counts.
rdma_res() { rdma res show | awk -v d="$1:" -v k="$2" '$2 == d {for (i = 3; i < NF; i++) if ($i == k) print $(i + 1)}'; }

# pktgen DEV DST_IP DST_MAC COUNT BURST [COMMAND...]: sends COUNT 60-byte
# UDP frames from DEV's TX queue 0 with pktgen's thread 0, BURST frames
# per xmit_more batch (the stack's "more frames follow" for all but the
# last), after the extra pktgen COMMANDs (e.g. "udp_src_min 1024");
# prints the rate pktgen measured, in frames/s.
pktgen() {
	local dev=$1 pg=/proc/net/pktgen r
	modprobe pktgen || return 1
	echo rem_device_all >$pg/kpktgend_0 || return 1
	echo "add_device $dev" >$pg/kpktgend_0 || return 1
	for r in "count $4" "pkt_size 60" "dst $2" "dst_mac $3" "burst $5" \
		"queue_map_min 0" "queue_map_max 0" "delay 0" "clone_skb 0" "${@:6}"; do
		echo "$r" >"$pg/$dev" || { echo "pktgen: $r refused" >&2; return 1; }
	done
	echo start >$pg/pgctrl || return 1
	r=$(grep -A1 '^Result: OK' "$pg/$dev") || { grep '^Result' "$pg/$dev" >&2; return 1; }
	echo rem_device_all >$pg/kpktgend_0
	[[ $r =~ ([0-9]+)pps ]] && echo "${BASH_REMATCH[1]}"
}

# XDP (xdp.sh, qemu/bench-xdp-guest.sh): builds xdp_actions.bpf.c into OUT.
# clang takes 15 s or more in the VM and four tests want the program:
# one build per source version is kept in /run (gone at the next boot).
build_xdp_actions() { # OUT
	local src kept
	src=$(dirname "${BASH_SOURCE[0]}")/xdp_actions.bpf.c
	kept=/run/rsnic-xdp_actions.$(cksum <"$src" | cut -d' ' -f1).o
	if [ ! -s "$kept" ]; then
		clang -O2 -g -target bpf -I/usr/include/"$(uname -m)"-linux-gnu \
			-c "$src" -o "$kept.tmp" && mv "$kept.tmp" "$kept" || return 1
	fi
	cp "$kept" "$1"
}
# The xdp-features card A's netdev offers (netdev netlink), sorted, on
# one line.
xdp_features() {
	python3 - "$KSFT/net" "$(cat /sys/class/net/$NETIF_A/ifindex)" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from lib.py import NetdevFamily
print(" ".join(sorted(NetdevFamily().dev_get({"ifindex": int(sys.argv[2])})["xdp-features"])))
PY
}
# The 4 little-endian bytes of a u32, as bpftool takes keys and values.
le32() { printf '%d %d %d %d' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
# The id of map NAME of the XDP program attached to $XDP_DEV (card A's
# netdev unless set), in netns $XDP_NS if set.
map_id() { # NAME
	local link ids line
	link=$(ip ${XDP_NS:+-n "$XDP_NS"} -d link show dev "${XDP_DEV:-$NETIF_A}")
	[[ $link =~ prog/xdp\ id\ ([0-9]+) ]] || return 1
	[[ $(bpftool prog show id "${BASH_REMATCH[1]}") =~ map_ids\ ([0-9,]+) ]] || return 1
	ids=",${BASH_REMATCH[1]},"
	while read -r line; do
		[[ $line =~ ^([0-9]+):\ [a-z_]+\ +name\ ([^ ]+) ]] || continue
		[[ ${BASH_REMATCH[2]} == "$1" && $ids == *",${BASH_REMATCH[1]},"* ]] && echo "${BASH_REMATCH[1]}"
	done < <(bpftool map show)
}
# Sets entry KEY of that program's map NAME to the u32 VALUEs.
map_set() { # NAME KEY VALUE...
	local id key=$2 v value=
	id=$(map_id "$1")
	shift 2
	for v in "$@"; do value="$value $(le32 "$v")"; done
	bpftool map update id "$id" key $(le32 "$key") value $value
}
# Frames that program matched (map "seen"), or with MAP and KEY the u64
# entry KEY of that program's map MAP (per_queue: frames it ran on, by
# RX queue).
seen() { # [MAP KEY]
	local out bytes i n=0
	out=$(bpftool map lookup id "$(map_id "${1:-seen}")" key $(le32 "${2:-0}")) || return 1
	# With BTF: "value": N; without: value: and its bytes in hex, LSB first.
	if [[ $out =~ \"value\":\ ([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}"
		return
	fi
	bytes=(${out##*value:})
	for ((i = ${#bytes[@]} - 1; i >= 0; i--)); do n=$((n * 256 + 16#${bytes[i]})); done
	echo "$n"
}

# build_rdma_mcast DIR: builds rdma_mcast.c (UD multicast through
# libibverbs) into DIR/rdma_mcast against the headers of the rdma-core
# tree the provider was built in (qemu/build-provider.sh); prints its path.
build_rdma_mcast() {
	local inc=/rsnic-cache/rdma-core/build/include
	[ -f $inc/infiniband/verbs.h ] || { echo "# no rdma-core headers in $inc" >&2; return 1; }
	clang -O2 -Wall -I$inc -o "$1/rdma_mcast" "$(dirname "$0")/rdma_mcast.c" \
		/usr/lib/x86_64-linux-gnu/libibverbs.so.1 >&2 && echo "$1/rdma_mcast"
}

# Switchdev mode (switchdev.sh, ovs.sh, ovs_vxlan.sh).
VM=vm
VF_MAC=02:52:53:00:00:ee
# rx_packets of net device $1 (this netns).
rx_packets_of() { cat "/sys/class/net/$1/statistics/rx_packets"; }
# The net device whose phys_port_name is $1, in this netns.
port_netdev() {
	local f
	for f in /sys/class/net/*/phys_port_name; do
		[ "$(cat "$f" 2>/dev/null)" = "$1" ] && { f=${f%/phys_port_name}; echo "${f##*/}"; return; }
	done
}
# switchdev_vf CIDR: card A in switchdev mode, its representor up in
# $REP, its VF plugged and moved to netns $VM as $VF with $VF_MAC and
# address CIDR; the PF takes tc offload. Bails out if any step fails.
switchdev_vf() {
	vf_remove_all
	devlink dev eswitch set "pci/$(card_addr A)" mode switchdev || bail_out "switchdev mode refused"
	REP=$(port_netdev pf0vf0)
	[ -n "$REP" ] || bail_out "no representor"
	vf_plug A || bail_out "card A's VF did not appear"
	VF=$(netif_of "$(vf_addr A)")
	ip netns add $VM
	ip link set "$VF" netns $VM
	ip -n $VM -force -batch - <<-EOF2
		link set lo up
		link set $VF address $VF_MAC
		addr add $1 dev $VF
		link set $VF up
	EOF2
	ethtool -K "$NETIF_A" hw-tc-offload on
	ip link set "$REP" up
}
# Undoes switchdev_vf (the PF's tc rules and qdiscs go too).
switchdev_vf_cleanup() {
	[ -z "$REP" ] || tc qdisc del dev "$REP" ingress 2>/dev/null
	tc qdisc del dev "$NETIF_A" ingress 2>/dev/null
	ip netns del $VM 2>/dev/null
	devlink dev eswitch set "pci/$(card_addr A)" mode legacy 2>/dev/null
	vf_unplug A 2>/dev/null
}
# ovs_start [POLICY]: Open vSwitch with hw-offload (tc-policy POLICY,
# skip_sw unless given), its database and daemon in a directory of their
# own; ovs_stop ends them.
ovs_start() {
	export OVS_RUNDIR OVS_DBDIR OVS_LOGDIR OVS_SYSCONFDIR
	OVS_RUNDIR=$(mktemp -d) OVS_DBDIR=$OVS_RUNDIR OVS_LOGDIR=$OVS_RUNDIR OVS_SYSCONFDIR=$OVS_RUNDIR
	modprobe openvswitch || bail_out "no openvswitch module"
	ovsdb-tool create "$OVS_DBDIR/conf.db" /usr/share/openvswitch/vswitch.ovsschema
	ovsdb-server --remote="punix:$OVS_RUNDIR/db.sock" --pidfile --detach --log-file \
		"$OVS_DBDIR/conf.db" || bail_out "ovsdb-server did not start"
	ovs-vsctl --no-wait init
	ovs-vsctl --no-wait set Open_vSwitch . other_config:hw-offload=true \
		other_config:tc-policy="${1:-skip_sw}"
	ovs-vswitchd --pidfile --detach --log-file || bail_out "ovs-vswitchd did not start"
}
ovs_stop() {
	[ -n "$OVS_RUNDIR" ] || return 0
	ovs-appctl -t ovs-vswitchd exit --cleanup 2>/dev/null
	ovs-appctl -t ovsdb-server exit 2>/dev/null
	rm -rf "$OVS_RUNDIR"
}
# The offloaded datapath flows (dp:tc), one a line.
ovs_offloaded() { ovs-appctl dpctl/dump-flows -m type=offloaded; }
# The packets of the offloaded IPv4 flow from device $1 (any: $1 may be
# a pattern of the flow's text, e.g. "in_port(vxlan_sys_4789)").
ovs_flow_packets() {
	ovs_offloaded | python3 -c '
import re, sys
pat = sys.argv[1]
for line in sys.stdin:
    if pat in line and "eth_type(0x0800)" in line and "dp:tc" in line:
        m = re.search(r"packets:(\d+)", line)
        print(m.group(1) if m else 0)
        break' "$1"
}
