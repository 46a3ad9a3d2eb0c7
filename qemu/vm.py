#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Boot the rsnic test VM: QEMU with two emulated rsnic cards.

Runs inside the toolchain rootfs (see qemu/in-rootfs.sh), where the repo
is /rsnic and the cache /rsnic-cache. For each card it starts an
rsnic-emu process (vfio-user server + control socket), then QEMU with the
card's PF on its own PCIe root port, the rootfs as the guest's 9p root, a
writable 9p share for the run directory, a QMP socket, and a virtio-serial
port `org.rsnic.ctl` through which tests in the guest send harness
commands (see HarnessControl).

  vm.py run [--cmd SCRIPT] [--timeout S]
"""

import argparse
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = "/rsnic"
CACHE = "/rsnic-cache"
# RSNIC_EMU: another build of the card (one made beside a running check).
EMU = os.environ.get("RSNIC_EMU", f"{CACHE}/emu-target/release/rsnic-emu")

# name -> (card id, MAC, peer). Card B is the "remote" host of the tests;
# the two are cabled together.
CARDS = {"A": (1, "02:52:53:00:00:0a", "B"), "B": (2, "02:52:53:00:00:0b", "A")}

# A VM that runs a test queue (make check) must ask the harness for its
# first test within BOOT_LIMIT seconds of QEMU's start (the debug kernel
# boots and loads the driver in about 40 s on an idle machine), and for
# each next one within the limit the guest gave with the last, plus
# TEST_GRACE (the guest's own kill of a hung test, its kernel state dump
# and log scan). A guest that does neither has hung where its own
# timeouts cannot act (its kernel, QEMU, a card): the host kills it, says
# where it was, and the check goes on with a fresh VM instead of waiting
# out its whole budget.
BOOT_LIMIT = float(os.environ.get("RSNIC_BOOT_LIMIT", "600"))
TEST_GRACE = float(os.environ.get("RSNIC_TEST_GRACE", "300"))


def log(msg):
    print(f"[rsnic] {msg}", file=sys.stderr, flush=True)


# Both cards in one rsnic-emu process (the default): a frame one card
# sends goes into the other from the sending thread, with no hand-off to
# a receive thread. RSNIC_CARDS_IN_ONE_PROCESS=0 runs a process per
# card, cabled by sockets only (for comparison).
ONE_PROCESS = os.environ.get("RSNIC_CARDS_IN_ONE_PROCESS", "1") != "0"


class Card:
    """One emulated card: its own rsnic-emu process, or its share of one
    that serves its peer too (``with_peer``: the peer's Card, which is
    started by this one)."""

    def __init__(self, run_dir, name, card_id, mac, peer, host=None):
        self.name = name
        self.pf_socket = f"{run_dir}/card{name}-pf.sock"
        self.vf_socket = f"{run_dir}/card{name}-vf.sock"
        self.ctl_socket = f"{run_dir}/card{name}-ctl.sock"
        self.log_path = f"{run_dir}/card{name}.log"
        self.run_dir, self.card_id, self.mac, self.peer = run_dir, card_id, mac, peer
        self.proc = None
        if host is not None:
            # Served by the process of the card that started it.
            self.log_path = host.log_path

    def start(self, with_peer=None):
        """Starts the card's process; with ``with_peer`` (a Card made with
        ``host=self``), the peer card in the same process."""
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG") or "info")
        peer_args = []
        if with_peer is not None:
            peer_args = ["--peer-pf-socket", with_peer.pf_socket,
                         "--peer-vf-socket", with_peer.vf_socket,
                         "--peer-ctl-socket", with_peer.ctl_socket,
                         "--peer-card-id", str(with_peer.card_id), "--peer-mac", with_peer.mac]
        self.proc = subprocess.Popen(
            [EMU, "--pf-socket", self.pf_socket, "--vf-socket", self.vf_socket,
             "--ctl-socket", self.ctl_socket,
             "--wire-socket", f"{self.run_dir}/wire{self.name}.sock",
             "--wire-peer", f"{self.run_dir}/wire{self.peer}.sock",
             "--card-id", str(self.card_id), "--mac", self.mac, *peer_args,
             # The card's doorbell-page poll (bench: its cost and effect).
             *(["--doorbell-poll-us", os.environ["RSNIC_DOORBELL_POLL_US"]]
               if os.environ.get("RSNIC_DOORBELL_POLL_US") else []),
             # How long the card holds segments for coalescing (bench).
             *(["--gro-hold-us", os.environ["RSNIC_GRO_HOLD_US"]]
               if os.environ.get("RSNIC_GRO_HOLD_US") else [])],
            stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT, env=env)
        if with_peer is not None:
            with_peer.proc = self.proc

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if all(os.path.exists(p) for p in (self.pf_socket, self.vf_socket, self.ctl_socket)):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"card {self.name} did not start; see {self.log_path}:\n"
                           + open(self.log_path).read())

    def control(self, line):
        """Sends one command to the card's control socket; returns the reply."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.ctl_socket)
            s.sendall(line.encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        return reply.decode().strip()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Qmp:
    """QEMU's monitor (QMP): one connection per command."""

    def __init__(self, path):
        self.path = path

    def command(self, execute, **arguments):
        """Runs one command; returns its "return" value or raises with its error."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(15)
            s.connect(self.path)
            f = s.makefile("rw")

            def reply():
                while True:  # skip events
                    msg = json.loads(f.readline())
                    if "return" in msg:
                        return msg["return"]
                    if "error" in msg:
                        raise RuntimeError(msg["error"].get("desc", "QMP error"))

            json.loads(f.readline())  # greeting
            f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
            f.flush()
            reply()
            f.write(json.dumps({"execute": execute, "arguments": arguments}) + "\n")
            f.flush()
            return reply()

    def devices(self):
        """IDs of the user-created devices."""
        return {d["name"] for d in self.command("qom-list", path="/machine/peripheral")}


def vf_device(card):
    """QEMU device of a card's VF, on the root port kept free for it."""
    return {"driver": "vfio-user-pci", "id": f"vf{card.name}", "bus": f"rp{card.vf_slot}",
            "socket": {"type": "unix", "path": card.vf_socket}}


class HarnessControl(threading.Thread):
    """Serves the guest's requests on the virtio-serial port.

    One request per line, one reply line each:
      card <A|B> <command...>   forwarded to that card's control socket
      card <A|B> capture <name> the card records its wire into a pcap file,
                                /run/rsnic/<name> in the guest (the shared
                                run directory); `capture stop` finishes it
      cable <up|down>           plug or unplug the A-B cable (both ends)
      vf <A|B> plug             hot-plug the card's VF (QMP device_add), once
                                per VM: QEMU 11.1 aborts on device_del of a
                                vfio-user-pci device with MSI-X (it has no
                                exit handler, so msix_uninit never runs), so
                                tests unplug and replug the VF through the
                                guest's PCI core instead (lib.sh)
      fvf <A|B> plug [SERIAL]   hot-plugs a VF "of another make" for the
                                card (QMP): a virtio-net-pci with the card's
                                MAC on root port rp<fvf_slot> (PCI slot
                                fvf_slot), cabled by a -netdev dgram to the
                                card's foreign-VF port, which the card then
                                offers to its PF as SERIAL (default: the
                                slot; another number plays a VF whose
                                identity does not match)
      fvf <A|B> cut             the card's port to the VF breaks (card
                                `vf-port cut`: its next send fails) while
                                the VF stays
      fvf <A|B> unplug          device_del (the guest's pciehp removes it),
                                waits until QEMU has let it go, then the
                                card withdraws the port and the netdev goes
      cpu                       host CPU seconds (user + system) so far of
                                QEMU's vCPU threads, its other threads
                                (main loop, I/O, the tap pair's host-side
                                forwarding), and the cards' rsnic-emu
                                processes: "ok vcpu=S qemu_other=S emu=S"
      next [LIMIT]              takes the first test off the run's queue
                                (--queue): "ok TEST", or "ok" once it is
                                empty. VMs that share a queue share its
                                tests out between them (make check).
                                LIMIT is the guest's own time limit for
                                the test, in seconds: a guest that asks
                                for nothing more within it (and a grace)
                                has hung, and the host kills it
      ping                      answers "ok pong"
    """

    def __init__(self, path, cards, qmp, share, qemu_pid, queue=None):
        super().__init__(daemon=True)
        self.path = path
        self.share = share
        self.cards = cards
        self.qmp = qmp
        self.qemu_pid = qemu_pid
        self.queue = queue
        # The guest's sign of life: when it last asked for anything, and
        # by when it must ask again (None: no limit set yet).
        self.last_request = None
        self.deadline = None

    def next_test(self):
        """Pops the queue's first line, under a lock the other VMs take too."""
        if self.queue is None:
            return "error: this VM has no test queue"
        try:
            with open(self.queue, "r+") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                tests = f.read().split()
                f.seek(0)
                f.truncate()
                f.write("".join(t + "\n" for t in tests[1:]))
            return f"ok {tests[0]}" if tests else "ok"
        except OSError as e:
            return f"error: queue: {e}"

    def cpu(self):
        tick = os.sysconf("SC_CLK_TCK")
        vcpu = other = 0
        for tid in os.listdir(f"/proc/{self.qemu_pid}/task"):
            comm, seconds = thread_cpu(f"/proc/{self.qemu_pid}/task/{tid}/stat", tick)
            if comm.startswith("CPU "):
                vcpu += seconds
            else:
                other += seconds
        pids = {c.proc.pid for c in self.cards.values()}
        emu = sum(thread_cpu(f"/proc/{pid}/stat", tick)[1] for pid in pids)
        return f"ok vcpu={vcpu:.2f} qemu_other={other:.2f} emu={emu:.2f}"

    def vf_plug(self, card):
        dev = f"vf{card.name}"
        try:
            if dev in self.qmp.devices():
                return "ok already plugged"
            self.qmp.command("device_add", **vf_device(card))
            return "ok"
        except (OSError, RuntimeError, ValueError) as e:
            return f"error: QMP: {e}"

    def fvf_plug(self, card, serial):
        run_dir = os.path.dirname(self.share)
        dev = f"fvf{card.name}"
        local, peer = f"{run_dir}/{dev}-card.sock", f"{run_dir}/{dev}-qemu.sock"
        try:
            if dev in self.qmp.devices():
                return "error: fvf: already plugged"
            for path in (local, peer):
                if os.path.exists(path):
                    os.unlink(path)
            reply = card.control(f"vf-port attach {serial} {local} {peer}")
            if not reply.startswith("ok"):
                return reply
            self.qmp.command("netdev_add", type="dgram", id=dev,
                             local={"type": "unix", "path": peer},
                             remote={"type": "unix", "path": local})
            self.qmp.command("device_add", driver="virtio-net-pci", id=dev, netdev=dev,
                             bus=f"rp{card.fvf_slot}", mac=card.mac)
            return f"ok slot={card.fvf_slot} serial={serial}"
        except (OSError, RuntimeError, ValueError) as e:
            return f"error: fvf: {e}"

    def fvf_unplug(self, card):
        dev = f"fvf{card.name}"
        try:
            if dev in self.qmp.devices():
                self.qmp.command("device_del", id=dev)
                # pciehp waits 5 s for a cancel of the attention button
                # before it removes the device.
                deadline = time.time() + 30
                while dev in self.qmp.devices():
                    if time.time() > deadline:
                        return "error: fvf: the guest did not release the device in 30 s"
                    time.sleep(0.1)
            reply = card.control("vf-port detach")
            try:
                self.qmp.command("netdev_del", id=dev)
            except RuntimeError:
                pass  # never added
            return reply
        except (OSError, RuntimeError, ValueError) as e:
            return f"error: fvf: {e}"

    def handle(self, line):
        words = line.split()
        self.last_request = time.time()
        # Any request is a sign of life: the guest is at least this far.
        if self.deadline is not None:
            self.deadline = max(self.deadline, self.last_request + TEST_GRACE)
        if words == ["ping"]:
            return "ok pong"
        if words[:1] == ["next"] and len(words) <= 2:
            if len(words) == 2:
                try:
                    self.deadline = time.time() + float(words[1]) + TEST_GRACE
                except ValueError:
                    return f"error: next: limit '{words[1]}' is not a number"
            return self.next_test()
        if words == ["cpu"]:
            try:
                return self.cpu()
            except OSError as e:
                return f"error: cpu: {e}"
        if len(words) == 3 and words[0] == "vf" and words[2] == "plug":
            card = self.cards.get(words[1])
            return self.vf_plug(card) if card else f"error: no card {words[1]}"
        if len(words) >= 3 and words[0] == "fvf":
            card = self.cards.get(words[1])
            if card is None:
                return f"error: no card {words[1]}"
            if words[2] == "plug" and len(words) <= 4:
                serial = words[3] if len(words) == 4 else str(card.fvf_slot)
                if not serial.isdigit():
                    return f"error: fvf: serial '{serial}' is not a number"
                return self.fvf_plug(card, serial)
            if words[2:] == ["unplug"]:
                return self.fvf_unplug(card)
            if words[2:] == ["cut"]:
                try:
                    return card.control("vf-port cut")
                except OSError as e:
                    return f"error: card {words[1]} control: {e}"
        if len(words) == 2 and words[0] == "cable" and words[1] in ("up", "down"):
            replies = [card.control(f"link {words[1]}") for card in self.cards.values()]
            bad = [r for r in replies if not r.startswith("ok")]
            return bad[0] if bad else "ok"
        if len(words) >= 3 and words[0] == "card":
            card = self.cards.get(words[1])
            if card is None:
                return f"error: no card {words[1]}"
            if len(words) == 4 and words[2] == "capture" and words[3] != "stop":
                # The card writes on the host; the guest sees the file in
                # the shared run directory.
                name = words[3]
                if not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
                    return f"error: capture file name '{name}': letters, digits, '.-_' only"
                words[3] = os.path.join(self.share, name)
            try:
                return card.control(" ".join(words[2:]))
            except OSError as e:
                return f"error: card {words[1]} control: {e}"
        return f"error: unknown request '{line}'"

    def run(self):
        for _ in range(200):
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.path)
                break
            except OSError:
                time.sleep(0.05)
        else:
            log("harness control: cannot connect to QEMU's chardev")
            return
        buf = b""
        while True:
            data = s.recv(4096)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                line = line.decode(errors="replace").strip()
                if line:
                    s.sendall(self.handle(line).encode() + b"\n")


