#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The card's receive coalescing (hardware GRO, ethtool rx-gro-hw) on
# card B, the receiver: on by default; files cross intact over IPv4 and
# IPv6 with it; with the stack's own GRO off, the receiving stack sees
# TCP packets larger than the MTU (tcpdump on B, an independent look at
# what the stack got), longer than sixteen 4 KiB pages would hold (the
# driver's RX pages are larger so that a 64 KiB send stays one), the
# driver's qstats count them (rx-hw-gro-packets, their wire segments in
# rx-hw-gro-wire-packets and rx-packets) and agree with the card's own
# count of the frames it coalesced. Off, nothing is coalesced. An XDP
# program or RX streams turn it off ("off [requested on]") while they
# last, and it comes back after. A's TSO frames cross the wire whole
# (trains, the cards' wire-stats) and B coalesces or, with rx-gro-hw
# off or XDP, cuts them; with an impairment set on A's end they are cut
# before the wire instead, and B still coalesces the segments. The
# kernel's gro.py (its hw cases) and gro_hw.py check the coalescing rules
# and counters in upstream_gro.sh.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
command -v tcpdump >/dev/null || bail_out "tcpdump not installed"
DUMMY=$KSFT/net/lib/xdp_dummy.bpf.o
[ -f "$DUMMY" ] || bail_out "no $DUMMY (qemu/build-ksft.sh)"
trap 'kill $(jobs -p) 2>/dev/null; ip -n $NS link set dev "$NETIF_B" xdpdrv off 2>/dev/null; net_cleanup' EXIT
# Only the card coalesces: a packet above the MTU is its work.
ip netns exec $NS ethtool -K "$NETIF_B" generic-receive-offload off

