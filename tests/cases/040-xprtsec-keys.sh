#!/bin/bash
# Authenticated RPC-with-TLS: xprtsec=mtls (cert_serial=, privkey_serial=)
# and xprtsec=psk (psk_serial=) with keys provisioned by keyctl, against
# knfsd serving TLS (plain.test) with an export that requires an
# authenticated client (xprtsec=mtls): its agent verifies client
# certificates with the bench CA and looks PSK identities up in a keyring
# provisioned with keyctl. Forced reconnects (the client's transports
# told to reconnect through /sys/kernel/sunrpc) show what a key that was
# unlinked, revoked or replaced does to a mount.
# tlsh-vm: timeout=900
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_policy_ready "mTLS/PSK" || exit 0

P=$TLSH_PLAIN_NAME
M=/mnt/k
cleanup() {
	umount -f -l /mnt/k2 /mnt/k3 /mnt/u /mnt/v 2>/dev/null
	knfsd_cleanup
	export_policy ""
	keyctl unlink "$ring" @u > /dev/null 2>&1
}
trap cleanup EXIT
knfsd_tls_setup "$KNFSD_MTLS_CONF"
kmark start

# the server's PSKs: the keyring its agent looks identities up in
# (tlsh-server-psk in root's user keyring)
ring=$(server_psk_ring)
check "keyctl: the server's PSK keyring holds the client's identity" \
	keyctl search "$ring" user "$(cat $CERTS/psk.id)"
# our own session keyring, so that nothing leaks into the next case
keyctl new_session >/dev/null

# fails_with MARK MESSAGE OPTIONS: the mount of plain.test fails, in
# bounded time, the kernel says MESSAGE, nothing is mounted
fails_with() { mount_fails $P "$@"; }
# reconnect: the client's transports to knfsd reconnect; false when
# there is none
reconnect() { [ "$(reconnect_knfsd)" -ge 1 ]; }

cert=$(padd tlsh:cert $CERTS/client.pem)
key=$(padd tlsh:key $CERTS/client-key.pem)
ocert=$(padd tlsh:other-cert $CERTS/client-other.pem)
okey=$(padd tlsh:other-key $CERTS/client-other-key.pem)
psk=$(padd tlsh:psk $CERTS/psk.txt)
echo "tlsh-other:$(cat $CERTS/psk.key)" > /tmp/psk-id
echo "$(cat $CERTS/psk.id):$(tr 0-9a-f 1-9a-f0 < $CERTS/psk.key)" > /tmp/psk-bad
pskid=$(padd tlsh:psk-id /tmp/psk-id)
pskbad=$(padd tlsh:psk-bad /tmp/psk-bad)
check "keyctl padd: seven user keys in the session keyring" \
	test -n "$cert" -a -n "$key" -a -n "$ocert" -a -n "$okey" -a -n "$psk" -a -n "$pskid" -a -n "$pskbad"
check "knfsd serves TLS" [ "$(nfsd_tls 1)" = 1 ]
check "the export requires an authenticated client (xprtsec=mtls)" export_policy mtls
check "... exportfs -v shows it" exported_with "xprtsec=mtls"
MTO=vers=4.2
PKO=vers=4.2

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
junk=$(echo "not a certificate" | keyctl padd user tlsh:junk @s)
check "a key that holds no certificate as cert_serial=: refused" \
	fails_with opt11 "cert_serial=$junk holds no X.509 certificate (PEM or DER)" $MTO,xprtsec=mtls,cert_serial=$junk,privkey_serial=$key

# --- mTLS ---------------------------------------------------------------
dd if=/dev/urandom of=/tmp/r16 bs=1M count=16 status=none
want=$(sha256sum < /tmp/r16 | cut -d' ' -f1)
capture_start mtls tcp port 2049
kmark mtls
check "xprtsec=mtls mount with the client certificate: accepted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key $P $M
check "/proc/mounts shows xprtsec=mtls and the serials" \
	grep -q " $M nfs4 .*xprtsec=mtls,cert_serial=$cert,privkey_serial=$key" /proc/mounts
