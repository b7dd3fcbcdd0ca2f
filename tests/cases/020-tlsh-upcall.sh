#!/bin/bash
# On-demand TLS handshakes: the kernel test consumer asks for handshakes,
# request-key spawns the helper per network namespace, data goes over kTLS.
# tlsh-vm: timeout=280
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh

if [ ! -x /usr/sbin/tlsh-helper ]; then
	skip "on-demand handshakes with the helper: tlsh-helper is not built yet"
	exit 0
fi

check "test consumer module loads" tlsh_setup
serve 4433 server
serve 4434 server-untrusted
serve 4435 server-expired
serve 4436 server-wrongname
S=$TLSH_SERVER_ADDR

check "no helper process before the first handshake" [ "$(helpers)" = 0 ]
# negative keys of failed upcalls (earlier cases) may still be listed
live_keys() { awk '$8 == "tlsh" && $2 !~ /N/' /proc/keys; }
check "no live tlsh key before the first handshake" [ -z "$(live_keys)" ]

out=$(hs addr=$S port=4433 name=server.test)
echo "$out"
check "first handshake succeeds and data round-trips over kTLS" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"
check "the first handshake spawned exactly one helper" [ "$(count tlsh_upcall_start)" = 1 ]
check "kTLS counters rose in C1" sh -c "awk '/TlsTxSw|TlsRxSw/ {s+=\$2} END {exit !(s >= 2)}' /proc/net/tls_stat"
out=$(hs addr=$TLSH_SERVER_ADDR6 port=4433 name=server.test)
check "IPv6 handshake served by the same agent" sh -c "grep -q 'status=0 done=1 cancelled=0 data=ok' <<< '$out' && [ \$(grep -c ' tlsh_upcall_start:' $TRACE/trace) = 1 ]"
check "the original tls_client_hello_x509() works (no peer name: IP checked)" grep -q "status=0 done=1" <<< "$(hs addr=$S port=4433 api=x509)"

check "helper exits after its idle time" wait_for 10 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'
check "the next handshake spawns again" sh -c "grep -q 'status=0 done=1' <<< \"\$(echo addr=$S port=4433 name=server.test > /debug/tlsh_test/run; cat /debug/tlsh_test/run)\" && [ \$(grep -c ' tlsh_upcall_start:' $TRACE/trace) = 2 ]"

# C2 gets its own agent while C1's is still alive
hs addr=$S port=4433 name=server.test > /dev/null
inum_c1=$(readlink /proc/self/ns/net | tr -dc 0-9)
out=$(ip netns exec C2 sh -c "echo addr=$S port=4433 name=server.test > /debug/tlsh_test/run; cat /debug/tlsh_test/run")
inum_c2=$(ip netns exec C2 readlink /proc/self/ns/net | tr -dc 0-9)
check "C2's handshake succeeds" grep -q "status=0 done=1" <<< "$out"
check "C2 got an agent of its own" grep -q "tlsh_agent_bound: netns=$inum_c2 " $TRACE/trace
check "C2's handshake was accepted in C2, not by C1's agent" sh -c "[ \$(grep -c 'tlsh_agent_bound: netns=$inum_c2 ' $TRACE/trace) -ge 1 ] && [ \$(grep -c 'tlsh_agent_bound: netns=$inum_c1 ' $TRACE/trace) -ge 1 ]"
wait_for 10 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'

before=$(count tlsh_upcall_start)
out=$(hs addr=$S port=4433 name=server.test count=32)
check "32 concurrent handshakes all succeed" [ "$(grep -c 'status=0 done=1 cancelled=0 data=ok' <<< "$out")" = 32 ]
check "32 concurrent handshakes cause one spawn" [ "$(( $(count tlsh_upcall_start) - before ))" = 1 ]

