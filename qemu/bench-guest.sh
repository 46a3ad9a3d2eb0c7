#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark, inside the VM: the same measurements over the rsnic pair
# (card A <-> card B) and over the virtio-net pairs (qemu/vm.py: "tap", in
# its best configuration here, and "dgram", the old reference), each with
# one side in a netns, then card A's VF path and its failover gap.
# The main figures are repeated (RSNIC_BENCH_REPEATS, default 5) with the
# devices interleaved, each run bracketed by host CPU readings (QEMU's
# vCPU and other threads, the cards' processes, from the harness) and the
# guest's own CPU time. Writes /run/rsnic/bench.json.

source /rsnic/selftests/drivers/net/rsnic/lib.sh
source /rsnic/qemu/bench-gft-guest.sh
source /rsnic/qemu/bench-xdp-guest.sh
source /rsnic/qemu/bench-pcie-guest.sh
source /rsnic/qemu/bench-zc-guest.sh
out=/run/rsnic/bench.json
DURATION=${RSNIC_BENCH_SECONDS:-5}
REPEATS=${RSNIC_BENCH_REPEATS:-5}
# Queue pairs on every multiqueue device (rsnic and the tap pair).
QUEUES=${RSNIC_BENCH_QUEUES:-4}

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

# Round-trip latency of 1-byte UDP requests: prints "p50 p99 p99.9
# timeouts", microseconds and the number of requests without an answer
# within 1 s (left out of the percentiles).
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
rtts, timeouts = [], 0
for i in range(3000):
    t = time.perf_counter_ns()
    s.sendto(b"x", (sys.argv[1], 7100))
    try:
        s.recvfrom(64)
    except socket.timeout:
        timeouts += 1
        continue
    rtts.append((time.perf_counter_ns() - t) / 1000)
s.sendto(b"q", (sys.argv[1], 7100))
rtts.sort()
pct = lambda p: round(rtts[min(int(len(rtts) * p), len(rtts) - 1)]) if rtts else -1
print(pct(0.5), pct(0.99), pct(0.999), timeouts)
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
	read -r p50 p99 _ _ < <(latency "$ns" "$ip")
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

# Card A's TX doorbells and TX frames, all queue pairs, from the harness.
card_doorbells() {
	harness card A stats | tr ' ' '\n' |
		awk -F= '/^q[0-9]+_tx_doorbells=/ {d += $2} /^q[0-9]+_tx_packets=/ {p += $2} END {print d + 0, p + 0}'
}

# mac_of NS IF: the MAC address of IF in netns NS.
mac_of() { ip netns exec "$1" cat "/sys/class/net/$2/address"; }

# pktgen_pps DEV NS PEER_IF PEER_IP: frames/s of 60-byte frames from
# DEV's TX queue 0 in bursts of 32 (xmit_more set on all but the last),
# the way a packet generator or a busy qdisc drives a NIC.
pktgen_pps() {
	local mac
	mac=$(mac_of "$2" "$3")
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

# cpu_now: CPU seconds so far, "vcpu qemu_other emu guest": the host's
# from the harness, the guest's busy time on all its CPUs from /proc/stat
# (user, nice, system, irq, softirq; USER_HZ 100).
cpu_now() {
	local host
	host=$(harness cpu) || { echo "bench: harness cpu: $host" >&2; return 1; }
	awk -v h="$host" '/^cpu / {
		n = split(h, w, " "); for (i = 2; i <= n; i++) { split(w[i], kv, "="); printf "%s ", kv[2] }
		print ($2 + $3 + $4 + $7 + $8) / 100 }' /proc/stat
}

