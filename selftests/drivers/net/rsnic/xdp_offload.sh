#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# XDP offload (ip link set ... xdpoffload, bpftool ... offload_dev): the
# card runs the program on every frame from the wire, judged by the
# kernel's own interpreter and by what each end sees:
#  - xdp-features lists hw-offload; the program and its three maps are
#    offloaded to card A's netdev (bpftool), attached in HW mode (ip);
#  - the host writes and reads the card's maps (bpftool map update,
#    lookup, dump through the card);
#  - a fixed set of frames (xdp_offload.py) sent by B through the card,
#    and the same frames run through the same program by the kernel
#    (BPF_PROG_TEST_RUN on a host copy): the same verdicts and the same
#    telemetry map; tcpdump on A sees the passed frames and none of the
#    dropped, tcpdump on B sees the XDP_TX ones come back, MACs swapped;
#  - what the card cannot run is refused at load: a helper it does not
#    offer, named in the verifier's log; maps beyond its sizes;
#  - a replaced program runs with its own maps; a function reset (an
#    admin command the card lost) loads the program again, its maps
#    empty; detached, frames pass again; devlink reload drops it (the
#    kernel destroys what was bound to the old netdev);
#  - no kernel warnings.
# It also prints, without judging, the host's cost of a drop flood with
# the same program in native XDP and offloaded.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
for tool in clang bpftool tcpdump devlink; do
	command -v $tool >/dev/null || bail_out "$tool not installed"
done
[ -d "$KSFT/net/lib/py" ] || bail_out "no YNL library in $KSFT (qemu/build-ksft.sh)"
harness ping >/dev/null || bail_out "no harness control channel"
HERE=$(dirname "$0")
PY=$HERE/xdp_offload.py
A=$(card_addr A)
WORK=$(mktemp -d)
XDP_ABORTED=0 XDP_DROP=1 XDP_PASS=2 XDP_TX=3
PASS_PORT=7001 DROP_PORT=7002 TX_PORT=7003

cleanup() {
	kill $(jobs -p) 2>/dev/null
	harness card A admin-fault none >/dev/null
	NETIF_A=$(netif_of "$A")
	ip link set dev "$NETIF_A" xdpoffload off 2>/dev/null
	ip link set dev "$NETIF_A" xdpdrv off 2>/dev/null
	rm -rf "$WORK" /sys/fs/bpf/rsnic_xo
	net_cleanup
}
trap cleanup EXIT
mkdir -p /sys/fs/bpf/rsnic_xo

build() { # OUT [CFLAGS...]
	local out=$1
	shift
	clang -O2 -g -target bpf -I/usr/include/"$(uname -m)"-linux-gnu "$@" \
		-c "$HERE/xdp_telemetry.bpf.c" -o "$out"
}
build "$WORK/t.o" || bail_out "cannot build xdp_telemetry.bpf.c"
build "$WORK/refused.o" -DREFUSED || bail_out "cannot build xdp_telemetry.bpf.c -DREFUSED"

card_state() { harness card A xdp-state; }
# Field NAME of the card's XDP state ("ok program=1 pass=.. drop=..").
card_field() { card_state | tr ' ' '\n' | awk -F= -v n="$1" '$1 == n {print $2}'; }
# The u64 entry KEY of map NAME (of the attached program).
verdict() { seen verdicts "$1"; } # ACT
zero_verdicts() {
	local k
	for k in 0 1 2 3; do
		bpftool map update id "$(map_id verdicts)" key $(le32 $k) value 0 0 0 0 0 0 0 0 || return 1
	done
}
# The driver's ethtool -S counter xdp_offload_NAME (the card's count).
offload_stat() { ethtool -S "$NETIF_A" | awk -v n="xdp_offload_$1:" '$1 == n {print $2}'; }
mac_of() { ${2:+ip netns exec $2} cat /sys/class/net/"$1"/address; }

ktap_header 13
dmesg_mark

features=$(xdp_features)
check "xdp-features lists hw-offload ($features)" grep -qw hw-offload <<<"$features"

ip link set dev "$NETIF_A" xdpoffload obj "$WORK/t.o" sec xdp 2>"$WORK/err" || cat "$WORK/err" | sed 's/^/# /'
mode=$(ip -j -d link show "$NETIF_A" | python3 -c 'import json,sys; x=json.load(sys.stdin)[0].get("xdp",{}); print(x.get("mode"), x.get("prog",{}).get("name"))')
prog=$(bpftool prog show name xdp_telemetry | head -1)
offloaded_maps=$(bpftool map show | grep -cE "name (flows|verdicts|cfg) .*offloaded_to $NETIF_A")
echo "# $prog"
check "attached in HW mode ($mode), the program and its 3 maps offloaded to $NETIF_A ($offloaded_maps)" \
	test "$mode" = "3 xdp_telemetry" -a "$offloaded_maps" = 3 -a -n "$(grep "offloaded_to $NETIF_A" <<<"$prog")"

