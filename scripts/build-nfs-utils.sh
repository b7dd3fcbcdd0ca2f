#!/bin/bash
# Build exportfs and rpc.mountd from nfs-utils 2.6.4 for the bench's knfsd
# (tests/guest/server-start): the `xprtsec=` export option came with
# nfs-utils 2.6.3, and Debian 12's 2.6.2 rejects it.
#
#   build/nfs-utils/src/        ../shared/third-party/nfs-utils-*.tar.gz, unpacked
#   build/nfs-utils/out/        exportfs, rpc.mountd (stripped), exports.5, exportfs.8,
#                               rpc.mountd.8
#   build/nfs-utils/build.log   autoreconf, configure and make
#
# Configured for what exportfs and rpc.mountd need (TI-RPC, IPv6, libblkid
# for UUIDs; no GSS, NFSv4 id mapping, nfsdcld, nfsdcltrack, blkmapd,
# nfsrahead, mount.nfs, junctions, LDAP, libcap, TCP wrappers), and only
# the support libraries and those two programs are built. Redone only when
# the tarball or this script changed (a stamp). Nothing is installed on
# this machine; scripts/mkinitramfs.sh puts the programs in the guest as
# /usr/local/sbin/exportfs and /usr/local/sbin/rpc.mountd.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
B=${TLSH_BUILD:-$top/build}
D=$B/nfs-utils
src=$D/src
out=$D/out
logf=$D/build.log
stamp=$D/.tlsh-built
tarball=${TLSH_NFS_UTILS:-$(ls "$top"/../shared/third-party/nfs-utils-*.tar.gz 2>/dev/null | tail -1)}
jobs=${JOBS:-$(nproc)}

log() { echo "nfs-utils: $*"; }
die() { echo "nfs-utils: error: $*" >&2; exit 1; }

[ -f "$tarball" ] || die "no nfs-utils tarball (looked in $top/../shared/third-party; set TLSH_NFS_UTILS)"
version=$(basename "$tarball" .tar.gz)
version=${version#nfs-utils-}

# one build at a time (make initramfs and the host test may run together)
mkdir -p "$D"
exec 9> "$D/.lock"
flock 9

want=$(cat "$tarball" "$0" | sha256sum | cut -d' ' -f1)
if [ -x "$out/exportfs" ] && [ -x "$out/rpc.mountd" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
	log "exportfs and rpc.mountd $version are up to date ($out)"
	exit 0
fi

"$top/scripts/deps.sh" --check >/dev/null 2>&1 || "$top/scripts/deps.sh"

log "building nfs-utils $version's exportfs and rpc.mountd (~2 min on 2 cores; see $logf)"
start=$(date +%s)
rm -rf "$src" "$out" "$stamp"
mkdir -p "$src" "$out"
tar -xzf "$tarball" -C "$src" --strip-components=1
# (&&: set -e does not apply in a subshell whose status is tested)
(
	set -x
	cd "$src" &&
	# a git archive: no configure script yet
	autoreconf -fi &&
	./configure -q --prefix=/usr --sysconfdir=/etc \
		--enable-tirpc --enable-ipv6 \
		--disable-gss --disable-svcgss --disable-nfsv4 --disable-nfsv41 \
		--disable-nfsdcld --disable-nfsdcltrack --disable-nfsrahead \
		--disable-mount --disable-junction --disable-ldap --disable-caps \
		--without-tcp-wrappers &&
	# the support libraries exportfs and mountd link with, then the two
	# programs (not fsidd, which shares support/reexport's directory)
	make -C support/include &&
	make -j"$jobs" -C support/nfs &&
	make -j"$jobs" -C support/misc &&
	make -j"$jobs" -C support/export &&
	make -C support/reexport libreexport.a &&
	make -j"$jobs" -C utils/exportfs exportfs &&
	make -j"$jobs" -C utils/mountd mountd
) > "$logf" 2>&1 || { tail -n 30 "$logf" >&2; die "exportfs/rpc.mountd did not build (see $logf)"; }

install -s -m 755 "$src/utils/exportfs/exportfs" "$out/exportfs"
install -s -m 755 "$src/utils/mountd/mountd" "$out/rpc.mountd"
install -m 644 "$src/utils/exportfs/exports.man" "$out/exports.5"
install -m 644 "$src/utils/exportfs/exportfs.man" "$out/exportfs.8"
install -m 644 "$src/utils/mountd/mountd.man" "$out/rpc.mountd.8"
"$out/rpc.mountd" -v | grep -qx "rpc.mountd version $version" ||
	die "$out/rpc.mountd -v does not say version $version"
echo "$want" > "$stamp"
log "built $out/exportfs and $out/rpc.mountd in $(( $(date +%s) - start )) s"
