# SPDX-License-Identifier: GPL-2.0
#
# The GFT part of the benchmark, sourced by bench-guest.sh with the rsnic
# pair set up (card A 10.99.0.1, card B 10.99.0.2 in netns bench-rsnic).
# gft_bench prints one JSON object:
#   udp64 packets/s with the GFT off (no rules), fast path (flow cached),
#   and exception path (hw-tc-offload off: every packet through the host);
#   UDP request/response p50 for a new flow each time vs a cached flow;
#   new flows per second end to end (exception, install, reinjection),
#   from a Python sender and from pktgen (native, every frame a new
#   flow); TCP connections a second with the GFT off, on, and through a
#   NAT policy; and pktgen's frames over 1, 1000 and 64000 active flows.

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

# TCP connections a second: 400 in turn from card A's side to a listener
# in bench-rsnic, each opened and closed (SYN, SYN-ACK, then FINs): with
# the GFT on, each is two new flows decided by the host and two retired.
# gft_conns [HOST PORT [PEER]]: through HOST:PORT (default the listener's
# own 10.99.0.2:7400); with PEER, prints 0 unless every connection the
# listener took came from PEER (the address a NAT policy gives A).
gft_conns() {
	local host=${1:-10.99.0.2} port=${2:-7400} peer=${3:-}
	rm -f /tmp/b-conns-peers
	ip netns exec bench-rsnic python3 -c '
import socket
peers = set()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7400)); s.listen(128)
while True:
    c, a = s.accept()
    if c.recv(1) == b"q":
        break
    peers.add(a[0])
    c.close()
open("/tmp/b-conns-peers", "w").write(" ".join(sorted(peers)))
' &
	sleep 0.5
	python3 - "$host" "$port" "$peer" <<'PY'
import socket, sys, time
dst, peer = (sys.argv[1], int(sys.argv[2])), sys.argv[3]
n, start = 400, time.monotonic()
for _ in range(n):
    c = socket.create_connection(dst, timeout=5)
    c.close()
secs = time.monotonic() - start
c = socket.create_connection(dst); c.send(b"q"); c.close()
time.sleep(0.2)
seen = open("/tmp/b-conns-peers").read().split()
print(round(n / secs) if not peer or seen == [peer] else 0)
PY
	wait
}

# gft_conns through a NAT policy: A connects to 10.96.0.2:8080, the card
# rewrites it to 10.99.0.2:7400 from 10.99.0.100, and the reverse flow
# rewrites the replies back; each connection is two NAT flows decided,
# installed and retired. Policy is restored to RULE after.
gft_conns_nat() {
	local dir=$1 rule=$2 a_if vip=10.96.0.2 snat=10.99.0.100
	a_if=$(netif_of "$(card_addr A)")
	ip route replace $vip/32 dev "$a_if"
	ip neigh replace $vip lladdr "$(mac_of bench-rsnic "$b")" dev "$a_if"
	ip -n bench-rsnic neigh replace $snat lladdr "$(cat "/sys/class/net/$a_if/address")" dev "$b"
	"$GFT_PY" write "$dir/rules" flush >/dev/null
	"$GFT_PY" write "$dir/rules" "add prio=10 dir=tx proto=tcp dst=$vip dport=8080 action=nat nat_sip=$snat nat_dip=10.99.0.2 nat_dport=7400" >/dev/null
	gft_conns $vip 8080 $snat
	"$GFT_PY" write "$dir/rules" flush >/dev/null
	"$GFT_PY" write "$dir/rules" "$rule" >/dev/null
	ip route del $vip/32 dev "$a_if"
	ip -n bench-rsnic neigh del $snat dev "$b"
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

# gft_stat DIR NAME: one of the GFT's counters (the stats file asks the
# card for its own).
gft_stat() { awk -v n="$2" '$1 == n {print $2}' "$1/stats"; }

# rx_packets NS IF: the packets IF has received.
rx_packets() {
	ip -n "$1" -s -j link show "$2" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])'
}

# now: seconds since the epoch, to the nanosecond.
now() { date +%s.%N; }

