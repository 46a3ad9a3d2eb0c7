#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The test command: the emulator's cargo tests, then every selftest (or
# only the ones named) inside the VM. Ends with "N passed, N failed, N
# skipped" and exits non-zero on any failure.
#   qemu/check.sh [TEST...]

source "$(dirname "$0")/common.sh"
cd "$RSNIC_REPO"

passed=0 failed=0 skipped=0
start=$SECONDS

qemu/setup-rootfs.sh
qemu/build-kernel.sh "${KERNEL:-normal}"
qemu/build-ksft.sh "${KERNEL:-normal}"

if [[ $# -eq 0 ]]; then
	log "emulator unit tests (cargo test)"
	if out=$(RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo test --locked 2>&1); then :; fi
	echo "$out" | grep -E '^test |^test result' >&2
	while read -r p f; do
		passed=$((passed + p)) failed=$((failed + f))
	done < <(echo "$out" | sed -n 's/^test result: .*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p')
	if ! echo "$out" | grep -q '^test result:'; then
		echo "$out" | tail -n 30 >&2
		log "cargo test did not run"
		failed=$((failed + 1))
	fi
fi

if [[ $# -eq 0 ]]; then
	log "lints: rustfmt, clippy (module and emulator), no warnings"
	if make -s lint >"$RSNIC_CACHE/lint.log" 2>&1; then
		echo "ok lint" >&2
		passed=$((passed + 1))
	else
		tail -n 40 "$RSNIC_CACHE/lint.log" >&2
		echo "not ok lint" >&2
		failed=$((failed + 1))
	fi
fi

log "building the emulator and the module"
RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo build --release --locked 2>&1 | tail -n 3 >&2
make -s modules >&2 ||
	die "module build failed"

results=$RSNIC_CACHE/check-results.$$
log "booting the VM and running the selftests"
qemu/in-rootfs.sh python3 qemu/vm.py run --timeout "${RSNIC_CHECK_TIMEOUT:-2400}" \
	--results "$RSNIC_IN_CACHE/$(basename "$results")" \
	--cmd "bash /rsnic/qemu/guest-check.sh $*"
vm_status=$?
if [[ -f $results ]]; then
	while read -r result name; do
		case $result in
		pass) passed=$((passed + 1)) ;;
		skip) skipped=$((skipped + 1)) ;;
		*) failed=$((failed + 1)) ;;
		esac
	done <"$results"
	rm -f "$results"
else
	log "the VM produced no results (exit $vm_status)"
	failed=$((failed + 1))
fi
if [[ $vm_status -ne 0 ]]; then
	log "the VM run exited with status $vm_status"
	[[ $failed -gt 0 ]] || failed=1
fi

log "check took $((SECONDS - start)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
