#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The RDMA benchmark, inside the VM: fio over nvme-rdma on the rsnic
# engines (card A host, card B target), the same over rdma_rxe on the
# virtio-net tap pair, and over rdma_rxe on the rsnic netdevs themselves
# (the engines' RDMA devices unbound: software RoCE on the same wire),
# in the same VM and run. The target exports a null_blk
# device (no backing memory to copy), so the transport is what is timed.
# Then RDMA WRITE throughput with one doorbell per WQE and one per batch
# of 32 (qemu/rdma-bench/rdma_write_bench.ko), on both pairs. Then
# perftest from user space (ib_write_bw, ib_write_lat, ib_send_lat) on
# the engines, and on rdma_rxe over the same netdevs with the engines'
# RDMA devices unbound, so both cross the same wire; with the host CPU
# every run cost.
# Writes /run/rsnic/bench-rdma.json.
#
# nvme-rdma and nvmet-rdma open their endpoints in init_net, so both
# pairs stay there and routing sends each pair's traffic over its cable:
# card B sits in a VRF (rdma_vrf_setup in lib.sh). rxe cannot take a
# VRF's packets (it looks its device up by skb->dev, which the VRF
# replaces), so the virtio pair uses policy routing instead: locally
# sent packets between the two addresses leave by the sender's NIC, and
# the receiver accepts a source address that is its own host's.

source /rsnic/selftests/drivers/net/rsnic/lib.sh
out=/run/rsnic/bench-rdma.json
DURATION=${RSNIC_BENCH_SECONDS:-5}
REPEATS=${RSNIC_BENCH_REPEATS:-5}
VIP_A=10.98.0.1
VIP_B=10.98.0.2

# Also inside $(...): the message goes to stderr, the caller checks the status.
fail() { echo "bench-rdma: $*" >&2; exit 1; }

