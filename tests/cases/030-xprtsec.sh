#!/bin/bash
# RPC-with-TLS mounts: xprtsec=auto|tls|none against knfsd serving TLS
# (plain.test with /proc/fs/nfsd/tls on) and without it, proof of
# encryption on the wire, NFS versions, nconnect, two namespaces at once;
# failures with clear messages; then what a real server cannot be made to
# do, from TLS fronts (server.test:PORT, tests/tls-front): certificates
# that do not verify, session tickets, alerts and KeyUpdate mid-stream,
# dropped connections, a server that stops offering TLS.
# tlsh-vm: timeout=900
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_tls_ready "NFS over TLS" svc_tcp_handshake || exit 0

S=$TLSH_SERVER_NAME
P=$TLSH_PLAIN_NAME
M=/mnt/t
s_net=$(stat -L -c %i /run/netns/S)
trap knfsd_cleanup EXIT
knfsd_tls_setup "$KNFSD_CONF"
# client_upcalls: agents started for a client namespace (not for S's knfsd)
client_upcalls() { grep " tlsh_upcall_start:" $TRACE/trace | grep -vc "netns=$s_net "; }

check "no helper process before the first mount" [ "$(helpers)" = 0 ]

# --- xprtsec=auto against knfsd serving TLS: encrypted ---------------------
check "knfsd serves TLS (/proc/fs/nfsd/tls: 1)" [ "$(nfsd_tls 1)" = 1 ]
dd if=/dev/urandom of=/tmp/r64 bs=1M count=64 status=none
want64=$(sha256sum < /tmp/r64 | cut -d' ' -f1)
yes TLSH-PLAINTEXT-MARKER | head -c 4194304 > /tmp/marker
tls0=$(awk '/TlsTxSw/ {print $2}' /proc/net/tls_stat)

capture_start auto tcp port 2049
check "xprtsec=auto mount of plain.test (knfsd with TLS), NFSv4.2" nfs_mount vers=4.2,xprtsec=auto $P $M
check "/proc/mounts shows xprtsec=auto" grep -q " $M nfs4 .*xprtsec=auto" /proc/mounts
check "mountstats: the transport is connected and encrypted" encrypted $M 1
check "write 64 MiB of random data" cp /tmp/r64 $M/r64
check "write a file of a known plaintext" cp /tmp/marker $M/marker
sync
check "the server has the same sha256 (64 MiB)" [ "$(sha256sum < $TLSH_EXPORT_DIR/r64 | cut -d' ' -f1)" = "$want64" ]
umount $M
check "remount (auto) and read the 64 MiB back: same sha256" sh -c "mount -t nfs -o vers=4.2,xprtsec=auto,retry=0 $P:$TLSH_EXPORT $M && [ \"\$(sha256sum < $M/r64 | cut -d' ' -f1)\" = $want64 ] && cmp -s /tmp/marker $M/marker"
capture_stop
check "capture: TLS application data records on the wire" [ "$(tls_records $TLSH_ARTIFACTS/auto.pcap)" -gt 100 ]
check_fail "capture: the known plaintext never appears on the wire" sh -c "tcpdump -Z root -nr $TLSH_ARTIFACTS/auto.pcap -A 2>/dev/null | grep -q TLSH-PLAINTEXT-MARKER"
check "/proc/net/tls_stat: kTLS TX sessions rose" [ "$(awk '/TlsTxSw/ {print $2}' /proc/net/tls_stat)" -gt "$tls0" ]
check "trace: knfsd answered STARTTLS and its handshakes succeeded" [ "$(svc_count svc_tls_done 'status=0 ')" -ge 2 ]
check "trace: rpc_tls_established" [ "$(count rpc_tls_established)" -ge 2 ]
umount $M
rm -f $TLSH_EXPORT_DIR/r64

# the capture method sees plaintext when there is some
capture_start none tcp port 2049
probes=$(count rpc_tls_probe)
check "xprtsec=none mount of the same knfsd: no probe, plaintext" nfs_mount vers=4.2,xprtsec=none $P $M
check "/proc/mounts shows xprtsec=none" grep -q " $M nfs4 .*xprtsec=none" /proc/mounts
check "mountstats: connected, not encrypted" plaintext $M
cat $M/marker > /dev/null
capture_stop
umount $M
check "xprtsec=none sends no AUTH_TLS probe" [ "$(count rpc_tls_probe)" = "$probes" ]
check "capture (none): the known plaintext is visible" sh -c "tcpdump -Z root -nr $TLSH_ARTIFACTS/none.pcap -A 2>/dev/null | grep -q TLSH-PLAINTEXT-MARKER"

