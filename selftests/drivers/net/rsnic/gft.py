#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Helpers of the GFT selftests: debugfs writes that report the errno,
traffic with known contents, and the debugfs fuzzer.

  gft.py write FILE TEXT            prints OK or the errno name (EINVAL...)
  gft.py write-hex FILE HEX         the same with raw bytes
  gft.py write-many FILE TEXT [FILE TEXT]...
                                    each write in turn, a result a line
                                    (one Python start: 0.6 s in the VM)
  gft.py udp-send DST PORT N [SPORT [SIZE]]
  gft.py udp-recv PORT N TIMEOUT    prints the datagrams received
  gft.py tcp-sink PORT              one connection: prints "bytes sha256 peer"
  gft.py tcp-source DST PORT BYTES  prints "bytes sha256" of what it sent
  gft.py tcp-hold DST PORT SECONDS  connects, sends a little, waits, closes
  gft.py tcp-reset DST PORT SECONDS the same, but closes with a RST
  gft.py udp-blast DST PORT SECONDS PPS SIZE SPORT   prints "sent seconds"
  gft.py udp-count PORT IDLE [FIRST] counts datagrams until IDLE s of quiet
                                    (FIRST s for the first one; 30)
  gft.py fuzz DIR N SEED            N random/mutated writes to DIR's files
  gft.py readd DIR                  flush the rules, add each listed one again
  gft.py del-flows DIR STEP         del every STEP-th listed flow: "deleted refused"
