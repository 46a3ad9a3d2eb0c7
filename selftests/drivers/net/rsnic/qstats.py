#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prints what the netdev generic netlink family says about a device, as
JSON: qstats ({"device": {...}, "queues": [{"type": "rx"|"tx", "id": N,
...}]}), each queue's NAPI ("queue_napi": {"rx0": NAPI_ID, ...}) and each
NAPI's IRQ ("napi_irq": {NAPI_ID: IRQ}). A minimal client so the tests need
no YNL install:  qstats.py IFNAME
With "device" or "queues" after IFNAME it prints only rx_packets, rx_bytes,
tx_packets and tx_bytes, the device's or the queues' summed, on one line
(a second Python process to pick them out cost as much as this one).
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
NETDEV_CMD_QUEUE_GET, NETDEV_CMD_NAPI_GET, NETDEV_CMD_QSTATS_GET = 10, 11, 12
Q_ID, Q_IFINDEX, Q_TYPE, Q_NAPI_ID = 1, 2, 3, 4
NAPI_IFINDEX, NAPI_ID, NAPI_IRQ = 1, 2, 3
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
    ifq = attr(Q_IFINDEX, struct.pack("I", ifindex))
    result["queue_napi"] = {}
    for reply in request(sock, family, NETDEV_CMD_QUEUE_GET, ifq, NLM_F_DUMP):
        name = ("tx" if uint(reply[Q_TYPE]) else "rx") + str(uint(reply[Q_ID]))
        result["queue_napi"][name] = uint(reply[Q_NAPI_ID]) if Q_NAPI_ID in reply else None
    ifn = attr(NAPI_IFINDEX, struct.pack("I", ifindex))
    result["napi_irq"] = {}
    for reply in request(sock, family, NETDEV_CMD_NAPI_GET, ifn, NLM_F_DUMP):
        result["napi_irq"][str(uint(reply[NAPI_ID]))] = uint(reply[NAPI_IRQ]) if NAPI_IRQ in reply else None
    keys = ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes")
    if sys.argv[2:] == ["device"]:
        print(*(result["device"].get(k, -1) for k in keys))
    elif sys.argv[2:] == ["queues"]:
        print(*(sum(q.get(k, 0) for q in result["queues"]) for k in keys))
    else:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
