#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The GFT's debugfs rule interface: add, list, delete, flush; every class
# of malformed write is refused with EINVAL and a logged reason, and
# leaves the rules, the generation and the flows as they were.

source "$(dirname "$0")/lib.sh"
gft_setup
trap gft_cleanup EXIT
dmesg_mark

ENCAP="encap_id=42 outer_smac=02:00:00:00:00:01 outer_dmac=02:00:00:00:00:02 outer_sip=10.0.0.1 outer_dip=10.0.0.2"
BAD=(
	"add"                                   # no dir, no action
	"bogus"                                 # unknown command
	"add dir=tx"                            # no action
	"add action=allow"                      # no dir
	"add dir=up action=allow"               # bad dir
	"add dir=tx action=allow colour=red"    # unknown key
	"add dir=tx dir=rx action=allow"        # key twice
	"add dir=tx action=allow prio"          # not key=value
	"add dir=tx action=allow prio="         # empty value
	"add dir=tx action=allow prio=70000"    # out of range
	"add dir=tx action=allow id=0"          # id out of range
	"add dir=tx action=allow id=2000000000" # id out of range
	"add dir=tx action=allow src=10.0.0.300"
	"add dir=tx action=allow src=10.0.0.0/33"
	"add dir=tx action=allow dst=fd00::/129"
	"add dir=tx action=allow src=10.0.0.1 dst=fd00::1"
	"add dir=tx action=allow dport=80"      # port without tcp/udp
	"add dir=tx action=allow proto=udp dport=65536"
	"add dir=tx action=allow proto=300"
	"add dir=tx action=allow tunnel=16777216"
	"add dir=tx action=teleport"
	"add dir=tx action=allow,drop"
	"add dir=tx action=drop,meter rate=1m"
	"add dir=tx action=vxlan_encap encap_id=42"
	"add dir=tx action=vxlan_encap,nvgre_encap $ENCAP"
	"add dir=tx action=vxlan_encap ${ENCAP/42/16777216}"
	"add dir=tx action=vxlan_encap ${ENCAP/02:00:00:00:00:01/02:00:00:00:00}"
	"add dir=tx action=vxlan_encap ${ENCAP/outer_dip=10.0.0.2/outer_dip=fd00::2}"
	"add dir=tx action=allow $ENCAP"         # encap params without encap
	"add dir=tx action=nat"
	"add dir=tx action=nat nat_dport=80"    # port NAT without tcp/udp
	"add dir=tx action=nat src=10.0.0.0/8 nat_sip=fd00::1"
	"add dir=tx action=vlan_push"
	"add dir=tx action=vlan_push vlan=4095"
	"add dir=tx action=allow vlan=5"
	"add dir=tx action=meter"
	"add dir=tx action=meter rate=0"
	"add dir=tx action=meter rate=1m burst=0"
	"add dir=tx action=allow rate=1m"
	"del"
	"del x"
	"del 1 2"
	"flush now"
)

ktap_header 17
check "empty at start" test -z "$(cat "$GFT/rules")"
check "add a rule" test "$(gft_w rules "add id=7 prio=10 dir=tx proto=udp dst=10.99.0.0/24 dport=5000 action=allow")" = OK
check "add an encap+vlan rule" test "$(gft_w rules "add prio=20 dir=tx dst=10.98.0.0/16 action=vlan_push,vxlan_encap vlan=5 $ENCAP")" = OK
check "add a meter rule (IPv6)" test "$(gft_w rules "add prio=5 dir=rx proto=tcp src=fd00::/8 action=meter rate=10m burst=20000")" = OK
# Ids not given are assigned in turn, above every id used since the
# driver loaded (a test before this one in the VM may have used some): the
# encap rule's, then the meter rule's.
encap_id=$(awk '$2 == "prio=20" {sub("id=", "", $1); print $1}' "$GFT/rules")
meter_id=$(awk '$2 == "prio=5" {sub("id=", "", $1); print $1}' "$GFT/rules")
echo "# ids assigned: $encap_id, $meter_id"
check "listed in priority order with ids, assigned in turn" \
	test "$(awk '{print $1, $2}' "$GFT/rules" | tr '\n' ' ')" = "id=$meter_id prio=5 id=7 prio=10 id=$encap_id prio=20 " -a \
	"$encap_id" -gt 7 -a "$meter_id" = "$((encap_id + 1))"
