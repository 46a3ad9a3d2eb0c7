#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Statistics across VF cycles: the synthetic NIC's rtnl stats and qstats
# cover both paths (its own queues plus everything its VFs counted, shown
# as vf_* in ethtool -S), agree with each other, and never go backwards
# while the VF is unplugged and replugged; with the VF carrying the
# data, what the synthetic NIC counts equals what the peer counted.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
"$QSTATS" "$NETIF_A" >/dev/null || skip_all "netdev qstats not readable"
trap 'vf_unplug A 2>/dev/null; net_cleanup' EXIT

stat_sum() { ethtool -S "$NETIF_A" | awk -v k="$1" '$1 ~ k {n += $2} END {print n + 0}'; }
# rtnl rx/tx packets == own queues + vf_* counters.
both_paths() {
	local i r own_rx own_tx
	for i in 1 2 3 4 5; do
		r=($(rtnl))
		own_rx=$(( $(stat_sum '^rx[0-9]+_packets:') + $(stat_sum '^vf_rx_packets:') ))
		own_tx=$(( $(stat_sum '^tx[0-9]+_packets:') + $(stat_sum '^vf_tx_packets:') ))
		[ "${r[0]}" = "$own_rx" ] && [ "${r[2]}" = "$own_tx" ] && return 0
		sleep 0.2
	done
	echo "# rtnl rx ${r[0]} tx ${r[2]}; queues + vf_*: rx $own_rx tx $own_tx"
	return 1
}
# Fails unless every rtnl counter is at least what it was ($1).
not_backwards() {
	local now=($(rtnl)) was=($1) i
	for i in 0 1 2 3; do
		[ "${now[$i]}" -ge "${was[$i]}" ] || { echo "# went back: ${was[*]} -> ${now[*]}"; return 1; }
	done
}

ktap_header 6
vf_plug A
sleep 1
ping -c 30 -i 0.05 -q $IP_B >/dev/null
vf_rx=$(stat_sum '^vf_rx_packets:')
check "VF traffic shows in vf_rx_packets/vf_tx_packets" test "$vf_rx" -ge 30 -a "$(stat_sum '^vf_tx_packets:')" -ge 30
check "rtnl stats are the sum of both paths while the VF is in" both_paths
check "through the VF, rtnl packets equal the peer's count (200 pings)" independent_count

ok=true
last=$(rtnl)
for cycle in 1 2 3; do
	ping -c 10 -i 0.05 -q $IP_B >/dev/null
	vf_unplug A
	not_backwards "$last" || ok=false
	last=$(rtnl)
	ping -c 10 -i 0.05 -q $IP_B >/dev/null
	vf_plug A
	sleep 0.5
	not_backwards "$last" || ok=false
	last=$(rtnl)
done
check "rtnl counters never go back across 3 unplug/replug cycles" $ok
check "rtnl stats are the sum of both paths after the cycles" both_paths
check "qstats device totals equal rtnl (the VF's share in the base stats)" agree device
ktap_finish
