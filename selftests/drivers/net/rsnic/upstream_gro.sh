#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's GRO tests, run by upstream.sh (its runner, its skip list)
# like the other drivers/net ones, in a file of their own: gro.py runs
# every case in software GRO and again in the card's receive coalescing
# (hardware GRO), and gro_hw.py checks the coalescing's counters and
# order; together they would push upstream.sh past its time.
#
# For gro_hw.py the cards hold an aggregate until its queue has had no
# frame for 20 ms, not their default 1 ms: as gro.py sets
# gro_flush_timeout for the stack's GRO, the card's aggregation timer is
# set to the pace of the test's sender, a process in the TCG guest that
# sends one frame per system call and pauses for milliseconds at times,
# where the test expects the microseconds of a real wire (it holds up to
# 512 flows across a train of 1024 frames). gro.py runs with the default:
# its capacity probe doubles its flows for as long as all of them
# coalesce, and with a 20 ms hold it went on to thousands of flows,
# bursts the TCG peer's packet socket refused (ENOBUFS).

source "$(dirname "$0")/lib.sh"

# The cards' hold for test $1.
gro_hold_for() {
	local us=1000 card
	[[ $1 == */gro_hw.py ]] && us=20000
	for card in A B; do
		harness card $card gro-hold $us >/dev/null || return 1
	done
}
export -f gro_hold_for
export UPSTREAM_BEFORE=gro_hold_for

"$(dirname "$0")/upstream.sh" \
	"drivers/net/hw/gro_hw.py" \
	"drivers/net/gro.py"
rc=$?
for card in A B; do
	harness card $card gro-hold 1000 >/dev/null
done
exit $rc
