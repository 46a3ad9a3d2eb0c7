#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: boots one VM with the two cabled rsnic cards and two cabled
# virtio-net NICs, measures both pairs in the same run and prints them
# side by side, then the GFT with and without its flow cache, then the
# card's GFT engine alone (cargo bench). Then a second VM for the RDMA
# part: fio over nvme-rdma on the cards' engines vs over rdma_rxe on the
# virtio-net pair, and RDMA WRITE throughput with one doorbell per WQE vs
# one per batch of 32 (qemu/bench-rdma-guest.sh).
# Results: bench-out/bench.json, bench-out/bench.png,
# bench-out/gft-card.txt. `qemu/bench.sh rdma` runs the RDMA part alone.
# Not part of make check: numbers depend on the machine and its load.

source "$(dirname "$0")/common.sh"
cd "$RSNIC_REPO"
part=${1:-all}
[[ $part == all || $part == rdma ]] || die "usage: $0 [all|rdma]"
make -s modules emu >&2
result=$RSNIC_CACHE/bench-result.json
rm -f "$result" "$RSNIC_CACHE/bench-rdma.json"

# vm_bench GUEST_SCRIPT RESULT_NAME: one VM with the virtio-net pair.
vm_bench() {
	local out=$RSNIC_CACHE/bench-$$.json
	qemu/in-rootfs.sh python3 qemu/vm.py run --virtio-pair --timeout 1200 \
		--export "$2=$RSNIC_IN_CACHE/$(basename "$out")" \
		--cmd "bash /rsnic/qemu/$1" || die "the benchmark run ($1) failed"
	[[ -f $out ]] || die "the benchmark ($1) produced no result"
	mv "$out" "$RSNIC_CACHE/$2"
}

if [[ $part == all ]]; then
	vm_bench bench-guest.sh bench.json
	mv "$RSNIC_CACHE/bench.json" "$result"
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
