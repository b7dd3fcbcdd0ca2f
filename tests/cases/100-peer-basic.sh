#!/bin/bash
# Our client against the upstream reference peer (tests/vm-run --peer):
# linux 6.12's knfsd with ktls-utils' tlshd on ref.test. The link, the
# control channel, a plaintext NFSv4.2 mount with data checked on the peer
# side, then RPC-with-TLS (xprtsec=tls, NFSv4.2 and NFSv3) with the data
# checked on the peer side, TLS on the wire and no plaintext in the
# peer's own capture, tlshd's log showing the handshakes; a certificate
# from another CA and a peer without tlshd fail the strict mount. Without
# a peer VM: one SKIP line.
# tlsh-vm: timeout=600
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh
. /tlsh/guest/peer-lib.sh

peer_ready "peer tests" || exit 0

R=$TLSH_PEER_NAME
M=/mnt/peer
peer_case $M /tmp/p16
yes TLSH-PLAINTEXT-MARKER | head -c 1048576 > /tmp/marker

# same_on_peer FILE: the peer's /export/FILE has the sha256 of /tmp/p16
same_on_peer() {
	local got
	got=$(peer sha256 "$1")
	[ "$got" = "$want" ] && return 0
	echo "# peer: sha256 of $1: ${got:-nothing}, want $want"
	return 1
}

# handshakes_since MARK: tlshd's log after MARK has a successful handshake
handshakes_since() {
	local log
	log=$(peer log tlshd-since "$1")
	if grep -q "Handshake .*succeeded" <<< "$log"; then
		grep "Handshake " <<< "$log" | sed 's/^/# tlshd: /'
		return 0
	fi
	echo "# tlshd's log since $1:"
	tail -n 12 <<< "$log" | sed 's/^/#   /'
	return 1
}

# --- the link and the control channel ---------------------------------
check "link: C1 reaches ref.test over IPv4 (ping)" ping -c1 -W2 $R
check "link: C1 reaches ref.test over IPv6 (ping)" ping -c1 -W2 "$TLSH_PEER_ADDR6"
hello=$(peer hello)
check "control: the peer answers ($hello)" grep -q "^ref.test 6\.12" <<< "$hello"
peer sh "exit 3" > /dev/null
rc=$?
check "control: a command's exit status comes back (3: $rc)" [ $rc = 3 ]
check "peer: rpcbind lists nfs and mountd" sh -c "rpcinfo -p $R | grep -q nfs && rpcinfo -p $R | grep -q mountd"
check "peer: tlshd runs with the trusted certificate" [ "$(peer tlshd mode)" = trusted ]

# --- plaintext ----------------------------------------------------------
peer capture start tcp port 2049 > /dev/null
check "NFSv4.2 mount of ref.test, xprtsec=none" peer_mount vers=4.2,xprtsec=none $M
check "mountstats: connected, not encrypted" plaintext $M
check "write 16 MiB" sh -c "mountpoint -q $M && cp /tmp/p16 $M/plain16 && cp /tmp/marker $M/marker && sync"
check "the peer has the same sha256 (plaintext)" same_on_peer plain16
umount $M 2>/dev/null
check "the peer's capture (none): the marker file's text is visible" plaintext_on_peer

# --- RPC-with-TLS, NFSv4.2 ---------------------------------------------
peer mark tls42 > /dev/null
peer capture start tcp port 2049 > /dev/null
check "NFSv4.2 mount of ref.test, xprtsec=tls (tlshd, ref.test cert from the test CA)" \
	peer_mount vers=4.2,xprtsec=tls $M
check "/proc/mounts shows xprtsec=tls" grep -q " $M nfs4 .*xprtsec=tls" /proc/mounts
check "mountstats: the transport is connected and encrypted" encrypted $M 1
check "write 16 MiB over TLS" sh -c "mountpoint -q $M && cp /tmp/p16 $M/tls16 && cp /tmp/marker $M/marker && sync"
check "the peer has the same sha256 (TLS, NFSv4.2)" same_on_peer tls16
check "read back over TLS: same sha256" sh -c "[ \"\$(sha256sum < $M/plain16 | cut -d' ' -f1)\" = $want ]"
umount $M 2>/dev/null
check "the peer's capture: TLS records, no plaintext of the marker file" no_plaintext_on_peer
check "tlshd's log shows the NFSv4.2 handshake" handshakes_since tls42

# --- RPC-with-TLS, NFSv3 -------------------------------------------------
peer mark tls3 > /dev/null
check "NFSv3 mount of ref.test, xprtsec=tls (nolock)" peer_mount vers=3,nolock,xprtsec=tls $M
check "mountstats (v3): encrypted" encrypted $M 1
check "write 16 MiB over TLS (NFSv3)" sh -c "mountpoint -q $M && cp /tmp/p16 $M/tls3 && sync"
check "the peer has the same sha256 (TLS, NFSv3)" same_on_peer tls3
umount $M 2>/dev/null
check "tlshd's log shows the NFSv3 handshake" handshakes_since tls3

# --- failures the strict mode must report, with the reason -------------
# fail_mount MARK REASON OPTIONS: the mount fails, and the kernel log
# after MARK says REASON
fail_mount() {
	mkdir -p $M
	kmark "$1"
	if timeout $((40 * TLSH_SLOWDOWN)) mount -t nfs -o "$3,retry=0" \
		"$R:$TLSH_PEER_EXPORT" $M 2> "$TLSH_ARTIFACTS/fail.err"; then
		umount $M
		return 1
	fi
	echo "# mount: $(tr '\n' ' ' < "$TLSH_ARTIFACTS/fail.err")"
	kgrep "$1" "$2"
}
check "peer: tlshd restarted with the certificate from the other CA" peer tlshd start untrusted
check "xprtsec=tls refuses ref.test's certificate from another CA" \
	fail_mount untrusted "server certificate not trusted" vers=4.2,xprtsec=tls
check "peer: tlshd stopped" peer tlshd stop
check "xprtsec=tls fails when the peer has no tlshd (knfsd closes the connection)" \
	fail_mount notlshd "closed the connection" vers=4.2,xprtsec=tls
check "peer: tlshd back with the trusted certificate" peer tlshd start trusted

# --- the peer's kernel ---------------------------------------------------
reports=$(peer dmesg 2000 | grep -E "$TLSH_KERNEL_REPORT_RE")
check "the peer's kernel reported no warning or oops" [ -z "$reports" ]
[ -z "$reports" ] || sed 's/^/# peer: /' <<< "$reports"
peer rm plain16 > /dev/null; peer rm tls16 > /dev/null; peer rm tls3 > /dev/null; peer rm marker > /dev/null
finish
