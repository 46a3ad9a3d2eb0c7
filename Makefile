# SPDX-License-Identifier: GPL-2.0
#
# rsnic: build the module, run the VM, run the tests.
#
#   make                 build rsnic.ko (against KDIR, default: the cached kernel)
#   make run [CMD=...]   boot the VM with two cards and the driver loaded
#   make check [T=...]   cargo test + every selftest in the VM
#   make bench           rsnic vs virtio-net, side by side (then the RDMA part)
#   make bench-rdma      only the RDMA part: nvme-rdma on rsnic vs rdma_rxe
#   make rust-analyzer   write rust-project.json
#   make layers          the driver's imports against its layers (qemu/layers.py)
#
# Everything the project needs (Debian sid toolchain rootfs, kernel 7.2,
# QEMU, the rdma-core provider) is installed by qemu/*.sh into $(RSNIC_CACHE), default
# ~/.cache/rsnic. With KDIR= set, the module is built with the host's own
# toolchain against that tree instead.

KERNEL ?= normal
RSNIC_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rsnic
export RSNIC_CACHE KERNEL

ifeq ($(KDIR),)
# Build inside the toolchain rootfs against the cached kernel.
IN_ROOTFS := qemu/in-rootfs.sh
BUILD_KDIR := /rsnic-cache/kernel/$(KERNEL)
# The debug kernel is built with clang (qemu/build-kernel.sh); modules must be too.
KBUILD_ARGS := $(if $(filter debug,$(KERNEL)),CC=clang)
# The module for the debug kernel is built in a copy of the sources in
# the cache (the guest loads it from there), so that the repo's own
# rsnic.ko stays the normal kernel's: make check boots both kernels at
# once, and neither build starts from scratch because the other ran.
ifeq ($(KERNEL),debug)
BUILD_M := /rsnic-cache/module/debug
STAGE := $(RSNIC_CACHE)/module/debug
else
BUILD_M := /rsnic
STAGE := .
endif
SETUP := setup
else
IN_ROOTFS :=
BUILD_KDIR := $(KDIR)
BUILD_M := $(CURDIR)
STAGE := .
SETUP :=
endif

.PHONY: all modules setup rootfs kernel provider emu run check bench bench-rdma clean rust-analyzer rustfmt rustfmtcheck lint lint-module lint-emu layers hw-header

all: modules

rootfs:
	qemu/setup-rootfs.sh

kernel: rootfs
	qemu/build-kernel.sh $(KERNEL)
	qemu/build-ksft.sh $(KERNEL)

# The libibverbs provider, built in rdma-core's tree into the rootfs.
provider: rootfs
	qemu/build-provider.sh

setup: kernel provider

# Kbuild does not notice the kernel tree changing under an external
# module: objects built against another configuration (a rebuilt cached
# kernel, or KERNEL=debug after normal) would link and then crash on
# load. The stamp records which configuration they were built against.
KERNEL_CONFIG := $(if $(KDIR),$(KDIR),$(RSNIC_CACHE)/kernel/$(KERNEL))/.config

modules: $(SETUP)
ifneq ($(STAGE),.)
	@# The sources only: the copy keeps its own objects.
	@mkdir -p $(STAGE)
	@# By checksum, times not kept: a file that did not change keeps its
	@# time, so what was built from it is not built again (a fresh
	@# clone's files are all new by time).
	$(IN_ROOTFS) rsync -rlpD --checksum --delete --exclude='*.o' --exclude='.*.cmd' --exclude='*.ko' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude='bindings_generated.rs' \
		--exclude='.kernel-stamp' Kbuild src include $(BUILD_M)/