# --- knfsd without TLS ----------------------------------------------------
check "knfsd without TLS (/proc/fs/nfsd/tls: 0)" [ "$(nfsd_tls 0)" = 0 ]
capture_start plainauto tcp port 2049
kmark auto-plain
check "xprtsec=auto mount of plain.test (knfsd, no TLS) succeeds in plaintext" nfs_mount vers=4.2,xprtsec=auto $P $M
check "mountstats: not encrypted" plaintext $M
capture_stop
umount $M
check "auto against no TLS: one connection (the probe went on it)" [ "$(syns $TLSH_ARTIFACTS/plainauto.pcap)" = 1 ]
check "auto against no TLS: the kernel says so" kgrep auto-plain 'does not offer RPC-with-TLS; xprtsec=auto continues in plaintext'

kmark tls-plain
start=$(date +%s)
check_fail "xprtsec=tls mount of plain.test fails" nfs_mount vers=4.2,xprtsec=tls $P $M
el=$(( $(date +%s) - start ))
check "... within 30 s (took ${el} s)" [ $el -le 30 ]
check "... with a clear kernel message" kgrep tls-plain 'plain.test .* does not offer RPC-with-TLS; no plaintext'
check_fail "... and nothing mounted" grep -q " $M " /proc/mounts

kmark bogus
check "knfsd serves TLS again" [ "$(nfsd_tls 1)" = 1 ]
check_fail "xprtsec=bogus is refused" nfs_mount vers=4.2,xprtsec=bogus $P $M
check "... with the kernel's message" kgrep bogus "Unknown xprtsec policy 'bogus'"

# --- bad certificates: tls fails; auto encrypts without authenticating
# the server, and says so; never plaintext ----------------------------------
front 3052 --cert $CERTS/server-untrusted.pem --key $CERTS/server-untrusted-key.pem
kmark badcert
check_fail "xprtsec=tls against an untrusted certificate fails" nfs_mount vers=4.2,xprtsec=tls,port=3052 $S $M
check "... with a clear kernel message" kgrep badcert 'TLS handshake with server.test .* failed: server certificate not trusted'
check "... and the helper logged why" lgrep badcert 'tlsh-helper.*not trusted: .*signer unknown'
kmark badcert-auto
check "xprtsec=auto against an untrusted certificate mounts" nfs_mount vers=4.2,xprtsec=auto,port=3052 $S $M
check "... encrypted" encrypted $M 1
check "... the server not authenticated (mountstats)" authenticated $M 0
check "... and the kernel says so" kgrep badcert-auto 'the certificate of server.test .* could not be verified; xprtsec=auto continues encrypted, without server authentication'
check "... the helper says why" lgrep badcert-auto 'certificate not verified (signer unknown): encrypted, the server NOT authenticated'
echo auth > $M/unauth-data
check "... data round-trips" cmp -s $M/unauth-data $TLSH_EXPORT_DIR/unauth-data
rm -f $M/unauth-data
umount $M
check "an authenticated auto mount says authenticated" sh -c ". /tlsh/guest/lib.sh; . /tlsh/guest/nfs-lib.sh; nfs_mount vers=4.2,xprtsec=auto $P $M && authenticated $M 1"
umount $M
check "the front relayed nothing in plaintext" sh -c "! grep -q 'probe=plain' $TLSH_ARTIFACTS/front-3052.log"
front_stop 3052
front 3053 --cert $CERTS/server-wrongname.pem --key $CERTS/server-wrongname-key.pem
check_fail "xprtsec=tls against a certificate for another name fails" nfs_mount vers=4.2,xprtsec=tls,port=3053 $S $M
front_stop 3053

# --- other versions and nconnect ----------------------------------------
echo "version check data" > $TLSH_EXPORT_DIR/v
for o in vers=4.1 vers=4.0 vers=3,nolock; do
	check "NFS $o with xprtsec=tls: mounted, encrypted, data readable" sh -c "
		. /tlsh/guest/lib.sh; . /tlsh/guest/nfs-lib.sh
		nfs_mount $o,xprtsec=tls $P $M && encrypted $M 1 && grep -q 'version check data' $M/v; r=\$?; umount $M; exit \$r"
done

est=$(count rpc_tls_established)
check "nconnect=4 with xprtsec=tls mounts" nfs_mount vers=4.2,xprtsec=tls,nconnect=4 $P $M
for i in 1 2 3 4 5 6 7 8; do cat $M/v > /dev/null; ls -l $M > /dev/null; done
dd if=/tmp/marker of=$M/n4 bs=64k status=none conv=fsync
check "nconnect=4: four transports, all connected and encrypted" wait_for 10 encrypted $M 4
check "nconnect=4: four handshakes" [ $(( $(count rpc_tls_established) - est )) = 4 ]
umount $M

