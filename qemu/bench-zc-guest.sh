# SPDX-License-Identifier: GPL-2.0
#
# The zero-copy receive part of the benchmark, sourced by bench-guest.sh
# with the rsnic pair set up (card B's netdev in netns bench-rsnic). One
# TCP stream of RSNIC_BENCH_ZC_MB MiB (256) from card B to card A,
# received by qemu/zc-bench/zc_rx.c either with recv() into a buffer
# ("socket") or with io_uring zero-copy receive ("zcrx": the payload
# lands in the receiver's area, handed back unread). Both modes run on
# the same queue (card A's last, steered with ethtool -N, out of RSS) with
# header/data split on (hds-thresh 0), so the copy is the difference.
# REPEATS runs each, interleaved. Per run: Mbit/s, the receiver's own CPU
# seconds per GB (getrusage: recv()'s copy runs in its syscalls), the
# whole guest's (/proc/stat, both ends: sender and receiver share the VM)
# and the host's (vCPUs, QEMU, the cards). zc_bench prints one JSON
# object: {"socket": {figure: spread}, "zcrx": {...}} or {"error": ...}.

ZC_BIN=/tmp/zc_rx
ZC_MB=${RSNIC_BENCH_ZC_MB:-256}

# zc_queue_bytes QUEUE: bytes card A's QUEUE received so far.
zc_queue_bytes() { ethtool -S "$a" | awk -v k="rx$1_bytes:" '$1 == k {print $2}'; }
# zc_alloc_failed QUEUE: buffers card A's QUEUE could not get so far.
zc_alloc_failed() { ethtool -S "$a" | awk -v k="rx$1_alloc_failed:" '$1 == k {print $2}'; }

# zc_run MODE PORT QUEUE: one transfer; prints the run's JSON line.
zc_run() {
	local mode=$1 port=$2 queue=$3 srv c0 c1 q0 q1 f0 f1 rule
	rule=$(ethtool -N "$a" flow-type tcp6 dst-port "$port" action "$queue" | awk '/Added rule/ {print $NF}')
	[ -n "$rule" ] || { echo "zc_bench: cannot steer port $port to queue $queue" >&2; return 1; }
	if [ "$mode" = zcrx ]; then
		"$ZC_BIN" -s -p "$port" -i "$a" -q "$queue" >/tmp/b-zc.json &
	else
		"$ZC_BIN" -s -p "$port" >/tmp/b-zc.json &
	fi
	srv=$!
	wait_until 50 listening tcp "$port" "" || { kill $srv; return 1; }
	q0=$(zc_queue_bytes "$queue") f0=$(zc_alloc_failed "$queue") c0=$(cpu_now) || return 1
	ip netns exec bench-rsnic "$ZC_BIN" -c fd99::1 -p "$port" -n $((ZC_MB << 20)) || { kill $srv; return 1; }
	wait $srv || return 1
	c1=$(cpu_now) q1=$(zc_queue_bytes "$queue") f1=$(zc_alloc_failed "$queue") || return 1
	ethtool -N "$a" delete "$rule"
	python3 - "$c0" "$c1" $((q1 - q0)) $((f1 - f0)) <<'PY'
import json, sys
c = [b - a for a, b in zip(map(float, sys.argv[1].split()), map(float, sys.argv[2].split()))]
r = json.load(open("/tmp/b-zc.json"))
gb = r["bytes"] / 1e9
# The queue's bytes (headers included) over the payload: about 1.03 when
# the whole stream took the steered queue.
print(json.dumps({"mode": r["mode"], "mbps": round(r["bytes"] * 8 / r["seconds"] / 1e6, 1),
                  "rx_cpu_s_per_gb": r["rx_cpu_s"] / gb, "guest_cpu_s_per_gb": c[3] / gb,
                  "host_cpu_s_per_gb": sum(c[:3]) / gb, "queue_bytes_per_payload": int(sys.argv[3]) / r["bytes"],
                  "alloc_failed": int(sys.argv[4])}))
PY
}

zc_bench() {
	local r mode port=5600 queue
	gcc -O2 -o "$ZC_BIN" /rsnic/qemu/zc-bench/zc_rx.c -luring ||
		{ echo '{"error": "cannot build zc_rx.c"}'; return; }
	queue=$(($(ethtool -l "$a" | awk '/^Combined:/ {n = $2} END {print n}') - 1))
	ip addr add fd99::1/64 dev "$a" nodad
	ip -n bench-rsnic addr add fd99::2/64 dev "$b" nodad
	ethtool -G "$a" tcp-data-split on hds-thresh 0 >/dev/null &&
		ethtool -X "$a" equal "$queue" &&
		wait_until 50 ip netns exec bench-rsnic ping -6 -c1 -W1 -q fd99::1 >/dev/null ||
		{ echo '{"error": "cannot set up split, RSS or IPv6 on card A"}'; return; }
	: >/tmp/b-zc.jsonl
	for r in $(seq "$REPEATS"); do
		for mode in socket zcrx; do
			port=$((port + 1))
			zc_run "$mode" "$port" "$queue" >>/tmp/b-zc.jsonl ||
				{ echo "{\"error\": \"the $mode run failed\"}"; return; }
		done
	done
	ethtool -X "$a" default
	ethtool -G "$a" tcp-data-split auto >/dev/null
	ip addr del fd99::1/64 dev "$a"
	ip -n bench-rsnic addr del fd99::2/64 dev "$b"
	python3 - "$ZC_MB" <<'PY'
import json, statistics, sys
runs = {}
for line in open("/tmp/b-zc.jsonl"):
    r = json.loads(line)
    runs.setdefault(r.pop("mode"), []).append(r)
def spread(xs):
    xs = sorted(xs)
    return {"median": round(statistics.median(xs), 3), "min": round(xs[0], 3), "max": round(xs[-1], 3),
            "runs": [round(x, 3) for x in xs]}
out = {mode: {k: spread([r[k] for r in rs]) for k in rs[0]} for mode, rs in runs.items()}
out["mib_per_run"] = int(sys.argv[1])
print(json.dumps(out))
PY
}
