#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tc flower offload on the synthetic NIC's ingress: skip_sw rules go to
# the card's masked rule table and the card carries them (a drop rule's
# datagrams never reach the host, its counters in `tc -s` equal what B
# sent; a pedit rule's arrive rewritten at the socket it names, and
# still after a function reset, which the driver replays the rules
# into; a police rule's card meter passes what its rate allows, and
# tc -s counts the rest as drops); what the card cannot match or do is
# refused with the driver's extack message (skip_sw) or kept in
# software; the card's exact-match cache of its rule decisions answers
# a flow's later packets; a deleted rule stops acting; a full table
# refuses the rule past it with the reason and loses none; hw-tc-offload cannot be
# turned off under offloaded rules.

source "$(dirname "$0")/lib.sh"
gft_setup
command -v tc >/dev/null || bail_out "tc (iproute2) not installed"
cleanup() {
	harness card A admin-fault timeout 0 >/dev/null
	ip link set "$NETIF_A" mtu 1500
	tc qdisc del dev "$NETIF_A" clsact 2>/dev/null
	gft_cleanup
}
trap cleanup EXIT
dmesg_mark

# FIELD of the filter with preference PREF: in_hw (true/false), packets,
# bytes or drops (of its first action, as tc -s reports them).
filter_field() { # PREF FIELD
	tc -s -j filter show dev "$NETIF_A" ingress | python3 -c '
import json, sys
pref, field = int(sys.argv[1]), sys.argv[2]
for f in json.load(sys.stdin):
    o = f.get("options")
    if f.get("pref") != pref or not o:
        continue
    if field == "in_hw":
        print(str(o.get("in_hw", False)).lower())
    else:
        print(o["actions"][0]["stats"][field])
    break
' "$1" "$2"
}
# Datagrams from B to A:PORT (N, source port 4000); prints how many the
# socket on A:RECV_PORT got.
b_to_a() { # PORT N [RECV_PORT]
	local got
	got=$(mktemp)
	"$GFT_PY" udp-recv "${3:-$1}" "$2" 3 >"$got" &
	wait_listening udp "${3:-$1}" ""
	ip netns exec $NS "$GFT_PY" udp-send $IP_A "$1" "$2" 4000
	wait $!
	cat "$got"
	rm -f "$got"
}
add() { tc filter add dev "$NETIF_A" ingress "$@" 2>&1; } # prints tc's error, if any

ktap_header 16
tc qdisc add dev "$NETIF_A" clsact
ethtool -K "$NETIF_A" hw-tc-offload on

check "a skip_sw drop rule is taken" \
	test -z "$(add protocol ip prio 1 flower skip_sw ip_proto udp dst_port 7001 action drop)"
check "tc reports it in hardware" test "$(filter_field 1 in_hw)" = true
rx0=$(cat "/sys/class/net/$NETIF_A/statistics/rx_packets")
cached0=$(card_gft_stat rule_cache_hits)
got=$(b_to_a 7001 20)
rx=$(( $(cat "/sys/class/net/$NETIF_A/statistics/rx_packets") - rx0 ))
cached=$(( $(card_gft_stat rule_cache_hits) - cached0 ))
echo "# to the dropped port: $got of 20 arrived; $NETIF_A rx_packets +$rx"
check "the card dropped them: none arrived, the host saw none" test "$got" = 0 -a "$rx" -lt 5
pk=$(filter_field 1 packets)
echo "# tc -s: the rule counted ${pk:-?} packets; the card's rule cache answered $cached lookups"
check "the rule's hardware counters hold the 20" test "${pk:-0}" = 20
# The first datagram asked the rule table, the next ones its cache (the
# rule counts them all the same, above).
check "the card's rule cache decided the other 19" test "$cached" -ge 19
check "another port is not matched" test "$(b_to_a 7002 20)" = 20

