#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma-core's own test suite (tests/run_tests.py of rdma-core 65.0, the
# source qemu/build-provider.sh builds the provider in, on Debian's
# python3-pyverbs 65.0) against card A's RDMA device: every test either
# passes or skips with pyverbs' own reason (no implicit ODP, device
# memory, huge pages, or another vendor's device). Traffic
# tests run both ends on the one device, which the card loops back.
# The counts go to the log; at least the tests that pass today must.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
cleanup() { net_cleanup; }
trap cleanup EXIT

SUITE=/rsnic-cache/rdma-core/src/tests/run_tests.py
# The tests passing on 2026-12-05 with atomics, CQ resize, SRQs, memory
# windows, the extended CQ and QP verbs, MR re-registration and UC QPs:
# 120 of 390 (115 before UC); 131 with FLUSH, ATOMIC WRITE and UD
# multicast; 134 on 2026-12-07 with completion time stamps (the two
# test_phc_timestamp cases and mlx5's real-time RC case); 135 with SRQ
# resize (test_resize_srq); 150 on 2026-12-07 with on-demand paging
# (13 test_odp cases, 2 test_mrex_odp); 157 with XRC (test_xrc_atomic_*,
# test_xrc_traffic_cq_ex, test_odp_xrc_traffic, test_qp_ex_xrc_send*,
# test_ro_xrc_traffic); 174 with device memory (test_device.DMTest's 8,
# test_mr.DeviceMemoryAPITest's 3 and DeviceMemoryTest's 6 traffic and
# atomic cases; test_multi_process_alloc_dm needs the 'fork' start
# method, below).
MIN_PASSED=174

A=$(card_addr A)
IB_A=$(ibdev_of "$A")
[ -n "$IB_A" ] || bail_out "no RDMA device under card A"
[ -f "$SUITE" ] || bail_out "no rdma-core test suite at $SUITE (qemu/build-provider.sh)"
python3 -c 'import pyverbs' 2>/dev/null || bail_out "python3-pyverbs not installed"
GID_A=$(roce_gid_index "$IB_A" "$IP_A") || bail_out "no RoCE v2 GID for $IP_A"

ktap_header 2
log=$(mktemp)
# Python 3.14 starts multiprocessing children by forkserver, which must
# pickle the target: test_multi_process_alloc_dm's bound method of a
# TestCase cannot be (its runner holds stdout). rdma-core's own base
# class asks for 'fork' (tests/base.py); the suite runs with it as the
# default, as it did before 3.14.
timeout 900 python3 -c '
import multiprocessing, os, runpy, sys
multiprocessing.set_start_method("fork")
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")' "$SUITE" --dev "$IB_A" --port 1 --gid "$GID_A" -v >"$log" 2>&1
status=$?
summary=$(grep -E '^(Ran|OK|FAILED)' "$log" | tr '\n' ' ')
echo "# rdma-core tests on $IB_A: $summary"
grep -E '^(FAIL|ERROR):' "$log" | sed 's/^/#   /'
# Why tests skip, by reason.
grep -oE "skipped .*" "$log" | sort | uniq -c | sort -rn | sed 's/^/#   /'
check "rdma-core's tests: no failure, no error" test $status = 0
ran=$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' "$log")
# unittest's last line: OK or FAILED (failures=F, errors=E, skipped=S).
outcome() { grep -E '^(OK|FAILED)' "$log" | tail -n1 | grep -oE "$1=[0-9]+" | cut -d= -f2; }
skipped=$(outcome skipped) failed=$(outcome failures) errors=$(outcome errors)
passed=$((${ran:-0} - ${skipped:-0} - ${failed:-0} - ${errors:-0}))
echo "# $passed passed, ${failed:-0} failed, ${errors:-0} errors, ${skipped:-0} skipped of ${ran:-0}"
check "rdma-core's tests: at least $MIN_PASSED pass ($passed)" test "$passed" -ge $MIN_PASSED
rm -f "$log"
ktap_finish
