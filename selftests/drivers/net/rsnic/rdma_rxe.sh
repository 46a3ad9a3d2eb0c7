#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RoCEv2 interop: card A's RDMA engine against rdma_rxe, the kernel's
# software RoCE, on card B's synthetic NIC (card B's own RDMA device
# unbound, so its engine leaves the wire's RoCE frames to the NIC).
# nvme-rdma both ways (engine host -> rxe target, rxe host -> engine
# target), on IPv4 and IPv6 GIDs, data checked by SHA-256; then the same
# under 1% loss on both wires (RC retransmission across implementations);
# atomics, ATOMIC WRITE and FLUSH both ways; UC both ways with
# ibv_uc_pingpong; UD multicast both ways; perftest --odp (on-demand
# regions on both sides) WRITE and READ both ways.
# The Linux UDP stack under rxe is the independent checker of the
# engine's frames: a bad UDP checksum shows in /proc/net/snmp.

source "$(dirname "$0")/lib.sh"
DATA_MB=${RSNIC_RXE_MB:-16}
is_debug_kernel && DATA_MB=4
cleanup() {
	harness card A wire drop 0 >/dev/null 2>&1
	harness card B wire drop 0 >/dev/null 2>&1
	nvme_rdma_cleanup
	rxe_interop_cleanup
	rm -f /tmp/rxe-backing /tmp/rxe-data /tmp/rxe-back /tmp/uc.srv /tmp/uc.cli /tmp/mc.recv /tmp/rdma_mcast
	rm -f /tmp/odp.srv /tmp/odp.cli
}
trap cleanup EXIT
dmesg_mark

rxe_interop_setup
echo "# engine $IB_A on $NETIF_A ($IP_A, $IP6_A); rxe_b on $NETIF_B ($IP_B, $IP6_B)"
ktap_header 30

# udp_csum_errors: Udp InCsumErrors from /proc/net/snmp (IPv4) plus
# Udp6InCsumErrors from /proc/net/snmp6.
udp_csum_errors() {
	local v4 v6
	v4=$(awk '/^Udp:/ { if (!n++) { for (i = 2; i <= NF; i++) if ($i == "InCsumErrors") f = i }
		else if (f) print $f }' /proc/net/snmp)
	v6=$(awk '$1 == "Udp6InCsumErrors" { print $2 }' /proc/net/snmp6)
	[ -n "$v4" ] && [ -n "$v6" ] && echo $((v4 + v6))
}
check "/proc/net/snmp and snmp6 count UDP checksum errors ($(udp_csum_errors))" \
	test -n "$(udp_csum_errors)"
csum0=$(udp_csum_errors)
rxe_rx0=$(rdma_counter rxe_b rcvd_pkts)
eng_rx0=$(rdma_counter "$IB_A" rx_packets)
eng_bad0=$(rdma_counter "$IB_A" rx_udp_csum_errors)

head -c ${DATA_MB}M /dev/urandom > /tmp/rxe-data
truncate -s $((DATA_MB + 16))M /tmp/rxe-backing
sum_w=$(sha256sum < /tmp/rxe-data | cut -c1-16)

# nvme_roundtrip NAME TARGET_ADDR HOST_ADDR FAMILY HOST_IBDEV: a target on
# TARGET_ADDR, the host connecting from HOST_ADDR, the data written and
# read back; checks that HOST_IBDEV carried the host's queue pairs and
# that both reads match the data.
nvme_roundtrip() {
	local disk ok=false sum_r sum_f
	nvmet_setup /tmp/rxe-backing "$2" "$4" &&
		nvme_connect "$2" "$3" &&
		disk=$(wait_nvme_disk) &&
		rdma res show qp link "$5" | grep -q "type RC" &&
		dd if=/tmp/rxe-data of=/dev/$disk bs=1M oflag=direct status=none &&
		dd if=/dev/$disk of=/tmp/rxe-back bs=1M count=$DATA_MB iflag=direct status=none &&
		ok=true
	sum_r=$(sha256sum < /tmp/rxe-back 2>/dev/null | cut -c1-16)
	sum_f=$(head -c ${DATA_MB}M /tmp/rxe-backing | sha256sum | cut -c1-16)
	echo "# $1: wrote $sum_w, read back $sum_r, target's file $sum_f"
	nvme_disconnect
	nvmet_cleanup
	rm -f /tmp/rxe-back
	$ok && [ "$sum_r" = "$sum_w" ] && [ "$sum_f" = "$sum_w" ]
}

