#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A card whose completions slip out of step with the rings (harness fault
# `corrupt-cqe`): the driver counts the bad completions, never follows
# them, resets the queue pair and carries on, and the kernel stays clean.
# (The first of the card fault classes of the reliability issue.)

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
# Down/up recreates every pair, clearing corruption still pending on idle ones.
trap 'ip link set "$NETIF_A" down; net_cleanup' EXIT

bad_completions() { ethtool -S "$NETIF_A" | awk '/q[0-9]+_bad_completions:/ {n += $2} END {print n + 0}'; }
logged() { dmesg_since_mark | grep -q "$1"; }

ktap_header 4
ping -c 2 -W 2 -q $IP_B >/dev/null
before=$(bad_completions)
dmesg_mark
harness card A corrupt-cqe 1 >/dev/null
# Traffic until a pair that carried it was reset (pings may be lost).
for _ in $(seq 50); do
	ping -c 1 -W 1 -q $IP_B >/dev/null 2>&1
	logged "queue pair [0-9]* reset$" && break
done
dmesg_since_mark | grep -E "out of step|queue pair" | sed 's/^/# /'
echo "# bad completions: $before -> $(bad_completions)"
check "the bad completions are counted (qN_bad_completions)" test "$(bad_completions)" -gt "$before"
check "the driver logs the slip and resets the queue pair" \
	logged "completion out of step with its ring, resetting it"
check "the queue pair comes back" logged "queue pair [0-9]* reset$"
check "traffic flows again" ping -c 3 -W 2 -q $IP_B
ktap_finish
