#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# devlink, as an operator of a real NIC uses it:
#  - every bound function has an instance; `devlink dev info` gives the
#    card's identifier and versions as the card itself (the emulator's
#    harness) states them;
#  - the PF's netdev sits on a physical devlink port (`ip -d link` shows
#    its port name);
#  - health reporters tx, completion, card and (a PF's) rdma: each fault
#    class the card injects shows up as an error on the matching
#    reporter, with a dump of what the driver saw, and a recovery; with
#    auto-recovery off, or inside the grace period, the pair waits for
#    `devlink health recover` (rdma_errors.sh checks rdma's).

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || bail_out "no harness control channel"
command -v devlink >/dev/null || bail_out "devlink (iproute2) not installed"
A=$(card_addr A)
DL=pci/$A
channels=$(channels_in_use)
cleanup() {
	kill $(jobs -p) 2>/dev/null
	harness card A cqe-fault index 0 >/dev/null
	harness card A irq-drop 0 >/dev/null
	harness card A admin-fault error 0 >/dev/null
	harness card A admin-fault timeout 0 >/dev/null
	harness card A fault none >/dev/null
	for r in tx completion card; do
		devlink health set $DL reporter $r auto_recover true grace_period 0 2>/dev/null
	done
	ip link set "$NETIF_A" mtu 1500 2>/dev/null
	ethtool -L "$NETIF_A" combined "$channels" 2>/dev/null
	net_cleanup
}
trap cleanup EXIT

# reporter NAME FIELD: a field of card A's reporter NAME.
reporter() { health_field "$DL" "$@"; }
# wait_reporter NAME FIELD VALUE: up to 15 s for the field to be VALUE
# (a count: at least VALUE).
wait_reporter() { wait_health "$DL" "$@"; }
pings() { ping -c "${1:-3}" -W 2 -q $IP_B >/dev/null; }

ktap_header 25
dmesg_mark
# Dumps kept from earlier tests' faults would answer for ours.
for r in tx completion card; do devlink health dump clear $DL reporter $r; done

# Instances and info.
every_function() {
	local d
	for d in /sys/bus/pci/drivers/rsnic/0000:*; do
		devlink dev show "pci/$(basename "$d")" >/dev/null || return 1
	done
}
check "every bound function has a devlink instance" every_function
ident=$(harness card A identity)
echo "# card: $ident"
devlink dev info $DL | sed 's/^/# /'
field() { tr ' ' '\n' <<<"$ident" | sed -n "s/^$1=//p"; }
emu_version=$(sed -n 's/^version = "\(.*\)"/\1/p' /rsnic/qemu/rsnic-emu/Cargo.toml | head -n1)
check "dev info: driver rsnic, serial number the card's id ($(field card_id))" json_true \
	"j['info']['$DL']['driver'] == 'rsnic' and j['info']['$DL']['serial_number'] == '$(field card_id)'" \
	devlink -j dev info $DL
check "dev info: asic.rev is the card's interface version, fw the emulator's ($emu_version)" json_true \
	"j['info']['$DL']['versions']['fixed']['asic.rev'] == '$(field hw_version)' and j['info']['$DL']['versions']['running']['fw'] == '$(field fw_version)' == '$emu_version'" \
	devlink -j dev info $DL

# The port.
devlink port show | sed 's/^/# /'
check "port: $NETIF_A on a physical port of $DL" json_true \
	"any(p.get('netdev') == '$NETIF_A' and p['flavour'] == 'physical' for k, p in j['port'].items() if k.startswith('$DL/'))" \
	devlink -j port show
check "ip -d link shows its port name" sh -c "ip -d link show $NETIF_A | grep -q 'portname p0'"

# Reporters.
check "reporters tx, completion, card and (a PF's) rdma, healthy" json_true \
	"sorted(r['reporter'] for r in j['health']['$DL']) == ['card', 'completion', 'rdma', 'tx'] and all(r['state'] == 'healthy' for r in j['health']['$DL'])" \
	devlink -j health show $DL
check "tx diagnose lists every queue pair, the running ones as running" json_true \
	"len(j['queues']) >= $channels and sum(q['running'] for q in j['queues']) == $channels" \
	devlink -j health diagnose $DL reporter tx

# One queue pair, so the faulty pair is the one everything uses.
ethtool -L "$NETIF_A" combined 1
pings 1
errors=$(reporter completion error) recovers=$(reporter completion recover)
completion_fault
wait_reporter completion recover $((recovers + 1))
echo "# completion: errors $errors -> $(reporter completion error), recoveries $recovers -> $(reporter completion recover)"
check "a bad completion: an error on 'completion', recovered automatically" \
	test "$(reporter completion error)" -gt "$errors" -a "$(reporter completion recover)" -gt "$recovers" -a "$(reporter completion state)" = healthy
devlink health dump show $DL reporter completion | head -n 12 | sed 's/^/# /'
check "its dump: the queue, and the completion's index against the ring's" json_true \
	"j['fault']['queue'] == 0 and j['fault']['completion'] and 'last_bad_completion' in j['fault']" \
	devlink -j health dump show $DL reporter completion
devlink health dump clear $DL reporter completion
check "traffic flows after it" pings

