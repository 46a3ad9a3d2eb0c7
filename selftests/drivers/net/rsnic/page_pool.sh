#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RX buffers come from one page_pool per RX queue, and come back: as the
# netdev netlink family lists the pools (page-pool-get, through the
# kernel's own YNL library), not as the driver counts them.
#  - one pool per RX queue in use, tied to the device and to that queue's
#    NAPI;
#  - each holds its ring's posted pages (ring size - 1);
#  - after some 100k frames received the pools stay bounded: a pool holds
#    at most its ring, its recycle ring (as large) and its 128-page cache;
#    pages beyond that go back to the page allocator;
#  - ring and channel changes make new pools of the new size and free the
#    old ones; link down frees them all, which the core does only once
#    every page came back (a page the stack never returned keeps its pool
#    listed): nothing leaked.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
command -v iperf3 >/dev/null || bail_out "iperf3 not installed"
[ -d "$KSFT/net/lib/py" ] || bail_out "no YNL library in $KSFT (qemu/build-ksft.sh)"
channels=$(channels_in_use)
ring=$(ethtool -g "$NETIF_A" | awk '/^RX:/ {v=$2} END {print v}')
cleanup() {
	kill $(jobs -p) 2>/dev/null
	pkill -f "iperf3 -s -D -p 5403"
	ip link set "$NETIF_A" up
	ethtool -G "$NETIF_A" rx "$ring" 2>/dev/null
	ethtool -L "$NETIF_A" combined "$channels" 2>/dev/null
	net_cleanup
}
trap cleanup EXIT
pools() { page_pools; }
# rx_napis: the NAPI IDs of the RX queues in use, sorted.
rx_napis() {
	python3 "$(dirname "$0")/qstats.py" "$NETIF_A" |
		python3 -c 'import json, sys; q = json.load(sys.stdin)["queue_napi"]; print(" ".join(sorted(str(v) for k, v in q.items() if k.startswith("rx"))))'
}
pool_napis() { pools | awk '{print $2}' | sort | tr '\n' ' ' | sed 's/ $//'; }
# each_inflight_between LOW HIGH: every pool's inflight pages in range.
each_inflight_between() {
	local id napi n ok=0
	while read -r id napi n; do
		[ "$n" -ge "$1" ] && [ "$n" -le "$2" ] || { echo "# pool $id (napi $napi): $n in flight"; ok=1; }
	done < <(pools)
	return $ok
}
wait_pools() { wait_page_pools "$@"; }

ktap_header 9
dmesg_mark
# Fresh pools: traffic of a test before this one leaves pages in the
# pools' caches, which count as in flight.
ip link set "$NETIF_A" down
ip link set "$NETIF_A" up
wait_carrier "$NETIF_A" 1 || echo "# no carrier after link up"
pools | sed 's/^/# pool id napi inflight: /'
check "one page pool per RX queue ($channels), each on its queue's NAPI" \
	test "$(pool_napis)" = "$(rx_napis)" -a "$(pools | wc -l)" = "$channels"
check "each holds its ring's posted pages ($((ring - 1)))" each_inflight_between $((ring - 1)) $((ring - 1 + 64))

iperf3_server 5403
before=$(ip -s -j link show "$NETIF_A" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])')
iperf3 -c $IP_B -p 5403 -R -P 4 -t 4 >/dev/null
after=$(ip -s -j link show "$NETIF_A" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])')
sleep 1
pools | sed 's/^/# after the stream: pool id napi inflight: /'
echo "# received $((after - before)) frames"
# Most a pool holds: its ring (ring - 1 posted), its recycle ring (ring)
# and its cache (128); 64 of slack. Without the skbs marked for
# recycling, a pool held 96384 pages here.
check "after $((after - before)) frames received, each pool holds <= 2 x ring + 128 (+64) pages" \
	each_inflight_between $((ring - 1)) $((2 * ring + 128 + 64))

old=$(pools | awk '{print $1}')
ethtool -G "$NETIF_A" rx 512
wait_pools "$channels"
check "ethtool -G rx 512: new pools holding 511 pages each" each_inflight_between 511 $((511 + 64))
gone() { local id; for id in $old; do pools | awk '{print $1}' | grep -qx "$id" && return 1; done; return 0; }
check "and the old pools are gone" gone

ethtool -L "$NETIF_A" combined 2
wait_pools 2
check "ethtool -L combined 2: two pools, on the two queues' NAPIs" \
	test "$(pool_napis)" = "$(rx_napis)" -a "$(pools | wc -l)" = 2

ip link set "$NETIF_A" down
wait_pools 0
check_eq "link down: every pool freed (every page came back)" "$(pools | wc -l)" 0
ip link set "$NETIF_A" up
wait_pools 2
check "link up: the pools are back, full" each_inflight_between 511 $((511 + 64))
check "no kernel warnings" dmesg_clean
ktap_finish
