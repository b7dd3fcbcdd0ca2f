#!/bin/bash
# Host-side unit tests of the handshake agent (handshake-helper/).
#
# Builds tlsh-helper and the C unit tests (linked against the helper's
# object files), makes a throw-away PKI with certtool, starts gnutls-serv
# echo servers on 127.0.0.1 and runs tlsh-helper --connect against them.
# Runs in a private network namespace when unshare(1) allows, so the
# servers exist on a private loopback only.
#
# TAP: "ok N - name" / "not ok N - name"; the last line is
# "N passed, N failed, N skipped"; exit status 1 if anything failed.
# Loads no kernel module: the kTLS I/O check runs only where
# /sys/module/tls already exists and is skipped otherwise.
set -uo pipefail

if [ -z "${TLSH_UNIT_NETNS:-}" ] && unshare -n true 2>/dev/null; then
	export TLSH_UNIT_NETNS=1
	exec unshare -n "$0" "$@"
fi
if [ -n "${TLSH_UNIT_NETNS:-}" ]; then
	ip link set lo up 2>/dev/null
fi

top=$(cd "$(dirname "$0")/../.." && pwd)
H=$top/handshake-helper
U=$top/tests/unit
HELPER=$H/tlsh-helper
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsh-unit.XXXXXX")
pki=$tmp/pki
servers=()
t_start=$SECONDS

