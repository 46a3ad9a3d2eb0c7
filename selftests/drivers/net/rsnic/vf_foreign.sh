#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Transparent bonding with a VF of another make, as hv_netvsc does with
# Mellanox and MANA VFs: the harness hot-plugs a QEMU virtio-net-pci with
# the synthetic NIC's MAC into a free PCIe slot, cabled to a port of card
# A's switch, and the card offers that slot to the PF (VF_ASSOC). The
# driver must enslave it by netvsc's rules, the card must carry the VM's
# traffic through it (the synthetic queues stay flat), a hot-unplug in
# the middle of a TCP stream must fall back without a reset, a failed
# port must hand the traffic back too, and a netdev with the right MAC in
# the wrong slot must be left alone. The card's own VF still bonds.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
command -v iperf3 >/dev/null || skip_all "iperf3 not installed"
trap 'kill $(jobs -p) 2>/dev/null; harness fvf A unplug >/dev/null 2>&1; vf_unplug A 2>/dev/null; net_cleanup' EXIT

datapath() { harness card A datapath | sed -n 's/.*datapath=\([a-z]*\).*/\1/p'; }
# Packets on the synthetic NIC's own queues (the card's rings), rx + tx.
synthetic_packets() {
	ethtool -S "$NETIF_A" | awk '$1 ~ /^(rx|tx)[0-9]+_packets:$/ {n += $2} END {print n + 0}'
}
netstat() { cat "/sys/class/net/$1/statistics/$2"; } # DEV COUNTER
# What card A's foreign-VF port did: "NAME=N" words.
port_stat() { harness card A vf-port | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k {print $2}'; }
# The netdev in PCI slot $1 (pciehp names the slot by the root port's
# slot number), if any: virtio-net's sits on the virtio device below the
# PCI function.
slot_netif() {
	local addr n
	addr=$(cat "/sys/bus/pci/slots/$1/address" 2>/dev/null) || return 1
	n=(/sys/bus/pci/devices/"$addr".0/virtio*/net/*)
	[ -e "${n[0]}" ] && echo "${n[0]##*/}"
}
fvf_plug() { # [SERIAL]: the harness's reply "ok slot=N serial=S"
	local reply
	reply=$(harness fvf A plug "$@") || return 1
	echo "# fvf A plug $*: $reply" >&2
	[[ $reply == "ok slot="* ]] || return 1
	reply=${reply#ok slot=}
	SLOT=${reply%% *}
}
enslaved() { ip -o link show "$FVF" | grep -q "SLAVE.*master $NETIF_A" && [ "$(datapath)" = vf ]; }
found() { FVF=$(slot_netif "$SLOT") && [ -n "$FVF" ]; }
iperf_ok() { # JSON-FILE STATUS: completed, no error, bytes moved
	local sent error
	sent=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bytes"]))' "$1" 2>/dev/null)
	error=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("error", ""))' "$1" 2>/dev/null)
	echo "# iperf3: status $2, ${sent:-?} bytes received${error:+, error: $error}"
	[ "$2" = 0 ] && [ -z "$error" ] && [ "${sent:-0}" -gt 0 ]
}

ktap_header 15
dmesg_mark
start=$(date +%s%N)
ok=false
if fvf_plug; then
	wait_until 150 found && wait_until 100 enslaved && ok=true
fi
echo "# foreign VF ${FVF:-none} in slot ${SLOT:-?} ($(ethtool -i "$FVF" 2>/dev/null | awk '$1 == "driver:" {print $2}')) enslaved and the data path switched $(( ($(date +%s%N) - start) / 1000000 )) ms after the plug request"
check "a virtio-net VF offered in slot ${SLOT:-?}: enslaved to $NETIF_A, data path on it" $ok
[ -n "$FVF" ] || { ktap_finish; exit; }
bond_file=/sys/kernel/debug/rsnic/$(card_addr A)/bond
echo "# $bond_file: $(cat "$bond_file")"
echo "# card A vf-port: $(harness card A vf-port)"
# netvsc marks the VF a slave before it registers, so addrconf gives it
# no link-local address (the synthetic NIC holds the addresses).
check "the VF has no IPv6 address of its own (a slave before it registered)" \
	test -z "$(ip -6 -o addr show dev "$FVF")"

# The synthetic NIC's address lists reach the VF, which filters by its
# own (netvsc's dev_uc_sync/dev_mc_sync), and leave it again; syncing
# them from the PF's rx-mode work must not make that work run again and
# again (the card counts the PF's admin commands; nothing else sends any
# while the VM is idle).
MC=01:00:5e:7f:01:02
on_vf() { ip maddr show dev "$FVF" | grep -q "$MC"; }
off_vf() { ! on_vf; }
ok=false
ip maddr add $MC dev "$NETIF_A" && wait_until 30 on_vf &&
	ip maddr del $MC dev "$NETIF_A" && wait_until 30 off_vf && ok=true
check "$NETIF_A's multicast address reaches the VF and leaves it again" $ok
admin_cmds() { harness card A stats | sed -n 's/.* admin_cmds=\([0-9]*\).*/\1/p'; }
sleep 1
a0=$(admin_cmds); sleep 3; a1=$(admin_cmds)
echo "# card A PF admin commands over 3 idle seconds: $a0 -> $a1"
check "the PF's rx-mode work settles (no admin commands while idle)" test "${a1:-x}" = "${a0:-y}"

syn0=$(synthetic_packets) vrx0=$(netstat "$FVF" rx_packets) vtx0=$(netstat "$FVF" tx_packets)
arx0=$(netstat "$NETIF_A" rx_packets) del0=$(port_stat delivered) rcv0=$(port_stat received)
iperf3_server 5311 -1
iperf3 -c $IP_B -p 5311 -t 4 -J >/tmp/fvf-tx.json 2>&1
tx_status=$?
iperf3_server 5312 -1
iperf3 -c $IP_B -p 5312 -t 4 -R -J >/tmp/fvf-rx.json 2>&1
rx_status=$?
syn=$(( $(synthetic_packets) - syn0 ))
vrx=$(( $(netstat "$FVF" rx_packets) - vrx0 )) vtx=$(( $(netstat "$FVF" tx_packets) - vtx0 ))
arx=$(( $(netstat "$NETIF_A" rx_packets) - arx0 ))
del=$(( $(port_stat delivered) - del0 )) rcv=$(( $(port_stat received) - rcv0 ))
echo "# two 4 s streams (to B, from B): VF rx $vrx tx $vtx packets; synthetic queues $syn; card port delivered $del received $rcv; $NETIF_A rx_packets +$arx"
check "iperf3 both ways over the foreign VF" \
	bash -c "$(declare -f iperf_ok); iperf_ok /tmp/fvf-tx.json $tx_status && iperf_ok /tmp/fvf-rx.json $rx_status"
check "the VF's queues carried it, the synthetic queues stayed flat" \
	test "$vrx" -gt 1000 -a "$vtx" -gt 1000 -a "$syn" -lt 10
# The card's own count of what crossed its port to the VF: an outside
# witness for the VF's counters (virtio-net may merge nothing, so at
# least as many frames as the VF counted).
check "the card's port to the VF counted the frames both ways" \
	test "$del" -ge "$vrx" -a "$rcv" -ge $((vtx / 2)) -a "$rcv" -gt 1000
check "$NETIF_A's counters include the VF's (dev_get_stats)" test "$arx" -ge "$vrx"

# Hot-unplug in the middle of a stream: QEMU's device_del, the guest's
# pciehp removes the device (after its 5 s attention-button delay).
switches0=$(ethtool -S "$NETIF_A" | awk '$1 == "vf_datapath_switches:" {print $2}')
iperf3_server 5313 -1
iperf3 -c $IP_B -p 5313 -t 14 -i 1 -J >/tmp/fvf-unplug.json 2>&1 &
iperf=$!
sleep 2
syn0=$(synthetic_packets)
reply=$(harness fvf A unplug)
echo "# fvf A unplug: $reply"
wait $iperf
status=$?
syn=$(( $(synthetic_packets) - syn0 ))
echo "# synthetic queues after the unplug: $syn packets"
check "TCP stream across the VF's hot-unplug completes without error" \
	iperf_ok /tmp/fvf-unplug.json $status
check "after the unplug the synthetic path carries it (its queues moved)" \
	test "$(datapath)" = synthetic -a "$syn" -gt 1000 -a ! -e "/sys/class/net/$FVF"
logged_all() { local p; for p; do dmesg_since_mark | grep -q "$p" || return 1; done; }
check "join, switch and leave logged for $FVF" \
	logged_all "VF $FVF joined (slot $SLOT)" "data path VF" "data path synthetic" "VF $FVF left"

# The port fails (the card's send to QEMU's end fails) while the VF
# stays: the card withdraws the offer and the traffic comes back to the synthetic NIC.
FVF=
if fvf_plug && wait_until 150 found && wait_until 100 enslaved; then
	harness fvf A cut >/dev/null
	ping -c 5 -i 0.2 -W 1 -q $IP_B >/dev/null # the card notices on a send
	failed() { [ "$(datapath)" = synthetic ] && ! ip -o link show "$FVF" | grep -q "master"; }
	wait_until 50 failed && ok=true || ok=false
	echo "# after the cut: vf-port $(harness card A vf-port); $FVF: $(ip -o link show "$FVF" | grep -o 'master [^ ]*')"
	check "a failed port: released, synthetic again, pings pass" \
		bash -c "$ok && ping -c 3 -W 2 -q $IP_B >/dev/null"
else
	ktap_result fail "a failed port: released, synthetic again, pings pass" "replug did not enslave"
fi
harness fvf A unplug >/dev/null

# The right MAC in a slot the card did not announce: left alone.
FVF=
fvf_plug 99 && wait_until 150 found
sleep 2
echo "# ${FVF:-none} in slot ${SLOT:-?}, announced as 99: $(ip -o link show "$FVF" 2>/dev/null | grep -o 'master [^ ]*'); data path $(datapath)"
check "a VF with the right MAC but another identity is not enslaved" \
	test -n "$FVF" -a -z "$(ip -o link show "$FVF" 2>/dev/null | grep master)" -a "$(datapath)" = synthetic
harness fvf A unplug >/dev/null

# The card's own VF bonds as before.
ok=false
if vf_plug A; then
	VF=$(netif_of "$(vf_addr A)")
	wait_until 100 bash -c "ip -o link show $VF | grep -q 'master $NETIF_A'" && wait_datapath A vf &&
		ping -c 3 -W 2 -q $IP_B >/dev/null && ok=true
fi
check "the card's own VF is still enslaved and carries traffic" $ok
vf_unplug A
switches1=$(ethtool -S "$NETIF_A" | awk '$1 == "vf_datapath_switches:" {print $2}')
echo "# vf_datapath_switches: $switches0 -> $switches1"
check "the bond counted every switch (unplug, plug, cut, own VF's plug and unplug: 5)" \
	test $((${switches1:-0} - ${switches0:-0})) -eq 5
ktap_finish
