#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Native XDP on card A's synthetic NIC (ip link set ... xdpdrv), each
# action checked on both ends, not by the driver's counters alone:
#  - the program attaches in driver mode; the netdev family lists the
#    actions the driver offers (xdp-features; hw-offload is
#    xdp_offload.sh's);
#  - XDP_DROP, XDP_ABORTED: the program saw every frame B sent, the
#    driver counted each under its action, no socket got one, and qstats
#    counted them received (XDP is the stack's first layer);
#  - XDP_PASS: the socket got every frame;
#  - XDP_TX: every frame came back to B (tcpdump on B), counted sent;
#  - XDP_REDIRECT to a CPU map: the socket got every frame, through the
#    map's kthread; to a device map: every frame came out of a veth
#    (tcpdump on its peer); and from the veth's own program into card A
#    (ndo_xdp_xmit): every frame reached B (tcpdump on B);
#  - with card A's VF joined, the program runs on the VF (its counters
#    move), which refuses one of its own; unplugging the VF leaves it on
#    the synthetic NIC;
#  - attaching, replacing and removing the program over and over under
#    a UDP stream and an iperf3 TCP stream loses no frame and no page
#    (every page pool is freed at link down).
# The program is xdp_actions.bpf.c, built here with clang.
#
# With RSNIC_RX_STREAM=1 (rx_stream.sh) both cards receive into streams
# and the program runs on each frame where the card streamed it. Two
# things differ by design: attaching or removing a program restarts
# streaming queues (the records' room changes), so the UDP churn only
# replaces the program, and TCP rides the restarts. What streaming does
# not change is not run again there: the redirect into card A
# (ndo_xdp_xmit, its TX path) and the VF (it joins in descriptor mode: a
# streaming VF cannot take its synthetic NIC's program).

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
for tool in clang bpftool tcpdump iperf3; do
	command -v $tool >/dev/null || bail_out "$tool not installed"
done
[ -d "$KSFT/net/lib/py" ] || bail_out "no YNL library in $KSFT (qemu/build-ksft.sh)"
WORK=$(mktemp -d)
OBJ=$WORK/xdp_actions.o
build_xdp_actions "$OBJ" || bail_out "cannot build xdp_actions.bpf.c"

PORT=5501   # the frames the program acts on
SPORT=5502  # B's source port: XDP_TX replies go to it
OTHER=5503  # a stream the program passes
RATE=500    # datagrams a second B sends, for one second
XDP_ABORTED=0 XDP_DROP=1 XDP_PASS=2 XDP_TX=3 ACT_CPUMAP=10 ACT_DEVMAP=11

cleanup() {
	kill $(jobs -p) 2>/dev/null
	pkill -f "iperf3 -s -D -p 5504"
	ip link set dev "$NETIF_A" xdpdrv off 2>/dev/null
	ip link set "$NETIF_A" up
	ip link del vx0 2>/dev/null
	vf_unplug A 2>/dev/null
	rm -rf "$WORK"
	net_cleanup
}
trap cleanup EXIT

