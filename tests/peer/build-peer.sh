#!/bin/bash
# Build the bench's upstream reference peer VM (see tests/peer/README.md):
#
#   build/peer/linux/           Debian's linux-source-6.12, as extracted
#   build/peer/kbuild/          its objects; arch/x86/boot/bzImage
#   build/peer/ktls-utils/      ktls-utils (tlshd) from
#                               ../shared/third-party/ktls-utils-*.tar.gz
#   build/peer/initramfs.cpio   the peer's root file system
#
# Each part is redone only when its inputs changed (stamp files).
# Nothing is installed on this machine and nothing of it is committed.
#
# Usage: tests/peer/build-peer.sh [kernel|tlshd|initramfs]...  (default: all)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TLSH_BUILD:-$top/build}
P=$B/peer
tarball=/usr/src/linux-source-6.12.tar.xz
src=$P/linux
obj=$P/kbuild
frag=$top/scripts/kconfig/peer.config
ktls=${TLSH_KTLS_UTILS:-$(ls "$top"/../shared/third-party/ktls-utils-*.tar.gz 2>/dev/null | tail -1)}
jobs=${JOBS:-$(nproc)}

. "$top/scripts/kbuild-lib.sh"

log() { echo "peer: $*"; }
die() { echo "peer: error: $*" >&2; exit 1; }

mkdir -p "$P"

# --- the kernel --------------------------------------------------------

# source_id: what identifies the kernel source (the package's version)
source_id() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || stat -c '%s %Y' "$tarball"
}

kernel_extract() {
	local id
	id=$(source_id)
	[ "$(cat "$src/.tlsh-peer-source" 2>/dev/null)" = "$id" ] && return 0
	[ -f "$tarball" ] || die "$tarball missing (run: make deps)"
	log "extracting $tarball"
	rm -rf "$src" "$obj" "$P/linux-source-6.12"
	tar -xf "$tarball" -C "$P"
	mv "$P/linux-source-6.12" "$src"
	echo "$id" > "$src/.tlsh-peer-source"
}

kernel_config() {
	local want
	want=$( (cat "$frag"; source_id) | sha256sum | cut -d' ' -f1)
	if [ -f "$obj/.config" ] && [ "$(cat "$obj/.tlsh-config" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	log "configuring linux 6.12 (allnoconfig + $(basename "$frag"))"
	kconfig_apply "$src" "$obj" peer "$frag" || die "the config fragment did not take effect (see above)"
	echo "$want" > "$obj/.tlsh-config"
}

kernel_build() {
	local want start cc
	want=$( (cat "$obj/.config"; source_id) | sha256sum | cut -d' ' -f1)
	if [ -f "$obj/arch/x86/boot/bzImage" ] && [ "$(cat "$obj/.tlsh-built" 2>/dev/null)" = "$want" ]; then
		log "linux 6.12 is up to date ($obj/arch/x86/boot/bzImage)"
		return 0
	fi
	kbuild_cc "$B"
	cc=$KBUILD_CC
	log "building linux 6.12 bzImage with $jobs jobs (cold: ~12 min on 2 cores; $cc)"
	start=$(date +%s)
	make -s -C "$src" O="$obj" CC="$cc" -j"$jobs" bzImage
	echo "$want" > "$obj/.tlsh-built"
	log "built $obj/arch/x86/boot/bzImage in $(( $(date +%s) - start )) s"
}

# --- tlshd ---------------------------------------------------------------

tlshd_build() {
	local dir=$P/ktls-utils want start
	[ -f "$ktls" ] || die "no ktls-utils tarball (looked in $top/../shared/third-party; set TLSH_KTLS_UTILS)"
	want=$(sha256sum < "$ktls" | cut -d' ' -f1)
	if [ -x "$dir/src/tlshd/tlshd" ] && [ "$(cat "$dir/.tlsh-built" 2>/dev/null)" = "$want" ]; then
		log "tlshd is up to date ($dir/src/tlshd/tlshd)"
		return 0
	fi
	log "building tlshd from $(basename "$ktls")"
	start=$(date +%s)
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xzf "$ktls" -C "$dir" --strip-components=1
	# one chain: set -e does not act inside a subshell whose status is
	# tested with ||, so a failing autoreconf or configure must stop it
	(
		cd "$dir" &&
			autoreconf -fi &&
			./configure -q --prefix=/usr --sysconfdir=/etc &&
			make -s -j"$jobs"
	) > "$P/tlshd-build.log" 2>&1 || { tail -20 "$P/tlshd-build.log" >&2; die "tlshd did not build (see $P/tlshd-build.log)"; }
	echo "$want" > "$dir/.tlsh-built"
	log "built $dir/src/tlshd/tlshd in $(( $(date +%s) - start )) s"
}

# --- the root file system ---------------------------------------------

peer_initramfs() {
	"$top/tests/certs/mkcerts.sh" "$B/certs" >/dev/null
	"$top/tests/peer/mkinitramfs-peer.sh"
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(kernel tlshd initramfs)
"$top/scripts/deps.sh" --check >/dev/null 2>&1 || "$top/scripts/deps.sh"
for part in "${parts[@]}"; do
	case "$part" in
	kernel) kernel_extract; kernel_config; kernel_build ;;
	tlshd) tlshd_build ;;
	initramfs) peer_initramfs ;;
	*) die "unknown part $part (kernel, tlshd, initramfs)" ;;
	esac
done
