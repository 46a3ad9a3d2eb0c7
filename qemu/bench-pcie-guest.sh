# SPDX-License-Identifier: GPL-2.0
#
# Ensō's metric, sourced by bench-guest.sh with the pairs set up: the
# bytes the devices move over PCIe for metadata (descriptors,
# completions, doorbells, interrupts) per packet and as a share of all
# bytes moved, for 64-byte UDP and for TCP with 1500-byte packets.
#
# rsnic: the cards count it themselves (harness stats of both cards:
# dma_meta_bytes = descriptors and completions read or written, 4 bytes
# per doorbell written to the card, 4 per MSI-X message it sent).
# virtio-net: computed from the split virtqueue layout of the virtio 1.x
# spec and the driver's own counters (the netdev's packets and bytes,
# ethtool -S kicks of each queue, the vectors' interrupts in
# /proc/interrupts):
# per packet one descriptor (16 bytes) read, one available-ring entry (2)
# read, one used-ring element (8) written and the virtio-net header
# (12) read or written; per kick the 2-byte notification and the 2-byte
# available index read; per interrupt the 4-byte MSI-X message and the
# 2-byte used index written. That is a lower bound: chains of more than
# one descriptor (fragments, indirect tables) and merged receive buffers
# add descriptors the driver does not count.
#
# Packets per run: the application's (UDP datagrams sent, whether or not
# the receiving socket kept up; TCP bytes received / 1448, the segments
# of a 1500-byte MTU), counted at both ends, so both devices are divided
# by the same number.

# card_pcie CARD: "meta payload doorbells irqs packets" of a card's PF,
# all pairs (packets: frames through its queues, a TSO frame's segments
# counted one by one).
card_pcie() {
	harness card "$1" stats | tr ' ' '\n' | awk -F= '
		$1 == "dma_meta_bytes" {m = $2} $1 == "dma_payload_bytes" {p = $2}
		$1 == "doorbells" {d = $2} $1 == "irqs" {i = $2} $1 == "packets" {n = $2}
		END {print m + 0, p + 0, d + 0, i + 0, n + 0}'
}

# virtio_counts IF [NS]: "packets bytes kicks irqs" of a virtio-net
# interface, both directions: packets and bytes the netdev's (a GSO
# packet counts once), kicks of every queue from ethtool -S, interrupts
# of its queue vectors.
virtio_counts() {
	local e=${2:+ip netns exec $2} virtio
	virtio=$($e basename "$($e readlink -f "/sys/class/net/$1/device")")
	{
		$e ip -s -j link show "$1" | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["stats64"]
print("packets:", s["rx"]["packets"] + s["tx"]["packets"])
print("bytes:", s["rx"]["bytes"] + s["tx"]["bytes"])'
		$e ethtool -S "$1"
		awk -v v="$virtio" '$NF ~ "^" v "-(input|output)\\." {s = 0; for (i = 2; i < NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print "irqs: " s}' /proc/interrupts
	} | awk -F: '
		$1 == "packets" {p += $2} $1 == "bytes" {b += $2}
		$1 ~ /^ *[rt]x[0-9]+_kicks$/ {k += $2} $1 == "irqs" {i += $2}
		END {print p + 0, b + 0, k + 0, i + 0}'
}

# pcie_counts DEVICE: the counters of both ends of a pair, "meta payload
# doorbells irqs packets" (rsnic) or "packets bytes kicks irqs" (virtio-tap).
pcie_counts() {
	case $1 in
	rsnic | rsnic-stream)
		# One after the other: the harness port takes one user at a time.
		local ca cb
		ca=$(card_pcie A) && cb=$(card_pcie B) || return 1
		echo "$ca $cb" | awk '{print $1 + $6, $2 + $7, $3 + $8, $4 + $9, $5 + $10}'
		;;
	virtio-tap)
		paste -d' ' <(virtio_counts "${vifs[0]}") <(virtio_counts "${vifs[1]}" bench-virtio) |
			awk '{print $1 + $5, $2 + $6, $3 + $7, $4 + $8}'
		;;
	esac
}

