#!/bin/bash
# AF_TLSH in the kernel, without a working agent: privileges, refused
# user-space requests of the key type, a missing or stalled helper, the
# deadline, cancel, one upcall for concurrent requests, clean unload.
# tlsh-vm: timeout=120
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh

check "test consumer module loads, tracing on" tlsh_setup
S=$TLSH_SERVER_ADDR
serve 4433 server
as_user() { setpriv --reuid 1000 --regid 1000 --clear-groups "$@"; }

check "unprivileged bind: EPERM" grep -q "bind errno=EPERM" <<< "$(as_user tlsh-probe bind 2>&1)"
check "unprivileged listen: EPERM" grep -q "listen errno=EPERM" <<< "$(as_user tlsh-probe listen 2>&1)"
check "unprivileged accept: EPERM" grep -q "accept errno=EPERM" <<< "$(as_user tlsh-probe accept 2>&1)"
check "root bind to a key the kernel is not waiting on: EPERM" grep -q "bind errno=EPERM" <<< "$(tlsh-probe bind 12345 2>&1)"
check "root listen in its own namespace works" grep -q "listen ok" <<< "$(tlsh-probe listen 2>&1)"
check "getsockopt(SOL_TLSH) on a listener: EINVAL" grep -q "getsockopt errno=EINVAL" <<< "$(tlsh-probe getsockopt 2>&1)"

before=$(count tlsh_upcall_start)
check "keyctl request2 of type tlsh as a user: refused" grep -q "Operation not permitted" <<< "$(as_user keyctl request2 tlsh netns:1:1 x @s 2>&1)"
check "keyctl request2 of type tlsh as root: refused" grep -q "Operation not permitted" <<< "$(keyctl request2 tlsh netns:1:1 x @s 2>&1)"
check "keyctl add of type tlsh: refused" grep -q "Operation not permitted" <<< "$(keyctl add tlsh netns:1:2 x @s 2>&1)"
check "refused requests started no helper" [ "$(count tlsh_upcall_start)" = "$before" ]

# no program for the key type at all: request-key fails at once
mv /etc/request-key.d/tlsh.conf /tmp/tlsh.conf.saved
out=$(hs addr=$S port=4433 name=server.test)
echo "$out"
check "no agent can be started: done() reports ENOKEY once" grep -q "start=0 status=-126 done=1" <<< "$out"
check "no agent: reported within 5 s, not at the deadline" [ "$(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<< "$out")" -lt 5000 ]
check "the failed upcall was traced" [ "$(count tlsh_upcall_done)" -ge 1 ]

# a helper that never binds: the deadline completes the request
echo "create tlsh * * /bin/sleep 20" > /etc/request-key.d/tlsh.conf
before=$(count tlsh_upcall_start)
out=$(hs addr=$S port=4433 name=server.test timeout=2000 count=8)
echo "$out"
check "stalled helper: all 8 requests time out (ETIMEDOUT, done once)" [ "$(grep -c 'start=0 status=-110 done=1' <<< "$out")" = 8 ]
check "stalled helper: at the 2 s deadline" sh -c "! sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<< '$out' | awk '\$1 < 1900 || \$1 > 5000 {bad=1} END {exit !bad}'"
check "8 concurrent requests caused one upcall" [ "$(( $(count tlsh_upcall_start) - before ))" = 1 ]
out=$(hs addr=$S port=4433 name=server.test timeout=20000 cancel=500)
check "cancel while queued: returns true and done() never runs" grep -q "start=0 status=0 done=0 cancelled=1" <<< "$out"
check "cancel was traced" [ "$(count tlsh_req_cancel)" -ge 1 ]
check "the timed-out and cancelled requests were all traced done or cancelled" [ "$(count tlsh_req_done)" -ge 9 ]
pkill -x sleep
mv /tmp/tlsh.conf.saved /etc/request-key.d/tlsh.conf

# a namespace deleted with a request queued
ip netns add T1
ip netns exec T1 ip link set lo up
ip netns exec T1 sh -c 'echo addr=127.0.0.1 port=9 > /debug/tlsh_test/run' 2>/dev/null
check "a request on an unconnected socket is refused, not queued" grep -q "start=-111 status=0 done=0" <<< "$(cat /debug/tlsh_test/run)"
check "the namespace can be deleted" ip netns del T1

check "the test module unloads (no leaked references)" rmmod tlsh_test
pkill gnutls-serv
finish
