#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The test command: the emulator's cargo tests, then every selftest (or
# only the ones named) inside the VM. Ends with "N passed, N failed, N
# skipped", counting checks: each cargo test, the lints, and each KTAP
# subtest of each selftest (the line before counts the test files), and
# exits non-zero on any failure. A VM that hangs or crashes still gets
# the summary of what ran, plus a failure.
#   qemu/check.sh [TEST...]

source "$(dirname "$0")/common.sh"
cd "$RSNIC_REPO"

passed=0 failed=0 skipped=0
files_passed=0 files_failed=0 files_skipped=0
start=$SECONDS
# The whole check ends within RSNIC_CHECK_BUDGET seconds (CI allows 90
# min; the default leaves 5 of them). Each VM gets what is left of it, so
# a slow machine fails with the tests that did not run named, instead of
# CI killing the run without a summary. Hangs are bounded per test, by
# guest-check.sh's timeout.
budget=${RSNIC_CHECK_BUDGET:-5100}

# phase NAME: the time since the previous phase (or the start) was NAME's,
# for the summary of where the check's time went.
phase_start=$SECONDS
phases=()
phase() {
	phases+=("$1 $((SECONDS - phase_start))")
	phase_start=$SECONDS
}

qemu/setup-rootfs.sh
qemu/build-kernel.sh "${KERNEL:-normal}"
qemu/build-ksft.sh "${KERNEL:-normal}"
phase set-up

