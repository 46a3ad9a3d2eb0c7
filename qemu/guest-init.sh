#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of the rsnic test VM. The root filesystem is the toolchain rootfs
# over 9p (read-only); the harness's run directory is mounted read-write at
# /run/rsnic and says what to do:
#   mode    "cmd" (run ./cmd, record its exit status in ./status) or "shell"
#   cmd     bash script to run
# Then the VM powers off. PID 1 must never exit (the kernel would panic).

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp TERM=${TERM:-linux} LANG=C.UTF-8

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
# What udev/systemd would create: /dev/fd (bash process substitution) and friends.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug
# The BPF file system, where bpftool pins programs (hw/xdp_metadata.py).
mount -t bpf bpf /sys/fs/bpf
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mkdir -p /run/rsnic /run/netns
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 rsnicrun /run/rsnic
hostname rsnic-vm
# What udev would do: name the virtio-serial ports (the harness's control
# channel is /dev/virtio-ports/org.rsnic.ctl).
mkdir -p /dev/virtio-ports
for port in /sys/class/virtio-ports/*; do
	[ -e "$port/name" ] && ln -sf "/dev/${port##*/}" "/dev/virtio-ports/$(cat "$port/name")"
done
ip link set lo up

# The driver: the harness built it into the repo, mounted at /rsnic, or
# for the debug kernel into the cache (the Makefile's KERNEL=debug).
case $(uname -r) in
*-debug) export RSNIC_KO=/rsnic-cache/module/debug/rsnic.ko ;;
*) export RSNIC_KO=/rsnic/rsnic.ko ;;
esac
# A line on the console this early says the kernel booted, should what
# follows hang (the harness then kills the VM and shows its last lines).
echo "rsnic-vm: booted in $(cut -d' ' -f1 /proc/uptime) s; loading rsnic.ko"
if insmod "$RSNIC_KO"; then
	echo "rsnic-vm: rsnic.ko loaded"
else
	echo "rsnic-vm: insmod rsnic.ko failed"
fi

cd /rsnic
case $(cat /run/rsnic/mode 2>/dev/null) in
cmd)
	bash /run/rsnic/cmd </dev/null
	echo $? >/run/rsnic/status
	;;
*)
	echo "rsnic-vm: shell; 'exit' powers the VM off"
	setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
	;;
esac
sync
busybox poweroff -f
sleep 10
