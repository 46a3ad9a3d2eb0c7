#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Where the guest's CPU goes under one TCP stream, rsnic pair against the
# virtio-net tap pair, in one VM booted as make bench boots it:
#   qemu/in-rootfs.sh python3 qemu/vm.py run --virtio-pair \
#       --cmd 'bash /rsnic/qemu/profile-guest.sh'
# bpftrace samples the kernel stacks of both vCPUs at 199 Hz during a
# RSNIC_BENCH_SECONDS (default 10) iperf3 run per pair and prints, for
# each, the share of samples per leaf function and per function anywhere
# in the sampled stack; RSNIC_PROFILE_STACKS="fn ..." adds the 3 most
# sampled whole stacks through each of those functions;
# RSNIC_PROFILE_IPERF gives iperf3 other arguments (e.g. "-u -b 0 -l 64"
# for small UDP packets). Not part
# of make check or make bench: a tool for reading the numbers.

source /rsnic/selftests/drivers/net/rsnic/lib.sh
DURATION=${RSNIC_BENCH_SECONDS:-10}
TOP=${RSNIC_PROFILE_TOP:-25}
STACKS=${RSNIC_PROFILE_STACKS:-}
IPERF_ARGS=${RSNIC_PROFILE_IPERF:-}

# setup NAME IF_LOCAL IF_REMOTE SUBNET: IF_REMOTE into netns prof-NAME.
setup() {
	ip netns add "prof-$1"
	ip link set "$3" netns "prof-$1"
	ip addr add "$4.1/24" dev "$2"
	ip link set "$2" up
	ip -n "prof-$1" addr add "$4.2/24" dev "$3"
	ip -n "prof-$1" link set "$3" up
	wait_until 100 ping -c1 -W1 -q "$4.2" >/dev/null
}

# profile NAME SERVER_IP: one iperf3 run under bpftrace, then the tables.
profile() {
	ip netns exec "prof-$1" iperf3 -s -D -p 5201
	wait_until 50 listening tcp 5201 "prof-$1"
	bpftrace -q -e 'profile:hz:199 { @[kstack(16)] = count(); }' >/tmp/prof-$1.txt 2>&1 &
	local bt=$!
	sleep 2
	iperf3 -c "$2" -t "$DURATION" $IPERF_ARGS -J | python3 -c '
import json, sys
end = json.load(sys.stdin)["end"]
s = end.get("sum_received", end.get("sum"))
print(round(s["bits_per_second"] / 1e6, 1), "Mbit/s,", s.get("packets", "?"), "packets")' >/tmp/prof-$1.mbps
	kill -INT $bt
	wait $bt
	pkill -f "iperf3 -s -D -p 5201"
	python3 - "$1" "$TOP" "$STACKS" <<'PY'
import collections, re, sys
name, top = sys.argv[1], int(sys.argv[2])
text = open(f"/tmp/prof-{name}.txt").read()
leaf, incl, total = collections.Counter(), collections.Counter(), 0
stacks = []
for stack, n in re.findall(r"@\[\n(.*?)\]: (\d+)", text, re.S):
    frames = [re.sub(r"\+\d+$", "", f.strip()) for f in stack.strip().splitlines()]
    n = int(n)
    total += n
    stacks.append((n, frames))
    leaf[frames[0] if frames else "?"] += n
    for f in set(frames):
        incl[f] += n
mbps = open(f"/tmp/prof-{name}.mbps").read().strip()
print(f"== {name}: {mbps}, {total} samples; leaf functions, share of samples")
for f, n in leaf.most_common(top):
    print(f"{100 * n / max(total, 1):6.1f}%  {f}")
print(f"-- {name}: inclusive (the function anywhere in the 16 innermost frames)")
for f, n in incl.most_common(top):
    print(f"{100 * n / max(total, 1):6.1f}%  {f}")
for fn in sys.argv[3].split():
    through = sorted((s for s in stacks if fn in s[1]), key=lambda s: -s[0])[:3]
    for n, frames in through:
        print(f"-- {name}: {100 * n / max(total, 1):.1f}% of samples in this stack through {fn}")
        for f in frames:
            print(f"     {f}")
PY
}

a=$(netif_of "$(card_addr A)")
b=$(netif_of "$(card_addr B)")
vifs=($(virtio_pair_ifs tap))
setup rsnic "$a" "$b" 10.99.0 || { echo "profile: rsnic pair does not ping"; exit 1; }
setup virtio "${vifs[0]}" "${vifs[1]}" 10.98.0 || { echo "profile: tap pair does not ping"; exit 1; }
profile rsnic 10.99.0.2
profile virtio 10.98.0.2
