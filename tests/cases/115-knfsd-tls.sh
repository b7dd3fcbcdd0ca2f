#!/bin/bash
# knfsd serves RPC-with-TLS itself: the bench's knfsd (plain.test, in S)
# with /proc/fs/nfsd/tls turned on answers the AUTH_TLS probe with
# STARTTLS and hands the connection to the agent, started on demand in
# S for a server handshake; our client in C1 mounts it with tls and auto,
# NFSv3, v4.0, v4.1, v4.2 and nconnect=4, 64 MiB round trip, no
# plaintext on the wire; mtls and psk with keys provisioned by keyctl
# (knfsd learns the authenticated client), wrong keys refused. Off by
# default and after "echo 0": no STARTTLS, so clients learn at once that
# there is no TLS. A server agent without
# a certificate (ENOKEY) turns TLS off for the namespace, with one kernel
# line, and auto clients go on in plaintext. The server's agent killed
# in the middle of a handshake: that connection is closed at once, knfsd
# serves the next client. A flood of 32 clients (8 on the debug kernel)
# that stop after STARTTLS: C1 is served meanwhile, each stalled
# connection is closed at the kernel's handshake deadline with one
# "timed out" line from the agent, and no agent process is left.
# tlsh-vm: timeout=900
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_tls_ready "knfsd over TLS" svc_tcp_handshake || exit 0

P=$TLSH_PLAIN_NAME
s_net=$(stat -L -c %i /run/netns/S)
M=/mnt/k
A=$TLSH_ARTIFACTS
SERVER_CONF=$KNFSD_CONF
trap knfsd_cleanup EXIT

knfsd_tls_setup "$SERVER_CONF"

# --- off by default --------------------------------------------------------
check "/proc/fs/nfsd/tls exists and reads 0 (off by default)" [ "$(nfsd_tls)" = 0 ]
kmark off
start=$(date +%s)
check_fail "xprtsec=tls mount of knfsd with TLS off fails" nfs_mount vers=4.2,xprtsec=tls $P $M
el=$(( $(date +%s) - start ))
check "... at once (${el} s), no handshake tried" [ $el -le 15 ]
check "... the kernel says the server does not offer TLS" kgrep off 'plain.test .* does not offer RPC-with-TLS'
check "trace: the probe was answered without STARTTLS" [ "$(svc_count svc_tls_unavailable)" -ge 1 ]
check_fail "/proc/fs/nfsd/tls refuses 2" nfsd_tls 2
check_fail "/proc/fs/nfsd/tls refuses a word" nfsd_tls on
check "... and still reads 0" [ "$(nfsd_tls)" = 0 ]

