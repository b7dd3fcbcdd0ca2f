#!/bin/bash
# A hostile TLS server (tls-front --hostile-record, and a certificate
# chain of 100 entries): during the handshake an oversized record, a
# record of an undefined content type, a chain far deeper than any
# verifier accepts, a close or reset after the ClientHello, garbage after
# STARTTLS, a stalled handshake, an AUTH_TLS probe never answered or
# answered wrongly; inside an established session, the same records
# arriving on the kernel's kTLS receive path. Each time: the mount fails
# (or the I/O recovers on a new connection) within a bound, with a clear
# message, nothing is relayed in plaintext, and the kernel reports nothing
# (the runner fails the case on any WARNING/BUG/Oops/KASAN/lockdep report).
# tlsh-vm: timeout=400
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_tls_ready "hostile TLS server" || exit 0
if ! $FRONT --help | grep -q -- --hostile-record; then
	skip "hostile TLS server: this tls-front has no --hostile-record"
	exit 0
fi

nfs_trace_setup
S=$TLSH_SERVER_NAME
M=/mnt/h

no_plaintext() {
	! grep -q 'probe=plain' "$TLSH_ARTIFACTS/front-$1.log"
}

# helper_logged MARK ERE: a line of the helper's after MARK matches ERE
# (case-insensitive)
helper_logged() { log_since "$1" | grep 'tlsh-helper' | grep -qiE "$2"; }
# tls_fails MARK PORT WHAT KERNEL-RE HELPER-RE: an xprtsec=tls mount
# against the front on PORT fails within 30 s, the kernel log after MARK
# matches KERNEL-RE and the helper's log lines after it HELPER-RE
tls_fails() {
	local mark=$1 port=$2 what=$3 kre=$4 hre=$5 start el
	kmark "$mark"
	start=$(date +%s)
	check_fail "$what: xprtsec=tls mount fails" nfs_mount vers=4.2,xprtsec=tls,port=$port $S $M
	el=$(( $(date +%s) - start ))
	check "... within 30 s (took ${el} s)" [ $el -le 30 ]
	check "... with a clear kernel message" kgrep "$mark" "$kre"
	check "... and the helper logged why" helper_logged "$mark" "$hre"
}

# refused PORT WHAT KERNEL-RE HELPER-RE [UNAUTH]: xprtsec=tls and
# xprtsec=auto mounts against the front on PORT both fail, in time, with the
# reasons; with UNAUTH ("unauth"), the server's certificate is merely
# unverifiable, and xprtsec=auto may instead mount encrypted without
# authenticating it (never in plaintext)
refused() {
	local port=$1 unauth=${5:-}
	tls_fails "hostile-$port" "$port" "$2" "$3" "$4"
	if [ "$unauth" = unauth ] && nfs_mount vers=4.2,xprtsec=auto,port=$port $S $M; then
		check "... xprtsec=auto mounts encrypted, the server not authenticated" \
			sh -c ". /tlsh/guest/lib.sh; . /tlsh/guest/nfs-lib.sh; encrypted $M 1 && authenticated $M 0"
		umount $M
	else
		check_fail "... xprtsec=auto fails too (no plaintext fallback)" nfs_mount vers=4.2,xprtsec=auto,port=$port $S $M
	fi
	check_fail "... nothing is mounted" grep -q " $M " /proc/mounts
	check "... the front relayed nothing in plaintext" no_plaintext "$port"
}

# --- in the handshake ----------------------------------------------------
front 3060 --hostile-record=oversized
refused 3060 "oversized record in place of the ServerHello" \
	'TLS handshake with server.test .* failed' 'illegal size|large|overflow|length|record|packet'
check "... the front sent it" grep -q 'hostile=oversized-sent' "$TLSH_ARTIFACTS/front-3060.log"
front_stop 3060

front 3061 --hostile-record=badtype
refused 3061 "record of content type 99 in place of the ServerHello" \
	'TLS handshake with server.test .* failed' 'unexpected|packet|unsupported|content|record'
check "... the front sent it" grep -q 'hostile=badtype-sent' "$TLSH_ARTIFACTS/front-3061.log"
front_stop 3061