# gft_flows DIR N: pktgen's 60-byte UDP frames from card A to card B
# from N source ports in turn (1024 up, each frame the next flow), with
# the flows installed first by frames through the exception path, paced
# at 1000/s (well below the 7000-11000/s the path installs since
# 2026-12-01: no round depends on its backlog), up to three rounds until
# all are in. Prints one JSON object:
# flows installed, frames/s pktgen sent and card B received, and the
# card's hit ratio over the run.
gft_flows() {
	local dir=$1 n=$2 a_if mac ports installed h0 l0 r0 t0 pps t1 h1 l1 r1 idle
	a_if=$(netif_of "$(card_addr A)")
	# Installing 64000 flows takes longer than the 30 s idle timeout:
	# the first would age out before the last went in.
	idle=$(cat "$dir/idle_timeout_ms")
	echo 600000 >"$dir/idle_timeout_ms"
	mac=$(mac_of bench-rsnic "$b")
	ports=("udp_src_min 1024" "udp_src_max $((1023 + n))")
	"$GFT_PY" write "$dir/flows" flush >/dev/null
	for _ in 1 2 3; do
		pktgen "$a_if" 10.99.0.2 "$mac" "$n" 1 "${ports[@]}" "delay 1000000" >/dev/null || return 1
		sleep 1
		installed=$(gft_stat "$dir" card_flows)
		((installed >= n)) && break
	done
	h0=$(gft_stat "$dir" hits) l0=$(gft_stat "$dir" lookups) r0=$(rx_packets bench-rsnic "$b")
	t0=$(now)
	pps=$(pktgen "$a_if" 10.99.0.2 "$mac" $((DURATION * 20000)) 32 "${ports[@]}") || return 1
	t1=$(now)
	sleep 0.5
	h1=$(gft_stat "$dir" hits) l1=$(gft_stat "$dir" lookups) r1=$(rx_packets bench-rsnic "$b")
	echo "$idle" >"$dir/idle_timeout_ms"
	python3 -c '
import json, sys
n, inst, pps, h, l, r = map(int, sys.argv[1:7]); secs = float(sys.argv[7])
print(json.dumps({"flows": n, "installed": inst, "pktgen_pps": pps, "received_pps": round(r / secs),
                  "hit_ratio": round(h / max(l, 1), 4)}))' \
		"$n" "$installed" "$pps" $((h1 - h0)) $((l1 - l0)) $((r1 - r0)) "$(echo "$t1 - $t0" | bc -l)"
}

# gft_new_flows_native DIR: 64000 frames from pktgen at full speed, each
# from a new source port, so each is a new flow: the rate at which the
# driver installs them end to end (card exception, driver, install),
# and how many the exception backlog had to drop. One frame a batch:
# pktgen sends a batch's frames as one packet repeated (until 2026-12-01
# this sent batches of 32, so 2000 flows of 32 frames each).
gft_new_flows_native() {
	local dir=$1 a_if mac i0 d0 t0 pps last last_t i
	a_if=$(netif_of "$(card_addr A)")
	mac=$(mac_of bench-rsnic "$b")
	"$GFT_PY" write "$dir/flows" flush >/dev/null
	i0=$(gft_stat "$dir" installs) d0=$(gft_stat "$dir" backlog_drops)
	t0=$(now)
	pps=$(pktgen "$a_if" 10.99.0.2 "$mac" 64000 1 "udp_src_min 1024" "udp_src_max 65023") || return 1
	last=$(gft_stat "$dir" installs) last_t=$(now)
	# Installed until the count stays put for a second.
	while i=$(gft_stat "$dir" installs); [ "$i" != "$last" ] || (($(echo "$(now) - $last_t < 1" | bc))); do
		[ "$i" != "$last" ] && { last=$i; last_t=$(now); }
		sleep 0.05
	done
	python3 -c '
import json, sys
inst, drops, pps = map(int, sys.argv[1:4]); secs = float(sys.argv[4])
print(json.dumps({"frames": 64000, "pktgen_pps": pps, "installs": inst, "backlog_drops": drops,
                  "new_flows_per_s": round(inst / secs)}))' \
		$((last - i0)) $(($(gft_stat "$dir" backlog_drops) - d0)) "$pps" "$(echo "$last_t - $t0" | bc -l)"
}