cleanup() {
	local p
	for p in "${servers[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

. "$top/tests/tap-lib.sh"
diag() { sed 's/^/# /'; }
finish() {
	echo "# $((SECONDS - t_start)) s"
	tap_summary
	exit $?
}

# relay_prog NAME CMD...: run a C test program, number its TAP lines
relay_prog() {
	local name=$1 line rc
	shift
	"$@" > "$tmp/relay.out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) tap ok "${line#ok - }" ;;
		"not ok - "*) tap "not ok" "${line#not ok - }" ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done < "$tmp/relay.out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok - ' "$tmp/relay.out"; then
		tap "not ok" "$name exited with status $rc"
	fi
}

# hs NAME [tlsh-helper args]: run tlsh-helper, output in $out, status in $rc
hs() {
	timeout 20 "$HELPER" "$@" > "$tmp/hs.out" 2>&1
	rc=$?
	out=$(cat "$tmp/hs.out")
}

# expect NAME STATUS PATTERN: the last hs run exited STATUS, output matches
expect() {
	if [ "$rc" = "$2" ] && grep -qE -- "$3" <<< "$out"; then
		tap ok "$1"
	else
		tap "not ok" "$1"
		echo "exit status $rc (wanted $2), wanted /$3/ in:" | diag
		diag <<< "$out"
	fi
}

# --- build --------------------------------------------------------------

if make -s -C "$H" tlsh-helper > "$tmp/build.log" 2>&1; then
	tap ok "tlsh-helper builds with -std=c11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE"
else
	tap "not ok" "tlsh-helper builds"
	diag < "$tmp/build.log"
	finish
fi
tcflags=$(make -s -C "$H" print-cflags)
tlibs=$(make -s -C "$H" print-libs)
objs=()
for o in "$H"/*.o; do
	case $(basename "$o") in main.o | fault-testing.o) ;; *) objs+=("$o") ;; esac
done
built=1
# -pthread: test_handshake's TLS server runs on a thread (the helper has none)
for t in config keyring handshake listener util; do
	# shellcheck disable=SC2086
	if ! cc $tcflags -pthread -I"$H" -o "$tmp/test_$t" "$U/test_$t.c" "${objs[@]}" $tlibs -pthread \
		>> "$tmp/build.log" 2>&1; then
		built=0
	fi
done
if [ $built = 1 ]; then
	tap ok "unit test programs build against the helper's objects"
else
	tap "not ok" "unit test programs build"
	diag < "$tmp/build.log"
fi
if make -s -C "$H" cppcheck > "$tmp/cppcheck.log" 2>&1 &&
	cppcheck --enable=warning,style,performance,portability --error-exitcode=1 \
		--inline-suppr --std=c11 -D_GNU_SOURCE --suppress=missingIncludeSystem \
		-q -I"$H" "$U"/*.c >> "$tmp/cppcheck.log" 2>&1; then
	tap ok "cppcheck is clean (helper and unit tests)"
else
	tap "not ok" "cppcheck is clean (helper and unit tests)"
	diag < "$tmp/cppcheck.log"
fi

# --- a throw-away PKI ---------------------------------------------------

mkpki() {
	mkdir -p "$pki" && cd "$pki" || return 1
	tmpl() { local f=$1; shift; printf '%s\n' "$@" > "$f"; }
	key() { certtool --generate-privkey --key-type ecdsa --outfile "$1"; }
	key ca.key && key other-ca.key && key srv.key && key other.key &&
		key expired.key && key client.key && key rpc.key &&
		key clieku.key || return 1
	tmpl ca.tmpl 'cn = "tlsh unit test CA"' ca cert_signing_key 'expiration_days = 2'
	tmpl other-ca.tmpl 'cn = "some other CA"' ca cert_signing_key 'expiration_days = 2'
	tmpl srv.tmpl 'cn = "server.test"' 'dns_name = "server.test"' \
		'ip_address = "127.0.0.1"' 'ip_address = "::1"' tls_www_server \
		signing_key encryption_key 'expiration_days = 2'
	tmpl expired.tmpl 'cn = "server.test"' 'dns_name = "server.test"' \
		'ip_address = "127.0.0.1"' tls_www_server signing_key \
		'activation_date = "2020-01-01 00:00:00"' \
		'expiration_date = "2020-12-31 00:00:00"'
	tmpl client.tmpl 'cn = "client.test"' tls_www_client signing_key \
		'expiration_days = 2'
	# RFC 9289: id-kp-rpcTLSServer in place of id-kp-serverAuth
	tmpl rpc.tmpl 'cn = "server.test"' 'dns_name = "server.test"' \
		'key_purpose_oid = 1.3.6.1.5.5.7.3.34' signing_key \
		'expiration_days = 2'
	# a client-only certificate presented by a server
	tmpl clieku.tmpl 'cn = "server.test"' 'dns_name = "server.test"' \
		tls_www_client signing_key 'expiration_days = 2'
	certtool --generate-self-signed --load-privkey ca.key --template ca.tmpl \
		--outfile ca.pem &&
	certtool --generate-self-signed --load-privkey other-ca.key \
		--template other-ca.tmpl --outfile other-ca.pem &&
	for c in srv expired client rpc clieku; do
		certtool --generate-certificate --load-privkey $c.key \
			--load-ca-certificate ca.pem --load-ca-privkey ca.key \
			--template $c.tmpl --outfile $c.pem || return 1
	done &&
	certtool --certificate-info --infile srv.pem --outder --outfile srv.der &&
	certtool --key-info --infile srv.key --outder --outfile srv.key.der &&
	certtool --to-p8 --load-privkey srv.key --password secret --outfile enc.key &&
	cat srv.pem ca.pem > chain.pem &&
	tmpl crl.tmpl 'crl_next_update = 2' 'crl_number = 1' &&
	certtool --generate-crl --load-ca-privkey ca.key --load-ca-certificate ca.pem \
		--load-certificate srv.pem --template crl.tmpl --outfile revoked.crl &&
	certtool --generate-crl --load-ca-privkey ca.key --load-ca-certificate ca.pem \
		--template crl.tmpl --outfile empty.crl &&
	psk1=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') &&
	psk2=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') &&
	printf 'client1:%s\n' "$psk1" > psk.txt &&
	printf 'other:%s\nclient1:%s\n' "$psk2" "$psk1" > psk2.txt &&
	printf 'client1:%s\n' "$psk2" > badpsk.txt
}
if (mkpki) > "$tmp/pki.log" 2>&1; then
	tap ok "throw-away CA, server, expired and client certificates (certtool)"
else
	tap "not ok" "throw-away PKI with certtool"
	diag < "$tmp/pki.log"
	finish
fi

printf '[global]\ntrust-store = %s\nhandshake-timeout = 5\n' "$pki/ca.pem" > "$tmp/good.conf"
printf '[global]\ntrust-store = %s\ntls12 = yes\nhandshake-timeout = 5\n' "$pki/ca.pem" > "$tmp/tls12.conf"
printf 'trust-store = %s\n' "$pki/other-ca.pem" > "$tmp/wrongca.conf"
printf 'trust-store = %s\nencryption-only = yes\n' "$pki/other-ca.pem" > "$tmp/enconly.conf"
printf '[global]\ntrust-store = system\n' > "$tmp/system.conf"
printf 'trust-store = %s\ncrl = %s\n' "$pki/ca.pem" "$pki/revoked.crl" > "$tmp/revoked.conf"
printf 'trust-store = %s\ncrl = %s\n' "$pki/ca.pem" "$pki/empty.crl" > "$tmp/emptycrl.conf"
printf '[global]\nbogus = 1\n' > "$tmp/bad.conf"

# --- C unit tests -------------------------------------------------------

if [ $built = 1 ]; then
	relay_prog test_config "$tmp/test_config" "$pki/ca.pem" "$H/tlsh-helper.conf"
	relay_prog test_keyring "$tmp/test_keyring" "$pki"
	relay_prog test_handshake "$tmp/test_handshake" "$pki"
	relay_prog test_listener "$tmp/test_listener"
	relay_prog test_util "$tmp/test_util"
fi

# --- gnutls-serv --------------------------------------------------------

# serve VAR ARGS...: start "gnutls-serv --echo ARGS" on a free port of
# 127.0.0.1, store the port in VAR
listening() {
	if command -v ss > /dev/null; then
		ss -ltnH "sport = :$1" 2> /dev/null | grep -q .
	else
		(exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null
	fi
}
serve() {
	local var=$1 port pid i try
	shift
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		listening "$port" && continue
		gnutls-serv --echo -q -p "$port" "$@" > "$tmp/serv-$port.log" 2>&1 &
		pid=$!
		for i in $(seq 50); do
			listening "$port" && break
			kill -0 "$pid" 2> /dev/null || break
			sleep 0.1
		done
		if listening "$port"; then
			servers+=("$pid")
			printf -v "$var" '%s' "$port"
			return 0
		fi
		kill "$pid" 2> /dev/null
		wait "$pid" 2> /dev/null
	done
	return 1
}

X="--x509certfile $pki/srv.pem --x509keyfile $pki/srv.key"
# shellcheck disable=SC2086
if serve P_X509 $X --priority NORMAL:+AES-128-CCM &&
	serve P_TLS12 $X --priority NORMAL:-VERS-TLS1.3:+AES-128-CCM &&
	serve P_MTLS $X -r --x509cafile "$pki/ca.pem" &&
	serve P_EXPIRED --x509certfile "$pki/expired.pem" --x509keyfile "$pki/expired.key" &&
	serve P_PSK --pskpasswd "$pki/psk.txt" --priority NORMAL:+ECDHE-PSK:+DHE-PSK:+PSK:+AES-128-CCM &&
	serve P_RPCEKU --x509certfile "$pki/rpc.pem" --x509keyfile "$pki/rpc.key" &&
	serve P_CLIEKU --x509certfile "$pki/clieku.pem" --x509keyfile "$pki/clieku.key" &&
	serve P_ALPN $X --alpn sunrpc --alpn-fatal; then
	tap ok "gnutls-serv echo servers listen on 127.0.0.1"
else
	tap "not ok" "gnutls-serv echo servers listen on 127.0.0.1"
	finish
fi
A=127.0.0.1

# --- command line and configuration -------------------------------------

hs --version
expect "--version" 0 '^tlsh-helper [0-9.]+ \(GnuTLS 3'
hs -h
expect "-h prints usage" 0 'usage: tlsh-helper -k SERIAL'
hs
expect "no mode: usage error" 2 'exactly one of -k SERIAL, -f or --connect'
hs -k 0
expect "-k 0 is refused" 2 'key serial must be a positive 32-bit decimal number'
hs -k 12abc
expect "-k 12abc is refused" 2 'key serial must be a positive'
hs -k 2147483648
expect "-k above INT32_MAX is refused" 2 'key serial must be a positive'
hs -f --connect $A:1
expect "two modes at once are refused" 2 'exactly one of'
hs -f --peername x
expect "--connect options without --connect are refused" 2 'go with --connect'
hs -c "$tmp/bad.conf" --connect $A:$P_X509
expect "malformed config: refuses to run, FILE:LINE: message" 2 "$tmp/bad.conf:2: unknown key 'bogus'"
hs -c "$tmp/none.conf" --connect $A:$P_X509
expect "a missing explicit config file is an error" 2 "$tmp/none.conf: cannot read: No such file or directory"
hs -c "$tmp/bad.conf" -f
expect "-f also refuses a malformed config" 2 "bad.conf:2: unknown key 'bogus'"
hs -c "$tmp/good.conf" -f
expect "-f without AF_TLSH in the kernel fails clearly" 1 'socket\(AF_TLSH\): .*kernel without AF_TLSH support'
hs -c "$tmp/good.conf" -k 2147483000
expect "-k for a key we have no authority over exits non-zero" 1 '^$'

# --- X.509 handshakes against gnutls-serv ------------------------------

hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername server.test --send hello
expect "trusted CA, peer name server.test: handshake and echo" 0 \
	'handshake ok: TLS1.3 (AES-128-GCM|AES-256-GCM|CHACHA20-POLY1305|AES-128-CCM)'
grep -q '^received: hello$' <<< "$out" && tap ok "data round-trips over the GnuTLS session" ||
	tap "not ok" "data round-trips over the GnuTLS session"
hs -c "$tmp/wrongca.conf" --connect $A:$P_X509 --peername server.test
expect "wrong CA: refused, 'not trusted: signer unknown'" 1 \
	'certificate for server.test not trusted: signer unknown'
# (without the alert, the server's log says "Error in the pull function")
grep -q 'A TLS fatal alert has been received' "$tmp/serv-$P_X509.log" &&
	tap ok "... and the server got a fatal alert, not a reset" ||
	{ tap "not ok" "... and the server got a fatal alert, not a reset"; diag < "$tmp/serv-$P_X509.log"; }
hs -c "$tmp/good.conf" --connect $A:$P_RPCEKU --peername server.test
expect "a server certificate for id-kp-rpcTLSServer (RFC 9289) only: accepted" 0 'handshake ok'
hs -c "$tmp/good.conf" --connect $A:$P_CLIEKU --peername server.test
expect "a server certificate for TLS clients only: refused, 'not a TLS server certificate'" 1 \
	'certificate for server.test not trusted: not a TLS server certificate'
hs -c "$tmp/good.conf" --connect $A:$P_ALPN --peername server.test --send alpn
expect "ALPN 'sunrpc' is offered (a server that insists on it accepts us)" 0 'received: alpn'
hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername other.test
expect "wrong peer name: refused, 'name does not match'" 1 \
	'certificate for other.test not trusted: name does not match'
hs -c "$tmp/good.conf" --connect $A:$P_X509
expect "no peer name: the IP address 127.0.0.1 is verified (IP SAN)" 0 'handshake ok'
hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername server.test.
expect "a peer name with a trailing dot" 0 'handshake ok'
if ip -6 addr show dev lo 2> /dev/null | grep -q '::1'; then
	hs -c "$tmp/good.conf" --connect "[::1]:$P_X509" --send v6
	expect "IPv6: [::1]:PORT verified against the IP SAN ::1" 0 'received: v6'
else
	tap ok "IPv6: [::1]:PORT verified against the IP SAN ::1 # SKIP no IPv6 loopback"
fi
hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername 127.0.0.2
expect "IP peer name not in the certificate: refused" 1 \
	'certificate for 127.0.0.2 not trusted: name does not match'
hs -c "$tmp/system.conf" --connect $A:$P_X509 --peername server.test
expect "system trust store does not know the test CA" 1 'not trusted: signer unknown'
hs -c "$tmp/enconly.conf" --connect $A:$P_X509 --peername server.test --send x
expect "encryption-only = yes: the wrong CA is accepted, with a warning" 0 \
	'warning: encryption-only = yes: server certificates are NOT verified'
hs -c "$tmp/good.conf" --connect $A:$P_EXPIRED --peername server.test
expect "expired server certificate: refused, 'expired'" 1 \
	'certificate for server.test not trusted: expired'
hs -c "$tmp/revoked.conf" --connect $A:$P_X509 --peername server.test
expect "CRL: a revoked server certificate is refused, 'revoked'" 1 \
	'certificate for server.test not trusted: revoked'
hs -c "$tmp/emptycrl.conf" --connect $A:$P_X509 --peername server.test
expect "CRL: a CRL that revokes nothing does not get in the way" 0 'handshake ok'
hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername 'bad name'
expect "a malformed peer name is refused" 2 'neither a DNS name nor an IP address'

for v in TLS1.3 TLS1.2; do
	for c in AES-128-GCM AES-256-GCM CHACHA20-POLY1305 AES-128-CCM; do
		hs -c "$tmp/tls12.conf" --connect $A:$P_X509 --peername server.test \
			--priorities "NORMAL:-VERS-ALL:+VERS-$v:-CIPHER-ALL:+$c" --send "$v-$c"
		expect "$v with $c negotiates and carries data" 0 "handshake ok: $v $c"
	done
done
hs -c "$tmp/tls12.conf" --connect $A:$P_TLS12 --peername server.test
expect "tls12 = yes, TLS1.2-only server: a kTLS-capable cipher" 0 \
	'handshake ok: TLS1.2 (AES-128-GCM|AES-256-GCM|CHACHA20-POLY1305|AES-128-CCM)$'
hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername server.test
expect "default config: TLS1.3 with a kTLS-capable cipher" 0 \
	'handshake ok: TLS1.3 (AES-128-GCM|AES-256-GCM|CHACHA20-POLY1305|AES-128-CCM)$'
hs -c "$tmp/good.conf" --connect $A:$P_TLS12 --peername server.test
expect "tls12 = no (default): a TLS1.2-only server is refused" 1 'handshake with .* failed'
# the built-in priorities are appended to the system's default, so the
# system's crypto policy applies (GnuTLS reads this file at start-up)
printf '[overrides]\ndisabled-version = tls1.3\n' > "$tmp/policy.conf"
GNUTLS_SYSTEM_PRIORITY_FILE=$tmp/policy.conf \
	hs -c "$tmp/tls12.conf" --connect $A:$P_X509 --peername server.test
expect "the system's crypto policy applies: TLS 1.3 disabled there gives TLS 1.2" 0 \
	'handshake ok: TLS1.2 '
GNUTLS_SYSTEM_PRIORITY_FILE=$tmp/policy.conf \
	hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername server.test
expect "... and with nothing left to offer the agent says so at start" 2 \
	"bad priority string .*on the system's default priorities"
hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername server.test \
	--priorities '-VERS-ALL'
expect "a request's modifiers-only string that leaves nothing: the reason names the system's default" 1 \
	"bad priority string.*on the system's default priorities"
hs -c "$tmp/tls12.conf" --connect $A:$P_TLS12 --peername server.test \
	--priorities 'NORMAL:-VERS-ALL:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-CBC'
expect "a negotiated cipher kTLS cannot take fails clearly" 1 \
	'negotiated cipher AES-128-CBC is not supported by kTLS'

hs -c "$tmp/good.conf" --connect $A:$P_MTLS --peername server.test \
	--cert-file "$pki/client.pem" --key-file "$pki/client.key" --send mtls
expect "mTLS: client certificate accepted by a server that requires one" 0 'received: mtls'
# TLS 1.3: the server's refusal arrives after the client's Finished. A
# verdict can only come on a certificate we sent: without one the helper
# does not wait (tlshd asks every client for one, and most go without), so
# the refusal is what the first receive gets
hs -c "$tmp/good.conf" --connect $A:$P_MTLS --peername server.test --send x
expect "mTLS: without a client certificate the handshake does not wait, and the server's refusal ends the first receive" 1 \
	'receive failed: A TLS fatal alert has been received'
hs -c "$tmp/good.conf" --connect $A:$P_MTLS --peername server.test \
	--cert-file "$pki/client.pem" --key-file "$pki/srv.key"
expect "mTLS: certificate and key that do not match are refused" 1 \
	'client certificate and private key do not match'

# --- PSK ----------------------------------------------------------------

hs -c "$tmp/good.conf" --connect $A:$P_PSK --psk-file "$pki/psk.txt" --send psk
expect "PSK handshake (TLS1.3) against gnutls-serv --pskpasswd" 0 \
	'handshake ok: TLS1.3 (AES-128-GCM|AES-256-GCM|CHACHA20-POLY1305|AES-128-CCM)'
hs -c "$tmp/tls12.conf" --connect $A:$P_PSK --psk-file "$pki/psk2.txt" --psk-identity client1 \
	--priorities 'NORMAL:-VERS-ALL:+VERS-TLS1.2:+ECDHE-PSK:+DHE-PSK:+PSK' --send psk12
expect "PSK handshake (TLS1.2), identity chosen from a psktool file" 0 'received: psk12'
hs -c "$tmp/good.conf" --connect $A:$P_PSK --psk-file "$pki/badpsk.txt"
expect "wrong PSK: a fatal alert, logged" 1 'failed: peer sent fatal alert'
grep -q "$(cut -d: -f2 "$pki/badpsk.txt")" <<< "$out" && tap "not ok" "PSKs never appear in the log" ||
	tap ok "PSKs never appear in the log"

# --- kTLS through the kernel ---------------------------------------------

if [ -d /sys/module/tls ]; then
	hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername server.test --ktls --send ktls
	expect "kTLS: keys installed, data round-trips through the kernel" 0 'received: ktls'
else
	tap ok "kTLS: keys installed, data round-trips through the kernel # SKIP /sys/module/tls does not exist (the tls module is not loaded, and is not loaded here)"
	hs -c "$tmp/good.conf" --connect $A:$P_X509 --peername server.test --ktls
	expect "--ktls refuses to load the tls module" 3 'kernel TLS is not available'
	[ -d /sys/module/tls ] && tap "not ok" "the tls module is still not loaded" ||
		tap ok "the tls module is still not loaded"
fi

finish
