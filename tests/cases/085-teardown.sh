#!/bin/bash
# The rest of the fault matrix, as a user meets it: the agent cannot be
# started (the helper binary is not executable, the request-key rule is
# missing), the agent's listener goes away with handshakes queued on it,
# and a client network namespace is deleted while its handshakes wait for
# an agent and while one is in the middle of a TLS handshake (a container
# torn down during a mount). Each time: done() runs exactly once, the
# mount fails within a bound with a clear message, no agent is left, and
# the namespace is dismantled afterwards (its veth end leaves the server).
# That the kernel's namespace exit fails requests still queued is proven
# by the KUnit suite (tlsh_test_net_exit, tlsh_test_netns_delete): from
# user space a namespace cannot die while a consumer in it still waits.
# tlsh-vm: timeout=300
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

if [ ! -x /usr/sbin/tlsh-helper ] || ! command -v tlsh-probe > /dev/null ||
   ! tlsh-probe 2>&1 | grep -q hold; then
	skip "teardown faults: tlsh-helper or tlsh-probe (hold) is not built"
	exit 0
fi
if ! grep -q " rpc_starttls_probe" /proc/kallsyms; then
	skip "teardown faults: this kernel has no xprtsec= support"
	exit 0
fi

nfs_trace_setup
check "test consumer module loads" tlsh_setup
serve 4433 server
S=$TLSH_SERVER_ADDR
M=/mnt/td
rule=/etc/request-key.d/tlsh.conf
cp "$rule" /tmp/tlsh.conf.saved
mount_works() {
	nfs_mount vers=4.2,xprtsec=tls $TLSH_SERVER_NAME $M && umount $M
}

# no_start WHAT: with the agent impossible to start, a handshake and an
# xprtsec=tls mount both fail at once with "no agent"
no_start() {
	local what=$1 out d0 start el
	d0=$(count tlsh_req_done)
	out=$(hs addr=$S port=4433 name=server.test timeout=15000)
	check "$what: done() once, with ENOKEY" grep -q "start=0 status=-126 done=1 " <<< "$out"
	check "... promptly, not at the 15 s deadline ($(ms "$out") ms)" [ "$(ms "$out")" -lt 10000 ]
	sleep 0.2
	check "... exactly one completion traced" [ $(( $(count tlsh_req_done) - d0 )) = 1 ]
	kmark "nostart-$2"
	start=$(date +%s)
	nfs_mount vers=4.2,xprtsec=tls $TLSH_SERVER_NAME $M > $TLSH_ARTIFACTS/nostart-$2.err 2>&1
	check "... an xprtsec=tls mount fails: $(head -c 120 $TLSH_ARTIFACTS/nostart-$2.err | tr '\n' ' ')" \
		grep -q "Required key not available" $TLSH_ARTIFACTS/nostart-$2.err
	el=$(( $(date +%s) - start ))
	check "... within 20 s (took ${el} s)" [ $el -le 20 ]
	check "... the kernel names the reason" kgrep "nostart-$2" 'TLS handshake with server.test .* failed: no handshake agent'
	check_fail "... nothing is mounted" grep -q " $M " /proc/mounts
	# xprtsec=auto never fails a mount that xprtsec=none would complete
	kmark "nostart-auto-$2"
	check "... an xprtsec=auto mount continues in plaintext" \
		sh -c ". /tlsh/guest/lib.sh; . /tlsh/guest/nfs-lib.sh; nfs_mount vers=4.2,xprtsec=auto $TLSH_SERVER_NAME $M && plaintext $M"
	check "... with a warning that names the missing agent" \
		kgrep "nostart-auto-$2" 'no TLS handshake agent for server.test .*; xprtsec=auto continues in plaintext'
	umount $M 2>/dev/null
}

# --- the agent cannot be started ------------------------------------------
check "no agent before" no_agent
chmod -x /usr/sbin/tlsh-helper
no_start "helper not executable" noexec
chmod +x /usr/sbin/tlsh-helper
check "... and once it is, a handshake works" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$(hs addr=$S port=4433 name=server.test)"
check "... and so does an xprtsec=tls mount" mount_works

pkill -x tlsh-helper
no_agent
rm -f "$rule"
no_start "request-key rule missing" norule
cp /tmp/tlsh.conf.saved "$rule"
check "... and once it is back, a handshake works" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$(hs addr=$S port=4433 name=server.test)"