ok=true
map_set cfg 0 $DROP_PORT && map_set cfg 1 $TX_PORT || ok=false
expect "cfg read back from the card" "$("$PY" dump id "$(map_id cfg)" | tr '\n' ' ')" \
	"00000000=$(printf '%02x%02x0000' $((DROP_PORT & 255)) $((DROP_PORT >> 8))) 01000000=$(printf '%02x%02x0000' $((TX_PORT & 255)) $((TX_PORT >> 8))) " || ok=false
expect "verdicts entries" "$("$PY" dump id "$(map_id verdicts)" | wc -l)" 4 || ok=false
check "the host writes the card's maps and reads them back (bpftool through the card)" $ok

# The frames, through the card and through the kernel's interpreter.
kinds=$("$PY" frames "$WORK/frames" "$(mac_of "$NETIF_B" $NS)" "$(mac_of "$NETIF_A")" $IP_B $IP_A)
echo "# frames: $kinds"
zero_verdicts
bpftool map delete id "$(map_id flows)" key 0 0 0 0 0 0 0 0 2>/dev/null
e_drop=$(offload_stat drop) e_tx=$(offload_stat tx) e_pass=$(offload_stat pass)
capture "" "$NETIF_A" 1000 "udp and dst host $IP_A and dst portrange $PASS_PORT-$TX_PORT" "$WORK/cap_a"
cap_a=$!
# What comes back to B from A's MAC: only a frame the card turned
# around (B's own frames carry B's MAC, and A answers nothing with UDP).
capture $NS "$NETIF_B" 1000 "udp and ether src $(mac_of "$NETIF_A") and dst port $TX_PORT" "$WORK/cap_b"
cap_b=$!
ip netns exec $NS "$PY" send "$NETIF_B" "$WORK/frames"
sleep 1
capture_stop $cap_a $cap_b
card_verdicts="$(verdict $XDP_ABORTED) $(verdict $XDP_DROP) $(verdict $XDP_PASS) $(verdict $XDP_TX)"
ethtool_counts="$(($(offload_stat drop) - e_drop)) $(($(offload_stat tx) - e_tx)) $(($(offload_stat pass) - e_pass))"
"$PY" dump id "$(map_id flows)" >"$WORK/card_flows"

# The kernel's copy: the same object without offload, its own maps.
sysctl -qw net.core.bpf_jit_enable=0 2>/dev/null && jit=interpreter || jit="JIT (always on)"
bpftool prog load "$WORK/t.o" /sys/fs/bpf/rsnic_xo/sw type xdp pinmaps /sys/fs/bpf/rsnic_xo/swmaps ||
	echo "# host copy not loaded"