# pcie_run DEVICE NS IP WORKLOAD: one run of udp64 or tcp1500 (one TCP
# stream) for DURATION; prints one JSON object.
pcie_run() {
	local dev=$1 ns=$2 ip=$3 w=$4 c0 c1
	c0=$(pcie_counts "$dev") || return 1
	case $w in
	udp64) iperf_json "$ns" "$ip" -t "$DURATION" -u -l 64 -b 0 >/tmp/b-pcie.json ;;
	tcp1500) iperf_json "$ns" "$ip" -t "$DURATION" >/tmp/b-pcie.json ;;
	esac
	c1=$(pcie_counts "$dev") || return 1
	python3 - "$dev" "$w" "$c0" "$c1" <<'PY'
import json, sys
dev, w = sys.argv[1:3]
d = [b - a for a, b in zip(map(int, sys.argv[3].split()), map(int, sys.argv[4].split()))]
e = json.load(open("/tmp/b-pcie.json"))["end"]
if w == "udp64":
    packets = 2 * e["sum"]["packets"]
else:
    packets = 2 * e["sum_received"]["bytes"] // 1448
if dev.startswith("rsnic"):
    meta, payload, doorbells, irqs, dev_packets = d
    parts = {"descriptors_completions": meta - 4 * (doorbells + irqs), "doorbells": 4 * doorbells,
             "interrupts": 4 * irqs}
else:
    vpackets, payload, kicks, irqs = d
    dev_packets = vpackets
    parts = {"descriptors_completions": vpackets * (16 + 2 + 8 + 12), "doorbells": kicks * (2 + 2),
             "interrupts": irqs * (4 + 2)}
    meta = sum(parts.values())
# device_packets: what crossed the device's queues (GSO/TSO frames count
# once on virtio-net, rsnic's cable carries MTU-sized frames).
print(json.dumps({"device": dev, "workload": w, "packets": packets, "device_packets": dev_packets,
                  "meta_bytes": meta,
                  "payload_bytes": payload, "parts": parts,
                  "meta_bytes_per_packet": round(meta / max(packets, 1), 1),
                  "meta_share": round(meta / max(meta + payload, 1), 4)}))
PY
}

# pcie_bench: REPEATS runs of each workload on both devices, interleaved;
# prints {"rsnic": {"udp64": [...], ...}, "virtio-tap": {...}}.
pcie_bench() {
	local r w
	ip netns exec bench-rsnic iperf3 -s -D -p 5201
	ip netns exec bench-virtio iperf3 -s -D -p 5201
	wait_until 50 listening tcp 5201 bench-rsnic
	wait_until 50 listening tcp 5201 bench-virtio
	for r in $(seq "$REPEATS"); do
		for w in udp64 tcp1500; do
			pcie_run rsnic bench-rsnic 10.99.0.2 $w || return 1
			rsnic_stream on || return 1
			pcie_run rsnic-stream bench-rsnic 10.99.0.2 $w || return 1
			rsnic_stream off || return 1
			pcie_run virtio-tap bench-virtio 10.98.0.2 $w || return 1
		done
	done >/tmp/b-pcie.jsonl
	pkill -f "iperf3 -s -D -p 5201"
	python3 - <<'PY'
import json, statistics
out = {}
for line in open("/tmp/b-pcie.jsonl"):
    r = json.loads(line)
    out.setdefault(r["device"], {}).setdefault(r["workload"], []).append(r)
for dev, ws in out.items():
    for w, runs in ws.items():
        med = lambda k: statistics.median(x[k] for x in runs)
        ws[w] = {"meta_bytes_per_packet": med("meta_bytes_per_packet"), "meta_share": med("meta_share"),
                 "meta_share_min": min(x["meta_share"] for x in runs),
                 "meta_share_max": max(x["meta_share"] for x in runs),
                 "device_packets_per_packet": round(statistics.median(
                     x["device_packets"] / max(x["packets"], 1) for x in runs), 3),
                 "runs": runs}
print(json.dumps(out))
PY
}
