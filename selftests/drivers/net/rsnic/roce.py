#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks the invariant CRC (or the IP and UDP checksums) of every RoCEv2
frame in a pcap file.

usage: roce.py icrc [--flip] FILE
       roce.py csum [--flip] FILE

icrc prints one line, "frames=N good=N bad=N", and exits 0 when every
RoCEv2 frame (IPv4 or IPv6, UDP destination port 4791) carries a correct
ICRC. csum prints "frames=N good=N bad=N zero=N" and exits 0 when every
frame's IPv4 header checksum verifies and its UDP checksum is present
(non-zero) and verifies (RFC 768; RFC 8200 for IPv6). With --flip, the
first bit after the BTH of every frame is flipped before the check
(every frame must then fail: proof that the check can).

The ICRC (InfiniBand Architecture Specification, Annex A17, RoCEv2) is
the CRC-32 of 64 one bits, the IP header, the UDP header, the BTH and
everything after it up to the ICRC, with the fields a router may change
masked to ones: IPv4 TOS, TTL and header checksum (IPv6 traffic class,
flow label and hop limit), the UDP checksum and the BTH's reserved byte
before the destination QP. It is sent least significant byte first. The
card computes it in Rust; this is an independent implementation.
"""

import struct
import sys
import zlib

ROCE_PORT = 4791
ETH_P_IP, ETH_P_IPV6, ETH_P_8021Q = 0x0800, 0x86DD, 0x8100
BTH_LEN, ICRC_LEN = 12, 4


def pcap_frames(path):
    """The captured bytes of every frame of a classic pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        endian = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a pcap file")
    offset = 24
    while offset + 16 <= len(data):
        incl = struct.unpack_from(endian + "I", data, offset + 8)[0]
        yield data[offset + 16:offset + 16 + incl]
        offset += 16 + incl


def roce_packet(frame):
    """The IP packet of a RoCEv2 frame (None for any other frame)."""
    ethertype, offset = struct.unpack_from("!H", frame, 12)[0], 14
    if ethertype == ETH_P_8021Q:
        ethertype, offset = struct.unpack_from("!H", frame, 16)[0], 18
    if ethertype == ETH_P_IP and len(frame) >= offset + 20:
        udp = offset + (frame[offset] & 0x0F) * 4
        proto = frame[offset + 9]
    elif ethertype == ETH_P_IPV6 and len(frame) >= offset + 40:
        udp = offset + 40
        proto = frame[offset + 6]
    else:
        return None, 0
    if proto != 17 or len(frame) < udp + 8 + BTH_LEN + ICRC_LEN:
        return None, 0
    if struct.unpack_from("!H", frame, udp + 2)[0] != ROCE_PORT:
        return None, 0
    ip_len = (struct.unpack_from("!H", frame, offset + 2)[0] if ethertype == ETH_P_IP
              else 40 + struct.unpack_from("!H", frame, offset + 4)[0])
    return bytearray(frame[offset:offset + ip_len]), udp - offset


def icrc(packet, udp):
    """The ICRC of an IP packet (its last 4 bytes excluded)."""
    p = bytearray(packet[:-ICRC_LEN])
    if p[0] >> 4 == 4:
        p[1] = 0xFF                      # TOS
        p[8] = 0xFF                      # TTL
        p[10:12] = b"\xff\xff"           # header checksum
    else:
        p[0] |= 0x0F                     # traffic class, low nibble
        p[1:4] = b"\xff\xff\xff"         # traffic class, flow label
        p[7] = 0xFF                      # hop limit
    p[udp + 6:udp + 8] = b"\xff\xff"     # UDP checksum
    p[udp + 8 + 4] = 0xFF                # BTH reserved byte
    return zlib.crc32(b"\xff" * 8 + bytes(p))


def ones_complement(data):
    """The RFC 1071 sum of `data`, folded to 16 bits."""
    if len(data) % 2:
        data = bytes(data) + b"\x00"
    total = sum(struct.unpack(f"!{len(data) // 2}H", bytes(data)))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def checksums_ok(packet, udp):
    """(IP header checksum verifies, UDP checksum verifies, UDP checksum
    is zero) of an IP packet carrying UDP at `udp`."""
    datagram = packet[udp:]
    if packet[0] >> 4 == 4:
        ip_ok = ones_complement(packet[:udp]) == 0xFFFF
        pseudo = bytes(packet[12:20]) + struct.pack("!BBH", 0, 17, len(datagram))
    else:
        ip_ok = True                     # IPv6 has no header checksum
        pseudo = bytes(packet[8:40]) + struct.pack("!IxxxB", len(datagram), 17)
    zero = datagram[6:8] == b"\x00\x00"
    return ip_ok, ones_complement(pseudo + bytes(datagram)) == 0xFFFF, zero


def check_csum(path, flip):
    frames = good = bad = zero = 0
    for frame in pcap_frames(path):
        packet, udp = roce_packet(frame)
        if packet is None:
            continue
        frames += 1
        if flip:
            packet[udp + 8 + BTH_LEN] ^= 0x01
        ip_ok, udp_ok, is_zero = checksums_ok(packet, udp)
        if is_zero:
            zero += 1
        elif ip_ok and udp_ok:
            good += 1
        else:
            bad += 1
    print(f"frames={frames} good={good} bad={bad} zero={zero}")
    return frames > 0 and good == frames


def check_icrc(path, flip):
    frames = good = bad = 0
    for frame in pcap_frames(path):
        packet, udp = roce_packet(frame)
        if packet is None:
            continue
        frames += 1
        if flip:
            packet[udp + 8 + BTH_LEN] ^= 0x01
        sent = struct.unpack("<I", bytes(packet[-ICRC_LEN:]))[0]
        if icrc(packet, udp) == sent:
            good += 1
        else:
            bad += 1
    print(f"frames={frames} good={good} bad={bad}")
    return frames > 0 and bad == 0


def main(argv):
    args = argv[1:]
    checks = {"icrc": check_icrc, "csum": check_csum}
    if not args or args[0] not in checks:
        sys.exit(__doc__)
    flip = "--flip" in args
    files = [a for a in args[1:] if a != "--flip"]
    if len(files) != 1:
        sys.exit(__doc__)
    return 0 if checks[args[0]](files[0], flip) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
