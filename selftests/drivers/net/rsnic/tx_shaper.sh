#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# TX shapers through the kernel's net-shaper netlink family (the YNL
# library of tools/testing/selftests/net/lib/py), done by the card: the
# capabilities per scope; a device shaper, a shaper on every TX queue and
# a group node over all of them each hold iperf3 to its rate as the
# remote's iperf3 counts it (the receiver's socket, not the card's
# counter); queues weighted 1 and 3 under that node share it about 1:3;
# the shapers outlive a function reset (the driver gives them to the
# card again); a rate above the port's speed, a node's weight, a
# packets-a-second metric and a group below a node that does not exist
# are refused with nothing changed; deleted, the link is fast again.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
trap 'kill $(jobs -p) 2>/dev/null; harness card A admin-fault timeout 0 >/dev/null
	shaper_nl clear >/dev/null; ip link set "$NETIF_A" mtu 1500; net_cleanup' EXIT

IFINDEX=$(cat /sys/class/net/$NETIF_A/ifindex)
QUEUES=$(ls -d /sys/class/net/$NETIF_A/queues/tx-* | wc -l)

# shaper_nl OP [ARGS]: one net-shaper request on card A's netdev; prints
# the result as JSON, or "error ERRNO MESSAGE".
#   caps SCOPE | dump | set SCOPE ID JSON | delete SCOPE ID |
#   group NODE_ID|new BW_MAX [LEAF_JSON...] | clear
shaper_nl() {
	python3 - "$IFINDEX" "$QUEUES" "$@" <<'EOF'
import json, os, sys
sys.path.insert(0, os.environ["KSFT"] + "/net")
from lib.py import NetshaperFamily
ifindex, queues, op, args = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
nl = NetshaperFamily()
def handle(scope, id):
    return {"scope": scope} if scope == "netdev" else {"scope": scope, "id": int(id)}
try:
    if op == "caps":
        out = nl.cap_get({"ifindex": ifindex, "scope": args[0]})
    elif op == "dump":
        out = nl.get({"ifindex": ifindex}, dump=True)
    elif op == "set":
        out = nl.set({"ifindex": ifindex, "handle": handle(args[0], args[1]), **json.loads(args[2])})
    elif op == "delete":
        out = nl.delete({"ifindex": ifindex, "handle": handle(args[0], args[1])})
    elif op == "group":
        node = {"scope": "node"} if args[0] == "new" else {"scope": "node", "id": int(args[0])}
        out = nl.group({"ifindex": ifindex, "handle": node, "metric": "bps",
                        "bw-max": int(args[1]), "leaves": [json.loads(l) for l in args[2:]]})
    elif op == "clear":
        # Leaves first: a node goes with its last leaf.
        for s in sorted(nl.get({"ifindex": ifindex}, dump=True),
                        key=lambda s: s["handle"]["scope"] != "queue"):
            try:
                nl.delete({"ifindex": ifindex, "handle": s["handle"]})
            except Exception:
                pass
        out = None
    print(json.dumps(out))
except Exception as e:
    # NlError, as the library's own import path names it.
    if not hasattr(e, "error"):
        raise
    print("error", e.error, (e.nl_msg.extack or {}).get("msg", ""))
EOF
}

# Mbit/s the remote's iperf3 received from A over 3 s (the first second
# left out), with $1 parallel streams.
rate() {
	ip netns exec $NS iperf3 -s -1 -D -p 5211 >/dev/null 2>&1
	sleep 0.5
	iperf3 -c "$IP_B" -p 5211 -t 3 -O 1 -P "$1" -J 2>/dev/null |
		python3 -c 'import json, sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6, 1))'
}
# Whether $1 (Mbit/s) lies within $2 and $3.
within() { python3 -c "import sys; sys.exit(not $2 <= $1 <= $3)"; }

ktap_header 9
caps="$(shaper_nl caps queue | tr -d ' ')|$(shaper_nl caps netdev | tr -d ' ')|$(shaper_nl caps node | tr -d ' ')"
echo "# caps queue|netdev|node: $caps"
check "capabilities: bw-max, burst, bps at every scope, nesting for queues and nodes, weight for queues" \
	python3 -c "
import json, sys
q, d, n = [json.loads(x) for x in sys.argv[1].split('|')]
rates = all('support-bw-max' in c and 'support-burst' in c and 'support-metric-bps' in c for c in (q, d, n))
sys.exit(not (rates and 'support-nesting' in q and 'support-nesting' in n and 'support-weight' in q
              and 'support-weight' not in n))" "$caps"

fast=$(rate 4)
echo "# unshaped: $fast Mbit/s"

shaper_nl set netdev 0 '{"metric": "bps", "bw-max": 30000000}' >/dev/null
r=$(rate 4)
echo "# device shaper 30 Mbit/s: $r Mbit/s received, 4 streams"
check "a device shaper of 30 Mbit/s: 4 streams get 25 to 31.5 at the receiver" within "$r" 25 31.5
shaper_nl delete netdev 0 >/dev/null

for ((q = 0; q < QUEUES; q++)); do
	shaper_nl set queue $q '{"metric": "bps", "bw-max": 15000000}' >/dev/null
done
r=$(rate 1)
echo "# every queue at 15 Mbit/s: $r Mbit/s received, one stream"
check "a 15 Mbit/s shaper on every TX queue: one stream gets 12 to 15.8" within "$r" 12 15.8
for ((q = 0; q < QUEUES; q++)); do shaper_nl delete queue $q >/dev/null; done

