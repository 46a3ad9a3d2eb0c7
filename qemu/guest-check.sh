#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs the rsnic selftests inside the VM, KTAP in and out.
#   guest-check.sh [TEST...]   (default: every TEST_PROGS of the Makefile)
#   guest-check.sh --queue     the tests the harness hands out one at a
#                              time ("next"), from a queue this VM may
#                              share with others (qemu/check.sh)
# Every test starts from the VM as it booted. A test that fails ends the
# VM (its state is unknown: the host boots a fresh one for the rest of
# the queue), and so does a test that passed but left the VM changed
# (the driver unloaded, a card's netdev gone or in another netns, a netns
# left, a VF plugged): that test fails, with what it left. Processes it
# left running are killed and named. Each test's time limit is the
# settings timeout times the machine's pace, measured at boot against a
# reference (RSNIC_PACE, which tests with limits of their own scale by).
# The kernel log from boot and the module's first load is scanned before
# the first test (on the debug kernel lockdep must also still be on).
# After each test the kernel log is scanned; a BUG, WARNING, Oops, KASAN,
# UBSAN, lockdep, hung-task, soft-lockup, RCU-stall or kmemleak report
# fails the test whatever it printed (kmemleak is cleared before each
# test, so a leak fails the test that made it), and so does a KTAP plan
# ("1..N") that does not match the results printed. The log is scanned
# once more after the last test.
# /run/rsnic/results, written as the tests go (so a hung VM still leaves
# what ran):
#   <pass|fail|skip> <test> <subtests passed> <failed> <skipped>
#   subskip <test> <subtest # reason>       one per skipped subtest
#   subfail <test> <subtest # reason>       one per failed subtest, or
#                                           why the test failed as a whole
#   kreport <test> <line>                   the first kernel report's lines
#   planned <test>                          one per test, before the first
#                                           (not in --queue mode)
#   start <test>                            the test has started (a test
#                                           started and never ended was
#                                           running when the VM died)
#   restart <test> <why>                    the VM ends after this test,
#                                           for a fresh one
#   pace <factor> <calibration ms>          the machine's pace at boot
#   time <test> <wall s> <host CPU s>       what the test took: wall time,
#                                           and the host CPU the VM and its
#                                           cards used meanwhile (a file far
#                                           below 2 CPU-s per s waits more
#                                           than it works)

dir=/rsnic/selftests/drivers/net/rsnic
results=/run/rsnic/results
bad='BUG:|WARNING:|Oops|KASAN|UBSAN|kernel BUG|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|INFO: task .* blocked|soft lockup|hard LOCKUP|detected stalls? on CPU|self-detected stall|rcu_.* detected stall|unreferenced object|Kernel panic'
timeout=$(sed -n 's/^timeout=//p' "$dir/settings" 2>/dev/null)
# dmesg_mark and dmesg_since_mark: the kernel log from a mark line on (a
# mark, not a line count: the ring buffer wraps); is_debug_kernel.
source "$dir/lib.sh"
# The debug kernel (KASAN, lockdep, kmemleak) runs a test 3 to 10 times
# slower: it gets three times the time before it counts as hung.
is_debug_kernel && timeout=$((${timeout:-600} * 3))
# In the project's VM every prerequisite the project provides is there:
# lib.sh's skip_all fails instead of skipping.
export RSNIC_IN_VM=1

queue=false
if [ "${1:-}" = --queue ]; then
	queue=true
	tests=()
