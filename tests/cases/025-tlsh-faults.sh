#!/bin/bash
# The agent dies at the worst moments: killed before it binds its
# listener, in the middle of the TLS handshake (after the ServerHello),
# after setting TLS_TX but before TLS_RX, and after both. Each time the
# consumer's done() runs exactly once with the documented status, well
# before the deadline, and the next handshake, with the normal helper,
# works.
# The faults come from tlsh-helper-testing (handshake-helper/fault.h),
# started by a request-key rule that sets TLSH_HELPER_FAULT.
# tlsh-vm: timeout=240
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh

if [ ! -x /usr/sbin/tlsh-helper ] || [ ! -x /usr/sbin/tlsh-helper-testing ]; then
	skip "agent faults: tlsh-helper-testing is not built"
	exit 0
fi

check "test consumer module loads" tlsh_setup
serve 4433 server
S=$TLSH_SERVER_ADDR
rule=/etc/request-key.d/tlsh.conf
cp "$rule" /tmp/tlsh.conf.saved
env=$(command -v env)

fault_rule() {
	echo "create tlsh * * $env TLSH_HELPER_FAULT=$1 /usr/sbin/tlsh-helper-testing -k %k" > "$rule"
}
normal_rule() {
	cp /tmp/tlsh.conf.saved "$rule"
}

# fault, and the status done() must report: -ENOKEY (126) when no
# listener ever existed, -EACCES (13) for a handshake socket closed
# without both kTLS keys
for f in before-bind:126 mid-handshake:13 after-tx:13; do
	fault=${f%:*} errno=${f#*:}
	check "$fault: no agent running before" no_agent
	fault_rule "$fault"
	done_before=$(count tlsh_req_done)
	out=$(hs addr=$S port=4433 name=server.test timeout=15000)
	normal_rule
	echo "$out" | sed 's/^/# /'
	check "$fault: the helper was killed there" grep -q "TLSH_HELPER_FAULT=$fault: killing myself" /var/log/messages
	check "$fault: done() ran once, with -$errno" grep -q "start=0 status=-$errno done=1 " <<< "$out"
	check "$fault: well before the 15 s deadline (no hang)" [ "$(ms "$out")" -lt 10000 ]
	sleep 0.5
	check "$fault: exactly one completion was traced" [ $(( $(count tlsh_req_done) - done_before )) = 1 ]
	check "$fault: the dead agent is gone" no_agent
	out=$(hs addr=$S port=4433 name=server.test)
	check "$fault: the next handshake works" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"
done

# after-ktls: both directions have their keys when the handshake's
# process dies, so the kernel completes the handshake (status 0); a
# server the agent could not verify (another name, authopt=1) must still
# be reported unverified: the agent tells the kernel before kTLS
check "after-ktls: no agent running before" no_agent
fault_rule after-ktls
out=$(hs addr=$S port=4433 name=other.test authopt=1 data=none timeout=15000)
normal_rule
echo "$out" | sed 's/^/# /'
check "after-ktls: the helper was killed there" grep -q "TLSH_HELPER_FAULT=after-ktls: killing myself" /var/log/messages
check "after-ktls: done() ran once with 0, the server reported unverified (unauth=1)" \
	grep -q "start=0 status=0 done=1 .* unauth=1$" <<< "$out"
sleep 0.5
check "after-ktls: the dead agent is gone" no_agent

# the normal helper has no fault injection
pkill tlsh-helper
no_agent
echo "create tlsh * * $env TLSH_HELPER_FAULT=before-bind /usr/sbin/tlsh-helper -k %k" > "$rule"
out=$(hs addr=$S port=4433 name=server.test)
normal_rule
check "tlsh-helper itself ignores TLSH_HELPER_FAULT" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"

pkill tlsh-helper
no_agent
check "the test module unloads (no leaked references)" rmmod tlsh_test
pkill gnutls-serv
[ "${TLSH_FAILED:-0}" = 0 ] || tail -n 40 /var/log/messages
finish