feature_b() { ip netns exec $NS ethtool -k "$NETIF_B" | awk -v k="$1:" '$1 == k {$1 = ""; print substr($0, 2)}'; }
gro_b() { ip netns exec $NS ethtool -K "$NETIF_B" rx-gro-hw "$1"; }
# B's qstats: rx-packets, rx-hw-gro-packets, rx-hw-gro-wire-packets.
qstats_b() { ip netns exec $NS "$QSTATS" "$NETIF_B" gro; }
card_gro() { harness card B stats | tr ' ' '\n' | awk -F= '$1 == "gro_frames" {print $2}'; }
# wire_stat CARD NAME: a counter of CARD's end of the wire.
wire_stat() { harness card "$1" wire-stats | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# transfer DST: sends /tmp/gro.src to B over TCP while tcpdump on B looks
# at the first 3000 frames from A; sets sha (of what B received), big
# (IP packets above 1500 bytes among them) and the deltas of B's qstats
# (rx, gro, wire), of the card's coalesced frames (card) and of the
# trains A's end sent and B's received (sent, got).
transfer() {
	local dst=$1 src=$IP_A six= q0 q1 c0 s0 g0
	longest=
	[[ $dst == *:* ]] && src=$IP6_A six=ipv6
	rm -f /tmp/gro.dst
	ip netns exec $NS tcpdump -i "$NETIF_B" -nn -v -c 3000 "tcp port 7002 and src host $src" \
		>/tmp/gro.dump 2>/dev/null &
	local dump=$!
	tcp_sink 7002 /tmp/gro.dst $six &
	local server=$!
	sleep 0.5
	read -r -a q0 < <(qstats_b)
	c0=$(card_gro) s0=$(wire_stat A trains_sent) g0=$(wire_stat B trains_received)
	tcp_send_file "$dst" 7002 /tmp/gro.src
	wait $server
	kill $dump 2>/dev/null
	wait $dump 2>/dev/null
	read -r -a q1 < <(qstats_b)
	rx=$((q1[0] - q0[0])) gro=$((q1[1] - q0[1])) wire=$((q1[2] - q0[2]))
	card=$(($(card_gro) - c0))
	sent=$(($(wire_stat A trains_sent) - s0)) got=$(($(wire_stat B trains_received) - g0))
	sha=$(sha256sum </tmp/gro.dst | cut -d" " -f1)
	frames=$(grep -c "$src\.[0-9]* > " /tmp/gro.dump)
	if [[ $dst == *:* ]]; then
		big=$(grep -oE "payload length:? [0-9]+" /tmp/gro.dump | awk '$3 > 1460' | wc -l)
	else
		read -r big longest < <(grep -o "length [0-9]*)" /tmp/gro.dump | tr -d ')' |
			awk '$2 > 1500 {n++} $2 > m {m = $2} END {print n + 0, m + 0}')
	fi
	echo "# to $dst: rx $rx, coalesced $gro of $wire segments (card: $card); tcpdump: $big of $frames packets above the MTU (longest IPv4 ${longest:-?}); trains $sent sent, $got received"
}

head -c 8M /dev/urandom >/tmp/gro.src
# The longest IPv4 packet B's stack got in a run the card coalesced: how
# long the card's trains get depends on how the emulator's threads were
# scheduled, so the check below looks at every such run.
longest_on=0
want=$(sha256sum </tmp/gro.src | cut -d" " -f1)

ktap_header 30
check_eq "rx-gro-hw on by default on B" "$(feature_b rx-gro-hw)" on

for dst in $IP_B $IP6_B; do
	transfer "$dst"
	check_eq "8 MiB to $dst intact with rx-gro-hw on" "$sha" "$want"
	check "to $dst: B's stack got TCP packets above the MTU (tcpdump)" expect_num "big" "$big" -gt 0
	check "to $dst: qstats count coalesced frames" expect_num "rx-hw-gro-packets" "$gro" -gt 0
	check "to $dst: of 2 segments or more each" expect_num "rx-hw-gro-wire-packets" "$wire" -ge $((2 * gro))
	check_eq "to $dst: the card's coalesced frames are the driver's" "$card" "$gro"
	check "to $dst: A's TSO frames crossed the wire whole" expect_num "trains" "$got" -gt 0
	longest_on=$((${longest:-0} > longest_on ? ${longest:-0} : longest_on))
done
check_eq "every train A's end sent, B's received" "$got" "$sent"
check_eq "no datagram B's end could not read" "$(wire_stat B bad_datagrams)" 0
check "rx-packets count wire segments (at least 8 MiB / 1440 B)" expect_num "rx-packets" "$rx" -ge 5826

gro_b off
transfer "$IP_B"
check_eq "8 MiB intact with rx-gro-hw off" "$sha" "$want"
check_eq "off: no TCP packet above the MTU at B" "$big" 0
check_eq "off: nothing coalesced (qstats)" "$gro" 0
check_eq "off: nothing coalesced (card)" "$card" 0
check "off: trains still cross, B cuts them" expect_num "trains" "$got" -gt 0
gro_b on

# Any impairment on A's end: frames are looked at one by one, so trains
# are cut before the wire (1 per mille duplicated: TCP copes).
harness card A wire dup 1 >/dev/null
transfer "$IP_B"
harness card A wire dup 0 >/dev/null
check "impaired: intact, no train sent, still coalesced" expect "sha, trains" "$sha $sent" "$want 0"
check "impaired: B coalesced the segments" expect_num "coalesced" "$card" -gt 0
longest_on=$((${longest:-0} > longest_on ? ${longest:-0} : longest_on))

ip -n $NS link set dev "$NETIF_B" xdpdrv obj "$DUMMY" sec xdp
check_eq "an XDP program turns rx-gro-hw off" "$(feature_b rx-gro-hw)" "off [requested on]"
transfer "$IP_B"
check "with XDP: intact, nothing coalesced" expect "sha, coalesced, big" "$sha $card $big" "$want 0 0"
ip -n $NS link set dev "$NETIF_B" xdpdrv off
check_eq "without it, on again" "$(feature_b rx-gro-hw)" on

ip netns exec $NS ethtool --set-priv-flags "$NETIF_B" rx-stream on
check_eq "RX streams turn rx-gro-hw off" "$(feature_b rx-gro-hw)" "off [requested on]"
ip netns exec $NS ethtool --set-priv-flags "$NETIF_B" rx-stream off
check_eq "descriptor mode again: on" "$(feature_b rx-gro-hw)" on
wait_until 50 ping -c1 -W1 -q "$IP_B" >/dev/null
transfer "$IP_B"
check "and coalescing again" expect_num "coalesced" "$card" -gt 0
longest_on=$((${longest:-0} > longest_on ? ${longest:-0} : longest_on))
# 16 buffers of one 4 KiB page each hold 56320 bytes of frame (3520 a
# page after headroom and skb_shared_info); the driver's RX pages hold
# more, so a 64 KiB send stays one.
check "a coalesced packet longer than 16 one-page buffers hold" \
	expect_num "longest IPv4 packet of the coalesced runs" "$longest_on" -gt 56306
ktap_finish
