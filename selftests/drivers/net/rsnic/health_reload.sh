#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# devlink health across `devlink dev reload`, which runs under the devlink
# instance lock the core holds (as C drivers have it):
#  - the reporters are the function's, made at probe: a reload keeps
#    them, counts and all, as the core keeps the instance's own counters;
#  - a queue pair fault raised while a reload is under way (its report
#    waits for the instance lock) neither holds the reload up nor is
#    lost: it is reported once the lock is free;
#  - a fault on the new device is reported and recovered as before.
# It runs on the debug kernel, where lockdep watches the order in which
# the reload, the reports and their recoveries take their locks.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || bail_out "no harness control channel"
command -v devlink >/dev/null || bail_out "devlink (iproute2) not installed"
A=$(card_addr A)
DL=pci/$A
channels=$(channels_in_use)
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	harness card A cqe-fault index 0 >/dev/null
	NETIF_A=$(netif_of "$A")
	ethtool -L "$NETIF_A" combined "$channels" 2>/dev/null
	net_cleanup
}
trap cleanup EXIT

reporter() { health_field "$DL" "$@"; }
# readdress: the stack's addresses go with a reloaded device.
readdress() {
	NETIF_A=$(netif_of "$A")
	ip addr add "$IP_A/24" dev "$NETIF_A"
	wait_carrier "$NETIF_A" 1
}

ktap_header 6
# One queue pair: the faulty one is the one every frame uses. A reload
# keeps it.
ethtool -L "$NETIF_A" combined 1
for r in tx completion card; do devlink health dump clear $DL reporter $r; done

recovers=$(reporter completion recover)
completion_fault
completion_fault
wait_health "$DL" completion recover $((recovers + 1))
before=$(reporter completion error)
check "faults before the reloads: counted ($before) and recovered" \
	test "$before" -ge 2 -a "$(reporter completion state)" = healthy

# Three reloads, each begun while a bad completion is on its way: its
# report reaches the core while the reload holds the instance lock, or
# is handed to the function's watch while the old device goes.
limit=$((60 * KERNEL_FACTOR))
slowest=0 hung=0
for i in 1 2 3; do
	harness card A cqe-fault index 1 >/dev/null
	ping -c 40 -i 0.02 -W 1 -q $IP_B >/dev/null 2>&1 &
	sleep 0.$((i * 2))
	start=$SECONDS
	timeout $limit devlink dev reload $DL action driver_reinit >/dev/null || hung=$((hung + 1))
	took=$((SECONDS - start))
	[ $took -gt $slowest ] && slowest=$took
	wait
	harness card A cqe-fault index 0 >/dev/null
	readdress
done
echo "# 3 reloads with a fault in flight: the slowest took ${slowest} s (limit $limit s)"
check_eq "each reload finished in time, none failed" "$hung" 0

wait_health "$DL" completion state healthy
after=$(reporter completion error)
echo "# completion errors: $before before the reloads, $after after"
check "the reporters outlived the reloads: counts kept and grown ($before -> $after)" \
	test "$after" -gt "$before"
check "reporters tx, completion, card and rdma, all healthy" json_true \
	"sorted(r['reporter'] for r in j['health']['$DL']) == ['card', 'completion', 'rdma', 'tx'] and all(r['state'] == 'healthy' for r in j['health']['$DL'])" \
	devlink -j health show $DL

recovers=$(reporter completion recover)
completion_fault
wait_health "$DL" completion recover $((recovers + 1))
check "a fault on the new device: reported and recovered ($recovers -> $(reporter completion recover))" \
	test "$(reporter completion recover)" -gt "$recovers" -a "$(reporter completion state)" = healthy
check "traffic flows on the new device" ping -c 3 -W 2 -q $IP_B

ktap_finish
