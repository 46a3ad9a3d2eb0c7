#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Completion time stamps on card A's RDMA device (rdma_timestamp.py,
# pyverbs), against the card's PTP hardware clock as linuxptp and the
# kernel's PHC interface read it: the device sits under the PF, whose
# PHC is the one `ethtool -T` names; it reports a 64-bit nanosecond
# clock; a SEND's send and receive completions (raw and wall-clock
# stamps) are stamped between two PHC reads around it, and 50 ms apart
# for SENDs 50 ms apart; after phc_ctl sets the clock to 1000 s the
# stamps follow it; ibv_query_rt_values_ex reads the same clock.

source "$(dirname "$0")/lib.sh"
pyverbs_card_a_setup
TS=$(dirname "$0")/rdma_timestamp.py
trap 'phc_ctl "$PHC_A" set >/dev/null 2>&1; net_cleanup' EXIT

# The PHC card A's netdev names (`ethtool -T`).
PHC_A=/dev/ptp$(ethtool -T "$NETIF_A" | awk -F': ' '/provider index|PTP Hardware Clock/ {print $2}')
under=$(basename "$(ls -d /sys/class/infiniband/"$IB_A"/device/ptp/ptp* 2>/dev/null | head -n1)")
echo "# $IB_A's device/ptp: ${under:-none}; $NETIF_A's PHC: $PHC_A"

ktap_header 6
check "the RDMA device sits under card A's PF, whose PHC its netdev names" \
	test -n "$under" -a "/dev/$under" = "$PHC_A" -a \
	"$(basename "$(readlink -f /sys/class/infiniband/"$IB_A"/device)")" = "$(card_addr A)"
check "query_device_ex: a 64-bit time stamp mask, a 1 GHz (nanosecond) clock" \
	timeout 60 python3 "$TS" caps "$IB_A" "$GID_A"
check "a SEND's completions are stamped between the PHC reads around it, 50 ms apart for SENDs 50 ms apart" \
	timeout 60 python3 "$TS" stamps "$IB_A" "$GID_A"
phc_ctl "$PHC_A" set 1000 >/dev/null
check "after phc_ctl set 1000: the stamps follow the clock (below 1100 s)" \
	timeout 60 python3 "$TS" stamps "$IB_A" "$GID_A" 1100
check "ibv_query_rt_values_ex reads the card's clock; an unknown mask bit is EINVAL" \
	timeout 60 python3 "$TS" rt "$IB_A" "$GID_A"
check "no kernel warnings" dmesg_clean
ktap_finish
