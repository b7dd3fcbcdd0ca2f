#!/bin/bash
# The upstream reference client against our knfsd (tests/vm-run --peer):
# the peer's linux 6.12 NFS client with ktls-utils' tlshd mounts a knfsd
# of this guest, run in C1 on the peer link (198.51.100.2, with an
# rpcbind and mountd of its own) with /proc/fs/nfsd/tls on, the agent
# started on demand for its server handshakes: xprtsec=tls (NFSv4.2, 4.1,
# 4.0, 3) and mtls, 16 MiB written by the peer checked here and read
# back there, TLS on the wire and no plaintext in the peer's capture,
# knfsd learning the peer's client certificate; with TLS off, the peer's
# strict mount fails and its plaintext mount works. Without a peer VM:
# one SKIP line.
# tlsh-vm: timeout=600
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh
. /tlsh/guest/peer-lib.sh

peer_ready "the 6.12 client against our knfsd" || exit 0
nfs_tls_ready "the 6.12 client against our knfsd" svc_tcp_handshake || exit 0

L=$TLSH_PEER_LOCAL
MOUNTD=/usr/local/sbin/rpc.mountd
[ -x $MOUNTD ] || MOUNTD=/usr/sbin/rpc.mountd
PM=/mnt/g
A=$TLSH_ARTIFACTS

# c1_nfsd start|stop|tls [0|1]: a knfsd (NFSv3 and v4) in C1, listening
# on the peer link, with an rpcbind and an rpc.mountd of its own. Those
# two run in a mount namespace with a private /run, where S's rpcbind
# has its socket and lock; the kernel registers C1's services through
# 127.0.0.1:111 of C1 (this guest has no /var/run/rpcbind.sock). The
# daemons keep that mount namespace, in which C1's nfsd filesystem is
# mounted.
c1_nfsd() {
	case "$1" in
	start)
		ip -n C1 link set lo up
		ip netns exec C1 unshare -m --propagation private sh -c "
			mount -t tmpfs c1run /run && mkdir -p /run/rpcbind &&
			mount -t nfsd nfsd /proc/fs/nfsd &&
			echo 1 > /proc/fs/nfsd/tls &&
			echo 10 > /proc/fs/nfsd/nfsv4leasetime &&
			echo 10 > /proc/fs/nfsd/nfsv4gracetime &&
			{ rpcbind -f -w > $A/c1-rpcbind.log 2>&1 &
			  echo \$! > $A/c1-rpcbind.pid; } &&
			for i in \$(seq 50); do rpcinfo -p 127.0.0.1 > /dev/null 2>&1 && break; sleep 0.1; done &&
			{ $MOUNTD -F --no-udp > $A/c1-mountd.log 2>&1 &
			  echo \$! > $A/c1-mountd.pid; } &&
			rpc.nfsd --no-udp -V 3 -V 4 -V 4.1 -V 4.2 -H $L 4 &&
			for i in \$(seq 50); do echo Y 2>/dev/null > /proc/fs/nfsd/v4_end_grace && break; sleep 0.1; done" ;;
	stop)
		nfsd_sh C1 "rpc.nfsd 0"
		kill "$(cat $A/c1-mountd.pid 2>/dev/null)" "$(cat $A/c1-rpcbind.pid 2>/dev/null)" 2>/dev/null ;;
	tls) nfsd_tls_ns C1 "${2:-}" ;;
	esac
}
# c1_registered: C1's rpcbind, asked on the peer link, has NFSv3 and
# mountd v3
c1_registered() {
	local l
	l=$(ip netns exec C1 rpcinfo -p $L 2>/dev/null)
	echo "$l" | grep -q " 3 *tcp *2049 *nfs" && echo "$l" | grep -q " 3 *tcp .* mountd"
}

# on_peer COMMAND: a shell command on the peer, a minute to finish
on_peer() {
	PEER_TIMEOUT=$((60 * TLSH_SLOWDOWN)) peer sh "$*"
}
# peer_mounts OPTIONS: the peer mounts our export on $PM (mount.nfs
# itself: util-linux's mount, run from the peer's control service, loses
# its helper child now and then: "mount failed: No child processes")
peer_mounts() {
	on_peer "mkdir -p $PM && mount.nfs $L:$TLSH_EXPORT $PM -o $1,retry=0 && grep ' $PM ' /proc/mounts" && return 0
	echo "# the peer's kernel log:"
	peer dmesg 8 | sed 's/^/#   /'
	echo "# our kernel log and agent log:"
	dmesg | tail -4 | sed 's/^/#   /'
	grep tlsh-helper /var/log/messages | tail -4 | sed 's/^/#   /'
	return 1
}
peer_umount() { on_peer "umount -i $PM" > /dev/null; }
# peer_writes NAME: the peer writes its 16 MiB file as NAME, we check it
peer_writes() {
	local out got
	out=$(on_peer "grep -q ' $PM ' /proc/mounts && cp /tmp/g16 $PM/$1 && cp /tmp/marker $PM/marker.$1 && sync") ||
		{ echo "# the peer could not write $1: $out"; return 1; }
	got=$(sha256sum < $TLSH_EXPORT_DIR/$1 | cut -d' ' -f1)
	[ "$got" = "$want" ] && return 0
	echo "# $1 here: sha256 ${got:-none}, the peer's: $want"
	return 1
}
# peer_reads NAME: the peer reads NAME back with the same sha256
peer_reads() {
	[ "$(on_peer "grep -q ' $PM ' /proc/mounts && sha256sum < $PM/$1 | cut -d' ' -f1")" = "$want" ]
}
cleanup() {
	on_peer "umount -i -f $PM" > /dev/null 2>&1
	c1_nfsd stop > /dev/null 2>&1
}
trap cleanup EXIT

