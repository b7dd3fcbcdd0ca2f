#!/bin/bash
# The security review's findings, each checked from where an attacker or
# a crash would stand: who may be a handshake agent, whose keys an agent
# reads, what the kernel's key ring grants, what a crashed agent leaves,
# an orderly TLS close, and a ticket record split across TCP segments.
# tlsh-vm: timeout=600
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_tls_ready "security" key_link_to_thread_keyring || exit 0

# the agent's configuration also serves knfsd's handshakes (the
# container's mount goes to knfsd serving TLS)
check "test consumer module loads, tracing on" tlsh_setup "$KNFSD_CONF"
trap knfsd_cleanup EXIT
serve 4433 server
serve 4437 server --x509cafile "$CERTS/ca.pem" --require-client-cert
S=$TLSH_SERVER_ADDR
as_user() { setpriv --reuid 1000 --regid 1000 --clear-groups "$@"; }
# root, but without any capability (an fsuid-0 process that is not an
# administrator: a confined daemon, say)
no_caps() { setpriv --inh-caps=-all --bounding-set=-all "$@"; }
keyctl new_session >/dev/null

# --- 1. who may be an agent ------------------------------------------------
# A user namespace's root has CAP_NET_ADMIN over its own network namespace;
# that must not make it the agent of that namespace's handshakes.
check "user namespace root: bind() of an AF_TLSH listener fails with EPERM" \
	grep -q "bind errno=EPERM" <<< "$(as_user unshare -Urn tlsh-probe bind 2>&1)"
check "user namespace root: listen() fails with EPERM" \
	grep -q "listen errno=EPERM" <<< "$(as_user unshare -Urn tlsh-probe listen 2>&1)"

# A network namespace owned by an unprivileged user's namespace (a
# container), wired to the server's bridge; root mounts from inside it.
# (setpriv execs unshare, which execs sleep: $! is the sleep in the new
# namespaces)
setpriv --reuid 1000 --regid 1000 --clear-groups unshare -Urn sleep 600 &
upid=$!
userns_net() { [ "$(readlink /proc/$upid/ns/net)" != "$(readlink /proc/self/ns/net)" ]; }
check "a user creates a user and network namespace" wait_for 10 userns_net
un() { nsenter --net=/proc/$upid/ns/net "$@"; }
ip link add vu type veth peer name eth0 netns "$upid"
ip link set vu netns S
ip -n S link set vu master br0
ip -n S link set vu up
un ip link set lo up
un ip addr add 192.0.2.31/24 dev eth0
un ip link set eth0 up
wait_for 10 un ping -c1 -W1 $S > /dev/null
before=$(count tlsh_upcall_start)
out=$(un sh -c "echo addr=$S port=4433 name=server.test > /debug/tlsh_test/run; cat /debug/tlsh_test/run")
echo "$out"
check "a handshake in the container's namespace is served by a kernel-started agent" \
	grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"
check "... that the kernel started for it (one upcall)" [ "$(( $(count tlsh_upcall_start) - before ))" = 1 ]
kmark userns
mkdir -p /mnt/userns
nfsd_tls 1 > /dev/null
if un timeout 90 mount -t nfs -o vers=4.2,xprtsec=tls,retry=0 $TLSH_PLAIN_NAME:$TLSH_EXPORT /mnt/userns; then
	ok "root mounts knfsd with xprtsec=tls in the container's namespace"
	check "... encrypted" encrypted /mnt/userns 1
	umount /mnt/userns
else
	not_ok "root mounts knfsd with xprtsec=tls in the container's namespace"
	dmesg_since userns | tail -5 | sed 's/^/# /'
fi
nfsd_tls 0 > /dev/null
kill $upid 2>/dev/null
wait $upid 2>/dev/null
ns_gone vu 15

# --- 2. an agent reads only the keys of the request's keyring ------------
cert=$(keyctl padd user tlsh:sec-cert @s < $CERTS/client.pem)
key=$(keyctl padd user tlsh:sec-key @s < $CERTS/client-key.pem)
ocert=$(keyctl padd user tlsh:sec-other-cert @u < $CERTS/client.pem)
okey=$(keyctl padd user tlsh:sec-other-key @u < $CERTS/client-key.pem)
ring=$(keyctl newring tlsh:sec-ring @s)
keyctl link "$cert" "$ring"
keyctl link "$key" "$ring"
check "keys and a keyring for the test consumer" test -n "$cert" -a -n "$key" -a -n "$ocert" -a -n "$okey" -a -n "$ring"
out=$(hs addr=$S port=4437 name=server.test cert=$cert peerid=$key keyring=$ring)
echo "$out"
check "mTLS with the keys in the request's keyring: accepted" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"
kmark notinring
out=$(hs addr=$S port=4437 name=server.test cert=$ocert peerid=$okey keyring=$ring)
echo "$out"
check "serials that are not in the request's keyring: refused" grep -q "start=0 status=-[0-9]* done=1" <<< "$out"
check "... the agent says they are not in the keyring" \
	lgrep notinring "key $okey is not in the kernel's key ring $ring\|key $ocert is not in the kernel's key ring $ring"
