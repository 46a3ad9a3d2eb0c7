#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs a command inside the toolchain rootfs with the repo at /rsnic (the
# working directory) and the cache at /rsnic-cache. Cargo's registry and
# the emulator's build output live in the cache, not in the repo.

source "$(dirname "$0")/common.sh"
[[ $# -gt 0 ]] || die "usage: $0 COMMAND [ARG...]"
# Settings the harness reads (see README.md) pass through.
pass=()
for var in KERNEL RUST_LOG RSNIC_KVM RSNIC_VM_MEM RSNIC_VM_CPUS RSNIC_TCG_THREAD RSNIC_KEEP_RUN RSNIC_RUN_CMD RSNIC_BOOT_LIMIT RSNIC_TEST_GRACE RSNIC_DOORBELL_POLL_US RSNIC_GRO_HOLD_US RSNIC_EMU RSNIC_CARDS_IN_ONE_PROCESS; do
	if [[ -n ${!var:-} ]]; then pass+=("$var=${!var}"); fi
done
in_rootfs /usr/bin/env CARGO_HOME=$RSNIC_IN_CACHE/cargo \
	CARGO_TARGET_DIR=$RSNIC_IN_CACHE/emu-target "${pass[@]}" \
	/bin/sh -c 'cd "$0" && exec "$@"' "$RSNIC_IN_REPO${RSNIC_SUBDIR:+/$RSNIC_SUBDIR}" "$@"