# A listed rule, minus its id and hit count, adds again as the same rule.
line=$(grep "^id=$encap_id " "$GFT/rules" | sed "s/^id=$encap_id //; s/ hits=[0-9]*\$//")
check "a listed rule round-trips" test "$(gft_w rules "add id=20 $line")" = OK -a \
	"$(grep '^id=20 ' "$GFT/rules" | sed 's/^id=20 //; s/ hits=.*//')" = "$line"
check "duplicate id refused" test "$(gft_w rules "add id=7 dir=tx action=drop")" = EINVAL

before=$(cat "$GFT/rules")
gen=$(gft_stat generation)
# refused_all FILE TEXT [FILE TEXT]...: every write refused with
# EINVAL (one Python start for all); names each one that was not.
refused_all() {
	local -a w=("$@") res
	local i bad=0
	mapfile -t res < <("$GFT_PY" write-many "${w[@]}")
	for ((i = 0; i < ${#w[@]} / 2; i++)); do
		[ "${res[i]:-}" = EINVAL ] && continue
		echo "# ${w[2 * i]##*/} '${w[2 * i + 1]}': ${res[i]:-no result}"
		bad=$((bad + 1))
	done
	[ $bad -eq 0 ]
}
writes=()
for b in "${BAD[@]}"; do writes+=("$GFT/rules" "$b"); done
check "${#BAD[@]} malformed rules refused with EINVAL" refused_all "${writes[@]}"
r1=$("$GFT_PY" write "$GFT/rules" "add dir=tx action=allow prio=$(printf '%02000d' 1)")
r2=$("$GFT_PY" write-hex "$GFT/rules" 616464206469723d747820616374696f6e3dff)
r3=$("$GFT_PY" write "$GFT/rules" "")
check_eq "oversized, non-UTF-8 and empty writes refused" "$r1$r2$r3" EINVALEINVALEINVAL
check "rules and generation unchanged" test "$(cat "$GFT/rules")" = "$before" -a "$(gft_stat generation)" = "$gen"
check "each refusal logged with its reason" test "$(dmesg_since_mark | grep -c 'gft rules:\|gft: write of')" -ge ${#BAD[@]}
check "del of a missing id is ENOENT" test "$(gft_w rules "del 99")" = ENOENT

writes=()
for b in "del" "del dir=tx" "del dir=tx proto=udp src=10.0.0.1" "del dir=tx proto=udp src=10.0.0.1 dst=fd00::1" \
	"del dir=tx proto=udp src=1.2.3.4 dst=1.2.3.5 sport=70000" "flush all" "add x"; do
	writes+=("$GFT/flows" "$b")
done
for f in max_flows:0 max_flows:4194305 max_flows:abc fail_installs:1000001 idle_timeout_ms:50 idle_timeout_ms:-1 \
	exception_rate:-1 exception_rate:4294967296 exception_burst:0 exception_burst:65537; do
	writes+=("$GFT/${f%%:*}" "${f#*:}")
done
check "malformed flows, max_flows, fail_installs, idle_timeout_ms, exception_rate/burst writes refused" refused_all "${writes[@]}"
check "del by id" test "$(gft_w rules "del $meter_id")" = OK -a "$(grep -c . "$GFT/rules")" = 3
# Ids not given go round: after the largest, 2^30, from 1 again (as
# idr_alloc_cyclic), instead of offering 2^30 again, which is in use.
r1=$(gft_w rules "add id=1073741823 prio=30 dir=tx action=allow")
r2=$(gft_w rules "add prio=31 dir=tx action=allow")
r3=$(gft_w rules "add prio=32 dir=tx action=allow")
check_eq "ids not given go round after 2^30" \
	"$r1 $r2 $r3 $(awk '$2 == "prio=31" || $2 == "prio=32" {print $1}' "$GFT/rules" | tr '\n' ' ')" \
	"OK OK OK id=1073741824 id=1 "
check "flush empties the table" test "$(gft_w rules flush)" = OK -a -z "$(cat "$GFT/rules")"
check "no kernel warning" dmesg_clean
ktap_finish