# run_once NAME NS SERVER_IP: one run of TCP 1 and 4 streams, UDP 64 B
# and request/response, each with its CPU readings; appends a JSON line
# to /tmp/b-runs.jsonl.
run_once() {
	local name=$1 ns=$2 ip=$3 t c0 c1
	: >/tmp/b-cpu
	for t in tcp1 tcp4 udp64 udp1500 rr; do
		c0=$(cpu_now) || return 1
		case $t in
		tcp1) iperf_json "$ns" "$ip" -t "$DURATION" >/tmp/b-tcp1.json ;;
		tcp4) iperf_json "$ns" "$ip" -t "$DURATION" -P 4 >/tmp/b-tcp4.json ;;
		udp64) iperf_json "$ns" "$ip" -t "$DURATION" -u -l 64 -b 0 >/tmp/b-udp64.json ;;
		udp1500) iperf_json "$ns" "$ip" -t "$DURATION" -u -l 1472 -b 0 >/tmp/b-udp1500.json ;;
		rr) latency "$ns" "$ip" >/tmp/b-rr.txt ;;
		esac
		c1=$(cpu_now) || return 1
		echo "$t $c0 $c1" >>/tmp/b-cpu
	done
	python3 - "$name" >>/tmp/b-runs.jsonl <<'PY'
import json, sys
run = {"device": sys.argv[1]}
for line in open("/tmp/b-cpu"):
    t, *v = line.split()
    v = list(map(float, v))
    d = [b - a for a, b in zip(v[:4], v[4:])]
    run[f"{t}_cpu"] = {"vcpu": d[0], "qemu_other": d[1], "emu": d[2], "guest": d[3]}
for t, streams in (("tcp1", 1), ("tcp4", 4)):
    e = json.load(open(f"/tmp/b-{t}.json"))["end"]["sum_received"]
    run[f"tcp_{streams}_mbps"] = round(e["bits_per_second"] / 1e6, 1)
    run[f"{t}_bytes"] = e["bytes"]
for t in ("udp64", "udp1500"):
    u = json.load(open(f"/tmp/b-{t}.json"))["end"]["sum"]
    run[f"{t}_packets"] = u["packets"] - u["lost_packets"]
    run[f"{t}_pps"] = round(run[f"{t}_packets"] / u["seconds"])
p50, p99, p999, timeouts = map(int, open("/tmp/b-rr.txt").read().split())
run.update(rr_p50_us=p50, rr_p99_us=p99, rr_p999_us=p999, rr_timeouts=timeouts)
print(json.dumps(run))
PY
}

# offload_state DEV [NS]: the offloads, channels and rings a device ran
# with.
offload_state() {
	local e=${2:+ip netns exec $2}
	python3 - "$($e ethtool -k "$1")" "$($e ethtool -l "$1" 2>&1)" "$($e ethtool -g "$1" 2>&1)" <<'PY'
import json, re, sys
keys = ("scatter-gather", "tx-checksumming", "rx-checksumming", "tcp-segmentation-offload", "rx-gro-hw",
        "generic-segmentation-offload", "generic-receive-offload")
k = dict(re.findall(r"^([a-z-]+): (on|off)", sys.argv[1], re.M))
current = sys.argv[2].split("Current hardware settings:")[-1]
m = re.search(r"Combined:\s+(\d+)", current)
rings = sys.argv[3].split("Current hardware settings:")[-1]
ring = lambda name: int(r.group(1)) if (r := re.search(rf"^{name}:\s+(\d+)", rings, re.M)) else None
print(json.dumps({"offloads": {x: k.get(x) for x in keys}, "combined": int(m.group(1)) if m else 1,
                  "rx_ring": ring("RX"), "tx_ring": ring("TX")}))
PY
}

# rsnic_offloads on|off: checksum offload and TSO of both rsnic ends.
rsnic_offloads() {
	ethtool -K "$a" tx "$1" rx "$1" tso "$1" >/dev/null 2>&1
	ip netns exec bench-rsnic ethtool -K "$b" tx "$1" rx "$1" tso "$1" >/dev/null 2>&1
}

# rsnic_stream on|off: the rx-stream private flag of both rsnic ends.
rsnic_stream() {
	ethtool --set-priv-flags "$a" rx-stream "$1" &&
		ip netns exec bench-rsnic ethtool --set-priv-flags "$b" rx-stream "$1" &&
		wait_until 50 ping -c1 -W1 -q 10.99.0.2 >/dev/null
}