check "mountstats: policy=mtls, connected and encrypted" policy_is $M mtls
check "write 16 MiB" cp /tmp/r16 $M/r16
sync
check "the server has the same sha256" [ "$(sha256sum < $TLSH_EXPORT_DIR/r16 | cut -d' ' -f1)" = "$want" ]
capture_stop
check "capture: TLS application data records on the wire" [ "$(tls_records $TLSH_ARTIFACTS/mtls.pcap)" -gt 20 ]
check "the helper logged a handshake with a client certificate" lgrep mtls "]: handshake with .* done: .*, client certificate$"

# nfs_client matching and the client owner: an mtls client is named by
# its certificate's issuer and subject (the first 8 bytes of a SHA-256
# of their DER, cert-id), not by the serials, which are new each time
# the keys are added (after every reboot), nor by the certificate's
# bytes, which are new when it is renewed. The same certificate added
# again, in PEM or DER, or issued anew to the same subject, is the same
# client, with the same owner, so a server recognizes a rebooted client;
# another certificate is another nfs_client, with its own connection and
# owner: its EXCHANGE_ID must not discard the first one's state, such as
# a lock held through the first mount
conns() { ss -Htn state established "( dport = :2049 )" dst $TLSH_PLAIN_ADDR | wc -l; }
cid=$(cert-id $CERTS/client.pem)
check "cert-id: the renewed certificate and the DER one name the same subject" \
	[ -n "$cid" -a "$(cert-id $CERTS/client-renewed.pem)" = "$cid" -a "$(cert-id $CERTS/client.der)" = "$cid" ]
check "... the renewed certificate is another one, with another key" \
	eval '! cmp -s $CERTS/client.pem $CERTS/client-renewed.pem && ! cmp -s $CERTS/client-key.pem $CERTS/client-renewed-key.pem'
c0=$(conns)
c3=$(padd tlsh:cert3 $CERTS/client.pem)
k3=$(padd tlsh:key3 $CERTS/client-key.pem)
check "knfsd sees the mtls client's owner named by its certificate's names" \
	nfsd_owners_are " xprtsec=mtls/$cid\""
kmark again
check "the same certificate under other serials (as after a reboot): mounted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$c3,privkey_serial=$k3 $P /mnt/k2
check "... the same client: no second connection to knfsd" [ "$(conns)" = "$c0" ]
check "... and one owner for both" nfsd_owners_are " xprtsec=mtls/$cid\""
umount /mnt/k2
cder=$(padd tlsh:cert-der $CERTS/client.der)
check "the same certificate in DER: mounted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$cder,privkey_serial=$k3 $P /mnt/k2
check "... the same client: no second connection to knfsd" [ "$(conns)" = "$c0" ]
umount /mnt/k2
crn=$(padd tlsh:cert-renewed $CERTS/client-renewed.pem)
krn=$(padd tlsh:key-renewed $CERTS/client-renewed-key.pem)
check "the renewed certificate: mounted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$crn,privkey_serial=$krn $P /mnt/k2
check "... the same client: no second connection to knfsd" [ "$(conns)" = "$c0" ]
check "... and one owner for both" nfsd_owners_are " xprtsec=mtls/$cid\""
check "... with the first mount's keys (/proc/mounts: the serials in use)" \
	grep -q " /mnt/k2 nfs4 .*xprtsec=mtls,cert_serial=$cert,privkey_serial=$key" /proc/mounts
umount /mnt/k2
cert2=$(padd tlsh:client2-cert $CERTS/client2.pem)
key2=$(padd tlsh:client2-key $CERTS/client2-key.pem)
echo lock > $M/lockme
exec 8>> $M/lockme
flock -x 8
kmark second
check "a second mtls mount with another certificate: accepted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$cert2,privkey_serial=$key2 $P /mnt/k2
check "... it is a separate client: a second connection to knfsd" [ "$(conns)" = $((c0 + 1)) ]
check "... knfsd sees two clients, each owner named by its certificate" \
	nfsd_owners_are " xprtsec=mtls/$cid\"" " xprtsec=mtls/$(cert-id $CERTS/client2.pem)\""