# NAT by pedit: datagrams to 7004 arrive at 7005.
check "a pedit rule (unfragmented UDP dport 7004 -> 7005, csum) is taken in hardware" bash -c "
	[ -z \"\$(tc filter add dev $NETIF_A ingress protocol ip prio 2 flower skip_sw ip_proto udp dst_port 7004 ip_flags nofrag \
		action pedit ex munge udp dport set 7005 pipe action csum udp 2>&1)\" ]"
got=$(b_to_a 7004 20 7005)
echo "# sent to 7004, received at 7005: $got of 20"
check "the card rewrote the port: all arrive at 7005" test "$got" = 20

# A function reset (an admin command the card never answers, during an
# MTU change) loses the card's rules; the driver gives them again.
DL=pci/$(card_addr A)
recovers=$(health_field $DL card recover)
harness card A admin-fault timeout 1 >/dev/null
ip link set "$NETIF_A" mtu 1400
harness card A admin-fault timeout 0 >/dev/null
wait_health $DL card recover $((recovers + 1))
ip link set "$NETIF_A" mtu 1500
wait_carrier A
got=$(b_to_a 7004 20 7005)
echo "# after the function reset (card recoveries $recovers -> $(health_field $DL card recover)): $got of 20 at 7005"
check "after a function reset the rule is replayed: all arrive at 7005" \
	test "$got" = 20 -a "$(health_field $DL card recover)" -gt "$recovers"

# Police on the card's meter: 800 kbit/s (100 000 bytes a second) and a
# 20 000-byte burst; B sends 1000-byte datagrams at 1000 a second for
# 2 s, about eight times the rate.
check "a police rule (800kbit, drop what exceeds) is taken in hardware" bash -c "
	[ -z \"\$(tc filter add dev $NETIF_A ingress protocol ip prio 5 flower skip_sw ip_proto udp dst_port 7008 \
		action police rate 800kbit burst 20000 conform-exceed drop/pipe 2>&1)\" ] && \
	[ \"\$($(declare -f filter_field); NETIF_A=$NETIF_A filter_field 5 in_hw)\" = true ]"
cnt=$(mktemp)
"$GFT_PY" udp-count 7008 2 10 >"$cnt" &
counter=$!
wait_listening udp 7008 ""
read -r sent secs < <(ip netns exec $NS "$GFT_PY" udp-blast $IP_A 7008 2 1000 1000 4000)
wait $counter
got=$(cat "$cnt")
rm -f "$cnt"
pk=$(filter_field 5 packets) dr=$(filter_field 5 drops)
# What the rate lets through: the burst, then 100 000 bytes a second, of
# 1042-byte frames.
allowed=$(python3 -c "print(round((20000 + 100000 * $secs) / 1042))")
echo "# police: B sent $sent in $secs s, A received ${got:-?} (the rate allows about $allowed); tc -s: ${pk:-?} packets, ${dr:-?} dropped"
check "the meter passed what the rate allows (within half to one and a half times)" python3 -c "
import sys
got, allowed, sent = ${got:-0}, $allowed, ${sent:-0}
sys.exit(not (allowed / 2 <= got <= allowed * 1.5 and got < sent / 2))"
check "tc -s: every datagram counted, the dropped ones as drops (packets - drops = received)" \
	test "${pk:-0}" = "${sent:-x}" -a "$(( ${pk:-0} - ${dr:-0} ))" = "${got:-x}"

# What the card cannot do: refused with the driver's reason, or kept in
# software without skip_sw.
err=$(add protocol ip prio 3 flower skip_sw ip_proto udp dst_port 7006 action police pkts_rate 1000 pkts_burst 100 conform-exceed drop/pipe)
echo "# police by packet rate, skip_sw: $err"
err2=$(add protocol ip prio 3 flower skip_sw enc_key_id 5 action drop)
echo "# tunnel key match on the NIC, skip_sw: $err2"
check "unsupported action and match refused with the driver's reason" \
	bash -c "[[ '$err' == *'rsnic: police'* && '$err2' == *'rsnic: tunnel key'* ]]"
check "without skip_sw it stays in software (not in_hw)" bash -c "
	[ -z \"\$(tc filter add dev $NETIF_A ingress protocol ip prio 4 flower ip_proto udp dst_port 7007 \
		action police pkts_rate 1000 pkts_burst 100 conform-exceed drop/pipe 2>&1)\" ] && [ \"\$($(declare -f filter_field); NETIF_A=$NETIF_A filter_field 4 in_hw)\" = false ]"

# hw-tc-offload stays on under offloaded rules; a deleted rule stops.
ethtool -K "$NETIF_A" hw-tc-offload off 2>/dev/null
off=$(ethtool -k "$NETIF_A" | awk '$1 == "hw-tc-offload:" {print $2}')
tc filter del dev "$NETIF_A" ingress prio 1
got=$(b_to_a 7001 20)
echo "# hw-tc-offload after 'off' under rules: $off; after deleting the drop rule $got of 20 arrive"
check "hw-tc-offload refused off under rules; a deleted rule stops dropping" \
	test "$off" = on -a "$got" = 20

# A full table: the drop rule again, then rules for 16383 more addresses
# (one tc batch), then one past the card's 16384: refused with the
# reason, and the first rule still drops and counts. Deleting the qdisc
# empties the card's table.
tc qdisc del dev "$NETIF_A" clsact
tc qdisc add dev "$NETIF_A" clsact
add protocol ip prio 1 flower skip_sw ip_proto udp dst_port 7001 action drop
python3 -c '
import sys
for i in range(16384):
    print(f"filter add dev {sys.argv[1]} ingress protocol ip prio 2 flower skip_sw "
          f"dst_ip 10.{100 + (i >> 16)}.{(i >> 8) & 255}.{i & 255} action drop")
' "$NETIF_A" >/tmp/tc_flower.batch
t0=$(date +%s%N)
tc -force -b /tmp/tc_flower.batch >/tmp/tc_flower.batch.log 2>&1
t1=$(date +%s%N)
in_hw=$(tc -s filter show dev "$NETIF_A" ingress | grep -c in_hw)
t2=$(date +%s%N)
refused=$(grep -c "Error: rsnic: the card's rule table is full" /tmp/tc_flower.batch.log)
failed=$(grep -c "Command failed" /tmp/tc_flower.batch.log)
got=$(b_to_a 7001 20)
pk=$(filter_field 1 packets)
echo "# a full table: $in_hw in hardware, $failed of 16384 more refused ($refused with the reason); the first rule: $got of 20 arrived, it counted ${pk:-?}"
t3=$(date +%s%N)
tc qdisc del dev "$NETIF_A" clsact
t4=$(date +%s%N)
echo "# added in $(((t1 - t0) / 1000000)) ms, tc -s filter show (counters of all) in $(((t2 - t1) / 1000000)) ms, all deleted in $(((t4 - t3) / 1000000)) ms"
check_eq "a full table: 16384 in hardware, the one more refused with the reason, the first rule still drops and counts; none left once deleted" \
	"$in_hw / $failed / $refused / $got / ${pk:-?} / $(card_gft_stat rules)" "16384 / 1 / 1 / 0 / 20 / 0"
ktap_finish