def thread_cpu(stat_path, tick):
    """(name, user + system CPU seconds) of the task whose stat file this is;
    for a process, all its threads together."""
    text = open(stat_path).read()
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return comm, (int(fields[11]) + int(fields[12])) / tick


# The benchmark's virtio-net pairs: "tap" is virtio-net in its best
# configuration here (multiqueue taps with vnet headers, so TSO and checksum
# offload reach the wire, bridged on the host), "dgram" the old reference
# (no vnet header: QEMU does checksums and segmentation in software, one
# queue). The guest tells them apart by MAC. The taps offer 8 queue pairs,
# twice what the benchmark uses: virtio-net's native XDP_TX wants a queue
# of its own per possible CPU (4) beside the ones in use; without them it
# shares queues under a lock, and 7.2's virtnet_xdp_xmit then crashed in
# __free_old_xmit (NULL virtqueue) during the XDP benchmark.
VIRTIO_QUEUES = 8
VIRTIO_MACS = {"tap": ("52:54:00:7a:00:01", "52:54:00:7a:00:02"),
               "dgram": ("52:54:00:d6:00:01", "52:54:00:d6:00:02")}


# How many datagrams a card's end of the wire holds before its peer must
# wait: the cable's buffer. Linux's default for AF_UNIX datagram sockets
# (net.unix.max_dgram_qlen) is 10, so a burst of small frames filled it
# at once and the sending card fell back to its transmit thread, one
# frame and one hand-off each.
WIRE_QUEUE_LEN = 1024


