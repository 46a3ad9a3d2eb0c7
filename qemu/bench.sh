#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: boots one VM with the two cabled rsnic cards and two cabled
# virtio-net NICs, measures both pairs in the same run and prints them
# side by side, then the GFT with and without its flow cache, then the
# card's GFT engine alone (cargo bench). Results: bench-out/bench.json,
# bench-out/bench.png, bench-out/gft-card.txt.
# Not part of make check: numbers depend on the machine and its load.

source "$(dirname "$0")/common.sh"
cd "$RSNIC_REPO"
make -s modules emu >&2
result=$RSNIC_CACHE/bench-result.$$.json
qemu/in-rootfs.sh python3 qemu/vm.py run --virtio-pair --timeout 1200 \
	--export "bench.json=$RSNIC_IN_CACHE/$(basename "$result")" \
	--cmd "bash /rsnic/qemu/bench-guest.sh" || die "the benchmark run failed"
[[ -f $result ]] || die "the benchmark produced no result"
mv "$result" "$RSNIC_CACHE/bench-result.json"
qemu/in-rootfs.sh python3 qemu/bench-report.py "$RSNIC_IN_CACHE/bench-result.json" "$RSNIC_IN_REPO/bench-out"
# The card's GFT fast path and install command, timed in the emulator on
# one core (benches/gft.rs).
echo
RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo bench --locked --bench gft 2>/dev/null |
	grep -v '^$' | tee "$RSNIC_REPO/bench-out/gft-card.txt"