# rsnic_gro_hw on|off: the card's receive coalescing (rx-gro-hw) on
# both rsnic ends.
rsnic_gro_hw() {
	ethtool -K "$a" rx-gro-hw "$1" >/dev/null &&
		ip netns exec bench-rsnic ethtool -K "$b" rx-gro-hw "$1" >/dev/null
}

# rsnic_hds on|auto: header/data split on both rsnic ends (ethtool -G
# tcp-data-split, every frame with payload above its headers split); the
# queues restart, so it waits for the carrier as rsnic_stream does.
rsnic_hds() {
	ethtool -G "$a" tcp-data-split "$1" hds-thresh 0 >/dev/null &&
		ip netns exec bench-rsnic ethtool -G "$b" tcp-data-split "$1" hds-thresh 0 >/dev/null &&
		wait_until 50 ping -c1 -W1 -q 10.99.0.2 >/dev/null
}

# rsnic_coalesce USECS FRAMES: interrupt moderation of both rsnic ends
# (ethtool -C rx-usecs, rx-frames; 0 0 is the default, at once).
rsnic_coalesce() {
	ethtool -C "$a" rx-usecs "$1" rx-frames "$2" >/dev/null &&
		ip netns exec bench-rsnic ethtool -C "$b" rx-usecs "$1" rx-frames "$2" >/dev/null
}

# repeated: REPEATS rounds, each running every device once, in turn.
repeated() {
	local r dev
	: >/tmp/b-runs.jsonl
	for d in bench-rsnic bench-virtio bench-vdgram; do
		ip netns exec "$d" iperf3 -s -D -p 5201
		wait_until 50 listening tcp 5201 "$d"
	done
	for r in $(seq "$REPEATS"); do
		for dev in ${RSNIC_BENCH_DEVICES:-rsnic rsnic-stream rsnic-nooffload virtio-tap virtio-dgram}; do
			case $dev in
			rsnic) run_once rsnic bench-rsnic 10.99.0.2 ;;
			rsnic-stream)
				rsnic_stream on || return 1
				[ "$r" = 1 ] && offload_state "$a" >/tmp/b-state-rsnic-stream
				run_once "$dev" bench-rsnic 10.99.0.2
				rsnic_stream off
				;;
			rsnic-nooffload)
				rsnic_offloads off
				[ "$r" = 1 ] && offload_state "$a" >/tmp/b-state-rsnic-nooffload
				run_once "$dev" bench-rsnic 10.99.0.2
				rsnic_offloads on
				;;
			rsnic-nogro)
				rsnic_gro_hw off || return 1
				[ "$r" = 1 ] && offload_state "$a" >/tmp/b-state-rsnic-nogro
				run_once "$dev" bench-rsnic 10.99.0.2
				rsnic_gro_hw on
				;;
			rsnic-hds)
				rsnic_hds on || return 1
				[ "$r" = 1 ] && offload_state "$a" >/tmp/b-state-rsnic-hds
				run_once "$dev" bench-rsnic 10.99.0.2
				rsnic_hds auto
				;;
			rsnic-coalesce)
				rsnic_coalesce "${RSNIC_BENCH_COALESCE_USECS:-20}" "${RSNIC_BENCH_COALESCE_FRAMES:-32}" || return 1
				[ "$r" = 1 ] && offload_state "$a" >/tmp/b-state-rsnic-coalesce
				run_once "$dev" bench-rsnic 10.99.0.2
				rsnic_coalesce 0 0
				;;
			virtio-tap) run_once "$dev" bench-virtio 10.98.0.2 ;;
			virtio-tap-nogro)
				# The receiver's guest offloads off (VIRTIO_NET_F_GUEST_TSO4/6,
				# which virtio_net maps to rx-gro-hw): the tap hands it
				# MSS-sized frames, as rsnic's wire carries them.
				ip netns exec bench-virtio ethtool -K "${vifs[1]}" rx-gro-hw off || return 1
				[ "$r" = 1 ] && offload_state "${vifs[1]}" bench-virtio >/tmp/b-state-virtio-tap-nogro
				run_once "$dev" bench-virtio 10.98.0.2
				ip netns exec bench-virtio ethtool -K "${vifs[1]}" rx-gro-hw on
				;;
			virtio-dgram) run_once "$dev" bench-vdgram 10.97.0.2 ;;
			esac || return 1
		done
	done
	pkill -f "iperf3 -s -D -p 5201"
	offload_state "$a" >/tmp/b-state-rsnic
	# (A device left out by RSNIC_BENCH_DEVICES has no runs: skipped below.)
	offload_state "${vifs[0]}" >/tmp/b-state-virtio-tap
	offload_state "${dgram[0]}" >/tmp/b-state-virtio-dgram
	python3 - <<'PY'
