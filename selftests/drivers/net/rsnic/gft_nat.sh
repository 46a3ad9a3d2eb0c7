#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NAT in the card: A connects to a virtual address and port (10.98.0.2:8080)
# from its own address; the card rewrites the destination to B's real one
# (10.99.0.2:5003) and the source to 10.99.0.100, and its reverse flow
# rewrites the replies back. A 4 MiB TCP transfer arrives intact, and
# tcpdump on both sides finds every TCP checksum correct.

source "$(dirname "$0")/lib.sh"
gft_setup
trap 'ip route del 10.98.0.2/32 2>/dev/null; ip netns exec $NS ethtool -K "$NETIF_B" gro on rx-gro-hw on; gft_cleanup' EXIT
dmesg_mark

VIP=10.98.0.2
SNAT=10.99.0.100
ip route replace $VIP/32 dev "$NETIF_A"
ip neigh replace $VIP lladdr "$MAC_B" dev "$NETIF_A"
ip -n $NS neigh replace $SNAT lladdr "$MAC_A" dev "$NETIF_B"

ktap_header 9
check "NAT rule added" test "$(gft_w rules "add prio=10 dir=tx proto=tcp dst=$VIP dport=8080 action=nat nat_sip=$SNAT nat_dip=$IP_B nat_dport=5003")" = OK

# While a connection is open, both flows are in the driver and the card
# (when it closes they are retired).
ip netns exec $NS "$GFT_PY" tcp-sink 5003 >/dev/null &
wait_listening tcp 5003
"$GFT_PY" tcp-hold $VIP 8080 $GFT_HOLD &
wait_card_flows 1 dir=rx proto=6 "src=$IP_B" "dst=$SNAT"
check "forward and reverse flows installed (driver)" \
	test "$(drv_flows_with dir=tx proto=tcp "dst=$VIP" dport=8080 action=nat)" = 1 -a \
	"$(drv_flows_with dir=rx proto=tcp "src=$IP_B" "dst=$SNAT" sport=5003 action=nat "nat_sip=$VIP" "nat_dip=$IP_A" nat_sport=8080 reverse)" = 1
check "the card holds both, and counts hits" \
	test "$(card_flows_with dir=tx proto=6 "dst=$VIP" "dport=8080")" = 1 -a \
	"$(card_flows_with dir=rx proto=6 "src=$IP_B" "dst=$SNAT")" = 1 -a \
	"$(drv_flow_field packets dir=tx proto=tcp "dst=$VIP")" -gt 0
wait

# Only received packets: sent ones carry the checksum the card inserts
# later. GRO off on B, so each captured packet is one from the wire.
# Frame by frame at B, as the wire carried them: no GRO, in the stack or
# the card (tcpdump cannot check the checksum of a packet GRO built).
ip netns exec $NS ethtool -K "$NETIF_B" gro off rx-gro-hw off
# Whole packets: tcpdump checks the checksums only of those.
CAPTURE_SNAP=0 capture $NS "$NETIF_B" 30 "src host $SNAT and tcp" /tmp/gft_dump_b
dump_b=$!
CAPTURE_SNAP=0 capture "" "$NETIF_A" 30 "src host $VIP and tcp" /tmp/gft_dump_a
dump_a=$!
ip netns exec $NS "$GFT_PY" tcp-sink 5003 >/tmp/gft_rx &
sink=$!
wait_listening tcp 5003
sent=$("$GFT_PY" tcp-source $VIP 8080 $((4 << 20)))
wait $sink
received=$(cat /tmp/gft_rx)
capture_stop $dump_a $dump_b
echo "# sent: $sent"
echo "# received: $received"
check "4 MiB arrived intact (SHA-256 equal)" test -n "$sent" -a "$sent" = "${received% *}"
check_eq "B saw the translated source $SNAT" "${received##* }" $SNAT
check "the transfer's flows were retired when it closed" test "$(drv_flows_with "dst=$VIP")" = 0 -a \
	"$(card_flows_with "dst=$VIP")" = 0 -a "$(gft_stat tcp_retired)" -ge 4
na=$(grep -c 'cksum .* (correct)' /tmp/gft_dump_a)
nb=$(grep -c 'cksum .* (correct)' /tmp/gft_dump_b)
echo "# correct checksums: A $na (of $(grep -c cksum /tmp/gft_dump_a)), B $nb (of $(grep -c cksum /tmp/gft_dump_b))"
check "B: packets from $SNAT to $IP_B:5003, every checksum correct" \
	test "$nb" -gt 10 -a "$(grep -c incorrect /tmp/gft_dump_b)" = 0 -a "$(grep -c "$SNAT\.[0-9]* > $IP_B\.5003" /tmp/gft_dump_b)" -gt 0
check "A: replies from $VIP:8080 (translated back), every checksum correct" \
	test "$na" -gt 10 -a "$(grep -c incorrect /tmp/gft_dump_a)" = 0 -a "$(grep -c "$VIP\.8080 > $IP_A\." /tmp/gft_dump_a)" -gt 0
check "no kernel warning" dmesg_clean
rm -f /tmp/gft_rx /tmp/gft_dump_a /tmp/gft_dump_b
ktap_finish
