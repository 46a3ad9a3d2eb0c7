#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Bulk traffic through the synthetic NIC: iperf3 TCP in both directions
# with 8 parallel streams (spread over the queues by RSS), UDP, byte
# counters that agree with what iperf3 moved, and tcpdump on the remote
# side seeing the traffic.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
trap 'kill $(jobs -p) 2>/dev/null; net_cleanup' EXIT
command -v iperf3 >/dev/null || skip_all "iperf3 not installed"

# rx_bytes of an interface (in netns $2 if given).
rx_bytes() { ip ${2:+-n $2} -s -j link show "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["bytes"])'; }

# tx_bytes of an interface (in netns $2 if given).
tx_bytes() { ip ${2:+-n $2} -s -j link show "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])'; }

# Mbit/s of an iperf3 JSON result.
mbits() { python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]["sum_received"]; print(round(e["bytes"] * 8 / e["seconds"] / 1e6))' "$1"; }

# How much each TCP run moves: 5 s; on the debug kernel a byte count
# instead, because its CPU-starved client overruns a timed test by more
# than iperf3's server allows ("server test duration expired").
length="-t 5"
is_debug_kernel && length="-n 32M"

# Payload bytes the receiver got, from an iperf3 JSON result.
received() { python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]; print(int(e.get("sum_received", e.get("sum", {})).get("bytes", 0)))' "$1"; }

# bytes_agree RX TX PAYLOAD: the receiver's rx_bytes and the sender's
# tx_bytes (both driver counters, frames with their headers) agree: the
# receiver got at most what was sent and at least 85% of it (the rest is
# what the card dropped for lack of RX buffers, retransmitted by TCP), and
# at least the payload iperf3 counted.
bytes_agree() {
	python3 -c 'import sys; rx,tx,p=map(int,sys.argv[1:4]); print(f"# sender tx_bytes {tx}, receiver rx_bytes {rx}, iperf3 payload {p} (rx/payload {rx/max(p,1):.3f})"); sys.exit(0 if p > 0 and p <= rx <= tx and rx >= 0.85 * tx else 1)' "$1" "$2" "$3"
}

# Queues of an `ethtool -S` listing that received more than 100 packets.
busy_rx_queues() { ethtool -S "$1" | awk '/rx[0-9]+_packets/ && $2 > 100' | wc -l; }

# The host's RSS key is random per boot; with only 8 flows whose source
# ports differ in a few bits, an unlucky key can put them all on one queue.
# Use the RSS specification's key so the spread check is deterministic.
MS_KEY=6d:5a:56:da:25:5b:0e:c2:41:67:25:3d:43:a3:8f:b0:d0:ca:2b:cb:ae:7b:30:b4:77:cb:2d:a3:80:30:f2:0c:6a:42:b7:3b:be:ac:01:fa
ethtool -X "$NETIF_A" hkey $MS_KEY
ip netns exec $NS ethtool -X "$NETIF_B" hkey $MS_KEY

iperf3_server 5201 --logfile /tmp/iperf3-server.log
# Errors and bad completions are counted since the module loaded (other
# tests inject faults): this test checks they do not grow.
link_errors() { ip -s -j link show "$NETIF_A" | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]; print(s["rx"]["errors"] + s["tx"]["errors"])'; }
bad_completions() { ethtool -S "$NETIF_A" | awk '/bad_completions/ {s += $2} END {print s+0}'; }
errors0=$(link_errors) bad0=$(bad_completions)

ktap_header 7

rx0=$(rx_bytes "$NETIF_B" $NS)
tx0=$(tx_bytes "$NETIF_A")
if iperf3 -c $IP_B -p 5201 $length -P 8 -J >/tmp/tcp.json; then
	sleep 1
	payload=$(received /tmp/tcp.json)
	echo "# TCP A->remote: $payload bytes, $(mbits /tmp/tcp.json) Mbit/s"
	check "TCP 8 streams A -> remote: counters on both sides agree with iperf3" \
		bytes_agree $(($(rx_bytes "$NETIF_B" $NS) - rx0)) $(($(tx_bytes "$NETIF_A") - tx0)) "$payload"
else
	python3 -c 'import json; print("# iperf3:", json.load(open("/tmp/tcp.json")).get("error"))' 2>/dev/null
	ktap_result fail "TCP 8 streams A -> remote" "iperf3 failed"
fi
spread=$(ip netns exec $NS bash -c "$(declare -f busy_rx_queues); busy_rx_queues $NETIF_B")
echo "# remote RX queues with >100 packets: $spread"
check "RSS spreads the streams over at least 2 RX queues" test "$spread" -ge 2

rx0=$(rx_bytes "$NETIF_A")
tx0=$(tx_bytes "$NETIF_B" $NS)
if iperf3 -c $IP_B -p 5201 $length -P 8 -R -J >/tmp/tcp-r.json; then
	sleep 1
	payload=$(received /tmp/tcp-r.json)
	echo "# TCP remote->A: $payload bytes, $(mbits /tmp/tcp-r.json) Mbit/s"
	check "TCP 8 streams remote -> A: counters on both sides agree with iperf3" \
		bytes_agree $(($(rx_bytes "$NETIF_A") - rx0)) $(($(tx_bytes "$NETIF_B" $NS) - tx0)) "$payload"
else
	ktap_result fail "TCP 8 streams remote -> A" "iperf3 failed"
fi

# UDP datagrams B's sockets dropped for want of buffer space: a receiver
# the host starves (TCG) drops them there, after the NIC delivered them.
udp_rcvbuf_drops() {
	ip netns exec $NS python3 -c 'u = [l.split() for l in open("/proc/net/snmp") if l.startswith("Udp:")]
print(u[1][u[0].index("RcvbufErrors")])'
}

rate=20M
is_debug_kernel && rate=2M
drops0=$(udp_rcvbuf_drops)
if iperf3 -c $IP_B -p 5201 -u -b $rate -t 3 -J >/tmp/udp.json; then
	drops=$(($(udp_rcvbuf_drops) - drops0))
	read -r lost sent < <(python3 -c 'import json; s = json.load(open("/tmp/udp.json"))["end"]["sum"]; print(s["lost_packets"], s["packets"])')
	# The loss the path (driver, card, wire) is answerable for.
	path_lost=$((lost > drops ? lost - drops : 0))
	echo "# UDP $rate bit/s: $lost of $sent datagrams lost, $drops of them dropped by B's full socket buffer"
	check "UDP at $rate bit/s with under 1% lost on the way (not at B's socket)" \
		test $((path_lost * 100)) -lt "$sent"
else
	ktap_result fail "UDP at $rate bit/s" "iperf3 failed"
fi

ip netns exec $NS tcpdump -i "$NETIF_B" -n -c 20 -w /tmp/remote.pcap tcp port 5201 2>/dev/null &
dump=$!
sleep 1
iperf3 -c $IP_B -p 5201 -t 2 >/dev/null
wait $dump
n=$(tcpdump -n -r /tmp/remote.pcap 2>/dev/null | grep -c "$IP_A")
check "tcpdump on the remote side sees the iperf3 traffic ($n frames)" test "$n" -ge 20

errors1=$(link_errors) bad1=$(bad_completions)
check "no RX/TX errors counted on A during the traffic" test "$errors1" -eq "$errors0"
check "no bad completions from the card during the traffic" test "$bad1" -eq "$bad0"
ktap_finish
