#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# devmem TCP on card A, beside the kernel's devmem.py (upstream_hw.sh):
# while the kernel's ncdevmem receives a stream into a udmabuf, the
# netdev netlink family lists a page pool of card A that takes the
# dmabuf, and the payload lands there (the card's header slots carry the
# headers: every data frame split, the driver's count the card's). Killed
# in the middle of the stream (its dmabuf unbound while traffic runs),
# the queue goes back to pages: no pool takes a dmabuf, a pool per queue
# again, no bad completion. Then io_uring's large chunks (the queue
# config's rx_page_size), bound and unbound by the kernel's iou-zcrx in
# its dry run: 64 KiB RX buffers taken, 128 KiB refused with ERANGE (the
# card's limit, MAX_PROVIDER_BUF_LEN). And TCP over every queue crosses
# intact after all of it.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
NCDEVMEM=$KSFT/drivers/net/hw/ncdevmem
ZCRX=$KSFT/drivers/net/hw/iou-zcrx
for tool in "$NCDEVMEM" "$ZCRX"; do
	[ -x "$tool" ] || bail_out "no $tool (qemu/build-ksft.sh)"
done
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	ethtool -X "$NETIF_A" default 2>/dev/null
	for id in $(ethtool -n "$NETIF_A" 2>/dev/null | awk '/^Filter:/ {print $2}'); do
		ethtool -N "$NETIF_A" delete "$id"
	done
	ethtool -G "$NETIF_A" tcp-data-split off 2>/dev/null
	echo 0 >/proc/sys/vm/nr_hugepages
	net_cleanup
}
trap cleanup EXIT

# "ID DMABUF" of each of card A's page pools (DMABUF 0: pages).
pools_a() {
	python3 - "$KSFT/net" "$(cat /sys/class/net/$NETIF_A/ifindex)" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from lib.py import NetdevFamily
for p in NetdevFamily().page_pool_get({}, dump=True):
    if p.get("ifindex") == int(sys.argv[2]):
        print(p["id"], p.get("dmabuf", 0))
PY
}
dmabuf_pools() { pools_a | awk '$2 != 0' | wc -l; }
dmabuf_pools_are() { [ "$(dmabuf_pools)" = "$1" ] || { flush_deferred_skbs; return 1; }; }
eth_stat_sum() { ethtool -S "$NETIF_A" | awk -v re="$1" '$1 ~ re {n += $2} END {print n + 0}'; }
card_stat() { harness card A stats | tr ' ' '\n' | sed -n "s/^$1=//p"; }
queues=$(channels_in_use "$NETIF_A")

ktap_header 12
port=5201
"$NCDEVMEM" -l -f "$NETIF_A" -s "$IP6_A" -p $port -c "$IP6_B" >/tmp/ncdevmem.out 2>&1 &
ncd=$!
wait_listening tcp $port ""
check_eq "ncdevmem bound a dmabuf: one pool takes it" "$(wait_until 50 dmabuf_pools_are 1; dmabuf_pools)" 1
hds0=$(eth_stat_sum '^rx[0-9]+_hds:$') card0=$(card_stat hds_frames) bad0=$(eth_stat_sum '^q[0-9]+_bad_completions:$')
ip netns exec $NS bash -c "head -c 400M /dev/zero | socat -u - TCP6:[$IP6_A]:$port,bind=[$IP6_B]:$port" >/dev/null 2>&1 &
sender=$!
# The stream runs into the dmabuf for a while, then the receiver dies.
sleep 3
check "ncdevmem still receiving after 3 s" kill -0 $ncd
hds=$(($(eth_stat_sum '^rx[0-9]+_hds:$') - hds0)) card=$(($(card_stat hds_frames) - card0))
echo "# split frames while bound: driver $hds, card $card"
check "frames arrived split (headers in the slots, payload in the dmabuf)" expect_num "split frames" "$hds" -ge 100
kill -9 $ncd
wait $ncd 2>/dev/null
wait $sender 2>/dev/null
check "unbound: no pool takes a dmabuf" wait_until 100 dmabuf_pools_are 0
check "a page pool per queue again" wait_page_pools "$queues"
check_eq "no bad completion" "$(eth_stat_sum '^q[0-9]+_bad_completions:$')" "$bad0"
# Large chunks: the area is 2 MiB huge pages (iou-zcrx maps them).
echo 64 >/proc/sys/vm/nr_hugepages
ethtool -G "$NETIF_A" tcp-data-split on hds-thresh 0
# The 32 MiB area holds 512 such buffers, the ring 1024: the provider
# runs dry while the ring fills, which is counted, not a crash (it was
# one: a buffer of 0 given back).
last=$((queues - 1))
failed0=$(eth_stat_sum "^rx${last}_alloc_failed:\$")
out=$("$ZCRX" -s -p 5300 -i "$NETIF_A" -q $last -x 16 -d 2>&1)
check_eq "64 KiB RX buffers for io_uring: bound and unbound" "$? $out" "0 "
check "the provider ran dry filling the ring: counted" \
	expect_num "allocation failures" $(($(eth_stat_sum "^rx${last}_alloc_failed:\$") - failed0)) -ge 1
out=$("$ZCRX" -s -p 5300 -i "$NETIF_A" -q $last -x 32 -d 2>&1)
check_eq "128 KiB RX buffers refused with ERANGE" "$? $out" "42 Large chunks are not supported -34"
# TCP over every queue of A afterwards: 8 flows, each checked.
python3 - >/tmp/devmem.flows 2>&1 <<'PY' &
import socket, threading
ok = []
def recv(i):
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("0.0.0.0", 7100 + i)); l.listen(1); l.settimeout(30)
    c, _ = l.accept(); c.settimeout(30); d = b""
    while (b := c.recv(65536)): d += b
    ok.append(d == bytes([i]) * (1 << 20))
ts = [threading.Thread(target=recv, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(sum(ok))
PY
receiver=$!
wait_listening tcp 7107 ""
ip netns exec $NS python3 - "$IP_A" <<'PY'
import socket, sys, threading
def send(i):
    s = socket.create_connection((sys.argv[1], 7100 + i), timeout=30)
    s.sendall(bytes([i]) * (1 << 20)); s.close()
ts = [threading.Thread(target=send, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
PY
wait $receiver
got=$(tail -n1 /tmp/devmem.flows)
check_eq "then 8 TCP flows to card A intact" "$got" 8
check_eq "and no bad completion" "$(eth_stat_sum '^q[0-9]+_bad_completions:$')" "$bad0"
hds=$(($(eth_stat_sum '^rx[0-9]+_hds:$') - hds0)) card=$(($(card_stat hds_frames) - card0))
check_eq "the driver's split frames are the card's, all along" "$hds" "$card"
ktap_finish
