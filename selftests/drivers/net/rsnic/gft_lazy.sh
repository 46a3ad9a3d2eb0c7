#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lazy re-evaluation: a rule change bumps the policy generation; an
# existing flow keeps its place in the card but its next packet is an
# exception (stale generation), evaluated again under the new rules, and
# the flow is updated in place.

source "$(dirname "$0")/lib.sh"
gft_setup
trap gft_cleanup EXIT
dmesg_mark

# Sends 5 datagrams from port 41000 to B:5020; prints how many arrived.
burst() { udp_burst 5020 5 41000; }
flow() { drv_flow_field "$1" dir=tx proto=udp "sport=41000 dport=5020"; }

ktap_header 9
check "allow rule added" test "$(gft_w rules "add id=1 prio=10 dir=tx proto=udp dport=5020 action=allow")" = OK
check_eq "5 of 5 arrive under allow" "$(burst)" 5
gen1=$(flow gen)
check "the flow is the allow rule's, of the current generation" \
	test "$(flow rule)" = 1 -a "$gen1" = "$(gft_stat generation)"

misses0=$(gft_stat misses)
check "a higher-priority drop rule added" test "$(gft_w rules "add id=2 prio=5 dir=tx proto=udp dport=5020 action=drop")" = OK
# The stale datagram alone, the other four once the card holds the flow
# re-evaluated (the drop action, 0x1, and the new generation).
check "0 of 5 arrive after the change" test "$(udp_burst_settled 5020 5 41000 dir=tx proto=17 \
	"sport=41000 dport=5020" "actions=0x1 gen=$(gft_stat generation) ")" = 0
echo "# flow now: rule=$(flow rule) gen=$(flow gen) (was gen $gen1)"
check "the same flow, re-evaluated: drop rule, new generation, one stale miss" \
	test "$(drv_flows_with dir=tx proto=udp "sport=41000 dport=5020")" = 1 -a "$(flow rule)" = 2 -a \
	"$(flow gen)" = "$(gft_stat generation)" -a "$(flow gen)" -gt "$gen1" -a \
	"$(($(gft_stat misses) - misses0))" = 1
check "the card holds it with the drop action (0x1) and the new generation" \
	test "$(card_flows_with dir=tx proto=17 "sport=41000 dport=5020" "actions=0x1 gen=$(flow gen) ")" = 1
check "drop rule deleted: 5 of 5 arrive again" test "$(gft_w rules "del 2")$(burst)" = OK5
check "the flow is the allow rule's again" test "$(flow rule)" = 1 -a "$(flow gen)" = "$(gft_stat generation)"
ktap_finish
