#!/bin/bash
# Host-side test of tests/tls-front (the RPC-with-TLS front for knfsd) and
# tests/certs/mkcerts.sh.  Loopback only (127.0.0.1, ::1 when present).
#
# Builds tls-front, makes the test PKI in a temporary folder, starts the
# fake RPC backend (tests/tls-front/rpctest.py backend) and one tls-front
# per scenario on free ports, and checks each behaviour with rpctest.py's
# client (python ssl) or gnutls-cli (PSK, cipher choice).  Every wait is
# bounded; all children are killed on exit.  TAP-style output, closing
# with "N passed, N failed, N skipped"; exit status 1 on any failure.
set -u

TESTS=$(cd "$(dirname "$0")/.." && pwd)
TF=$TESTS/tls-front
FRONT=$TF/tls-front
RPCTEST="$TF/rpctest.py"
T=$(mktemp -d /tmp/tls-front-test.XXXXXX)
PIDS=()
n=0 passed=0 failed=0 skipped=0
START=$(date +%s)

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.2
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "${KEEP:-}" ]; then
		echo "# kept $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() {
	n=$((n + 1))
	passed=$((passed + 1))
	echo "ok $n - $1"
}
notok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	local l
	for l in "$@"; do
		[ -n "$l" ] && printf '#   %s\n' "$l"
	done
}
skip() {
	n=$((n + 1))
	skipped=$((skipped + 1))
	echo "ok $n - $1 # SKIP $2"
}
finish() {
	echo "# $(($(date +%s) - START)) s"
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ]
	exit $?
}

# rpc ARGS...: run the test client with a hard time limit; output in $OUT
rpc() {
	OUT=$(timeout 20 python3 "$RPCTEST" "$@" 2>&1)
}