# each reason is looked for in the helper's lines after a mark of its own
kmark untrusted
out=$(hs addr=$S port=4434 name=server.test)
check "untrusted server certificate: done() reports failure" grep -q "status=-[0-9]* done=1" <<< "$out"
check "untrusted: the helper logs why" lgrep untrusted "tlsh-helper.*certificate for .* not trusted: .*signer unknown"
kmark expired
out=$(hs addr=$S port=4435 name=server.test)
check "expired server certificate: done() reports failure" grep -q "status=-[0-9]* done=1" <<< "$out"
check "expired: the helper logs why" lgrep expired "tlsh-helper.*certificate for .* not trusted: .*expired"
kmark wrongname
out=$(hs addr=$S port=4436 name=server.test)
check "certificate for another name: done() reports failure" grep -q "status=-[0-9]* done=1" <<< "$out"
check "wrong name: the helper logs why" lgrep wrongname "tlsh-helper.*certificate for .* not trusted: .*name does not match"
wait_for 10 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'
tlsh_config "encryption-only = yes"
check "encryption-only: the untrusted server is accepted" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$(hs addr=$S port=4434 name=server.test)"
wait_for 10 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'
tlsh_config

# (privileges and refused user-space key requests: 015-tlsh-kernel.sh)

# failures of the agent itself
mv /usr/sbin/tlsh-helper /usr/sbin/tlsh-helper.off
t0=$(date +%s)
out=$(hs addr=$S port=4433 name=server.test)
t1=$(date +%s)
check "helper missing: the handshake fails with ENOKEY" grep -q "status=-126 done=1" <<< "$out"
check "helper missing: promptly (under 10 s)" [ $((t1 - t0)) -lt 10 ]
mv /usr/sbin/tlsh-helper.off /usr/sbin/tlsh-helper
check "once the helper is back, the next handshake works at once" grep -q "status=0 done=1" <<< "$(hs addr=$S port=4433 name=server.test)"
wait_for 10 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'

cp /etc/request-key.d/tlsh.conf /tmp/tlsh.conf.saved
echo "create tlsh * * /bin/sleep 30" > /etc/request-key.d/tlsh.conf
out=$(hs addr=$S port=4433 name=server.test timeout=3000)
check "helper stalled before binding: the deadline fails the handshake" grep -q "status=-110 done=1" <<< "$out"
cp /tmp/tlsh.conf.saved /etc/request-key.d/tlsh.conf
# the stalled "helper" still holds the namespace's upcall until it exits
pkill -x sleep
wait_for 5 sh -c "! pgrep -x sleep >/dev/null"

# a peer that accepts TCP and never speaks TLS: the helper hangs in the
# handshake; kill it while it holds the socket
ip netns exec S tcp-sink 4437 &
sleep 0.5
# kill the agent once it has accepted the handshake (not after a fixed
# time: a slow debug kernel may not have started it yet)
acc=$(count tlsh_req_accepted)
(wait_for 30 sh -c "[ \$(grep -c ' tlsh_req_accepted:' $TRACE/trace) -gt $acc ]"; sleep 0.5
 pkill -9 -x tlsh-helper) &
out=$(hs addr=$S port=4437 name=server.test timeout=15000)
echo "$out" | sed 's/^/# /'
check "helper killed after accept: the handshake completes with an error" grep -q "status=-[0-9]* done=1" <<< "$out"
check "helper killed after accept: well before the deadline" sh -c "[ \$(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<< '$out') -lt 10000 ]"
out=$(hs addr=$S port=4437 name=server.test timeout=3000)
check "helper stuck mid-handshake: the deadline fails it" grep -q "status=-110 done=1" <<< "$out"
out=$(hs addr=$S port=4437 name=server.test timeout=20000 cancel=1000)
check "cancel while the helper holds the socket: done() never runs" grep -q "done=0 cancelled=1" <<< "$out"
pkill -x tcp-sink
pkill -x tlsh-helper

check "the test module unloads (no leaked references)" rmmod tlsh_test
pkill gnutls-serv
[ "${TLSH_FAILED:-0}" = 0 ] || tail -n 40 /var/log/messages
finish
