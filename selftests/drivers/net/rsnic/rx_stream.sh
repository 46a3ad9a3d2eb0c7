#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Streaming receive (private flag rx-stream): the switch and what the
# card says about it; the traffic tests (ping with jumbo MTU, TCP/UDP
# with RSS, checksum offload and IPv6, the VF bond, the GFT exception
# path, every XDP action) run again with both cards streaming; a ring
# filled by a flood the stack cannot keep up with, next to a socket that
# never reads and a TCP receiver that holds its data (frames in chunks
# the card comes round to again: the chunks are replaced, the data stays
# intact); mode switches under traffic; stream faults injected by the
# card; XDP and rx-stream switched on in either order; the card's
# metadata bytes per frame in both modes.

source "$(dirname "$0")/lib.sh"
HERE=$(dirname "$(readlink -f "$0")")
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
command -v iperf3 >/dev/null || skip_all "iperf3 not installed"
cleanup() {
	kill $(jobs -p) 2>/dev/null
	harness card A cqe-fault index 0 >/dev/null
	harness card B irq-drop 0 >/dev/null
	vf_unplug A 2>/dev/null
	ip link set dev "$NETIF_A" xdpdrv off 2>/dev/null
	pkill -f "iperf3 -s -D -p 5501"
	net_cleanup
}
trap cleanup EXIT

# Card $1's total of counter $2 (harness stats: its PF; vf_stat: its VF).
card_stat() { harness card "$1" stats | tr ' ' '\n' | sed -n "s/^$2=//p"; }
vf_stat() { harness card "$1" vf-stats | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# Stream notifications of card $1, both functions.
notifications() { echo $(($(card_stat "$1" stream_notifications) + $(vf_stat "$1" stream_notifications))); }
# ethtool -S counter $2 of interface $1 summed over the queues.
counter() { ethtool -S "$1" | awk -v re="^ *(q[0-9]+_)?$2:" '$0 ~ re {n += $2} END {print n + 0}'; }
counter_b() { ip netns exec $NS bash -c "$(declare -f counter); counter $NETIF_B $1"; }
stream_a() { ethtool --set-priv-flags "$NETIF_A" rx-stream "$1"; }
stream_b() { ip netns exec $NS ethtool --set-priv-flags "$NETIF_B" rx-stream "$1"; }
running_pairs() { harness card "$1" stats | tr ' ' '\n' | grep -c '^q[0-9]*_stream='; }

ktap_header 26

# 1-3: the switch.
check "rx-stream is a private flag, off by default" \
	bash -c "ethtool --show-priv-flags $NETIF_A | grep -q '^rx-stream *: off'"
stream_a on
echo "# card A: $(running_pairs A) running pairs, $(card_stat A streaming_pairs) streaming"
check "on: every running pair of the card receives into a stream (the card says so)" \
	test "$(card_stat A streaming_pairs)" -ge 1 -a "$(card_stat A streaming_pairs)" = "$(running_pairs A)"
stream_a off
check_eq "off: the card's pairs use their RX rings again" "$(card_stat A streaming_pairs)" 0

# 4-9: the traffic tests, both cards (and a plugged VF) streaming. Each
# must pass whole, with no skipped check, and the cards must have
# streamed while it ran.
net_cleanup
for t in ping.sh traffic.sh offload.sh vf_bond.sh gft_exception.sh xdp.sh; do
	a0=$(notifications A) b0=$(notifications B)
	dmesg_mark
	RSNIC_RX_STREAM=1 "$HERE/$t" >/tmp/rx_stream.$t.out 2>&1
	rc=$?
	sed 's/^/# /' /tmp/rx_stream.$t.out
	dmesg_since_mark | grep 'out of step' | sed 's/^/# /'
	a=$(($(notifications A) - a0)) b=$(($(notifications B) - b0))
	skipped=$(grep -cE '^ok [0-9]+ .*# *SKIP' /tmp/rx_stream.$t.out)
	echo "# $t: exit $rc, $skipped skipped, stream notifications A +$a, B +$b"
	# A failure names the nested test's failed checks, so that the
	# summary at the end of a run says which one it was.
	desc="in stream mode: $t passes, nothing skipped, both cards streamed"
	if [ $rc = 0 ] && [ "$skipped" = 0 ] && [ $a -gt 0 ] && [ $b -gt 0 ]; then
		ktap_result ok "$desc"
	else
		ktap_result fail "$desc" \
			"exit $rc, $skipped skipped, notifications A +$a B +$b$(sed -n 's/^not ok [0-9]* \(.*\)/; failed: \1/p' /tmp/rx_stream.$t.out | tr -d '\n')"
	fi
done
net_setup || echo "# no carrier after set-up"
stream_a on
stream_b on
iperf3_server 5501

# 10: the VF in the bond streams too (vf_bond.sh ends by unplugging it,
# which resets its counters: counted here, while it is in).
vf_streams=0 vf_notes=0
if RSNIC_RX_STREAM=1 vf_plug A && wait_datapath A vf; then
	ping -c 20 -i 0.05 -q $IP_B >/dev/null
	vf_streams=$(vf_stat A streaming_pairs) vf_notes=$(vf_stat A stream_notifications)
fi
vf_unplug A
echo "# card A's VF: $vf_streams streaming pairs, $vf_notes stream notifications"
check "the bond's VF streams: its pairs stream and announced the pings" \
	test "${vf_streams:-0}" -ge 1 -a "${vf_notes:-0}" -gt 0
wait_datapath A synthetic

# 11-16: a full ring. pktgen floods B with 64 B UDP frames, to a socket
# that never reads, while a TCP transfer of random data runs beside it
# to a receiver that reads nothing for its first 2 s; card B loses two
# interrupts, so its driver stops reading until the health check finds
# the records waiting: the card drops what does not fit (counted, never
# over unread records), the slow socket drops its own, the driver polls
# again, and the transfer arrives intact although the card came round
# to its chunks many times while the receiver held them (the driver put
# fresh chunks in their place).
ip netns exec $NS python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.bind(("0.0.0.0", 9))
time.sleep(60)
' &
sink=$!
wait_listening udp 9 $NS
head -c 8M /dev/urandom >/tmp/rx_stream.src
want=$(sha256sum </tmp/rx_stream.src | cut -d' ' -f1)
rm -f /tmp/rx_stream.dst
ip netns exec $NS python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7002)); s.listen(1); s.settimeout(60)
c, _ = s.accept(); c.settimeout(60)
time.sleep(2)
with open("/tmp/rx_stream.dst", "wb") as f:
    while (b := c.recv(65536)):
        f.write(b)
