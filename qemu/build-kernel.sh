#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds the guest kernel from the rootfs's linux-source-7.2 with
# allnoconfig + qemu/kernel.config (+ qemu/kernel-debug.config for
# KERNEL=debug) into $RSNIC_CACHE/kernel/<variant>. Incremental: rebuilt
# only when the fragment or this script changes. Also installs the kernel's
# modules into the rootfs so the guest can modprobe them.

source "$(dirname "$0")/common.sh"

variant=${1:-${KERNEL:-normal}}
fragments=("$RSNIC_REPO/qemu/kernel.config")
# KASAN with Rust needs clang (init/Kconfig: RUST depends on !KASAN ||
# CC_IS_CLANG); the module build (Makefile) uses the same compiler.
make_args=""
case $variant in
normal) ;;
debug)
	fragments+=("$RSNIC_REPO/qemu/kernel-debug.config")
	make_args="CC=clang"
	;;
*) die "unknown kernel variant '$variant' (normal or debug)" ;;
esac

tree=$RSNIC_KERNEL_DIR/$variant
in_tree=$RSNIC_IN_CACHE/kernel/$variant
stamp=$tree/.rsnic-stamp
want=$(cat "${fragments[@]}" "$0" | sha256sum | cut -d' ' -f1)

if [[ -f $stamp && $(cat "$stamp") == "$want" && -f $tree/arch/x86/boot/bzImage ]]; then
	release=$(cat "$tree/include/config/kernel.release")
	if [[ ! -d $RSNIC_ROOTFS/lib/modules/$release ]]; then
		# The rootfs was rebuilt since: put the kernel's modules back.
		log "installing kernel modules into the rootfs"
		in_rootfs /bin/sh -c "cd $in_tree && make -s $make_args modules_install INSTALL_MOD_STRIP=1" >/dev/null
	fi
	log "kernel ($variant) up to date: $tree"
	exit 0
fi

if [[ ! -f $tree/Makefile ]]; then
	log "extracting linux-source-7.2 into $tree"
	rm -rf "$tree.new"
	mkdir -p "$tree.new"
	tar -C "$tree.new" --strip-components=1 -xf "$RSNIC_ROOTFS/usr/src/linux-source-7.2.tar.xz"
	mv "$tree.new" "$tree"
fi

frag_args=""
for f in "${fragments[@]}"; do
	frag_args+=" $RSNIC_IN_REPO/qemu/$(basename "$f")"
done

log "building kernel ($variant) on $(nproc) cores; log: $tree/build.log"
start=$SECONDS
in_rootfs /bin/bash -euc "
	cd $in_tree
	KCONFIG_ALLCONFIG=/dev/null make -s $make_args allnoconfig
	scripts/kconfig/merge_config.sh -m .config $frag_args >/dev/null
	make -s $make_args olddefconfig
	# Every option the fragments ask for (the last fragment wins) must have
	# survived olddefconfig.
	missing=0
	while IFS= read -r line; do
		grep -qxF -- \"\$line\" .config || { echo \"not set: \$line\" >&2; missing=1; }
	done < <(awk -F= '/^CONFIG_/ { want[\$1] = \$0 } END { for (k in want) print want[k] }' $frag_args)
	[ \$missing = 0 ]
	make -j$(nproc) $make_args bzImage modules
	rm -rf /lib/modules/\$(cat include/config/kernel.release)
	make -s $make_args modules_install INSTALL_MOD_STRIP=1 >/dev/null
" >"$tree/build.log" 2>&1 || { tail -n 30 "$tree/build.log" >&2; die "kernel build failed"; }
echo "$want" >"$stamp"
log "kernel ($variant) built in $((SECONDS - start)) s: $(cat "$tree/include/config/kernel.release")"
