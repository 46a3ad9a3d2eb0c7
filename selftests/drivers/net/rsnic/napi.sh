#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NAPI contexts: the device lists one per queue in use, each linked to
# its queue and IRQ (netdev netlink), and threaded NAPI switches on and
# off on every queue, under traffic, without hanging (a context left
# disabled on the device's list would block `echo 0 > threaded` in
# napi_stop_kthread forever, with RTNL held), also after `ethtool -L`.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
cleanup() {
	kill $(jobs -p) 2>/dev/null
	echo 0 > /sys/class/net/$NETIF_A/threaded 2>/dev/null
	ethtool -L "$NETIF_A" combined 4 2>/dev/null
	net_cleanup
}
trap cleanup EXIT
dmesg_mark
ktap_header 7

# napi_count: NAPI contexts the netdev family lists for the device.
napi_count() { "$QSTATS" "$NETIF_A" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["napi_irq"]))'; }
# linked_count: RX and TX queues that name a NAPI context.
linked_count() { "$QSTATS" "$NETIF_A" | python3 -c 'import json,sys; print(sum(1 for v in json.load(sys.stdin)["queue_napi"].values() if v))'; }
queues=$(ethtool -l "$NETIF_A" | awk '/^Combined:/ {n = $2} END {print n}')
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
check "no kernel warnings" dmesg_clean
ktap_finish
