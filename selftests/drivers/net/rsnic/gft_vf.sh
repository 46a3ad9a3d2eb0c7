#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The GFT sits between the card's functions and the wire, so it applies
# to the accelerated path too: with the VF bonded and the data path on
# it, a new flow's first packet still reaches the driver (on the PF) and
# later packets hit in the card; after the VF is unplugged the same flow
# keeps hitting on the synthetic path.

source "$(dirname "$0")/lib.sh"
gft_setup
harness ping >/dev/null || skip_all "no harness control channel"
trap 'vf_unplug A 2>/dev/null; gft_cleanup' EXIT

vf_tx() { ethtool -S "$NETIF_A" | awk '$1 == "vf_tx_packets:" {print $2}'; }
burst() { udp_burst 5050 10 41100; } # prints how many of 10 arrived

ktap_header 6
check "VF plugged, data path on the VF" eval 'vf_plug A && wait_datapath A vf'
# Quiet like the rest: no IPv6 from the VF's own netdev either.
vf_if=$(netif_of "$(vf_addr A)")
[ -n "$vf_if" ] && sysctl -qw "net.ipv6.conf.$vf_if.disable_ipv6=1"
check "rule added" test "$(gft_w rules "add prio=10 dir=tx proto=udp dport=5050 action=allow")" = OK
vf0=$(vf_tx)
exc0=$(gft_stat exceptions)
check "10 of 10 arrive through the VF" \
	test "$(udp_burst_settled 5050 10 41100 dir=tx proto=17 "sport=41100 dport=5050")" = 10 -a $(($(vf_tx) - vf0)) -ge 10
check "the first was an exception on the PF, 9 hit in the card" \
	test $(($(gft_stat exceptions) - exc0)) = 1 -a "$(drv_flow_field packets dir=tx proto=udp sport=41100)" = 9
vf_unplug A
wait_datapath A synthetic
check_eq "VF unplugged: 10 of 10 arrive on the synthetic path" "$(burst)" 10
check "the same flow hit 10 more times, no new exception" \
	test "$(drv_flow_field packets dir=tx proto=udp sport=41100)" = 19 -a $(($(gft_stat exceptions) - exc0)) = 1
ktap_finish