front 3062 --cert $CERTS/server-chain100.pem --key $CERTS/server-chain100-key.pem
refused 3062 "certificate chain of 100 entries" \
	'TLS handshake with server.test .* failed: server certificate not trusted' 'not trusted|issuer|signer|chain|depth' unauth
front_stop 3062

# --- around the handshake: the server closes or resets after the
# ClientHello, sends garbage after STARTTLS, stalls the handshake ---------
# What a 6.4+ knfsd without tlshd does: xprtsec=tls fails and says why;
# xprtsec=auto continues in plaintext on a new connection, and says why
fallback() {
	local port=$1
	tls_fails "fallback-$port" "$port" "$2" \
		'TLS handshake with server.test .* failed: the server closed the connection during the handshake' 'closed|reset'
	kmark "fallback-auto-$port"
	check "... xprtsec=auto mounts, in plaintext on a new connection" \
		sh -c ". /tlsh/guest/lib.sh; . /tlsh/guest/nfs-lib.sh; nfs_mount vers=4.2,xprtsec=auto,port=$port $S $M && plaintext $M"
	check "... saying why, once" sh -c "[ \$(dmesg | sed -n '/tlsh-mark fallback-auto-$port\$/,\$p' | grep -c 'closed the connection during the handshake; xprtsec=auto continues in plaintext') = 1 ]"
	check "... and the data is there" sh -c "echo fb > $M/fb-$port && cmp -s $M/fb-$port $TLSH_EXPORT_DIR/fb-$port"
	umount $M 2>/dev/null
	rm -f $TLSH_EXPORT_DIR/fb-$port
}
front 3065 --close-handshake
fallback 3065 "connection closed after the ClientHello"
front_stop 3065
front 3066 --close-handshake --drop-rst
fallback 3066 "connection reset after the ClientHello"
front_stop 3066
front 3067 --garbage-after-starttls
# (when the garbage rides in the segment of the probe's reply, the RPC
# layer consumes it with the reply and the handshake times out instead)
refused 3067 "garbage after STARTTLS" \
	'TLS handshake with server.test .* failed' 'unexpected|illegal|packet|record|decod|length|timed out'
front_stop 3067
front 3068 --stall-handshake
refused 3068 "a server that never answers the ClientHello" \
	'TLS handshake with server.test .* failed: timed out' 'time'
# the kernel's own deadline (the helper's, 10 s here, came first above)
P=/sys/module/sunrpc/parameters/tls_handshake_timeout_ms
dl=$(cat $P)
check "sunrpc.tls_handshake_timeout_ms is there" [ -n "$dl" ]
check_fail "... refuses 999" sh -c "echo 999 > $P"
check_fail "... refuses 600001" sh -c "echo 600001 > $P"
echo 3000 > $P
kmark deadline3s
start=$(date +%s)
check_fail "with a 3 s deadline, the stalled handshake fails the mount" nfs_mount vers=4.2,xprtsec=tls,port=3068 $S $M
el=$(( $(date +%s) - start ))
check "... within 9 s (took ${el} s), before the helper's 10 s" [ $el -le 9 ]
check "... timed out, says the kernel" kgrep deadline3s 'TLS handshake with server.test .* failed: timed out'
check "... and the agent, which ends it before the kernel's deadline" \
	lgrep deadline3s 'handshake with .* (server.test) failed: handshake timed out after [0-9]* ms'
front_stop 3068
# an agent blocked in a read of the handshake socket (a server says
# nothing before the ClientHello, and keeps the connection open 40 s
# after the client closes it): at the deadline the kernel shuts the
# socket down and wakes the agent, rather than wait for it to return
# (SUNRPC's own callbacks do not wake the queue it sleeps on; the
# server's FIN would, 40 s later)
front 3068 --stall-handshake --stall-hold=40
pkill -x tlsh-helper
wait_for 10 no_agent
tlsh-probe stall > $TLSH_ARTIFACTS/stall.out 2>&1 &
stall=$!
wait_for 5 grep -q "listen ok" $TLSH_ARTIFACTS/stall.out
kmark stalled-agent
start=$(date +%s)
check_fail "an agent stuck in a blocking read, 3 s deadline: the mount fails" \
	nfs_mount vers=4.2,xprtsec=tls,port=3068 $S $M