rdma_vrf_setup || fail "the rsnic pair has no carrier"
# rdma_rxe runs over the best-configured virtio-net pair (multiqueue taps
# with vnet headers, see qemu/vm.py).
vifs=($(virtio_pair_ifs tap))
[ ${#vifs[@]} -eq 2 ] || fail "need the tap pair of virtio-net interfaces (make bench boots them)"
ip addr add $VIP_A/24 dev "${vifs[0]}"
ip addr add $VIP_B/24 dev "${vifs[1]}"
ip link set "${vifs[0]}" up
ip link set "${vifs[1]}" up
# (rdma_vrf_setup has moved the local table's rule after these.)
ip route add $VIP_B/32 dev "${vifs[0]}" table 30
ip route add $VIP_A/32 dev "${vifs[1]}" table 31
ip rule add pref 100 iif lo from $VIP_A to $VIP_B table 30
ip rule add pref 101 iif lo from $VIP_B to $VIP_A table 31
for d in all "${vifs[0]}" "${vifs[1]}"; do
	sysctl -qw net.ipv4.conf.$d.accept_local=1 net.ipv4.conf.$d.rp_filter=0
done
modprobe rdma_rxe || fail "no rdma_rxe module"
rdma link add rxe_a type rxe netdev "${vifs[0]}"
rdma link add rxe_b type rxe netdev "${vifs[1]}"
for ip in $IP_B $VIP_B; do
	for _ in $(seq 50); do ping -c1 -W1 -q $ip >/dev/null 2>&1 && break; sleep 0.2; done
done

modprobe null_blk nr_devices=1 gb=4 bs=4096 queue_mode=2 irqmode=0 || fail "no null_blk module"
nvmet_setup /dev/nullb0 || fail "nvmet set-up failed"
nvmet_port 2 $VIP_B || fail "nvmet port for the rxe target failed"

# fio_run NAME DISK RW BS IODEPTH: one job's JSON in /tmp/fio-NAME.json.
fio_run() {
	fio --name="$1" --filename="/dev/$2" --rw="$3" --bs="$4" --iodepth="$5" \
		--ioengine=libaio --direct=1 --time_based --runtime="$DURATION" --ramp_time=1 \
		--output-format=json --output="/tmp/fio-$1.json" >/dev/null 2>&1
}

# measure NAME TRADDR HOST_TRADDR IBDEV: prints one JSON object.
measure() {
	local disk
	nvme_connect "$2" "$3" || fail "$1: nvme connect to $2 failed"
	disk=$(wait_nvme_disk) || fail "$1: no namespace"
	# Which device carried it: the host's QPs are on IBDEV.
	rdma res show qp link "$4" | grep -q "type RC" || fail "$1: no RC QP on $4"
	for r in $(seq "$REPEATS"); do
		fio_run "$1-iops-$r" "$disk" randread 4k 32
		fio_run "$1-bw-$r" "$disk" read 128k 8
		fio_run "$1-lat-$r" "$disk" randread 4k 1
	done
	nvme_disconnect
	python3 - "$1" "$REPEATS" <<'PY'
import json, statistics, sys
name, repeats = sys.argv[1], int(sys.argv[2])
def job(kind, r):
    return json.load(open(f"/tmp/fio-{name}-{kind}-{r}.json"))["jobs"][0]["read"]
runs = {"iops_4k_qd32": [], "mib_s_128k_qd8": [], "lat_4k_qd1_p50_us": [], "lat_4k_qd1_p99_us": []}
for r in range(1, repeats + 1):
    iops, bw, lat = job("iops", r), job("bw", r), job("lat", r)
    runs["iops_4k_qd32"].append(round(iops["iops"]))
    runs["mib_s_128k_qd8"].append(round(bw["bw_bytes"] / 2**20, 1))
    runs["lat_4k_qd1_p50_us"].append(round(lat["clat_ns"]["percentile"]["50.000000"] / 1000))
    runs["lat_4k_qd1_p99_us"].append(round(lat["clat_ns"]["percentile"]["99.000000"] / 1000))
# The median of each figure, and every run.
out = {"name": name, "repeats": repeats, "runs": runs}
out.update({k: statistics.median(v) for k, v in runs.items()})
print(json.dumps(out))
PY
}

rsnic=$(measure rsnic $IP_B $IP_A "$(ibdev_of "$(card_addr A)")") || exit 1
rxe=$(measure rxe $VIP_B $VIP_A rxe_a) || exit 1
nvmet_port_del 2
nvmet_cleanup

# write_bench NAME SRC DST: WQEs/s and MiB/s of RDMA WRITEs of 64 B and
# 4 KiB, batches of 1 and 32, the median of REPEATS runs, with every
# run's WQEs/s in "runs", as one JSON object (the netdevs name the RDMA
# devices).
BENCH_KO=/rsnic/qemu/rdma-bench/rdma_write_bench.ko
write_bench() {
	local size batch
	: >/tmp/rdma-write.log
	for size in 64 4096; do
		for batch in 1 32; do
			for _ in $(seq "$REPEATS"); do
				insmod $BENCH_KO src="$2" dst="$3" size=$size batch=$batch count=8192 ||
					fail "$1: rdma_write_bench size=$size batch=$batch failed"
				rmmod rdma_write_bench
				dmesg | grep "rdma_write_bench: .* batch=$batch size=$size " | tail -n1 >>/tmp/rdma-write.log
			done
		done
	done
	python3 -c '
import json, re, statistics, sys
runs = {}
for line in open("/tmp/rdma-write.log"):
    f = dict(re.findall(r"(\w+)=(\d+)", line))
    key = "%sb_batch%s" % (f["size"], f["batch"])
    runs.setdefault(key, []).append((int(f["wqe_per_s"]), int(f["mib_per_s"])))
out = {"name": sys.argv[1], "runs": {k: sorted(w for w, _ in v) for k, v in runs.items()}}
for k, v in runs.items():
    out[f"wqe_per_s_{k}"] = statistics.median(w for w, _ in v)
    out[f"mib_per_s_{k}"] = statistics.median(m for _, m in v)
print(json.dumps(out))' "$1"
}
[ -f $BENCH_KO ] || fail "no $BENCH_KO (make bench builds it)"
wr_rsnic=$(write_bench rsnic "$NETIF_A" "$NETIF_B") || exit 1

# perftest_bench NAME SERVER_IBDEV CLIENT_IBDEV: perftest from user space
# between two RDMA devices of this host, the server's on card B's
# address (out-of-band exchange over loopback, RoCE over the cable):
# ib_write_bw at 64 B, 4 KiB and 64 KiB for DURATION s, ib_write_lat and
# ib_send_lat at 64 B without and with inline data, REPEATS rounds of all
# seven, interleaved; each run
# with the host's CPU seconds (vCPUs, QEMU's other threads, the cards'
# emulators: harness cpu) over its wall time. One JSON object: the
# median of each figure and every run.
perftest_bench() {
	local name=$1 sgid cgid r size tool
	sgid=$(roce_gid_index "$2" $IP_B) && cgid=$(roce_gid_index "$3" $IP_A) ||
		fail "$name: no RoCE v2 GIDs for $IP_B on $2 and $IP_A on $3"
	: >/tmp/perftest.log
	for r in $(seq "$REPEATS"); do
		for size in 64 4096 65536; do
			perftest_run "$name" ib_write_bw $size "-D $DURATION" "$2" $sgid "$3" $cgid || return 1
		done
		# Explicitly without inline data (-I 0), then with the payload in
		# the WQE (-I 64): perftest's default depends on the device.
		for tool in ib_write_lat ib_send_lat; do
			perftest_run "$name" $tool 64 "-n 10000 -I 0" "$2" $sgid "$3" $cgid || return 1
			perftest_run "$name" $tool 64 "-n 10000 -I 64" "$2" $sgid "$3" $cgid _inline || return 1
		done
	done
	python3 - "$name" "$REPEATS" <<'PY'
import json, statistics, sys
name, repeats = sys.argv[1], int(sys.argv[2])
runs = {}
for line in open("/tmp/perftest.log"):
    r = json.loads(line)
    res, tool, size = r["results"], r["tool"], r["size"]
    cores = round(r["cpu_s"] / r["wall_s"], 2)
    if tool == "ib_write_bw":
        key = f"write_bw_{size}b"
        runs.setdefault(f"{key}_mib_s", []).append(res["BW_average"])
        runs.setdefault(f"{key}_mmsg_s", []).append(res["MsgRate"])
    else:
        key = f"{tool[3:]}_{size}b{r['tag']}"
        runs.setdefault(f"{key}_p50_us", []).append(res["t_typical"])
        runs.setdefault(f"{key}_p99_us", []).append(res["percentile_99"])
    runs.setdefault(f"{key}_host_cores", []).append(cores)
out = {"name": name, "repeats": repeats, "runs": runs}
out.update({k: statistics.median(v) for k, v in runs.items()})
print(json.dumps(out))
PY
}
# perftest_run NAME TOOL SIZE ARGS SERVER_IBDEV SERVER_GID CLIENT_IBDEV
# CLIENT_GID [TAG]: one run, appended to /tmp/perftest.log as a JSON line
# (TAG goes after the size in the figures' names).
perftest_run() {
	local c0 c1 t0 t1 spid
	timeout 120 $2 -d "$5" -x "$6" -s "$3" $4 -F >/tmp/perftest-server.out 2>&1 &
	spid=$!
	sleep 1
	c0=$(harness cpu) || fail "harness cpu: $c0"
	t0=$(date +%s.%N)
	timeout 120 $2 -d "$7" -x "$8" -s "$3" $4 -F --out_json --out_json_file=/tmp/perftest.json \
		127.0.0.1 >/tmp/perftest-client.out 2>&1 || {
		local status=$?
		sleep 1
		tail -n 3 /tmp/perftest-client.out /tmp/perftest-server.out >&2
		fail "$1: $2 -s $3 failed (exit status $status)"
	}
	t1=$(date +%s.%N)
	c1=$(harness cpu) || fail "harness cpu: $c1"
	wait $spid || fail "$1: the $2 server failed"
	python3 -c '
import json, sys
def secs(reply):
    return sum(float(kv.split("=")[1]) for kv in reply.split()[1:])
r = json.load(open("/tmp/perftest.json"))
print(json.dumps({"tool": sys.argv[1], "size": int(sys.argv[2]), "results": r["results"],
                  "tag": sys.argv[7],
                  "cpu_s": secs(sys.argv[4]) - secs(sys.argv[3]),
                  "wall_s": float(sys.argv[6]) - float(sys.argv[5])}))' \
		"$2" "$3" "$c0" "$c1" "$t0" "$t1" "${9:-}" >>/tmp/perftest.log
}
IB_A=$(ibdev_of "$(card_addr A)") IB_B=$(ibdev_of "$(card_addr B)")
pt_rsnic=$(perftest_bench rsnic "$IB_B" "$IB_A") || exit 1
wr_rxe=$(write_bench rxe "${vifs[0]}" "${vifs[1]}") || exit 1

# rdma_rxe on the rsnic netdevs: the virtio pair's rxe and routing go,
# card B leaves its VRF (rxe cannot take a VRF's packets), both cards'
# RDMA halves are unbound and rxe runs on both netdevs, routed over the
# cable as in the interop test (rxe_interop_setup in lib.sh).
rdma link del rxe_a
rdma link del rxe_b
ip rule del pref 100
ip rule del pref 101
ip route flush table 30
ip route flush table 31
rdma_vrf_cleanup
rxe_interop_setup
echo "$(rdma_aux_of "$(card_addr A)")" >$RDMA_AUX_DRV/unbind || fail "cannot unbind card A's RDMA half"
rdma link add rxe_a type rxe netdev "$NETIF_A" || fail "cannot add rxe on $NETIF_A"
ping -c1 -W2 -q $IP_B >/dev/null || fail "the rsnic pair does not ping under policy routing"
nvmet_setup /dev/nullb0 || fail "nvmet set-up for rxe on rsnic failed"
rxe_rsnic=$(measure rxe-on-rsnic $IP_B $IP_A rxe_a) || exit 1
nvmet_cleanup
wr_rxe_rsnic=$(write_bench rxe-on-rsnic "$NETIF_A" "$NETIF_B") || exit 1
pt_rxe_rsnic=$(perftest_bench rxe-on-rsnic rxe_b rxe_a) || exit 1

python3 -c '
import json, sys
r = [json.loads(a) for a in sys.argv[1:]]
print(json.dumps({"rsnic": r[0], "rxe": r[1], "write_rsnic": r[2], "write_rxe": r[3],
                  "rxe_on_rsnic": r[4], "write_rxe_on_rsnic": r[5],
                  "perftest_rsnic": r[6], "perftest_rxe_on_rsnic": r[7]}))' \
	"$rsnic" "$rxe" "$wr_rsnic" "$wr_rxe" "$rxe_rsnic" "$wr_rxe_rsnic" "$pt_rsnic" "$pt_rxe_rsnic" > "$out"
cat "$out"
