#!/bin/bash
# The xprtsec= matrix against the upstream reference peer (linux 6.12
# knfsd with ktls-utils' tlshd on ref.test, tests/vm-run --peer): what
# xprtsec=auto gets from a server with a trusted certificate, with one
# this client cannot verify, and with no tlshd at all (knfsd answers
# STARTTLS and then closes the connection); NFSv4.0/4.1 and nconnect=4
# over TLS; mtls accepted, and a client certificate from another CA
# refused. Without a peer VM: one SKIP line.
# tlsh-vm: timeout=600
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh
. /tlsh/guest/peer-lib.sh

peer_ready "xprtsec matrix against the peer" || exit 0

R=$TLSH_PEER_NAME
M=/mnt/peerm
peer_case $M /tmp/m16
keyctl new_session > /dev/null

# round_trip NAME: write 16 MiB, the peer has the same sha256, read back
round_trip() {
	local got
	cp /tmp/m16 "$M/$1" && sync || return 1
	got=$(peer sha256 "$1")
	[ "$got" = "$want" ] || { echo "# peer: sha256 of $1: ${got:-nothing}"; return 1; }
	[ "$(sha256sum < "$M/$1" | cut -d' ' -f1)" = "$want" ]
}

enc_auth() { encrypted $M 1 && authenticated $M 1; }
v3_plain() { peer_mount vers=3,nolock,xprtsec=auto $M && plaintext $M; }

check "peer: tlshd runs with the trusted certificate" peer tlshd start trusted

# --- xprtsec=auto, one row of the table each ---------------------------
kmark auto-trusted
check "auto, tlshd with a certificate we trust: mounts" peer_mount vers=4.2,xprtsec=auto $M
check "... encrypted" encrypted $M 1
check "... and the server authenticated" authenticated $M 1
check "... 16 MiB round trip, same sha256 on the peer" round_trip auto-trusted
umount $M

check "peer: tlshd restarted with a certificate from another CA" peer tlshd start untrusted
kmark auto-untrusted
check "auto, a certificate we cannot verify: mounts" peer_mount vers=4.2,xprtsec=auto $M
check "... encrypted" encrypted $M 1
check "... the server not authenticated" authenticated $M 0
check "... the kernel says so" kgrep auto-untrusted "the certificate of $R .* could not be verified; xprtsec=auto continues encrypted, without server authentication"
check "... 16 MiB round trip" round_trip auto-untrusted
umount $M

check "peer: tlshd stopped (a stock 6.12 server)" peer tlshd stop
kmark auto-notlshd
start=$(date +%s)
check "auto, no tlshd on the server: mounts" peer_mount vers=4.2,xprtsec=auto $M
el=$(( $(date +%s) - start ))
check "... within 20 s (took ${el} s)" [ $el -le 20 ]
check "... in plaintext" plaintext $M
check "... saying why" kgrep auto-notlshd "$R .* offers RPC-with-TLS but closed the connection during the handshake; xprtsec=auto continues in plaintext"
check "... 16 MiB round trip" round_trip auto-notlshd
umount $M
kmark v3-notlshd
check "auto, no tlshd, NFSv3: mounts in plaintext" v3_plain
umount $M 2>/dev/null

# --- versions and nconnect over TLS --------------------------------------
check "peer: tlshd back with the trusted certificate" peer tlshd start trusted
for v in 4.0 4.1; do
	check "NFSv$v, xprtsec=tls: mounts" peer_mount vers=$v,xprtsec=tls $M
	check "... encrypted and authenticated" enc_auth
	check "... 16 MiB round trip" round_trip "tls-v$v"
	umount $M
done
check "NFSv4.2, xprtsec=tls, nconnect=4: mounts" peer_mount vers=4.2,xprtsec=tls,nconnect=4 $M
dd if=/dev/urandom of=$M/nc bs=1M count=8 status=none
check "... four transports, all encrypted" encrypted $M 4
check "... 16 MiB round trip" round_trip nconnect
umount $M

# --- mtls -------------------------------------------------------------
cert=$(keyctl padd user tlsh:peer-cert @s < $CERTS/client.pem)
key=$(keyctl padd user tlsh:peer-key @s < $CERTS/client-key.pem)
ocert=$(keyctl padd user tlsh:peer-ocert @s < $CERTS/client-other.pem)
okey=$(keyctl padd user tlsh:peer-okey @s < $CERTS/client-other-key.pem)
check "mtls with a client certificate tlshd trusts: mounts" \
	peer_mount vers=4.2,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key $M
check "... encrypted" encrypted $M 1
check "... 16 MiB round trip" round_trip mtls
umount $M
peer mark mtls-other > /dev/null
kmark mtls-other
start=$(date +%s)
check_fail "mtls with a client certificate from another CA: refused" \
	peer_mount vers=4.2,xprtsec=mtls,cert_serial=$ocert,privkey_serial=$okey $M
el=$(( $(date +%s) - start ))
check "... within 30 s (took ${el} s)" [ $el -le 30 ]
check "... the kernel says the server refused it" \
	kgrep mtls-other "$R .* \(failed: refused by the server\|refused the TLS session\|failed: the server closed the connection during the handshake\)"
tlshd_says() {
	local log
	log=$(peer log tlshd-since mtls-other)
	grep -iE 'signer|not trusted|handshake.*fail' <<< "$log" | head -4 | sed 's/^/# tlshd: /'
	grep -qi 'signer not found' <<< "$log"
}
check "... and tlshd logged why" tlshd_says

for f in auto-trusted auto-untrusted auto-notlshd tls-v4.0 tls-v4.1 nconnect nc mtls; do
	peer rm $f > /dev/null
done
reports=$(peer dmesg 2000 | grep -E "$TLSH_KERNEL_REPORT_RE")
check "the peer's kernel reported no warning or oops" [ -z "$reports" ]
finish