check "IPv4: engine host -> rxe target, $DATA_MB MiB, same SHA-256" \
	nvme_roundtrip v4-engine-rxe $IP_B $IP_A ipv4 "$IB_A"
check "IPv4: rxe host -> engine target, $DATA_MB MiB, same SHA-256" \
	nvme_roundtrip v4-rxe-engine $IP_A $IP_B ipv4 rxe_b
check "IPv6: engine host -> rxe target, $DATA_MB MiB, same SHA-256" \
	nvme_roundtrip v6-engine-rxe $IP6_B $IP6_A ipv6 "$IB_A"
check "IPv6: rxe host -> engine target, $DATA_MB MiB, same SHA-256" \
	nvme_roundtrip v6-rxe-engine $IP6_A $IP6_B ipv6 rxe_b

# Atomics across implementations (rdma_atomic.py, pyverbs): the engine's
# requests on rxe's memory and rxe's on the engine's, two QPs on one
# word, each old value seen once.
ATOMIC=$(dirname "$0")/rdma_atomic.py
GID_A=$(roce_gid_index "$IB_A" "$IP_A")
GID_B=$(roce_gid_index rxe_b "$IP_B")
check "atomics: engine -> rxe, 2 x 500 fetch-and-adds, each old value once" \
	python3 "$ATOMIC" fetch-add "$IB_A" "$GID_A" rxe_b "$GID_B" 500
check "atomics: rxe -> engine, 2 x 500 fetch-and-adds, each old value once" \
	python3 "$ATOMIC" fetch-add rxe_b "$GID_B" "$IB_A" "$GID_A" 500
check "atomics: engine -> rxe, compare-and-swap race, each value won once" \
	python3 "$ATOMIC" cmp-swap "$IB_A" "$GID_A" rxe_b "$GID_B" 300

# IBTA 1.5's ATOMIC WRITE and FLUSH across implementations
# (rdma_flush.py): values and data checked in the target's memory, both
# ways; rxe's refusals of the engine's requests match the engine's.
FLUSH=$(dirname "$0")/rdma_flush.py
check "atomic write: engine -> rxe, 200 into 16 words, each holds its last value" \
	python3 "$FLUSH" atomic-write "$IB_A" "$GID_A" rxe_b "$GID_B" 200
check "atomic write: rxe -> engine, 200 into 16 words, each holds its last value" \
	python3 "$FLUSH" atomic-write rxe_b "$GID_B" "$IB_A" "$GID_A" 200
check "flush: engine -> rxe, 20 x (WRITE, FLUSH), FLUSH of the MR" \
	python3 "$FLUSH" flush "$IB_A" "$GID_A" rxe_b "$GID_B" 20
check "flush: rxe -> engine, 20 x (WRITE, FLUSH), FLUSH of the MR" \
	python3 "$FLUSH" flush rxe_b "$GID_B" "$IB_A" "$GID_A" 20
check "flush/atomic write refusals: engine -> rxe, as the engine refuses them" \
	python3 "$FLUSH" refusals "$IB_A" "$GID_A" rxe_b "$GID_B"
check "flush/atomic write refusals: rxe -> engine" \
	python3 "$FLUSH" refusals rxe_b "$GID_B" "$IB_A" "$GID_A"