leaves=()
for ((q = 0; q < QUEUES; q++)); do leaves+=("{\"handle\": {\"scope\": \"queue\", \"id\": $q}}"); done
node=$(shaper_nl group new 20000000 "${leaves[@]}" | python3 -c 'import json, sys; print(json.load(sys.stdin)["handle"]["id"])')
r=$(rate 4)
echo "# group node $node over $QUEUES queues at 20 Mbit/s: $r Mbit/s received, 4 streams"
check "a group node of 20 Mbit/s over every queue: 4 streams get 16.5 to 21" within "$r" 16.5 21

# Weights under the node: the queues CPU 0 sends on (default XPS) weigh
# 1, CPU 1's weigh 3; one UDP sender on each CPU at once.
cpu_queues() { # CPU: the TX queues XPS gives it
	local q mask
	for ((q = 0; q < QUEUES; q++)); do
		mask=$(cat /sys/class/net/$NETIF_A/queues/tx-$q/xps_cpus)
		(( 0x$mask & (1 << $1) )) && echo $q
	done
}
weighted=()
for q in $(cpu_queues 0); do weighted+=("{\"handle\": {\"scope\": \"queue\", \"id\": $q}, \"weight\": 1}"); done
for q in $(cpu_queues 1); do weighted+=("{\"handle\": {\"scope\": \"queue\", \"id\": $q}, \"weight\": 3}"); done
shaper_nl group "$node" 20000000 "${weighted[@]}" >/dev/null
# UDP, sent from the process on its CPU (TCP's ACK-clocked sends run in
# softirq wherever the ACK arrived, so a stream's queue is not its CPU's).
# The remote counts each port's bytes over 3 s, from 1 s after its first
# datagram.
ip netns exec $NS python3 - >/tmp/shaper.udp <<'PY' &
import select, socket, time
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for s, port in zip(socks, (5212, 5213)):
    s.bind(("0.0.0.0", port))
    s.setblocking(False)
got, first, deadline = [0, 0], None, time.time() + 10
while time.time() < deadline:
    ready, _, _ = select.select(socks, [], [], 0.2)
    for s in ready:
        try:
            while True:
                n, now = len(s.recv(2048)), time.time()
                first = first or now
                if 1 <= now - first < 4:
                    got[socks.index(s)] += n
        except BlockingIOError:
            pass
print(*(round(g * 8 / 3e6, 1) for g in got))
PY
sleep 1
blast() { # CPU PORT: 1400-byte datagrams to the remote for 6 s
	taskset -c "$1" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((sys.argv[1], int(sys.argv[2])))
end, buf = time.time() + 6, bytes(1400)
while time.time() < end:
    s.send(buf)' "$IP_B" "$2"
}
blast 0 5212 & blast 1 5213
wait
read -r w1 w3 </tmp/shaper.udp
echo "# weights 1 (queues $(cpu_queues 0 | paste -sd,)) and 3 (queues $(cpu_queues 1 | paste -sd,)) under 20 Mbit/s: $w1 and $w3 Mbit/s of UDP received"
# Weights ignored give about 1; a weight-1 queue starved, next to nothing.
check "weights 1 and 3 under the 20 Mbit/s node: UDP from each CPU's queue, the weight-3 one gets 2 to 4.5 times as much, 16.5 to 21 together" \
	python3 -c "import sys; a, b = $w1, $w3; sys.exit(not (2 <= b / max(a, 0.01) <= 4.5 and 16.5 <= a + b <= 21))"

# A function reset (an admin command left unanswered): the driver gives
# the card its shapers again.
DL=pci/$(card_addr A)
recovers=$(health_field $DL card recover)
harness card A admin-fault timeout 1 >/dev/null
ip link set "$NETIF_A" mtu 1400
wait_health $DL card recover $((recovers + 1))
ip link set "$NETIF_A" mtu 1500
wait_carrier "$NETIF_A" 1
r=$(rate 4)
echo "# after a function reset ($recovers -> $(health_field $DL card recover) recoveries): $r Mbit/s received"
check "after a function reset the group node still holds 4 streams to 16.5 to 21" within "$r" 16.5 21

before=$(shaper_nl dump)
bad=$(shaper_nl set netdev 0 '{"metric": "bps", "bw-max": 200000000000}')
bad+=" / $(shaper_nl set node "$node" '{"weight": 2}')"
bad+=" / $(shaper_nl set queue 0 '{"metric": "pps", "bw-max": 1000}')"
bad+=" / $(shaper_nl group $((node + 1)) 1000 "${leaves[0]}")"
echo "# refusals: $bad"
check_eq "refused: bw-max above 100 Gbit/s, a node's weight, pps, a group into a missing node; nothing changed" \
	"$(echo "$bad" | grep -o 'error [0-9]*' | paste -sd' ') / $(shaper_nl dump)" \
	"error 22 error 95 error 95 error 2 / $before"

shaper_nl clear >/dev/null
check_eq "every shaper deleted: none left" "$(shaper_nl dump)" "[]"
r=$(rate 4)
echo "# unshaped again: $r Mbit/s (before: $fast)"
check "unshaped again: above 3 times the group's 20 Mbit/s" within "$r" 60 100000
ktap_finish
