#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Card faults while traffic runs, and the kernel stays clean: completions
# that slip out of step with the rings (`corrupt-cqe`: counted, never
# followed, the queue pair reset), spurious interrupts, and registers
# reading all ones. (The first card fault classes of the reliability
# issue.)

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
# Down/up recreates every pair, clearing corruption still pending on idle ones.
trap 'ip link set "$NETIF_A" down; net_cleanup' EXIT

bad_completions() { ethtool -S "$NETIF_A" | awk '/q[0-9]+_bad_completions:/ {n += $2} END {print n + 0}'; }
logged() { dmesg_since_mark | grep -q "$1"; }

ktap_header 7
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
# Pairs the traffic did not use still have their corrupted completion
# pending: cancel it, so the next cases start from a healthy card.
harness card A corrupt-cqe 0 >/dev/null

# Spurious interrupts on every vector while traffic runs: polls that find
# nothing, no bad completion, no carrier change.
before=$(bad_completions)
ping -c 20 -i 0.05 -q $IP_B >/tmp/fault.ping 2>&1 &
harness card A spurious-irq 20 >/dev/null
wait
no_loss_nothing_counted() {
	grep -q " 0% packet loss" /tmp/fault.ping && [ "$(bad_completions)" -eq "$before" ]
}
check "spurious interrupts on every vector during traffic: no loss, nothing miscounted" \
	no_loss_nothing_counted

# Registers reading all ones (a card gone or wedged) while an admin
# interrupt asks for the link state: the carrier is left as it was, and
# traffic resumes when the card answers again.
harness card A fault all-ones >/dev/null
harness card A spurious-irq 1 >/dev/null
sleep 0.5
carrier=$(cat /sys/class/net/$NETIF_A/carrier)
harness card A fault none >/dev/null
check "registers all ones: the carrier is not dropped on a read of all ones" test "$carrier" = 1
check "and traffic flows once the card answers" ping -c 3 -W 2 -q $IP_B
ktap_finish