check "... the first mount's lock survived the second mount" locked_elsewhere /mnt/k2/lockme
exec 8>&-
check "a third mount with the first serials: accepted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key,nosharecache $P /mnt/k3
check "... it shares the first client: still two connections" [ "$(conns)" = $((c0 + 1)) ]
umount /mnt/k3 /mnt/k2 $M
# by now the first client has used its state again (the unlock and close)
check "the first mount lost no lock to the second" no_lost_locks second
check "knfsd's agent verified our certificate (CN=tlsh-client)" \
	lgrep mtls "tlsh-helper\[[0-9]*\]: server handshake with .*tlsh-client.* done: .*client certificate, identity key"
check "trace: knfsd learned the authenticated client (peer_key)" [ "$(peer_keys)" -ge 1 ]
# after a reboot with the renewed certificate (no mount left): a new
# nfs_client with only the renewed keys, under the same owner
kmark renewed
check "the renewed certificate alone: mounted" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$crn,privkey_serial=$krn $P $M
check "... a new client, with the renewed keys (/proc/mounts)" \
	grep -q " $M nfs4 .*xprtsec=mtls,cert_serial=$crn,privkey_serial=$krn" /proc/mounts
check "... a new connection, its certificate verified by knfsd's agent" \
	lgrep renewed "server handshake with .*tlsh-client.* done: .*client certificate"
check "... knfsd sees the same owner as before" nfsd_owners_are " xprtsec=mtls/$cid\""
umount $M

# knfsd's agent asks for a client certificate and accepts a client
# without one: the export's policy then refuses that connection
# (NFS4ERR_WRONGSEC), and knfsd says why
check "no client certificate (xprtsec=tls): refused by the export" \
	denied nocert $MTO,xprtsec=tls "a TLS connection without client authentication"
# A certificate the agent cannot verify: it refuses the handshake with
# an alert ("refused by the server"); when the server closes the
# connection right after its alert, the kernel may see the close first
check "a certificate from another CA: rejected" refused othercert $MTO,xprtsec=mtls,cert_serial=$ocert,privkey_serial=$okey
check "... knfsd's agent says why" \
	lgrep othercert "server handshake with .* failed: client certificate '.*' not trusted"
check "a certificate with another's private key: rejected" \
	fails_with mismatch "TLS handshake with plain.test .* failed: rejected" $MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$okey
check "... the helper says why" lgrep mismatch "handshake with .* failed: .*\(mismatch\|match\)"
check "knfsd saw no request in plaintext" no_plain_requests start

# --- PSK ----------------------------------------------------------------
kmark psk
check "xprtsec=psk mount: accepted" nfs_mount $PKO,xprtsec=psk,psk_serial=$psk $P $M
check "/proc/mounts shows xprtsec=psk,psk_serial=" grep -q " $M nfs4 .*xprtsec=psk,psk_serial=$psk" /proc/mounts
check "mountstats: policy=psk, encrypted" policy_is $M psk
check "knfsd sees the owner named by the PSK identity's digest, not the secret's" \
	nfsd_owners_are " xprtsec=psk/$(printf %s "$(cat $CERTS/psk.id)" | id_of)\""
check "read the 16 MiB back over PSK: same data" cmp -s /tmp/r16 $M/r16
kmark pskremount
check_fail "remount with a PSK of another identity: refused" \
	timeout 60 mount -o remount,psk_serial=$pskid $M
check "... the kernel says why" \
	kgrep pskremount "psk_serial=$pskid presents another identity than the mount's"
check "... the mount keeps its PSK" grep -q " $M nfs4 .*xprtsec=psk,psk_serial=$psk" /proc/mounts
umount $M
check "knfsd's agent logged the PSK identity" \
	lgrep psk "server handshake with .* (PSK identity $(cat $CERTS/psk.id)) done"
