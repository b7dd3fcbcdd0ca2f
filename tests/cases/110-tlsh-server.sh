#!/bin/bash
# Server handshakes through AF_TLSH: the test consumer is a kernel TLS
# server in S (tls_server_hello_x509()/_psk()), the agent is started on
# demand for it and answers the client with the configured certificate,
# verifies client certificates, looks PSK identities up in a keyring, and
# names the client to the kernel (TLSH_PEER_IDENTITY); the client is the
# agent's own --connect mode in C1 (GnuTLS in user space), so the data
# crosses kTLS on one side and GnuTLS on the other.
# tlsh-vm: netns=S
# tlsh-vm: timeout=240
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

S=$TLSH_SERVER_ADDR
PORT=4460
A=$TLSH_ARTIFACTS
SERVER_CONF="server-certificate = $CERTS/server.pem
server-private-key = $CERTS/server-key.pem"

check "test consumer module loads, tracing on" tlsh_setup "$SERVER_CONF"
no_helpers() { [ "$(helpers)" = 0 ]; }

# server KERNEL-ARGS -- CLIENT-ARGS...: the test consumer accepts one
# connection on $PORT and asks for a server handshake on it, while the
# agent's --connect in C1 connects (once the port listens) and sends a
# line; sets $out (the consumer's line), $cout (the client's output) and
# $crc (its exit status)
server() {
	local kargs=$1
	shift 2
	( wait_for 10 sh -c "ss -ltn | grep -q ':$PORT '" &&
		ip netns exec C1 timeout 30 tlsh-helper --connect "$S:$PORT" \
			--peername server.test --send "${SEND:-hello}" "$@" ) > "$A/client.out" 2>&1 &
	local cpid=$!
	out=$(hs role=server addr=0.0.0.0 port=$PORT accept=15000 timeout=10000 $kargs)
	wait $cpid
	crc=$?
	cout=$(cat "$A/client.out")
	echo "server: $out"
	echo "client ($crc): $cout"
}

# --- x.509, no client trust store: no client certificate asked for -------
before=$(count tlsh_upcall_start)
# S reaches C1 through its veth end s1
tcpdump -Z root --immediate-mode -i s1 -s 0 -U -w $A/server.pcap port $PORT > $A/server.tcpdump 2>&1 &
cap=$!
wait_for 10 grep -q "listening on" $A/server.tcpdump
SEND=TLSH-PLAINTEXT-MARKER server "" --
sleep 1; kill $cap; wait $cap 2>/dev/null
check "x509: the server handshake succeeds and a line echoes over kTLS" grep -q "start=0 status=0 done=1 cancelled=0 data=ok .* peer=-" <<< "$out"
check "x509: the client verified the server and got its line back" grep -q "received: TLSH-PLAINTEXT-MARKER" <<< "$cout"
check "x509: an agent was started on demand for the server's namespace" [ "$(count tlsh_upcall_start)" -gt "$before" ]
check "trace: the request was a server handshake" grep -q "tlsh_req_queued: .* type=server-x509" $TRACE/trace
check "capture: TLS records on the wire" [ "$(tls_records $A/server.pcap)" -ge 2 ]
check_fail "capture: the line never appears in plaintext" sh -c "tcpdump -Z root -nr $A/server.pcap -A 2>/dev/null | grep -q TLSH-PLAINTEXT-MARKER"

# --- mutual TLS ------------------------------------------------------------
tlsh_config "$SERVER_CONF
client-trust-store = $CERTS/ca.pem"
pkill -x tlsh-helper; wait_for 10 no_helpers
server "" -- --cert-file $CERTS/client.pem --key-file $CERTS/client-key.pem
check "mtls: a client certificate from the trusted CA is accepted" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"
check "mtls: the kernel consumer learns the client's key (tlsh:client:SHA256)" grep -qE "peer=tlsh:client:[0-9a-f]{64}" <<< "$out"
want=$(cert-id $CERTS/client.pem)
check "mtls: ... named after the certificate's issuer and subject (the digest cert-id computes)" \
	grep -qE "peer=tlsh:client:$want[0-9a-f]{48}" <<< "$out"
server "" -- --cert-file $CERTS/client-renewed.pem --key-file $CERTS/client-renewed-key.pem
check "mtls: a renewal of that certificate (the same names, a new key) is accepted" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"
check "mtls: ... and names the same client" grep -qE "peer=tlsh:client:$want[0-9a-f]{48}" <<< "$out"
check "trace: tlsh_peer_identity" [ "$(count tlsh_peer_identity)" -ge 1 ]
server "" -- --cert-file $CERTS/client-other.pem --key-file $CERTS/client-other-key.pem
check "mtls: a client certificate from another CA fails the handshake (EKEYREJECTED)" grep -q "start=0 status=-129 done=1" <<< "$out"
check "mtls: ... and the client is refused" [ "$crc" -ne 0 ]
server "" --
check "mtls: a client without a certificate is accepted, unauthenticated" grep -q "status=0 done=1 cancelled=0 data=ok .* peer=-" <<< "$out"

# --- PSK: identities in a keyring root provisions with keyctl ------------
ring=$(server_psk_ring)
server "type=psk" -- --psk-file $CERTS/psk.txt
check "psk: the client's identity is found in the keyring" grep -q "status=0 done=1 cancelled=0 data=ok .* peer=$(cat $CERTS/psk.id)" <<< "$out"
check "trace: the request was a PSK server handshake" grep -q "tlsh_req_queued: .* type=server-psk" $TRACE/trace
echo "$(cat $CERTS/psk.id):00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" > $A/wrong.psk
server "type=psk" -- --psk-file $A/wrong.psk
check "psk: a wrong key for a known identity fails (EKEYREJECTED)" grep -q "start=0 status=-129 done=1" <<< "$out"
keyctl unlink "$ring" @u > /dev/null

# --- not configured: a clear error, at once ------------------------------
tlsh_config ""
pkill -x tlsh-helper; wait_for 10 no_helpers
kmark noconf
server "" --
check "no server certificate configured: the request fails with ENOKEY" grep -q "start=0 status=-126 done=1" <<< "$out"
check "... well before the deadline" [ "$(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<< "$out")" -lt 5000 ]
check "the agent said why" lgrep noconf "no server certificate configured"

# --- the agent killed in the middle of a server handshake ---------------
tlsh_config "$SERVER_CONF"
pkill -x tlsh-helper; wait_for 10 no_helpers
# a client that connects and never says hello: the handshake waits
( wait_for 10 sh -c "ss -ltn | grep -q ':$PORT '" &&
	ip netns exec C1 timeout 20 bash -c "exec 3<>/dev/tcp/$S/$PORT; sleep 15" ) &
slow=$!
( wait_for 15 sh -c "[ \$(pgrep -x tlsh-helper | wc -l) -ge 2 ]"; sleep 1; pkill -KILL -x tlsh-helper ) &
killer=$!
out=$(hs role=server addr=0.0.0.0 port=$PORT accept=15000 timeout=20000)
echo "server: $out"
wait $killer
kill $slow 2>/dev/null; wait $slow 2>/dev/null
check "agent killed mid-handshake: the server's request fails" grep -qE "start=0 status=-[0-9]+ done=1" <<< "$out"
check "... well before its 20 s deadline" [ "$(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<< "$out")" -lt 15000 ]
server "" --
check "the next server handshake works (a new agent)" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"

check "the agent exits when idle" wait_for 15 no_helpers
check "the test module unloads (no leaked references)" rmmod tlsh_test
[ "${TLSH_FAILED:-0}" = 0 ] || tail -n 40 /var/log/messages
finish
