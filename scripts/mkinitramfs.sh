#!/bin/bash
# Make the guest's root file system from this machine's installed programs
# and their shared libraries, plus the project's own programs and the guest
# scripts. Output: build/initramfs.cpio (uncompressed newc; the kernel
# unpacks it faster than a compressed one under TCG).
#
# The project's request-key.d file is installed as a user would install it:
# /etc/request-key.d/tlsh.conf, and the helper as /usr/sbin/tlsh-helper.
#
# With TLSH_FROM_DEB=1 (make check) they come from the packages in
# build/deb/ instead (make deb): the agent's files are unpacked from
# tlsh-helper_*.deb, and the kernel's modules from the bench's
# linux-image-*.deb, whose vmlinuz is unpacked to build/deb/image/boot/
# for tests/vm-run (TLSH_KERNEL).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
B=${TLSH_BUILD:-$top/build}
root=$B/initramfs
out=$B/initramfs.cpio

die() { echo "initramfs: error: $*" >&2; exit 1; }

. "$top/scripts/rootfs-lib.sh"
rootfs_skeleton
mkdir -p "$root/srv"

PROGS=(
	bash mount umount mount.nfs mount.nfs4 umount.nfs umount.nfs4 exportfs
	rpc.nfsd rpc.mountd rpcbind rpcinfo nfsstat request-key keyctl ip
	tcpdump gnutls-serv gnutls-cli certtool timeout setsid nsenter unshare
	sha256sum dd pkill pgrep ps stat flock tail mountpoint ss insmod rmmod lsmod setpriv
	stunnel4
)
# TLSH_EXTRA_PROGS: more of this machine's programs for a debugging
# session in the guest (e.g. "perf strace"); make check sets none
for p in "${PROGS[@]}" ${TLSH_EXTRA_PROGS:-}; do
	copy_prog "$p"
done
copy_libgcc_s

rootfs_busybox

# configuration
cat > "$root/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
tester:x:1000:1000:unprivileged tester:/tmp:/bin/bash
_rpc:x:100:65534::/run/rpcbind:/usr/sbin/nologin
statd:x:101:65534::/var/lib/nfs:/usr/sbin/nologin
P
cat > "$root/etc/group" <<'G'
root:x:0:
nogroup:x:65534:
tester:x:1000:
G
cat > "$root/etc/hosts" <<'H'
127.0.0.1	localhost
::1		localhost ip6-localhost
192.0.2.1	server.test server
2001:db8::1	server.test server
192.0.2.2	plain.test
2001:db8::2	plain.test
192.0.2.11	c1.test
192.0.2.12	c2.test
H
rootfs_nfs_etc
cp /etc/request-key.conf "$root/etc/request-key.conf"
mkdir -p "$root/etc/request-key.d"
if [ "${TLSH_FROM_DEB:-0}" = 1 ]; then
	# the packages, as dpkg would unpack them
	helper_deb=$(ls "$B"/deb/tlsh-helper_*_amd64.deb 2>/dev/null | tail -1)
	image_deb=$(ls "$B"/deb/linux-image-*-tlsh_*_amd64.deb 2>/dev/null | tail -1)
	[ -n "$helper_deb" ] || die "no build/deb/tlsh-helper_*_amd64.deb (make deb-helper)"
	[ -n "$image_deb" ] || die "no build/deb/linux-image-*-tlsh_*_amd64.deb (make deb-kernel)"
	dpkg-deb -x "$helper_deb" "$root"
	copy_libs "$root/usr/sbin/tlsh-helper"
	rm -rf "$B/deb/image"
	dpkg-deb -x "$image_deb" "$B/deb/image"
	if [ -d "$B/deb/image/lib/modules" ]; then
		mkdir -p "$root/lib/modules"
		cp -a "$B/deb/image/lib/modules/." "$root/lib/modules/"
	fi
	echo "initramfs: agent from $(basename "$helper_deb"), kernel from $(basename "$image_deb")"
else
	cp "$top"/request-key.d/*.conf "$root/etc/request-key.d/" 2>/dev/null || true
fi
echo "/srv/export *(rw,sync,no_subtree_check,no_root_squash,insecure,fsid=1)" > "$root/etc/exports"

# the project's programs (those that are built)
[ "${TLSH_FROM_DEB:-0}" = 1 ] || opt_prog "$top/handshake-helper/tlsh-helper" /usr/sbin
# the same helper with fault injection (handshake-helper/fault.h), for 025
opt_prog "$top/handshake-helper/tlsh-helper-testing" /usr/sbin
opt_prog "$top/tests/tls-front/tls-front" /usr/local/bin
# nfs-utils 2.6.4's exportfs and rpc.mountd (make nfs-utils), which know
# the xprtsec= export option; tests/guest/server-start prefers them to
# Debian's 2.6.2 in /usr/sbin (copied above, the fallback)
opt_prog "$B/nfs-utils/out/exportfs" /usr/local/sbin
opt_prog "$B/nfs-utils/out/rpc.mountd" /usr/local/sbin
conf=$top/handshake-helper/tlsh-helper.conf
[ "${TLSH_FROM_DEB:-0}" != 1 ] || conf=$root/etc/tlsh/tlsh-helper.conf
if [ -f "$conf" ]; then
	mkdir -p "$root/etc/tlsh"
	# configured as an administrator of the bench network would: the
	# bench CA trusted (a script given to tests/vm-run mounts with tls
	# as it is; the cases write the configuration they test)
	sed 's|^#trust-store = system$|trust-store = /etc/tlsh-test-certs/ca.pem|' \
		"$conf" > "$B/tlsh-helper.conf.bench"
	mv "$B/tlsh-helper.conf.bench" "$root/etc/tlsh/tlsh-helper.conf"
	grep -q '^trust-store = /etc/tlsh-test-certs/ca.pem$' "$root/etc/tlsh/tlsh-helper.conf" ||
		{ echo "mkinitramfs: the helper's example configuration has no '#trust-store = system' line" >&2; exit 1; }
fi
for t in "$B"/tools/*; do
	[ -x "$t" ] && opt_prog "$t" /usr/local/bin
done
# the benchmarks' programs (tests/bench, built by "make bench")
for t in "$B"/bench/bin/*; do
	[ -x "$t" ] && opt_prog "$t" /usr/local/bin
done
for k in "$B"/kmod/*.ko; do
	[ -f "$k" ] || continue
	mkdir -p "$root/lib/tlsh"
	cp "$k" "$root/lib/tlsh/"
done
if [ -d "$B/certs" ]; then
	cp -a "$B/certs" "$root/etc/tlsh-test-certs"
fi

# guest scripts
mkdir -p "$root/tlsh/guest" "$root/tlsh/scripts"
cp "$top"/tests/guest/* "$root/tlsh/guest/"
cp "$top/tests/guest/init" "$root/init"
chmod +x "$root/init"

rootfs_cpio "$out"
echo "initramfs: $out ($(du -h "$out" | cut -f1))"
