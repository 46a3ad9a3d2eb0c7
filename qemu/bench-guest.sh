#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark, inside the VM: the same measurements over the rsnic pair
# (card A <-> card B) and over a virtio-net pair cabled through QEMU, each
# with one side in a netns, then card A's VF path and its failover gap.
# Writes /run/rsnic/bench.json.

source /rsnic/selftests/drivers/net/rsnic/lib.sh
source /rsnic/qemu/bench-gft-guest.sh
source /rsnic/qemu/bench-xdp-guest.sh
out=/run/rsnic/bench.json
DURATION=${RSNIC_BENCH_SECONDS:-5}

# setup NAME IF_LOCAL IF_REMOTE SUBNET: IF_REMOTE into netns bench-NAME.
setup() {
	ip netns add "bench-$1"
	ip link set "$3" netns "bench-$1"
	ip -n "bench-$1" link set lo up
	ip addr add "$4.1/24" dev "$2"
	ip link set "$2" up
	ip -n "bench-$1" addr add "$4.2/24" dev "$3"
	ip -n "bench-$1" link set "$3" up
	for _ in $(seq 50); do ping -c1 -W1 -q "$4.2" >/dev/null 2>&1 && return 0; sleep 0.2; done
	return 1
}

iperf_json() { # NS SERVER_IP ARGS...
	local ns=$1 ip=$2
	shift 2
	iperf3 -c "$ip" -J "$@" 2>/dev/null
}

# Round-trip latency of 1-byte UDP requests: prints "p50 p99" in microseconds.
latency() { # NS SERVER_IP
	ip netns exec "$1" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 7100))
while True:
    d, a = s.recvfrom(64)
    if d == b"q": break
    s.sendto(d, a)
' &
	sleep 0.5
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)
rtts = []
for i in range(2000):
    t = time.perf_counter_ns()
    s.sendto(b"x", (sys.argv[1], 7100))
    try:
        s.recvfrom(64)
    except socket.timeout:
        continue
    rtts.append((time.perf_counter_ns() - t) / 1000)
