#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds the rsnic libibverbs provider (rdma-core/providers/rsnic) inside
# the source tree of the rdma-core release the rootfs's libibverbs comes
# from (65.0, the tarball in Debian's source pool), and installs it into
# the rootfs as libibverbs loads providers: librsnic-rdmav65.so plus
# /etc/libibverbs.d/rsnic.driver. The provider's ABI header is the
# driver's own (include/uapi/rdma/rsnic-abi.h), added to rdma-core's
# kernel-headers as every provider's is. Rebuilt when the provider, the
# header or this script changes, or when the rootfs was rebuilt.

source "$(dirname "$0")/common.sh"

version=65.0
tarball=rdma-core_$version.orig.tar.gz
sha256=f6ba3d8b2c4aa334c5c883c1ad0772de339011123cff4fb1db32ae7a443fb7ca
work=$RSNIC_CACHE/rdma-core
in_work=$RSNIC_IN_CACHE/rdma-core
libdir=usr/lib/x86_64-linux-gnu/libibverbs
lib=librsnic-rdmav${version%%.*}.so

abi=$RSNIC_REPO/include/uapi/rdma/rsnic-abi.h
provider=$RSNIC_REPO/rdma-core/providers/rsnic
stamp=$RSNIC_ROOTFS/.rsnic-provider-stamp
want=$(cat "$0" "$abi" "$provider"/* | sha256sum | cut -d' ' -f1)

if [[ -f $stamp && $(cat "$stamp") == "$want" && -f $RSNIC_ROOTFS/$libdir/$lib ]]; then
	log "rdma-core provider up to date: /$libdir/$lib"
	exit 0
fi

installed=$(in_rootfs dpkg-query -W -f='${Version}' libibverbs1)
[[ $installed == "$version"-* ]] ||
	die "the rootfs's libibverbs is $installed, the provider is built for rdma-core $version"

mkdir -p "$work"
if [[ ! -f $work/$tarball ]]; then
	log "downloading $tarball from $(rsnic_mirror)"
	curl -sfL -o "$work/$tarball.part" "$(rsnic_mirror)/pool/main/r/rdma-core/$tarball" ||
		die "cannot download $tarball"
	mv "$work/$tarball.part" "$work/$tarball"
fi
echo "$sha256  $work/$tarball" | sha256sum -c --quiet - || die "$tarball: wrong checksum"

log "building the rsnic provider in rdma-core $version"
rm -rf "$work/src" "$work/build"
mkdir -p "$work/src"
tar -C "$work/src" --strip-components=1 -xzf "$work/$tarball"
cp "$abi" "$work/src/kernel-headers/rdma/rsnic-abi.h"
cp -r "$provider" "$work/src/providers/rsnic"
# Publish the header and generate its ABI wrapper (both lists name
# rdma_user_rxe.h), and build the provider beside rxe.
sed -i 's|^  rdma/rdma_user_rxe.h$|&\n  rdma/rsnic-abi.h|' "$work/src/kernel-headers/CMakeLists.txt"
[[ $(grep -c '^  rdma/rsnic-abi.h$' "$work/src/kernel-headers/CMakeLists.txt") == 2 ]] ||
	die "rdma-core $version's kernel-headers/CMakeLists.txt is not as expected"
sed -i 's|^add_subdirectory(providers/rxe)$|&\nadd_subdirectory(providers/rsnic)|' "$work/src/CMakeLists.txt"
grep -q '^add_subdirectory(providers/rsnic)$' "$work/src/CMakeLists.txt" ||
	die "rdma-core $version's CMakeLists.txt is not as expected"

in_rootfs /bin/sh -euc "
	cmake -S $in_work/src -B $in_work/build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DENABLE_WERROR=1 -DNO_MAN_PAGES=1 -DNO_PYVERBS=1 \
		-DENABLE_RESOLVE_NEIGH=OFF -DENABLE_STATIC=OFF
	cmake --build $in_work/build --target rsnic-rdmav${version%%.*} -j$(nproc)
" >"$work/build.log" 2>&1 || die "provider build failed; see $work/build.log"

install -m 0644 "$work/build/lib/$lib" "$RSNIC_ROOTFS/$libdir/$lib"
echo "driver rsnic" >"$RSNIC_ROOTFS/etc/libibverbs.d/rsnic.driver"
echo "$want" >"$stamp"
log "rdma-core provider installed: /$libdir/$lib"
