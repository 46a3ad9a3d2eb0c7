#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Zero-copy TX, judged by the kernel rather than by the driver: the
# kernel's own MSG_ZEROCOPY test program (tools/testing/selftests/net/
# msg_zerocopy.c, from the tree the running kernel was built from) sends
# TCP from card A to card B with MSG_ZEROCOPY and -Z 1, so it fails when
# any completion carries SO_EE_CODE_ZEROCOPY_COPIED: the kernel sets that
# when the frame's user pages were copied on the way to the wire (no
# scatter-gather, or a driver that linearises the skb). The driver maps
# the user pages themselves for the card, so every send must complete as
# zero copy, over IPv4 and IPv6 (TSO), and B must receive what A sent.
# The control: with scatter-gather off the same run must report copies,
# which shows the checker sees them on this path. Only some of its sends
# are reported: a skb of one segment is linearised before the driver
# (skb_copy_ubufs marks the send copied), but a GSO skb is cut into
# copied segments by skb_segment's no-SG path, which does not mark it,
# so which kind the last completion was (msg_zerocopy's "zc=") varies.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
command -v clang >/dev/null || bail_out "clang not installed"
variant=normal
is_debug_kernel && variant=debug
SRC=/rsnic-cache/kernel/$variant/tools/testing/selftests/net/msg_zerocopy.c
[ -f "$SRC" ] || bail_out "no $SRC"
WORK=$(mktemp -d)
BIN=$WORK/msg_zerocopy
clang -O2 -w -o "$BIN" "$SRC" || bail_out "cannot build msg_zerocopy.c"
PORT=5611
# Room for the completion notifications (as the kernel's msg_zerocopy.sh).
optmem=$(sysctl -n net.core.optmem_max)
sysctl -wq net.core.optmem_max=1000000
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	ethtool -K "$NETIF_A" sg on >/dev/null 2>&1
	sysctl -wq net.core.optmem_max="$optmem"
	rm -rf "$WORK"
	net_cleanup
}
trap cleanup EXIT

# Runs one 2 s MSG_ZEROCOPY TCP transfer from A to B (-4 or -6) expecting
# zero copy; leaves the sender's and the receiver's summary lines in
# $WORK/tx and $WORK/rx and returns the sender's exit status.
transfer() { # -4|-6 SRC DST
	ip netns exec $NS "$BIN" "$1" -p $PORT -t 3 -S "$2" -D "$3" -r tcp 2>"$WORK/rx" &
	local rx=$!
	wait_listening tcp $PORT || { kill $rx; return 1; }
	"$BIN" "$1" -p $PORT -t 2 -S "$2" -D "$3" -z -Z 1 tcp 2>"$WORK/tx"
	local status=$?
	wait $rx
	grep -h -m1 "^serr" "$WORK/tx" | sed 's/^/# first copy seen: /'
	grep -h "^[tr]x=" "$WORK/tx" "$WORK/rx" | sed 's/^/# /'
	return $status
}
# "zc=y" with completions, and B received as many MB as A sent.
all_zerocopy() {
	local tx_mb rx_mb
	grep -q "txc=[1-9][0-9]* zc=y" "$WORK/tx" || return 1
	tx_mb=$(sed -n 's/^tx=[0-9]* (\([0-9]*\) MB).*/\1/p' "$WORK/tx")
	rx_mb=$(sed -n 's/^rx=[0-9]* (\([0-9]*\) MB).*/\1/p' "$WORK/rx")
	[ -n "$tx_mb" ] && [ "$tx_mb" -gt 0 ] && [ "$tx_mb" = "$rx_mb" ]
}
# At least one completion said "copied" (msg_zerocopy prints this line
# when the first such completion breaks -Z 1).
copies_reported() { grep -q "^serr: ee_code: 0 != expected 1" "$WORK/tx"; }

ktap_header 3
transfer -4 $IP_A $IP_B
check "IPv4 TCP: every MSG_ZEROCOPY send completed without a copy, all received" all_zerocopy
transfer -6 $IP6_A $IP6_B
check "IPv6 TCP: every MSG_ZEROCOPY send completed without a copy, all received" all_zerocopy
ethtool -K "$NETIF_A" sg off >/dev/null
transfer -4 $IP_A $IP_B
check "control: with scatter-gather off the kernel reports the copies" copies_reported
ktap_finish