s.sendto(b"q", (sys.argv[1], 7100))
rtts.sort()
print(round(rtts[len(rtts) // 2]), round(rtts[int(len(rtts) * 0.99)]))
' "$2"
	wait
}

# measure NAME NS SERVER_IP: prints one JSON object.
measure() {
	local name=$1 ns=$2 ip=$3
	ip netns exec "$ns" iperf3 -s -D -p 5201
	sleep 0.5
	iperf_json "$ns" "$ip" -t "$DURATION" >/tmp/b-tcp1.json
	iperf_json "$ns" "$ip" -t "$DURATION" -P 4 >/tmp/b-tcp4.json
	iperf_json "$ns" "$ip" -t "$DURATION" -u -l 64 -b 0 >/tmp/b-udp.json
	read -r p50 p99 < <(latency "$ns" "$ip")
	python3 - "$name" "$p50" "$p99" <<'PY'
import json, sys
def tcp(path):
    e = json.load(open(path))["end"]
    return round(e["sum_received"]["bits_per_second"] / 1e6, 1)
u = json.load(open("/tmp/b-udp.json"))["end"]["sum"]
pps = (u["packets"] - u["lost_packets"]) / u["seconds"]
print(json.dumps({"name": sys.argv[1], "tcp_1_mbps": tcp("/tmp/b-tcp1.json"), "tcp_4_mbps": tcp("/tmp/b-tcp4.json"),
                  "udp64_pps": round(pps), "rr_p50_us": int(sys.argv[2]), "rr_p99_us": int(sys.argv[3])}))
PY
	pkill -f "iperf3 -s -D -p 5201"
}

# Card A's DMA counters ("meta payload packets") from the harness.
card_dma() {
	harness card A stats | tr ' ' '\n' | awk -F= '/^dma_meta_bytes=/ {m=$2} /^dma_payload_bytes=/ {p=$2} /^packets=/ {n=$2} END {print m, p, n}'
}

# Card A's TX doorbells and TX frames, all queue pairs, from the harness.
card_doorbells() {
	harness card A stats | tr ' ' '\n' |
		awk -F= '/^q[0-9]+_tx_doorbells=/ {d += $2} /^q[0-9]+_tx_packets=/ {p += $2} END {print d + 0, p + 0}'
}

# pktgen_pps DEV NS PEER_IF PEER_IP: frames/s of 60-byte frames from
# DEV's TX queue 0 in bursts of 32 (xmit_more set on all but the last),
# the way a packet generator or a busy qdisc drives a NIC.
pktgen_pps() {
	local mac
	mac=$(ip -n "$2" -j link show "$3" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')
	pktgen "$1" "$4" "$mac" $((DURATION * 20000)) 32
}

# with_pktgen JSON PPS: JSON with "pktgen_pps" added.
with_pktgen() {
	python3 -c 'import json, sys; m = json.loads(sys.argv[1]); m["pktgen_pps"] = int(sys.argv[2] or 0); print(json.dumps(m))' "$1" "$2"
}

# measure_rsnic NAME: measure over the rsnic pair (card A's $a to card
# B's $b), plus doorbells/frame under iperf3 and under pktgen.
measure_rsnic() {
	local d0 p0 d1 p1 d2 p2 m pps
	read -r d0 p0 < <(card_doorbells)
	m=$(measure "$1" bench-rsnic 10.99.0.2)
	read -r d1 p1 < <(card_doorbells)
	pps=$(pktgen_pps "$a" bench-rsnic "$b" 10.99.0.2)
	read -r d2 p2 < <(card_doorbells)
	python3 -c 'import json, sys; m = json.loads(sys.argv[1]); d, p, pd, pp = map(int, sys.argv[2:6])
m["tx_doorbells_per_packet"] = round(d / max(p, 1), 3)
m["pktgen_pps"] = int(sys.argv[6] or 0)
m["pktgen_doorbells_per_packet"] = round(pd / max(pp, 1), 3); print(json.dumps(m))' \
		"$m" $((d1 - d0)) $((p1 - p0)) $((d2 - d1)) $((p2 - p1)) "$pps"
}

a=$(netif_of "$(card_addr A)")
b=$(netif_of "$(card_addr B)")
vifs=($(virtio_ifs))
[ -n "$a" ] && [ -n "$b" ] && [ ${#vifs[@]} -eq 2 ] || { echo "bench: need 2 rsnic and 2 virtio-net interfaces"; exit 1; }
setup rsnic "$a" "$b" 10.99.0 || { echo "bench: rsnic pair does not ping"; exit 1; }
setup virtio "${vifs[0]}" "${vifs[1]}" 10.98.0 || { echo "bench: virtio pair does not ping"; exit 1; }

read -r m0 p0 n0 < <(card_dma)
rsnic=$(measure_rsnic rsnic)
read -r m1 p1 n1 < <(card_dma)
gft=$(gft_bench)
virtio=$(measure virtio-net bench-virtio 10.98.0.2)
virtio=$(with_pktgen "$virtio" "$(pktgen_pps "${vifs[0]}" bench-virtio "${vifs[1]}" 10.98.0.2)")
xdp=$(xdp_bench)
# VF bonding: TCP through card A's VF (same netdev, data path VF), then
# the failover gap: ping at 100/s while the VF is unplugged and replugged
# 10 times; the longest gap between replies around each switch.
bond='{}'
if vf_plug A && wait_datapath A vf; then
	ip netns exec bench-rsnic iperf3 -s -D -p 5201
	sleep 0.5
	iperf_json bench-rsnic 10.99.0.2 -t "$DURATION" >/tmp/b-vf.json
	pkill -f "iperf3 -s -D -p 5201"
	ping -D -i 0.01 -W 1 10.99.0.2 >/tmp/b-failover.ping 2>&1 &
	pinger=$!
	switches=()
	for _ in $(seq 10); do
		sleep 1
		switches+=("$(date +%s.%N)")
		vf_unplug A
		sleep 1
		switches+=("$(date +%s.%N)")
		vf_plug A
		wait_datapath A vf
	done
	sleep 1
	kill -INT $pinger
	wait $pinger 2>/dev/null
	bond=$(python3 - "${switches[@]}" <<'PY'
import json, re, statistics, sys
e = json.load(open("/tmp/b-vf.json"))["end"]
vf = round(e["sum_received"]["bits_per_second"] / 1e6, 1)
line = re.compile(r"^\[(\d+\.\d+)\].*bytes from")
stamps = [float(m.group(1)) for m in map(line.match, open("/tmp/b-failover.ping")) if m]
gaps = []
for at in map(float, sys.argv[1:]):
    window = [t for t in stamps if at - 0.2 <= t <= at + 2.0]
    gaps.append(max((b - a for a, b in zip(window, window[1:])), default=2.2) * 1000)
print(json.dumps({"vf_tcp_1_mbps": vf, "switches": len(gaps),
                  "gap_p50_ms": round(statistics.median(gaps)), "gap_max_ms": round(max(gaps))}))
PY
)
fi

# The same over the rsnic pair with the driver reloaded with
# tx_batching=0: no byte queue limits, a doorbell per frame.
unbatched='{}'
vf_unplug A >/dev/null 2>&1
ip netns del bench-rsnic
if rmmod rsnic && insmod /rsnic/rsnic.ko tx_batching=0; then
	for _ in $(seq 50); do
		a=$(netif_of "$(card_addr A)") b=$(netif_of "$(card_addr B)")
		[ -n "$a" ] && [ -n "$b" ] && break
		sleep 0.2
	done
	if setup rsnic "$a" "$b" 10.99.0; then
		unbatched=$(measure_rsnic "rsnic, tx_batching=0")
	fi
fi

python3 - "$rsnic" "$virtio" $((m1 - m0)) $((p1 - p0)) $((n1 - n0)) "$bond" "$gft" "$unbatched" "$xdp" >"$out" <<'PY'
import json, sys
rsnic, virtio = json.loads(sys.argv[1]), json.loads(sys.argv[2])
meta, payload, packets = map(int, sys.argv[3:6])
rsnic["meta_bytes_per_packet"] = round(meta / max(packets, 1), 1)
rsnic["payload_bytes_per_packet"] = round(payload / max(packets, 1), 1)
print(json.dumps({"rsnic": rsnic, "virtio": virtio, "bond": json.loads(sys.argv[6]),
                  "gft": json.loads(sys.argv[7]), "unbatched": json.loads(sys.argv[8]),
                  "xdp": json.loads(sys.argv[9])}))
PY
cat "$out"
