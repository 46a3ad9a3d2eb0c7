#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs the rsnic selftests inside the VM, KTAP in and out.
#   guest-check.sh [TEST...]   (default: every TEST_PROGS of the Makefile)
# After each test the kernel log is scanned; a BUG, WARNING, Oops, KASAN,
# UBSAN, lockdep or kmemleak report fails the test whatever it printed.
# One "<result> <test>" line per test goes to /run/rsnic/results.

dir=/rsnic/selftests/drivers/net/rsnic
results=/run/rsnic/results
bad='BUG:|WARNING:|Oops|KASAN|UBSAN|kernel BUG|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|INFO: task .* blocked|unreferenced object|Kernel panic'
timeout=$(sed -n 's/^timeout=//p' "$dir/settings" 2>/dev/null)
# dmesg_mark and dmesg_since_mark: the kernel log from a mark line on (a
# mark, not a line count: the ring buffer wraps).
source "$dir/lib.sh"

if [ $# -gt 0 ]; then
	tests=("$@")
else
	tests=($(sed -n 's/^TEST_PROGS *+\?:\?= *//p' "$dir/Makefile"))
fi

: >"$results"
echo "TAP version 13"
echo "1..${#tests[@]}"
n=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	t=$(basename "$t")
	if [ ! -x "$dir/$t" ]; then
		echo "not ok $n $t # no such test"
		echo "fail $t" >>"$results"
		continue
	fi
	echo "# running $t"
	dmesg_mark
	start=$SECONDS
	(cd "$dir" && timeout "${timeout:-600}" "./$t") >/tmp/test.out 2>&1
	rc=$?
	if [ $rc = 124 ]; then
		# Hung: show where every CPU and every blocked task is.
		echo l >/proc/sysrq-trigger
		echo w >/proc/sysrq-trigger
		sleep 1
		echo "# $t timed out; kernel state:" >>/tmp/test.out
		dmesg | tail -n 150 >>/tmp/test.out
	fi
	sed 's/^/# /' /tmp/test.out
	if [ -e /sys/kernel/debug/kmemleak ]; then
		echo scan >/sys/kernel/debug/kmemleak
		cat /sys/kernel/debug/kmemleak >/tmp/kmemleak.out
		[ -s /tmp/kmemleak.out ] && dmesg_extra=$(cat /tmp/kmemleak.out) || dmesg_extra=
	fi
	reports=$( (dmesg_since_mark; echo "${dmesg_extra:-}") | grep -E "$bad")
	if [ -n "$reports" ]; then
		echo "# kernel reported problems during $t:"
		dmesg_since_mark | sed 's/^/#   /' | head -n 200
		rc=1
	fi
	took=$((SECONDS - start))
	case $rc in
	0) echo "ok $n $t # ${took}s"; echo "pass $t" >>"$results" ;;
	4) echo "ok $n $t # SKIP"; echo "skip $t" >>"$results" ;;
	124) echo "not ok $n $t # TIMEOUT after ${timeout:-600}s"; echo "fail $t" >>"$results" ;;
	*) echo "not ok $n $t # exit $rc"; echo "fail $t" >>"$results" ;;
	esac
done