import json, statistics
runs = {}
for line in open("/tmp/b-runs.jsonl"):
    r = json.loads(line)
    runs.setdefault(r["device"], []).append(r)
def spread(xs):
    xs = sorted(xs)
    return {"median": round(statistics.median(xs), 3), "min": round(xs[0], 3), "max": round(xs[-1], 3),
            "runs": [round(x, 3) for x in xs]}
def figures(r):
    """One run's figures: rates, latencies, and CPU per amount carried."""
    f = {k: r[k] for k in ("tcp_1_mbps", "tcp_4_mbps", "udp64_pps", "udp1500_pps", "rr_p50_us", "rr_p99_us",
                           "rr_p999_us", "rr_timeouts")}
    for t, amount, unit in (("tcp1", "tcp1_bytes", 1e9), ("tcp4", "tcp4_bytes", 1e9), ("udp64", "udp64_packets", 1e6),
                            ("udp1500", "udp1500_packets", 1e6)):
        per = "gb" if unit == 1e9 else "mpkt"
        carried = max(r[amount] / unit, 1e-9)
        c = r[f"{t}_cpu"]
        f[f"{t}_host_cpu_s_per_{per}"] = sum(c[x] for x in ("vcpu", "qemu_other", "emu")) / carried
        f[f"{t}_emu_cpu_s_per_{per}"] = c["emu"] / carried
        f[f"{t}_guest_cpu_s_per_{per}"] = c["guest"] / carried
    return f
out = {}
per_run = {dev: [figures(r) for r in rs] for dev, rs in runs.items()}
for dev, fs in per_run.items():
    d = {k: spread([f[k] for f in fs]) for k in fs[0]}
    # Each figure against virtio-net's in the same round (the devices
    # run in turn, so a round's runs share the machine's speed of the
    # moment): the ratio's spread is the run-to-run noise left. Not for
    # the cards' own CPU, which virtio-net does not have.
    ref = per_run.get("virtio-tap")
    if ref and dev != "virtio-tap" and len(ref) == len(fs):
        d["paired_ratio_to_virtio_tap"] = {
            k: spread([f[k] / g[k] for f, g in zip(fs, ref) if g[k]])
            for k in fs[0] if "_emu_" not in k and any(g[k] for g in ref)}
    d["state"] = json.load(open(f"/tmp/b-state-{dev}"))
    out[dev] = d
print(json.dumps(out))
PY
}

# sweep_run DEVICE NS IP POINT IPERF_ARGS...: one TCP run, appended to
# /tmp/b-sweep.jsonl with its host CPU seconds per GB.
sweep_run() {
	local dev=$1 ns=$2 ip=$3 point=$4 c0 c1
	shift 4
	c0=$(cpu_now) || return 1
	iperf_json "$ns" "$ip" -t "$DURATION" "$@" >/tmp/b-sweep.json
	c1=$(cpu_now) || return 1
	python3 - "$dev" "$point" "$c0" "$c1" >>/tmp/b-sweep.jsonl <<'PY'
import json, sys
dev, point = sys.argv[1:3]
c = [b - a for a, b in zip(map(float, sys.argv[3].split()), map(float, sys.argv[4].split()))]
e = json.load(open("/tmp/b-sweep.json"))["end"]["sum_received"]
print(json.dumps({"device": dev, "point": point, "mbps": round(e["bits_per_second"] / 1e6, 1),
                  "host_cpu_s_per_gb": round(sum(c[:3]) / max(e["bytes"] / 1e9, 1e-9), 2)}))
PY
}

