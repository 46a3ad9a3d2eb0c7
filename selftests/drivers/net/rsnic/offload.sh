#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Checksum offloads and TSO on and off: a file crosses the link intact in
# every combination, the card's TX checksums and the segments it cuts
# verify on the remote side (tcpdump checks them in software: IPv4 and
# IPv6 TCP, TSO segments, UDP), and the remote's RX checksum offload is
# exercised.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
trap 'kill $(jobs -p) 2>/dev/null; ip netns exec $NS ethtool -K "$NETIF_B" gro on rx-gro-hw on; net_cleanup' EXIT

feature() { ethtool -k "$1" | awk -v k="$2:" '$1 == k {print $2}'; }

# Sends /tmp/offload.src to the remote over TCP; prints the SHA-256 of
# what the remote received.
# $1: the remote address (default IPv4).
transfer() {
	local dst=${1:-$IP_B} six=
	[[ $dst == *:* ]] && six=ipv6
	rm -f /tmp/offload.dst
	tcp_sink 7001 /tmp/offload.dst $six &
	local server=$!
	sleep 0.5
	tcp_send_file "$dst" 7001 /tmp/offload.src
	wait $server
	sha256sum </tmp/offload.dst | cut -d" " -f1
}

# Captures up to $1 frames on the remote side during one transfer and sets
# frames (TCP frames from A), bad (of those, with a wrong checksum) and
# big (IP packets above 1500 bytes). Only frames A sent count: B's own
# outgoing frames are captured before its card fills their checksums in,
# so tcpdump calls those incorrect.
# $2: the remote address (default IPv4; IPv6 puts no length in
# parentheses, so big counts the payload lengths above 1500 - 40 there).
capture_transfer() {
	local dst=${2:-$IP_B} src=$IP_A
	[[ $dst == *:* ]] && src=$IP6_A
	ip netns exec $NS tcpdump -i "$NETIF_B" -nn -vv -c "$1" tcp port 7001 >/tmp/offload.dump 2>/dev/null &
	local dump=$!
	sleep 0.5
	transfer "$dst" >/dev/null
	wait $dump
	frames=$(grep -c "$src\.[0-9]* > $dst\..*cksum" /tmp/offload.dump)
	bad=$(grep "$src\.[0-9]* > $dst\..*cksum" /tmp/offload.dump | grep -c incorrect)
	if [[ $dst == *:* ]]; then
		big=$(grep -o "payload length: [0-9]*" /tmp/offload.dump | awk '$3 > 1460' | wc -l)
	else
		big=$(grep -o "length [0-9]*)" /tmp/offload.dump | tr -d ')' | awk '$2 > 1500' | wc -l)
	fi
}

head -c 4M /dev/urandom >/tmp/offload.src
want=$(sha256sum </tmp/offload.src | cut -d" " -f1)

ktap_header 17
check "tx-checksum-ip-generic and rx-checksum offered and on" \
	test "$(feature "$NETIF_A" tx-checksum-ip-generic)" = on -a "$(feature "$NETIF_A" rx-checksumming)" = on

for tx in on off; do
	for rx in on off; do
		ethtool -K "$NETIF_A" tx $tx
		ip netns exec $NS ethtool -K "$NETIF_B" rx $rx
		got=$(transfer)
		check_eq "4 MiB over TCP intact with A tx-checksum $tx, remote rx-checksum $rx" "$got" "$want"
	done
done

ethtool -K "$NETIF_A" tx on
# GRO off on the remote, the stack's and its card's, or tcpdump sees
# merged segments whose checksum field no longer matches their merged
# payload.
ip netns exec $NS ethtool -K "$NETIF_B" rx on gro off rx-gro-hw off
capture_transfer 50
echo "# tcpdump: $frames frames from A, $bad with bad checksums"
check "checksums the card inserted verify on the remote side" test "$frames" -gt 10 -a "$bad" -eq 0

# UDP: 50 datagrams of 1000 bytes, their checksums left to the card
# (CHECKSUM_PARTIAL), checked by tcpdump on the remote.
ip netns exec $NS tcpdump -i "$NETIF_B" -nn -vv -c 50 udp port 7002 >/tmp/offload.udp 2>/dev/null &
dump=$!
sleep 0.5
python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(50):
    s.sendto(bytes([i]) * 1000, (sys.argv[1], 7002)); time.sleep(0.01)
