#!/bin/bash
# The reference peer's root file system, build/peer/initramfs.cpio: this
# machine's NFS server and client programs (Debian 12's nfs-utils 2.6.2,
# rpcbind), iproute2, tcpdump, keyutils, busybox for the rest, tlshd as
# built by tests/peer/build-peer.sh, the bench's test PKI (build/certs),
# the peer's init and control service (tests/peer).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TLSH_BUILD:-$top/build}
root=$B/peer/rootfs
out=$B/peer/initramfs.cpio
tlshd=$B/peer/ktls-utils/src/tlshd/tlshd

die() { echo "peer initramfs: error: $*" >&2; exit 1; }

[ -x "$tlshd" ] || die "no $tlshd (run: tests/peer/build-peer.sh tlshd)"
[ -s "$B/certs/ref.pem" ] || die "no $B/certs/ref.pem (run: make certs)"

. "$top/scripts/rootfs-lib.sh"
rootfs_skeleton
mkdir -p "$root/export"

PROGS=(
	bash mount umount mount.nfs mount.nfs4 umount.nfs umount.nfs4
	exportfs rpc.nfsd rpc.mountd rpc.statd rpcbind rpcinfo nfsstat showmount
	ip ss tcpdump keyctl sha256sum pkill pgrep setsid grep
)
for p in "${PROGS[@]}"; do
	copy_prog "$p"
done
rootfs_busybox
opt_prog "$tlshd" /usr/sbin

cat > "$root/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
_rpc:x:100:65534::/run/rpcbind:/usr/sbin/nologin
statd:x:101:65534::/var/lib/nfs:/usr/sbin/nologin
P
cat > "$root/etc/group" <<'G'
root:x:0:
nogroup:x:65534:
G
cat > "$root/etc/hosts" <<'H'
127.0.0.1	localhost
::1		localhost ip6-localhost
198.51.100.1	ref.test
2001:db8:1::1	ref.test
198.51.100.2	tlsh-guest.test
2001:db8:1::2	tlsh-guest.test
H
rootfs_nfs_etc
echo "/export *(rw,sync,no_subtree_check,no_root_squash,insecure,sec=sys,fsid=1)" > "$root/etc/exports"
cp -a "$B/certs" "$root/etc/tlsh-test-certs"

mkdir -p "$root/etc/peer"
cp "$top/tests/peer/peer-lib.sh" "$root/etc/peer/"
install -m 755 "$top/tests/peer/peer-cmd" "$root/usr/sbin/peer-cmd"
install -m 755 "$top/tests/peer/init" "$root/init"

rootfs_cpio "$out"
echo "peer initramfs: $out ($(du -h "$out" | cut -f1))"
