#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The RDMA engine speaks standard RoCEv2 on the wire: nvme-rdma traffic
# between the cards (rdma_cm's CM MADs on QP1, then RC sends, RDMA
# writes, reads and acknowledgements), then RC atomics from pyverbs
# (compare-and-swap, fetch-and-add, atomic acknowledges) are captured by
# the tap on card A's
# wire, decoded by tshark as RoCEv2 without a malformed frame, and every
# frame's invariant CRC is checked by an independent implementation
# (roce.py).
#
# The engine's frames never cross the host's netdev (the card builds
# them), so tcpdump in the guest cannot see them: the harness's
# `capture` command records the card's wire into the shared run
# directory instead.

source "$(dirname "$0")/lib.sh"
ROCE_PY="$(dirname "$0")/roce.py"
ATOMIC_PY="$(dirname "$0")/rdma_atomic.py"
CAP=rdma_wire.pcap
CAP_PATH=/run/rsnic/$CAP
DATA_MB=2
command -v tshark >/dev/null || skip_all "tshark is not installed"
rdma_vrf_setup || echo "# no carrier after set-up"
cleanup() {
	harness card A capture stop >/dev/null 2>&1
	nvme_rdma_cleanup
	rm -f /tmp/wire-backing /tmp/wire-data /tmp/wire-back /tmp/wire-decoded "$CAP_PATH"
	rdma_vrf_cleanup
}
trap cleanup EXIT
dmesg_mark

nvme_rdma_require
[ -d /run/rsnic ] || skip_all "no shared run directory (not in the rsnic VM?)"

ktap_header 12
check "card A's wire tap starts" eval 'harness card A capture $CAP >/dev/null'

truncate -s $((DATA_MB + 8))M /tmp/wire-backing
head -c ${DATA_MB}M /dev/urandom > /tmp/wire-data
ok=false
if nvmet_setup /tmp/wire-backing && nvme_connect; then
	disk=$(wait_nvme_disk) &&
		dd if=/tmp/wire-data of=/dev/$disk bs=1M oflag=direct status=none &&
		dd if=/dev/$disk of=/tmp/wire-back bs=1M count=$DATA_MB iflag=direct status=none &&
		cmp -s /tmp/wire-data /tmp/wire-back && ok=true
fi
check "nvme-rdma writes and reads back $DATA_MB MiB while the tap records" $ok
nvme_disconnect
nvmet_cleanup
A=$(card_addr A) B=$(card_addr B)
IB_A=$(ibdev_of "$A") IB_B=$(ibdev_of "$B")
GID_A=$(roce_gid_index "$IB_A" "$IP_A") GID_B=$(roce_gid_index "$IB_B" "$IP_B")
check "pyverbs: 2 x 50 fetch-and-adds and a compare-and-swap race card A -> card B" \
	eval 'python3 "$ATOMIC_PY" fetch-add "$IB_A" "$GID_A" "$IB_B" "$GID_B" 50 &&
	      python3 "$ATOMIC_PY" cmp-swap "$IB_A" "$GID_A" "$IB_B" "$GID_B" 50'

