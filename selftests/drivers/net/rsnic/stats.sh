#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Statistics: qstats (netdev netlink) equal the rtnl link stats, per
# queue and in total, also after the channel count shrinks; counters
# survive down/up. And the driver's counts equal counts it does not make:
# the peer's netdev and the card's own queue counters.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
trap 'kill $(jobs -p) 2>/dev/null; net_cleanup' EXIT
"$QSTATS" "$NETIF_A" >/dev/null || skip_all "netdev qstats not readable"
# Every queue pair in use: an earlier file's channel count would leave
# queues idle, whose counts qstats reports in the base, not per queue.
max_channels=$(channels_max)
ethtool -L "$NETIF_A" combined "$max_channels" 2>/dev/null
iperf3_server 5201
iperf3 -c $IP_B -p 5201 -t 2 -P 4 >/dev/null
iperf3 -c $IP_B -p 5201 -t 2 -P 4 -R >/dev/null
sleep 0.5

ktap_header 8
check "qstats device totals equal rtnl stats after traffic" agree device
check "qstats per-queue sums equal rtnl stats ($max_channels queues in use)" agree queues
check "rtnl packets equal the peer's and card A's own counts (200 pings)" independent_count card

ethtool -L "$NETIF_A" combined 2
check "after ethtool -L 2: device totals still equal rtnl (base stats)" agree device
check "only 2 RX queues reported" test "$("$QSTATS" "$NETIF_A" | python3 -c 'import json,sys; print(sum(q["type"] == "rx" for q in json.load(sys.stdin)["queues"]))')" -eq 2
ethtool -L "$NETIF_A" combined 4

before=$(rtnl)
ip link set "$NETIF_A" down
ip link set "$NETIF_A" up
wait_carrier "$NETIF_A" 1
after=$(rtnl)
ok=true
read -r b1 b2 b3 b4 <<<"$before"
read -r a1 a2 a3 a4 <<<"$after"
names=(- "RX packets" "RX bytes" "TX packets" "TX bytes")
for i in 1 2 3 4; do
	b=b$i a=a$i
	expect_num "${names[i]} after down and up" "${!a}" -ge "${!b}" || ok=false
done
[ "$b2" -gt 1000000 ] || { echo "# too little traffic counted: $before"; ok=false; }
check "counters survive down/up" $ok
iperf3 -c $IP_B -p 5201 -t 1 >/dev/null
sleep 0.5
check "and keep counting, qstats equal rtnl" agree device

# Each queue in use is linked to its pair's NAPI, and each NAPI to the
# IRQ of the pair's MSI-X vector (an "rsnic-queue" line of /proc/interrupts).
napi_ok() {
	"$QSTATS" "$NETIF_A" | python3 -c '
import json, sys
r = json.load(sys.stdin)
irqs = {l.split(":")[0].strip() for l in open("/proc/interrupts") if "rsnic-queue" in l}
qn, ni = r["queue_napi"], r["napi_irq"]
ok = True
for q in range(4):
    rx, tx = qn.get(f"rx{q}"), qn.get(f"tx{q}")
    if rx is None or rx != tx or str(ni.get(str(rx))) not in irqs:
        print(f"# queue {q}: rx napi {rx}, tx napi {tx}, irq {ni.get(str(rx))}")
        ok = False
if len({qn[f"rx{q}"] for q in range(4)}) != 4:
    print("# queues share a NAPI")
    ok = False
sys.exit(0 if ok else 1)
'
}
check "queues linked to their NAPI, NAPIs to their queue IRQ (netdev netlink)" napi_ok
ktap_finish