def private_netns():
    """Moves this process (and so QEMU and the cards) into a network
    namespace of its own, whose AF_UNIX datagram queues are WIRE_QUEUE_LEN
    deep (the setting is per namespace; the host's stays as it is)."""
    os.unshare(os.CLONE_NEWNET)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with open("/proc/sys/net/unix/max_dgram_qlen", "w") as f:
        f.write(f"{WIRE_QUEUE_LEN}\n")


def setup_tap_pair():
    """Adds two multiqueue vnet-header taps on a bridge to this process's
    network namespace. Returns whether vhost-net is usable ("vhost=on")."""
    cmds = [["ip", "link", "add", "vbr", "type", "bridge"]]
    for me in ("a", "b"):
        cmds += [["ip", "tuntap", "add", "dev", f"vtap{me}", "mode", "tap", "multi_queue", "vnet_hdr"],
                 ["ip", "link", "set", f"vtap{me}", "master", "vbr"],
                 ["ip", "link", "set", f"vtap{me}", "up"]]
    cmds.append(["ip", "link", "set", "vbr", "up"])
    for c in cmds:
        subprocess.run(c, check=True)
    return os.access("/dev/vhost-net", os.R_OK | os.W_OK)


def kernel_variant():
    """The kernel the VM boots: "normal" or "debug" (KERNEL)."""
    return os.environ.get("KERNEL", "normal")


