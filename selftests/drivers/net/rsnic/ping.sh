#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# IPv4 and IPv6 between card A and card B (netns "remote"), both
# directions, and a 64 KiB ping over MTU 9000.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
trap net_cleanup EXIT

ktap_header 5
check "IPv4 A -> remote" ping -c 3 -W 2 -q $IP_B
check "IPv4 remote -> A" ip netns exec $NS ping -c 3 -W 2 -q $IP_A
check "IPv6 A -> remote (neighbour discovery over multicast)" ping -6 -c 3 -W 2 -q $IP6_B
check "IPv6 remote -> A" ip netns exec $NS ping -6 -c 3 -W 2 -q $IP6_A
ip link set "$NETIF_A" mtu 9000
ip -n $NS link set "$NETIF_B" mtu 9000
wait_carrier "$NETIF_A" 1
check "64 KiB ping at MTU 9000" ping -c 3 -W 3 -q -s 65000 $IP_B
ktap_finish