check "an unknown PSK identity: rejected" refused pskid $PKO,xprtsec=psk,psk_serial=$pskid
check "... knfsd's agent says why" lgrep pskid "server handshake with .* failed: .*tlsh-other"
# the client is told what a wrong key gets (no unknown_psk_identity):
# its agent names both causes
check "... the client's agent says the server refused its identity" \
	lgrep pskid "failed: the server refused PSK identity '.*': it has no key for it, or another key"
check "a wrong PSK: rejected" refused pskbad $PKO,xprtsec=psk,psk_serial=$pskbad
check "... knfsd's agent says why" lgrep pskbad "server handshake with .* failed: the client's key for PSK identity .* does not match"
check "... the client's agent says the server refused its identity" \
	lgrep pskbad "failed: the server refused PSK identity '.*': it has no key for it, or another key"

# --- key lifetime -------------------------------------------------------
exp=$(padd tlsh:exp $CERTS/psk.txt)
keyctl timeout $exp 1
sleep 2
check "an expired key: refused at mount time (EKEYEXPIRED)" \
	fails_with expired "psk_serial=$exp: the key has expired" $PKO,xprtsec=psk,psk_serial=$exp

c2=$(padd tlsh:cert2 $CERTS/client.pem)
k2=$(padd tlsh:key2 $CERTS/client-key.pem)
check "mtls mount with keys we will revoke" \
	nfs_mount $MTO,xprtsec=mtls,cert_serial=$c2,privkey_serial=$k2,soft,timeo=30,retrans=1 $P $M
check "the keys are linked into the kernel's .nfs-xprtsec keyring" sh -c "grep -q ' keyring *.nfs-xprtsec: 2' /proc/keys"
# the private key leaves our session; the certificate stays, to be revoked
keyctl unlink $k2 @s >/dev/null
d0=$(svc_count svc_tls_done 'status=0 ')
check "the mount's transport told to reconnect" reconnect
reread() { timeout 60 cat $M/r16 | cmp -s /tmp/r16 - && encrypted $M 1; }
check "unlinked from the session: a reconnect still authenticates" reread
check "... with a new server handshake" [ "$(svc_count svc_tls_done 'status=0 ')" -gt "$d0" ]
kmark revoked
start=$(date +%s)
check "the certificate is revoked" keyctl revoke $c2
reconnect
check_fail "certificate revoked, forced reconnect: I/O fails (soft mount)" timeout 120 touch $M/after-revoke
el=$(( $(date +%s) - start ))
check "... within 120 s (took ${el} s)" [ $el -lt 120 ]
check "... the kernel says the key was revoked" kgrep revoked "TLS handshake with plain.test .* failed: key revoked"
check "... the helper names the key" lgrep revoked "cannot read key $c2: Key has been revoked"
check "... knfsd saw no request in plaintext" no_plain_requests start
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
# the client's identity (its owner string at the server) is made of its
# certificate's names: a remount may renew the keys, not change who the
# client is
kmark otherid
check_fail "remount with a certificate of other names (tlsh-client-2): refused" \
	timeout 60 mount -o remount,cert_serial=$cert2,privkey_serial=$key2 $M
check "... the kernel says why" \
	kgrep otherid "cert_serial=$cert2 presents another identity than the mount's; unmount to change it"
check "... /proc/mounts keeps the serials in use" \
	grep -q " $M nfs4 .*xprtsec=mtls,cert_serial=$cert,privkey_serial=$key" /proc/mounts
check "... which still authenticate a reconnect" reconnect
check "... after which I/O works" timeout 60 touch $M/after-otherid
check "remount with the renewed certificate (same names): accepted" \
	timeout 60 mount -o remount,cert_serial=$crn,privkey_serial=$krn $M
check "... /proc/mounts shows the renewed serials" \
	grep -q " $M nfs4 .*xprtsec=mtls,cert_serial=$crn,privkey_serial=$krn" /proc/mounts
