#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NAPI contexts: the device lists one per queue in use, each linked to
# its queue and IRQ (netdev netlink), and threaded NAPI switches on and
# off on every queue, under traffic, without hanging (a context left
# disabled on the device's list would block `echo 0 > threaded` in
# napi_stop_kthread forever, with RTNL held), also after `ethtool -L`.
# And the driver honours napi_defer_hard_irqs/gro_flush_timeout: it
# re-arms a queue's interrupt only when napi_complete_done() says so, so
# while frames keep coming NAPI polls on the kernel's timer instead.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
cleanup() {
	kill $(jobs -p) 2>/dev/null
	echo 0 > /sys/class/net/$NETIF_A/threaded 2>/dev/null
	echo 0 > /sys/class/net/$NETIF_A/napi_defer_hard_irqs
	echo 0 > /sys/class/net/$NETIF_A/gro_flush_timeout
	echo rem_device_all >/proc/net/pktgen/kpktgend_0 2>/dev/null
	ethtool -L "$NETIF_A" combined 4 2>/dev/null
	net_cleanup
}
trap cleanup EXIT
dmesg_mark
ktap_header 8

# napi_count: NAPI contexts the netdev family lists for the device.
napi_count() { "$QSTATS" "$NETIF_A" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["napi_irq"]))'; }
# linked_count: RX and TX queues that name a NAPI context.
linked_count() { "$QSTATS" "$NETIF_A" | python3 -c 'import json,sys; print(sum(1 for v in json.load(sys.stdin)["queue_napi"].values() if v))'; }
queues=$(channels_in_use)
count=$(napi_count)
echo "# $queues queues in use, $count NAPI contexts listed"
check "one NAPI context per queue in use ($count)" test "$count" -eq "$queues"
check "every RX and TX queue names its NAPI context" test "$(linked_count)" -eq $((2 * queues))

# switch ON|OFF: writes the threaded knob, within 10 s.
switch() { timeout -k 1 10 sh -c "echo $1 > /sys/class/net/$NETIF_A/threaded"; }

ping -f -q -w 30 $IP_B -I "$NETIF_A" >/dev/null 2>&1 &
flood=$!
ok=true
for i in 1 2 3 4 5; do
	switch 1 || { ok=false; echo "# on $i did not return"; break; }
	sleep 0.5
	switch 0 || { ok=false; echo "# off $i did not return"; break; }
done
check "threaded NAPI on and off five times under a ping flood" $ok
check "the flood still flows" kill -0 $flood
kill $flood 2>/dev/null
wait $flood 2>/dev/null

ethtool -L "$NETIF_A" combined 2
ok=true
switch 1 && ping -c 3 -q -W 2 $IP_B >/dev/null && switch 0 || ok=false
check "after ethtool -L 2: threaded on, traffic, off" $ok
ethtool -L "$NETIF_A" combined 4
count=$(napi_count)
check "back to 4 queues: 4 NAPI contexts ($count)" test "$count" -eq 4

# burst_irqs DEFER TIMEOUT: card A's interrupts while card B's pktgen sends
# it 3000 frames (RX only), 100 us apart, with those two NAPI settings.
# Spaced, each frame finds NAPI done and its interrupt armed unless the
# driver defers; back to back, a vCPU slowed by a loaded host polled the
# whole burst in as few as 19 interrupts without deferral, too few to
# tell the two apart. Deferral holds the interrupt for 100 empty polls
# 200 us apart (20 ms without a frame): with 10 (2 ms), a slower host
# that stalled the VM for longer than that, often, re-armed it 20 times
# against 40 plain (CI, 2026-12-01).
mac_a=$(cat /sys/class/net/$NETIF_A/address)
burst_irqs() {
	local before
	echo "$1" > /sys/class/net/$NETIF_A/napi_defer_hard_irqs
	echo "$2" > /sys/class/net/$NETIF_A/gro_flush_timeout
	before=$(card_irqs A)
	ip netns exec $NS bash -c "$(declare -f pktgen); pktgen $NETIF_B $IP_A $mac_a 3000 1 'delay 100000'" >/dev/null ||
		{ echo "# pktgen on card B failed" >&2; return 1; }
	echo $(($(card_irqs A) - before))
}
plain=$(burst_irqs 0 0)
deferred=$(burst_irqs 100 200000)
burst_irqs 0 0 >/dev/null
echo "# card A's interrupts for 3000 frames: $plain plain, $deferred with napi_defer_hard_irqs 100, gro_flush_timeout 200 us"
check "napi_defer_hard_irqs holds the interrupt while frames come (under a quarter of $plain)" \
	eval '[ "${plain:-0}" -ge 20 ] && [ -n "$deferred" ] && [ $((deferred * 4)) -lt "$plain" ]'
check "no kernel warnings" dmesg_clean
ktap_finish