el=$(( $(date +%s) - start ))
check "... within 15 s (took ${el} s): the deadline ended it, not the server's close" [ $el -le 15 ]
check "... the agent's read returned (end of file)" \
	wait_for 5 grep -q "recv ret=0" $TLSH_ARTIFACTS/stall.out
sed 's/^/# /' $TLSH_ARTIFACTS/stall.out
kill $stall 2>/dev/null
echo "$dl" > $P
front_stop 3068

# --- the AUTH_TLS probe: never answered, or answered wrongly --------------
front 3069 --never-answer-probe
for pol in tls auto; do
	kmark "noanswer-$pol"
	timeout 30 mount -t nfs -o vers=4.2,xprtsec=$pol,port=3069,retry=0 $S:$TLSH_EXPORT $M 2>/dev/null
	check_fail "probe never answered, xprtsec=$pol: nothing is mounted within 30 s" grep -q " $M " /proc/mounts
	check "... the kernel says the server did not answer the probe" \
		kgrep "noanswer-$pol" 'server.test .* did not answer the RPC-with-TLS probe'
done
check "... nothing was relayed in plaintext" sh -c "! grep 'conn=' $TLSH_ARTIFACTS/front-3069.log | grep -qv 'probe=unanswered .*c2b=0 '"
front_stop 3069
# auto_plain MARK: an xprtsec=auto mount through port 3075 works in
# plaintext, shows it, and the kernel said so
auto_plain() {
	nfs_mount vers=4.2,xprtsec=auto,port=3075 $S $M && plaintext $M &&
		kgrep "$1" 'xprtsec=auto continues in plaintext'
}
for m in badverf shortverf nullverf badflavor; do
	front 3075 --probe-reply=$m
	kmark "reply-$m"
	start=$(date +%s)
	check_fail "probe answered wrongly ($m), xprtsec=tls: the mount fails" nfs_mount vers=4.2,xprtsec=tls,port=3075 $S $M
	el=$(( $(date +%s) - start ))
	check "... within 10 s (took ${el} s)" [ $el -le 10 ]
	check "... saying the server offers no TLS" kgrep "reply-$m" 'does not offer RPC-with-TLS; no plaintext under xprtsec=tls'
	# xprtsec=auto is opportunistic: a server that does not answer
	# STARTTLS is one without TLS; the mount says so and shows it
	check "... xprtsec=auto continues in plaintext, and says so" auto_plain "reply-$m"
	umount $M 2>/dev/null
	front_stop 3075
done

# --- inside an established session (kTLS receive path) --------------------
dd if=/dev/urandom of=$TLSH_EXPORT_DIR/h8 bs=1M count=8 status=none
want8=$(sha256sum < $TLSH_EXPORT_DIR/h8 | cut -d' ' -f1)
for hr in oversized badtype; do
	port=3063
	[ $hr = badtype ] && port=3064
	front $port --hostile-record=$hr --hostile-after=3000000
	est=$(count rpc_tls_established)
	check "$hr record after 3 MB of a session: mount works" nfs_mount vers=4.2,xprtsec=tls,port=$port,rsize=65536 $S $M
	start=$(date +%s)
	check "... an 8 MiB read survives it, data intact" sh -c "[ \"\$(timeout 120 sha256sum < $M/h8 | cut -d' ' -f1)\" = $want8 ]"
	el=$(( $(date +%s) - start ))
	check "... within 120 s (took ${el} s)" [ $el -le 120 ]
	check "... the record was sent inside the session" grep -q "tls=ok .*hostile=$hr-sent" "$TLSH_ARTIFACTS/front-$port.log"
	check "... the connection was dropped and a new handshake followed" [ $(( $(count rpc_tls_established) - est )) -ge 2 ]
	check "... the mount is still encrypted" wait_for 20 encrypted $M 1
	umount $M
	check "... nothing was relayed in plaintext" no_plaintext $port
	front_stop $port
done
rm -f $TLSH_EXPORT_DIR/h8

check "no helper left some seconds after the last handshake" wait_for 30 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'
[ "${TLSH_FAILED:-0}" = 0 ] || tail -n 40 /var/log/messages
finish
