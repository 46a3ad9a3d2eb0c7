#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Doorbell batching: byte queue limits on every TX queue, one TX
# doorbell per xmit_more batch, TX tails the card takes from the
# doorbell page (host memory it polls after a kick) with no doorbell,
# admin commands whose tail the card takes from the page while it polls,
# and RX tails and completion-queue heads (with the interrupt's arm)
# written to the page, read by the card when it needs them, with no
# doorbell. pktgen sends bursts whose frames but the last carry
# xmit_more; the card counts doorbells and frames per queue pair, card
# B's netdev (the peer) counts what arrived, card B what it had no RX
# buffer for (pktgen outruns the VM's receiver). Pings, one frame per
# NAPI poll and an interrupt each, show the RX side: each poll tells the
# card its RX tail and CQ head, and rings nothing.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
cleanup() { echo rem_device_all >/proc/net/pktgen/kpktgend_0 2>/dev/null; net_cleanup; }
trap cleanup EXIT
dmesg_mark
ktap_header 19
N=20000

# Card A's queue pair 0: "doorbells frames polled-tails".
q0() { harness card A stats | tr ' ' '\n' | awk -F= '$1 == "q0_tx_doorbells" {d = $2} $1 == "q0_tx_packets" {p = $2} $1 == "q0_tx_tails_polled" {t = $2} END {print d + 0, p + 0, t + 0}'; }
# The driver's count of TX doorbells it did not ring, queue 0.
skipped() { ethtool -S "$NETIF_A" | awk '$1 == "tx0_doorbells_skipped:" {print $2}'; }
# Frames card B's netdev received, plus the ones card B had no RX buffer
# for.
peer_rx() {
	local got no_buf
	got=$(ip -n $NS -s -j link show "$NETIF_B" | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]["rx"]; print(s["packets"] + s["dropped"])')
	no_buf=$(harness card B stats | tr ' ' '\n' | awk -F= '/^q[0-9]+_rx_no_buffer=/ {n += $2} END {print n + 0}')
	echo $((got + no_buf))
}
mac_b=$(ip -n $NS -j link show "$NETIF_B" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')

# burst BURST: runs pktgen and prints "doorbells frames delivered pps
# polled-tails skipped-doorbells".
burst() {
	local d0 p0 t0 s0 r0 d1 p1 t1 s1 r1 pps
	read -r d0 p0 t0 < <(q0)
	s0=$(skipped)
	r0=$(peer_rx)
	pps=$(pktgen "$NETIF_A" $IP_B "$mac_b" $N "$1") || return 1
	sleep 0.5
	read -r d1 p1 t1 < <(q0)
	s1=$(skipped)
	r1=$(peer_rx)
	echo $((d1 - d0)) $((p1 - p0)) $((r1 - r0)) "$pps" $((t1 - t0)) $((s1 - s0))
}

read -r d p r pps t sk < <(burst 32)
echo "# burst 32: $d doorbells for $p frames, peer got $r, $pps frames/s"
check "pktgen burst 32: the card sent all $N frames ($p)" test "${p:-0}" -ge $N
check "the peer received them or counted them unbuffered ($r)" test "${r:-0}" -ge $N
check "fewer than one doorbell per 4 frames ($d for $p)" test $((${d:-$N} * 4)) -lt "${p:-0}"

read -r d p r pps t sk < <(burst 1)
echo "# burst 1: $d doorbells and $t tails polled for $p frames ($sk doorbells skipped by the driver), peer got $r, $pps frames/s"
check "pktgen burst 1: the card sent all $N frames ($p)" test "${p:-0}" -ge $N
# Without xmit_more each frame moves the tail; the card learns of the
# moves rung or polled (several moves may meet one look), never more
# often than frames were posted.
check "without xmit_more, every doorbell or polled tail covers a frame or more ($d + $t for $p)" \
	test $((${d:-0} + ${t:-0})) -gt 0 -a $((${d:-0} + ${t:-0})) -le "${p:-0}"
check "the card took tails from the doorbell page, no doorbell rung ($t)" test "${t:-0}" -gt 0
check "the driver skipped doorbells while the card polled ($sk), fewer than one per frame ($d rung)" \
	test "${sk:-0}" -gt 0 -a "${d:-$N}" -lt "${p:-0}"

# Admin commands during a flood: the card, polling the page for pktgen's
# tails, takes the admin tail from it too, and the driver rings no
# AQ_TAIL (each GFT stats read is two commands).
admin_stat() { ethtool -S "$NETIF_A" | awk -v n="$1:" '$1 == n {print $2}'; }
card_polled() { harness card A stats | tr ' ' '\n' | awk -F= '$1 == "admin_tails_polled" {print $2}'; }
as0=$(admin_stat admin_doorbells_skipped) at0=$(admin_stat admin_timeouts) cp0=$(card_polled)
stats=$RSNIC_DEBUGFS/$(card_addr A)/gft/stats
(while cat "$stats" >/dev/null; do :; done) &
reader=$!
pktgen "$NETIF_A" $IP_B "$mac_b" $N 1 >/dev/null
kill $reader 2>/dev/null
wait $reader 2>/dev/null
as=$(($(admin_stat admin_doorbells_skipped) - as0)) cp=$(($(card_polled) - cp0))
echo "# admin commands in a flood: $as doorbells skipped by the driver, $cp tails taken from the page by the card, $(admin_stat admin_doorbells) rung in all"
check "admin tails in the doorbell page: doorbells skipped ($as), each taken by the card ($cp), none timed out" \
	test "$as" -gt 0 -a "$cp" -ge "$as" -a "$(admin_stat admin_timeouts)" = "$at0"

# RX: every queue pair of card A, "rx_doorbells cq_doorbells rx_packets
# rx_no_buffer rx_tails_in_page cq_words_in_page irqs".
rx_a() {
	harness card A stats | tr ' ' '\n' | awk -F= '
		/^q[0-9]+_rx_doorbells=/ {d += $2} /^q[0-9]+_cq_doorbells=/ {c += $2}
		/^q[0-9]+_rx_packets=/ {p += $2} /^q[0-9]+_rx_no_buffer=/ {n += $2}
		/^q[0-9]+_rx_tails_in_page=/ {t += $2} /^q[0-9]+_cq_words_in_page=/ {w += $2}
		/^q[0-9]+_irqs=/ {i += $2}
		END {print d + 0, c + 0, p + 0, n + 0, t + 0, w + 0, i + 0}'
}
read -r d0 c0 p0 n0 t0 w0 i0 < <(rx_a)
ping -c 300 -i 0.005 -q $IP_B >/dev/null
read -r d1 c1 p1 n1 t1 w1 i1 < <(rx_a)
d=$((d1 - d0)) c=$((c1 - c0)) p=$((p1 - p0)) n=$((n1 - n0)) t=$((t1 - t0)) w=$((w1 - w0)) i=$((i1 - i0))
echo "# 300 pings: card A received $p frames, raised $i interrupts; $d RX tail and $c CQ head doorbells rung; $t RX tails and $w CQ words taken from the page; $n frames without a buffer"
check "RX tails and CQ heads in the doorbell page: all $p frames with no RX tail or CQ head doorbell ($d, $c)" \
	test "$p" -ge 300 -a "$d" -eq 0 -a "$c" -eq 0
check "the card took RX tails ($t) and armed CQ words ($w, for $i interrupts) from the page" \
	test "$t" -gt 0 -a "$w" -ge "$i" -a "$i" -gt 0
check "and the card never ran out of buffers for them ($n)" test "$n" -eq 0

# rx-copybreak: a small frame is copied into an skb of its own and its
# page posted again; a large one keeps its page. ping checks every
# reply's payload pattern, so a bad copy would not count as received.
copied() { ethtool -S "$NETIF_A" | awk '$1 ~ /^rx[0-9]+_copybreak:$/ {n += $2} END {print n + 0}'; }
received() { ping "$@" -q $IP_B | awk '/ received/ {for (i = 1; i <= NF; i++) if ($i == "received,") print $(i - 1)}'; }
c0=$(copied)
small=$(received -c 300 -i 0.005 -s 56)
c1=$(copied)
large=$(received -c 100 -i 0.005 -s 1400)
c2=$(copied)
echo "# copybreak: $((c1 - c0)) of $small small replies copied, $((c2 - c1)) of $large large ones"
check "small frames are copied out of their page ($((c1 - c0)) of $small replies)" \
	test "$small" = 300 -a $((c1 - c0)) -ge 300
check "large frames are not ($((c2 - c1)) of $large)" test "$large" = 100 -a $((c2 - c1)) -lt 10
copybreak() { ethtool --get-tunable "$NETIF_A" rx-copybreak | awk '/rx-copybreak:/ {print $2}'; }
check_eq "rx-copybreak is 256 by default" "$(copybreak)" 256
ethtool --set-tunable "$NETIF_A" rx-copybreak 0
c0=$(copied)
off=$(received -c 100 -i 0.005 -s 56)
c1=$(copied)
ethtool --set-tunable "$NETIF_A" rx-copybreak 256
check "rx-copybreak 0: no frame copied ($((c1 - c0)) of $off)" test "$off" = 100 -a $((c1 - c0)) -eq 0
too_large_refused() { ! ethtool --set-tunable "$NETIF_A" rx-copybreak 4096 2>/dev/null && [ "$(copybreak)" = 256 ]; }
check "rx-copybreak above 1024 is refused, the value kept" too_large_refused

# Byte queue limits: queue 0 learned a limit from the completions of
# the bursts (it stays 0 when the driver reports none), and with the
# link idle no byte is left in flight on any queue.
bql_ok() {
	local q ok=true
	for q in /sys/class/net/"$NETIF_A"/queues/tx-*; do
		[ -r "$q/byte_queue_limits/inflight" ] || { echo "# $q: no BQL"; ok=false; continue; }
		[ "$(cat "$q/byte_queue_limits/inflight")" -eq 0 ] || { echo "# $q: $(cat "$q/byte_queue_limits/inflight") bytes in flight"; ok=false; }
	done
	$ok
}
limit=$(cat /sys/class/net/"$NETIF_A"/queues/tx-0/byte_queue_limits/limit)
check "BQL: TX queue 0 learned a limit ($limit bytes)" test "${limit:-0}" -gt 0
check "BQL: nothing in flight on an idle link, every TX queue" bql_ok
check "no kernel warnings" dmesg_clean
ktap_finish