endif
	@k="$$(cksum < $(KERNEL_CONFIG))"; \
	if [ "$$k" != "$$(cat $(STAGE)/.kernel-stamp 2>/dev/null)" ]; then \
		[ ! -e $(STAGE)/.kernel-stamp ] || echo "[rsnic] kernel configuration changed: rebuilding the module from scratch"; \
		$(MAKE) -s clean >/dev/null; echo "$$k" > $(STAGE)/.kernel-stamp; \
	fi
	$(IN_ROOTFS) $(MAKE) -C $(BUILD_KDIR) M=$(BUILD_M) $(KBUILD_ARGS) $(if $(CLIPPY),CLIPPY=1) modules

emu: rootfs
	RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo build --release --locked

# CMD reaches the guest through the environment, so it needs no quoting.
# make exits 2 when CMD fails; qemu/run.sh 'CMD' exits with CMD's status.
run: export RSNIC_RUN_CMD_MAKE = $(CMD)
run: modules emu
	RSNIC_RUN_CMD=$$RSNIC_RUN_CMD_MAKE qemu/in-rootfs.sh python3 qemu/vm.py run

check: setup
	qemu/check.sh $(T)

# Benchmark: rsnic vs virtio-net in the same VM (not part of check).
bench: setup
	qemu/bench.sh all

bench-rdma: setup
	qemu/bench.sh rdma

rust-analyzer: $(SETUP)
	$(IN_ROOTFS) $(MAKE) -C $(BUILD_KDIR) M=$(BUILD_M) $(KBUILD_ARGS) rust-analyzer
ifeq ($(KDIR),)
	@# Paths were written as seen inside the rootfs; make them host paths.
	sed -i -e 's#"/rsnic-cache/#"$(RSNIC_CACHE)/#g' -e 's#"/rsnic/#"$(CURDIR)/#g' \
		-e 's#"/rsnic"#"$(CURDIR)"#g' -e 's#"/usr/#"$(RSNIC_CACHE)/rootfs/usr/#g' rust-project.json
endif

# Lints: the module with clippy (no warnings allowed), the emulator with
# clippy, rustfmt on both, the driver's layers (qemu/layers.py), and the
# provider's rsnic_hw.h against src/hw/rdma.rs (qemu/hw-header.py).
lint: rustfmtcheck lint-module lint-emu layers hw-header

# The module built with clippy: the same object code, so the module it
# leaves is the one make check loads (make check builds it this way).
lint-module: $(SETUP)
	@# Recompile the crate, or clippy has nothing to say about it.
	rm -f src/rsnic_drv.o
	$(MAKE) -s modules CLIPPY=1 KCFLAGS= >.lint.log 2>&1; s=$$?; cat .lint.log; \
		! grep -E '^(warning|error)|: warning:' .lint.log && rm -f .lint.log && exit $$s

# The driver's imports against its layers (qemu/layers.py): no module
# uses one above it, and nic, gft and rdma do not use each other.
layers: rootfs
	qemu/in-rootfs.sh python3 qemu/layers.py src

# The provider's C view of the RDMA engine's formats against the
# driver's Rust declarations, field by field.
hw-header: rootfs
	qemu/in-rootfs.sh python3 qemu/hw-header.py

lint-emu: rootfs
	RSNIC_SUBDIR=qemu/rsnic-emu qemu/in-rootfs.sh cargo clippy --all-targets --locked -- -D warnings

# The module's sources (not the generated bindings) and the emulator.
RUST_SOURCES = $(shell find src -name '*.rs' ! -name 'bindings_generated.rs')

rustfmt: rootfs
	qemu/in-rootfs.sh sh -c "rustfmt $(RUST_SOURCES) && cd qemu/rsnic-emu && cargo fmt"

rustfmtcheck: rootfs
	qemu/in-rootfs.sh sh -c "rustfmt --check $(RUST_SOURCES) && cd qemu/rsnic-emu && cargo fmt --check"

clean:
	$(IN_ROOTFS) $(MAKE) -C $(BUILD_KDIR) M=$(BUILD_M) $(KBUILD_ARGS) clean
	rm -f $(STAGE)/src/linux/bindings/bindings_generated.rs $(STAGE)/.kernel-stamp
