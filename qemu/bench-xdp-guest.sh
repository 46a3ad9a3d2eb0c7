# SPDX-License-Identifier: GPL-2.0
#
# The XDP part of the benchmark, sourced by bench-guest.sh with both pairs
# set up (card B's netdev in netns bench-rsnic, the virtio-net pair's far
# end in bench-virtio). pktgen on the near end sends 60-byte UDP frames to
# port 9 in bursts of 32; the far end handles them with the stack (no
# program, no socket: dropped by UDP), with XDP_DROP, or with XDP_TX (sent
# back), by xdp_actions.bpf.c in native mode on both devices. Each mode
# runs RSNIC_BENCH_XDP_RUNS times (3), interleaved between the devices.
# The rate is what the far end handled per second of the generator's run
# (its rx_packets; for XDP_TX its tx_packets), next to the generator's own
# rate. xdp_bench prints one JSON object:
#   {"rsnic": {"stack": {"pps": [..], "gen_pps": [..]}, "drop": .., "tx": ..},
#    "virtio": {...}}   (a mode a device refused: {"error": "..."})

XDP_OBJ=/tmp/xdp_actions.o
XDP_RUNS=${RSNIC_BENCH_XDP_RUNS:-3}

xdp_link_packets() { # NS IF rx|tx
	ip -n "$1" -s -j link show "$2" |
		python3 -c "import json,sys; print(json.load(sys.stdin)[0]['stats64']['$3']['packets'])"
}

# Puts the far end IF (in NS) into MODE (stack, drop or tx); prints why not.
xdp_mode() { # NS IF MODE
	ip -n "$1" link set dev "$2" xdpdrv off 2>/dev/null
	[ "$3" = stack ] && return 0
	ip -n "$1" link set dev "$2" xdpdrv obj "$XDP_OBJ" sec xdp 2>&1 | grep -m1 . && return 1
	XDP_NS=$1 XDP_DEV=$2 map_set cfg 1 9 &&
		XDP_NS=$1 XDP_DEV=$2 map_set cfg 0 "$(case $3 in drop) echo 1 ;; tx) echo 3 ;; esac)"
}

# One run: prints "handled_pps generator_pps".
xdp_run() { # GEN_IF NS FAR_IF FAR_IP MODE
	local dir=rx c0 c1 t0 t1 gen mac
	[ "$5" = tx ] && dir=tx
	mac=$(mac_of "$2" "$3")
	c0=$(xdp_link_packets "$2" "$3" $dir)
	t0=$(date +%s%N)
	gen=$(pktgen "$1" "$4" "$mac" $((DURATION * 20000)) 32)
	t1=$(date +%s%N)
	c1=$(xdp_link_packets "$2" "$3" $dir)
	echo "$(((c1 - c0) * 1000000000 / (t1 - t0))) ${gen:-0}"
}

xdp_bench() {
	local run mode dev err
	build_xdp_actions "$XDP_OBJ" || { echo '{"error": "cannot build xdp_actions.bpf.c"}'; return; }
	: >/tmp/b-xdp.txt
	for run in $(seq "$XDP_RUNS"); do
		for mode in stack drop tx; do
			for dev in rsnic virtio; do
				if [ $dev = rsnic ]; then
					set -- "$a" bench-rsnic "$b" 10.99.0.2
				else
					set -- "${vifs[0]}" bench-virtio "${vifs[1]}" 10.98.0.2
				fi
				if err=$(xdp_mode "$2" "$3" $mode); then
					echo "$dev $mode $(xdp_run "$@" $mode)" >>/tmp/b-xdp.txt
				else
					echo "$dev $mode error ${err:-refused}" >>/tmp/b-xdp.txt
				fi
				ip -n "$2" link set dev "$3" xdpdrv off 2>/dev/null
			done
		done
	done
	python3 - <<'PY'
import json
out = {}
for line in open("/tmp/b-xdp.txt"):
    dev, mode, first, *rest = line.rstrip("\n").split(" ", 3)
    entry = out.setdefault(dev, {}).setdefault(mode, {"pps": [], "gen_pps": []})
    if first == "error":
        entry["error"] = rest[0] if rest else "refused"
    else:
        entry["pps"].append(int(first))
        entry["gen_pps"].append(int(rest[0]) if rest else 0)
print(json.dumps(out))
PY
}
