# SPDX-License-Identifier: GPL-2.0
#
# Shared helpers of the rsnic selftests: KTAP output (the kselftest format)
# and access to the cards, the driver and the test harness.

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

RSNIC_KO=${RSNIC_KO:-/rsnic/rsnic.ko}
RSNIC_VENDOR=0x10ee
RSNIC_PF_DEVICE=0x5201
RSNIC_DEBUGFS=/sys/kernel/debug/rsnic
RSNIC_CTL=/dev/virtio-ports/org.rsnic.ctl

ktap_count=0
ktap_failed=0
ktap_skipped=0

ktap_header() { echo "TAP version 13"; echo "1..$1"; }

ktap_result() { # ok|fail|skip description [reason]
	ktap_count=$((ktap_count + 1))
	case $1 in
	ok) echo "ok $ktap_count $2" ;;
	skip) echo "ok $ktap_count $2 # SKIP ${3:-}"; ktap_skipped=$((ktap_skipped + 1)) ;;
	*) echo "not ok $ktap_count $2${3:+ # $3}"; ktap_failed=$((ktap_failed + 1)) ;;
	esac
}

# check DESCRIPTION COMMAND...: one KTAP result from a command's status.
check() {
	local desc=$1
	shift
	if "$@"; then ktap_result ok "$desc"; else ktap_result fail "$desc"; fi
}

ktap_finish() {
	echo "# totals: $((ktap_count - ktap_failed - ktap_skipped)) pass, $ktap_failed fail, $ktap_skipped skip"
	[ "$ktap_failed" -eq 0 ] && exit $KSFT_PASS
	exit $KSFT_FAIL
}

skip_all() { echo "TAP version 13"; echo "1..0 # SKIP $1"; exit $KSFT_SKIP; }

# PCI addresses of the cards' PFs in bus order; the harness puts card A
# on the first root port and card B on the second.
rsnic_pf_addrs() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = "$RSNIC_VENDOR" ] || continue
		[ "$(cat "$d/device")" = "$RSNIC_PF_DEVICE" ] || continue
		basename "$d"
	done
}

card_addr() { # A|B
	local addrs
	addrs=($(rsnic_pf_addrs))
	case $1 in A) echo "${addrs[0]}" ;; B) echo "${addrs[1]}" ;; esac
}

is_bound() { [ -e "/sys/bus/pci/drivers/rsnic/$1" ]; }

bound_count() { ls -d /sys/bus/pci/drivers/rsnic/0000:* 2>/dev/null | wc -l; }

load_driver() { lsmod | grep -q '^rsnic ' || insmod "$RSNIC_KO"; }

unload_driver() { ! lsmod | grep -q '^rsnic ' || rmmod rsnic; }

# Sends one request to the harness on the host (see qemu/vm.py,
# HarnessControl) and prints its reply; fails unless the reply is "ok...".
harness() {
	local reply
	[ -c "$RSNIC_CTL" ] || { echo "no harness control port $RSNIC_CTL" >&2; return 1; }
	exec {fd}<>"$RSNIC_CTL"
	echo "$*" >&$fd
	read -r -t 20 reply <&$fd
	exec {fd}>&-
	echo "$reply"
	[[ $reply == ok* ]]
}

# Kernel log lines since the mark set by dmesg_mark.
dmesg_mark() { dmesg_mark_lines=$(dmesg | wc -l); }
dmesg_since_mark() { dmesg | tail -n +$((dmesg_mark_lines + 1)); }
