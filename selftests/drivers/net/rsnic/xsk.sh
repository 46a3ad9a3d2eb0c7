#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# AF_XDP on card A's synthetic NIC, zero copy and copy mode. An AF_XDP
# socket (xsk_echo.c) is bound to queue $Q, which an ntuple rule gives
# UDP port $PORT; the XDP program (xdp_actions.bpf.c) redirects those
# frames to it, and it sends each back to B from the same umem buffer.
# Checked on both ends:
#  - the netdev family lists xsk-zerocopy; a zero-copy bind succeeds
#    and the kernel reports the socket in zero-copy mode;
#  - every datagram B sent reached the socket intact, and came back to
#    B (tcpdump on B); the driver received them into the umem and sent
#    them from the socket's TX ring (its rxN_xsk, txN_xsk: as many as
#    frames the XDP program saw on the queue, and as the echoes);
#  - the queue's other traffic still reaches the stack (ping);
#  - while bound, an MTU the socket's buffers cannot hold is refused;
#  - copy mode: the same, through the core's copy path;
#  - unbound, the queue takes pages again: datagrams reach a socket,
#    and at link down every page pool is freed.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
for tool in clang bpftool tcpdump; do
	command -v $tool >/dev/null || bail_out "$tool not installed"
done
[ -d "$KSFT/net/lib/py" ] || bail_out "no YNL library in $KSFT (qemu/build-ksft.sh)"
WORK=$(mktemp -d)
OBJ=$WORK/xdp_actions.o
ECHO=$WORK/xsk_echo
build_xdp_actions "$OBJ" || bail_out "cannot build xdp_actions.bpf.c"
clang -O2 -Wall -o "$ECHO" "$(dirname "$0")/xsk_echo.c" || bail_out "cannot build xsk_echo.c"

Q=1          # the queue the socket binds to
PORT=5511    # the datagrams steered to it
SPORT=5512   # B's source port: the echoes go to it
N=400        # datagrams B sends (a second at RATE)
RATE=400
ACT_XSKMAP=12
IFINDEX=$(cat /sys/class/net/$NETIF_A/ifindex)

cleanup() {
	kill $(jobs -p) 2>/dev/null
	ethtool -N "$NETIF_A" delete 9 2>/dev/null
	ip link set dev "$NETIF_A" xdpdrv off 2>/dev/null
	ip link set "$NETIF_A" up
	rm -rf "$WORK"
	net_cleanup
}
trap cleanup EXIT

ktap_header 13
dmesg_mark

features=$(xdp_features)
check "xdp-features lists xsk-zerocopy ($features)" test -n "$(echo "$features" | grep -w xsk-zerocopy)"

ethtool -N "$NETIF_A" flow-type udp4 dst-port $PORT action $Q loc 9 ||
	echo "# the ntuple rule for queue $Q was refused"
ip link set dev "$NETIF_A" xdpdrv obj "$OBJ" sec xdp || echo "# the program did not attach"
map_set cfg 1 $PORT
map_set cfg 0 $ACT_XSKMAP
XSKS=$(map_id xsks)

# The driver's zero-copy counters of queue $Q: "rx{Q}_xsk tx{Q}_xsk".
xsk_counts() {
	ethtool -S "$NETIF_A" | awk -v r="rx${Q}_xsk:" -v t="tx${Q}_xsk:" \
		'$1 == r {rx = $2} $1 == t {tx = $2} END {print rx + 0, tx + 0}'
}
# What those counters grew by since "RX0 TX0".
xsk_delta() { # "RX0 TX0"
	local before=($1) now=($(xsk_counts))
	echo "$((now[0] - before[0])) $((now[1] - before[1]))"
}

