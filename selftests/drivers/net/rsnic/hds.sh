#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Header/data split (ethtool -G tcp-data-split, hds-thresh) on card B,
# the receiver. Off by default. On, files cross intact over IPv4 and
# IPv6, card coalescing on (the coalesced frames are split too) and off,
# and the driver's count of split frames (ethtool -S rxN_hds) is the
# card's own (harness hds_frames); ICMP is not split, UDP is (small
# datagrams copied whole). Frames no longer than hds-thresh are not
# split; a threshold above the maximum is refused; an XDP program and RX streams are refused while it is on; a
# ring resize keeps it. A card claiming a split with 3 bytes of headers
# (cqe-fault hdr) costs that frame, counted as a bad completion, and
# nothing else. The kernel's hds.py checks the settings' rules
# (upstream.sh).

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
DUMMY=$KSFT/net/lib/xdp_dummy.bpf.o
[ -f "$DUMMY" ] || bail_out "no $DUMMY (qemu/build-ksft.sh)"
trap 'kill $(jobs -p) 2>/dev/null; ip -n $NS link set dev "$NETIF_B" xdpdrv off 2>/dev/null; net_cleanup' EXIT

eth_b() { ip netns exec $NS ethtool "$@"; }
# B's "TCP data split" and "HDS thresh" as ethtool -g shows them in
# effect (the last of each: the current settings after the maxima).
split_b() { eth_b -g "$NETIF_B" | awk -F: '/^TCP data split/ {v = $2} END {gsub(/[ \t]/, "", v); print v}'; }
thresh_b() { eth_b -g "$NETIF_B" | awk -F: '/^HDS thresh:/ {v = $2} END {gsub(/[ \t]/, "", v); print v}'; }
# The split frames B's driver counted over its queues, and the card's.
driver_hds() { eth_b -S "$NETIF_B" | awk '$1 ~ /^rx[0-9]+_hds:$/ {n += $2} END {print n + 0}'; }
card_stat() { harness card B stats | tr ' ' '\n' | sed -n "s/^$1=//p"; }
card_hds() { card_stat hds_frames; }
bad_b() { eth_b -S "$NETIF_B" | awk '$1 ~ /^q[0-9]+_bad_completions:$/ {n += $2} END {print n + 0}'; }

# transfer DST: sends /tmp/hds.src to B over TCP; sets sha (of what B
# received) and the split frames B's driver (drv) and card (card) counted.
transfer() {
	local dst=$1 six= d0 c0
	[[ $dst == *:* ]] && six=ipv6
	rm -f /tmp/hds.dst
	tcp_sink 7003 /tmp/hds.dst $six &
	local server=$!
	sleep 0.5
	d0=$(driver_hds) c0=$(card_hds)
	tcp_send_file "$dst" 7003 /tmp/hds.src
	wait $server
	drv=$(($(driver_hds) - d0)) card=$(($(card_hds) - c0))
	sha=$(sha256sum </tmp/hds.dst | cut -d" " -f1)
	echo "# to $dst: $drv frames split (card: $card)"
}

head -c 4M /dev/urandom >/tmp/hds.src
want=$(sha256sum </tmp/hds.src | cut -d" " -f1)

ktap_header 22
check_eq "tcp-data-split off by default" "$(split_b)" off
eth_b -G "$NETIF_B" tcp-data-split on hds-thresh 0
check_eq "on" "$(split_b)" on
for dst in $IP_B $IP6_B; do
	transfer "$dst"
	check_eq "4 MiB to $dst intact, split" "$sha" "$want"
	# Coalesced frames of up to 64 KiB: at least 64 of them.
	check "to $dst: every frame split" expect_num "split frames" "$drv" -ge 64
	check_eq "to $dst: the driver's split frames are the card's" "$drv" "$card"
done

eth_b -K "$NETIF_B" rx-gro-hw off
transfer "$IP_B"
check "without card coalescing: intact, every data frame split" expect_num "split frames" "$drv" -ge 2897
check_eq "without card coalescing: data intact" "$sha" "$want"

c0=$(card_hds)
ping -c 3 -s 1400 -q "$IP_B" >/dev/null
check_eq "ICMP is not split" "$(($(card_hds) - c0))" 0
# Datagrams of 1000 bytes (a page fragment after the headers) and of
# 20 (copied whole, headers and payload, under rx-copybreak).
c0=$(card_hds) d0=$(driver_hds)
ip netns exec $NS python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 7004)); s.settimeout(5)
got = [s.recv(2048) for _ in range(10)]
assert got == [bytes([i]) * (1000 if i % 2 else 20) for i in range(10)], "datagrams damaged"
' &
udp=$!
sleep 0.5
python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(10):
    s.sendto(bytes([i]) * (1000 if i % 2 else 20), (sys.argv[1], 7004))
' "$IP_B"
check "10 UDP datagrams of 1000 and 20 bytes intact" wait $udp
check "UDP is split, by the card and the driver" expect "card, driver" \
	"$(($(card_hds) - c0)) $(($(driver_hds) - d0))" "10 10"

eth_b -G "$NETIF_B" hds-thresh 2000
check_eq "hds-thresh 2000" "$(thresh_b)" 2000
transfer "$IP_B"
check "frames of at most 2000 bytes are not split" expect "sha, split" "$sha $card" "$want 0"
eth_b -G "$NETIF_B" hds-thresh 9019 2>/dev/null && refused=0 || refused=1
check "hds-thresh above the maximum (9018) is refused" expect "refused, thresh" "$refused $(thresh_b)" "1 2000"
eth_b -G "$NETIF_B" hds-thresh 0
eth_b -K "$NETIF_B" rx-gro-hw on

check "an XDP program is refused while split is on" \
	expect "status" "$(ip -n $NS link set dev "$NETIF_B" xdpdrv obj "$DUMMY" sec xdp 2>/dev/null; echo $?)" 2
check "RX streams are refused while split is on" \
	expect "status" "$(eth_b --set-priv-flags "$NETIF_B" rx-stream on 2>/dev/null; echo $?)" 1

eth_b -G "$NETIF_B" rx 512
wait_until 50 ping -c1 -W1 -q "$IP_B" >/dev/null
transfer "$IP_B"
check "a ring resize keeps the split" expect "sha, on, split>0" "$sha $(split_b) $((drv > 0))" "$want on 1"

# The fault is one completion on each queue pair that receives next:
# the transfer's, and any other that a neighbour message reaches.
b0=$(bad_b) i0=$(card_stat cqe_faults_injected)
harness card B cqe-fault hdr 1 >/dev/null
transfer "$IP_B"
harness card B cqe-fault hdr 0 >/dev/null
check_eq "a split claimed with 3 bytes of headers: intact all the same" "$sha" "$want"
injected=$(($(card_stat cqe_faults_injected) - i0))
check "each such completion counted as one bad completion" expect "injected>0, bad" \
	"$((injected > 0)) $(($(bad_b) - b0))" "1 $injected"

eth_b -G "$NETIF_B" tcp-data-split auto
transfer "$IP_B"
check "auto: off, nothing split" expect "shown, sha, split" "$(split_b) $sha $card" "off $want 0"
ktap_finish