# --- C1 and C2 at once, own agents; helpers gone afterwards -------------
check "helpers exit after their idle time" wait_for 20 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'
up=$(client_upcalls)
mkdir -p /mnt/c2
( nfs_mount vers=4.2,xprtsec=tls $P $M; echo $? > /tmp/c1rc ) &
ip netns exec C2 sh -c ". /tlsh/guest/lib.sh; . /tlsh/guest/nfs-lib.sh; nfs_mount vers=4.2,xprtsec=tls $P /mnt/c2; echo \$? > /tmp/c2rc; grep -q 'version check data' /mnt/c2/v && echo ok > /tmp/c2data; umount /mnt/c2"
wait
check "C1 and C2 mount at the same time" [ "$(cat /tmp/c1rc)$(cat /tmp/c2rc)" = 00 ]
check "C2 read its data over TLS" grep -q ok /tmp/c2data
check "each client namespace got its own agent (two upcalls)" [ $(( $(client_upcalls) - up )) = 2 ]
umount $M
check "no helper left some seconds after the last handshake" wait_for 20 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'

# --- misbehaving servers ------------------------------------------------
# the fronts relay to knfsd in plaintext; one of them (--no-tls) passes
# the AUTH_TLS probe on, which knfsd must then answer without STARTTLS
check "knfsd without TLS again (the fronts below relay to it)" [ "$(nfsd_tls 0)" = 0 ]
dd if=/dev/urandom of=$TLSH_EXPORT_DIR/r8 bs=1M count=8 status=none
want8=$(sha256sum < $TLSH_EXPORT_DIR/r8 | cut -d' ' -f1)
readback() { [ "$(sha256sum < $M/r8 | cut -d' ' -f1)" = "$want8" ]; }

front 3054 --session-tickets=2
est=$(count rpc_tls_established)
check "NewSessionTicket messages: mount works" nfs_mount vers=4.2,xprtsec=tls,port=3054 $S $M
check "... and 8 MiB read back intact" readback
check "... on one connection (tickets are consumed, not fatal)" [ $(( $(count rpc_tls_established) - est )) = 1 ]
umount $M
front_stop 3054

front 3055 --alert-after=3000000
est=$(count rpc_tls_established)
check "alert mid-stream: mount works" nfs_mount vers=4.2,xprtsec=tls,port=3055,rsize=65536 $S $M
check "... the read survives the alerts, data intact" readback
check "... the alert reset the connection, a new handshake followed" [ $(( $(count rpc_tls_established) - est )) -ge 2 ]
check "... and the client saw the alert record" grep -q "xs_tls_contenttype:.*alert" $TRACE/trace
umount $M
front_stop 3055

front 3056 --key-update-after=3000000
est=$(count rpc_tls_established)
check "KeyUpdate: mount works" nfs_mount vers=4.2,xprtsec=tls,port=3056,rsize=65536 $S $M
check "... the read survives the KeyUpdate, data intact" readback
check "... the KeyUpdate was seen" grep -q "xs_tls_contenttype:.*handshake handshake_type=24" $TRACE/trace
check "... and followed by a clean re-handshake" [ $(( $(count rpc_tls_established) - est )) -ge 2 ]
umount $M
front_stop 3056

front 3057 --drop-every=2
est=$(count rpc_tls_established)
check "connection drops during I/O: mount works" nfs_mount vers=4.2,xprtsec=tls,port=3057 $S $M
check "... 64 MiB written while the front drops every 2 s" cp /tmp/r64 $M/r64d
sync
check "... arrives intact" [ "$(sha256sum < $TLSH_EXPORT_DIR/r64d | cut -d' ' -f1)" = "$want64" ]
check "... over several connections, each with a new handshake" [ $(( $(count rpc_tls_established) - est )) -ge 2 ]
check "... and none of them in plaintext" sh -c "! grep -q 'probe=plain' $TLSH_ARTIFACTS/front-3057.log"
umount $M
front_stop 3057
rm -f $TLSH_EXPORT_DIR/r64d

# encrypted once, then the server stops offering TLS: no plaintext
front 3058
check "auto mount through a front that offers TLS: encrypted" sh -c ". /tlsh/guest/lib.sh; . /tlsh/guest/nfs-lib.sh; nfs_mount vers=4.2,xprtsec=auto,port=3058,soft,timeo=20,retrans=1 $S $M && encrypted $M 1"
front_stop 3058
front 3058 --no-tls
kmark downgrade
check_fail "after the server stops offering TLS, I/O does not go on in plaintext" timeout 120 cat $M/v
check "... the kernel refused plaintext" kgrep downgrade 'does not offer RPC-with-TLS; no plaintext'
check "... the server got no RPC but probes" sh -c "! awk '/probe=forwarded/ { split(\$0, a, \"c2b=\"); split(a[2], b, \" \"); if (b[1] + 0 > 44) bad = 1 } END { exit !bad }' $TLSH_ARTIFACTS/front-3058.log"
umount -f -l $M
# with TLS back, the unmounted client ends its session and goes away
front_stop 3058
front 3058
check "... once unmounted, the client ends its session and is gone" wait_for 60 nfs_client_gone 3058
front_stop 3058

rm -f $TLSH_EXPORT_DIR/r8 $TLSH_EXPORT_DIR/v $TLSH_EXPORT_DIR/marker $TLSH_EXPORT_DIR/n4
finish