# wait_file FILE: up to 5 s for FILE to appear
wait_file() {
	local i
	for i in $(seq 50); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_log NAME ERE: up to 5 s for a matching line in front NAME's log
wait_log() {
	local i
	for i in $(seq 50); do
		grep -Eq -- "$2" "$T/$1.log" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
lastlog() { grep 'conn=' "$T/$1.log" 2>/dev/null | grep -v debug | tail -1; }

# front NAME [tls-front options]: start a front on 127.0.0.1:<free port>,
# port in $PORT, pid in $FRONT_PID.  Default credentials unless --psk-only.
front() {
	local name=$1
	shift
	local creds=(--cert "$C/server.pem" --key "$C/server-key.pem")
	if [ "${1:-}" = "--psk-only" ]; then
		creds=()
		shift
	fi
	local listen=127.0.0.1:0
	if [ "${1:-}" = "--v6" ]; then
		listen='[::1]:0'
		shift
	fi
	rm -f "$T/$name.port"
	timeout 120 "$FRONT" --listen "$listen" --backend "127.0.0.1:$BPORT" \
		"${creds[@]}" --port-file "$T/$name.port" --log "$T/$name.log" \
		"$@" 2>"$T/$name.err" &
	FRONT_PID=$!
	PIDS+=("$FRONT_PID")
	if ! wait_file "$T/$name.port"; then
		PORT=
		return 1
	fi
	PORT=$(head -1 "$T/$name.port")
}

# ------------------------------------------------------------ build

if out=$(make -C "$TF" -s 2>&1) && [ -x "$FRONT" ]; then
	ok "tls-front builds with -Wall -Wextra -Werror"
else
	notok "tls-front builds with -Wall -Wextra -Werror" "$out"
	finish
fi
if command -v cppcheck >/dev/null; then
	if out=$(make -C "$TF" -s cppcheck 2>&1); then
		ok "cppcheck finds nothing in tls-front.c"
	else
		notok "cppcheck finds nothing in tls-front.c" "$out"
	fi
else
	skip "cppcheck finds nothing in tls-front.c" "no cppcheck"
fi
deps=$(ldd "$FRONT" | awk '{print $1}' | grep -Ev \
	'^(linux-vdso|/lib64/ld-linux)|^lib(c|pthread|gnutls)\.so' |
	tr '\n' ' ')
# gnutls's own dependencies are allowed; tls-front itself links only these
direct=$(readelf -d "$FRONT" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' |
	grep -Ev '^lib(c|pthread|gnutls)\.so' | tr '\n' ' ')
if [ -z "$direct" ]; then
	ok "tls-front links only libc, pthread and gnutls"
else
	notok "tls-front links only libc, pthread and gnutls" "extra: $direct" \
		"(all: $deps)"
fi

# ------------------------------------------------------------ certificates

C=$T/certs
all_files() {
	local f
	for f in ca.pem ca-key.pem other-ca.pem server.pem server-key.pem \
		server-expired.pem server-wrongname.pem server-untrusted.pem \
		client.pem client-key.pem client-other.pem client-other-key.pem \
		psk.txt server-chain100.pem server-chain100-key.pem; do
		[ -s "$C/$f" ] || return 1
	done
}
if out=$(timeout 30 "$TESTS/certs/mkcerts.sh" "$C" 2>&1) && all_files &&
	grep -Eq '^tlsh-test:[0-9a-f]{64}$' "$C/psk.txt" &&
	certtool -i --infile "$C/server.pem" | grep -q 'DNSname: server.test' &&
	certtool -i --infile "$C/server.pem" | grep -q 'IPAddress: 2001:db8::1' &&
	certtool --verify --load-ca-certificate "$C/ca.pem" \
		--infile "$C/server.pem" 2>&1 | grep -q 'Verified' &&
	certtool --verify --load-ca-certificate "$C/ca.pem" \
		--infile "$C/server-expired.pem" 2>&1 | grep -q 'expired' &&
	! certtool --verify --load-ca-certificate "$C/ca.pem" \
		--infile "$C/server-untrusted.pem" 2>&1 | grep -q 'Verified\.'; then
	ok "mkcerts.sh makes the CA, server, client and PSK files"
else
	notok "mkcerts.sh makes the CA, server, client and PSK files" "$out"
	finish
fi
sum1=$(cat "$C"/*.pem "$C/psk.txt" | md5sum)
timeout 30 "$TESTS/certs/mkcerts.sh" "$C" >/dev/null 2>&1
sum2=$(cat "$C"/*.pem "$C/psk.txt" | md5sum)
if [ "$sum1" = "$sum2" ]; then
	ok "mkcerts.sh is idempotent"
else
	notok "mkcerts.sh is idempotent" "files changed on the second run"
fi

# ------------------------------------------------------------ arguments

args_ok=1
args_msg=()
# expect_usage_error MESSAGE-ERE ARGS...
expect_usage_error() {
	local re=$1 out rc
	shift
	out=$(timeout 5 "$FRONT" "$@" 2>&1)
	rc=$?
	if [ $rc -ne 2 ] || ! grep -Eq -- "$re" <<<"$out"; then
		args_ok=0
		args_msg+=("'$*': rc=$rc: $out")
	fi
}
B=127.0.0.1:9
CK=(--cert "$C/server.pem" --key "$C/server-key.pem")
expect_usage_error 'listen.*required' --backend $B "${CK[@]}"
expect_usage_error 'backend.*required' --listen 127.0.0.1:0 "${CK[@]}"
expect_usage_error 'need --cert' --listen 127.0.0.1:0 --backend $B
expect_usage_error 'bad port' --listen 127.0.0.1:99999 --backend $B "${CK[@]}"
expect_usage_error 'needs brackets' --listen ::1:5 --backend $B "${CK[@]}"
expect_usage_error 'numeric' --listen nohost:5 --backend $B "${CK[@]}"
expect_usage_error 'needs --ca' --listen 127.0.0.1:0 --backend $B "${CK[@]}" \
	--require-client-cert
expect_usage_error 'unknown mode' --listen 127.0.0.1:0 --backend $B \
	"${CK[@]}" --probe-reply=bogus
expect_usage_error 'exclude each other' --listen 127.0.0.1:0 --backend $B \
	"${CK[@]}" --no-tls --stall-handshake
expect_usage_error 'needs --hostile-record' --listen 127.0.0.1:0 --backend $B \
	"${CK[@]}" --hostile-after=5
expect_usage_error 'unknown record' --listen 127.0.0.1:0 --backend $B \
	"${CK[@]}" --hostile-record=huge
expect_usage_error 'exclude each other' --listen 127.0.0.1:0 --backend $B \
	"${CK[@]}" --hostile-record=badtype --close-handshake
expect_usage_error 'not a number' --listen 127.0.0.1:0 --backend $B \
	"${CK[@]}" --drop-after=12x
expect_usage_error 'No such file' --listen 127.0.0.1:0 --backend $B \
	--cert /nonexistent --key /nonexistent
printf 'tlsh-test:00zz\n' >"$T/bad.psk"
expect_usage_error 'non-hex' --listen 127.0.0.1:0 --backend $B \
	--psk-file "$T/bad.psk"
if ! timeout 5 "$FRONT" --help | grep -q -- '--key-update-after'; then
	args_ok=0
	args_msg+=("--help lacks the misbehaviour switches")
fi
if [ $args_ok -eq 1 ]; then
	ok "bad arguments are refused with a clear message (exit 2)"
else
	notok "bad arguments are refused with a clear message (exit 2)" \
		"${args_msg[@]}"
fi

# ------------------------------------------------------------ backend

timeout 150 python3 "$RPCTEST" backend --port-file "$T/backend.port" \
	--lifetime 140 2>"$T/backend.err" &
PIDS+=("$!")
if ! wait_file "$T/backend.port"; then
	notok "fake RPC backend starts" "$(cat "$T/backend.err")"
	finish
fi
BPORT=$(cat "$T/backend.port")

CA=(--ca "$C/ca.pem")

# ------------------------------------------------------------ basic

front basic -v
if rpc client --port "$PORT" --calls 3 && wait_log basic 'probe=plain .*c2b=132 b2c=84'; then
	ok "plain RPC calls are relayed to the backend (--plain-ok default)"
else
	notok "plain RPC calls are relayed to the backend (--plain-ok default)" \
		"$OUT" "$(lastlog basic)"
fi

if rpc client --port "$PORT" --probe --expect-probe starttls --calls 0; then
	ok "AUTH_TLS probe gets MSG_ACCEPTED with the STARTTLS verifier"
else
	notok "AUTH_TLS probe gets MSG_ACCEPTED with the STARTTLS verifier" "$OUT"
fi

if rpc client --port "$PORT" --probe --tls "${CA[@]}" --name server.test \
	--calls 3 && grep -q 'version=TLSv1.3' <<<"$OUT" &&
	wait_log basic 'probe=starttls tls=ok version=TLS1.3 .*sni=server.test c2b=132 b2c=84'; then
	ok "TLS 1.3 handshake (CA, server.test) and NULL calls inside TLS"
else
	notok "TLS 1.3 handshake (CA, server.test) and NULL calls inside TLS" \
		"$OUT" "$(lastlog basic)"
fi

if rpc client --port "$PORT" --probe --probe-frag 7 --expect-probe starttls \
	--tls "${CA[@]}" --calls 2 && wait_log basic 'probe=starttls tls=ok .*c2b=88 b2c=56'; then
	ok "a probe in 7-byte fragments, sent in pieces, then TLS on the same socket"
else
	notok "a probe in 7-byte fragments, sent in pieces, then TLS on the same socket" \
		"$OUT" "$(lastlog basic)"
fi

if rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 4 --pipeline 8 &&
	grep -q 'calls_ok=32' <<<"$OUT"; then
	ok "pipelined calls inside TLS all answered in order"
else
	notok "pipelined calls inside TLS all answered in order" "$OUT"
fi

if rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 2 \
	--echo 300000 --frag 7000 --pipeline 2; then
	ok "300 kB fragmented records pass both ways intact inside TLS"
else
	notok "300 kB fragmented records pass both ways intact inside TLS" "$OUT"
fi

if rpc client --port "$PORT" --calls 2 --echo 100000 --frag 999; then
	ok "fragmented large records pass intact in plaintext"
else
	notok "fragmented large records pass intact in plaintext" "$OUT"
fi

if rpc client --port "$PORT" --probe --tls "${CA[@]}" --tls-max TLSv1_2 \
	--calls 2 && grep -q 'version=TLSv1.2' <<<"$OUT" &&
	wait_log basic 'tls=ok version=TLS1.2 cipher=AES-256-GCM'; then
	ok "TLS 1.2 handshake works too"
else
	notok "TLS 1.2 handshake works too" "$OUT" "$(lastlog basic)"
fi

cipher_ok=1
cipher_msg=()
for c in CHACHA20-POLY1305 AES-128-CCM AES-128-GCM; do
	for v in TLS1.3 TLS1.2; do
		if ! rpc gnutls-cli --port "$PORT" "${CA[@]}" \
			--priority "NORMAL:-VERS-ALL:+VERS-$v:-CIPHER-ALL:+$c" ||
			! wait_log basic "version=$v cipher=$c "; then
			cipher_ok=0
			cipher_msg+=("$v $c: $OUT")
		fi
	done
done
if [ $cipher_ok -eq 1 ]; then
	ok "ChaCha20-Poly1305, AES-128-CCM, AES-128-GCM with TLS 1.3 and 1.2 (gnutls-cli)"
else
	notok "ChaCha20-Poly1305, AES-128-CCM, AES-128-GCM with TLS 1.3 and 1.2 (gnutls-cli)" \
		"${cipher_msg[@]}"
fi

if ! rpc client --port "$PORT" --probe --tls "${CA[@]}" --name wrong.test \
	--calls 1 && grep -q 'handshake=failed' <<<"$OUT"; then
	ok "the client rejects the certificate for a wrong name"
else
	notok "the client rejects the certificate for a wrong name" "$OUT"
fi

bad_ok=1
bad_msg=()
for cert in server-expired server-untrusted server-wrongname; do
	front "$cert" --cert "$C/$cert.pem" --key "$C/$cert-key.pem"
	if rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 1 ||
		! grep -q 'handshake=failed' <<<"$OUT"; then
		bad_ok=0
		bad_msg+=("$cert: $OUT")
	fi
done
if [ $bad_ok -eq 1 ]; then
	ok "expired, untrusted and wrong-name server certificates are refused by a verifying client"
else
	notok "expired, untrusted and wrong-name server certificates are refused by a verifying client" \
		"${bad_msg[@]}"
fi

if python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null; then
	if front v6 --v6 &&
		rpc client --host ::1 --port "$PORT" --probe --tls "${CA[@]}" \
			--calls 2 && wait_log v6 'peer=\[::1\]:[0-9]+ probe=starttls tls=ok'; then
		ok "IPv6 listener ([::1]:port) works"
	else
		notok "IPv6 listener ([::1]:port) works" "$OUT" "$(cat "$T/v6.err")"
	fi
else
	skip "IPv6 listener ([::1]:port) works" "no ::1"
fi

# ------------------------------------------------------------ modes

front notls --no-tls
if rpc client --port "$PORT" --probe --expect-probe denied-1-1 --calls 2 &&
	wait_log notls 'probe=forwarded c2b=132'; then
	ok "--no-tls: the probe reaches the backend (AUTH_BADCRED), no STARTTLS, plaintext works"
else
	notok "--no-tls: the probe reaches the backend (AUTH_BADCRED), no STARTTLS, plaintext works" \
		"$OUT" "$(lastlog notls)"
fi

front tlsonly --tls-only
if rpc client --port "$PORT" --expect-close --send-null &&
	wait_log tlsonly 'probe=plain .*close="tls-only'; then
	ok "--tls-only closes a plaintext connection"
else
	notok "--tls-only closes a plaintext connection" "$OUT" "$(lastlog tlsonly)"
fi
if rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 2; then
	ok "--tls-only still serves TLS clients"
else
	notok "--tls-only still serves TLS clients" "$OUT"
fi

front tls12 --tls12-only
if rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 1 &&
	grep -q 'version=TLSv1.2' <<<"$OUT" &&
	! rpc client --port "$PORT" --probe --tls "${CA[@]}" --tls-min TLSv1_3 --calls 1; then
	ok "--tls12-only negotiates TLS 1.2 and refuses a TLS 1.3-only client"
else
	notok "--tls12-only negotiates TLS 1.2 and refuses a TLS 1.3-only client" "$OUT"
fi

front mtls "${CA[@]}" --require-client-cert
if ! rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 1 &&
	wait_log mtls 'client_verify="no client certificate"'; then
	ok "--require-client-cert rejects a client without a certificate"
else
	notok "--require-client-cert rejects a client without a certificate" \
		"$OUT" "$(lastlog mtls)"
fi
if rpc client --port "$PORT" --probe --tls "${CA[@]}" --cert "$C/client.pem" \
	--key "$C/client-key.pem" --calls 2 &&
	wait_log mtls 'client_cert="CN=tlsh-client,O=tlsh tests" client_verify="ok"'; then
	ok "--require-client-cert accepts a client certificate signed by the CA"
else
	notok "--require-client-cert accepts a client certificate signed by the CA" \
		"$OUT" "$(lastlog mtls)"
fi
if ! rpc client --port "$PORT" --probe --tls "${CA[@]}" \
	--cert "$C/client-other.pem" --key "$C/client-other-key.pem" --calls 1 &&
	wait_log mtls 'client_verify="rejected'; then
	ok "--require-client-cert rejects a client certificate from another CA"
else
	notok "--require-client-cert rejects a client certificate from another CA" \
		"$OUT" "$(lastlog mtls)"
fi

front psk --psk-only --psk-file "$C/psk.txt"
if rpc gnutls-cli --port "$PORT" --psk-id tlsh-test --psk-key "$(cat "$C/psk.key")" \
	--priority 'NORMAL:-KX-ALL:+ECDHE-PSK:+DHE-PSK' &&
	wait_log psk 'tls=ok version=TLS1.3 .*kx=(ECDHE|DHE)-PSK .*psk=tlsh-test c2b=44 b2c=28'; then
	ok "--psk-file: TLS 1.3 PSK-DHE handshake (gnutls-cli) and a call inside it"
else
	notok "--psk-file: TLS 1.3 PSK-DHE handshake (gnutls-cli) and a call inside it" \
		"$OUT" "$(lastlog psk)"
fi
if ! rpc gnutls-cli --port "$PORT" --psk-id tlsh-test \
	--psk-key 00112233445566778899aabbccddeeff \
	--priority 'NORMAL:-KX-ALL:+ECDHE-PSK:+DHE-PSK' &&
	wait_log psk 'tls=failed'; then
	ok "--psk-file: a wrong key is refused"
else
	notok "--psk-file: a wrong key is refused" "$OUT" "$(lastlog psk)"
fi

front tickets --session-tickets=2
if rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 3 --expect-ticket &&
	wait_log tickets 'tls=ok .*tickets=2 c2b=132 b2c=84'; then
	ok "--session-tickets=2: tickets arrive, the relay keeps working"
else
	notok "--session-tickets=2: tickets arrive, the relay keeps working" \
		"$OUT" "$(lastlog tickets)"
fi

front keyupd --key-update-after=30
if rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 6 &&
	wait_log keyupd 'key_update=sent c2b=264 b2c=168'; then
	ok "--key-update-after=30: the client survives a KeyUpdate mid-reply"
else
	notok "--key-update-after=30: the client survives a KeyUpdate mid-reply" \
		"$OUT" "$(lastlog keyupd)"
fi

front alert --alert-after=60
if ! rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 5 &&
	grep -qi 'alert' <<<"$OUT" && wait_log alert 'b2c=60 .*close="alert-after'; then
	ok "--alert-after=60: a fatal alert after exactly 60 bytes"
else
	notok "--alert-after=60: a fatal alert after exactly 60 bytes" \
		"$OUT" "$(lastlog alert)"
fi

front dropn --drop-after=100
if ! rpc client --port "$PORT" --calls 5 && grep -Eq 'EOF|reset' <<<"$OUT" &&
	wait_log dropn 'c2b=100 .*close="drop-after'; then
	ok "--drop-after=100: the connection is closed after 100 client bytes"
else
	notok "--drop-after=100: the connection is closed after 100 client bytes" \
		"$OUT" "$(lastlog dropn)"
fi

front dropt --drop-every=0.5 --drop-rst
t0=$(date +%s%N)
if ! rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 50 --pause 0.05 &&
	wait_log dropt 'close="drop-every"'; then
	ms=$((($(date +%s%N) - t0) / 1000000))
	if [ $ms -ge 400 ] && [ $ms -lt 4000 ]; then
		ok "--drop-every=0.5: the connection is dropped after about 0.5 s"
	else
		notok "--drop-every=0.5: the connection is dropped after about 0.5 s" "after $ms ms"
	fi
else
	notok "--drop-every=0.5: the connection is dropped after about 0.5 s" \
		"$OUT" "$(lastlog dropt)"
fi

front noanswer --never-answer-probe
if rpc client --port "$PORT" --probe --timeout 1 --calls 0 &&
	grep -q 'probe=no-reply(timeout)' <<<"$OUT" &&
	wait_log noanswer 'probe=unanswered .*close="client closed while stalling'; then
	ok "--never-answer-probe: the probe gets no answer"
else
	notok "--never-answer-probe: the probe gets no answer" "$OUT" "$(lastlog noanswer)"
fi

front badverf --probe-reply=badverf
if rpc client --port "$PORT" --probe --expect-probe accepted-verf0-len8 --calls 1 &&
	wait_log badverf 'probe=badverf '; then
	ok "--probe-reply=badverf: wrong verifier body, then plaintext relay"
else
	notok "--probe-reply=badverf: wrong verifier body, then plaintext relay" \
		"$OUT" "$(lastlog badverf)"
fi

front stall --stall-handshake
if ! rpc client --port "$PORT" --probe --expect-probe starttls --tls "${CA[@]}" \
	--timeout 1 && grep -qi 'timed out' <<<"$OUT" &&
	wait_log stall 'tls=stalled'; then
	ok "--stall-handshake: STARTTLS, then the ClientHello is never answered"
else
	notok "--stall-handshake: STARTTLS, then the ClientHello is never answered" \
		"$OUT" "$(lastlog stall)"
fi

front closehs --close-handshake
if ! rpc client --port "$PORT" --probe --expect-probe starttls --tls "${CA[@]}" \
	--timeout 3 && ! grep -qi 'timed out' <<<"$OUT" &&
	wait_log closehs 'tls=closed-after-clienthello'; then
	ok "--close-handshake: the connection closes after the ClientHello"
else
	notok "--close-handshake: the connection closes after the ClientHello" \
		"$OUT" "$(lastlog closehs)"
fi

front garbage --garbage-after-starttls
if ! rpc client --port "$PORT" --probe --expect-probe starttls --tls "${CA[@]}" \
	--timeout 3 && grep -q 'handshake=failed' <<<"$OUT" &&
	! grep -qi 'timed out' <<<"$OUT" && wait_log garbage 'tls=garbage-sent'; then
	ok "--garbage-after-starttls: the client's handshake fails on non-TLS bytes"
else
	notok "--garbage-after-starttls: the client's handshake fails on non-TLS bytes" \
		"$OUT" "$(lastlog garbage)"
fi

for hr in oversized badtype; do
	front "hr$hr" --hostile-record=$hr
	if ! rpc client --port "$PORT" --probe --expect-probe starttls --tls "${CA[@]}" \
		--timeout 5 && grep -q 'handshake=failed' <<<"$OUT" &&
		! grep -qi 'timed out' <<<"$OUT" &&
		wait_log "hr$hr" "hostile=$hr-sent .*close=\"hostile-record"; then
		ok "--hostile-record=$hr: the client's handshake fails at once"
	else
		notok "--hostile-record=$hr: the client's handshake fails at once" \
			"$OUT" "$(lastlog "hr$hr")"
	fi
	front "ha$hr" --hostile-record=$hr --hostile-after=60
	if ! rpc client --port "$PORT" --probe --tls "${CA[@]}" --calls 5 --timeout 5 &&
		! grep -qi 'timed out' <<<"$OUT" &&
		wait_log "ha$hr" "tls=ok .*hostile=$hr-sent .*b2c=60 .*close=\"hostile-after"; then
		ok "--hostile-record=$hr --hostile-after=60: the record follows 60 good bytes"
	else
		notok "--hostile-record=$hr --hostile-after=60: the record follows 60 good bytes" \
			"$OUT" "$(lastlog "ha$hr")"
	fi
done

# ------------------------------------------------------------ concurrency

front many
many_pid=$FRONT_PID
# a client stalled inside its first record, and one stalled before TLS
timeout 15 python3 -c '
import socket, struct, sys, time
a = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
a.sendall(b"\x80\x00")
b = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
b.sendall(struct.pack(">11I", 0x80000028, 1, 0, 2, 100003, 4, 0, 7, 0, 0, 0))
b.recv(64)
time.sleep(12)' "$PORT" &
stall_pid=$!
PIDS+=("$stall_pid")
sleep 0.3
cpids=()
for i in $(seq 12); do
	timeout 20 python3 "$RPCTEST" client --port "$PORT" --probe --tls \
		"${CA[@]}" --calls 5 --pipeline 4 >"$T/many.$i" 2>&1 &
	cpids+=("$!")
done
good=0
for p in "${cpids[@]}"; do
	wait "$p" && good=$((good + 1))
done
# the front logs a connection when it ends, which may be after the client
for _ in $(seq 100); do
	[ "$(grep -c 'probe=starttls tls=ok .*c2b=880 b2c=560' "$T/many.log")" -ge 12 ] && break
	sleep 0.1
done
if [ $good -eq 12 ] && [ "$(grep -c 'probe=starttls tls=ok .*c2b=880 b2c=560' "$T/many.log")" -eq 12 ]; then
	ok "12 concurrent TLS clients served while two other clients stall"
else
	notok "12 concurrent TLS clients served while two other clients stall" \
		"$good of 12 succeeded" "$(cat "$T"/many.[0-9]* | sort | uniq -c | head -5)"
fi

# SIGTERM with the two stalled connections still open
kill -TERM "$many_pid"
t0=$(date +%s%N)
wait "$many_pid"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ $rc -eq 0 ] && [ $ms -lt 3000 ] && wait_log many 'close="sigterm"' &&
	wait_log many 'stopping'; then
	ok "SIGTERM ends tls-front cleanly (exit 0, open connections closed)"
else
	notok "SIGTERM ends tls-front cleanly (exit 0, open connections closed)" \
		"rc=$rc after $ms ms" "$(tail -3 "$T/many.log")"
fi
kill "$stall_pid" 2>/dev/null

finish
