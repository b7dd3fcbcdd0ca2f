#!/bin/bash
# Authenticated RPC-with-TLS: xprtsec=mtls (cert_serial=, privkey_serial=)
# and xprtsec=psk (psk_serial=) with keys provisioned by keyctl, against
# TLS fronts that verify client certificates or accept a PSK.
# tlsh-vm: timeout=900
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_tls_ready "mTLS/PSK" key_get_readable || exit 0

nfs_trace_setup
S=$TLSH_SERVER_NAME
M=/mnt/k
MT=3049		# front: client certificate required (test CA)
PK=3050		# front: PSK
# our own session keyring, so that nothing leaks into the next case
keyctl new_session >/dev/null

# fails_with MARK MESSAGE OPTIONS: the mount of server.test fails, in
# bounded time, the kernel says MESSAGE, nothing is mounted
fails_with() { mount_fails $S "$@"; }

cert=$(padd tlsh:cert $CERTS/client.pem)
key=$(padd tlsh:key $CERTS/client-key.pem)
ocert=$(padd tlsh:other-cert $CERTS/client-other.pem)
okey=$(padd tlsh:other-key $CERTS/client-other-key.pem)
psk=$(padd tlsh:psk $CERTS/psk.txt)
echo "tlsh-other:$(cat $CERTS/psk.key)" > /tmp/psk-id
echo "tlsh-test:$(cat $CERTS/psk.key | tr 0-9a-f 1-9a-f0)" > /tmp/psk-bad
pskid=$(padd tlsh:psk-id /tmp/psk-id)
pskbad=$(padd tlsh:psk-bad /tmp/psk-bad)
check "keyctl padd: seven user keys in the session keyring" \
	test -n "$cert" -a -n "$key" -a -n "$ocert" -a -n "$okey" -a -n "$psk" -a -n "$pskid" -a -n "$pskbad"

front $MT --ca $CERTS/ca.pem --require-client-cert --tls-only
front $PK --psk-file $CERTS/psk.txt --tls-only
MTO=vers=4.2,port=$MT
PKO=vers=4.2,port=$PK

# --- option errors: refused before any connection --------------------------
check "xprtsec=mtls without serials: refused" \
	fails_with opt1 "xprtsec=mtls needs cert_serial= and privkey_serial=" $MTO,xprtsec=mtls
check "xprtsec=mtls with cert_serial= only: refused" \
	fails_with opt2 "xprtsec=mtls needs cert_serial= and privkey_serial=" $MTO,xprtsec=mtls,cert_serial=$cert
check "cert_serial= without xprtsec=mtls: refused" \
	fails_with opt3 "cert_serial= and privkey_serial= need xprtsec=mtls" $MTO,xprtsec=tls,cert_serial=$cert,privkey_serial=$key
check "psk_serial= with xprtsec=mtls: refused" \
	fails_with opt4 "xprtsec=mtls takes no psk_serial=" $MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key,psk_serial=$psk
check "cert_serial= with xprtsec=psk: refused" \
	fails_with opt4b "xprtsec=psk takes no cert_serial= or privkey_serial=" $PKO,xprtsec=psk,psk_serial=$psk,cert_serial=$cert
check "xprtsec=psk without psk_serial=: refused" \
	fails_with opt5 "xprtsec=psk needs psk_serial=" $PKO,xprtsec=psk
check "cert_serial=abc: refused" \
	fails_with opt6 "Bad value for 'cert_serial'" $MTO,xprtsec=mtls,cert_serial=abc,privkey_serial=$key
check "cert_serial=0: refused" \
	fails_with opt7 "cert_serial=0 is not a key serial" $MTO,xprtsec=mtls,cert_serial=0,privkey_serial=$key
check "a serial with no key: refused (ENOKEY)" \
	fails_with opt9 "cert_serial=2147483000: no such key" $MTO,xprtsec=mtls,cert_serial=2147483000,privkey_serial=$key
check "... and mount says 'Required key not available'" grep -q "Required key not available" $TLSH_ARTIFACTS/opt9.err
kr=$(keyctl newring tlsh:ring @s)
check "a keyring as cert_serial=: refused" \
	fails_with opt10 "cert_serial=$kr is a 'keyring' key; use a 'user' key" $MTO,xprtsec=mtls,cert_serial=$kr,privkey_serial=$key

# --- mTLS ---------------------------------------------------------------
dd if=/dev/urandom of=/tmp/r16 bs=1M count=16 status=none
want=$(sha256sum < /tmp/r16 | cut -d' ' -f1)
capture_start mtls tcp port $MT
check "xprtsec=mtls mount with the client certificate: accepted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key $S $M
check "/proc/mounts shows xprtsec=mtls and the serials" \
	grep -q " $M nfs4 .*xprtsec=mtls,cert_serial=$cert,privkey_serial=$key" /proc/mounts