# --- on: xprtsec=tls, NFSv4.2, 64 MiB, capture ---------------------------
check "echo 1 > /proc/fs/nfsd/tls turns it on" [ "$(nfsd_tls 1)" = 1 ]
dd if=/dev/urandom of=/tmp/r64 bs=1M count=64 status=none
want64=$(sha256sum < /tmp/r64 | cut -d' ' -f1)
yes TLSH-PLAINTEXT-MARKER | head -c 4194304 > /tmp/marker
capture_start k42 tcp port 2049
check "xprtsec=tls mount of knfsd, NFSv4.2" nfs_mount vers=4.2,xprtsec=tls $P $M
check "mountstats: connected and encrypted" encrypted $M 1
check "mountstats: the server was authenticated" authenticated $M 1
# ktls_conn [NS]: the one connection on port 2049 of namespace NS (ours
# by default) has kTLS in software both ways, TLS 1.3, and its receive
# side expects no padding (the agent set TLS_RX_EXPECT_NO_PAD: records
# are decrypted straight into the reader's pages)
ktls_conn() {
	local d
	d=$(${1:+ip netns exec $1} tls-diag 2049)
	echo "# ${1:-client}: $d"
	[ "$(echo "$d" | grep -c "version=1.3 cipher=[a-z0-9-]* tx=sw rx=sw rx_no_pad=1")" = 1 ]
}
check "sock_diag: knfsd's connection is kTLS, TLS 1.3, no padding expected" ktls_conn S
check "sock_diag: so is the client's" ktls_conn
check "write 64 MiB of random data" cp /tmp/r64 $M/r64
check "write a file of a known plaintext" cp /tmp/marker $M/marker
sync
check "the server has the same sha256 (64 MiB)" [ "$(sha256sum < $TLSH_EXPORT_DIR/r64 | cut -d' ' -f1)" = "$want64" ]
umount $M
check "remount (tls) and read the 64 MiB back: same sha256" mounted_tls vers=4.2,xprtsec=tls
check "... the 64 MiB read back: same sha256" same64
check "... and the known plaintext" cmp -s /tmp/marker $M/marker
capture_stop
umount $M
check "capture: TLS application data records on the wire" [ "$(tls_records $A/k42.pcap)" -gt 100 ]
check_fail "capture: the known plaintext never appears on the wire" sh -c "tcpdump -Z root -nr $A/k42.pcap -A 2>/dev/null | grep -q TLSH-PLAINTEXT-MARKER"
share=$(full_record_share $A/k42.pcap 2049)
check "capture: knfsd's replies go out in full 16 KiB TLS records (${share}% of their octets)" [ "$share" -ge 90 ]
check "trace: knfsd answered STARTTLS" [ "$(svc_count svc_tls_start)" -ge 2 ]
check "trace: server handshakes were queued for the agent" grep -q "tlsh_req_queued: .* type=server-x509" $TRACE/trace
check "trace: the server handshakes succeeded (svc_tls_done status=0)" [ "$(svc_count svc_tls_done 'status=0 ')" -ge 2 ]
check "an agent was started on demand in S's namespace" grep -q "tlsh_upcall_start: netns=$s_net " $TRACE/trace
check "syslog: that agent served S's namespace" grep -q "tlsh-helper\[[0-9]*\]: serving network namespace $s_net " /var/log/messages
check "the server agent exits when idle" wait_for 15 no_server_agents

# --- auto, other versions, nconnect ------------------------------------------
check "xprtsec=auto mount of knfsd: encrypted" mounted_tls vers=4.2,xprtsec=auto
check "... the 64 MiB read back: same sha256" same64
# a mount of the same server with another policy is another nfs_client,
# and to knfsd another client: the default policy's owner string is the
# one it always was, another policy's names it; a lock held through the
# first mount survives the second one's EXCHANGE_ID
exec 8>> $M/marker
flock -x 8
kmark policies
mkdir -p /mnt/n
plain_beside() { nfs_mount vers=4.2,xprtsec=none $P /mnt/n && plaintext /mnt/n; }
check "xprtsec=none mount of the same server beside it, in plaintext" plain_beside
check "... knfsd sees two clients: the default's owner, and one named xprtsec=none" \
	nfsd_owners_are "NFSv4.2 $(uname -n)\"" " xprtsec=none\""
check "... the lock held through the auto mount survived" locked_elsewhere /mnt/n/marker
exec 8>&-
umount /mnt/n
umount $M
# by now the auto mount's client has used its state again
check "the auto mount lost no lock to the none mount" no_lost_locks policies
for v in 4.1 4.0 3; do
	o=vers=$v,xprtsec=tls
	[ $v = 3 ] && o=$o,nolock
	check "NFSv$v with xprtsec=tls: mount, encrypted" mounted_tls $o
	check "NFSv$v: write + read back" rw_marker m$v
	umount $M
