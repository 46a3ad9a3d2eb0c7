#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A bad cable: both cards' wires drop, duplicate, reorder and corrupt a
# share of the frames they send (`harness card X wire <kind> <per-mille>`),
# and a TCP transfer still arrives byte for byte (SHA-256 on both ends).
# Corrupted frames fail the frame check sequence at the receiving card,
# which flags them; the driver drops them and counts them as RX CRC errors
# (rxN_crc_errors, rx_crc_errors in the link statistics).
#
# Transfers are 64 MiB where the wire duplicates or reorders (6-8 s
# here), 16 MiB with all four impairments at 1% (~120 frames of each
# kind), and 2 MiB at 10% loss or corruption (~300 frames hit): TCP moves
# about 1.4 Mbit/s there in this VM (retransmission timeouts dominate:
# 8 MiB took 46-48 s). RSNIC_WIRE_FULL=1 makes every transfer 64 MiB
# (~2.5 min each at 10% loss). The debug kernel moves a quarter of each.
# Each run's impairment must show in the wires' own counters
# (wire-stats).
#
# Then RDMA between the two cards' engines: nvme-rdma connects over a
# clean wire, then writes and reads back 8 MiB intact while the wire
# drops, duplicates and reorders 1% each way and each card's responders
# answer $RNR new SENDs with an RNR NAK (`rdma-fault rnr`, as if their
# receive queue were empty); the requesters retransmitted (go-back-N)
# and waited out the RNR NAKs, the responders saw duplicate requests and
# NAKed sequence errors. (Connecting over the impaired wire is not
# tested: rdma_cm's connect hung there, see testing.rst.)

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
command -v python3 >/dev/null || skip_all "python3 not installed"
nvme_rdma_require
impair() { # per-mille for every kind on both cards' wires
	local card kind
	for card in A B; do
		for kind in drop dup reorder corrupt; do
			harness card $card wire $kind "$(eval echo \${$kind:-0})" >/dev/null
		done
	done
}
cleanup() {
	kill $(jobs -p) 2>/dev/null
	drop=0 dup=0 reorder=0 corrupt=0 impair
	harness card A rdma-fault rnr 0 >/dev/null 2>&1
	harness card B rdma-fault rnr 0 >/dev/null 2>&1
	nvme_rdma_cleanup 2>/dev/null
	rdma_vrf_cleanup 2>/dev/null
	net_cleanup
	rm -f /tmp/wire.blob /tmp/wire-backing /tmp/wire-back
}
trap cleanup EXIT

head -c 64M /dev/urandom >/tmp/wire.blob

# Sends the first $1 MiB of the blob from A to the remote over one TCP
# connection; prints "<bytes> <sha256>" as received.
transfer() {
	ip netns exec $NS python3 -c '
import hashlib, socket
srv = socket.create_server(("0.0.0.0", 5600))
srv.settimeout(60)
conn, _ = srv.accept()
conn.settimeout(120)
h, n = hashlib.sha256(), 0
while data := conn.recv(1 << 20):
    h.update(data)
    n += len(data)
print(n, h.hexdigest())' >/tmp/wire.recv &
	local receiver=$!
	wait_listening tcp 5600
	python3 -c '
import socket, sys
conn = socket.create_connection((sys.argv[1], 5600), timeout=120)
with open(sys.argv[2], "rb") as f:
    for _ in range(int(sys.argv[3])):
        conn.sendall(f.read(1 << 20))
conn.shutdown(socket.SHUT_WR)
conn.recv(1)' $IP_B /tmp/wire.blob $1
	wait $receiver
	cat /tmp/wire.recv
}
remote_crc() { ip netns exec $NS cat /sys/class/net/$NETIF_B/statistics/rx_crc_errors; }
remote_queue_crc() {
	ip netns exec $NS ethtool -S "$NETIF_B" | awk '/rx[0-9]+_crc_errors:/ {n += $2} END {print n + 0}'
}
card_stat() { harness card $1 $2 | tr ' ' '\n' | sed -n "s/^$3=//p"; }

bad_completions() { ethtool -S "$NETIF_A" | awk '/bad_completions:/ {n += $2} END {print n + 0}'; }
bad0=$(bad_completions)

# wire_sum KIND: KIND's count on both cards' wires.
wire_sum() { echo $(($(card_stat A wire-stats "$1") + $(card_stat B wire-stats "$1"))); }
impaired() { # KIND BEFORE
	local now
	now=$(wire_sum "$1")
	echo "# wires $1: +$((now - $2))"
	[ "$now" -gt "$2" ]
}

ktap_header 19

