#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# VF failover without losing connections: one iperf3 TCP stream runs for
# 24 s while card A's VF is unplugged and replugged three times; the
# stream completes without error, and a ping running alongside measures
# the time without traffic at each data-path switch. The bond's switch
# counter (ethtool -S vf_datapath_switches) must show every switch; the
# ping gaps and the TCP stall are reported, not judged (timing).

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
command -v iperf3 >/dev/null || skip_all "iperf3 not installed"
trap 'kill $(jobs -p) 2>/dev/null; vf_unplug A 2>/dev/null; net_cleanup' EXIT

ktap_header 5
switch_count() { ethtool -S "$NETIF_A" | awk '$1 == "vf_datapath_switches:" {print $2}'; }
vf_plug A || { ktap_result fail "VF plugged"; ktap_finish; exit; }
sleep 1
wait_datapath A vf
switches0=$(switch_count)
iperf3_server 5301 -1
iperf3 -c $IP_B -p 5301 -t 24 -i 0.5 -J >/tmp/failover.json 2>&1 &
iperf=$!
# 50 pings a second, each with its time stamp, to find the gaps.
ping -D -i 0.02 -W 1 $IP_B >/tmp/failover.ping 2>&1 &
pinger=$!
switches=()
for cycle in 1 2 3; do
	sleep 3
	switches+=("$(date +%s.%N)" unplug)
	vf_unplug A
	sleep 3
	switches+=("$(date +%s.%N)" replug)
	vf_plug A
done
wait $iperf
iperf_status=$?
kill -INT $pinger
wait $pinger 2>/dev/null

sent=$(python3 -c 'import json; print(int(json.load(open("/tmp/failover.json"))["end"]["sum_sent"]["bytes"]))' 2>/dev/null)
error=$(python3 -c 'import json; print(json.load(open("/tmp/failover.json")).get("error", ""))' 2>/dev/null)
echo "# iperf3: status $iperf_status, $sent bytes sent${error:+, error: $error}"
check "iperf3 TCP stream across 3 unplug/replug cycles completes without error" \
	test "$iperf_status" = 0 -a -z "$error" -a "${sent:-0}" -gt 0
# The TCP stall: the longest run of half-second intervals with nothing sent.
stall=$(python3 -c '
import json
run = best = 0
for i in json.load(open("/tmp/failover.json")).get("intervals", []):
    run = run + 1 if i["sum"]["bytes"] == 0 else 0
    best = max(best, run)
print(best * 500)' 2>/dev/null)
echo "# longest TCP stall: ${stall:-?} ms (half-second intervals with nothing sent)"
tail -n 3 /tmp/failover.ping | sed 's/^/# /'
loss=$(grep -o '[0-9.]*% packet loss' /tmp/failover.ping)
echo "# ping during the cycles: $loss"
# The longest gap between replies within 2 s after each switch.
gaps=$(python3 - "${switches[@]}" <<'PY'
import re, sys
stamps = [float(m.group(1)) for m in map(re.compile(r"^\[(\d+\.\d+)\].*bytes from").match, open("/tmp/failover.ping")) if m]
args = sys.argv[1:]
for at, what in zip(args[::2], args[1::2]):
    at = float(at)
    window = [t for t in stamps if at - 0.5 <= t <= at + 3.0]
    gap = max((b - a for a, b in zip(window, window[1:])), default=float("nan"))
    print(f"{what} {gap * 1000:.0f}")
PY
)
echo "$gaps" | sed 's/^/# longest gap (ms) around /'
check "ping got replies after every switch" test -n "$gaps" -a "$(echo "$gaps" | grep -c nan)" = 0
check "the data path ends on the VF" wait_datapath A vf
switches1=$(switch_count)
echo "# vf_datapath_switches: $switches0 -> $switches1"
check "the bond switched the data path 6 times (3 away from the VF, 3 back)" \
	test $((${switches1:-0} - ${switches0:-0})) -eq 6
check "VF enslaved at the end" test -n "$(ip -o link show | grep "master $NETIF_A")"
ktap_finish