out=$(hs addr=$S port=4437 name=server.test cert=$ocert peerid=$okey)
echo "$out"
check "... while the same serials without a keyring (root's user keyring) are served" \
	grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"

# --- 3. the .nfs-xprtsec keyring grants nothing to fsuid 0 ----------------
MT=3045		# ports of this case's own, so the front logs are its own
rm -f $TLSH_ARTIFACTS/front-3045.log $TLSH_ARTIFACTS/front-3046.log
front $MT --ca $CERTS/ca.pem --require-client-cert --tls-only
M=/mnt/sec
check "mtls mount" nfs_mount vers=4.2,port=$MT,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key $TLSH_SERVER_NAME $M
kr=$(awk '$9 == ".nfs-xprtsec:" { print $1; exit }' /proc/keys)
check "the mount's .nfs-xprtsec keyring is visible to root" test -n "$kr"
kr=$((16#${kr:-0}))
check_fail "root cannot link it into its own session" keyctl link "$kr" @s
check_fail "root without capabilities cannot either" no_caps keyctl link "$kr" @s
check_fail "... nor read the mount's private key through it" \
	no_caps keyctl session - sh -c "keyctl link $kr @s 2>/dev/null; keyctl pipe $key"
check "the mount works (the agent was given the keyring)" sh -c "echo data > $M/sec && cmp -s $M/sec $TLSH_EXPORT_DIR/sec"

# --- 4. a crashed agent leaves nothing ----------------------------------
# An agent kept busy while it is looked at: a handshake with a peer that
# never speaks TLS holds it until that peer goes (an idle agent exits
# after 3 s, which a slow kernel reaches before the checks), and it is
# stopped meanwhile; a process that is gone must not make "cannot read"
# pass for the wrong reason.
ip netns exec S tcp-sink 4439 &
sink=$!
wait_for 10 sh -c "ip netns exec S ss -ltn | grep -q ':4439 '"
hs addr=$S port=4439 name=server.test timeout=$((30000 * TLSH_SLOWDOWN)) > $TLSH_ARTIFACTS/045-busy.out &
hsp=$!
# the agent and the process of its handshake
busy_agent() { [ "$(helpers)" -ge 2 ]; }
wait_for $((30 * TLSH_SLOWDOWN)) busy_agent
pid=$(pgrep -x tlsh-helper | head -1)
check "an agent runs (serving a handshake with a silent peer)" test -n "$pid"
kill -STOP "$pid" 2>/dev/null
maps_hidden() { [ -n "$1" ] && ! no_caps cat /proc/$1/maps > /dev/null 2>&1; }
check "the agent's core file limit is 0" grep -q "^Max core file size *0 *0 " /proc/$pid/limits
check "the agent is not dumpable: root without CAP_SYS_PTRACE cannot read its memory map" \
	maps_hidden "$pid"
check "... while an administrator can" sh -c "cat /proc/$pid/maps > /dev/null"
kill -CONT "$pid" 2>/dev/null
kill $sink
wait $sink $hsp 2>/dev/null
sed 's/^/# the busy handshake: /' $TLSH_ARTIFACTS/045-busy.out

# --- 5. an orderly close sends close_notify ------------------------------
umount $M
check "after umount the front saw the client's close_notify" \
	wait_for 10 grep -q 'close="client closed (close_notify)' $TLSH_ARTIFACTS/front-$MT.log
check_fail "... and no connection that ended without one" \
	grep -q 'close="client closed"' $TLSH_ARTIFACTS/front-$MT.log
front_stop $MT

# --- 6. a ticket split across TCP segments --------------------------------
# The front sends its ticket as 10 bytes, a pause, then the rest, right
# when the agent waits for the verdict on our certificate: the agent must
# not hand GnuTLS part of a record (kTLS would then start mid-record).
MT=3046
front $MT --ca $CERTS/ca.pem --require-client-cert --tls-only --session-tickets 1 --split-tickets 300
check "mtls mount against a server whose ticket arrives split" \
	nfs_mount vers=4.2,port=$MT,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key,soft,timeo=50,retrans=1 $TLSH_SERVER_NAME $M
check "... the data round-trips" sh -c "timeout 60 cat $M/sec | cmp -s - $TLSH_EXPORT_DIR/sec"
umount $M
front_stop $MT
# (the front logs a connection when it ends)
check "... on one connection, never reset" [ "$(grep -c 'tls=ok' $TLSH_ARTIFACTS/front-$MT.log)" = 1 ]
rm -f $TLSH_EXPORT_DIR/sec

pkill gnutls-serv
if [ "${TLSH_FAILED:-0}" != 0 ]; then
	echo "# --- helper log"
	grep tlsh-helper /var/log/messages | tail -20 | sed 's/^/# /'
	tail -5 $TLSH_ARTIFACTS/front-$MT.log | sed 's/^/# /'
fi
finish
