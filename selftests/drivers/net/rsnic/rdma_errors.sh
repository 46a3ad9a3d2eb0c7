#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RDMA errors are reported, recovered from and leak nothing, with
# nvme-rdma (card A) against nvmet-rdma (card B) as the ULPs:
#
# - a QP state change the card refuses (harness `rdma-fault
#   reject-modify`): the driver's modify_qp fails with EINVAL, rdma_cm's
#   connect fails with it, and every object is given back;
# - an access violation (`rdma-fault bad-rkey`: card B's engine sends
#   its next RDMA READ with a wrong R_Key): card A's responder refuses
#   it, NAKs, and its QP fails; card B's QP completes the READ with a
#   remote access error and fails too; both ULPs see it, nvme-rdma
#   reconnects, and no byte of the data is lost or changed. Each card's
#   devlink `rdma` health reporter counts its failed QP, keeps a dump
#   naming it, and is healthy again after its recovery.

source "$(dirname "$0")/lib.sh"
rdma_vrf_setup || echo "# no carrier after set-up"
cleanup() {
	harness card A rdma-fault reject-modify 0 >/dev/null 2>&1
	harness card B rdma-fault bad-rkey 0 >/dev/null 2>&1
	nvme_rdma_cleanup
	rm -f /tmp/err-backing /tmp/err-data /tmp/err-back
	rdma_vrf_cleanup
}
trap cleanup EXIT
dmesg_mark

nvme_rdma_require

# connect_error: the error message a connect fails with (empty: it worked).
connect_error() {
	modprobe nvme-rdma || return
	{ echo "transport=rdma,traddr=$IP_B,trsvcid=4420,nqn=$NVME_NQN,host_traddr=$IP_A,reconnect_delay=1" \
		> /dev/nvme-fabrics; } 2>&1 | sed 's/.*write error: //'
}

ktap_header 12
truncate -s 16M /tmp/err-backing
nvmet_setup /tmp/err-backing || echo "# nvmet set-up failed"
res0=$(rdma_objects)
# Faults a card's engine injected since it started (other tests inject too).
injected() { harness card "$1" rdma-fault | sed -n 's/.* injected=\([0-9]*\).*/\1/p'; }
# The card used the one fault armed (none left) and injected one more.
used_one() { # CARD ARMED-FIELD INJECTED-BEFORE
	harness card "$1" rdma-fault | grep -q " $2=0 " && test "$(injected "$1")" = $(($3 + 1))
}

injected_a=$(injected A)
harness card A rdma-fault reject-modify 1 >/dev/null
err=$(connect_error)
echo "# connect with a refused QP state change: ${err:-connected}"
check "a QP state change the card refuses fails rdma_cm's connect with EINVAL" \
	test "$err" = "Invalid argument"
check "the card refused exactly one state change" \
	used_one A reject_modify "$injected_a"
check "nvme-rdma reports the failed connection" \
	eval 'dmesg_since_mark | grep -q "rdma connection establishment failed (-22)"'
check "the failed connect gave every object back" wait_rdma_objects "$res0"

err=$(connect_error)
disk=$(wait_nvme_disk)
check "the next connect works (${disk:-no disk}${err:+: $err})" test -n "$disk"

head -c 4M /dev/urandom > /tmp/err-data
[ -n "$disk" ] && dd if=/tmp/err-data of=/dev/$disk bs=1M oflag=direct status=none

counter() { rdma_counter "$1" "$2"; }
req_err_b=$(counter $IB_B req_cqe_error)
resp_flush_a=$(counter $IB_A resp_cqe_flush_error)
# rdma_reporter CARD FIELD: a field of card CARD's devlink `rdma` reporter.
rdma_reporter() { health_field "pci/$(card_addr "$1")" rdma "$2"; }
# Card CARD's reporter counted ERRORS and RECOVERS more than before, is
# healthy, and its dump names a failed QP.
rdma_reported() { # CARD ERRORS0 RECOVERS0
	[ "$(rdma_reporter "$1" error)" -gt "$2" ] && [ "$(rdma_reporter "$1" recover)" -gt "$3" ] &&
		[ "$(rdma_reporter "$1" state)" = healthy ] &&
		devlink health dump show "pci/$(card_addr "$1")" reporter rdma | grep -q "last_failed_qpn"
}
for card in A B; do devlink health dump clear "pci/$(card_addr $card)" reporter rdma; done
errors_a=$(rdma_reporter A error) recovers_a=$(rdma_reporter A recover)
errors_b=$(rdma_reporter B error) recovers_b=$(rdma_reporter B recover)
injected_b=$(injected B)
harness card B rdma-fault bad-rkey 1 >/dev/null
# nvmet fetches written data with RDMA READ: the first one fails.
ok=false
[ -n "$disk" ] &&
	dd if=/tmp/err-data of=/dev/$disk bs=1M count=1 seek=4 oflag=direct status=none && ok=true
echo "# card B: $(harness card B rdma-fault)"
check "card B's engine sent one RDMA READ with a wrong R_Key" \
	used_one B bad_rkey "$injected_b"
req_err_b=$(($(counter $IB_B req_cqe_error) - req_err_b))
resp_flush_a=$(($(counter $IB_A resp_cqe_flush_error) - resp_flush_a))
echo "# $IB_B req_cqe_error +$req_err_b, $IB_A resp_cqe_flush_error +$resp_flush_a"
echo "# $(dmesg_since_mark | grep -E 'nvmet_rdma|nvme nvme' | grep -Ev 'Created|adding|enabling|MULTIPATH|queues' | sed 's/^\[[^]]*\] //' | tr '\n' ';')"
check "card B's requester completed the READ in error and its QP failed (req_cqe_error, QP fatal event)" \
	eval '[ $req_err_b -ge 1 ] && dmesg_since_mark | grep -q "nvmet_rdma: received IB QP event: QP fatal error"'
check "card A's responder refused it and its QP failed, flushing the receives" \
	eval '[ $resp_flush_a -ge 1 ] && dmesg_since_mark | grep -q "nvme nvme[0-9]*: starting error recovery"'

ok2=false
if $ok; then
	wait_until 100 eval 'dmesg_since_mark | grep -q "Successfully reconnected"'
	dd if=/dev/$disk of=/tmp/err-back bs=1M count=5 iflag=direct status=none &&
		cmp -s /tmp/err-back <(cat /tmp/err-data; head -c 1M /tmp/err-data) && ok2=true
fi
check "nvme-rdma reconnected, the write completed, and all 5 MiB read back unchanged" $ok2
for card in A B; do
	echo "# card $card devlink rdma reporter: error $(rdma_reporter $card error)," \
		"recover $(rdma_reporter $card recover), $(rdma_reporter $card state)"
done
devlink health dump show "pci/$(card_addr B)" reporter rdma | sed -n 's/^/# B dump: /p' | head -n 4
check "devlink: each card's rdma reporter counted its failed QP, dumped it, recovered" \
	eval 'wait_until 50 rdma_reported A $errors_a $recovers_a && wait_until 50 rdma_reported B $errors_b $recovers_b'

nvme_rdma_cleanup
check "after the disconnect, every PD, CQ, QP and MR is given back" wait_rdma_objects "$res0"
check "no kernel warnings" dmesg_clean
ktap_finish