elif [ $# -gt 0 ]; then
	tests=("$@")
else
	tests=($(sed -n 's/^TEST_PROGS *+\?:\?= *//p' "$dir/Makefile"))
fi

# The machine's pace: a fixed piece of guest work (10 process starts and
# a 5000-step shell loop) timed three times, the median against what it
# takes on an idle 2-core machine of the kind CI runs on (900 ms in an
# idle VM on 2026-11-29). A slow host, or another VM beside this one,
# makes it larger; never below 1. The debug kernel has a reference of its
# own: a process start costs it about 0.3 s (KASAN, lockdep, kmemleak), so
# the same work took 3379-4026 ms in an idle debug VM (2026-11-29); against
# the normal reference its tests' limits (already three times the normal
# ones) came out at 4900-7600 s, no limit at all.
PACE_REFERENCE_MS=900
is_debug_kernel && PACE_REFERENCE_MS=3000
calibrate() {
	local s i=0
	s=$(date +%s%N)
	for _ in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done
	while [ $i -lt 5000 ]; do i=$((i + 1)); done
	echo $((($(date +%s%N) - s) / 1000000))
}
calibration=$( (calibrate; calibrate; calibrate) | sort -n | sed -n 2p)
export RSNIC_PACE=$(awk -v c="$calibration" -v r=$PACE_REFERENCE_MS 'BEGIN { p = c / r; printf "%.2f", p < 1 ? 1 : p }')
timeout=$(awk -v t="${timeout:-600}" -v p="$RSNIC_PACE" 'BEGIN { printf "%d", t * p }')

# next_test: the next test to run (nothing once there is none).
next_test() {
	if $queue; then
		local reply
		reply=$(harness next "$timeout") || { echo "# the harness gave no test: $reply" >&2; return; }
		echo "${reply#ok}" | tr -d ' '
	elif [ $ti -lt ${#tests[@]} ]; then
		# (The caller moves ti on: this runs in a subshell.)
		echo "${tests[ti]}"
	fi
}

# vm_changes: what is not as it was at boot (nothing if all is): the
# driver loaded, both cards' PFs bound with their netdevs in this netns,
# no netns left, no VF plugged. Built-ins mostly: it runs after each test.
vm_changes() {
	local pfs addr ns
	[ -d /sys/module/rsnic ] || echo "the rsnic module is not loaded;"
	pfs=($(rsnic_pf_addrs))
	[ ${#pfs[@]} = 2 ] || echo "${#pfs[@]} PFs instead of 2;"
	for addr in "${pfs[@]}"; do
		if ! is_bound "$addr"; then
			echo "PF $addr is not bound to rsnic;"
		elif [ -z "$(netif_of "$addr")" ]; then
			echo "PF $addr's netdev is not in the default netns;"
		fi
	done
	[ -z "$(rsnic_addrs $RSNIC_VF_DEVICE)" ] || echo "a VF is plugged: $(rsnic_addrs $RSNIC_VF_DEVICE);"
	ns=(/run/netns/*)
	[ ! -e "${ns[0]}" ] || echo "netns left: ${ns[*]##*/};"
}

# user_pids: the user-space processes now (no kernel threads), but this
# shell and what it runs to list them.
user_pids() {
	ps -e -o pid=,ppid= | awk -v me=$$ -v subsh=$BASHPID \
		'$1 != 1 && $1 != 2 && $2 != 2 && $1 != me && $2 != me && $1 != subsh && $2 != subsh { print $1 }' | sort
}

# kernel_reports: the kernel's complaints since the mark, kmemleak's
# included (its report is read, then cleared for the next test).
kernel_reports() {
	local leaks=
	if [ -e /sys/kernel/debug/kmemleak ]; then
		echo scan >/sys/kernel/debug/kmemleak
		leaks=$(cat /sys/kernel/debug/kmemleak)
		echo clear >/sys/kernel/debug/kmemleak
	fi
	(dmesg_since_mark; echo "$leaks") | grep -E "$bad"
}

# first_report NAME: the first report of the kernel log on stdin whole
# (a WARNING's first line says little), as "kreport" results of NAME for
# the summary at the end of the log.
first_report() {
	awk -v re="$bad" 'f || $0 ~ re { f = 1; print }' | head -n 40 |
		sed "s/^/kreport $1 /" >>"$results"
}

# host_cpu: host CPU seconds so far of the VM (vCPUs, QEMU's other
# threads) and the cards' processes, from the harness; host_cpu_since
# CPU0: how many since that reading ("-" if either is missing).
host_cpu() {
	harness cpu 2>/dev/null | awk '{n = 0; for (i = 2; i <= NF; i++) { split($i, kv, "="); n += kv[2] } print n}'
}
host_cpu_since() {
	local now
	now=$(host_cpu)
	if [ -n "$1" ] && [ -n "$now" ]; then awk -v a="$1" -v b="$now" 'BEGIN { printf "%.0f", b - a }'; else echo -; fi
}

# ktap_counts FILE: "plan passed failed skipped" of a test's own KTAP
# lines (not indented: a test's nested output is not counted).
ktap_counts() {
	awk '/^1\.\.[0-9]+/ { plan = substr($1, 4) + 0 }
	     /^ok [0-9]+ .*# *[Ss][Kk][Ii][Pp]/ { s++; next }
	     /^ok [0-9]+/ { p++ }
	     /^not ok [0-9]+/ { f++ }
	     END { printf "%s %d %d %d\n", (plan == "" ? -1 : plan), p, f, s }' "$1"
}

: >"$results"
$queue || printf 'planned %s\n' "${tests[@]}" >>"$results"
echo "pace $RSNIC_PACE $calibration" >>"$results"
echo "TAP version 13"
echo "# pace $RSNIC_PACE (calibration $calibration ms, reference $PACE_REFERENCE_MS ms): each test may take ${timeout} s"

# The kernel log from boot to here, the module's first load included: a
# report there belongs to no test, and the first KASAN or lockdep report
# also turns lockdep off for the rest of the run. On the debug kernel,
# lockdep must still be on.
n=1
reports=$(dmesg | grep -E "$bad")
if [ -e /proc/lockdep_stats ] && ! grep -Eq 'debug_locks: +1' /proc/lockdep_stats; then
	reports+="${reports:+$'\n'}lockdep is off: $(grep debug_locks /proc/lockdep_stats)"
fi
if [ -n "$reports" ]; then
	echo "# kernel reported problems at boot or on the module's first load:"
	echo "$reports" | sed 's/^/#   /' | head -n 50
	dmesg | first_report boot-kernel-log
	echo "not ok $n kernel log at boot"
	echo "subfail boot-kernel-log # the kernel reported problems before the first test" >>"$results"
	echo "fail boot-kernel-log 0 1 0" >>"$results"
else
	echo "ok $n kernel log at boot"
	echo "pass boot-kernel-log 1 0 0" >>"$results"
fi
[ -e /sys/kernel/debug/kmemleak ] && echo clear >/sys/kernel/debug/kmemleak
ti=0
boot_changes=$(vm_changes)
[ -z "$boot_changes" ] || echo "# the VM is not as a test expects it at boot: $boot_changes"
while t=$(next_test) && [ -n "$t" ]; do
	ti=$((ti + 1))
	n=$((n + 1))
	t=$(basename "$t")
	echo "start $t" >>"$results"
	if [ ! -x "$dir/$t" ]; then
		echo "not ok $n $t # no such test"
		echo "subfail $t # no such test" >>"$results"
		echo "fail $t 0 1 0" >>"$results"
		continue
	fi
	echo "# running $t"
	dmesg_mark
	pids0=$(user_pids)
	cpu0=$(host_cpu)
	start=$SECONDS
	(cd "$dir" && timeout -k 10 "$timeout" "./$t") >/tmp/test.out 2>&1
	rc=$?
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		# Hung: show where every CPU and every blocked task is.
		echo l >/proc/sysrq-trigger
		echo w >/proc/sysrq-trigger
		sleep 1
		echo "# $t timed out after $timeout s; kernel state:" >>/tmp/test.out
		dmesg | tail -n 150 >>/tmp/test.out
		rc=124
	fi
	sed 's/^/# /' /tmp/test.out
	reports=$(kernel_reports)
	if [ -n "$reports" ]; then
		echo "# kernel reported problems during $t:"
		dmesg_since_mark | sed 's/^/#   /' | head -n 200
		echo "$reports" | sed 's/^/#   /' | head -n 50
		[ $rc = 124 ] || rc=1
		dmesg_since_mark | first_report "$t"
		echo "subfail $t kernel log # the kernel reported problems" >>"$results"
	fi
	read -r plan p f s < <(ktap_counts /tmp/test.out)
	# A whole-test skip prints "1..0 # SKIP"; otherwise the plan must
	# match what ran.
	if [ $rc = 0 ] && [ "$plan" != $((p + f + s)) ]; then
		echo "# $t: KTAP plan 1..$plan, but $((p + f + s)) results"
		rc=1
	fi
	grep -E '^ok [0-9]+ .*# *[Ss][Kk][Ii][Pp]' /tmp/test.out |
		sed -E "s/^ok [0-9]+ /subskip $t /" >>"$results"
	# A failed subtest carries the comment line printed just before it
	# (its "expected X, got Y"), so a log cut to its summary says why.
	awk -v t="$t" '
		/^#/ { last = $0; sub(/^[# ]+/, "", last); next }
		/^not ok [0-9]+ / {
			line = $0; sub(/^not ok [0-9]+ /, "", line)
			print "subfail " t " " line (last != "" ? " | " substr(last, 1, 160) : "")
		}
		{ last = "" }' /tmp/test.out >>"$results"
	took=$((SECONDS - start))
	echo "time $t $took $(host_cpu_since "$cpu0")" >>"$results"
	# What the test left: processes (killed, named), and changes to the
	# VM a later test would trip over (the test fails; the VM ends).
	left=$(comm -13 <(echo "$pids0") <(user_pids))
	[ -z "$left" ] || left=$(ps -o pid=,stat=,args= -p "$(echo $left | tr ' ' ,)" 2>/dev/null | awk '$2 !~ /^Z/')
	if [ -n "$left" ]; then
		echo "# $t left running (killed): $(echo "$left" | cut -c1-100 | tr '\n' ';')"
		kill -9 $(echo "$left" | awk '{print $1}') 2>/dev/null
	fi
	# A netns whose last process was just killed goes, and gives its
	# netdevs back, a moment later.
	changes=$(vm_changes)
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		[ "$changes" != "$boot_changes" ] || break
		sleep 0.3
		changes=$(vm_changes)
	done
	[ "$changes" = "$boot_changes" ] || [ $rc != 0 ] || rc=3
	case $rc in
	0) echo "ok $n $t # ${took}s"; r=pass ;;
	4) echo "ok $n $t # SKIP"; r=skip ;;
	124) echo "not ok $n $t # TIMEOUT after ${timeout}s"; r=fail ;;
	3) echo "not ok $n $t # left the VM changed: $changes"; r=fail
	   echo "subfail $t # passed, but left the VM changed: $changes" >>"$results"; f=$((f + 1)) ;;
	*) echo "not ok $n $t # exit $rc"; r=fail ;;
	esac
	# A failed test with no failed subtest (a crash, a bail-out, a
	# kernel report) still counts one failure.
	if [ $r = fail ] && [ "$f" -eq 0 ]; then
		f=1
		case $rc in
		124) echo "subfail $t # timed out after ${timeout}s" ;;
		*) [ -n "$reports" ] || echo "subfail $t # exit $rc, no failed subtest: $(grep -v '^ *$' /tmp/test.out | tail -n1)" ;;
		esac >>"$results"
	fi
	echo "$r $t $p $f $s" >>"$results"
	# After a failure nothing says what state the driver, the cards or
	# the kernel are in: the next test gets a fresh VM.
	if [ $r = fail ]; then
		echo "# $t failed: this VM ends here, the remaining tests get a fresh one"
		echo "restart $t failed" >>"$results"
		break
	fi
done

# Anything the kernel reported after the last test's scan (a hung task
# or a stall takes its time to be noticed, kmemleak its scan).
n=$((n + 1))
dmesg_mark
sleep 6
reports=$(kernel_reports)
if [ -n "$reports" ]; then
	echo "# kernel reported problems after the last test:"
	echo "$reports" | sed 's/^/#   /' | head -n 50
	echo "not ok $n kernel log after the last test"
	echo "subfail final-kernel-log # the kernel reported problems after the last test" >>"$results"
	echo "fail final-kernel-log 0 1 0" >>"$results"
else
	echo "ok $n kernel log after the last test"
	echo "pass final-kernel-log 1 0 0" >>"$results"
fi
echo "1..$n"