bpftool map update pinned /sys/fs/bpf/rsnic_xo/swmaps/cfg key $(le32 0) value $(le32 $DROP_PORT)
bpftool map update pinned /sys/fs/bpf/rsnic_xo/swmaps/cfg key $(le32 1) value $(le32 $TX_PORT)
rets=
for f in "$WORK"/frames/*.bin; do
	rets="$rets $(bpftool prog run pinned /sys/fs/bpf/rsnic_xo/sw data_in "$f" 2>&1 | awk '/Return value/ {print $3}' | tr -d ,)"
done
sysctl -qw net.core.bpf_jit_enable=1 2>/dev/null
sw_verdicts=$("$PY" dump pinned /sys/fs/bpf/rsnic_xo/swmaps/verdicts | python3 -c '
import sys
print(" ".join(str(int.from_bytes(bytes.fromhex(l.split("=")[1].strip()), "little")) for l in sys.stdin))')
"$PY" dump pinned /sys/fs/bpf/rsnic_xo/swmaps/flows >"$WORK/sw_flows"
echo "# kernel ($jit) per frame:$rets"
echo "# verdicts (aborted drop pass tx): card $card_verdicts, kernel $sw_verdicts"
ok=true
read -r c_ab c_drop c_pass c_tx <<<"$card_verdicts"
read -r s_ab s_drop s_pass s_tx <<<"$sw_verdicts"
expect "kernel's verdicts: aborted drop tx" "$s_ab $s_drop $s_tx" "0 5 5" || ok=false
expect "card's verdicts: aborted drop tx" "$c_ab $c_drop $c_tx" "$s_ab $s_drop $s_tx" || ok=false
# The card also passed whatever else B sent meanwhile (neighbour
# discovery): at least the kernel's count.
expect_num "card's passes (kernel's: $s_pass)" "$c_pass" -ge "$s_pass" || ok=false
# The card's own counts (ethtool -S), against what the program counted.
read -r e_drop e_tx e_pass <<<"$ethtool_counts"
expect "ethtool -S xdp_offload_drop, _tx" "$e_drop $e_tx" "$c_drop $c_tx" || ok=false
expect_num "ethtool -S xdp_offload_pass (program: $c_pass)" "$e_pass" -ge "$c_pass" || ok=false
expect "kernel's return value per frame" "$rets" " $(cat "$WORK/expected")" || ok=false
check "the card's verdicts are the kernel interpreter's on the same frames, and ethtool -S counts them" $ok

echo "# telemetry (flows): $(wc -l <"$WORK/card_flows") on the card, $(wc -l <"$WORK/sw_flows") in the kernel"
check "the card's telemetry map equals the kernel's, entry by entry" \
	eval 'test -s "$WORK/sw_flows" && diff "$WORK/card_flows" "$WORK/sw_flows" | sed "s/^/# /" && cmp -s "$WORK/card_flows" "$WORK/sw_flows"'

to_a() { grep -c "> $IP_A.$1: " "$WORK/cap_a"; } # PORT
back=$(grep -c "$IP_B.5001 > $IP_A.$TX_PORT: " "$WORK/cap_b")
echo "# tcpdump on A: $(to_a $PASS_PORT) to $PASS_PORT, $(to_a $DROP_PORT) to $DROP_PORT (IP options), $(to_a $TX_PORT) to $TX_PORT; on B: $back back"
check "tcpdump: A got the 22 passed and the 2 unmatched, none dropped or sent back; B got the 5 back" \
	test "$(to_a $PASS_PORT) $(to_a $DROP_PORT) $(to_a $TX_PORT) $back" = "22 2 0 5"

# A helper the card does not offer: refused at load, named in the log.
bpftool -d prog load "$WORK/refused.o" /sys/fs/bpf/rsnic_xo/refused offload_dev "$NETIF_A" >"$WORK/log" 2>&1
rc=$?
grep "cannot run" "$WORK/log" | sed 's/^/# /'
check "a program calling bpf_xdp_adjust_head is refused, the verifier's log names it" \
	test $rc != 0 -a ! -e /sys/fs/bpf/rsnic_xo/refused -a -n "$(grep 'cannot run helper bpf_xdp_adjust_head (#44)' "$WORK/log")"

# Maps beyond the card: refused with the reason in the kernel log; a
# map it holds is made and freed.
ok=true
for spec in "key 8 value 8 entries 100000" "key 8 value 512 entries 16" "key 72 value 8 entries 16"; do
	if bpftool map create /sys/fs/bpf/rsnic_xo/big type hash $spec name big offload_dev "$NETIF_A" 2>/dev/null; then
		echo "# hash map $spec accepted"
		ok=false
		rm -f /sys/fs/bpf/rsnic_xo/big
	fi
done
expect "refusals in the kernel log" "$(dmesg_since_mark | grep -c 'offloaded map refused: the card takes')" 3 || ok=false
bpftool map create /sys/fs/bpf/rsnic_xo/fits type hash key 64 value 256 entries 65536 name fits offload_dev "$NETIF_A" || ok=false
bpftool map update pinned /sys/fs/bpf/rsnic_xo/fits key $(seq 1 64) value $(seq 1 256 | awk '{print $1 % 256}') || ok=false
expect "its element" "$(bpftool map dump pinned /sys/fs/bpf/rsnic_xo/fits | grep -c '^key:')" 1 || ok=false
rm -f /sys/fs/bpf/rsnic_xo/fits
check "maps beyond the card's sizes refused (entries, value, key), the largest it takes works" $ok

# Replaced by a second program loaded for the card: it runs, with maps
# of its own; the first one (held by nothing else) goes with its maps.
old_vmap=$(map_id verdicts)
ok=true
bpftool prog load "$WORK/t.o" /sys/fs/bpf/rsnic_xo/second offload_dev "$NETIF_A" || ok=false
ip -force link set dev "$NETIF_A" xdpoffload pinned /sys/fs/bpf/rsnic_xo/second || ok=false
ping -c 3 -W 2 -q $IP_B >/dev/null || ok=false
new_pass=$(verdict $XDP_PASS)
echo "# second program's passes: $new_pass"
expect_num "second program's passes" "$new_pass" -ge 3 || ok=false
bpftool map show id "$old_vmap" >/dev/null 2>&1 && { echo "# the first program's map $old_vmap is still there"; ok=false; }
expect "program on the card" "$(card_field program)" 1 || ok=false
check "a second offloaded program replaces the first and runs with its own maps; the first's are freed" $ok

# A function reset (an admin command the card lost): the card forgets
# program and maps; the driver loads the program again, maps empty.
ok=true
map_set cfg 0 $DROP_PORT
harness card A admin-fault timeout 1 >/dev/null
ip link set "$NETIF_A" mtu 1400
harness card A admin-fault none >/dev/null
wait_until 100 eval 'dmesg_since_mark | grep -q "resetting the function"' || { echo "# no function reset"; ok=false; }
expect "program on the card after the reset" "$(card_field program)" 1 || ok=false
expect "cfg after the reset" "$("$PY" dump id "$(map_id cfg)" | tr '\n' ' ')" "00000000=00000000 01000000=00000000 " || ok=false
map_set cfg 0 $DROP_PORT || ok=false
d0=$(verdict $XDP_DROP)
ip netns exec $NS "$PY" send "$NETIF_B" "$WORK/frames"
wait_until 50 eval '[ "$(verdict $XDP_DROP)" -ge $((d0 + 5)) ]' || ok=false
echo "# drops after the reset: $d0 -> $(verdict $XDP_DROP)"
ip link set "$NETIF_A" mtu 1500
check "after a function reset the program runs again, its maps empty, and drops what cfg says" $ok

# Native XDP against the offload, same program, same drop flood: what
# reaches the host. Printed, not judged (a TCG VM's numbers).
net_rx() { awk '/NET_RX:/ {for (i = 2; i <= NF; i++) n += $i} END {print n}' /proc/softirqs; }
softirq_ticks() { awk '/^cpu / {print $8}' /proc/stat; }
flood() { # prints "rx-packets NET_RX-softirqs softirq-ticks sent"
	local q0 n0 s0 sent
	q0=$(qstats device | awk '{print $1}') n0=$(net_rx) s0=$(softirq_ticks)
	sent=$(ip netns exec $NS "$GFT_PY" udp-blast $IP_A $DROP_PORT 2 2000 64 5000 | awk '{print $1}')
	echo "$(($(qstats device | awk '{print $1}') - q0)) $(($(net_rx) - n0)) $(($(softirq_ticks) - s0)) $sent"
}
read -r off_rx off_nr off_si off_sent < <(flood)
ip link set dev "$NETIF_A" xdpoffload off
ip link set dev "$NETIF_A" xdpdrv obj "$WORK/t.o" sec xdp &&
	bpftool map update id "$(map_id cfg)" key $(le32 0) value $(le32 $DROP_PORT)
read -r nat_rx nat_nr nat_si nat_sent < <(flood)
ip link set dev "$NETIF_A" xdpdrv off
echo "# drop flood, 2 s (NET_RX softirqs and softirq ticks count both cards): offloaded: $off_sent sent, $off_rx reached the host, $off_nr NET_RX, $off_si ticks; native: $nat_sent sent, $nat_rx reached the host, $nat_nr NET_RX, $nat_si ticks"

# Detached: the card runs nothing, the frames pass.
capture "" "$NETIF_A" 1000 "udp and dst host $IP_A and dst port $DROP_PORT" "$WORK/cap_off"
cap=$!
ip netns exec $NS "$PY" send "$NETIF_B" "$WORK/frames"
sleep 1
capture_stop $cap
check "detached: the card runs no program, A gets all 7 frames to $DROP_PORT ($(grep -c "$IP_A.$DROP_PORT: " "$WORK/cap_off"))" \
	test "$(card_field program) $(grep -c "$IP_A.$DROP_PORT: " "$WORK/cap_off")" = "0 7"

# devlink reload: the netdev the program was bound to goes, and with it
# the kernel's offload state; the card forgets it in the function reset.
ok=true
ip link set dev "$NETIF_A" xdpoffload pinned /sys/fs/bpf/rsnic_xo/second || ok=false
prog_id=$(bpftool prog show pinned /sys/fs/bpf/rsnic_xo/second | awk -F: 'NR == 1 {print $1}')
devlink dev reload pci/$A action driver_reinit >/dev/null || ok=false
wait_until 100 eval '[ -n "$(netif_of "$A")" ]' || ok=false
NETIF_A=$(netif_of "$A")
expect "program on the card" "$(card_field program)" 0 || ok=false
expect "XDP on the new netdev" "$(ip -j -d link show "$NETIF_A" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0].get("xdp",{}).get("mode", "none"))')" none || ok=false
expect "the program's device" "$(bpftool prog show id "$prog_id" | grep -c offloaded_to)" 0 || ok=false
ip link set dev "$NETIF_A" xdpoffload pinned /sys/fs/bpf/rsnic_xo/second 2>/dev/null && { echo "# orphaned program attached"; ok=false; }
check "devlink reload drops the program: orphaned in the kernel, gone from the card" $ok

dmesg_since_mark | grep -E 'WARNING|BUG|Oops|KASAN|UBSAN|lockdep|circular locking' -A20 | sed 's/^/# /'
check "no kernel warnings" dmesg_clean
ktap_finish
