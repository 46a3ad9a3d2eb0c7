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

log "building the emulator, and the module with clippy (its lint)"
RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo build --release --locked 2>&1 | tail -n 3 >&2
# make lint-module leaves the module built: the VMs load that build.
touch "$RSNIC_CACHE/check-build-start"
module_lint=ok
if ! make -s lint-module >"$RSNIC_CACHE/lint-module.log" 2>&1; then
	if [[ ! rsnic.ko -nt $RSNIC_CACHE/check-build-start ]]; then
		tail -n 40 "$RSNIC_CACHE/lint-module.log" >&2
		log "module build failed"
		echo "$passed passed, $((failed + 1)) failed, $skipped skipped"
		exit 1
	fi
	module_lint=fail
fi
phase build

subskips=() subfails=() kreports=() times=()

# The tests: the ones named, or the Makefile's TEST_PROGS; then the
# debug pass's, on the debug kernel: the whole run goes on the normal
# kernel, and the tests that load, fault and remove the driver, and tear
# down user-space RDMA under live contexts, and the GFT's full table
# (nothing leaks when installs are refused), on the debug kernel
# (KASAN, lockdep, kmemleak, DEBUG_OBJECTS, DMA-API debugging;
# Documentation/rsnic/testing.rst), if that kernel was built (`make
# kernel KERNEL=debug`; a changed configuration then rebuilds it). Its
# build alone takes ~20 min, which a cold machine's check cannot afford:
# there it is one skip. The whole rdma_user.sh does not fit the budget
# beside the normal pass: its teardowns without the data-path checks do.
if [[ $# -gt 0 ]]; then
	tests=("$@")
else
	tests=($(sed -n 's/^TEST_PROGS *+\?:\?= *//p' selftests/drivers/net/rsnic/Makefile))
fi
DEBUG_TESTS=(probe.sh probe_fault.sh fault_card.sh fault_removal.sh health_reload.sh rdma_user_lifecycle.sh gft_capacity.sh)
debug_tests=()
if [[ $# -eq 0 && ${KERNEL:-normal} == normal && ${RSNIC_CHECK_DEBUG:-1} == 1 ]]; then
	debug_tree=$RSNIC_KERNEL_DIR/debug
	if [[ -f $debug_tree/.rsnic-stamp && -f $debug_tree/arch/x86/boot/bzImage ]]; then
		log "the debug kernel: ${DEBUG_TESTS[*]}"
		if qemu/build-ksft.sh debug && make -s modules KERNEL=debug >&2; then
			debug_tests=("${DEBUG_TESTS[@]}")
			# What the debug pass runs, the normal one does not run
			# again: the same checks, with KASAN, lockdep and kmemleak
			# watching, are the stronger run (testing.rst).
			normal_tests=()
			for t in "${tests[@]}"; do
				[[ " ${DEBUG_TESTS[*]} " == *" $t "* ]] || normal_tests+=("$t")
			done
			tests=("${normal_tests[@]}")
		else
			log "building for the debug kernel failed"
			subfails+=("debug: module build # failed")
			failed=$((failed + 1))
		fi
		phase "debug build"
	else
		log "the debug kernel is not built (make kernel KERNEL=debug): its tests skipped"
		subskips+=("debug: ${DEBUG_TESTS[*]} # SKIP the debug kernel is not built")
		skipped=$((skipped + 1))
	fi
fi

# longest_first TEST...: the tests, those that took longest in the run
# qemu/check-times.txt records first (a test it does not know counts as
# 60 s). The VMs take tests from one queue in this order, so the long
# ones start early and the short ones fill the lanes at the end.
longest_first() {
	local t
	for t in "$@"; do
		echo "$(awk -v t="$t" '$1 == t { print $2; found = 1 } END { if (!found) print 60 }' \
			qemu/check-times.txt 2>/dev/null || echo 60) $t"
	done | sort -s -k1,1nr | cut -d' ' -f2
}

# The VMs run side by side in lanes, RSNIC_CHECK_LANES of them (default
# 2): on these 2-core machines a VM with its cards keeps one core busy
# on average (testing.rst). Each VM has its own two cards and takes the
# next test from the queue as it finishes one (qemu/vm.py --queue), so
# the lanes share the work out however long each test takes. Lane 1
# runs the debug kernel's VM first, then joins the others.
run=$RSNIC_CACHE/check.$$
rm -rf "$run"
mkdir -p "$run"
# Tests that time frames to a few milliseconds run last, when no other
# VM runs beside theirs (testing.rst): upstream_alone.sh (so_txtime.py).
ALONE_TESTS=(upstream_alone.sh)
kernel=${KERNEL:-normal}
alone=() shared=()
for t in "${tests[@]}"; do
	if [[ " ${ALONE_TESTS[*]} " == *" $t "* ]]; then alone+=("$t"); else shared+=("$t"); fi
done
longest_first "${shared[@]}" >"$run/$kernel.queue"
printf '%s\n' "${alone[@]}" | sed '/^$/d' >"$run/$kernel-alone.queue"
[[ ${#debug_tests[@]} -eq 0 ]] || printf '%s\n' "${debug_tests[@]}" >"$run/debug.queue"
lanes=${RSNIC_CHECK_LANES:-2}
[[ $lanes -le ${#shared[@]} ]] || lanes=${#shared[@]}
[[ $lanes -ge 1 ]] || lanes=1

# vm_boot LANE N QUEUE: boots VM number N of a lane on the kernel of
# QUEUE (normal, debug, normal-alone), which takes tests from that queue
# until it is empty, a test fails (the VM's state is then unknown) or
# the check's time runs out. Its results go to $run/LANE.N.KERNEL, its
# exit status to .status beside.
vm_boot() {
	local lane=$1 n=$2 queue=$3 kernel=${3%-alone} status
	local out=$run/$lane.$n.$kernel left=$((budget - (SECONDS - start)))
	log "lane $lane: VM $n ($kernel kernel), $left s left of the check's $budget s"
	echo "$((SECONDS - start))" >"$out.began"
	# Lanes side by side run their guests' CPUs in one host thread each
	# (RSNIC_TCG_THREAD, testing.rst); the alone lane has the machine.
	local tcg=single
	[[ $queue != *-alone ]] || tcg=multi
	# Each line the VM prints carries its lane; $out.log keeps them, for
	# the summary of a VM that ran no test.
	{
		RSNIC_TCG_THREAD=${RSNIC_TCG_THREAD:-$tcg} KERNEL=$kernel qemu/in-rootfs.sh python3 qemu/vm.py run --timeout "${RSNIC_CHECK_TIMEOUT:-$left}" \
			--queue "$RSNIC_IN_CACHE/check.$$/$queue.queue" \
			--results "$RSNIC_IN_CACHE/check.$$/$(basename "$out")" \
			--cmd "bash /rsnic/qemu/guest-check.sh --queue" && status=0 || status=$?
		echo "$status" >"$out.status"
		echo "$((SECONDS - start))" >"$out.ended"
	} 2>&1 | tee "$out.log" | sed -u "s/^/[$lane] /"
}

# lane LANE QUEUE...: VMs one after another, on each QUEUE in turn,
# while it has tests and the check has time. A VM that started no test
# (it did not boot, a card did not start) is tried once more; a second
# one in a row ends the lane: the other lanes take its tests.
lane() {
	local id=$1 queue n=0 idle=0
	shift
	for queue in "$@"; do
		while [[ -s $run/$queue.queue && $((budget - (SECONDS - start))) -ge 60 ]]; do
			n=$((n + 1))
			vm_boot "$id" $n "$queue"
			if grep -q '^start ' "$run/$id.$n.${queue%-alone}" 2>/dev/null; then
				idle=0
			else
				idle=$((idle + 1))
				[[ $idle -lt 2 ]] || break 2
			fi
		done
	done
}

# The emulator's unit tests and the other lints (rustfmt, the emulator's
# clippy) run beside the VMs: they need nothing the VMs use.
if [[ $# -eq 0 ]]; then
	log "beside the VMs: the emulator's unit tests (cargo test), rustfmt, the emulator's clippy, the driver's layers, the provider's header"
	(
		st=0
		RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo test --locked >"$run/cargo.log" 2>&1 || st=$?
		echo $st >"$run/cargo.status"
		st=0
		make -s rustfmtcheck lint-emu layers hw-header >"$run/lint.log" 2>&1 || st=$?
		echo $st >"$run/lint.status"
	) &
fi
log "booting $lanes VMs side by side and running the selftests"
for ((l = 1; l <= lanes; l++)); do
	if [[ $l == 1 && ${#debug_tests[@]} -gt 0 ]]; then
		lane $l debug "$kernel" &
	else
		lane $l "$kernel" &
	fi
done
wait
# Then what runs alone, in lane 0.
[[ ! -s $run/$kernel-alone.queue ]] || lane 0 "$kernel-alone"
phase "VMs"

if [[ $# -eq 0 ]]; then
	# cargo test: each test a check. No failed test, yet cargo failed (a
	# doctest build, a panic in a harness): that counts too.
	log "emulator unit tests (cargo test)"
	out=$(cat "$run/cargo.log" 2>/dev/null)
	cargo_status=$(cat "$run/cargo.status" 2>/dev/null || echo "?")
	cargo_failed_before=$failed
	echo "$out" | grep -E '^test |^test result' >&2
	while read -r p f; do
		passed=$((passed + p)) failed=$((failed + f))
	done < <(echo "$out" | sed -n 's/^test result: .*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p')
	if ! echo "$out" | grep -q '^test result:'; then
		echo "$out" | tail -n 30 >&2
		log "cargo test did not run"
		subfails+=("cargo test # did not run")
		failed=$((failed + 1))
	elif [[ $cargo_status != 0 && $failed -eq $cargo_failed_before ]]; then
		echo "$out" | tail -n 30 >&2
		log "cargo test exited with status $cargo_status"
		subfails+=("cargo test # exited with status $cargo_status")
		failed=$((failed + 1))
	fi
	# The lints: one check.
	log "lints: rustfmt, clippy (module and emulator), no warnings; layers"
	if [[ $module_lint == ok && $(cat "$run/lint.status" 2>/dev/null) == 0 ]]; then
		echo "ok lint" >&2
		passed=$((passed + 1))
	else
		[[ $module_lint == ok ]] || tail -n 40 "$RSNIC_CACHE/lint-module.log" >&2
		tail -n 40 "$run/lint.log" >&2
		echo "not ok lint" >&2
		subfails+=("lint # rustfmt or clippy found something (above)")
		failed=$((failed + 1))
	fi
fi

# The results of every VM, lane by lane.
vm_results() { # FILE PREFIX LANE
	local file=$1 prefix=$2 lane=$3 status started=() t
	local -A ended=()
	status=$(cat "$file.status" 2>/dev/null || echo "?")
	# What each VM did, for the summary at the end.
	lane_vms[$lane]=$((${lane_vms[$lane]:-0} + 1))
	lane_end[$lane]=$(cat "$file.ended" 2>/dev/null || echo "?")
	if ! grep -q '^start ' "$file" 2>/dev/null; then
		idle_vms+=("lane $lane VM ${file##*/}: exit $status after $(($(cat "$file.ended" 2>/dev/null || echo 0) - $(cat "$file.began" 2>/dev/null || echo 0))) s, no test started; it printed: $(grep -E 'rsnic-vm:|QEMU says|guest CPUs at|does not answer|killed|did not start' "$file.log" 2>/dev/null | tail -n 5 | cut -c1-200 | tr '\n' '|')")
	fi
	if [[ ! -f $file ]]; then
		subfails+=("${prefix}VM (lane $lane) # no results (exit $status)")
		failed=$((failed + 1))
		return
	fi
	while read -r result name p f s; do
		case $result/$name in
		subskip/*) subskips+=("$prefix$name $p $f $s") ; continue ;;
		subfail/*) subfails+=("$prefix$name $p $f $s") ; continue ;;
		kreport/*) kreports+=("$prefix$name $p $f $s") ; continue ;;
		start/*) started+=("$name") ; continue ;;
		time/*) times+=("$prefix$name $p $f $lane") ; continue ;;
		restart/*) log "lane $lane: $prefix$name $p: the next tests got a fresh VM"; continue ;;
		pace/*) paces+=("$name"); continue ;;
		planned/*) continue ;;
		*/boot-kernel-log | */final-kernel-log) ;;
		*) ended[$name]=1 ;;&
		pass/*) files_passed=$((files_passed + 1)) ;;
		skip/*) files_skipped=$((files_skipped + 1)) ;;
		*) files_failed=$((files_failed + 1)) ;;
		esac
		passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
		# A test skipped as a whole counts as one skipped check.
		[[ $result == skip ]] && skipped=$((skipped + 1))
	done <"$file"
	if [[ $status != 0 ]]; then
		log "lane $lane: a VM exited with status $status"
		# A VM the host killed (hung, or out of time) says where it was.
		subfails+=("${prefix}VM (lane $lane) # exited with status $status$(grep -E 'QEMU says|guest CPUs at|does not answer|: killed' "$file.log" 2>/dev/null | sed 's/^\[rsnic\] *//' | cut -c1-200 | tr '\n' ';' | sed 's/^./: &/')")
		failed=$((failed + 1))
		# The test it was running when it died fails; the lane went on
		# with a fresh VM.
		for t in "${started[@]}"; do
			[[ -n ${ended[$t]:-} ]] && continue
			subfails+=("$prefix$t # did not finish: the VM ended during it (exit $status)")
			files_failed=$((files_failed + 1)) failed=$((failed + 1))
		done
	fi
}
# The debug pass's names carry "debug:".
prefix_of() { [[ $1 == "$kernel" ]] || echo "$1:"; }
# Every VM booted wrote a status, results or not.
declare -A lane_vms=() lane_end=()
idle_vms=() paces=()
for f in $(ls "$run" | sed -n 's/^\([0-9]*\.[0-9]*\.\(normal\|debug\)\)\.status$/\1/p' | sort -t. -k1,1n -k2,2n); do
	vm_results "$run/$f" "$(prefix_of "${f##*.}")" "${f%%.*}"
done
# What no VM took: the check ran out of time, or every lane's VM broke.
for q in "$run"/*.queue; do
	q_kernel=$(basename "$q" .queue)
	prefix=$(prefix_of "${q_kernel%-alone}")
	while read -r t; do
		[[ -n $t ]] || continue
		subfails+=("$prefix$t # did not run: no VM took it before the check's time ran out or its lanes stopped")
		files_failed=$((files_failed + 1)) failed=$((failed + 1))
	done <"$q"
done
rm -rf "$run"

if [[ ${#subskips[@]} -gt 0 ]]; then
	log "skipped checks:"
	printf '  %s\n' "${subskips[@]}" >&2
fi
if [[ ${#kreports[@]} -gt 0 ]]; then
	log "the first kernel report of each test that had one:"
	printf '  %s\n' "${kreports[@]}" >&2
fi
# Where the time went: each selftest file (wall and host CPU seconds),
# slowest first. Also kept in the cache, for comparing runs.
if [[ ${#times[@]} -gt 0 ]]; then
	log "time per file (wall s, host CPU s of the VM and its cards, lane), slowest first:"
	printf '%s\n' "${times[@]}" | sort -k2,2nr | awk '{printf "  %-34s %5s %5s  lane %s\n", $1, $2, $3, $4}' >&2
	printf '%s\n' "${times[@]}" >"$RSNIC_CACHE/check-times.txt"
fi
# Last, so that a log cut to its tail (CI keeps about 20 lines) still
# says what failed, where the time went and how each lane fared.
if [[ ${#subfails[@]} -gt 0 ]]; then
	log "failed checks:"
	printf '  %s\n' "${subfails[@]}" >&2
fi
[[ ${#idle_vms[@]} -eq 0 ]] || printf '[rsnic] %s\n' "${idle_vms[@]}" >&2
log "time per phase (s): $(printf '%s; ' "${phases[@]}")"
lanes_line=
for l in $(printf '%s\n' "${!lane_vms[@]}" | sort -n); do
	lanes_line+="lane $l: ${lane_vms[$l]} VMs, done at ${lane_end[$l]} s; "
done
log "${lanes_line}pace ${paces[*]:-?}"
log "check took $((SECONDS - start)) s"
echo "selftest files: $files_passed passed, $files_failed failed, $files_skipped skipped"
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
