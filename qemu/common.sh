# SPDX-License-Identifier: GPL-2.0
# Shared settings for the rsnic scripts. Sourced, not run.

set -euo pipefail

RSNIC_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RSNIC_CACHE=${RSNIC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsnic}
RSNIC_ROOTFS=$RSNIC_CACHE/rootfs
RSNIC_KERNEL_DIR=$RSNIC_CACHE/kernel

# Where the repo and the cache appear inside the toolchain rootfs (and so
# also inside the guest, which boots that rootfs).
RSNIC_IN_REPO=/rsnic
RSNIC_IN_CACHE=/rsnic-cache

log() { printf '[rsnic] %s\n' "$*" >&2; }
die() { printf '[rsnic] error: %s\n' "$*" >&2; exit 1; }

# The Debian mirror: $RSNIC_MIRROR, or the first Debian URI the host's apt
# is configured with (so the scripts use whatever registry the machine has).
rsnic_mirror() {
	if [[ -n ${RSNIC_MIRROR:-} ]]; then
		echo "$RSNIC_MIRROR"
		return
	fi
	local uri
	uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources |
		awk '{print $2}' | grep -v -- '-security' | grep '/debian$' | head -n1 || true)
	if [[ -z $uri ]]; then
		uri=$(grep -hs '^deb ' /etc/apt/sources.list |
			awk '{print $2}' | grep -v -- '-security' | head -n1 || true)
	fi
	[[ -n $uri ]] || die "no Debian mirror found; set RSNIC_MIRROR"
	echo "$uri"
}

# Run a command inside the toolchain rootfs, in a private mount namespace so
# no mount outlives the command. The repo is at $RSNIC_IN_REPO and the cache
# at $RSNIC_IN_CACHE inside.
in_rootfs() {
	[[ -x $RSNIC_ROOTFS/usr/bin/env ]] || die "no toolchain rootfs; run qemu/setup-rootfs.sh"
	unshare --mount --propagation private -- /bin/bash -euc '
		r=$1; repo=$2; cache=$3; in_repo=$4; in_cache=$5; shift 5
		mount --rbind /dev "$r/dev"
		mount -t proc proc "$r/proc"
		mount --rbind /sys "$r/sys"
		mount -t tmpfs tmpfs "$r/tmp"
		mkdir -p "$r$in_repo" "$r$in_cache"
		mount --bind "$repo" "$r$in_repo"
		mount --bind "$cache" "$r$in_cache"
		cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
		# Trust what the host trusts (registries may sit behind its CAs).
		host_ca=/etc/ssl/certs/ca-certificates.crt
		if [ -f "$host_ca" ] && [ -f "$r$host_ca" ]; then
			mount --bind "$host_ca" "$r$host_ca"
		fi
		exec chroot "$r" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
			PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
			LANG=C.UTF-8 "$@"
	' in_rootfs "$RSNIC_ROOTFS" "$RSNIC_REPO" "$RSNIC_CACHE" \
		"$RSNIC_IN_REPO" "$RSNIC_IN_CACHE" "$@"
}