def kernel_image():
    variant = kernel_variant()
    image = f"{CACHE}/kernel/{variant}/arch/x86/boot/bzImage"
    if not os.path.exists(image):
        sys.exit(f"no kernel at {image}; run qemu/build-kernel.sh {variant}")
    return image


def qemu_command(run_dir, cards, interactive, virtio_pair=False, vhost=False):
    mem = os.environ.get("RSNIC_VM_MEM", "2G")
    cpus = os.environ.get("RSNIC_VM_CPUS", "2")
    # Room for CPUs that are possible but not present, as on most real
    # machines: an IRQ affinity mask may name them (the kernel's irq.py
    # test writes mask 5 = CPUs 0 and 2).
    smp = f"{cpus},maxcpus={max(int(cpus), 4)}"
    # 4-level paging (la57=off). With 5-level paging an interrupt that
    # lands while identify_cpu has the boot CPU's feature bits cleared
    # (LA57 among them) makes KASAN misplace its shadow and report a
    # wild access in the interrupt's spin lock; that first report mutes
    # KASAN's later ones and turns lockdep off for the whole run.
    if os.environ.get("RSNIC_KVM") == "1":
        accel = ["-accel", "kvm", "-cpu", "host,la57=off"]
    else:
        # RSNIC_TCG_THREAD=single runs both vCPUs in one host thread:
        # with two VMs and their cards on two cores, multi-threaded TCG
        # spends the cores on the vCPUs' cross-CPU synchronisation
        # (testing.rst, "How make check runs").
        tcg = os.environ.get("RSNIC_TCG_THREAD", "multi")
        accel = ["-accel", f"tcg,thread={tcg}", "-cpu", "max,la57=off"]
    append = ("console=ttyS0 root=rootfs rootfstype=9p "
              "rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose ro "
              # Room for a whole test run's kernel log (the default 128 KiB
              # wraps within it).
              f"init={REPO}/qemu/guest-init.sh panic=-1 loglevel=4 log_buf_len=8M "
              f"possible_cpus={max(int(cpus), 4)}")
    if kernel_variant() == "debug":
        # Every KASAN report, not only the first: the runner gives each
        # to the test it came in.
        append += " kasan_multi_shot"
    cmd = ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
           "-machine", "q35,memory-backend=mem", *accel, "-smp", smp, "-m", mem,
           # Native PCIe hot-plug (pciehp), whose slots take the root
           # ports' physical slot numbers (ACPI hot-plug names them all
           # "0"): the card offers a foreign VF by its slot (fvf).
           "-global", "ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off",
           "-object", f"memory-backend-memfd,id=mem,size={mem},share=on",
           "-kernel", kernel_image(), "-append", append, "-no-reboot",
           "-virtfs", "local,path=/,mount_tag=rootfs,security_model=none,readonly=on,multidevs=remap",
           "-virtfs", f"local,path={run_dir}/share,mount_tag=rsnicrun,security_model=none",
           "-qmp", f"unix:{run_dir}/qmp.sock,server=on,wait=off",
           "-device", "virtio-serial-pci",
           "-chardev", f"socket,id=ctl,path={run_dir}/ctl.sock,server=on,wait=off",
           "-device", "virtserialport,chardev=ctl,name=org.rsnic.ctl",
           "-device", "virtio-rng-pci"]
    cmd += ["-serial", "mon:stdio"] if interactive else ["-serial", "stdio"]
    if virtio_pair:
        # The benchmark's peers (see VIRTIO_MACS): the dgram pair cabled
        # the same way the cards are, by UNIX datagram sockets, and the
        # tap pair (setup_tap_pair).
        for i, (me, peer) in enumerate((("a", "b"), ("b", "a"))):
            cmd += ["-netdev", f"dgram,id=vn{me},local.type=unix,local.path={run_dir}/virtio-{me}.sock,"
                    f"remote.type=unix,remote.path={run_dir}/virtio-{peer}.sock",
                    "-device", f"virtio-net-pci,netdev=vn{me},mac={VIRTIO_MACS['dgram'][i]}"]
            cmd += ["-netdev", f"tap,id=vt{me},ifname=vtap{me},script=no,downscript=no,"
                    f"vhost={'on' if vhost else 'off'},queues={VIRTIO_QUEUES}",
                    "-device", f"virtio-net-pci,netdev=vt{me},mq=on,vectors={2 * VIRTIO_QUEUES + 2},"
                    f"mac={VIRTIO_MACS['tap'][i]}"]
    # Root ports 1..n hold the PFs; ports n+1..2n stay empty for the VFs,
    # which the harness hot-plugs on request, and 2n+1..3n for the VFs of
    # another make (fvf).
    for slot, card in enumerate(cards.values(), start=1):
        card.vf_slot = slot + len(cards)
        card.fvf_slot = slot + 2 * len(cards)
        cmd += ["-device", f"pcie-root-port,id=rp{slot},slot={slot},chassis={slot}",
                "-device", json.dumps({"driver": "vfio-user-pci", "id": f"card{card.name}",
                                       "bus": f"rp{slot}",
                                       "socket": {"type": "unix", "path": card.pf_socket}}),
                "-device", f"pcie-root-port,id=rp{card.vf_slot},slot={card.vf_slot},"
                f"chassis={card.vf_slot}"]
    for card in cards.values():
        cmd += ["-device", f"pcie-root-port,id=rp{card.fvf_slot},slot={card.fvf_slot},"
                f"chassis={card.fvf_slot}"]
    return cmd