knfsd_tls_setup "$KNFSD_MTLS_CONF"
check "the peer's tlshd runs (trusted)" [ "$(peer tlshd mode)" = trusted ]
check "a knfsd in C1 on the peer link, TLS on" c1_nfsd start
check "... /proc/fs/nfsd/tls of C1 reads 1" [ "$(c1_nfsd tls)" = 1 ]
check "... its rpcbind has NFSv3 and mountd" c1_registered
check "the peer makes 16 MiB of data" on_peer "dd if=/dev/urandom of=/tmp/g16 bs=1M count=16 status=none && yes TLSH-PLAINTEXT-MARKER | head -c 1048576 > /tmp/marker"
want=$(on_peer "sha256sum < /tmp/g16 | cut -d' ' -f1")

# --- xprtsec=tls ---------------------------------------------------------
peer capture start tcp port 2049 > /dev/null
check "6.12 client: NFSv4.2 mount of our knfsd with xprtsec=tls" peer_mounts vers=4.2,xprtsec=tls
check "6.12 client: 16 MiB written, same sha256 here" peer_writes tls16
peer_umount
check "6.12 client: remount (tls) and read back" peer_mounts vers=4.2,xprtsec=tls
check "... same sha256 on the peer" peer_reads tls16
peer_umount
check "the peer's capture: TLS records, no plaintext of the marker" no_plaintext_on_peer
check "trace: our knfsd answered STARTTLS and its handshakes succeeded" [ "$(grep " svc_tls_done:" $TRACE/trace | grep -c "status=0 ")" -ge 2 ]
tlshd_handshakes() { peer log tlshd 50 | grep -q 'Handshake .*succeeded'; }
check "tlshd on the peer did the client handshakes" tlshd_handshakes

# --- NFSv4.1 and v4.0 ------------------------------------------------------
for v in 4.1 4.0; do
	check "6.12 client: NFSv$v mount with xprtsec=tls" peer_mounts vers=$v,xprtsec=tls
	check "6.12 client (NFSv$v): reads the 16 MiB back" peer_reads tls16
	peer_umount
done

# --- NFSv3: the MOUNT protocol in plaintext, NFS itself over TLS ------------
peer capture start tcp port 2049 > /dev/null
d0=$(svc_count svc_tls_done 'status=0 ')
check "6.12 client: NFSv3 mount with xprtsec=tls" peer_mounts vers=3,nolock,xprtsec=tls
check "6.12 client (NFSv3): reads the 16 MiB back" peer_reads tls16
check "6.12 client (NFSv3): 16 MiB written, same sha256 here" peer_writes v3tls16
peer_umount
check "the peer's capture (NFSv3): TLS records, no plaintext of the marker" no_plaintext_on_peer
check "trace: our knfsd's server handshake for the NFSv3 mount" [ "$(svc_count svc_tls_done 'status=0 ')" -gt "$d0" ]

# --- xprtsec=mtls: tlshd's client certificate ----------------------------
p0=$(peer_keys)
check "6.12 client: NFSv4.2 mount with xprtsec=mtls" peer_mounts vers=4.2,xprtsec=mtls
check "6.12 client (mtls): 16 MiB written, same sha256 here" peer_writes mtls16
peer_umount
check "knfsd learned the peer's client certificate (XPT_PEER_AUTH)" [ "$(peer_keys)" -gt "$p0" ]

# --- TLS off: the strict mount fails, plaintext works --------------------
check "TLS off in C1" [ "$(c1_nfsd tls 0)" = 0 ]
check_fail "6.12 client: xprtsec=tls fails against our knfsd with TLS off" peer_mounts vers=4.2,xprtsec=tls
check "6.12 client: xprtsec=none mounts" peer_mounts vers=4.2,xprtsec=none
check "... and reads the TLS-written file back" peer_reads tls16
peer_umount
rm -f $TLSH_EXPORT_DIR/tls16 $TLSH_EXPORT_DIR/v3tls16 $TLSH_EXPORT_DIR/mtls16 $TLSH_EXPORT_DIR/marker.*
finish