' $IP_B
timeout 5 tail --pid=$dump -f /dev/null
kill $dump 2>/dev/null
udp_ok=$(grep -c "udp sum ok" /tmp/offload.udp)
udp_bad=$(grep -c "bad udp cksum" /tmp/offload.udp)
echo "# tcpdump: $udp_ok UDP checksums correct, $udp_bad bad"
check "UDP checksums the card inserted verify on the remote side (tcpdump)" \
	test "$udp_ok" -eq 50 -a "$udp_bad" -eq 0

# TSO: frames the card segmented (its own count, from the harness) and
# the driver's per-queue count of TSO frames handed over.
card_tso() { harness card A stats | tr ' ' '\n' | sed -n 's/^tso_frames=//p'; }
driver_tso() { ethtool -S "$NETIF_A" | awk '/tx[0-9]+_tso:/ {n += $2} END {print n + 0}'; }

check "tcp-segmentation-offload offered and on" \
	test "$(feature "$NETIF_A" tcp-segmentation-offload)" = on
for dst in $IP_B $IP6_B; do
	card0=$(card_tso) drv0=$(driver_tso)
	got=$(transfer "$dst")
	card1=$(card_tso) drv1=$(driver_tso)
	echo "# TSO on to $dst: driver handed over $((drv1 - drv0)) TSO frames, card segmented $((card1 - card0))"
	check "4 MiB over TCP to $dst intact with TSO on, the card segmenting" \
		test "$got" = "$want" -a $((card1 - card0)) -gt 0 -a $((drv1 - drv0)) -eq $((card1 - card0))
done

# TSO depends on TX checksumming: turning that off turns TSO off too,
# and back on with it.
ethtool -K "$NETIF_A" tx off
tso_without_csum=$(feature "$NETIF_A" tcp-segmentation-offload)
ethtool -K "$NETIF_A" tx on
check "TSO follows TX checksumming (off without it, back on with it)" \
	test "$tso_without_csum" = off -a "$(feature "$NETIF_A" tcp-segmentation-offload)" = on
ok=true
before=$(ethtool -k "$NETIF_A")
ethtool -K "$NETIF_A" no-such-feature on 2>/dev/null && { echo "# unknown feature accepted"; ok=false; }
ethtool -K "$NETIF_A" rx-vlan-filter on 2>/dev/null && { echo "# fixed feature changed"; ok=false; }
expect "ethtool -k" "$(ethtool -k "$NETIF_A")" "$before" || ok=false
check "ethtool -K with an unknown or fixed feature refused, features unchanged" $ok

ethtool -K "$NETIF_A" tso off
card0=$(card_tso)
got=$(transfer)
card1=$(card_tso)
check "4 MiB over TCP intact with TSO off, no TSO frames" test "$got" = "$want" -a "$card1" = "$card0"
ethtool -K "$NETIF_A" tso on

# What reaches the remote are segments no larger than the MTU whose
# checksums verify (GRO is still off there).
capture_transfer 200
echo "# tcpdump with TSO: $frames frames from A, $bad bad checksums, $big IP packets above 1500 bytes"
check "segments the card cut fit the MTU and verify on the remote side" \
	test "$frames" -gt 10 -a "$bad" -eq 0 -a "$big" -eq 0
capture_transfer 200 $IP6_B
echo "# tcpdump with TSO over IPv6: $frames frames from A, $bad bad checksums, $big above the MTU"
check "over IPv6 too (TCP checksums with the IPv6 pseudo-header)" \
	test "$frames" -gt 10 -a "$bad" -eq 0 -a "$big" -eq 0
# At MTU 576 a 64 KiB TSO frame would need ~120 segments; the driver
# tells the stack the card cuts at most 64, so the stack sends smaller
# TSO frames and the card refuses none.
ip link set "$NETIF_A" mtu 576
ip -n $NS link set "$NETIF_B" mtu 576
card0=$(card_tso)
got=$(transfer)
card1=$(card_tso)
ip link set "$NETIF_A" mtu 1500
ip -n $NS link set "$NETIF_B" mtu 1500
check "4 MiB over TCP intact at MTU 576 with TSO, within the card's 64-segment limit" \
	test "$got" = "$want" -a $((card1 - card0)) -gt 0
check "the card rejected no TSO request" \
	test "$(harness card A stats | tr ' ' '\n' | sed -n 's/^tx_bad_tso=//p')" = 0
ktap_finish
