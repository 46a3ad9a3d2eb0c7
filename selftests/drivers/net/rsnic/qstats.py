#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prints what the netdev generic netlink family says about a device, as
JSON: qstats ({"device": {...}, "queues": [{"type": "rx"|"tx", "id": N,
...}]}), each queue's NAPI ("queue_napi": {"rx0": NAPI_ID, ...}) and each
NAPI's IRQ ("napi_irq": {NAPI_ID: IRQ}). Read with the kernel's own YNL
library (tools/testing/selftests/net/lib/py, built for the running
kernel; lib.sh exports its directory as KSFT):  qstats.py IFNAME
With "device" or "queues" after IFNAME it prints only rx_packets, rx_bytes,
tx_packets and tx_bytes, the device's or the queues' summed, on one line
(a second Python process to pick them out cost as much as this one); with
"gro", the device's rx_packets, rx_hw_gro_packets and
rx_hw_gro_wire_packets.
"""

import json
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.environ["KSFT"], "net"))
from lib.py import NetdevFamily  # noqa: E402

KEYS = ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes")


def counters(reply):
    """The four counters of a qstats reply, by their names here."""
    return {k: reply[k.replace("_", "-")] for k in KEYS if k.replace("_", "-") in reply}


def main():
    ifindex = socket.if_nametoindex(sys.argv[1])
    netdev = NetdevFamily()
    result = {"device": {}, "queues": []}
    for reply in netdev.qstats_get({"ifindex": ifindex}, dump=True):
        result["device"] = counters(reply)
    for reply in netdev.qstats_get({"ifindex": ifindex, "scope": "queue"}, dump=True):
        result["queues"].append({"type": reply["queue-type"], "id": reply["queue-id"], **counters(reply)})
    if sys.argv[2:] == ["device"]:
        print(*(result["device"].get(k, -1) for k in KEYS))
        return
    if sys.argv[2:] == ["gro"]:
        for reply in netdev.qstats_get({"ifindex": ifindex}, dump=True):
            print(*(reply.get(k, -1) for k in ("rx-packets", "rx-hw-gro-packets", "rx-hw-gro-wire-packets")))
        return
    if sys.argv[2:] == ["queues"]:
        print(*(sum(q.get(k, 0) for q in result["queues"]) for k in KEYS))
        return
    result["queue_napi"] = {
        q["type"] + str(q["id"]): q.get("napi-id")
        for q in netdev.queue_get({"ifindex": ifindex}, dump=True)
    }
    result["napi_irq"] = {
        str(n["id"]): n.get("irq") for n in netdev.napi_get({"ifindex": ifindex}, dump=True)
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
