#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's GRO tests, run by upstream.sh (its runner, its skip list)
# like the other drivers/net ones, in a file of their own: gro.py runs
# every case in software GRO and again in the card's receive coalescing
# (hardware GRO), and gro_hw.py checks the coalescing's counters and
# order; together they would push upstream.sh past its time.
#
# The cards hold an aggregate until its queue has had no frame for 20 ms
# here, not their default 1 ms: as gro.py sets gro_flush_timeout for the
# stack's GRO, the card's aggregation timer is set to the pace of the
# tests' sender, a process in the TCG guest that sends one frame per
# system call and pauses for milliseconds at times, where the tests
# expect the microseconds of a real wire (gro_hw.py holds up to 512
# flows across a train of 1024 frames). And the peer's qdisc holds 32768
# frames, not 1000: gro.py's capacity probe doubles its flows until the
# card stops coalescing them all (512 flows a queue, so up to 8192 flows
# over 8 queues, a burst of 16384 frames), and the TCG peer's card
# drains its queue slower than the sender fills it; with 1000 the
# sender's packet socket gets ENOBUFS and the case dies.

source "$(dirname "$0")/lib.sh"
find_netifs
for card in A B; do
	harness card $card gro-hold 20000 >/dev/null || bail_out "card $card: no gro-hold"
done
ip link set "$NETIF_B" txqueuelen 32768
"$(dirname "$0")/upstream.sh" \
	"drivers/net/hw/gro_hw.py" \
	"drivers/net/gro.py"
rc=$?
for card in A B; do
	harness card $card gro-hold 1000 >/dev/null
done
find_netifs
ip link set "$NETIF_B" txqueuelen 1000 2>/dev/null
ip netns exec "$NS" ip link set "$NETIF_B" txqueuelen 1000 2>/dev/null
exit $rc
