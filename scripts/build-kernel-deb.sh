#!/bin/bash
# Kernel packages from the patched tree, with the kernel's own
# "make bindeb-pkg": linux-image-RELEASE, linux-headers-RELEASE and
# linux-libc-dev, into build/deb/.
#
# Usage: scripts/build-kernel-deb.sh [bench|debian]
#   bench   the bench's configuration (what make check builds and boots):
#           packages the build in build/kbuild; release 6.1.N-tlsh
#   debian  Debian 12's own 6.1 configuration (linux-config-6.1) plus
#           scripts/kconfig/debian.config, built in build/kbuild-debian:
#           for real machines; release 6.1.N-tlsh-amd64. A full
#           distribution kernel: 3.2 CPU-hours, ~1 h 40 min on 2 idle
#           cores (docs/packages.md)
#
# The package version is KERNELVERSION-tlsh.C, C the number of commits of
# this checkout (or TLSH_DEB_REVISION), so a later checkout's packages
# upgrade an earlier one's.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
B=${TLSH_BUILD:-$top/build}
kconfig=${1:-bench}
src=$B/linux
out=$B/deb
jobs=${JOBS:-$(nproc)}

. "$top/scripts/kbuild-lib.sh"

log() { echo "deb-kernel: $*"; }
die() { echo "deb-kernel: error: $*" >&2; exit 1; }

case "$kconfig" in
bench)
	obj=$B/kbuild
	"$top/scripts/build-kernel.sh"
	;;
debian)
	obj=$B/kbuild-debian
	if [ ! -f /usr/src/linux-config-6.1/config.amd64_none_amd64.xz ]; then
		[ "$(id -u)" = 0 ] || die "needs the linux-config-6.1 package (as root: apt-get install linux-config-6.1)"
		log "installing linux-config-6.1 (Debian's kernel configurations)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q linux-config-6.1 >/dev/null
	fi
	"$top/scripts/build-kernel.sh" debian --configure-only
	;;
*) die "KCONFIG=$kconfig: bench or debian" ;;
esac

rev=${TLSH_DEB_REVISION:-$(git -C "$top" rev-list --count HEAD 2>/dev/null || echo 0)}
kver=$(make -s --no-print-directory -C "$src" O="$obj" kernelversion)
krel=$(make -s --no-print-directory -C "$src" O="$obj" kernelrelease)
pkgver=$kver-tlsh.$rev

kbuild_cc "$B"
log "packaging linux $krel ($kconfig configuration) as version $pkgver (bench: ~2 min; debian: ~1 h 40 min on 2 idle cores, 3.2 CPU-hours)"
start=$(date +%s)
# the packages land next to the object directory
rm -f "$(dirname "$obj")"/linux-*_"$pkgver"_*.deb "$(dirname "$obj")"/linux-upstream_"$pkgver"_*
make -s -C "$src" O="$obj" CC="$KBUILD_CC" -j"$jobs" \
	KDEB_PKGVERSION="$pkgver" KDEB_SOURCENAME=linux-tlsh bindeb-pkg
mkdir -p "$out"
rm -f "$out"/linux-image-"$krel"_*.deb "$out"/linux-headers-"$krel"_*.deb \
	"$out"/linux-libc-dev_*.deb "$out"/linux-tlsh_*
mv "$(dirname "$obj")"/linux-*_"$pkgver"_*.deb "$out"/
mv "$(dirname "$obj")"/linux-tlsh_"$pkgver"_* "$out"/ 2>/dev/null || true
log "built in $(( $(date +%s) - start )) s:"
ls "$out"/linux-*_"$pkgver"_*.deb
