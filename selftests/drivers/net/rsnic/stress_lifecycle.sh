#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lifecycle stress: every operation that tears queues or devices down and
# builds them again, repeated while a TCP stream and a ping run through
# the synthetic NIC:
#   link down/up, channel count changes, ring size changes, MTU changes,
#   VF plug/unplug (data path to the VF and back), rmmod/insmod, and a
#   GFT rule that the stream's flows are installed under, then flows
#   and rules flushed.
# RSNIC_STRESS_ITERATIONS (default 20, which keeps make check within its
# time: 30 took 158 s here; 10 on the debug kernel; raise it for a soak)
# rounds; in each the cheap operations run, and the GFT cycle (waiting
# for the stream's flows costs up to 2 s), the VF cycle and rmmod/insmod
# every 5th round (4 of each by default: each takes seconds of PCI
# enumeration, probe self-test and set-up in this VM). Every operation
# must succeed and traffic must flow after every round; the runner's
# dmesg scan (and kmemleak on the debug kernel) covers the rest. Whether
# the TCP stream lives through everything but rmmod (which takes its
# netdev; it is stopped before and started again after) is judged too: a
# stream found dead fails the test, with what iperf3 said.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
command -v iperf3 >/dev/null || skip_all "iperf3 not installed"
iterations=${RSNIC_STRESS_ITERATIONS:-20}
is_debug_kernel && iterations=${RSNIC_STRESS_ITERATIONS:-10}
stream_log=$(mktemp)
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	rm -f "$stream_log"
	vf_unplug A 2>/dev/null
	load_driver
	net_cleanup
}
trap cleanup EXIT

# Starts the background traffic where it is not running (at the start
# and after rmmod/insmod; anywhere else the stream must still be alive).
traffic() {
	ip netns exec $NS pgrep -f "iperf3 -s -D -p 5403" >/dev/null ||
		iperf3_server 5403
	if [ -z "${stream:-}" ] || ! kill -0 $stream 2>/dev/null; then
		iperf3 -c $IP_B -p 5403 -t 3600 >"$stream_log" 2>&1 &
		stream=$!
		# Connected (control and data connections) before the round
		# takes the link down: a client still connecting then fails with
		# "Network is unreachable", which is not a stream dying.
		wait_until 50 stream_connected ||
			echo "# the TCP stream did not connect within 5 s"
	fi
	if [ -z "${pinger:-}" ] || ! kill -0 $pinger 2>/dev/null; then
		ping -i 0.05 -W 1 -q $IP_B >/dev/null 2>&1 &
		pinger=$!
	fi
}
stream_connected() { [ "$(ss -Htn state established "dport = :5403" | wc -l)" -ge 2 ]; }
stop_traffic() {
	kill $stream $pinger 2>/dev/null
	wait $stream $pinger 2>/dev/null
	stream= pinger=
}

declare -A done_ops failed_ops
op() { # name command...
	local name=$1
	shift
	if "$@"; then
		done_ops[$name]=$((${done_ops[$name]:-0} + 1))
	else
		failed_ops[$name]=$((${failed_ops[$name]:-0} + 1))
		echo "# round $round: $name failed"
	fi
}
link_cycle() {
	ip link set "$NETIF_A" down && ip link set "$NETIF_A" up && wait_carrier "$NETIF_A" 1
}
max_channels=$(channels_max)
channels() { ethtool -L "$NETIF_A" combined $((round % max_channels + 1)); }
rings() { ethtool -G "$NETIF_A" rx $((128 << (round % 3))) tx $((512 >> (round % 3))); }
mtu() { ip link set "$NETIF_A" mtu $((round % 2 ? 1400 : 1500)); }
vf_cycle() {
	vf_plug A && wait_datapath A vf && vf_unplug A && wait_datapath A synthetic
}
module_cycle() {
	stop_traffic
	rmmod rsnic && insmod "$RSNIC_KO" || return 1
	# The remote's netdev went with the module: set both ends up again
	# (a new namespace, so a new iperf3 server).
	pkill -f "iperf3 -s -D -p 5403"
	net_cleanup 2>/dev/null
	net_setup >/dev/null
}
flows() { ping -c 2 -W 2 -q $IP_B >/dev/null; }
stream_alive() {
	kill -0 "$stream" 2>/dev/null && return 0
	echo "# the TCP stream died; iperf3 said:"
	tail -n 3 "$stream_log" | sed 's/^/#   /'
	return 1
}
# A GFT rule for the stream: its flows get installed (the stream keeps
# flowing through them), then flows and rules are flushed.
GFT=$RSNIC_DEBUGFS/$(card_addr A)/gft
[ -d "$GFT" ] || skip_all "no $GFT"
gft_installed() { [ "$(gft_stat flows)" -gt 0 ]; }
gft_cycle() {
	ethtool -K "$NETIF_A" hw-tc-offload on || return 1
	[ "$(gft_w rules "add prio=10 dir=tx proto=tcp dport=5403 action=allow")" = OK ] || return 1
	wait_until 20 gft_installed || { echo "# round $round: no GFT flow for the stream"; return 1; }
	[ "$(gft_w flows flush)$(gft_w rules flush)" = OKOK ]
}

ktap_header 9
start=$SECONDS
for round in $(seq $iterations); do
	traffic
	op link link_cycle
	op channels channels
	op rings rings
	op mtu mtu
	op stream stream_alive
	if [ $((round % 5)) = 0 ] || [ $round = $iterations ]; then
		op gft gft_cycle
		op vf vf_cycle
		op stream stream_alive
		op module module_cycle
		traffic
		echo "# round $round: $((SECONDS - start)) s"
	fi
	op traffic flows
done
stop_traffic
echo "# $iterations rounds in $((SECONDS - start)) s"
for name in link channels rings mtu gft vf module traffic stream; do
	echo "# $name: ${done_ops[$name]:-0} done, ${failed_ops[$name]:-0} failed"
done
ok_all() { [ -z "${failed_ops[$1]:-}" ] && [ "${done_ops[$1]:-0}" -gt 0 ]; }
check "link down/up under traffic, every time" ok_all link
check "channel changes under traffic, every time" ok_all channels
check "ring size changes under traffic, every time" ok_all rings
check "MTU changes under traffic, every time" ok_all mtu
check "GFT: the stream's flows installed under a rule, then flushed, every time" ok_all gft
check "VF plug/unplug under traffic, every time (data path there and back)" ok_all vf
check "rmmod/insmod under traffic, every time" ok_all module
check "traffic flows after every round" ok_all traffic
check "the TCP stream lived through every round (but rmmod)" ok_all stream
ktap_finish