"""

import errno
import hashlib
import os
import random
import socket
import struct
import sys
import time


def write(path, data):
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return errno.errorcode[e.errno]
    try:
        os.write(fd, data)
        return "OK"
    except OSError as e:
        return errno.errorcode[e.errno]
    finally:
        os.close(fd)


def udp_send(dst, port, n, sport=0, size=64):
    family = socket.AF_INET6 if ":" in dst else socket.AF_INET
    s = socket.socket(family, socket.SOCK_DGRAM)
    if sport:
        s.bind(("", sport))
    for i in range(n):
        s.sendto(i.to_bytes(4, "big") * (size // 4), (dst, port))
        time.sleep(0.01)


def udp_recv(port, n, timeout):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    s.settimeout(timeout)
    got = 0
    try:
        while got < n:
            s.recv(65536)
            got += 1
    except socket.timeout:
        pass
    print(got)


def tcp_sink(port):
    ls = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("::", port))
    ls.listen(1)
    ls.settimeout(30)
    c, peer = ls.accept()
    c.settimeout(60)
    h = hashlib.sha256()
    total = 0
    while True:
        try:
            d = c.recv(65536)
        except ConnectionResetError:
            break
        if not d:
            break
        h.update(d)
        total += len(d)
    c.close()
    print(total, h.hexdigest(), peer[0].removeprefix("::ffff:"))


def connect(dst, port):
    family = socket.AF_INET6 if ":" in dst else socket.AF_INET
    for _ in range(50):
        try:
            return socket.create_connection((dst, port), timeout=10)
        except ConnectionRefusedError:
            time.sleep(0.1)
    raise SystemExit("connection refused")


def tcp_source(dst, port, nbytes):
    s = connect(dst, port)
    h = hashlib.sha256()
    rng = random.Random(port)
    sent = 0
    while sent < nbytes:
        chunk = rng.randbytes(min(65536, nbytes - sent))
        s.sendall(chunk)
        h.update(chunk)
        sent += len(chunk)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    s.close()
    print(sent, h.hexdigest())


def tcp_hold(dst, port, seconds, reset=False):
    s = connect(dst, port)
    s.sendall(b"x" * 1000)
    time.sleep(seconds)
    if reset:
        # Linger 0: close sends RST instead of FIN.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def udp_blast(dst, port, seconds, pps, size, sport):
    """Sends `pps` datagrams a second for `seconds`, in 10 ms bursts;
    prints the datagrams sent and the time it took."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("", sport))
    payload = b"m" * size
    per_tick = max(1, pps // 100)
    start = time.monotonic()
    sent = 0
    tick = 0
    while time.monotonic() - start < seconds:
        for _ in range(per_tick):
            s.sendto(payload, (dst, port))
            sent += 1
        tick += 1
        delay = start + tick * 0.01 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print(sent, round(time.monotonic() - start, 3))


def udp_count(port, idle, first=30):
    """Counts datagrams until none came for `idle` seconds (`first`
    seconds for the first); prints the count."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("", port))
    s.settimeout(first)
    got = 0
    try:
        while True:
            s.recv(65536)
            got += 1
            s.settimeout(idle)
    except socket.timeout:
        pass
    print(got)


# The fuzzer: valid-looking and broken lines for every file.
WORDS = ["add", "del", "flush", "id=", "prio=", "dir=", "proto=", "src=", "dst=",
         "sport=", "dport=", "tunnel=", "action=", "encap_id=", "outer_smac=",
         "outer_dmac=", "outer_sip=", "outer_dip=", "nat_sip=", "nat_dip=",
         "nat_sport=", "nat_dport=", "vlan=", "rate=", "burst="]
VALUES = ["tx", "rx", "tcp", "udp", "icmp", "17", "256", "-1", "0", "1",
          "65535", "65536", "4294967296", "10.1.2.3", "10.1.2.3/8", "10.0.0.0/33",
          "fd00::1", "fd00::/129", "::", "allow", "drop", "nat", "decap",
          "vxlan_encap", "nvgre_encap", "vlan_push", "vlan_pop", "meter",
          "allow,drop", "nat,meter", "02:00:00:00:00:01", "zz:00", "1m", "9g",
          "", "=", "==", "\u00e9", "\x00"]
VALID_RULES = [
    "add prio=50 dir=tx proto=udp dport=6000 action=allow",
    "add prio=60 dir=rx proto=tcp src=10.9.0.0/16 action=drop",
    "add dir=tx dst=fd00::/8 action=meter rate=1m",
    "add dir=tx proto=udp dst=10.8.0.1 action=nat nat_dip=10.8.0.2 nat_dport=99 dport=98",
    "add dir=tx dst=10.7.0.0/24 action=vxlan_encap,vlan_push vlan=7 encap_id=5 "
    "outer_smac=02:00:00:00:00:01 outer_dmac=02:00:00:00:00:02 "
    "outer_sip=10.1.1.1 outer_dip=10.1.1.2",
]


def mutate(rng, text):
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        if op == 0 and b:
            del b[rng.randrange(len(b))]
        elif op == 1:
            b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
        elif op == 2 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        else:
            b += b" " + rng.choice(WORDS).encode() + rng.choice(VALUES).encode()
    return bytes(b)


def random_line(rng):
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice(VALID_RULES).encode()
    if kind == 1:
        return mutate(rng, rng.choice(VALID_RULES))
    if kind == 2:
        return " ".join(rng.choice(WORDS) + rng.choice(VALUES)
                        for _ in range(rng.randint(0, 12))).encode()
    if kind == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
    if kind == 4:
        return ("del %d" % rng.randint(-2, 40)).encode()
    return rng.choice([b"flush", b"x" * 5000, b"", b"\n", str(rng.randint(-5, 1 << 33)).encode()])


def fuzz(directory, n, seed):
    rng = random.Random(seed)
    files = ["rules", "flows", "max_flows", "fail_installs", "idle_timeout_ms",
             "exception_rate", "exception_burst"]
    results = {}
    for i in range(n):
        f = rng.choice(files)
        line = random_line(rng)
        if f != "rules" and rng.randrange(2):
            line = str(rng.choice([0, 1, 2, 64, 100, 65536, 1 << 22, (1 << 22) + 1,
                                   1000001, -1, 1 << 40])).encode()
        if f == "rules" and line == b"flush" and rng.randrange(4):
            continue
        r = write(os.path.join(directory, f), line)
        results[(f, r)] = results.get((f, r), 0) + 1
        if i % 1000 == 999:
            # Reading every file now and then runs the show paths too.
            for g in files + ["stats"]:
                with open(os.path.join(directory, g)) as fh:
                    fh.read()
    for (f, r), c in sorted(results.items()):
        print(f"# {f} {r} {c}")
    # Leave sane settings behind.
    write(os.path.join(directory, "max_flows"), b"65536")
    write(os.path.join(directory, "fail_installs"), b"0")
    write(os.path.join(directory, "idle_timeout_ms"), b"30000")
    write(os.path.join(directory, "exception_rate"), b"50000")
    write(os.path.join(directory, "exception_burst"), b"1024")


def readd(directory):
    """Flushes the rules and adds each listed one again (without its id
    and hit count); prints the rules listed and the ones refused."""
    path = os.path.join(directory, "rules")
    with open(path) as f:
        rules = [" ".join(w for w in line.split()
                          if not w.startswith(("id=", "hits=")))
                 for line in f if line.strip()]
    write(path, b"flush")
    refused = 0
    for r in rules:
        res = write(path, ("add " + r).encode())
        if res != "OK":
            print(f"# re-adding '{r}': {res}")
            refused += 1
    print(len(rules), refused)


def del_flows(directory, step):
    """Deletes every STEP-th listed flow through `del`; prints how many
    were deleted and how many the driver refused (it did not find them)."""
    path = os.path.join(directory, "flows")
    with open(path) as f:
        keys = [line.split(" rule=")[0] for line in f if line.strip()]
    deleted = refused = 0
    for key in keys[::step]:
        res = write(path, ("del " + key).encode())
        if res == "OK":
            deleted += 1
        else:
            print(f"# del {key}: {res}")
            refused += 1
    print(deleted, refused)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "write":
        print(write(args[0], args[1].encode()))
    elif cmd == "write-many":
        for path, text in zip(args[0::2], args[1::2]):
            print(write(path, text.encode()))
    elif cmd == "write-hex":
        print(write(args[0], bytes.fromhex(args[1])))
    elif cmd == "udp-send":
        udp_send(args[0], int(args[1]), int(args[2]), *map(int, args[3:]))
    elif cmd == "udp-recv":
        udp_recv(int(args[0]), int(args[1]), float(args[2]))
    elif cmd == "tcp-sink":
        tcp_sink(int(args[0]))
    elif cmd == "tcp-source":
        tcp_source(args[0], int(args[1]), int(args[2]))
    elif cmd == "tcp-hold":
        tcp_hold(args[0], int(args[1]), float(args[2]))
    elif cmd == "tcp-reset":
        tcp_hold(args[0], int(args[1]), float(args[2]), reset=True)
    elif cmd == "udp-blast":
        udp_blast(args[0], int(args[1]), float(args[2]), *map(int, args[3:6]))
    elif cmd == "udp-count":
        udp_count(int(args[0]), *map(float, args[1:3]))
    elif cmd == "readd":
        readd(args[0])
    elif cmd == "del-flows":
        del_flows(args[0], int(args[1]))
    elif cmd == "fuzz":
        fuzz(args[0], int(args[1]), int(args[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