done
# NFSv4.0 callbacks are connections from the server to the client that
# TLS cannot cover: a client on TLS gets none (and so no delegations);
# the same mount in plaintext shows that the server does call back
v40_callbacks() {
	capture_start cb40 tcp and src host $TLSH_PLAIN_ADDR
	nfs_mount vers=4.0,$1 $P $M && rw_marker cb40 && sleep 5
	capture_stop
	umount $M
	syns $A/cb40.pcap
}
check "NFSv4.0 over TLS: the server never connects back to the client (no callback)" [ "$(v40_callbacks xprtsec=tls)" = 0 ]
check "trace: knfsd gave that client no callback channel (nfsd_cb_nodelegs)" grep -q " nfsd_cb_nodelegs:" $TRACE/trace
check "NFSv4.0 in plaintext: the server does connect back (the callback probe)" [ "$(v40_callbacks xprtsec=none)" -ge 1 ]
done0=$(svc_count svc_tls_done 'status=0 ')
check "nconnect=4 with xprtsec=tls: mount" nfs_mount vers=4.2,xprtsec=tls,nconnect=4 $P $M
check "nconnect=4: the 64 MiB read back: same sha256" same64
check "nconnect=4: four encrypted transports" encrypted $M 4
check "nconnect=4: four server handshakes" [ $(( $(svc_count svc_tls_done 'status=0 ') - done0 )) -ge 4 ]
umount $M

# --- mTLS and PSK, keys provisioned with keyctl ---------------------------
# the client's keys in our own session keyring; the server's PSKs in the
# keyring the agent looks up (tlsh-server-psk in root's user keyring)
ring=$(server_psk_ring)
check "the server's PSK keyring holds the client's identity" keyctl search "$ring" user "$(cat $CERTS/psk.id)"
keyctl new_session > /dev/null
cert=$(padd tlsh:cert $CERTS/client.pem)
key=$(padd tlsh:key $CERTS/client-key.pem)
ocert=$(padd tlsh:other-cert $CERTS/client-other.pem)
okey=$(padd tlsh:other-key $CERTS/client-other-key.pem)
psk=$(padd tlsh:psk $CERTS/psk.txt)
echo "$(cat $CERTS/psk.id):$(tr 0-9a-f 1-9a-f0 < $CERTS/psk.key)" > /tmp/psk-bad
pskbad=$(padd tlsh:psk-bad /tmp/psk-bad)
check "keyctl: client keys and the server's PSK keyring provisioned" \
	test -n "$cert" -a -n "$key" -a -n "$ocert" -a -n "$okey" -a -n "$psk" -a -n "$pskbad" -a -n "$ring"
new_config "$KNFSD_MTLS_CONF"

p0=$(peer_keys)
check "xprtsec=mtls (client certificate from keyctl): mount, encrypted" \
	mounted_tls vers=4.2,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key
check "mtls: write + read back" rw_marker mtls
umount $M
check "mtls: knfsd learned the authenticated client (XPT_PEER_AUTH)" [ "$(peer_keys)" -gt "$p0" ]
check "trace: the agent named the client's key to the kernel" grep -q "tlsh_peer_identity: .* key=[1-9]" $TRACE/trace
p0=$(peer_keys)
check "xprtsec=tls (no client certificate) still mounts, unauthenticated" mounted_tls vers=4.2,xprtsec=tls
umount $M
check "... and knfsd knows the client is not authenticated" [ "$(peer_keys)" = "$p0" ]
check "mtls with a certificate from another CA: refused by knfsd's agent" \
	refused mtlsbad vers=4.2,xprtsec=mtls,cert_serial=$ocert,privkey_serial=$okey
p0=$(peer_keys)
check "xprtsec=psk (psk_serial= from keyctl): mount, encrypted" mounted_tls vers=4.2,xprtsec=psk,psk_serial=$psk
check "psk: write + read back" rw_marker psk
umount $M
check "psk: knfsd learned the client's PSK identity" [ "$(peer_keys)" -gt "$p0" ]
check "xprtsec=psk with a wrong key: refused" refused pskbad vers=4.2,xprtsec=psk,psk_serial=$pskbad
keyctl unlink "$ring" @u > /dev/null 2>&1 || keyctl unlink "$ring" > /dev/null 2>&1
new_config "$SERVER_CONF"

