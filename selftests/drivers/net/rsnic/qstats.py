#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prints a device's qstats (netdev generic netlink family) as JSON:
{"device": {...}, "queues": [{"type": "rx"|"tx", "id": N, ...}]}.
A minimal client so the test needs no YNL install:  qstats.py IFNAME
"""

import json
import socket
import struct
import sys

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NETDEV_CMD_QSTATS_GET = 12
A_IFINDEX, A_QUEUE_TYPE, A_QUEUE_ID, A_SCOPE = 1, 2, 3, 4
COUNTERS = {8: "rx_packets", 9: "rx_bytes", 10: "tx_packets", 11: "tx_bytes"}


def attr(kind, payload):
    pad = b"\0" * ((4 - len(payload) % 4) % 4)
    return struct.pack("HH", 4 + len(payload), kind) + payload + pad


def attrs(data):
    out = {}
    while len(data) >= 4:
        length, kind = struct.unpack_from("HH", data)
        out[kind & 0x3FFF] = data[4:length]
        data = data[(length + 3) & ~3:]
    return out


def uint(b):
    return int.from_bytes(b, "little")


def request(sock, family, cmd, payload, flags):
    body = struct.pack("BBH", cmd, 1, 0) + payload
    sock.send(struct.pack("IHHII", 16 + len(body), family, NLM_F_REQUEST | flags, 1, 0) + body)
    replies = []
    while True:
        data = sock.recv(65536)
        while data:
            length, kind = struct.unpack_from("IH", data)
            if kind == NLMSG_ERROR:
                err = struct.unpack_from("i", data, 16)[0]
                if err:
                    sys.exit(f"netlink error {err}")
                return replies
            if kind == NLMSG_DONE:
                return replies
            replies.append(attrs(data[20:length]))
            data = data[(length + 3) & ~3:]
        if not flags & NLM_F_DUMP:
            return replies


def main():
    ifindex = socket.if_nametoindex(sys.argv[1])
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    fam = request(sock, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, attr(CTRL_ATTR_FAMILY_NAME, b"netdev\0"), 0)
    family = uint(fam[0][CTRL_ATTR_FAMILY_ID])
    ifattr = attr(A_IFINDEX, struct.pack("I", ifindex))
    result = {"device": {}, "queues": []}
    for reply in request(sock, family, NETDEV_CMD_QSTATS_GET, ifattr, NLM_F_DUMP):
        result["device"] = {name: uint(reply[k]) for k, name in COUNTERS.items() if k in reply}
    for reply in request(sock, family, NETDEV_CMD_QSTATS_GET, ifattr + attr(A_SCOPE, struct.pack("I", 1)), NLM_F_DUMP):
        q = {"type": "tx" if uint(reply[A_QUEUE_TYPE]) else "rx", "id": uint(reply[A_QUEUE_ID])}
        q.update({name: uint(reply[k]) for k, name in COUNTERS.items() if k in reply})
        result["queues"].append(q)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
