#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's zero-copy tests, run by upstream.sh (its runner, its skip
# list): devmem TCP (RX into and TX from a udmabuf, ncdevmem), io_uring
# zero-copy receive (iou-zcrx), and the same through netkit queue leasing
# (a netkit device in a namespace borrows card A's queue: nk_netns checks
# the environment itself, nk_qlease the lease, nk_devmem and
# userns_devmem devmem through it, the latter from a user namespace).
# A file of their own: each restarts card A's queues several times.
#
# The devmem cases pick a port at random in card A's namespace
# (rand_port) and the peer's socat binds it as its source port. The peer,
# the side that closes, keeps each connection in TIME_WAIT for 60 s, and
# a port picked again within that (one did: 4096's run of
# userns_devmem's split sweep, after some 40 picks) makes socat's bind
# fail with EADDRINUSE. The peer keeps no TIME_WAIT sockets here
# (tcp_max_tw_buckets 0, a per-namespace setting): the tests do not
# depend on them, and the driver is not involved either way.
peer_no_time_wait() {
	ip netns exec "$NS" sysctl -qw net.ipv4.tcp_max_tw_buckets=0
}
export -f peer_no_time_wait
export UPSTREAM_BEFORE=peer_no_time_wait

exec "$(dirname "$0")/upstream.sh" \
	"drivers/net/hw/devmem.py" \
	"drivers/net/hw/iou-zcrx.py" \
	"drivers/net/hw/nk_netns.py" \
	"drivers/net/hw/nk_qlease.py" \
	"drivers/net/hw/nk_devmem.py" \
	"drivers/net/hw/userns_devmem.py"
