#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The core's queue restart (netdev_queue_mgmt_ops, what binding a memory
# provider does) on card B, the receiver, through debugfs queue_restart
# (the core's netdev_rx_queue_restart). A restart gives the queue a new
# page pool (the netdev netlink family lists its id, and the old pool
# goes); restarts of every queue while 64 MiB arrive leave the data
# intact with no queue reset. Refused: a queue not in use or garbage
# (EINVAL), the device down (ENETDOWN, as the core expects), RX streams
# (EOPNOTSUPP). A card that refuses the new memory's queue pair (admin-
# fault create-qp) fails the restart: the queue runs on its old memory
# again, the new pool is freed, nothing is reset, data still crosses.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
trap 'kill $(jobs -p) 2>/dev/null; harness card B admin-fault error 0 >/dev/null; net_cleanup' EXIT

QR=$RSNIC_DEBUGFS/$(card_addr B)/queue_restart
[ -e "$QR" ] || bail_out "no $QR"
# restart Q: restarts B's RX queue Q; prints OK or the error's name.
restart() { "$GFT_PY" write "$QR" "$1"; }
eth_b() { ip netns exec $NS ethtool "$@"; }
card_stat() { harness card B stats | tr ' ' '\n' | sed -n "s/^$1=//p"; }
resets_b() { eth_b -S "$NETIF_B" | awk '$1 ~ /^q[0-9]+_resets:$/ {n += $2} END {print n + 0}'; }
# The ids of B's page pools, as the netdev netlink family lists them
# (one per queue; a pool whose pages are still out stays listed).
pools_b() {
	ip netns exec $NS python3 - "$KSFT/net" "$(ip netns exec $NS cat /sys/class/net/$NETIF_B/ifindex)" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from lib.py import NetdevFamily
for p in NetdevFamily().page_pool_get({}, dump=True):
    if p.get("ifindex") == int(sys.argv[2]):
        print(p["id"])
PY
}
pools_b_are() { [ "$(pools_b | wc -l)" = "$1" ] || { ip netns exec $NS ping -q -c 1 -W 1 127.0.0.1 >/dev/null 2>&1; return 1; }; }
# send_paced IP PORT FILE: sends FILE a MiB at a time, 50 ms apart, so
# that the transfer outlasts several restarts however fast the machine.
send_paced() {
	python3 -c '
import socket, sys, time
d = open(sys.argv[3], "rb").read()
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
for i in range(0, len(d), 1 << 20):
    s.sendall(d[i:i + (1 << 20)]); time.sleep(0.05)
s.close()
' "$@"
}
# transfer: 64 MiB from A to B over TCP (at least 3.2 s), restarting B's
# queues (all of them, in turn) while it runs; sets sha (of what B
# received), restarts (those done) and refused (those that failed).
transfer() {
	rm -f /tmp/qr.dst
	tcp_sink 7006 /tmp/qr.dst &
	local server=$! q=0 r
	sleep 0.5
	send_paced "$IP_B" 7006 /tmp/qr.src &
	local sender=$!
	restarts=0 refused=0
	while kill -0 $sender 2>/dev/null; do
		r=$(restart $q)
		if [ "$r" = OK ]; then restarts=$((restarts + 1)); else refused=$((refused + 1)); echo "# restart $q: $r"; fi
		q=$(((q + 1) % queues))
	done
	wait $sender
	wait $server
	sha=$(sha256sum </tmp/qr.dst | cut -d" " -f1)
	echo "# $restarts restarts during the transfer, $refused refused"
}

queues=$(eth_b -l "$NETIF_B" | awk '/^Combined:/ {v=$2} END {print v}')
head -c 64M /dev/urandom >/tmp/qr.src
want=$(sha256sum </tmp/qr.src | cut -d" " -f1)

ktap_header 17
wait_until 100 pools_b_are "$queues"
before=$(pools_b | sort)
check_eq "restart of queue 1" "$(restart 1)" OK
check "a page pool per queue again after it" wait_until 100 pools_b_are "$queues"
new=$(comm -13 <(echo "$before") <(pools_b | sort) | wc -l)
check_eq "the restarted queue's pool is new, the others kept" "$new" 1

r0=$(resets_b)
transfer
check_eq "64 MiB intact across restarts of every queue" "$sha" "$want"
check "restarts during the transfer" expect_num "restarts" "$restarts" -ge "$queues"
check_eq "no restart refused" "$refused" 0
check_eq "no queue reset" "$(resets_b)" "$r0"
check "still a page pool per queue" wait_until 100 pools_b_are "$queues"

check_eq "a queue not in use: EINVAL" "$(restart "$queues")" EINVAL
check_eq "not a number: EINVAL" "$(restart x)" EINVAL

ip -n $NS link set "$NETIF_B" down
check_eq "device down: ENETDOWN" "$(restart 0)" ENETDOWN
eth_b --set-priv-flags "$NETIF_B" rx-stream on
ip -n $NS link set "$NETIF_B" up
wait_carrier "$NETIF_B" 1 $NS
# EOPNOTSUPP, errno 95, which Python names ENOTSUP.
check_eq "RX streams: EOPNOTSUPP" "$(restart 0)" ENOTSUP
ip -n $NS link set "$NETIF_B" down
eth_b --set-priv-flags "$NETIF_B" rx-stream off
ip -n $NS link set "$NETIF_B" up
wait_carrier "$NETIF_B" 1 $NS

# The card refuses the new memory's queue pair: the core starts the
# queue on its old memory again.
f0=$(card_stat admin_faults_injected) r0=$(resets_b)
wait_until 100 pools_b_are "$queues"
before=$(pools_b | sort)
harness card B admin-fault error 1 create-qp >/dev/null
check_eq "the refused queue pair fails the restart: EIO" "$(restart 0)" EIO
check_eq "the card refused one creation" "$(($(card_stat admin_faults_injected) - f0))" 1
check "the new pool freed, the old kept" wait_until 100 pools_b_are "$queues"
check_eq "the same pools as before" "$(pools_b | sort | tr '\n' ' ')" "$(echo "$before" | tr '\n' ' ')"
transfer
check_eq "afterwards 64 MiB intact, no reset" "$sha $(resets_b)" "$want $r0"
ktap_finish
