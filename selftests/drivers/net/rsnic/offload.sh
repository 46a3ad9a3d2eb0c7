#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Checksum offloads on and off: a file crosses the link intact in every
# combination, the card's TX checksums verify on the remote side, and the
# remote's RX checksum offload is exercised.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
trap 'kill $(jobs -p) 2>/dev/null; net_cleanup' EXIT

feature() { ethtool -k "$1" | awk -v k="$2:" '$1 == k {print $2}'; }

# Sends /tmp/offload.src to the remote over TCP; prints the SHA-256 of
# what the remote received.
transfer() {
	rm -f /tmp/offload.dst
	ip netns exec $NS python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7001)); s.listen(1)
c, _ = s.accept()
with open("/tmp/offload.dst", "wb") as f:
    while (b := c.recv(65536)):
        f.write(b)
' &
	local server=$!
	sleep 0.5
	python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], 7001), timeout=30)
s.sendall(open("/tmp/offload.src", "rb").read()); s.close()
' $IP_B
	wait $server
	sha256sum </tmp/offload.dst | cut -d" " -f1
}

head -c 4M /dev/urandom >/tmp/offload.src
want=$(sha256sum </tmp/offload.src | cut -d" " -f1)

ktap_header 7
check "tx-checksum-ip-generic and rx-checksum offered and on" \
	test "$(feature "$NETIF_A" tx-checksum-ip-generic)" = on -a "$(feature "$NETIF_A" rx-checksumming)" = on

for tx in on off; do
	for rx in on off; do
		ethtool -K "$NETIF_A" tx $tx
		ip netns exec $NS ethtool -K "$NETIF_B" rx $rx
		got=$(transfer)
		check "4 MiB over TCP intact with A tx-checksum $tx, remote rx-checksum $rx" test "$got" = "$want"
	done
done

ethtool -K "$NETIF_A" tx on
# GRO off on the remote, or tcpdump sees merged segments whose checksum
# field no longer matches their merged payload.
ip netns exec $NS ethtool -K "$NETIF_B" rx on gro off
ip netns exec $NS tcpdump -i "$NETIF_B" -nn -vv -c 50 tcp port 7001 >/tmp/offload.dump 2>/dev/null &
dump=$!
sleep 0.5
transfer >/dev/null
wait $dump
# Only frames A sent count: B's own outgoing frames are captured before
# its card fills their checksums in, so tcpdump calls those incorrect.
frames=$(grep -c "$IP_A\.[0-9]* > $IP_B\..*cksum" /tmp/offload.dump)
bad=$(grep "$IP_A\.[0-9]* > $IP_B\..*cksum" /tmp/offload.dump | grep -c incorrect)
echo "# tcpdump: $frames frames from A, $bad with bad checksums"
check "checksums the card inserted verify on the remote side" test "$frames" -gt 10 -a "$bad" -eq 0

ktap_result skip "TSO on and off" "TSO is not offered by the driver yet"
ktap_finish