policy_is() { xprtsec_of "$1" | grep -q "^policy=$2," && encrypted "$1" 1; }
check "mountstats: policy=mtls, connected and encrypted" policy_is $M mtls
check "write 16 MiB" cp /tmp/r16 $M/r16
sync
check "the server has the same sha256" [ "$(sha256sum < $TLSH_EXPORT_DIR/r16 | cut -d' ' -f1)" = "$want" ]
capture_stop
check "capture: TLS application data records on the wire" [ "$(tls_records $TLSH_ARTIFACTS/mtls.pcap)" -gt 20 ]
check "the helper logged a handshake with a client certificate" grep -q "done: .*client certificate" /var/log/messages

# nfs_client matching: the same server with other key serials (here: the
# same certificate, added again) is another nfs_client, with its own
# connection; the same serials share one
conns() { ss -Htn state established "( dport = :$MT )" | wc -l; }
c3=$(padd tlsh:cert3 $CERTS/client.pem)
k3=$(padd tlsh:key3 $CERTS/client-key.pem)
check "a second mtls mount with other key serials: accepted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$c3,privkey_serial=$k3 $S /mnt/k2
check "... it is a separate client: two connections to the front" [ "$(conns)" = 2 ]
check "a third mount with the first serials: accepted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key,nosharecache $S /mnt/k3
check "... it shares the first client: still two connections" [ "$(conns)" = 2 ]
umount /mnt/k3 /mnt/k2 $M
# the front logs a connection when it ends
check "the front verified our certificate (CN=tlsh-client)" grep -q 'client_cert="[^"]*tlsh-client[,"]' $TLSH_ARTIFACTS/front-$MT.log

# A server that refuses us says so with an alert during the handshake
# ("refused by the server") or as the session's first record ("refused the
# TLS session"); when it closes the connection right after its alert, the
# kernel may see the close first ("closed the connection during the
# handshake"). The helper's log has the alert either way.
check "no client certificate (xprtsec=tls) against the mTLS front: rejected" \
	fails_with nocert "server.test .* \\(failed: refused by the server\\|refused the TLS session\\|failed: the server closed the connection during the handshake\\)" $MTO,xprtsec=tls
check "a certificate from another CA: rejected" \
	fails_with othercert "server.test .* \\(failed: refused by the server\\|refused the TLS session\\|failed: the server closed the connection during the handshake\\)" $MTO,xprtsec=mtls,cert_serial=$ocert,privkey_serial=$okey
check "... the front says why" grep -q 'client_verify=.*\(not trusted\|issuer\|signer\)' $TLSH_ARTIFACTS/front-$MT.log
check "a certificate with another's private key: rejected" \
	fails_with mismatch "TLS handshake with server.test .* failed: rejected" $MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$okey
check "... the helper says why" grep -q "handshake with .* failed: .*\(mismatch\|match\)" /var/log/messages
check "the front relayed nothing in plaintext" sh -c "! grep -q 'probe=plain' $TLSH_ARTIFACTS/front-$MT.log"

# --- PSK ----------------------------------------------------------------
check "xprtsec=psk mount: accepted" nfs_mount $PKO,xprtsec=psk,psk_serial=$psk $S $M
check "/proc/mounts shows xprtsec=psk,psk_serial=" grep -q " $M nfs4 .*xprtsec=psk,psk_serial=$psk" /proc/mounts
check "mountstats: policy=psk, encrypted" policy_is $M psk
check "read the 16 MiB back over PSK: same data" cmp -s /tmp/r16 $M/r16
umount $M
check "the front logged the PSK identity" grep -q "psk=tlsh-test" $TLSH_ARTIFACTS/front-$PK.log
check "an unknown PSK identity: rejected" \
	fails_with pskid "server.test .* \\(failed: refused by the server\\|refused the TLS session\\|failed: the server closed the connection during the handshake\\)" $PKO,xprtsec=psk,psk_serial=$pskid
check "a wrong PSK: rejected" \
	fails_with pskbad "server.test .* \\(failed: refused by the server\\|refused the TLS session\\|failed: the server closed the connection during the handshake\\)" $PKO,xprtsec=psk,psk_serial=$pskbad

# --- key lifetime -------------------------------------------------------
exp=$(padd tlsh:exp $CERTS/psk.txt)
keyctl timeout $exp 1
sleep 2
check "an expired key: refused at mount time (EKEYEXPIRED)" \
	fails_with expired "psk_serial=$exp: the key has expired" $PKO,xprtsec=psk,psk_serial=$exp