# channels N: N combined channels on both ends of the rsnic and tap pairs.
channels() {
	ethtool -L "$a" combined "$1" && ip netns exec bench-rsnic ethtool -L "$b" combined "$1" &&
		ethtool -L "${vifs[0]}" combined "$1" && ip netns exec bench-virtio ethtool -L "${vifs[1]}" combined "$1" &&
		wait_until 50 ping -c1 -W1 -q 10.99.0.2 >/dev/null && wait_until 50 ping -c1 -W1 -q 10.98.0.2 >/dev/null
}

# sweeps: rsnic vs the tap pair, REPEATS runs of each point, devices
# interleaved: TCP (1 stream) by write size, 64 B to 64 KiB; TCP (4
# streams) by queue pairs, 1, 2 and 4. Prints {"tcp_msg": {device:
# {size: spread}}, "tcp4_queues": {...}}.
sweeps() {
	local r size q dev
	: >/tmp/b-sweep.jsonl
	ip netns exec bench-rsnic iperf3 -s -D -p 5201
	ip netns exec bench-virtio iperf3 -s -D -p 5201
	wait_until 50 listening tcp 5201 bench-rsnic
	wait_until 50 listening tcp 5201 bench-virtio
	for r in $(seq "$REPEATS"); do
		for size in 64 1024 16384 65536; do
			sweep_run rsnic bench-rsnic 10.99.0.2 "msg $size" -l $size || return 1
			sweep_run virtio-tap bench-virtio 10.98.0.2 "msg $size" -l $size || return 1
		done
	done
	for q in 1 2 4; do
		channels $q || { echo "bench: cannot set $q channels" >&2; return 1; }
		for r in $(seq "$REPEATS"); do
			sweep_run rsnic bench-rsnic 10.99.0.2 "queues $q" -P 4 || return 1
			sweep_run virtio-tap bench-virtio 10.98.0.2 "queues $q" -P 4 || return 1
		done
	done
	channels "$QUEUES" || return 1
	pkill -f "iperf3 -s -D -p 5201"
	python3 - <<'PY'
import json, statistics
out = {"tcp_msg": {}, "tcp4_queues": {}}
for line in open("/tmp/b-sweep.jsonl"):
    r = json.loads(line)
    kind, value = r["point"].split()
    group = out["tcp_msg" if kind == "msg" else "tcp4_queues"].setdefault(r["device"], {})
    group.setdefault(value, []).append(r)
for group in out.values():
    for dev, points in group.items():
        for value, runs in points.items():
            mb = sorted(x["mbps"] for x in runs)
            cpu = sorted(x["host_cpu_s_per_gb"] for x in runs)
            points[value] = {"mbps": {"median": statistics.median(mb), "min": mb[0], "max": mb[-1], "runs": mb},
                             "host_cpu_s_per_gb": {"median": statistics.median(cpu), "min": cpu[0], "max": cpu[-1]}}
print(json.dumps(out))
PY
}