def task_states(pid):
    """Each thread of process PID: "name state wait-channel", one a string."""
    out = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
            wchan = open(f"/proc/{pid}/task/{tid}/wchan").read().strip() or "-"
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        state = stat[stat.rindex(")") + 2:].split()[0]
        out.append(f"{comm}:{state}:{wchan}")
    return out


def kernel_symbol(address):
    """The guest kernel's symbol+offset at ADDRESS (hex), from System.map."""
    try:
        addr = int(address, 16)
        best = None
        with open(f"{CACHE}/kernel/{kernel_variant()}/System.map") as f:
            for line in f:
                a, _, name = line.split()
                a = int(a, 16)
                if a <= addr and (best is None or a > best[0]):
                    best = (a, name)
        return f"{best[1]}+{addr - best[0]:#x}" if best else address
    except (OSError, ValueError):
        return address


def diagnose(qemu, qmp, cards):
    """Where a VM that hung is: lines for the log, before it is killed."""
    lines = []
    try:
        lines.append(f"QEMU says the guest is {qmp.command('query-status')['status']}")
        regs = qmp.command("human-monitor-command", **{"command-line": "info registers -a"})
        rips = [w.split("=", 1)[1] for w in regs.split() if w.startswith("RIP=")]
        lines.append("guest CPUs at " + ", ".join(kernel_symbol(r) for r in rips))
    except (OSError, RuntimeError, ValueError, KeyError) as e:
        lines.append(f"QEMU's monitor does not answer ({e}): QEMU itself is stuck")
    try:
        lines.append("QEMU threads: " + " ".join(task_states(qemu.pid)))
        for card in cards.values():
            lines.append(f"card {card.name} threads: " + " ".join(task_states(card.proc.pid)))
    except OSError as e:
        lines.append(f"threads: {e}")
    for card in cards.values():
        try:
            last = open(card.log_path).read().strip().splitlines()[-3:]
        except OSError:
            last = []
        lines.append(f"card {card.name} log ends: " + " | ".join(l[:140] for l in last))
    return lines