if [[ $# -eq 0 ]]; then
	log "emulator unit tests (cargo test)"
	cargo_status=0
	out=$(RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo test --locked 2>&1) || cargo_status=$?
	cargo_failed_before=$failed
	echo "$out" | grep -E '^test |^test result' >&2
	while read -r p f; do
		passed=$((passed + p)) failed=$((failed + f))
	done < <(echo "$out" | sed -n 's/^test result: .*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p')
	if ! echo "$out" | grep -q '^test result:'; then
		echo "$out" | tail -n 30 >&2
		log "cargo test did not run"
		failed=$((failed + 1))
	elif [[ $cargo_status -ne 0 && $failed -eq $cargo_failed_before ]]; then
		# No failed test, yet cargo failed (a doctest build, a panic in
		# a harness): that counts too.
		echo "$out" | tail -n 30 >&2
		log "cargo test exited with status $cargo_status"
		failed=$((failed + 1))
	fi
	phase "cargo test"
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
	phase lint
fi

log "building the emulator and the module"
RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo build --release --locked 2>&1 | tail -n 3 >&2
if ! make -s modules >&2; then
	log "module build failed"
	echo "$passed passed, $((failed + 1)) failed, $skipped skipped"
	exit 1
fi
phase build

subskips=() subfails=() kreports=() times=()

# vm_pass KERNEL PREFIX [TEST...]: boots the VM on kernel KERNEL (normal
# or debug) with the module built for it, runs the tests (default all)
# and adds up their results; PREFIX goes before each test's name.
vm_pass() {
	local kernel=$1 prefix=$2 results vm_status=0 t planned=()
	local -A ran=()
	shift 2
	results=$RSNIC_CACHE/check-results.$$
	local left=$((budget - (SECONDS - start)))
	[[ $left -ge 60 ]] || left=60
	log "$kernel VM: $left s left of the check's $budget s"
	KERNEL=$kernel qemu/in-rootfs.sh python3 qemu/vm.py run --timeout "${RSNIC_CHECK_TIMEOUT:-$left}" \
		--results "$RSNIC_IN_CACHE/$(basename "$results")" \
		--cmd "bash /rsnic/qemu/guest-check.sh $*" || vm_status=$?
	if [[ -f $results ]]; then
		while read -r result name p f s; do
			case $result/$name in
			subskip/*) subskips+=("$prefix$name $p $f $s") ; continue ;;
			subfail/*) subfails+=("$prefix$name $p $f $s") ; continue ;;
			kreport/*) kreports+=("$prefix$name $p $f $s") ; continue ;;
			planned/*) planned+=("$name") ; continue ;;
			time/*) times+=("$prefix$name $p $f") ; continue ;;
			*/boot-kernel-log | */final-kernel-log) ;;
			*) ran[$name]=1 ;;&
			pass/*) files_passed=$((files_passed + 1)) ;;
			skip/*) files_skipped=$((files_skipped + 1)) ;;
			*) files_failed=$((files_failed + 1)) ;;
			esac
			passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
			# A test skipped as a whole counts as one skipped check.
			[[ $result == skip ]] && skipped=$((skipped + 1))
		done <"$results"
		rm -f "$results"
	else
		log "the VM produced no results (exit $vm_status)"
		subfails+=("${prefix}VM # no results (exit $vm_status)")
		failed=$((failed + 1))
	fi
	if [[ $vm_status -ne 0 ]]; then
		log "the VM run exited with status $vm_status"
		subfails+=("${prefix}VM # exited with status $vm_status")
		failed=$((failed + 1))
		# Each test the guest planned and did not finish is a failure
		# of its own.
		for t in "${planned[@]}"; do
			[[ -n ${ran[$t]:-} ]] && continue
			subfails+=("$prefix$t # did not finish: the VM ended first")
			files_failed=$((files_failed + 1)) failed=$((failed + 1))
		done
	fi
}

log "booting the VM and running the selftests"
vm_pass "${KERNEL:-normal}" "" "$@"
phase "${KERNEL:-normal} VM"

# The whole run, on the normal kernel: then the tests that load, fault
# and remove the driver, and tear down user-space RDMA under live
# contexts, once more on the debug kernel (KASAN, lockdep, kmemleak,
# DEBUG_OBJECTS, DMA-API debugging; Documentation/rsnic/testing.rst), if
# that kernel was built (`make kernel KERNEL=debug`; a changed
# configuration then rebuilds it). Its build alone takes ~20 min, which
# a cold machine's check cannot afford: there it is one skip. The whole
# rdma_user.sh (350 to 480 s there) does not fit the budget beside the
# normal pass: its teardowns without the data-path checks do.
DEBUG_TESTS=(probe.sh probe_fault.sh fault_card.sh fault_removal.sh rdma_user_lifecycle.sh)
if [[ $# -eq 0 && ${KERNEL:-normal} == normal && ${RSNIC_CHECK_DEBUG:-1} == 1 ]]; then
	debug_tree=$RSNIC_KERNEL_DIR/debug
	if [[ -f $debug_tree/.rsnic-stamp && -f $debug_tree/arch/x86/boot/bzImage ]]; then
		log "the debug kernel: ${DEBUG_TESTS[*]}"
		if qemu/build-ksft.sh debug && make -s modules KERNEL=debug >&2; then
			vm_pass debug "debug:" "${DEBUG_TESTS[@]}"
			phase "debug build and VM"
		else
			log "building for the debug kernel failed"
			subfails+=("debug: module build # failed")
			failed=$((failed + 1))
		fi
	else
		log "the debug kernel is not built (make kernel KERNEL=debug): its tests skipped"
		subskips+=("debug: ${DEBUG_TESTS[*]} # SKIP the debug kernel is not built")
		skipped=$((skipped + 1))
	fi
fi

# Where the time went: each selftest file (wall and host CPU seconds),
# slowest first, and each phase of the check. Also kept in the cache,
# for comparing runs.
if [[ ${#times[@]} -gt 0 ]]; then
	log "time per file (wall s, host CPU s of the VM and its cards), slowest first:"
	printf '%s\n' "${times[@]}" | sort -k2,2nr | awk '{printf "  %-34s %5s %5s\n", $1, $2, $3}' >&2
	printf '%s\n' "${times[@]}" >"$RSNIC_CACHE/check-times.txt"
fi
log "time per phase (s): $(printf '%s; ' "${phases[@]}")"

if [[ ${#subskips[@]} -gt 0 ]]; then
	log "skipped checks:"
	printf '  %s\n' "${subskips[@]}" >&2
fi
# Last, so that a log cut to its tail still says what failed.
if [[ ${#kreports[@]} -gt 0 ]]; then
	log "the first kernel report of each test that had one:"
	printf '  %s\n' "${kreports[@]}" >&2
fi
if [[ ${#subfails[@]} -gt 0 ]]; then
	log "failed checks:"
	printf '  %s\n' "${subfails[@]}" >&2
fi

log "check took $((SECONDS - start)) s"
echo "selftest files: $files_passed passed, $files_failed failed, $files_skipped skipped"
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
