#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Link basics of the synthetic NIC: up/down, carrier follows the cable,
# MAC address change, MTU limits.

source "$(dirname "$0")/lib.sh"
net_setup || { echo "# no carrier after set-up"; }
trap net_cleanup EXIT

ktap_header 11
check "carrier up on both ends after set-up" wait_carrier "$NETIF_A" 1
check_eq "operstate is up" "$(cat /sys/class/net/$NETIF_A/operstate)" up
check_eq "speed is 100000 Mb/s" "$(cat /sys/class/net/$NETIF_A/speed 2>/dev/null)" 100000

ip link set "$NETIF_A" down
check_eq "down: no carrier, operstate down" "$(cat /sys/class/net/$NETIF_A/operstate)" down
ip link set "$NETIF_A" up
check "up again: carrier back" wait_carrier "$NETIF_A" 1

dmesg_mark
harness cable down >/dev/null
ok=true
wait_carrier "$NETIF_A" 0 || { echo "# $NETIF_A kept its carrier"; ok=false; }
wait_carrier "$NETIF_B" 0 $NS || { echo "# $NETIF_B kept its carrier"; ok=false; }
check "cable unplugged: carrier down on both ends" $ok
harness cable up >/dev/null
ok=true
wait_carrier "$NETIF_A" 1 || { echo "# $NETIF_A has no carrier"; ok=false; }
wait_carrier "$NETIF_B" 1 $NS || { echo "# $NETIF_B has no carrier"; ok=false; }
check "cable replugged: carrier up on both ends" $ok
check_eq "each link change logged once" "$(dmesg_since_mark | grep -c "$NETIF_A: link \(up\|down\)")" 2

old=$(cat /sys/class/net/$NETIF_A/address)
ip link set "$NETIF_A" address 02:52:53:00:00:aa
ok=true
expect address "$(cat /sys/class/net/$NETIF_A/address)" 02:52:53:00:00:aa || ok=false
ip neigh flush all
ip -n $NS neigh flush all
ping -c 2 -W 2 -q $IP_B >/dev/null || { echo "# no ping with the new MAC"; ok=false; }
ip -n $NS neigh show | grep -q 02:52:53:00:00:aa || { echo "# remote did not learn the new MAC"; ok=false; }
ip link set "$NETIF_A" address "$old"
check "MAC change: the card receives for the new address" $ok

ok=true
for mtu in 68 1500 9000; do
	ip link set "$NETIF_A" mtu $mtu || ok=false
	expect MTU "$(cat /sys/class/net/$NETIF_A/mtu)" $mtu || ok=false
done
check "MTU 68, 1500, 9000 accepted" $ok
ok=true
for mtu in 67 9001; do
	ip link set "$NETIF_A" mtu $mtu 2>/dev/null && { echo "# MTU $mtu accepted"; ok=false; }
done
expect MTU "$(cat /sys/class/net/$NETIF_A/mtu)" 9000 || ok=false
check "MTU 67 and 9001 rejected, MTU unchanged" $ok
ktap_finish
