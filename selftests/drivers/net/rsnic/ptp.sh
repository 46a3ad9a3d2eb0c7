#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The card's clock as a PTP hardware clock, and hardware time stamps,
# checked by linuxptp: each PF names its PHC in `ethtool -T` (the one
# under its PCI device); phc_ctl sets it, moves it, and runs it faster
# (the rate measured against the kernel's CLOCK_MONOTONIC_RAW, not the
# card's say); out-of-range steering and time stamping kinds the card
# cannot do are refused with ERANGE, nothing changed; phc2sys steers
# card B's clock onto card A's; ptp4l synchronises them over the wire
# between the cards with hardware time stamps (A the grandmaster, B a
# slave in its namespace), and the two clocks, read through phc_ctl
# against the system clock, then agree.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; net_cleanup' EXIT
dmesg_mark

# The PHC a netdev names (`ethtool -T`), as /dev/ptpN; $2: run in $NS.
phc_of() {
	local n
	n=$(${2:+ip netns exec $NS} ethtool -T "$1" | awk -F': ' '/provider index|PTP Hardware Clock/ {print $2}')
	[ -n "$n" ] && [ "$n" -ge 0 ] 2>/dev/null && echo "/dev/ptp$n"
}
PHC_A=$(phc_of "$NETIF_A")
PHC_B=$(phc_of "$NETIF_B" ns)
echo "# card A's clock: ${PHC_A:-none}, card B's: ${PHC_B:-none}"

