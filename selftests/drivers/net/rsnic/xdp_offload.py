#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Frames for xdp_offload.sh, and the comparison of two sets of maps.

  xdp_offload.py frames DIR SRC_MAC DST_MAC SRC_IP DST_IP
      writes the test's frames, one file each (DIR/NNN.bin), in the order
      they are sent, and what the program returns for each (DIR/../expected);
      prints how many of each kind (see frames())
  xdp_offload.py send IFACE DIR
      sends DIR's frames out of IFACE as they are (AF_PACKET), in order
  xdp_offload.py dump id ID | pinned PATH
      prints a map's entries as "key=value" lines of hex, sorted
      (bpftool -j map dump, with or without BTF)
"""

import json
import os
import socket
import struct
import subprocess
import sys

PASS_PORT, DROP_PORT, TX_PORT = 7001, 7002, 7003


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload, options=b""):
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 4 * ihl + len(payload), 1, 0,
                      64, proto, 0, src, dst) + options
    hdr = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
    return hdr + payload


def udp(sport, dport, size):
    # Checksum 0: none, as IPv4 allows.
    return struct.pack("!HHHH", sport, dport, 8 + size, 0) + bytes(i & 0xFF for i in range(size))


def tcp(sport, dport):
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x02, 512, 0, 0) + b"\0" * 20


def frames(smac, dmac, sip, dip):
    """(kind, frame) in sending order. Every frame is at least 60 bytes,
    so the wire pads none."""
    eth = dmac + smac + b"\x08\x00"
    out = []
    for i in range(10):  # ten flows, two frames each: telemetry
        for _ in range(2):
            out.append(("pass", eth + ipv4(sip, dip, 17, udp(4000 + i, PASS_PORT, 18 + 17 * i))))
    for i in range(5):
        out.append(("drop", eth + ipv4(sip, dip, 17, udp(5000, DROP_PORT, 40 + i))))
    for i in range(5):
        out.append(("tx", eth + ipv4(sip, dip, 17, udp(5001, TX_PORT, 40 + i))))
    for _ in range(2):  # source port 0: the program forgets the flow
        out.append(("pass", eth + ipv4(sip, dip, 17, udp(0, PASS_PORT, 30))))
    for i in range(3):  # TCP: passed, not counted
        out.append(("other", eth + ipv4(sip, dip, 6, tcp(6000 + i, PASS_PORT))))
    for i in range(2):  # IP options: passed, not counted
        out.append(("other", eth + ipv4(sip, dip, 17, udp(6100, DROP_PORT, 30), b"\x01" * 4)))
    for i in range(2):  # not IP
        out.append(("other", dmac + smac + b"\x88\xb5" + bytes(range(50))))
    return out


def dump(args):
    cmd = ["bpftool", "-j", "map", "dump"] + args
    entries = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    lines = []
    for e in entries:
        if "key" in e:
            k, v = e["key"], e["value"]
        else:  # BTF-only output: not expected, but say so
            k, v = ["?"], [json.dumps(e.get("formatted"))]
        lines.append("".join(x.replace("0x", "") for x in k) + "=" + "".join(x.replace("0x", "") for x in v))
    print("\n".join(sorted(lines)))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "frames":
        d = args[0]
        mac = lambda s: bytes.fromhex(s.replace(":", ""))
        fs = frames(mac(args[1]), mac(args[2]), socket.inet_aton(args[3]), socket.inet_aton(args[4]))
        os.makedirs(d, exist_ok=True)
        for i, (_, f) in enumerate(fs):
            with open(os.path.join(d, f"{i:03d}.bin"), "wb") as out:
                out.write(f)
        kinds = [k for k, _ in fs]
        # What the program returns for each: XDP_DROP 1, XDP_PASS 2, XDP_TX 3.
        code = {"pass": 2, "other": 2, "drop": 1, "tx": 3}
        with open(os.path.join(d, "..", "expected"), "w") as out:
            out.write(" ".join(str(code[k]) for k in kinds))
        print(" ".join(f"{k}={kinds.count(k)}" for k in ("pass", "drop", "tx", "other")))
    elif cmd == "send":
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((args[0], 0))
        for name in sorted(os.listdir(args[1])):
            with open(os.path.join(args[1], name), "rb") as f:
                s.send(f.read())
    elif cmd == "dump":
        dump(args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
