#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boots the rsnic VM (two cards, rsnic.ko loaded). With arguments, runs
# them in the guest as a bash script, prints the output and exits with the
# script's own status; without, gives an interactive shell.
#   qemu/run.sh ['COMMANDS']

source "$(dirname "$0")/common.sh"
make -s -C "$RSNIC_REPO" modules emu >&2
export RSNIC_RUN_CMD="$*"
exec "$RSNIC_REPO/qemu/in-rootfs.sh" python3 qemu/vm.py run