# CLOCK_REALTIME minus the clock, in ns (phc_ctl cmp).
phc_offset() { phc_ctl "$1" cmp | sed -n 's/.*offset from CLOCK_REALTIME is \(-\?[0-9]*\)ns.*/\1/p'; }
# The clock's rate against CLOCK_MONOTONIC_RAW over $2 s, in ppb.
phc_rate_ppb() {
	python3 - "$1" "$2" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
clk = (~fd << 3) | 3
def pair():
    # The tightest of 7 brackets: a vCPU preempted mid-read widens one.
    best = None
    for _ in range(7):
        m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        p = time.clock_gettime_ns(clk)
        m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        if best is None or m1 - m0 < best[0]:
            best = (m1 - m0, p, (m0 + m1) // 2)
    return best[1], best[2]
p0, m0 = pair()
time.sleep(float(sys.argv[2]))
p1, m1 = pair()
print(round(((p1 - p0) / (m1 - m0) - 1) * 1e9))
PY
}
abs() { local v=${1#-}; echo "${v:-999999999}"; }
hw_sent() {
	${2:+ip netns exec $NS} ethtool -S "$1" | awk '/tx[0-9]+_tstamps:/ {n += $2} END {print n + 0}'
}

ktap_header 11
if [ -z "$PHC_A" ] || [ -z "$PHC_B" ]; then
	missing "both cards name a PTP clock" "ethtool -T shows no hardware clock"
else
	caps=$(ethtool -T "$NETIF_A")
	under=$(ls "/sys/bus/pci/devices/$(basename "$(readlink -f "/sys/class/net/$NETIF_A/device")")/ptp" 2>/dev/null)
	check "card A: hardware TX/RX/raw stamps, its PHC ${PHC_A#/dev/} under its PCI device" \
		test "$(grep -cE '^\s+(hardware-transmit|hardware-receive|hardware-raw-clock)$' <<<"$caps")" = 3 \
		-a "$under" = "${PHC_A#/dev/}" -a "$PHC_A" != "$PHC_B"
fi

out=$(phc_ctl "$PHC_A" set 1000 get 2>&1)
got=$(sed -n 's/.*clock time is \([0-9.]*\) .*/\1/p' <<<"$out")
echo "# set to 1000 s, read ${got:-nothing}"
check "phc_ctl set: the clock reads what it was set to (1000 s, within 0.1 s)" \
	python3 -c "import sys; sys.exit(not (1000 <= float('${got:-0}') < 1000.1))"

phc_ctl "$PHC_A" set >/dev/null
off=$(phc_offset "$PHC_A")
phc_ctl "$PHC_A" adj 5 >/dev/null
moved=$(phc_offset "$PHC_A")
echo "# set to the system's time: ${off} ns off; after adj 5: ${moved} ns"
check "phc_ctl set to now, then adj 5: 0 and 5 s ahead of CLOCK_REALTIME (within 20 ms)" \
	test "$(abs "$off")" -lt 20000000 -a "$(abs "$((${moved:-0} + 5000000000))")" -lt 20000000
phc_ctl "$PHC_A" set >/dev/null

# (The VM's own clock is no reference to a few ppm: its TSC is
# calibrated under TCG, and each reading of the card's is a trapped
# register read. The difference of two rates is what counts.)
plain=$(phc_rate_ppb "$PHC_A" 3)
phc_ctl "$PHC_A" freq 900000 >/dev/null
fast=$(phc_rate_ppb "$PHC_A" 3)
phc_ctl "$PHC_A" -- freq -900000 >/dev/null
slow=$(phc_rate_ppb "$PHC_A" 3)
phc_ctl "$PHC_A" freq 0 >/dev/null
echo "# rate against CLOCK_MONOTONIC_RAW: freq 0 -> ${plain} ppb, +900000 -> ${fast}, -900000 -> ${slow}"
check "phc_ctl freq +-900000 ppb runs the clock 900 ppm fast and slow (within 100 ppm)" \
	test "$(abs "$((${fast:-0} - ${plain:-0} - 900000))")" -lt 100000 \
	-a "$(abs "$((${slow:-0} - ${plain:-0} + 900000))")" -lt 100000

before=$(phc_rate_ppb "$PHC_A" 1)
refused=$(phc_ctl "$PHC_A" freq 2000000 2>&1)
after=$(phc_rate_ppb "$PHC_A" 1)
echo "# freq 2000000 ppb (the card's limit is 1000000): $(grep -o 'failed.*' <<<"$refused"); rate ${before} -> ${after} ppb"
check "a frequency beyond the card's limit is refused (ERANGE) and the rate stays" \
	test "$(abs "$((${after:-0} - ${before:-0}))")" -lt 150000 -a -n "$(grep "Numerical result out of range" <<<"$refused")"

# SIOCSHWTSTAMP with HWTSTAMP_TX_ONESTEP_SYNC (hwstamp_ctl knows only
# off and on).
hwtstamp_set() {
	python3 - "$1" "$2" "$3" <<'PY'
import ctypes, fcntl, socket, struct, sys
cfg = ctypes.create_string_buffer(struct.pack("iii", 0, int(sys.argv[2]), int(sys.argv[3])))
ifr = struct.pack("16sP", sys.argv[1].encode(), ctypes.addressof(cfg))
try:
    fcntl.ioctl(socket.socket(socket.AF_INET, socket.SOCK_DGRAM), 0x89b0, ifr)
    print("ok", *struct.unpack("iii", cfg.raw[:12])[1:])
except OSError as e:
    print("error", e.strerror)
PY
}
hwstamp_ctl -i "$NETIF_A" -t 1 -r 1 >/dev/null
onestep=$(hwtstamp_set "$NETIF_A" 2 1)
now=$(hwstamp_ctl -i "$NETIF_A" | tr '\n' ' ')
ptp_only=$(hwtstamp_set "$NETIF_A" 1 12)
hwstamp_ctl -i "$NETIF_A" -t 0 -r 0 >/dev/null
echo "# one-step TX stamps: $onestep; setting now: $now; RX filter PTP v2 events: $ptp_only"
check "one-step TX stamps refused (ERANGE), the setting kept; a PTP-only RX filter becomes all" \
	test "$onestep" = "error Numerical result out of range" \
	-a "$(grep -o 'tx_type [0-9]*' <<<"$now" | head -1)" = "tx_type 1" -a "$ptp_only" = "ok 1 1"

# phc2sys: B's clock, put 0.5 s off, steered onto A's.
phc_ctl "$PHC_B" set >/dev/null
phc_ctl "$PHC_B" adj 0.5 >/dev/null
timeout 8 phc2sys -s "$PHC_A" -c "$PHC_B" -O 0 -R 8 -m -q >/tmp/phc2sys.log 2>&1
tail=$(grep -o 'offset *-\?[0-9]*' /tmp/phc2sys.log | awk '{print $2}' | tail -5 | tr '\n' ' ')
echo "# phc2sys: $(grep -c offset /tmp/phc2sys.log) samples, the last offsets (ns): $tail"
worst=$(for v in $tail; do abs "$v"; done | sort -n | tail -1)
check "phc2sys steers card B's clock onto card A's: the last 5 offsets within 100 us" \
	test "$(wc -w <<<"$tail")" = 5 -a "${worst:-999999999}" -lt 100000

# ptp4l over the wire (IEEE 802.3 transport, hardware stamps): A is the
# grandmaster, B a slave, its clock 1 s off at the start.
phc_ctl "$PHC_B" adj 1 >/dev/null
cat >/tmp/ptp4l.conf <<'EOF'
[global]
logAnnounceInterval -2
announceReceiptTimeout 3
logSyncInterval -3
logMinDelayReqInterval -3
summary_interval 0
tx_timestamp_timeout 100
EOF
sent_a=$(hw_sent "$NETIF_A") sent_b=$(hw_sent "$NETIF_B" ns)
ptp4l -f /tmp/ptp4l.conf -i "$NETIF_A" -2 -H -m >/tmp/ptp4l_a.log 2>&1 &
master=$!
ip netns exec $NS timeout 20 ptp4l -f /tmp/ptp4l.conf -i "$NETIF_B" -2 -H -s -m >/tmp/ptp4l_b.log 2>&1
kill $master 2>/dev/null
wait $master 2>/dev/null
grep -E 'timed out|fault|error' /tmp/ptp4l_a.log /tmp/ptp4l_b.log | head -3 | sed 's/^/#   /'
# Once a slave, ptp4l prints a summary a second: "rms R max M freq F
# +/- S delay D +/- E" (ns, ppb).
slave=$(grep -c 'to SLAVE on' /tmp/ptp4l_b.log)
rms=$(grep -o 'rms *[0-9]*' /tmp/ptp4l_b.log | awk '{print $2}' | tail -5 | tr '\n' ' ')
delay=$(grep -o 'delay *[0-9]*' /tmp/ptp4l_b.log | tail -1 | awk '{print $2}')
# Locked: the middle of the last 5 seconds' rms within 200 us, none past
# 1 ms. A TCG guest sharing two host cores with the check's other VMs is
# now and then descheduled long enough to show as one second's spike
# while the servo stays locked (seen: 10-43 us, then 325 us, in a clean
# check); a servo that does not lock stays far off (the red runs in
# testing.rst: no rms lines at all, or milliseconds).
sorted=$(for v in $rms; do abs "$v"; done | sort -n)
worst=$(tail -1 <<<"$sorted")
middle=$(sed -n 3p <<<"$sorted")
echo "# ptp4l: B became a slave ${slave} time(s); rms offset of the last 5 seconds (ns): $rms; path delay ${delay:-?} ns"
check "ptp4l with hardware stamps: B's servo locks to A, rms offset within 200 us (median of 5 s, none past 1 ms)" \
	test "$slave" -ge 1 -a "$(wc -w <<<"$rms")" = 5 -a "${middle:-999999999}" -lt 200000 \
	-a "${worst:-999999999}" -lt 1000000
ta=$(($(hw_sent "$NETIF_A") - sent_a)) tb=$(($(hw_sent "$NETIF_B" ns) - sent_b))
echo "# hardware TX stamps reported during ptp4l: A $ta, B $tb"
check "the cards stamped what ptp4l sent (Sync on A, Delay_Req on B)" test "$ta" -ge 20 -a "$tb" -ge 10

oa=$(phc_offset "$PHC_A") ob=$(phc_offset "$PHC_B")
echo "# after ptp4l, from CLOCK_REALTIME: A ${oa} ns, B ${ob} ns"
check "after ptp4l the clocks agree, read against the system clock (within 1 ms; B started 1.5 s off)" \
	test "$(abs "$((${oa:-0} - ${ob:-999999999}))")" -lt 1000000
check "no kernel warning" dmesg_clean
rm -f /tmp/phc2sys.log /tmp/ptp4l.conf /tmp/ptp4l_a.log /tmp/ptp4l_b.log
ktap_finish