# --- the server's agent killed mid-handshake ------------------------------
# stall_client NAME [SECONDS]: an AUTH_TLS NULL probe to knfsd; on
# STARTTLS, no ClientHello: hold the connection until the server closes it
# (at most SECONDS, default 25). Writes "starttls=0|1" to $A/NAME.starttls,
# then "eof=SECONDS" (how long the connection stayed open) to $A/NAME.eof
stall_client() {
	local t0
	exec 3<>/dev/tcp/$TLSH_PLAIN_ADDR/2049 || return 1
	printf '\x80\x00\x00\x28\x54\x4c\x53\x48\x00\x00\x00\x00\x00\x00\x00\x02\x00\x01\x86\xa3\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >&3
	if timeout 10 head -c 36 <&3 | grep -aq STARTTLS; then
		echo starttls=1 > $A/$1.starttls
	else
		echo starttls=0 > $A/$1.starttls
	fi
	t0=$(date +%s)
	timeout ${2:-25} cat <&3 > /dev/null
	echo "eof=$(( $(date +%s) - t0 ))" > $A/$1.eof
	exec 3<&-
}
# handshake_pending: the agent's handshake process for the stalled client
# has started
handshake_pending() {
	log_since stall | grep -q "192.0.2.11:[0-9]* (no peer name): x509 server handshake"
}
no_conn_from_c1() {
	! ip netns exec S ss -tn state established "( sport = :2049 )" | grep -q "192.0.2.11"
}
rm -f $A/stall.*
kmark stall
fails0=$(grep " svc_tls_done:" $TRACE/trace | grep -vc "status=0 ")
stall_client stall &
stall=$!
check "a client that stops after STARTTLS: knfsd answered STARTTLS" wait_for 15 grep -q starttls=1 $A/stall.starttls
check "... and its handshake is with the server's agent" wait_for 15 handshake_pending
t0=$(date +%s)
for p in $(sed -n "s/.*tlsh-helper\[\([0-9]*\)\]: serving network namespace $s_net .*/\1/p" /var/log/messages); do
	kill -KILL "$p" 2>/dev/null
done
check "the server's agent killed: the handshake fails at once (svc_tls_done with an error)" \
	wait_for 5 sh -c "[ \$(grep ' svc_tls_done:' $TRACE/trace | grep -vc 'status=0 ') -gt $fails0 ]"
check "... and knfsd closes that connection, long before the deadline" wait_for 10 test -s $A/stall.eof
echo "# the stalled client saw the close after $(cat $A/stall.eof 2>/dev/null) (killed after $(( $(date +%s) - t0 )) s)"
wait $stall
check "... no connection from that client is left on the server" no_conn_from_c1
check "knfsd keeps serving: the next xprtsec=tls mount works (a new agent)" mounted_tls vers=4.2,xprtsec=tls
check "... write + read back" rw_marker after-kill
umount $M

# --- a flood of clients that stop after STARTTLS ---------------------------
# NF connections from C2 each get STARTTLS and then send nothing: NF server
# handshakes wait in the agent (a process each) until the kernel's
# deadline (20 s; the agent's handshake-timeout is raised to 30 s for
# this, so the kernel's deadline is the one that binds, and the agent ends
# each handshake just before it). knfsd and the agent must go on serving
# C1 meanwhile, then close every stalled connection at the deadline, with
# one "timed out" log line each, and leave nothing behind.
NF=$(( 32 / TLSH_SLOWDOWN ))
flood_conns() { ip netns exec S ss -tn state established "( sport = :2049 )" | grep -c "192.0.2.12:"; }
flood_answered() { [ "$(cat $A/flood*.starttls 2>/dev/null | grep -c starttls=1)" = $NF ]; }
flood_pending() { [ "$(log_since flood | grep -c '192.0.2.12:[0-9]* (no peer name): x509 server handshake')" = $NF ]; }
flood_closed() { [ "$(cat $A/flood*.eof 2>/dev/null | wc -l)" = $NF ]; }
# svc_tls_done lines after the first $1, for clients matching $2
tls_done_since() { grep " svc_tls_done:" $TRACE/trace | tail -n +$(( $1 + 1 )) | grep "client=$2"; }
rm -f $A/flood*
TLSH_HS_TIMEOUT=30 new_config "$SERVER_CONF"
export -f stall_client
export A TLSH_PLAIN_ADDR
done0=$(grep -c " svc_tls_done:" $TRACE/trace)
kmark flood
t0=$(date +%s)
for i in $(seq $NF); do
	ip netns exec C2 bash -c "stall_client flood$i 90" &