c2=$(padd tlsh:cert2 $CERTS/client.pem)
k2=$(padd tlsh:key2 $CERTS/client-key.pem)
check "mtls mount with keys we will revoke" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$c2,privkey_serial=$k2,soft,timeo=30,retrans=1 $S $M
check "the keys are linked into the kernel's .nfs-xprtsec keyring" sh -c "grep -q ' keyring *.nfs-xprtsec: 2' /proc/keys"
# the private key leaves our session; the certificate stays, to be revoked
keyctl unlink $k2 @s >/dev/null
front_stop $MT
front $MT --ca $CERTS/ca.pem --require-client-cert --tls-only
reread() { timeout 60 cat $M/r16 | cmp -s /tmp/r16 - && encrypted $M 1; }
check "unlinked from the session: a reconnect still authenticates" reread
front_stop $MT
front $MT --ca $CERTS/ca.pem --require-client-cert --tls-only
kmark revoked
start=$(date +%s)
check "the certificate is revoked" keyctl revoke $c2
check_fail "certificate revoked, forced reconnect: I/O fails (soft mount)" timeout 120 touch $M/after-revoke
el=$(( $(date +%s) - start ))
check "... within 120 s (took ${el} s)" [ $el -lt 120 ]
check "... the kernel says the key was revoked" kgrep revoked "TLS handshake with server.test .* failed: key revoked"
check "... the helper names the key" grep -q "cannot read key $c2: Key has been revoked" /var/log/messages
check "... nothing went out in plaintext" sh -c "! grep -q 'probe=plain' $TLSH_ARTIFACTS/front-$MT.log"
kmark remount
check_fail "remount naming a key the user cannot use (revoked): refused" \
	timeout 60 mount -o remount,cert_serial=$c2,privkey_serial=$okey $M
check "... the kernel says which key" kgrep remount "privkey_serial=$okey\|cert_serial=$c2"
check "remount with a valid certificate and key: accepted" \
	timeout 60 mount -o remount,cert_serial=$cert,privkey_serial=$key $M
check "... /proc/mounts shows the new serials" \
	grep -q " $M nfs4 .*xprtsec=mtls,cert_serial=$cert,privkey_serial=$key" /proc/mounts
check "... the mount recovered: I/O works again" timeout 60 touch $M/after-remount
check "... the data is there" cmp -s /tmp/r16 $M/r16
check "... and still encrypted" encrypted $M 1
timeout 60 umount $M || timeout 60 umount -f -l $M

# --- an unprivileged user and root's keys -------------------------------
# root's keys: possessor all, owner (root) view only; a user mount goes
# through the set-uid mount.nfs, so the kernel sees fsuid 0
chmod u+s /usr/sbin/mount.nfs
[ -e /etc/mtab ] || ln -s /proc/mounts /etc/mtab
mkdir -p /mnt/u /mnt/v
echo "$S:$TLSH_EXPORT /mnt/u nfs4 user,noauto,$MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key,retry=0 0 0" >> /etc/fstab
TESTER="setpriv --reuid=1000 --regid=1000 --clear-groups"
kmark userroot
check_fail "an unprivileged user mounting with root's key serials: refused" \
	timeout 60 $TESTER keyctl session - /usr/sbin/mount.nfs4 $S:$TLSH_EXPORT /mnt/u
check "... because the user may not read them (EACCES)" kgrep userroot "cert_serial=$cert: the mounting user may not read it"
check_fail "... nothing mounted" grep -q " /mnt/u " /proc/mounts

# the same user with keys of their own
cp $CERTS/client.pem /tmp/u-cert.pem
cp $CERTS/client-key.pem /tmp/u-key.pem
chown 1000:1000 /tmp/u-key.pem
chmod 600 /tmp/u-key.pem
ucert=$($TESTER keyctl padd user u:cert @u < /tmp/u-cert.pem)
ukey=$($TESTER sh -c 'keyctl padd user u:key @u < /tmp/u-key.pem')
echo "$S:$TLSH_EXPORT /mnt/v nfs4 user,noauto,$MTO,xprtsec=mtls,cert_serial=$ucert,privkey_serial=$ukey,retry=0 0 0" >> /etc/fstab
user_mount() {
	timeout 60 $TESTER keyctl session - sh -c "keyctl link @u @s && /usr/sbin/mount.nfs4 $S:$TLSH_EXPORT /mnt/v" > $TLSH_ARTIFACTS/user.out 2>&1 ||
		{ sed 's/^/# /' $TLSH_ARTIFACTS/user.out; return 1; }
}
check "the user added their own certificate and key to their user keyring" test -n "$ucert" -a -n "$ukey"
check "the user's own keys in the user's session: the user mount works" user_mount
check "... encrypted with the user's certificate" policy_is /mnt/v mtls
check "... and the data is there" cmp -s /tmp/r16 /mnt/v/r16
umount /mnt/v 2>/dev/null
sed -i '/ \/mnt\/[uv] /d' /etc/fstab
chmod u-s /usr/sbin/mount.nfs

front_stop $MT
front_stop $PK
rm -f $TLSH_EXPORT_DIR/r16
check "no kernel log line reports plaintext for an authenticated mount" sh -c "! dmesg | grep -q 'xprtsec=mtls continues\|xprtsec=psk continues'"

if [ "${TLSH_FAILED:-0}" != 0 ]; then
	echo "# --- helper log"
	grep tlsh-helper /var/log/messages | tail -30 | sed 's/^/# /'
	for f in $TLSH_ARTIFACTS/front-$MT.log $TLSH_ARTIFACTS/front-$PK.log; do
		echo "# --- $f"
		tail -8 "$f" | sed 's/^/# /'
	done
fi
finish
