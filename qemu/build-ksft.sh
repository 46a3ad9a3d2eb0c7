#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs the kernel's own NIC driver tests (tools/testing/selftests
# drivers/net, drivers/net/hw and the net/lib they use) from the cached
# kernel tree into $RSNIC_CACHE/ksft/<variant>, with their helper programs,
# BPF objects and YNL library built. selftests/drivers/net/rsnic/
# upstream.sh runs them in the guest. Rebuilt when the kernel or this
# script changes.

source "$(dirname "$0")/common.sh"

variant=${1:-${KERNEL:-normal}}
tree=$RSNIC_KERNEL_DIR/$variant
in_tree=$RSNIC_IN_CACHE/kernel/$variant
out=$RSNIC_CACHE/ksft/$variant
in_out=$RSNIC_IN_CACHE/ksft/$variant
stamp=$out/.rsnic-stamp
want=$( (cat "$tree/.rsnic-stamp" "$0") | sha256sum | cut -d' ' -f1)

if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
	log "kernel driver selftests ($variant) up to date: $out"
	exit 0
fi

log "building the kernel's driver selftests ($variant); log: $out.log"
start=$SECONDS
rm -rf "$out"
mkdir -p "$(dirname "$out")"
# The debug kernel is built with clang; its tests need no more than gcc.
in_rootfs /bin/bash -euc "
	cd $in_tree
	make -s headers
	# drivers/net/hw's probe for liburing's zcrx calls (iou-zcrx) uses
	# echo -e, which needs bash as make's shell, and links with -luring
	# before its source, which Debian's default --as-needed drops.
	make -s -C tools/testing/selftests TARGETS='drivers/net drivers/net/hw' \
		SHELL=/bin/bash CC='gcc -Wl,--no-as-needed' INSTALL_PATH=$in_out install
	make -s -C tools/testing/selftests TARGETS='drivers/net drivers/net/hw' clean
	# The guest mounts the cache read-only, where Python cannot keep
	# the bytecode of what it imports: every test would compile the
	# library (YNL, ksft) again, over a second each under TCG.
	python3 -m compileall -q $in_out
" >"$out.log" 2>&1 || { tail -n 30 "$out.log" >&2; die "driver selftests build failed"; }
# Every program the tests run must have been built.
for f in net/lib/csum net/lib/gro net/lib/xdp_helper net/lib/xdp_dummy.bpf.o \
	net/lib/xdp_native.bpf.o drivers/net/napi_id_helper drivers/net/so_txtime \
	drivers/net/hw/toeplitz drivers/net/hw/ncdevmem drivers/net/hw/iou-zcrx; do
	[[ -e $out/$f ]] || die "driver selftests: $f was not built (see $out.log)"
done
echo "$want" >"$stamp"
log "kernel driver selftests ($variant) built in $((SECONDS - start)) s"