# --- a listener closed with handshakes queued on it ------------------------
pkill -x tlsh-helper
no_agent
tlsh-probe hold 3000 > $TLSH_ARTIFACTS/hold.out 2>&1 &
hold=$!
wait_for 5 grep -q "listen ok" $TLSH_ARTIFACTS/hold.out
up0=$(count tlsh_upcall_start) d0=$(count tlsh_req_done) c0=$(count tlsh_listener_closed)
out=$(hs addr=$S port=4433 name=server.test count=8 timeout=20000)
wait $hold
good=$(grep -c ' start=0 status=0 done=1 cancelled=0 data=ok ' <<< "$out")
check "listener closed with 8 handshakes queued: all 8 succeed later ($good of 8)" [ "$good" = 8 ]
check "... the listener held them and closed" [ $(( $(count tlsh_listener_closed) - c0 )) -ge 1 ]
check "... then request-key started an agent for them (one upcall)" [ $(( $(count tlsh_upcall_start) - up0 )) = 1 ]
check "... none waited out the 20 s deadline (slowest $(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<< "$out" | sort -n | tail -1) ms)" \
	[ "$(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<< "$out" | sort -n | tail -1)" -lt 15000 ]
sleep 0.2
check "... exactly 8 completions traced" [ $(( $(count tlsh_req_done) - d0 )) = 8 ]

# --- a namespace deleted while its handshakes wait for an agent -----------
pkill -x tlsh-helper
no_agent
check "namespace Q1 on the server's bridge" client_ns Q1 192.0.2.97 q1
wait_for 10 ip netns exec Q1 ping -c1 -W1 $S > /dev/null
# the request-key helper stalls 4 s: the handshakes stay queued
echo "create tlsh * * /bin/sleep 4" > "$rule"
up0=$(count tlsh_upcall_start) d0=$(count tlsh_req_done)
ip netns exec Q1 sh -c "echo 'addr=$S port=4433 name=server.test count=4 timeout=6000' > /debug/tlsh_test/run; cat /debug/tlsh_test/run" \
	> $TLSH_ARTIFACTS/q1.out 2>&1 &
q1=$!
wait_for 5 sh -c "[ \$(grep -c ' tlsh_upcall_start:' $TRACE/trace) -gt $up0 ]"
check "... 4 handshakes queued, request-key stalled" [ $(( $(count tlsh_upcall_start) - up0 )) = 1 ]
check "ip netns del Q1 while they wait" ip netns del Q1
wait $q1
cp /tmp/tlsh.conf.saved "$rule"
out=$(cat $TLSH_ARTIFACTS/q1.out)
check "... each done() ran once, with an error ($(grep -c ' done=1 ' <<< "$out") of 4)" \
	[ "$(grep -c ' start=0 status=-[0-9]* done=1 ' <<< "$out")" = 4 ]
sleep 0.2
check "... exactly 4 completions traced" [ $(( $(count tlsh_req_done) - d0 )) = 4 ]
check "... the namespace is dismantled within 20 s" ns_gone q1 20
check "... no agent is left" no_agent

# --- a namespace deleted during a mount's TLS handshake --------------------
# The front stalls after STARTTLS: the agent sits in the handshake; the
# mount is killed and the namespace deleted, as a container runtime does.
front 3085 --stall-handshake
check "namespace Q2 on the server's bridge" client_ns Q2 192.0.2.96 q2
wait_for 10 ip netns exec Q2 ping -c1 -W1 $S > /dev/null
a0=$(count tlsh_req_accepted) d0=$(count tlsh_req_done)
ip netns exec Q2 sh -c "mkdir -p $M; exec mount -t nfs -o vers=4.2,xprtsec=tls,port=3085,retry=0 $TLSH_SERVER_NAME:$TLSH_EXPORT $M" \
	> $TLSH_ARTIFACTS/q2.err 2>&1 &
q2=$!
check "... a mount in Q2: its handshake is in Q2's agent's hands" \
	wait_for 15 sh -c "[ \$(grep -c ' tlsh_req_accepted:' $TRACE/trace) -gt $a0 ]"
sleep 1
start=$(date +%s)
kill -9 $q2 2>/dev/null
wait $q2 2>/dev/null
el=$(( $(date +%s) - start ))
check "... the mount dies at SIGKILL (${el} s)" [ $el -le 5 ]
check "ip netns del Q2 during the handshake" ip netns del Q2
dl=$(( $(cat /sys/module/sunrpc/parameters/tls_handshake_timeout_ms) / 1000 ))
check "... the namespace is dismantled within $((dl + 20)) s (handshake deadline ${dl} s)" ns_gone q2 $((dl + 20))
sleep 0.2
check "... the handshake's done() ran once" [ $(( $(count tlsh_req_done) - d0 )) = 1 ]
check "... no agent is left" no_agent
check_fail "... nothing is mounted" grep -q " $M " /proc/mounts
front_stop 3085

check "afterwards, an xprtsec=tls mount works" mount_works
pkill -x tlsh-helper
no_agent
check "the test module unloads (no leaked references)" rmmod tlsh_test
pkill gnutls-serv
[ "${TLSH_FAILED:-0}" = 0 ] || tail -n 40 /var/log/messages
finish
