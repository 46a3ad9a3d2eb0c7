#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: boots one VM with the two cabled rsnic cards and two pairs
# of cabled virtio-net NICs (qemu/vm.py --virtio-pair), measures all pairs
# in the same run, repeated and interleaved, with the host's and the
# guest's CPU time, and prints them side by side, then the GFT with and without its flow cache, then the
# card's GFT engine alone (cargo bench). Then a second VM for the RDMA
# part: fio over nvme-rdma on the cards' engines vs over rdma_rxe on the
# virtio-net pair, and RDMA WRITE throughput with one doorbell per WQE vs
# one per batch of 32, and perftest on the engines vs on rdma_rxe over
# the same netdevs (qemu/bench-rdma-guest.sh).
# Results: bench-out/bench.json, bench-out/bench.png,
# bench-out/gft-card.txt. `qemu/bench.sh rdma` runs the RDMA part alone,
# `qemu/bench.sh net` the first VM alone, `qemu/bench.sh repeated` only
# its repeated main figures (bench-out/bench-repeated.json), for a quick
# before-and-after of one change, `qemu/bench.sh new-flows` only pktgen's
# new flows through the GFT, RSNIC_BENCH_REPEATS runs with the driver's
# time counters (bench-out/bench-new-flows.json), `qemu/bench.sh
# zerocopy` only the zero-copy receive runs, recv() against io_uring zcrx
# (bench-out/bench-zerocopy.json).
# Not part of make check: numbers depend on the machine and its load.

source "$(dirname "$0")/common.sh"
cd "$RSNIC_REPO"
part=${1:-all}
[[ $part == all || $part == rdma || $part == net || $part == repeated || $part == new-flows || $part == zerocopy ]] ||
	die "usage: $0 [all|net|rdma|repeated|new-flows|zerocopy]"
make -s modules emu >&2
result=$RSNIC_CACHE/bench-result.json
rm -f "$result" "$RSNIC_CACHE/bench-rdma.json"

# What the guest scripts read: seconds per run, runs per figure, queue
# pairs per multiqueue device.
settings="RSNIC_BENCH_SECONDS=${RSNIC_BENCH_SECONDS:-5} RSNIC_BENCH_REPEATS=${RSNIC_BENCH_REPEATS:-5}"
settings+=" RSNIC_BENCH_QUEUES=${RSNIC_BENCH_QUEUES:-4}"
[[ $settings =~ ^[A-Z_=0-9\ ]+$ ]] || die "RSNIC_BENCH_SECONDS/REPEATS/QUEUES: numbers only"
[[ $part == repeated || $part == new-flows || $part == zerocopy ]] && settings+=" RSNIC_BENCH_ONLY=$part"
# Which devices the repeated runs cover (default all five), as the guest
# names them: rsnic rsnic-stream rsnic-nooffload virtio-tap virtio-dgram;
# also rsnic-coalesce (rsnic with ethtool -C rx-usecs 20 rx-frames 32 on
# both ends; RSNIC_BENCH_COALESCE_USECS/FRAMES change them) and
# rsnic-nogro (rsnic with the card's receive coalescing off, rx-gro-hw)
# and virtio-tap-nogro (virtio-net whose receiver has its guest TSO
# offloads off: rx-gro-hw there), and rsnic-hds (rsnic with header/data
# split on both ends, ethtool -G tcp-data-split on hds-thresh 0).
if [[ -n ${RSNIC_BENCH_DEVICES:-} ]]; then
	[[ $RSNIC_BENCH_DEVICES =~ ^[a-z\ -]+$ ]] || die "RSNIC_BENCH_DEVICES: device names only"
	settings+=" RSNIC_BENCH_DEVICES='$RSNIC_BENCH_DEVICES'"
fi
for v in RSNIC_BENCH_COALESCE_USECS RSNIC_BENCH_COALESCE_FRAMES; do
	[[ -z ${!v:-} ]] && continue
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v: a number"
	settings+=" $v=${!v}"
done

# vm_bench GUEST_SCRIPT RESULT_NAME: one VM with the virtio-net pairs.
vm_bench() {
	local out=$RSNIC_CACHE/bench-$$.json
	qemu/in-rootfs.sh python3 qemu/vm.py run --virtio-pair --timeout 3000 \
		--export "$2=$RSNIC_IN_CACHE/$(basename "$out")" \
		--cmd "$settings bash /rsnic/qemu/$1" || die "the benchmark run ($1) failed"
	[[ -f $out ]] || die "the benchmark ($1) produced no result"
	mv "$out" "$RSNIC_CACHE/$2"
}

if [[ $part != rdma ]]; then
	vm_bench bench-guest.sh bench.json
	mv "$RSNIC_CACHE/bench.json" "$result"
fi
if [[ $part == new-flows || $part == zerocopy ]]; then
	mkdir -p bench-out
	mv "$result" "bench-out/bench-$part.json"
	cat "bench-out/bench-$part.json"
	exit 0
fi
if [[ $part == net || $part == repeated ]]; then
	qemu/in-rootfs.sh python3 qemu/bench-report.py "$RSNIC_IN_CACHE/bench-result.json" "$RSNIC_IN_REPO/bench-out"
	exit 0
fi
# The WRITE benchmark is a small ib_core client module, built here.
qemu/in-rootfs.sh make -s -C "$RSNIC_IN_CACHE/kernel/normal" M="$RSNIC_IN_REPO/qemu/rdma-bench" modules >&2 ||
	die "building qemu/rdma-bench failed"
vm_bench bench-rdma-guest.sh bench-rdma.json
[[ -f $result ]] || echo '{}' >"$result"
qemu/in-rootfs.sh python3 qemu/bench-report.py "$RSNIC_IN_CACHE/bench-result.json" "$RSNIC_IN_REPO/bench-out" \
	"$RSNIC_IN_CACHE/bench-rdma.json"
[[ $part == all ]] || exit 0
# The card's GFT fast path and install command, timed in the emulator on
# one core (benches/gft.rs).
echo
RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo bench --locked --bench gft 2>/dev/null |
	grep -v '^$' | tee "$RSNIC_REPO/bench-out/gft-card.txt"
