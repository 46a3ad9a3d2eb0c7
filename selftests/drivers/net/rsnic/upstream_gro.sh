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
# frame for 50 ms, not their default 1 ms: as gro.py sets
# gro_flush_timeout for the stack's GRO, the card's aggregation timer is
# set to the pace of the test's sender, a process in the TCG guest that
# sends one frame per system call and, on a loaded host, pauses for tens
# of milliseconds (20 ms was too short there), where the test expects the
# microseconds of a real wire (it holds up to 512 flows across a train of
# 1024 frames). The test's FIN follows its train by 100 ms, and the card
# releases what is due before it takes the next frame, so the FIN still
# comes after the aggregates. gro.py runs with the default:
# its capacity probe doubles its flows for as long as all of them
# coalesce, and with a 20 ms hold it went on to thousands of flows,
# bursts the TCG peer's packet socket refused (ENOBUFS).

source "$(dirname "$0")/lib.sh"

# Card B's TX queue 0 for every CPU (XPS). The tests' sender is a
# packet socket, whose frames take the queue XPS gives the CPU it runs
# on: moved to the other CPU in the middle of a train, it sends the rest
# on another queue, which the card serves on its own, and frames of the
# two queues cross on the wire. The card then coalesces (and the order
# check sees) a train the test did not send - on a slower machine often:
# the failures of gro_hw's order and stats cases were these. A real
# sender's train comes from one queue. Card B's netdev leaving the
# netns (net_cleanup) closes it; opening it again restores the default.
one_tx_queue() {
	ip netns exec "$NS" bash -c '
		all=$(printf %x $(((1 << $(nproc)) - 1)))
		for q in /sys/class/net/$1/queues/tx-*; do
			[ "${q##*/}" = tx-0 ] && echo "$all" >"$q/xps_cpus" || echo 0 >"$q/xps_cpus"
		done' one_tx_queue "$NETIF_B"
}

# The cards' hold, card A's rx-copybreak and card B's one TX queue, for
# test $1.
#
# rx-copybreak 512 for gro_hw.py: its order cases hold 512 flows and the
# card releases their ~480-byte aggregates in one burst when the train
# ends. The driver receives into 4 KB buffers (16 of them hold a 64 KB
# aggregate), so 512 such frames (~4.3 KB truesize each) overrun the test
# receiver's 2 MB socket unless it drains as NAPI delivers, which the
# TCG guest's receiver does not: whole flows went missing (received=354
# of 512). Copied into small buffers, all 512 fit, as with a driver
# that cuts its pages into frame-sized fragments.
gro_before() {
	local us=1000 copybreak=$COPYBREAK card
	[[ $1 == */gro_hw.py ]] && us=50000 copybreak=512
	for card in A B; do
		harness card $card gro-hold $us >/dev/null || return 1
	done
	ethtool --set-tunable "$NETIF_A" rx-copybreak $copybreak || return 1
	one_tx_queue
}
export -f gro_before one_tx_queue
export UPSTREAM_BEFORE=gro_before
# Card A's rx-copybreak as the driver set it, for gro.py and after.
find_netifs
COPYBREAK=$(ethtool --get-tunable "$NETIF_A" rx-copybreak | awk '{ print $2 }')
export COPYBREAK

files=("$@") # a developer's choice; all of them by default
[ ${#files[@]} -gt 0 ] || files=(drivers/net/hw/gro_hw.py drivers/net/gro.py)
"$(dirname "$0")/upstream.sh" "${files[@]}"
rc=$?
for card in A B; do
	harness card $card gro-hold 1000 >/dev/null
done
ethtool --set-tunable "$NETIF_A" rx-copybreak "$COPYBREAK"
exit $rc