# UC across implementations: rdma-core's ibv_uc_pingpong (100 round
# trips, each message's bytes checked, -c), the server on one device and
# the client on the other, both ways.
uc_pingpong() { # SERVER_DEV SERVER_GID CLIENT_DEV CLIENT_GID
	local srv cli_status srv_status
	timeout 60 ibv_uc_pingpong -d "$1" -g "$2" -n 100 -c -p 18600 >/tmp/uc.srv 2>&1 &
	srv=$!
	wait_listening tcp 18600 "" || { kill $srv; return 1; }
	timeout 60 ibv_uc_pingpong -d "$3" -g "$4" -n 100 -c -p 18600 127.0.0.1 >/tmp/uc.cli 2>&1
	cli_status=$?
	wait $srv
	srv_status=$?
	echo "# uc_pingpong, server $1, client $3: exit $srv_status and $cli_status; $(grep -h 'iters in' /tmp/uc.cli | head -n1)"
	[ $cli_status = 0 ] && [ $srv_status = 0 ] ||
		{ cat /tmp/uc.srv /tmp/uc.cli | tail -n 20 | sed 's/^/#   /'; return 1; }
}
check "UC: ibv_uc_pingpong, rxe server, engine client, data checked" \
	uc_pingpong rxe_b "$GID_B" "$IB_A" "$GID_A"
check "UC: ibv_uc_pingpong, engine server, rxe client, data checked" \
	uc_pingpong "$IB_A" "$GID_A" rxe_b "$GID_B"

# UD multicast across implementations (rdma_mcast.c): 20 SENDs to group
# 239.255.1.G, each checked, both ways. rxe receives a group's frames
# only when the IP layer accepts them: its attach adds the group's MAC to
# the netdev but joins no IP group, so netdev B joins it (autojoin), as
# rdma_cm's join would (cma_igmp_send).
MCAST=$(build_rdma_mcast /tmp) || bail_out "cannot build rdma_mcast.c"
mcast_pair() { # RECV_DEV RECV_GID SEND_DEV SEND_GID GROUP
	local recv ok=false
	"$MCAST" "$1" "$2" recv "$5" 20 >/tmp/mc.recv 2>&1 &
	recv=$!
	wait_until 100 grep -q ready /tmp/mc.recv &&
		timeout 60 "$MCAST" "$3" "$4" send "$5" 20 && wait $recv && ok=true
	kill $recv 2>/dev/null
	sed 's/^/#   /' /tmp/mc.recv
	$ok
}
ip addr add 239.255.1.7/32 dev "$NETIF_B" autojoin
check "UD multicast: engine -> rxe, 20 SENDs to 239.255.1.7, each checked" \
	mcast_pair rxe_b "$GID_B" "$IB_A" "$GID_A" 7
ip addr del 239.255.1.7/32 dev "$NETIF_B"
check "UD multicast: rxe -> engine, 20 SENDs to 239.255.1.8, each checked" \
	mcast_pair "$IB_A" "$GID_A" rxe_b "$GID_B" 8

# On-demand paging across implementations: perftest's --odp registers
# its buffers IBV_ACCESS_ON_DEMAND on both sides (rxe faults its pages
# in on the CPU, the engine through its page-fault events); 200 x 4 KiB,
# 16 outstanding, with perftest's CPU clock check off (-F). The engine's
# page faults must grow: its side really was on demand. Not 64 KiB with
# perftest's 128 outstanding: engine -> rxe, that fails 3 runs of 6 with
# no ODP on either side (go-back-N retransmission storms against rxe,
# hundreds of thousands of packets resent; a matter of its own). ib_read_bw runs with -o 16,
# the engine's max_qp_rd_atom, on both sides: perftest does not agree
# the outstanding READs between two devices, and rxe's own 128 makes
# its server's RTS fail against the engine's client (with or without
# --odp).
odp_faults() { harness card A rdma-state | tr ' ' '\n' | sed -n 's/^page_faults=//p'; }
odp_bw() { # TOOL SERVER_DEV SERVER_GID CLIENT_DEV CLIENT_GID
	local srv cli_status srv_status f0 f1 o=
	[ $1 = ib_read_bw ] && o="-o 16"
	f0=$(odp_faults)
	timeout 90 $1 --odp -F $o -d "$2" -x "$3" -n 200 -s 4096 -t 16 -p 18610 >/tmp/odp.srv 2>&1 &
	srv=$!
	wait_listening tcp 18610 "" || { kill $srv; return 1; }
	timeout 90 $1 --odp -F $o -d "$4" -x "$5" -n 200 -s 4096 -t 16 -p 18610 127.0.0.1 >/tmp/odp.cli 2>&1
	cli_status=$?
	wait $srv
	srv_status=$?
	f1=$(odp_faults)
	echo "# $1 --odp, server $2, client $4: exit $srv_status and $cli_status; engine page faults $((f1 - f0))"
	[ $cli_status = 0 ] && [ $srv_status = 0 ] && [ $((f1 - f0)) -gt 0 ] || {
		echo "# server's last lines:"; tail -n 8 /tmp/odp.srv | sed 's/^/#   /'
		echo "# client's last lines:"; tail -n 8 /tmp/odp.cli | sed 's/^/#   /'
		return 1
	}
}
check "ODP: ib_write_bw --odp, rxe server, engine client" odp_bw ib_write_bw rxe_b "$GID_B" "$IB_A" "$GID_A"
check "ODP: ib_write_bw --odp, engine server, rxe client" odp_bw ib_write_bw "$IB_A" "$GID_A" rxe_b "$GID_B"
check "ODP: ib_read_bw --odp, rxe server, engine client" odp_bw ib_read_bw rxe_b "$GID_B" "$IB_A" "$GID_A"
check "ODP: ib_read_bw --odp, engine server, rxe client" odp_bw ib_read_bw "$IB_A" "$GID_A" rxe_b "$GID_B"

