#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Checksum offloads and TSO on and off: a file crosses the link intact in
# every combination, the card's TX checksums and the segments it cuts
# verify on the remote side (tcpdump checks them in software: IPv4 and
# IPv6 TCP, TSO segments, UDP), and the remote's RX checksum offload is
# exercised. UDP segmentation (USO): UDP_SEGMENT sends the card cuts into
# datagrams, each checked by tcpdump and the remote's socket.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
trap 'kill $(jobs -p) 2>/dev/null; ip netns exec $NS ethtool -K "$NETIF_B" gro on rx-gro-hw on; net_cleanup' EXIT

feature() { ethtool -k "$1" | awk -v k="$2:" '$1 == k {print $2}'; }

# Sends /tmp/offload.src to the remote over TCP; prints the SHA-256 of
# what the remote received.
# $1: the remote address (default IPv4).
transfer() { tcp_file_sha "${1:-$IP_B}" 7001 /tmp/offload.src; }

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

ktap_header 24
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
# USO: a UDP_SEGMENT send of $3 bytes in $2-byte datagrams, $4 times, to
# $1 port 7003. The remote's socket counts what arrives, tcpdump there
# checks every datagram's checksum in software (GRO is off there, so it
# sees the datagrams as they crossed the wire). Sets got (datagrams and
# bytes the socket received), sums (UDP checksums correct, bad) and the
# card's and the driver's deltas: uso (frames and datagrams the card cut)
# and drv (frames the driver handed over for segmentation).
card_uso() { harness card A stats | tr ' ' '\n' | sed -n 's/^uso_\(frames\|segments\)=//p' | paste -sd' '; }
uso_round() {
	local dst=$1 gso=$2 size=$3 sends=$4
	local want=$((sends * ((size + gso - 1) / gso)))
	ip netns exec $NS tcpdump -i "$NETIF_B" -nn -vv -c "$want" udp port 7003 >/tmp/offload.uso 2>/dev/null &
	local dump=$!
	ip netns exec $NS python3 -c '
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind(("::", 7003))
s.settimeout(3)
n = total = 0
try:
    while True:
        d = s.recv(65536)
        n += 1
        total += len(d)
except socket.timeout:
    pass
print(n, total)
' >/tmp/offload.uso_rx &
	local rx=$!
	sleep 0.7
	local c0 d0 c1 d1
	read -r -a c0 <<<"$(card_uso)"
	d0=$(driver_tso)
	python3 -c '
import socket, sys
dst, gso, size, sends = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_UDP, 103, gso)  # UDP_SEGMENT
for i in range(sends):
    s.sendto(bytes([65 + i % 26]) * size, (dst, 7003))
' "$dst" "$gso" "$size" "$sends"
	wait $rx
	timeout 3 tail --pid=$dump -f /dev/null
	kill $dump 2>/dev/null
	read -r -a c1 <<<"$(card_uso)"
	d1=$(driver_tso)
	got=$(cat /tmp/offload.uso_rx)
	sums="$(grep -c "udp sum ok" /tmp/offload.uso) $(grep -c "bad udp cksum" /tmp/offload.uso)"
	uso="$((c1[0] - c0[0])) $((c1[1] - c0[1]))"
	drv=$((d1 - d0))
	echo "# USO to $dst, $sends x $size bytes in $gso: socket got '$got', tcpdump sums ok/bad '$sums', card cut frames/datagrams '$uso', driver handed over $drv"
}

check "tx-udp-segmentation offered and on" \
	test "$(feature "$NETIF_A" tx-udp-segmentation)" = on
# 5 sends of 1400 x 10 + 500 bytes: 55 datagrams, the last of each short.
for dst in $IP_B $IP6_B; do
	uso_round "$dst" 1400 14500 5
	check_eq "USO to $dst: the card cut 5 sends into 55 datagrams, all received" \
		"$got / $uso / $drv" "55 72500 / 5 55 / 5"
	check_eq "USO to $dst: every datagram's UDP checksum verifies (tcpdump)" "$sums" "55 0"
done
ethtool -K "$NETIF_A" tx-udp-segmentation off
uso_round "$IP_B" 1400 14500 5
ethtool -K "$NETIF_A" tx-udp-segmentation on
check_eq "USO off: the stack cuts, the card cuts nothing, all received" \
	"$got / $uso / $sums" "55 72500 / 0 0 / 55 0"
# 100 datagrams in one send: above the card's 64, so the stack cuts it
# (the driver said so); the card refuses nothing.
uso_round "$IP_B" 100 10000 1
check_eq "USO above the card's 64-datagram limit: cut by the stack, all received, none refused" \
	"$got / $uso / $(harness card A stats | tr ' ' '\n' | sed -n 's/^tx_bad_uso=//p')" "100 10000 / 0 0 / 0"

# Last: below 1280 bytes IPv6 leaves the interfaces.
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