reply=$(harness card A capture stop)
frames=${reply#ok frames=}
echo "# capture: $reply"
check "the capture is complete and holds frames" \
	eval '[[ $reply == "ok frames="* ]] && [ "$frames" -gt 0 ]'

# One line per frame: UDP destination port, BTH opcode, malformed or
# expert flags, the summary. Only RoCEv2 itself is judged: the payload
# dissectors tshark tries on RDMA payloads are off (the NVMe-oF one
# parses command data split over RDMA WRITE MIDDLE packets and calls
# some malformed; the Ethernet-over-IB one reads random data as IP).
payload_heuristics=$(tshark -G heuristic-decodes 2>/dev/null |
	awk -F'\t' '$1 == "infiniband.payload" {printf " --disable-heuristic %s", $5}')
tshark $payload_heuristics -r "$CAP_PATH" -T fields -E separator='|' \
	-e udp.dstport -e infiniband.bth.opcode -e _ws.malformed -e _ws.expert -e _ws.col.info \
	> /tmp/wire-decoded 2>/dev/null
roce=$(awk -F'|' '$1 == 4791' /tmp/wire-decoded | wc -l)
decoded=$(awk -F'|' '$1 == 4791 && $2 != ""' /tmp/wire-decoded | wc -l)
flagged=$(awk -F'|' '$1 == 4791 && ($3 != "" || $4 != "")' /tmp/wire-decoded | wc -l)
echo "# $(wc -l < /tmp/wire-decoded) frames, $roce to UDP port 4791, $decoded with a BTH, $flagged flagged"
check "tshark decodes every RoCEv2 frame's transport headers" \
	test "$roce" -gt 0 -a "$decoded" -eq "$roce"
awk -F'|' '$1 == 4791 && ($3 != "" || $4 != "") {print "# flagged: " $0}' /tmp/wire-decoded | head -n 3
check "no RoCEv2 frame is malformed or flagged by tshark" test "$flagged" -eq 0

# has_opcode NAME CODE...: some frame carries one of the BTH opcodes.
missing=
has_opcode() {
	local name=$1 code
	shift
	for code; do
		awk -F'|' -v c=$code '$1 == 4791 && $2 == c {f = 1} END {exit !f}' /tmp/wire-decoded && return
	done
	missing+=" $name"
}
has_opcode "UD-SEND(CM)" 100
has_opcode SEND 4
has_opcode SEND-WITH-INVALIDATE 22 23
has_opcode RDMA-WRITE 6 10
has_opcode RDMA-READ-REQUEST 12
has_opcode RDMA-READ-RESPONSE 13 16
has_opcode ACK 17
has_opcode ATOMIC-ACKNOWLEDGE 18
has_opcode COMPARE-SWAP 19
has_opcode FETCH-ADD 20
for msg in ConnectRequest ConnectReply ReadyToUse; do
	grep -q "CM: $msg" /tmp/wire-decoded || missing+=" CM-$msg"
done
echo "# opcodes: $(awk -F'|' '$1 == 4791 {print $2}' /tmp/wire-decoded | sort -n | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
check "the CM handshake, sends, RDMA writes, reads, atomics and ACKs are all on the wire${missing:+ (missing:$missing)}" \
	test -z "$missing"

icrc=$(python3 "$ROCE_PY" icrc "$CAP_PATH")
echo "# ICRC: $icrc"
check "every RoCEv2 frame carries a correct ICRC" eval '[[ $icrc == "frames=$roce good=$roce bad=0" ]]'
flip=$(python3 "$ROCE_PY" icrc --flip "$CAP_PATH")
check "one flipped bit fails the ICRC of every frame" eval '[[ $flip == "frames=$roce good=0 bad=$roce" ]]'
# IP and UDP checksums, twice independently of the card: Python (RFC 768)
# and tshark's own validation.
csum=$(python3 "$ROCE_PY" csum "$CAP_PATH")
csum_flip=$(python3 "$ROCE_PY" csum --flip "$CAP_PATH")
echo "# IP/UDP checksums: $csum; with a flipped bit: $csum_flip"
check "every RoCEv2 frame carries correct IP and UDP checksums (and a flipped bit fails them)" \
	eval '[[ $csum == "frames=$roce good=$roce bad=0 zero=0" && $csum_flip == "frames=$roce good=0 bad=$roce zero=0" ]]'
tshark -o udp.check_checksum:TRUE -o ip.check_checksum:TRUE -r "$CAP_PATH" -Y udp.dstport==4791 \
	-T fields -e udp.checksum.status -e ip.checksum.status > /tmp/wire-csum 2>/dev/null
ts_bad=$(grep -cv '^1	\(1\|\)$' /tmp/wire-csum)
echo "# tshark checksum status (1 = good): $(sort /tmp/wire-csum | uniq -c | tr '\n\t' '; ')"
check "tshark validates the UDP (and IPv4 header) checksum of every RoCEv2 frame" \
	test "$(wc -l < /tmp/wire-csum)" -eq "$roce" -a "$ts_bad" -eq 0
check "no kernel warnings" dmesg_clean
ktap_finish