def run(args):
    os.makedirs(f"{CACHE}/run", exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="vm-", dir=f"{CACHE}/run")
    os.makedirs(f"{run_dir}/share")
    cards = {}
    qemu = None
    status = 1
    private_netns()
    vhost = setup_tap_pair() if args.virtio_pair else False
    if args.virtio_pair:
        with open(f"{run_dir}/share/vhost", "w") as f:
            f.write("on\n" if vhost else "off: the host has no usable /dev/vhost-net\n")
    try:
        if ONE_PROCESS:
            (a, (a_id, a_mac, a_peer)), (b, (b_id, b_mac, b_peer)) = CARDS.items()
            cards[a] = Card(run_dir, a, a_id, a_mac, a_peer)
            cards[b] = Card(run_dir, b, b_id, b_mac, b_peer, host=cards[a])
            cards[a].start(with_peer=cards[b])
        else:
            for name, (card_id, mac, peer) in CARDS.items():
                cards[name] = Card(run_dir, name, card_id, mac, peer)
                cards[name].start()
        for card in cards.values():
            card.wait_ready()
        share = f"{run_dir}/share"
        if args.cmd is not None:
            with open(f"{share}/mode", "w") as f:
                f.write("cmd\n")
            with open(f"{share}/cmd", "w") as f:
                f.write(args.cmd + "\n")
        else:
            with open(f"{share}/mode", "w") as f:
                f.write("shell\n")
        interactive = args.cmd is None
        cmd = qemu_command(run_dir, cards, interactive, args.virtio_pair, vhost)
        qemu = subprocess.Popen(cmd, stdin=None if interactive else subprocess.DEVNULL)
        ctl = HarnessControl(f"{run_dir}/ctl.sock", cards, Qmp(f"{run_dir}/qmp.sock"), share,
                             qemu.pid, args.queue)
        ctl.start()
        timed_out = False
        started = time.time()
        while True:
            try:
                qemu.wait(timeout=2)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.time()
            if args.timeout is not None and now - started > args.timeout:
                why = f"VM still running after {args.timeout} s"
            elif args.queue and ctl.last_request is None and now - started > BOOT_LIMIT:
                why = (f"the guest asked for no test within {BOOT_LIMIT:.0f} s of QEMU's start: "
                       "it did not boot, or its start hung")
            elif ctl.deadline is not None and now > ctl.deadline:
                why = (f"the guest gave no sign of life within its test's limit and {TEST_GRACE} s "
                       "more: it hung")
            else:
                continue
            for line in diagnose(qemu, ctl.qmp, cards):
                log(f"  {line}")
            log(f"{why}: killed")
            qemu.kill()
            qemu.wait()
            timed_out = True
            break
        # The guest writes a result per test as it goes: what ran counts
        # even when the VM hung or crashed.
        if args.results and os.path.exists(f"{share}/results"):
            shutil.copy(f"{share}/results", args.results)
        if timed_out:
            return 124
        for spec in args.export or []:
            name, path = spec.split("=", 1)
            if os.path.exists(f"{share}/{name}"):
                shutil.copy(f"{share}/{name}", path)
        if args.cmd is not None:
            try:
                status = int(open(f"{share}/status").read().strip())
            except (OSError, ValueError):
                log("the guest command did not finish (VM crashed or powered off early)")
                status = 125
        else:
            status = 0
        return status
    finally:
        if qemu is not None and qemu.poll() is None:
            qemu.kill()
        for card in cards.values():
            card.stop()
        if os.environ.get("RSNIC_KEEP_RUN") != "1":
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            log(f"run directory kept: {run_dir}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True)
    r = sub.add_parser("run", help="boot the VM")
    r.add_argument("--cmd", help="bash script to run in the guest; exit with its status "
                   "(default: $RSNIC_RUN_CMD; without either, an interactive shell)")
    r.add_argument("--results", help="copy the guest's /run/rsnic/results here")
    r.add_argument("--export", action="append", metavar="NAME=PATH",
                   help="copy the guest's /run/rsnic/NAME to PATH after the run")
    r.add_argument("--virtio-pair", action="store_true",
                   help="add the benchmark's virtio-net pairs: multiqueue taps with vnet "
                   "headers on a bridge (in a network namespace of its own), and a dgram pair")
    r.add_argument("--timeout", type=float, default=None, help="kill the VM after this many seconds")
    r.add_argument("--queue", help="a file of tests, one a line, that the guest takes one at a "
                   "time (harness request \"next\"); other VMs may take from it too")
    args = p.parse_args()
    if args.cmd is None and os.environ.get("RSNIC_RUN_CMD"):
        args.cmd = os.environ["RSNIC_RUN_CMD"]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(run(args))


if __name__ == "__main__":
    main()