check "... the mount's transport told to reconnect" reconnect
check "... and I/O works after it (a handshake with the renewed keys)" timeout 60 touch $M/after-renewed
check "... knfsd still sees one owner, the same" nfsd_owners_are " xprtsec=mtls/$cid\""
timeout 60 umount $M || timeout 60 umount -f -l $M

# --- an unprivileged user and root's keys -------------------------------
# root's keys: possessor all, owner (root) view only; a user mount goes
# through the set-uid mount.nfs, so the kernel sees fsuid 0
chmod u+s /usr/sbin/mount.nfs
[ -e /etc/mtab ] || ln -s /proc/mounts /etc/mtab
mkdir -p /mnt/u /mnt/v
echo "$P:$TLSH_EXPORT /mnt/u nfs4 user,noauto,$MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key,retry=0 0 0" >> /etc/fstab
TESTER="setpriv --reuid=1000 --regid=1000 --clear-groups"
kmark userroot
check_fail "an unprivileged user mounting with root's key serials: refused" \
	timeout 60 $TESTER keyctl session - /usr/sbin/mount.nfs4 $P:$TLSH_EXPORT /mnt/u
check "... because the user may not read them (EACCES)" kgrep userroot "cert_serial=$cert: the mounting user may not read it"
check_fail "... nothing mounted" grep -q " /mnt/u " /proc/mounts

# the same user with keys of their own
cp $CERTS/client.pem /tmp/u-cert.pem
cp $CERTS/client-key.pem /tmp/u-key.pem
chown 1000:1000 /tmp/u-key.pem
chmod 600 /tmp/u-key.pem
ucert=$($TESTER keyctl padd user u:cert @u < /tmp/u-cert.pem)
ukey=$($TESTER sh -c 'keyctl padd user u:key @u < /tmp/u-key.pem')
echo "$P:$TLSH_EXPORT /mnt/v nfs4 user,noauto,$MTO,xprtsec=mtls,cert_serial=$ucert,privkey_serial=$ukey,retry=0 0 0" >> /etc/fstab
user_mount() {
	timeout 60 $TESTER keyctl session - sh -c "keyctl link @u @s && /usr/sbin/mount.nfs4 $P:$TLSH_EXPORT /mnt/v" > $TLSH_ARTIFACTS/user.out 2>&1 ||
		{ sed 's/^/# /' $TLSH_ARTIFACTS/user.out; return 1; }
}
check "the user added their own certificate and key to their user keyring" test -n "$ucert" -a -n "$ukey"
# root's mount with the same certificate: the user's mount would share
# its client, whose connections use root's keys, which the user may not
# read (a certificate is public: copying it must not buy its connections)
nfs_mount $MTO,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key $P $M
kmark usershare
check_fail "the user's mount while root's of the same certificate is up: refused" user_mount
check "... because the user may not read the keys that client uses (EACCES)" \
	kgrep usershare "same TLS identity uses key $cert, which this user cannot read"
check_fail "... nothing mounted" grep -q " /mnt/v " /proc/mounts
timeout 60 umount $M || timeout 60 umount -f -l $M
check "the user's own keys in the user's session: the user mount works" user_mount
check "... encrypted with the user's certificate" policy_is /mnt/v mtls
check "... and the data is there" cmp -s /tmp/r16 /mnt/v/r16
umount /mnt/v 2>/dev/null
sed -i '/ \/mnt\/[uv] /d' /etc/fstab
chmod u-s /usr/sbin/mount.nfs

rm -f $TLSH_EXPORT_DIR/r16 $TLSH_EXPORT_DIR/after-*
check "no kernel log line reports plaintext for an authenticated mount" sh -c "! dmesg | grep -q 'xprtsec=mtls continues\|xprtsec=psk continues'"

if [ "${TLSH_FAILED:-0}" != 0 ]; then
	echo "# --- helper log"
	grep tlsh-helper /var/log/messages | tail -30 | sed 's/^/# /'
fi
finish