a=$(netif_of "$(card_addr A)")
b=$(netif_of "$(card_addr B)")
vifs=($(virtio_pair_ifs tap))
dgram=($(virtio_pair_ifs dgram))
[ -n "$a" ] && [ -n "$b" ] && [ ${#vifs[@]} -eq 2 ] && [ ${#dgram[@]} -eq 2 ] ||
	{ echo "bench: need 2 rsnic and 4 virtio-net interfaces (a tap pair and a dgram pair)"; exit 1; }
for d in "$a" "$b" "${vifs[@]}"; do
	ethtool -L "$d" combined "$QUEUES" || { echo "bench: $d: cannot use $QUEUES queues"; exit 1; }
done
setup rsnic "$a" "$b" 10.99.0 || { echo "bench: rsnic pair does not ping"; exit 1; }
setup virtio "${vifs[0]}" "${vifs[1]}" 10.98.0 || { echo "bench: virtio tap pair does not ping"; exit 1; }
setup vdgram "${dgram[0]}" "${dgram[1]}" 10.97.0 || { echo "bench: virtio dgram pair does not ping"; exit 1; }

if [ "${RSNIC_BENCH_ONLY:-}" = new-flows ]; then
	# `qemu/bench.sh new-flows`: pktgen's new flows alone, REPEATS runs,
	# with the driver's time counters per installed flow.
	gft_new_flows_repeated >"$out" || { echo "bench: the new-flows runs failed"; exit 1; }
	cat "$out"
	exit 0
fi
if [ "${RSNIC_BENCH_ONLY:-}" = zerocopy ]; then
	# `qemu/bench.sh zerocopy`: the zero-copy receive runs alone.
	zc_bench >"$out"
	cat "$out"
	exit 0
fi
runs=$(repeated) || { echo "bench: the repeated runs failed"; exit 1; }
if [ "${RSNIC_BENCH_ONLY:-}" = repeated ]; then
	# `qemu/bench.sh repeated`: the main figures only, for a quick
	# before-and-after of one change.
	python3 - "$runs" "$(cat /run/rsnic/vhost 2>/dev/null)" "$REPEATS" "$DURATION" >"$out" <<'PY'
import json, sys
print(json.dumps({"repeated": json.loads(sys.argv[1]), "vhost": sys.argv[2] or "unknown",
                  "repeats": int(sys.argv[3]), "seconds_per_run": int(sys.argv[4])}))
PY
	cat "$out"
	exit 0
fi
sweep=$(sweeps) || { echo "bench: the sweeps failed"; exit 1; }
pcie=$(pcie_bench) || { echo "bench: the PCIe metadata runs failed"; exit 1; }
# Card A's DMA counters around it (card_pcie in bench-pcie-guest.sh).
read -r m0 p0 _ _ n0 < <(card_pcie A)
rsnic=$(measure_rsnic rsnic)
read -r m1 p1 _ _ n1 < <(card_pcie A)
gft=$(gft_bench)
virtio=$(measure virtio-net bench-virtio 10.98.0.2)
virtio=$(with_pktgen "$virtio" "$(pktgen_pps "${vifs[0]}" bench-virtio "${vifs[1]}" 10.98.0.2)")
xdp=$(xdp_bench)
zc=$(zc_bench)
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
if rmmod rsnic && insmod "${RSNIC_KO:-/rsnic/rsnic.ko}" tx_batching=0; then
	for _ in $(seq 50); do
		a=$(netif_of "$(card_addr A)") b=$(netif_of "$(card_addr B)")
		[ -n "$a" ] && [ -n "$b" ] && break
		sleep 0.2
	done
	if setup rsnic "$a" "$b" 10.99.0; then
		unbatched=$(measure_rsnic "rsnic, tx_batching=0")
	fi
fi

python3 - "$rsnic" "$virtio" $((m1 - m0)) $((p1 - p0)) $((n1 - n0)) "$bond" "$gft" "$unbatched" "$xdp" "$runs" \
	"$(cat /run/rsnic/vhost 2>/dev/null)" "$REPEATS" "$DURATION" "$sweep" "$pcie" "$zc" >"$out" <<'PY'
import json, sys
rsnic, virtio = json.loads(sys.argv[1]), json.loads(sys.argv[2])
meta, payload, packets = map(int, sys.argv[3:6])
rsnic["meta_bytes_per_packet"] = round(meta / max(packets, 1), 1)
rsnic["payload_bytes_per_packet"] = round(payload / max(packets, 1), 1)
print(json.dumps({"rsnic": rsnic, "virtio": virtio, "bond": json.loads(sys.argv[6]),
                  "gft": json.loads(sys.argv[7]), "unbatched": json.loads(sys.argv[8]),
                  "xdp": json.loads(sys.argv[9]), "repeated": json.loads(sys.argv[10]),
                  "vhost": sys.argv[11] or "unknown", "repeats": int(sys.argv[12]),
                  "seconds_per_run": int(sys.argv[13]), "sweeps": json.loads(sys.argv[14]),
                  "pcie": json.loads(sys.argv[15]), "zerocopy": json.loads(sys.argv[16])}))
PY
cat "$out"