' &
server=$!
wait_listening tcp 7002 $NS
# Neighbours resolved first: an ARP reply lost in the full stream would
# fail the connection before TCP could resend anything.
ping -c 1 -W 2 -q $IP_B >/dev/null
drops0=$(card_stat B rx_no_buffer) bad0=$(counter_b bad_completions)
replaced0=$(counter_b 'rx[0-9]+_stream_chunks_replaced')
frags0=$(counter_b 'rx[0-9]+_stream_frags') copies0=$(counter_b 'rx[0-9]+_stream_copies')
missed0=$(counter_b missed_irqs)
mac_b=$(ip -n $NS -j link show "$NETIF_B" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')
count=300000
is_debug_kernel && count=30000
pktgen "$NETIF_A" $IP_B "$mac_b" $count 16 "udp_dst_min 9" "udp_dst_max 9" >/tmp/rx_stream.pps &
flood=$!
sleep 0.3
harness card B irq-drop 2 >/dev/null
sleep 0.2
python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], 7002), timeout=60)
s.sendall(open("/tmp/rx_stream.src", "rb").read()); s.close()
' $IP_B || echo "# the transfer failed"
wait $server
wait $flood
got=$(sha256sum </tmp/rx_stream.dst | cut -d' ' -f1)
drops=$(($(card_stat B rx_no_buffer) - drops0))
sock_drops=$(ip netns exec $NS awk '$2 ~ /:0009$/ {print $NF}' /proc/net/udp)
kill $sink 2>/dev/null
harness card B irq-drop 0 >/dev/null
missed=$(($(counter_b missed_irqs) - missed0))
echo "# flood: $(cat /tmp/rx_stream.pps) frames/s offered; card B dropped $drops (stream full)," \
	"the sink socket $sock_drops; lost interrupts found $missed"
check "the stream fills while the driver does not read: the card drops and counts (rx_no_buffer +$drops), the lost interrupt is found" \
	test $drops -gt 0 -a $missed -gt 0
check "the socket that never reads drops its own frames ($sock_drops), the ring goes on" test "${sock_drops:-0}" -gt 0
check_eq "8 MiB over TCP beside the flood arrive intact (sha256)" "$got" "$want"
check_eq "no record out of step during the flood" "$(counter_b bad_completions)" "$bad0"
replaced=$(($(counter_b 'rx[0-9]+_stream_chunks_replaced') - replaced0))
frags=$(($(counter_b 'rx[0-9]+_stream_frags') - frags0))
copies=$(($(counter_b 'rx[0-9]+_stream_copies') - copies0))
echo "# B: $frags frames as chunk fragments, $copies copied, $replaced chunks replaced while frames in them were out"
check "TCP segments went up as fragments of their chunk, 64 B datagrams copied" \
	test $frags -gt 0 -a $copies -gt 0
check "chunks still holding the receiver's data were replaced ($replaced), not written over" \
	test $replaced -gt 0

# 17-19: mode switches under traffic: B's queues restart four times
# during a TCP stream into it (frames in flight are lost, TCP resends).
bad0=$(counter_b bad_completions)
iperf3 -c $IP_B -p 5501 -t 6 -P 2 -J >/tmp/rx_stream.iperf 2>&1 &
stream=$!
switched=0
for mode in off on off on; do
	sleep 1
	stream_b $mode && switched=$((switched + 1))
