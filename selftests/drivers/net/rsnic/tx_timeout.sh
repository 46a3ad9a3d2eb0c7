#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A hung TX queue: the card's TX engine stops (harness fault `stall-tx`),
# the ring fills, the stack's watchdog fires after 5 s, and the driver
# resets the stuck queue pair; traffic flows again without a reload.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
# One queue pair, so the stuck queue is the one every sender uses.
channels=$(channels_in_use)
ethtool -L "$NETIF_A" combined 1
trap 'kill $(jobs -p) 2>/dev/null; ethtool -L "$NETIF_A" combined $channels; net_cleanup' EXIT

logged() { dmesg_since_mark | grep -q "$1"; }
timeouts() { ethtool -S "$NETIF_A" | awk '/tx[0-9]+_timeouts:/ {n += $2} END {print n + 0}'; }

ktap_header 4
# Resolve the neighbour first: ARP would wait in the stalled queue too.
ping -c 1 -W 2 -q $IP_B >/dev/null
before=$(timeouts)
dmesg_mark
harness card A stall-tx >/dev/null
fill_tx_ring $IP_B &
wait_until 200 logged "queue pair [0-9]* reset$"
kill %1 2>/dev/null
wait 2>/dev/null
dmesg_since_mark | grep -E "WATCHDOG|TX queue|queue pair" | sed 's/^/# /'
check "the watchdog reports the stuck queue and the driver resets it" \
	logged "TX queue [0-9]* timed out, resetting it"
check "the queue came back" logged "queue pair [0-9]* reset$"
check "ethtool -S counts the timeout" test "$(timeouts)" -gt "$before"
check "traffic flows again on the same interface" ping -c 3 -W 2 -q $IP_B
ktap_finish
