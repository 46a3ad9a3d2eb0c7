# SPDX-License-Identifier: GPL-2.0
#
# The GFT part of the benchmark, sourced by bench-guest.sh with the rsnic
# pair set up (card A 10.99.0.1, card B 10.99.0.2 in netns bench-rsnic).
# gft_bench prints one JSON object:
#   udp64 packets/s with the GFT off (no rules), fast path (flow cached),
#   and exception path (hw-tc-offload off: every packet through the host);
#   UDP request/response p50 for a new flow each time vs a cached flow;
#   new flows per second end to end (exception, install, reinjection).

GFT_PY=/rsnic/selftests/drivers/net/rsnic/gft.py

gft_udp_pps() { # received UDP 64-byte packets/s over DURATION
	ip netns exec bench-rsnic iperf3 -s -D -p 5202
	sleep 0.5
	iperf_json bench-rsnic 10.99.0.2 -p 5202 -t "$DURATION" -u -l 64 -b 0 >/tmp/b-gft.json
	pkill -f "iperf3 -s -D -p 5202"
	python3 -c '
import json
u = json.load(open("/tmp/b-gft.json"))["end"]["sum"]
print(round((u["packets"] - u["lost_packets"]) / u["seconds"]))'
}

# Request/response round trips: "new_p50_us cached_p50_us" (each new
# request from a fresh source port, so a new flow both ways).
gft_rr() {
	ip netns exec bench-rsnic python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 7200))
while True:
    d, a = s.recvfrom(64)
    if d == b"q": break
    s.sendto(d, a)
' &
	sleep 0.5
	python3 -c '
import socket, statistics, time
dst = ("10.99.0.2", 7200)
def rtt(s):
    t = time.perf_counter_ns()
    s.sendto(b"x", dst)
    s.recvfrom(64)
    return (time.perf_counter_ns() - t) / 1000
new = []
for i in range(200):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    s.bind(("", 46000 + i))
    try:
        new.append(rtt(s))
    except socket.timeout:
        pass
    s.close()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
rtt(s)
cached = [rtt(s) for _ in range(200)]
s.sendto(b"q", dst)
print(round(statistics.median(new)), round(statistics.median(cached)))'
	wait
}

# New flows per second: one datagram from each of 2000 source ports, as
# fast as they go; the rate at which the driver installs their flows.
gft_new_flows() {
	local dir=$1 i0 d0
	i0=$(awk '$1 == "installs" {print $2}' "$dir/stats")
	d0=$(awk '$1 == "backlog_drops" {print $2}' "$dir/stats")
	python3 - "$dir" "$i0" "$d0" <<'PY'
import socket, sys, time
stats = sys.argv[1] + "/stats"
def read():
    d = dict(l.split() for l in open(stats))
    return int(d["installs"]), int(d["backlog_drops"])
start = time.monotonic()
for p in range(48000, 50000):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("", p))
    s.sendto(b"n", ("10.99.0.2", 7300))
    s.close()
last, last_t = read()[0], time.monotonic()
while time.monotonic() - last_t < 2:
    time.sleep(0.05)
    n = read()[0]
    if n != last:
        last, last_t = n, time.monotonic()
installs = last - int(sys.argv[2])
drops = read()[1] - int(sys.argv[3])
print(installs, round(installs / (last_t - start)), drops)
PY
}

gft_bench() {
	local a dir off fast exc new cached inst rate drops
	a=$(card_addr A)
	dir=/sys/kernel/debug/rsnic/$a/gft
	[ -d "$dir" ] || { echo '{}'; return; }
	off=$(gft_udp_pps)
	"$GFT_PY" write "$dir/rules" "add prio=10 dir=tx proto=udp action=allow" >/dev/null
	fast=$(gft_udp_pps)
	read -r new cached < <(gft_rr)
	read -r inst rate drops < <(gft_new_flows "$dir")
	ethtool -K "$(netif_of "$a")" hw-tc-offload off
	exc=$(gft_udp_pps)
	ethtool -K "$(netif_of "$a")" hw-tc-offload on
	"$GFT_PY" write "$dir/rules" flush >/dev/null
	"$GFT_PY" write "$dir/flows" flush >/dev/null
	python3 -c '
import json, sys
off, fast, exc, new, cached, inst, rate, drops = map(int, sys.argv[1:])
us = lambda pps: 1e6 / pps if pps else float("nan")
print(json.dumps({"udp64_pps_gft_off": off, "udp64_pps_fast_path": fast,
                  "udp64_pps_exception_path": exc,
                  "us_per_packet_fast_path": round(us(fast), 1),
                  "us_per_packet_exception_path": round(us(exc), 1),
                  "rr_new_flow_p50_us": new, "rr_cached_flow_p50_us": cached,
                  "new_flows": inst, "new_flows_per_s": rate, "new_flow_backlog_drops": drops}))
' "$off" "$fast" "$exc" "$new" "$cached" "$inst" "$rate" "$drops"
}