done
wait $stream
rc=$?
echo "# iperf3 across $switched switches: exit $rc, $(python3 -c 'import json; e=json.load(open("/tmp/rx_stream.iperf"))["end"]["sum_received"]; print(round(e["bytes"] * 8 / e["seconds"] / 1e6), "Mbit/s")' 2>/dev/null)"
check "four mode switches under traffic succeed" test $switched = 4
check "the TCP stream across them completes" test $rc = 0
check "after the switches B streams again, no record out of step" \
	test "$(card_stat B streaming_pairs)" -ge 1 -a "$(counter_b bad_completions)" = "$bad0"

# 20-22: stream faults (card A's engine gets the next record or tail
# wrong while B sends into A): counted, logged, the pair reset, the TCP
# stream completes.
for kind in index length tail; do
	bad=$(counter "$NETIF_A" bad_completions) resets=$(counter "$NETIF_A" resets)
	injected=$(card_stat A cqe_faults_injected)
	dmesg_mark
	iperf3 -c $IP_B -p 5501 -t 3 -R -J >/tmp/rx_stream.fault 2>&1 &
	stream=$!
	sleep 0.5
	harness card A cqe-fault $kind 1 >/dev/null
	wait $stream
	rc=$?
	harness card A cqe-fault $kind 0 >/dev/null
	echo "# stream fault $kind: injected $injected -> $(card_stat A cqe_faults_injected)," \
		"bad completions $bad -> $(counter "$NETIF_A" bad_completions), resets $resets -> $(counter "$NETIF_A" resets)"
	check "stream fault $kind: injected, counted, logged, the pair reset, TCP completes" \
		test $rc = 0 -a "$(card_stat A cqe_faults_injected)" -gt "$injected" \
		-a "$(counter "$NETIF_A" bad_completions)" -gt "$bad" -a "$(counter "$NETIF_A" resets)" -gt "$resets" \
		-a -n "$(dmesg_since_mark | grep 'RX stream out of step')"
done

# 23-24: XDP and rx-stream in either order (xdp.sh ran every action on
# streams above): a program attached to a streaming NIC restarts its
# queues with room in the records, which stream on and run it; rx-stream
# turned on under an attached program streams and runs it too.
OBJ=/tmp/rx_stream_xdp.o
build_xdp_actions $OBJ
xdp_pass() { ethtool -S "$NETIF_A" | awk '$1 ~ /^rx[0-9]+_xdp_pass:$/ {n += $2} END {print n + 0}'; }
p0=$(xdp_pass)
ip link set dev "$NETIF_A" xdpdrv obj $OBJ sec xdp
ping -c 10 -i 0.05 -q $IP_B >/dev/null
passed=$(($(xdp_pass) - p0))
echo "# program attached to streams: $(card_stat A streaming_pairs) streaming pairs, $passed frames passed"
check "XDP attached in stream mode: the pairs stream on and the program sees the pings" \
	test "$(card_stat A streaming_pairs)" -ge 1 -a $passed -ge 10
stream_a off
stream_a on
p0=$(xdp_pass)
ping -c 10 -i 0.05 -q $IP_B >/dev/null
passed=$(($(xdp_pass) - p0))
check "rx-stream on under an attached program: streams, the program runs ($passed passed)" \
	test "$(card_stat A streaming_pairs)" -ge 1 -a $passed -ge 10
ip link set dev "$NETIF_A" xdpdrv off

# 25-26: the card's own accounting per received frame, the same UDP
# load in each mode: metadata (descriptors, completions, headers, tail
# writes, doorbells, interrupts) and payload bytes per frame.
meta_per_frame() { # prints "meta/frame payload/frame" for one UDP run into B
	local m0 p0 f0 m p f
	m0=$(counter_b card_dma_meta_bytes) p0=$(counter_b card_dma_payload_bytes)
	f0=$(counter_b 'rx[0-9]+_packets')
	iperf3 -c $IP_B -p 5501 -u -b 20M -l 64 -t 2 >/dev/null
	m=$(($(counter_b card_dma_meta_bytes) - m0)) p=$(($(counter_b card_dma_payload_bytes) - p0))
	f=$(($(counter_b 'rx[0-9]+_packets') - f0))
	python3 -c "import sys; m,p,f=map(int,sys.argv[1:]); print(f'{m/max(f,1):.1f} {p/max(f,1):.1f} {f}')" $m $p $f
}
stream_b off
read -r ring_meta ring_payload ring_frames <<<"$(meta_per_frame)"
stream_b on
read -r stream_meta stream_payload stream_frames <<<"$(meta_per_frame)"
echo "# 64 B UDP into B: descriptor mode $ring_meta metadata bytes/frame ($ring_payload payload, $ring_frames frames);" \
	"stream mode $stream_meta ($stream_payload payload, $stream_frames frames)"
check "both runs received frames, payload bytes per frame alike" \
	python3 -c "import sys; sys.exit(0 if $ring_frames > 100 and $stream_frames > 100 and abs($ring_payload - $stream_payload) < 8 else 1)"
check "stream mode moves fewer metadata bytes per received frame (card counters)" \
	python3 -c "import sys; sys.exit(0 if $stream_meta < $ring_meta else 1)"
ktap_finish