# One run per line: MiB to move, the impairments in frames per thousand.
while read -r name size_mb drop dup reorder corrupt; do
	[ -n "${RSNIC_WIRE_FULL:-}" ] && size_mb=64
	is_debug_kernel && size_mb=$((size_mb > 4 ? size_mb / 4 : 1))
	want=$(head -c ${size_mb}M /tmp/wire.blob | sha256sum | cut -d' ' -f1)
	impair
	dropped0=$(wire_sum dropped) duplicated0=$(wire_sum duplicated) reordered0=$(wire_sum reordered)
	crc0=$(remote_crc)
	flagged0=$(card_stat B stats rx_fcs_errors)
	corrupted0=$(card_stat A wire-stats corrupted)
	inline0=$(wire_sum inline_batches)
	start=$SECONDS
	got=$(transfer $size_mb)
	took=$((SECONDS - start))
	# Read before the wire is clean again: a frame sent after that (an
	# ACK, a neighbour probe) may go inline, as it should.
	inline1=$(wire_sum inline_batches)
	drop=0 dup=0 reorder=0 corrupt=0 impair
	echo "# $name: $got in ${took}s; A's wire: $(harness card A wire-stats)"
	check "$name: ${size_mb} MiB over TCP arrive byte for byte" \
		test "$got" = "$(($size_mb * 1048576)) $want"
	case $name in
	drop-10%) check "$name: the wires dropped frames" impaired dropped "$dropped0" ;;
	dup-10%) check "$name: the wires duplicated frames" impaired duplicated "$duplicated0" ;;
	reorder-10%) check "$name: the wires reordered frames" impaired reordered "$reordered0" ;;
	esac
	if [ "$name" = "corrupt-10%" ] || [ "$name" = "all-1%" ]; then
		crc=$(($(remote_crc) - crc0))
		flagged=$(($(card_stat B stats rx_fcs_errors) - flagged0))
		corrupted=$(($(card_stat A wire-stats corrupted) - corrupted0))
		echo "# corrupted on the wire $corrupted, flagged by the card $flagged, driver's rx_crc_errors $crc"
		# (A corrupted frame may also be duplicated: flagged twice.)
		check "$name: every frame the card flagged is an RX CRC error (and some were)" \
			test "$crc" -gt 0 -a "$crc" = "$flagged" -a "$(remote_queue_crc)" = "$(remote_crc)"
	fi
	if [ "$name" = "corrupt-10%" ]; then
		# An impaired wire sends by socket, with its FCS, even to a
		# peer card in the same process.
		check_eq "$name: no batch bypassed the impaired wire" "$inline1" "$inline0"
	fi
done <<'EOF'
all-1% 16 10 10 10 10
drop-10% 2 100 0 0 0
dup-10% 64 0 100 0 0
reorder-10% 64 0 0 100 0
corrupt-10% 2 0 0 0 100
EOF
check "with the cable healed, ping answers" ping -c 3 -W 2 -q $IP_B
# The VM's two cards share one emulator process (qemu/vm.py): a clean
# cable carries their frames from the sending thread into the peer card.
inline_a=$(card_stat A wire-stats inline_batches) inline_b=$(card_stat B wire-stats inline_batches)
want=$(head -c 16M /tmp/wire.blob | sha256sum | cut -d' ' -f1)
check "clean cable: 16 MiB over TCP arrive byte for byte" test "$(transfer 16)" = "16777216 $want"
echo "# batches delivered in process: A $(($(card_stat A wire-stats inline_batches) - inline_a)), B $(($(card_stat B wire-stats inline_batches) - inline_b))"
check "clean cable: both cards delivered in process" \
	test "$(card_stat A wire-stats inline_batches)" -gt "$inline_a" -a "$(card_stat B wire-stats inline_batches)" -gt "$inline_b"
check_eq "the cards never wrote a bad completion meanwhile" "$(bad_completions)" "$bad0"

# RDMA: nvme-rdma between the engines (card B in a VRF: rdma_vrf_setup).
net_cleanup
rdma_vrf_setup || echo "# no carrier after the VRF set-up"
counters() { # NAME: its sum over both engines
	echo $(($(rdma_counter "$IB_A" "$1") + $(rdma_counter "$IB_B" "$1")))
}
retx0=$(counters retransmits) dups0=$(counters duplicate_requests) naks0=$(counters seq_naks_sent)
rnr0=$(counters rnr_naks_sent)
RNR=3 # per card; rdma_cm's responders ask for the longest RNR wait, 655 ms
truncate -s 16M /tmp/wire-backing
ok=false
dropped0=$(wire_sum dropped) duplicated0=$(wire_sum duplicated) reordered0=$(wire_sum reordered)
if nvmet_setup /tmp/wire-backing && nvme_connect && disk=$(wait_nvme_disk); then
	drop=10 dup=10 reorder=10 corrupt=0
	impair
	harness card A rdma-fault rnr $RNR >/dev/null
	harness card B rdma-fault rnr $RNR >/dev/null
	head -c 8M /tmp/wire.blob | dd of=/dev/$disk bs=1M oflag=direct status=none &&
		dd if=/dev/$disk of=/tmp/wire-back bs=1M count=8 iflag=direct status=none &&
		cmp -s /tmp/wire-back <(head -c 8M /tmp/wire.blob) &&
		cmp -s <(head -c 8M /tmp/wire-backing) <(head -c 8M /tmp/wire.blob) && ok=true
fi
drop=0 dup=0 reorder=0 corrupt=0 impair
nvme_disconnect
nvmet_cleanup
retx=$(($(counters retransmits) - retx0)) dups=$(($(counters duplicate_requests) - dups0))
naks=$(($(counters seq_naks_sent) - naks0)) rnrs=$(($(counters rnr_naks_sent) - rnr0))
rnr_left() { harness card "$1" rdma-fault | grep -q "rnr=0 "; }
echo "# RDMA over the impaired wire: wires dropped +$(($(wire_sum dropped) - dropped0))," \
	"duplicated +$(($(wire_sum duplicated) - duplicated0)), reordered +$(($(wire_sum reordered) - reordered0));" \
	"engines retransmitted $retx, saw $dups duplicate requests, sent $naks sequence NAKs and $rnrs RNR NAKs"
check "nvme-rdma (connected) writes and reads back 8 MiB intact over a wire dropping, duplicating and reordering 1%" $ok
check "RDMA RC: the requesters retransmitted (go-back-N)" test "$retx" -gt 0
check "RDMA RC: the responders saw duplicate requests and NAKed out-of-sequence ones" \
	test "$dups" -gt 0 -a "$naks" -gt 0
check "RDMA RC: $RNR RNR NAKs from each card's responders, waited out and sent again (data above intact)" \
	eval 'rnr_left A && rnr_left B && test "$rnrs" -ge $((2 * RNR))'
rdma_vrf_cleanup
net_setup || echo "# no carrier after set-up"
ktap_finish
