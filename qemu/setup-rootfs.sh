#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates (once) the Debian sid toolchain rootfs in $RSNIC_CACHE/rootfs.
# It holds rustc, bindgen, gcc, linux-source-7.2 and QEMU for the build,
# and is also the guest's root filesystem. Rebuilt when the package list
# or this script changes; otherwise a no-op that prints the versions.

source "$(dirname "$0")/common.sh"

pkglist=$RSNIC_REPO/qemu/rootfs-packages.txt
stamp=$RSNIC_ROOTFS/.rsnic-stamp
want=$(cat "$pkglist" "$0" | sha256sum | cut -d' ' -f1)

print_versions() {
	in_rootfs /bin/sh -c '
		echo "rustc:   $(rustc --version)"
		echo "bindgen: $(bindgen --version)"
		echo "gcc:     $(gcc --version | head -n1)"
		echo "clang:   $(clang --version | head -n1)"
		echo "qemu:    $(qemu-system-x86_64 --version | head -n1)"
		echo "linux-source: $(dpkg-query -W -f="\${Version}" linux-source-7.2)"
		echo "iproute2: $(ip -V)"
		echo "ethtool: $(ethtool --version)"
	' >&2
}

if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
	log "toolchain rootfs up to date: $RSNIC_ROOTFS"
	exit 0
fi

# Packages added to the list (this script unchanged) are installed into
# the rootfs there is, in seconds, not by a new debootstrap. (A rootfs
# from before the script's own stamp existed takes this path once.)
script_stamp=$RSNIC_ROOTFS/.rsnic-script
script_hash=$(sha256sum "$0" | cut -d' ' -f1)
if [[ -f $stamp ]] && { [[ ! -f $script_stamp ]] || [[ $(cat "$script_stamp") == "$script_hash" ]]; }; then
	pkgs=$(grep -v '^#' "$pkglist" | xargs)
	log "adding the list's new packages to the toolchain rootfs"
	if in_rootfs /bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs" \
		>"$RSNIC_CACHE/apt.log" 2>&1; then
		in_rootfs apt-get clean
		echo "$script_hash" >"$script_stamp"
		echo "$want" >"$stamp"
		log "toolchain rootfs ready: $RSNIC_ROOTFS"
		print_versions
		exit 0
	fi
	log "could not add them (see $RSNIC_CACHE/apt.log): building the rootfs afresh"
fi

if ! command -v debootstrap >/dev/null; then
	log "installing debootstrap on the host"
	apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null
fi

mirror=$(rsnic_mirror)
tmp=$RSNIC_CACHE/rootfs.new
log "creating Debian sid rootfs from $mirror (a few minutes)"
mkdir -p "$RSNIC_CACHE"
rm -rf "$tmp"
debootstrap --variant=minbase sid "$tmp" "$mirror" >"$RSNIC_CACHE/debootstrap.log" 2>&1 ||
	die "debootstrap failed; see $RSNIC_CACHE/debootstrap.log"

# The mirror is a frozen snapshot: its Release files are past Valid-Until.
echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99rsnic"
echo 'APT::Install-Recommends "false";' >>"$tmp/etc/apt/apt.conf.d/99rsnic"

rm -rf "$RSNIC_ROOTFS"
mv "$tmp" "$RSNIC_ROOTFS"
pkgs=$(grep -v '^#' "$pkglist" | xargs)
log "installing toolchain packages"
in_rootfs /bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs" \
	>"$RSNIC_CACHE/apt.log" 2>&1 || die "apt-get install failed; see $RSNIC_CACHE/apt.log"
in_rootfs apt-get clean
sha256sum "$0" | cut -d' ' -f1 >"$RSNIC_ROOTFS/.rsnic-script"
echo "$want" >"$stamp"
log "toolchain rootfs ready: $RSNIC_ROOTFS"
print_versions