done
check "$NF clients from C2 that stop after STARTTLS: all answered STARTTLS" \
	wait_for 30 flood_answered
check "... each handshake is in the server's agent" \
	wait_for 30 flood_pending
check "meanwhile an xprtsec=tls mount from C1 works" mounted_tls vers=4.2,xprtsec=tls
check "... write + read back" rw_marker flood
umount $M
tls_done_since $done0 > $A/flood.done
echo "# C1 mounted and wrote $(( $(date +%s) - t0 )) s after the flood began"
# how many of the flood's handshakes had ended when C1's was done
before=$(awk '/client=192.0.2.12:/ { n++ } /client=192.0.2.11:/ && /status=0 / { print n + 0; exit }' $A/flood.done)
echo "# C1's handshake was done after ${before:-?} of the flood's $NF had ended"
check "... C1's handshake did not wait for the flood's (trace order)" [ "${before:-$NF}" -lt $NF ]
check "knfsd closes every stalled connection" wait_for 60 flood_closed
wait
eofs=$(sed 's/eof=//' $A/flood*.eof | sort -n)
echo "# the stalled connections stayed open for $(head -1 <<< "$eofs") to $(tail -1 <<< "$eofs") s"
check "... at the kernel's deadline: none before 15 s (none refused), none after 25 s" \
	[ "$(awk '$1 < 15 || $1 > 25' <<< "$eofs" | wc -l)" = 0 ]
check "... every one failed in the trace (svc_tls_done with an error)" \
	[ "$(tls_done_since $done0 192.0.2.12: | grep -vc 'status=0 ')" = $NF ]
check "... no connection from C2 is left on the server" [ "$(flood_conns)" = 0 ]
# (the agent's timeout is the kernel's remaining time, less half a second)
log_since flood | sed -n 's/.*server handshake with 192.0.2.12:[0-9]* failed: \(.*\)/\1/p' |
	sed 's/[0-9][0-9]* ms/N ms/' | sort | uniq -c | sed 's/^ */# agent: /'
check "... the agent logged one line per handshake, with the reason" \
	[ "$(log_since flood | grep -c 'server handshake with 192.0.2.12:[0-9]* failed: handshake timed out after [0-9]* ms')" = $NF ]
check "... then no agent nor handshake process is left (idle exit)" no_agent
new_config "$SERVER_CONF"

# --- off again -----------------------------------------------------------
check "echo 0 turns it off" [ "$(nfsd_tls 0)" = 0 ]
kmark off2
check_fail "xprtsec=tls mount fails again" nfs_mount vers=4.2,xprtsec=tls $P $M
check "... the kernel says the server does not offer TLS" kgrep off2 'plain.test .* does not offer RPC-with-TLS'
check "xprtsec=auto mounts in plaintext" mounted_plain vers=4.2,xprtsec=auto
umount $M

# --- no server certificate: ENOKEY turns TLS off ------------------------
new_config ""
nfsd_tls 1 > /dev/null
kmark enokey
start=$(date +%s)
check_fail "xprtsec=tls mount with a server agent that has no certificate fails" nfs_mount vers=4.2,xprtsec=tls $P $M
el=$(( $(date +%s) - start ))
check "... within 30 s (took ${el} s)" [ $el -le 30 ]
check "... the server turned TLS off, with one kernel line" kgrep enokey 'svc: nfsd: no TLS handshake agent can serve this server.*RPC-with-TLS turned off'
check "... /proc/fs/nfsd/tls reads 0" [ "$(nfsd_tls)" = 0 ]
check "... the agent logged why" lgrep enokey "no server certificate configured"
check "xprtsec=auto then mounts in plaintext" mounted_plain vers=4.2,xprtsec=auto
umount $M
rm -f $TLSH_EXPORT_DIR/r64 $TLSH_EXPORT_DIR/marker $TLSH_EXPORT_DIR/m*
finish
