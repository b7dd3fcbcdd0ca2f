#!/bin/bash
# Build the patched kernel for the bench.
#
#   build/linux-source-6.1/  pristine tree from Debian's linux-source-6.1
#   build/linux/             the patched tree (hard-linked to the pristine
#                            one; a file a patch changes is replaced, never
#                            written through)
#   build/kbuild/            objects (make O=...)
#
# The series is applied to copies of just the files it touches, and only
# files whose content differs from the tree are replaced, so editing one
# patch rebuilds only what that patch touches.
#
# Usage: scripts/build-kernel.sh [flavor] [--configure-only]
#        flavor: "" (the bench: allnoconfig + kconfig/tlsh.config), "debug"
#        (the bench + kconfig/debug.config), or "debian" (Debian's own 6.1
#        configuration from the linux-config-6.1 package +
#        kconfig/debian.config, for packages for real machines:
#        scripts/build-kernel-deb.sh)
#        scripts/build-kernel.sh --extract-only
#        scripts/build-kernel.sh --headers-only   (the series applied, its
#                 UAPI headers installed in build/uapi/include: the helper
#                 builds against them)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
B=${TLSH_BUILD:-$top/build}
flavor=${1:-}
configure_only=0
[ "${2:-}" != --configure-only ] || configure_only=1
tarball=/usr/src/linux-source-6.1.tar.xz
pristine=$B/linux-source-6.1
src=$B/linux
obj=$B/kbuild${flavor:+-$flavor}
stage=$B/stage
jobs=${JOBS:-$(nproc)}

. "$top/scripts/kbuild-lib.sh"

log() { echo "kernel: $*"; }
die() { echo "kernel: error: $*" >&2; exit 1; }

mkdir -p "$B"

# 1. pristine tree
if [ ! -f "$pristine/.tlsh-pristine" ]; then
	[ -f "$tarball" ] || die "$tarball missing (run: make deps)"
	log "extracting $tarball"
	rm -rf "$pristine"
	tar -xf "$tarball" -C "$B"
	touch "$pristine/.tlsh-pristine"
fi

[ "$flavor" = --extract-only ] && exit 0

# 2. working tree, hard-linked
if [ ! -f "$src/.tlsh-tree" ]; then
	log "creating $src"
	rm -rf "$src"
	cp -al "$pristine" "$src"
	rm -f "$src/.tlsh-pristine"
	touch "$src/.tlsh-tree"
	: > "$src/.tlsh-applied"
fi

# 3. the series
series=${TLSH_SERIES:-$top/patches/series}
patches=()
if [ -f "$series" ]; then
	while read -r p _; do
		case "$p" in ''|'#'*) continue ;; esac
		[ -f "$top/patches/$p" ] || die "series names patches/$p, which does not exist"
		patches+=("$top/patches/$p")
	done < "$series"
fi

files_of() {
	# files a patch creates, changes or deletes (both sides of renames)
	sed -n -e 's|^--- a/\([^\t ]*\).*|\1|p' -e 's|^+++ b/\([^\t ]*\).*|\1|p' "$@" |
		sort -u
}

rm -rf "$stage"
mkdir -p "$stage"
{
	cat "$src/.tlsh-applied"
	[ ${#patches[@]} -eq 0 ] || files_of "${patches[@]}"
} | sort -u > "$stage/.files"

while read -r f; do
	if [ -e "$pristine/$f" ]; then
		mkdir -p "$stage/$(dirname "$f")"
		cp "$pristine/$f" "$stage/$f"
	fi
done < "$stage/.files"

for p in "${patches[@]}"; do
	if ! out=$(patch -d "$stage" -p1 -F0 --batch --forward --no-backup-if-mismatch < "$p" 2>&1); then
		echo "$out" >&2
		die "patch $(basename "$p") does not apply"
	fi
done

changed=0
while read -r f; do
	if [ -e "$stage/$f" ]; then
		if ! cmp -s "$stage/$f" "$src/$f"; then
			mkdir -p "$src/$(dirname "$f")"
			cp --remove-destination "$stage/$f" "$src/$f"
			changed=$((changed + 1))
		fi
	elif [ -e "$src/$f" ] || [ -L "$src/$f" ]; then
		rm -f "$src/$f"
		changed=$((changed + 1))
	fi
done < "$stage/.files"
[ ${#patches[@]} -eq 0 ] || files_of "${patches[@]}" > "$src/.tlsh-applied"
[ ${#patches[@]} -ne 0 ] || : > "$src/.tlsh-applied"
log "${#patches[@]} patches applied, $changed files updated"

# 3b. the series' UAPI headers (headers_install needs no configuration)
# (stamped with the series it came from, whoever applied it)
hdr=$B/uapi
series_sum=$(cat /dev/null "${patches[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$hdr/.tlsh-uapi" 2>/dev/null)" != "$series_sum" ]; then
	rm -rf "$hdr"
	make -s -C "$src" O="$B/kbuild-uapi" headers_install INSTALL_HDR_PATH="$hdr"
	echo "$series_sum" > "$hdr/.tlsh-uapi"
	log "UAPI headers installed in $hdr/include"
fi
[ "$flavor" = --headers-only ] && exit 0

# 4. configuration: allnoconfig (or Debian's) + the committed fragment(s)
frags=("$top/scripts/kconfig/tlsh.config")
base=
case "$flavor" in
'') ;;
debian)
	debconf=/usr/src/linux-config-6.1/config.amd64_none_amd64.xz
	[ -f "$debconf" ] || die "$debconf missing (apt-get install linux-config-6.1)"
	mkdir -p "$obj"
	base=$obj/.tlsh-debian-base
	xz -dc "$debconf" > "$base"
	frags=("$top/scripts/kconfig/debian.config")
	;;
*) frags+=("$top/scripts/kconfig/$flavor.config") ;;
esac
mkdir -p "$obj"
want=$(cat "${frags[@]}" $base | sha256sum | cut -d' ' -f1)
have=$(cat "$obj/.tlsh-config" 2>/dev/null || true)
kconfigs=$(cd "$src" && find . -name 'Kconfig*' -newer "$obj/.config" 2>/dev/null | head -1 || true)
if [ "$want" != "$have" ] || [ ! -f "$obj/.config" ] || [ -n "$kconfigs" ]; then
	log "configuring ($(basename -a "${frags[@]}" | tr '\n' ' '))"
	if ! KCONFIG_BASE=$base kconfig_apply "$src" "$obj" kernel "${frags[@]}"; then
		# a prefix of the series (tests/bisect-build.sh) lacks the
		# options of its later patches
		[ -n "${TLSH_SERIES:-}" ] || die "the config fragment did not take effect (see above)"
		log "options of later patches are missing from this part of the series (above); building it anyway"
	fi
	echo "$want" > "$obj/.tlsh-config"
fi

[ $configure_only -eq 0 ] || exit 0

# 5. build
kbuild_cc "$B"
cc=$KBUILD_CC
log "building bzImage with $jobs jobs"
start=$(date +%s)
make -s -C "$src" O="$obj" CC="$cc" -j"$jobs" bzImage modules
log "built $obj/arch/x86/boot/bzImage in $(( $(date +%s) - start )) s"