# Binds a socket in MODE (z: zero copy, c: copy) and starts it; waits
# until it is bound (its pid in SOCK, its output in $WORK/sock).
sock_start() { # MODE
	"$ECHO" "$IFINDEX" $Q "$1" "$XSKS" $N 15 >"$WORK/sock" 2>&1 &
	SOCK=$!
	for _ in $(seq 100); do
		grep -q "^mode " "$WORK/sock" && return 0
		kill -0 $SOCK 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# B sends $N datagrams to A:$PORT while tcpdump on B keeps the echoes;
# the socket stops once it has them all. Sets r to "sent echoes_on_B
# received intact echoed completed" (not in a subshell: the socket is
# this shell's child).
run_echo() {
	local cap sent
	capture $NS "$NETIF_B" 100000 "udp and src host $IP_A and src port $PORT and dst port $SPORT" "$WORK/cap"
	cap=$!
	sent=$(ip netns exec $NS "$GFT_PY" udp-blast $IP_A $PORT 1 $RATE 64 $SPORT | awk '{print $1}')
	wait $SOCK
	sleep 0.5
	capture_stop $cap
	r="$sent $(grep -c "$IP_A.$PORT > $IP_B.$SPORT" "$WORK/cap") $(awk '/^received/ {print $2, $4, $6, $8}' "$WORK/sock")"
}
# sent == received == intact == echoed == completed == echoes on B.
all_echoed() { # "sent back received intact echoed completed"
	local r=($1)
	[ "${r[0]}" -gt 0 ] && for v in "${r[@]:1}"; do [ "$v" = "${r[0]}" ] || return 1; done
}

sock_start z
check "zero-copy bind to queue $Q: the socket is in zero-copy mode ($(head -n1 "$WORK/sock"))" \
	grep -q "^mode zerocopy" "$WORK/sock"
ping_ok=$(ip netns exec $NS ping -c 3 -i 0.2 -W 2 $IP_A >/dev/null && echo yes)
mtu_err=$(ip link set "$NETIF_A" mtu 4000 2>&1)
mtu=$(cat /sys/class/net/$NETIF_A/mtu)
x0=$(xsk_counts)
q0=$(seen per_queue $Q)
run_echo
d=$(xsk_delta "$x0")
# Queue $Q may carry a few frames besides the datagrams (B's ARP or IPv6
# neighbour and multicast frames that hash to it): in zero-copy mode
# they too land in the umem before the program passes them on. The
# program counts every frame the driver handed it on the queue.
on_q=$(($(seen per_queue $Q) - q0))
check "zero copy: the socket got every datagram intact (sent received intact: $(echo $r | cut -d' ' -f1,3,4))" \
	test "$(echo $r | cut -d' ' -f1)" -gt 0 -a "$(echo $r | cut -d' ' -f3)" = "$(echo $r | cut -d' ' -f1)" \
	-a "$(echo $r | cut -d' ' -f4)" = "$(echo $r | cut -d' ' -f1)"
check "zero copy: every datagram came back to B from the socket's buffers (sent back received intact echoed completed: $r)" \
	all_echoed "$r"
check "zero copy: the driver received queue $Q's frames into the umem and sent the echoes from it (rx${Q}_xsk tx${Q}_xsk: +$d; frames XDP saw on queue $Q: $on_q, datagrams sent: $(echo $r | cut -d' ' -f1))" \
	test "$d" = "$on_q $(echo $r | cut -d' ' -f1)" -a "$on_q" -ge "$(echo $r | cut -d' ' -f1)"
check_eq "zero copy: the queue's other traffic reaches the stack (ping from B)" "$ping_ok" yes
check "zero copy: an MTU the socket's buffers cannot hold is refused (MTU $mtu; $(echo $mtu_err | head -c 60))" \
	test "$mtu" = 1500 -a -n "$mtu_err"

sock_start c
check "copy mode: the socket binds in copy mode ($(head -n1 "$WORK/sock"))" grep -q "^mode copy" "$WORK/sock"
x0=$(xsk_counts)
run_echo
d=$(xsk_delta "$x0")
check "copy mode: every datagram reached the socket and came back to B (sent back received intact echoed completed: $r)" \
	all_echoed "$r"
check "copy mode: the driver's zero-copy path stayed idle (rx${Q}_xsk tx${Q}_xsk: +$d)" \
	test "$d" = "0 0"

# Unbound: the queue's RX ring takes pages again, the program passes.
"$GFT_PY" udp-count $PORT 1 4 >"$WORK/got" &
counter=$!
wait_listening udp $PORT ""
sent=$(ip netns exec $NS "$GFT_PY" udp-blast $IP_A $PORT 1 $RATE 64 $SPORT | awk '{print $1}')
wait $counter
check "unbound: queue $Q's datagrams reach the stack again ($(cat "$WORK/got") of $sent)" \
	test "$sent" -gt 0 -a "$(cat "$WORK/got")" = "$sent"

ip link set "$NETIF_A" down
check "link down after it all: every page pool freed" wait_page_pools 0
ip link set "$NETIF_A" up
check "no kernel warnings" dmesg_clean
ktap_finish