# gft_new_flows_repeated: gft_new_flows_native REPEATS times with the
# allow rule, each run's JSON with the driver's time counters divided by
# the flows it installed, the install commands it sent and the most
# installs in flight at once (since load); then REPEATS runs with no
# rules (the GFT off): pktgen's rate, the ceiling.
gft_new_flows_repeated() {
	local dir runs=() r c0 c1 i
	local counters="exception_decide_us exception_install_us exception_reinject_us install_wait_us install_latency_us install_commands"
	dir=/sys/kernel/debug/rsnic/$(card_addr A)/gft
	[ -d "$dir" ] || return 1
	"$GFT_PY" write "$dir/rules" "add prio=10 dir=tx proto=udp action=allow" >/dev/null || return 1
	for ((i = 0; i < REPEATS; i++)); do
		c0=$(for c in $counters; do gft_stat "$dir" "$c"; done | paste -sd' ')
		r=$(gft_new_flows_native "$dir") || return 1
		c1=$(for c in $counters; do gft_stat "$dir" "$c"; done | paste -sd' ')
		runs+=("$(python3 -c '
import json, sys
run = json.loads(sys.argv[1]); names = sys.argv[2].split()
c0, c1 = map(int, sys.argv[3].split()), map(int, sys.argv[4].split())
d = dict(zip(names, (b - a for a, b in zip(c0, c1))))
n = max(run["installs"], 1)
run["per_install_us"] = {k: round(v / n, 1) for k, v in d.items() if k.endswith("_us")}
run["install_commands"] = d["install_commands"]
run["install_in_flight_max"] = int(sys.argv[5] or -1)
print(json.dumps(run))' "$r" "$counters" "$c0" "$c1" "$(gft_stat "$dir" install_in_flight_max)")")
	done
	"$GFT_PY" write "$dir/rules" flush >/dev/null
	"$GFT_PY" write "$dir/flows" flush >/dev/null
	# The ceiling: the same pktgen runs with no rules (the GFT off), the
	# rate at which the stack sends them at all.
	local off=()
	for ((i = 0; i < REPEATS; i++)); do
		off+=("$(gft_new_flows_native "$dir" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pktgen_pps"])')") || return 1
	done
	(IFS=,; echo "{\"new_flows_native\": [${runs[*]}], \"gft_off_pktgen_pps\": [${off[*]}]}")
}

gft_bench() {
	local a dir off fast exc new cached inst rate drops flows native conns_off conns_on conns_nat
	local allow="add prio=10 dir=tx proto=udp action=allow"
	a=$(card_addr A)
	dir=/sys/kernel/debug/rsnic/$a/gft
	[ -d "$dir" ] || { echo '{}'; return; }
	off=$(gft_udp_pps)
	conns_off=$(gft_conns)
	"$GFT_PY" write "$dir/rules" "$allow" >/dev/null
	fast=$(gft_udp_pps)
	conns_on=$(gft_conns)
	conns_nat=$(gft_conns_nat "$dir" "$allow")
	read -r new cached < <(gft_rr)
	read -r inst rate drops < <(gft_new_flows "$dir")
	native=$(gft_new_flows_native "$dir") || native='{}'
	flows=$(for n in 1 1000 64000; do gft_flows "$dir" $n || echo '{}'; done | paste -sd,)
	ethtool -K "$(netif_of "$a")" hw-tc-offload off
	exc=$(gft_udp_pps)
	ethtool -K "$(netif_of "$a")" hw-tc-offload on
	"$GFT_PY" write "$dir/rules" flush >/dev/null
	"$GFT_PY" write "$dir/flows" flush >/dev/null
	python3 -c '
import json, sys
native, flows = json.loads(sys.argv[9]), json.loads("[" + sys.argv[10] + "]")
off, fast, exc, new, cached, inst, rate, drops = map(int, sys.argv[1:9])
us = lambda pps: 1e6 / pps if pps else float("nan")
print(json.dumps({"udp64_pps_gft_off": off, "udp64_pps_fast_path": fast,
                  "udp64_pps_exception_path": exc,
                  "us_per_packet_fast_path": round(us(fast), 1),
                  "us_per_packet_exception_path": round(us(exc), 1),
                  "rr_new_flow_p50_us": new, "rr_cached_flow_p50_us": cached,
                  "new_flows": inst, "new_flows_per_s": rate, "new_flow_backlog_drops": drops,
                  "new_flows_native": native, "active_flows": flows,
                  "tcp_conns_per_s_gft_off": int(sys.argv[11] or 0),
                  "tcp_conns_per_s_gft_on": int(sys.argv[12] or 0),
                  "tcp_conns_per_s_gft_nat": int(sys.argv[13] or 0)}))
' "$off" "$fast" "$exc" "$new" "$cached" "$inst" "$rate" "$drops" "$native" "$flows" "$conns_off" "$conns_on" "$conns_nat"
}