csum=$(($(udp_csum_errors) - csum0))
rxe_rx=$(($(rdma_counter rxe_b rcvd_pkts) - rxe_rx0))
eng_rx=$(($(rdma_counter "$IB_A" rx_packets) - eng_rx0))
echo "# rxe received $rxe_rx packets, the engine $eng_rx; UDP checksum errors: $csum"
check "rxe received the engine's frames through the UDP stack ($rxe_rx)" \
	test "$rxe_rx" -gt $((DATA_MB * 1024 / 4))
check "the engine received rxe's frames ($eng_rx)" test "$eng_rx" -gt $((DATA_MB * 1024 / 4))
check "no UDP checksum error at the Linux UDP stack" test "$csum" -eq 0
check "no UDP checksum error at the engine" \
	test "$(rdma_counter "$IB_A" rx_udp_csum_errors)" -eq "$eng_bad0"

# 1% of the frames each wire sends are dropped: RC retransmission (the
# engine's go-back-N and rxe's) recovers every one. A quarter of the
# data (at least 1 MiB): a loss can cost a retransmission timeout, and
# 16 MiB took 50 s engine -> rxe.
DATA_MB=$((DATA_MB >= 4 ? DATA_MB / 4 : 1))
head -c ${DATA_MB}M /tmp/rxe-data >/tmp/rxe-part && mv /tmp/rxe-part /tmp/rxe-data
sum_w=$(sha256sum < /tmp/rxe-data | cut -c1-16)
harness card A wire drop 10 >/dev/null
harness card B wire drop 10 >/dev/null
retx0=$(rdma_counter "$IB_A" retransmits)
tmo0=$(rdma_counter "$IB_A" retransmit_timeouts)
check "1% loss: engine host -> rxe target, $DATA_MB MiB, same SHA-256" \
	nvme_roundtrip loss-engine-rxe $IP_B $IP_A ipv4 "$IB_A"
check "1% loss: rxe host -> engine target, $DATA_MB MiB, same SHA-256" \
	nvme_roundtrip loss-rxe-engine $IP_A $IP_B ipv4 rxe_b
harness card A wire drop 0 >/dev/null
harness card B wire drop 0 >/dev/null
echo "# card A's wire: $(harness card A wire-stats)"
echo "# card B's wire: $(harness card B wire-stats)"
echo "# engine retransmits +$(($(rdma_counter "$IB_A" retransmits) - retx0)), timeouts +$(($(rdma_counter "$IB_A" retransmit_timeouts) - tmo0))"
check "the engine retransmitted what the wire lost" \
	test "$(rdma_counter "$IB_A" retransmits)" -gt "$retx0"

check "no kernel warnings" dmesg_clean
ktap_finish