# Auto-recovery off: the pair stays down until recovered by hand.
devlink health set $DL reporter completion auto_recover false
errors=$(reporter completion error) recovers=$(reporter completion recover)
completion_fault
wait_reporter completion error $((errors + 1))
check "auto_recover off: the error is counted, not recovered; the pair waits" json_true \
	"j['queues'][0]['awaiting_recovery'] and $(reporter completion recover) == $recovers" \
	devlink -j health diagnose $DL reporter completion
resets=$(ethtool -S "$NETIF_A" | awk '/q0_resets:/ {print $2}')
sleep 3
check "and the pair is not reset meanwhile (q0_resets $resets)" \
	test "$(ethtool -S "$NETIF_A" | awk '/q0_resets:/ {print $2}')" = "$resets"
devlink health recover $DL reporter completion
check "devlink health recover brings it back" \
	test "$(reporter completion state)" = healthy -a "$(reporter completion recover)" -gt "$recovers"
check "and traffic flows" pings
devlink health set $DL reporter completion auto_recover true

# Grace period: a fault soon after a recovery is left to the user. The
# period runs from the last recovery, so the first fault comes with no
# period (recovered), the second within one.
recovers=$(reporter completion recover)
completion_fault
wait_reporter completion recover $((recovers + 1))
first=$?
devlink health set $DL reporter completion grace_period 600000
recovers=$(reporter completion recover)
completion_fault
wait_reporter completion state error
check "within the grace period a second fault is not recovered automatically (the first was)" \
	test $first = 0 -a "$(reporter completion state)" = error -a "$(reporter completion recover)" = "$recovers"
devlink health recover $DL reporter completion
devlink health set $DL reporter completion grace_period 0
check "recovered by hand, traffic flows" pings

# TX timeout: the card stops sending, the watchdog fires, 'tx' reports.
errors=$(reporter tx error) recovers=$(reporter tx recover)
harness card A stall-tx >/dev/null
fill_tx_ring $IP_B
wait_reporter tx recover $((recovers + 1))
check "a stuck TX queue: an error on 'tx', recovered" \
	test "$(reporter tx error)" -gt "$errors" -a "$(reporter tx recover)" -gt "$recovers"
check "its dump names the timeout" json_true "j['fault']['tx_timeout'] and j['fault']['queue'] == 0" \
	devlink -j health dump show $DL reporter tx
check "traffic flows after it" pings

# Lost interrupts: the health check polls, and reports to 'completion'
# with nothing to reset.
devlink health dump clear $DL reporter completion
errors=$(reporter completion error) recovers=$(reporter completion recover)
resets=$(ethtool -S "$NETIF_A" | awk '/q0_resets:/ {print $2}')
harness card A irq-drop 3 >/dev/null
ping -c 10 -i 0.3 -W 2 -q $IP_B >/dev/null 2>&1
wait_reporter completion recover $((recovers + 1))
check "lost interrupts: an error on 'completion', recovered by the poll, the pair not reset" json_true 	"j['fault']['lost_irq'] and not j['fault']['completion'] and $(reporter completion error) > $errors and $(ethtool -S "$NETIF_A" | awk '/q0_resets:/ {print $2}') == $resets" \
	devlink -j health dump show $DL reporter completion
devlink health dump clear $DL reporter completion

# The card: a command it fails, one it never answers (during an MTU
# change), then the card gone for a while and back.
errors=$(reporter card error) recovers=$(reporter card recover)
harness card A admin-fault error 1 >/dev/null
ethtool -C "$NETIF_A" rx-usecs 20 2>/dev/null
harness card A admin-fault error 0 >/dev/null
wait_reporter card recover $((recovers + 1))
check "a failed admin command: an error on 'card', nothing left to recover" json_true \
	"j['fault']['what'] == 'admin command failed' and $(reporter card error) > $errors" \
	devlink -j health dump show $DL reporter card
devlink health dump clear $DL reporter card
errors=$(reporter card error) recovers=$(reporter card recover)
harness card A admin-fault timeout 1 >/dev/null
ip link set "$NETIF_A" mtu 1400
wait_reporter card recover $((recovers + 1))
check "an unanswered admin command: an error on 'card' (function reset), recovered" \
	json_true "j['fault']['what'].startswith('admin command unanswered') and $(reporter card error) > $errors" \
	devlink -j health dump show $DL reporter card
devlink health dump clear $DL reporter card
harness card A fault all-ones >/dev/null
sleep 4.5 # the health check takes it for gone after 2.5 s of all ones
harness card A fault none >/dev/null
wait_reporter card recover $((recovers + 3))
echo "# card: errors $errors -> $(reporter card error), recoveries $recovers -> $(reporter card recover)"
check "the card gone and back: two more errors on 'card', the card reset and restored" \
	test "$(reporter card error)" -ge $((errors + 3)) -a "$(reporter card state)" = healthy
wait_carrier "$NETIF_A" 1
check "traffic flows after it, at the MTU set before" \
	eval 'pings && test "$(cat /sys/class/net/$NETIF_A/mtu)" = 1400'

dmesg_since_mark | grep -E 'WARNING|BUG|Oops|KASAN|UBSAN|lockdep|circular locking' -A20 | sed 's/^/# /'
check "no kernel warnings" dmesg_clean
ktap_finish