attach() { ip link set dev "$NETIF_A" xdpdrv obj "$OBJ" sec xdp; }
# Attaches the program with action ACT for UDP port $PORT.
attach_with() { # ACT
	attach && map_set cfg 1 $PORT && map_set cfg 0 "$1"
}
# The driver's per-queue XDP counter SIDE*_xdp_NAME (SIDE: rx or tx) of
# card A's netdev (or IFACE), summed.
xdp_counter() { # SIDE NAME [IFACE]
	ethtool -S "${3:-$NETIF_A}" | awk -v p="^$1[0-9]+_xdp_$2:\$" '$1 ~ p {n += $2} END {print n + 0}'
}
drv_xdp() { xdp_counter rx "$@"; } # NAME [IFACE]
# qstats rx-packets and tx-packets of card A's netdev.
q_rx() { qstats device | awk '{print $1}'; }
q_tx() { qstats device | awk '{print $3}'; }
# Sends datagrams to A:PORT from B:SPORT for a second; prints how many.
blast() { # PORT
	ip netns exec $NS "$GFT_PY" udp-blast $IP_A "$1" 1 $RATE 64 $SPORT | awk '{print $1}'
}
# Sends a second of datagrams to A:$PORT from B (or runs SENDER..., which
# prints how many it sent) while tcpdump on IFACE (in netns NS; "" for
# this one) keeps the frames FILTER matches; prints "sent captured", the
# captured ones being those whose line has MATCH.
blast_captured() { # NS IFACE FILTER MATCH [SENDER...]
	local ns=$1 iface=$2 filter=$3 match=$4 cap sent
	shift 4
	capture "$ns" "$iface" 100000 "$filter" "$WORK/cap"
	cap=$!
	if [ $# -gt 0 ]; then sent=$("$@" | awk '{print $1}'); else sent=$(blast $PORT); fi
	capture_stop $cap
	echo "$sent $(grep -c "$match" "$WORK/cap")"
}
# Starts a counter of datagrams to PORT on A (PID in COUNTER); its count
# lands in FILE.
count_start() { # PORT FILE
	"$GFT_PY" udp-count "$1" 1 4 >"$2" &
	COUNTER=$!
	wait_listening udp "$1" ""
}

stream=${RSNIC_RX_STREAM:+1}
if [ -n "$stream" ]; then ktap_header 13; else ktap_header 17; fi
dmesg_mark

attach_with $XDP_DROP
mode=$(ip -j -d link show "$NETIF_A" | python3 -c 'import json,sys; x=json.load(sys.stdin)[0].get("xdp",{}); print(x.get("mode"), x.get("prog",{}).get("name"))')
check "the program attaches in driver mode ($mode)" test "$mode" = "1 xdp_actions"

features=$(xdp_features)
check "xdp-features: basic hw-offload ndo-xmit redirect xsk-zerocopy ($features)" \
	test "$features" = "basic hw-offload ndo-xmit redirect xsk-zerocopy"

# One action: B sends, A counts. Prints "sent seen driver socket qrx".
run_action() { # ACT COUNTER
	local s0 d0 q0 sent
	map_set cfg 0 "$1"
	s0=$(seen) d0=$(drv_xdp "$2") q0=$(q_rx)
	count_start $PORT "$WORK/got"
	sent=$(blast $PORT)
	wait $COUNTER
	echo "$sent $(($(seen) - s0)) $(($(drv_xdp "$2") - d0)) $(cat "$WORK/got") $(($(q_rx) - q0))"
}
# sent == seen == driver, socket 0, qstats received >= sent.
all_taken() { # "sent seen driver socket qrx"
	local r=($1)
	[ "${r[0]}" -gt 0 ] && [ "${r[1]}" = "${r[0]}" ] && [ "${r[2]}" = "${r[0]}" ] &&
		[ "${r[3]}" = 0 ] && [ "${r[4]}" -ge "${r[0]}" ]
}
r=$(run_action $XDP_DROP drop)
check "XDP_DROP: program, driver and qstats counted every frame, no socket got one (sent seen drop socket rx: $r)" all_taken "$r"
r=$(run_action $XDP_ABORTED aborted)
check "XDP_ABORTED: the same, counted as aborted (sent seen aborted socket rx: $r)" all_taken "$r"

r=($(run_action $XDP_PASS pass))
check "XDP_PASS: the socket got every frame (sent ${r[0]}, seen ${r[1]}, passed ${r[2]}, got ${r[3]})" \
	test "${r[0]}" -gt 0 -a "${r[3]}" = "${r[0]}" -a "${r[1]}" = "${r[0]}" -a "${r[2]}" -ge "${r[0]}"

map_set cfg 0 $XDP_TX
t0=$(drv_xdp tx) q0=$(q_tx)
read -r sent back < <(blast_captured $NS "$NETIF_B" "udp and src host $IP_A and src port $PORT and dst port $SPORT" \
	"$IP_A.$PORT > $IP_B.$SPORT")
check "XDP_TX: every frame came back to B (sent $sent, back $back, driver $(($(drv_xdp tx) - t0)))" \
	test "$sent" -gt 0 -a "$back" = "$sent" -a "$(($(drv_xdp tx) - t0))" = "$sent"
check "XDP_TX frames count as sent in qstats (tx +$(($(q_tx) - q0)))" test "$(($(q_tx) - q0))" -ge "$sent"

# qsize 256, no program on the CPU map's entry.
map_set cpus 0 256 0
r=($(run_action $ACT_CPUMAP redirect))
check "XDP_REDIRECT to a CPU map: the socket got every frame (sent ${r[0]}, redirected ${r[2]}, got ${r[3]})" \
	test "${r[0]}" -gt 0 -a "${r[2]}" = "${r[0]}" -a "${r[3]}" = "${r[0]}"

ip link add vx0 type veth peer name vx1
ip link set vx0 up
ip link set vx1 up
# veth takes redirected frames once its peer runs NAPI (GRO on).
ethtool -K vx1 gro on >/dev/null
map_set devs 0 "$(cat /sys/class/net/vx0/ifindex)"
map_set cfg 0 $ACT_DEVMAP
d0=$(drv_xdp redirect)
read -r sent out < <(blast_captured "" vx1 "udp and dst port $PORT" "$IP_B.$SPORT > $IP_A.$PORT")
check "XDP_REDIRECT to another device: every frame came out of the veth (sent $sent, out $out, driver $(($(drv_xdp redirect) - d0)))" \
	test "$sent" -gt 0 -a "$out" = "$sent" -a "$(($(drv_xdp redirect) - d0))" = "$sent"

# Into rsnic (ndo_xdp_xmit): the same program on vx1 redirects what vx0
# sends to card A's netdev, which puts it on the wire to B.
if [ -z "$stream" ]; then
	ip addr add 10.198.0.1/24 dev vx0
	ip neigh replace 10.198.0.2 lladdr "$(ip -n $NS -j link show "$NETIF_B" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')" dev vx0
	ip link set dev vx1 xdpdrv obj "$OBJ" sec xdp
	XDP_DEV=vx1 map_set devs 0 "$(cat /sys/class/net/$NETIF_A/ifindex)"
	XDP_DEV=vx1 map_set cfg 1 $PORT
	XDP_DEV=vx1 map_set cfg 0 $ACT_DEVMAP
	x0=$(xdp_counter tx xmit)
	read -r sent arrived < <(blast_captured $NS "$NETIF_B" "udp and src host 10.198.0.1 and dst port $PORT" \
		"10.198.0.1.$SPORT > 10.198.0.2.$PORT" "$GFT_PY" udp-blast 10.198.0.2 $PORT 1 $RATE 64 $SPORT)
	xmit=$(($(xdp_counter tx xmit) - x0))
	check "XDP_REDIRECT into card A (ndo_xdp_xmit): every frame reached B (sent $sent, arrived $arrived, driver $xmit)" \
		test "$sent" -gt 0 -a "$arrived" = "$sent" -a "$xmit" = "$sent"
	ip link set dev vx1 xdpdrv off

	# Card A's VF joins: the data path moves to it, and so does the program.
	map_set cfg 0 $XDP_DROP
	RSNIC_RX_STREAM= vf_plug A || echo "# card A's VF did not appear"
	VF=$(netif_of "$(vf_addr A)")
	wait_datapath A vf || echo "# the data path stayed synthetic"
	v0=$(drv_xdp drop "$VF") p0=$(drv_xdp drop) s0=$(seen)
	sent=$(blast $PORT)
	vf_drop=$(($(drv_xdp drop "$VF") - v0)) pf_drop=$(($(drv_xdp drop) - p0)) vf_seen=$(($(seen) - s0))
	check "VF $VF joined: it runs the synthetic NIC's program (sent $sent, seen $vf_seen, dropped by the VF $vf_drop, by the synthetic NIC $pf_drop)" \
		test -n "$VF" -a "$sent" -gt 0 -a "$vf_seen" = "$sent" -a "$vf_drop" = "$sent" -a "$pf_drop" = 0
	# The core refuses a program on a device whose upper device has one; with
	# none on the synthetic NIC, the driver refuses it.
	core=$(ip link set dev "$VF" xdpdrv obj "$OBJ" sec xdp 2>&1)
	ip link set dev "$NETIF_A" xdpdrv off
	drv=$(ip link set dev "$VF" xdpdrv obj "$OBJ" sec xdp 2>&1)
	ip link set dev "$VF" xdpdrv off 2>/dev/null
	attach_with $XDP_DROP
	check "the enslaved VF refuses a program of its own ($(echo "$drv" | grep -o "Error: .*"))" \
		test -n "$VF" -a -n "$(echo "$core" | grep 'upper device already has a program')" \
		-a -n "$(echo "$drv" | grep "attach it there")"
	vf_unplug A
	wait_datapath A synthetic || echo "# the data path stayed on the VF"
	p0=$(drv_xdp drop) s0=$(seen)
	sent=$(blast $PORT)
	check "VF unplugged: the program stays on the synthetic NIC (sent $sent, dropped $(($(drv_xdp drop) - p0)))" \
		test "$sent" -gt 0 -a "$(($(drv_xdp drop) - p0))" = "$sent" -a "$(($(seen) - s0))" = "$sent"
fi

# Under traffic, the program is attached, replaced and removed 30 times
# (it passes everything but $PORT): nothing is restarted, so a UDP
# stream loses no datagram, and an iperf3 TCP stream runs through. In
# streaming-RX mode (rx_stream.sh) 10 times: the attach path is the
# same, and 30 rounds each way took 39 s of its 114.
ROUNDS=30
[ -n "$stream" ] && ROUNDS=10
ip link set dev "$NETIF_A" xdpdrv off
# Prints how many of the $ROUNDS rounds succeeded.
churn() {
	local i n=0
	for i in $(seq $ROUNDS); do
		attach && ip -force link set dev "$NETIF_A" xdpdrv obj "$OBJ" sec xdp &&
			ip link set dev "$NETIF_A" xdpdrv off && n=$((n + 1))
		sleep 0.05
	done
	echo $n
}
# Streams: the program stays attached, replaced $ROUNDS times (no restart).
replace_churn() {
	local i n=0
	attach
	for i in $(seq $ROUNDS); do
		ip -force link set dev "$NETIF_A" xdpdrv obj "$OBJ" sec xdp && n=$((n + 1))
		sleep 0.05
	done
	echo $n
}
count_start $OTHER "$WORK/stream"
ip netns exec $NS "$GFT_PY" udp-blast $IP_A $OTHER 3 1000 200 $SPORT >"$WORK/sent" &
blaster=$!
if [ -n "$RSNIC_RX_STREAM" ]; then
	what=replace rounds=$(replace_churn)
else
	what=attach/replace/detach rounds=$(churn)
fi
wait $blaster $COUNTER
ip link set dev "$NETIF_A" xdpdrv off
sent=$(awk '{print $1}' "$WORK/sent") got=$(cat "$WORK/stream")
check "$rounds of $ROUNDS $what rounds under a UDP stream: no datagram lost ($got of $sent)" \
	test "$rounds" = $ROUNDS -a "$sent" -gt 0 -a "$got" = "$sent"
iperf3_server 5504
iperf3 -c $IP_B -p 5504 -t 4 -R -J >"$WORK/iperf.json" &
tcp=$!
rounds=$(churn)
wait $tcp
received=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(0 if "error" in r else r["end"]["sum_received"]["bytes"])' "$WORK/iperf.json")
check "$rounds of $ROUNDS rounds under an iperf3 TCP stream: it ran through ($received bytes)" \
	test "$rounds" = $ROUNDS -a "$received" -gt 0

ip link set "$NETIF_A" down
check "link down after it all: every page pool freed (every page came back)" wait_page_pools 0
ip link set "$NETIF_A" up
check "no kernel warnings" dmesg_clean
ktap_finish
