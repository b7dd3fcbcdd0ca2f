#!/bin/bash
# Host-side unit tests of the handshake agent (handshake-helper/).
#
# Builds tlsh-helper and the C unit tests (linked against the helper's
# object files), makes a throw-away PKI with certtool, starts gnutls-serv
# echo servers on 127.0.0.1 and runs tlsh-helper --connect against them;
# then the server role: tlsh-helper --accept on 127.0.0.1 against
# gnutls-cli and --connect (PSKs from a keyring in a session keyring of
# its own, keyctl session).
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
		# one of our echo servers gone: what it said last
		local port
		port=$(sed -n 's/.*cannot connect to [^ ]*:\([0-9]*\): Connection refused.*/\1/p' <<< "$out")
		if [ -n "$port" ] && [ -f "$tmp/serv-$port.log" ]; then
			echo "the gnutls-serv of port $port is gone; its log:" | diag
			tail -n 20 "$tmp/serv-$port.log" | diag
		fi
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
		key clieku.key && key otherclient.key && key renewed.key &&
		key spiffe1.key && key spiffe1b.key && key spiffe2.key || return 1
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
	# a client of another CA (the server's role must refuse it)
	tmpl otherclient.tmpl 'cn = "other client"' tls_www_client signing_key \
		'expiration_days = 2'
	# RFC 9289: id-kp-rpcTLSServer in place of id-kp-serverAuth
	tmpl rpc.tmpl 'cn = "server.test"' 'dns_name = "server.test"' \
		'key_purpose_oid = 1.3.6.1.5.5.7.3.34' signing_key \
		'expiration_days = 2'
	# a client-only certificate presented by a server
	tmpl clieku.tmpl 'cn = "server.test"' 'dns_name = "server.test"' \
		tls_www_client signing_key 'expiration_days = 2'
	# clients named in subjectAltName only (an empty subject)
	tmpl spiffe1.tmpl 'uri = "spiffe://unit.test/client1"' tls_www_client \
		signing_key 'expiration_days = 2'
	tmpl spiffe2.tmpl 'uri = "spiffe://unit.test/client2"' tls_www_client \
		signing_key 'expiration_days = 2'
	certtool --generate-self-signed --load-privkey ca.key --template ca.tmpl \
		--outfile ca.pem &&
	certtool --generate-self-signed --load-privkey other-ca.key \
		--template other-ca.tmpl --outfile other-ca.pem &&
	for c in srv expired client rpc clieku; do
		certtool --generate-certificate --load-privkey $c.key \
			--load-ca-certificate ca.pem --load-ca-privkey ca.key \
			--template $c.tmpl --outfile $c.pem || return 1
	done &&
	certtool --generate-certificate --load-privkey otherclient.key \
		--load-ca-certificate other-ca.pem --load-ca-privkey other-ca.key \
		--template otherclient.tmpl --outfile otherclient.pem &&
	# client.pem renewed: the same names, a new key and serial number
	certtool --generate-certificate --load-privkey renewed.key \
		--load-ca-certificate ca.pem --load-ca-privkey ca.key \
		--template client.tmpl --outfile client-renewed.pem &&
	# spiffe1b: spiffe1 renewed (a new key and serial number)
	for c in spiffe1:spiffe1 spiffe1b:spiffe1 spiffe2:spiffe2; do
		certtool --generate-certificate --load-privkey ${c%:*}.key \
			--load-ca-certificate ca.pem --load-ca-privkey ca.key \
			--template ${c#*:}.tmpl --outfile ${c%:*}.pem &&
		certtool --certificate-info --infile ${c%:*}.pem --outder \
			--outfile ${c%:*}.der || return 1
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

# listening PORT: something listens on 127.0.0.1:PORT (IPv4: the tests
# connect to 127.0.0.1; gnutls-serv also listens on ::, and goes on with
# that alone when the IPv4 bind fails)
listening() {
	if command -v ss > /dev/null; then
		ss -4ltnH "sport = :$1" 2> /dev/null | grep -q .
	else
		(exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null
	fi
}
# serve VAR ARGS...: start "gnutls-serv --echo ARGS" on a free port of
# 127.0.0.1, store the port in VAR
serve() {
	local var=$1 port pid i try
	shift
	for try in 1 2 3 4 5; do
		# below the ephemeral range (32768-60999): a port that an
		# earlier test's connection used as its own (still in TIME_WAIT)
		# makes the IPv4 bind fail with EADDRINUSE
		port=$((20000 + RANDOM % 12000))
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
expect "no mode: usage error" 2 'exactly one of -k SERIAL, -f, --connect or --accept'
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
	'certificate and private key do not match'

# --- PSK ----------------------------------------------------------------

hs -c "$tmp/good.conf" --connect $A:$P_PSK --psk-file "$pki/psk.txt" --send psk
expect "PSK handshake (TLS1.3) against gnutls-serv --pskpasswd" 0 \
	'handshake ok: TLS1.3 (AES-128-GCM|AES-256-GCM|CHACHA20-POLY1305|AES-128-CCM)'
hs -c "$tmp/tls12.conf" --connect $A:$P_PSK --psk-file "$pki/psk2.txt" --psk-identity client1 \
	--priorities 'NORMAL:-VERS-ALL:+VERS-TLS1.2:+ECDHE-PSK:+DHE-PSK:+PSK' --send psk12
expect "PSK handshake (TLS1.2), identity chosen from a psktool file" 0 'received: psk12'
hs -c "$tmp/good.conf" --connect $A:$P_PSK --psk-file "$pki/badpsk.txt"
expect "wrong PSK: a fatal alert, logged, and what it means" 1 \
	"failed: the server refused PSK identity '[^']*': it has no key for it, or another key \\(peer sent fatal alert: "
grep -q "$(cut -d: -f2 "$pki/badpsk.txt")" <<< "$out" && tap "not ok" "PSKs never appear in the log" ||
	tap ok "PSKs never appear in the log"

# --- the server role: --accept ------------------------------------------

# accept_start ARGS...: "tlsh-helper --accept 127.0.0.1:0 ARGS" in the
# background; its port in $aport once it listens (1: it never did)
accept_start() {
	local i
	timeout 60 "$HELPER" --accept 127.0.0.1:0 -i 20 "$@" > "$tmp/accept.out" 2>&1 &
	apid=$!
	aport=
	for i in $(seq 200); do
		aport=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/accept.out")
		[ -n "$aport" ] && return 0
		kill -0 "$apid" 2> /dev/null || break
		sleep 0.1
	done
	return 1
}
# accept_wait: its exit status in $arc, its output in $aout
accept_wait() {
	wait "$apid"
	arc=$?
	aout=$(cat "$tmp/accept.out")
}
# accept_expect NAME STATUS PATTERN: as expect, for the --accept side
accept_expect() {
	if [ "$arc" = "$2" ] && grep -qE -- "$3" <<< "$aout"; then
		tap ok "$1"
	else
		tap "not ok" "$1"
		echo "--accept exit status $arc (wanted $2), wanted /$3/ in:" | diag
		diag <<< "$aout"
	fi
}
# pair NAME-OF-CONF [--accept args] -- [--connect args]: one --accept and
# one --connect against it, both with -c CONF; the client's output in
# $out/$rc, the server's in $aout/$arc
pair() {
	local conf=$1 sargs=()
	shift
	while [ "$1" != "--" ]; do sargs+=("$1"); shift; done
	shift
	if ! accept_start -c "$conf" "${sargs[@]}"; then
		accept_wait
		rc=none out="--accept did not listen"
		return
	fi
	hs -c "$conf" --connect "$A:$aport" --peername server.test "$@"
	accept_wait
}
# cli_pair ARGS... -- INPUT CLI-ARGS...: "--accept ARGS" serving one
# gnutls-cli (trusting the test CA, CLI-ARGS added) that sends INPUT;
# gnutls-cli's output in $out and status in $rc, the agent's as accept_wait
cli_pair() {
	local sargs=() input
	while [ "$1" != "--" ]; do sargs+=("$1"); shift; done
	shift
	input=$1
	shift
	if accept_start "${sargs[@]}"; then
		out=$(echo "$input" | timeout 20 gnutls-cli --x509cafile "$pki/ca.pem" \
			-p "$aport" "$A" "$@" 2>&1)
		rc=$?
	else
		out="--accept did not listen" rc=none
	fi
	accept_wait
}

S="server-certificate = $pki/srv.pem
server-private-key = $pki/srv.key
trust-store = $pki/ca.pem
handshake-timeout = 5"
printf '%s\n' "$S" > "$tmp/srv.conf"
printf '%s\nclient-trust-store = %s\n' "$S" "$pki/ca.pem" > "$tmp/mtls.conf"
printf '%s\ntls12 = yes\n' "$S" > "$tmp/srv12.conf"
printf 'server-certificate = %s\nserver-private-key = %s\n' "$pki/srv.pem" "$pki/other.key" > "$tmp/mismatch.conf"
printf 'server-certificate = %s\nserver-private-key = %s\n' "$pki/srv.pem" "$pki/enc.key" > "$tmp/enckey.conf"
printf 'client-trust-store = %s\n' "$pki/psk.txt" > "$tmp/nocas.conf"
printf '%s\nserver-psk-keyring = tlsh-unit-no-such-ring\n' "$S" > "$tmp/noring.conf"
printf 'trust-store = %s\nserver-psk-keyring = tlsh-unit-no-such-ring\n' "$pki/ca.pem" > "$tmp/neither.conf"

hs -c "$tmp/good.conf" --accept $A:0
expect "--accept without a server certificate: the reason, ENOKEY for the kernel" 1 \
	"server handshake: no server certificate configured \(server-certificate in $tmp/good.conf\)"
grep -q '^status: ENOKEY$' <<< "$out" && tap ok "... status: ENOKEY" ||
	{ tap "not ok" "... status: ENOKEY"; diag <<< "$out"; }
hs -c "$tmp/mismatch.conf" --accept $A:0
expect "server-certificate and a server-private-key of another: refused at start, FILE:LINE" 2 \
	"mismatch.conf:2: server-private-key $pki/other.key: certificate and private key do not match"
hs -c "$tmp/enckey.conf" --accept $A:0
expect "an encrypted server-private-key: refused at start" 2 \
	"enckey.conf:2: server-private-key .*private key is encrypted"
hs -c "$tmp/nocas.conf" --accept $A:0
expect "a client-trust-store without certificates: refused at start, FILE:LINE" 2 \
	"nocas.conf:1: client-trust-store $pki/psk.txt: no PEM certificates in file"
hs -c "$tmp/srv.conf" --accept $A:0 --peername x
expect "--accept takes no --peername" 2 '--peername and --psk-identity go with --connect'
hs -c "$tmp/srv.conf" --accept $A:0 --psk --psk-file "$pki/psk.txt"
expect "--psk and --psk-file exclude each other" 2 'exclude each other'
hs -c "$tmp/srv.conf" --connect $A:1 --psk
expect "--psk goes with --accept only" 2 '--psk goes with --accept'
hs -c "$tmp/srv.conf" --accept 127.0.0.1:port
expect "--accept with a malformed address" 2 'expected \[ADDRESS:\]PORT'
hs -c "$tmp/noring.conf" --accept $A:0 --psk
expect "--accept --psk without the configured keyring: ENOKEY, the name and where it is set" 1 \
	"no key ring 'tlsh-unit-no-such-ring': Required key not available \(server-psk-keyring in $tmp/noring.conf\)"
hs -c "$tmp/neither.conf" --accept $A:0
expect "x509 server with neither a certificate nor the PSK keyring: ENOKEY, one line saying both are missing" 1 \
	"server handshake: no server certificate configured \(server-certificate in $tmp/neither.conf\), and no PSKs: no key ring 'tlsh-unit-no-such-ring': Required key not available \(server-psk-keyring in $tmp/neither.conf\)
status: ENOKEY"
hs -c "$tmp/srv.conf" --accept $A:0 --cert-file "$pki/srv.pem" --key-file "$pki/srv.key" --psk-file "$pki/psk.txt"
expect "--accept: a certificate and PSKs together only with --x509" 2 'go together only with --x509'
hs -c "$tmp/srv.conf" --connect $A:1 --x509
expect "--x509 goes with --accept only" 2 '--x509 goes with --accept'

# (a) TLS 1.3 with the server certificate, gnutls-cli as the client
cli_pair -c "$tmp/srv.conf" --send from-agent -- from-gnutls-cli
expect "gnutls-cli verifies the agent's server certificate and completes TLS 1.3" 0 \
	'Description: \(TLS1\.3-X\.509\)'
grep -q '^from-agent$' <<< "$out" && ! grep -q 'requested a certificate' <<< "$out" &&
	tap ok "... receives what --accept --send sent; without client-trust-store no certificate is asked for" ||
	{ tap "not ok" "... receives what --accept --send sent; no certificate is asked for"; diag <<< "$out"; }
accept_expect "--accept: TLS 1.3 with gnutls-cli, data both ways, the client unauthenticated" 0 \
	'handshake ok: TLS1\.3 .*
client: unauthenticated client
received: from-gnutls-cli'
pair "$tmp/srv.conf" --send world -- --send hello
expect "--connect against --accept: TLS 1.3, data both ways" 0 'received: world'
accept_expect "... and the server side received the client's" 0 'received: hello'

# (b) a client trust store: a client certificate of its CA is
# authenticated, one of another CA refused
dersum=$(certtool -i --infile "$pki/client.pem" --outder 2> /dev/null | sha256sum | cut -d' ' -f1)
# (no --send: a TLS 1.3 client that sent a certificate waits for the
# server's verdict, and takes data from the server first for a protocol
# error, as an RPC server never speaks first)
pair "$tmp/mtls.conf" -- --cert-file "$pki/client.pem" --key-file "$pki/client.key"
expect "mTLS server: the client with a certificate of the client trust store's CA completes" 0 'handshake ok: TLS1\.3'
accept_expect "... is authenticated by its subject, named by a key holding its certificate (tlsh:client:<sha256>)" 0 \
	"client: CN=client\.test \(identity key [0-9]+: tlsh:client:[0-9a-f]{64}\)"
sum=$(sed -n 's/.*identity key [0-9]*: tlsh:client:\([0-9a-f]*\)).*/\1/p' <<< "$aout")
if [ -n "$sum" ] && [ "$sum" != "$dersum" ]; then
	tap ok "... the key is described by the certificate's names, not by its bytes (not the SHA-256 of the DER)"
else
	tap "not ok" "... the key is described by the certificate's names, not by its bytes"
	echo "description digest '$sum', the DER's $dersum" | diag
fi
pair "$tmp/mtls.conf" -- --cert-file "$pki/client-renewed.pem" --key-file "$pki/renewed.key"
accept_expect "... a renewal of that certificate (the same names, a new key and serial number) names the same client" 0 \
	"client: CN=client\.test \(identity key [0-9]+: tlsh:client:$sum\)"
cli_pair -c "$tmp/mtls.conf" -- "" \
	--x509certfile "$pki/client.pem" --x509keyfile "$pki/client.key"
grep -q 'Server has requested a certificate' <<< "$out" &&
	tap ok "mTLS server: gnutls-cli is asked for a certificate" ||
	{ tap "not ok" "mTLS server: gnutls-cli is asked for a certificate"; diag <<< "$out"; }
accept_expect "... and its certificate authenticates it" 0 'client: CN=client\.test \(identity key'
pair "$tmp/mtls.conf" -- --cert-file "$pki/otherclient.pem" --key-file "$pki/otherclient.key"
accept_expect "mTLS server: a client certificate of another CA is refused with the reason" 1 \
	"server handshake with 127\.0\.0\.1:[0-9]+ failed: client certificate 'CN=other client' not trusted: signer unknown"
grep -q '^status: EKEYREJECTED$' <<< "$aout" && tap ok "... EKEYREJECTED for the kernel" ||
	{ tap "not ok" "... EKEYREJECTED for the kernel"; diag <<< "$aout"; }
expect "... and the client learns why (unknown_ca), not a reset" 1 'failed: peer sent fatal alert: CA is unknown'
pair "$tmp/mtls.conf" -- --cert-file "$pki/srv.pem" --key-file "$pki/srv.key"
accept_expect "mTLS server: a certificate for TLS servers only is not a client's: EKEYREJECTED" 1 \
	"not trusted: not a TLS client certificate
status: EKEYREJECTED"

# (c) no client certificate: accepted, not authenticated
pair "$tmp/mtls.conf" --send srv -- --send cli
expect "mTLS server: a client without a certificate completes" 0 'received: srv'
accept_expect "... as an unauthenticated client, without an identity key" 0 '^client: unauthenticated client$'

# TLS 1.2, where allowed
pair "$tmp/srv12.conf" -- --priorities 'NORMAL:-VERS-ALL:+VERS-TLS1.2'
accept_expect "tls12 = yes: a TLS 1.2 server handshake" 0 \
	'handshake ok: TLS1\.2 (AES-128-GCM|AES-256-GCM|CHACHA20-POLY1305|AES-128-CCM)$'
pair "$tmp/srv.conf" -- --priorities 'NORMAL:-VERS-ALL:+VERS-TLS1.2'
accept_expect "tls12 = no: a TLS 1.2 client is refused" 1 'server handshake with .* failed'

# (d) PSK: identities from a psktool file, or the configured keyring
pair "$tmp/srv.conf" --psk-file "$pki/psk2.txt" --send srv -- --psk-file "$pki/psk.txt" --send cli
expect "PSK server (--psk-file): the client with the identity's key completes" 0 'received: srv'
accept_expect "... and is named by its identity" 0 '^client: PSK identity client1$'
pair "$tmp/srv.conf" --psk-file "$pki/psk2.txt" -- --psk-file "$pki/badpsk.txt"
accept_expect "PSK server: the wrong key for a known identity: refused, EKEYREJECTED" 1 \
	"the client's key for PSK identity 'client1' does not match ours
status: EKEYREJECTED"
wrong_key_alert=$(sed -n 's/.*(peer sent fatal alert: \(.*\))$/\1/p' <<< "$out")
expect "... and the client is told by an alert" 1 "failed: the server refused PSK identity 'client1': .*\\(peer sent fatal alert: "
printf 'stranger:%s\n' "$(cut -d: -f2 "$pki/psk.txt")" > "$tmp/stranger.txt"
pair "$tmp/srv.conf" --psk-file "$pki/psk2.txt" -- --psk-file "$tmp/stranger.txt"
accept_expect "PSK server: an unknown identity: refused, EKEYREJECTED" 1 \
	"no PSK for identity 'stranger'
status: EKEYREJECTED"
# not unknown_psk_identity: a client must not learn which identities
# the server knows (psk_decoy() in server.c)
expect "... and the client is told what a wrong key gets (${wrong_key_alert:-no alert})" 1 \
	"failed: the server refused PSK identity 'stranger': .*\\(peer sent fatal alert: ${wrong_key_alert:-the wrong key got no alert}\\)\$"
grep -q "$(cut -d: -f2 "$pki/psk.txt")" "$tmp/accept.out" && tap "not ok" "PSKs never appear in the server's log" ||
	tap ok "PSKs never appear in the server's log"

# (e) an x509 server serves PSK clients too (knfsd always asks for x509:
# it cannot know what its client offers before the ClientHello); with
# --x509 --psk-file, the PSKs of a file as an x509 request's
pair "$tmp/srv.conf" --x509 --psk-file "$pki/psk2.txt" --send srv -- --psk-file "$pki/psk.txt" --send cli
expect "x509 server with PSKs: a PSK client completes, data both ways" 0 'received: srv'
accept_expect "... a PSK handshake, the client named by its PSK identity" 0 \
	'handshake ok: TLS1\.3 .*
client: PSK identity client1
received: cli'
cli_pair -c "$tmp/srv.conf" --x509 --psk-file "$pki/psk2.txt" --send from-agent -- from-gnutls-cli \
	--priority NORMAL:+ECDHE-PSK:+DHE-PSK:+PSK --pskusername client1 \
	--pskkey "$(cut -d: -f2 "$pki/psk.txt")"
expect "x509 server with PSKs: gnutls-cli offering a PSK gets a PSK handshake" 0 \
	"PSK authentication\. Connected as 'client1'"
grep -q '^from-agent$' <<< "$out" && ! grep -q 'Got a certificate list' <<< "$out" &&
	tap ok "... no server certificate sent, data both ways" ||
	{ tap "not ok" "... no server certificate sent, data both ways"; diag <<< "$out"; }
accept_expect "... the agent names the client by its PSK identity" 0 \
	'client: PSK identity client1
received: from-gnutls-cli'
cli_pair -c "$tmp/srv.conf" --x509 --psk-file "$pki/psk2.txt" --send from-agent -- from-gnutls-cli
expect "x509 server with PSKs: gnutls-cli without a PSK still verifies the server certificate (TLS 1.3 X.509)" 0 \
	'Description: \(TLS1\.3-X\.509\)-\(ECDHE'
accept_expect "... and is an unauthenticated client, as without PSKs" 0 \
	'client: unauthenticated client
received: from-gnutls-cli'
pair "$tmp/mtls.conf" --x509 --psk-file "$pki/psk2.txt" -- --cert-file "$pki/client.pem" --key-file "$pki/client.key"
accept_expect "x509 server with PSKs and a client trust store: a certificate client is verified and named by its certificate, as without PSKs" 0 \
	"client: CN=client\.test \(identity key [0-9]+: tlsh:client:$sum\)"
pair "$tmp/mtls.conf" --x509 --psk-file "$pki/psk2.txt" -- --psk-file "$pki/badpsk.txt"
accept_expect "x509 server with PSKs: the wrong key for a known identity: EKEYREJECTED, as for a PSK request" 1 \
	"the client's key for PSK identity 'client1' does not match ours
status: EKEYREJECTED"
pair "$tmp/srv12.conf" --x509 --psk-file "$pki/psk2.txt" -- --psk-file "$pki/psk.txt" \
	--priorities 'NORMAL:-VERS-ALL:+VERS-TLS1.2:+ECDHE-PSK:+DHE-PSK:+PSK'
accept_expect "x509 server with PSKs, tls12 = yes: a TLS 1.2 PSK client too" 0 \
	'handshake ok: TLS1\.2 .*
client: PSK identity client1'
# PSKs and no certificate: PSK clients only
pair "$tmp/good.conf" --x509 --psk-file "$pki/psk2.txt" --send srv -- --psk-file "$pki/psk.txt" --send cli
accept_expect "x509 server with PSKs and no certificate: a PSK client completes" 0 \
	'client: PSK identity client1
received: cli'
pair "$tmp/good.conf" --x509 --psk-file "$pki/psk2.txt" --
accept_expect "... a certificate client is refused with the reason" 1 \
	"failed: the client offered no PSK identity, and this server takes PSK clients only \(no server certificate\)
status: EPROTO"
# a certificate and no keyring: not an error, one debug line at most
pair "$tmp/srv.conf" -v --
if [ "$arc" = 0 ] && [ "$(grep -c 'PSK' <<< "$aout")" = 1 ] &&
	grep -q "x509 server: no PSK clients: no key ring 'tlsh-server-psk'" <<< "$aout"; then
	tap ok "x509 server with a certificate and no PSK keyring: serves, one debug line says so"
else
	tap "not ok" "x509 server with a certificate and no PSK keyring: serves, one debug line"
	diag <<< "$aout"
fi

# the keyring a PSK server finds by name (server-psk-keyring), in a
# session keyring of its own
if command -v keyctl > /dev/null && keyctl session - true > /dev/null 2>&1; then
	export HELPER tmp pki A
	export -f accept_start accept_wait pair hs
	relay_prog "PSK keyring" keyctl session - bash -c '
		ok() { echo "ok - $1"; }
		nok() { echo "not ok - $1"; printf "%s\n" "$2" | sed "s/^/# /"; }
		name=tlsh-unit-psk-$$
		ring=$(keyctl newring "$name" @s) &&
		key=$(keyctl padd user client1 "$ring" < "$pki/psk.txt") ||
			{ nok "a PSK keyring in a session keyring of its own"; exit 1; }
		printf "[global]\nserver-psk-keyring = %s\nhandshake-timeout = 5\n" "$name" > "$tmp/ring.conf"
		pair "$tmp/ring.conf" --psk --send srv -- --psk-file "$pki/psk.txt" --send cli
		[ "$rc" = 0 ] && grep -q "^client: PSK identity client1 (identity key $key)$" <<< "$aout" &&
			ok "PSK server (--psk): the identity is looked up in the configured keyring, its key names the client" ||
			nok "PSK server (--psk): the identity looked up in the configured keyring" "$aout"
		# failed NAME STATUS ERE [CLIENT-ERE]: the pair just run failed on
		# the server, its log matching ERE and (if not empty) telling
		# the kernel STATUS, the client output matching CLIENT-ERE
		failed() {
			if [ "$arc" = 1 ] && grep -qE -- "$3" <<< "$aout" &&
				{ [ -z "$2" ] || grep -q "^status: $2$" <<< "$aout"; } &&
				{ [ -z "${4:-}" ] || grep -qE -- "$4" <<< "$out"; }; then
				ok "$1"
			else
				nok "$1" "$aout
$out"
			fi
		}
		pair "$tmp/ring.conf" --psk -- --psk-file "$pki/badpsk.txt"
		failed "... the wrong key for it: EKEYREJECTED, naming the key" EKEYREJECTED \
			"PSK identity .client1. does not match key $key"
		pair "$tmp/ring.conf" --psk -- --psk-file "$tmp/stranger.txt"
		failed "... an identity without a key there: EKEYREJECTED, naming the keyring" EKEYREJECTED \
			"no PSK for identity .stranger. in key ring $ring"
		# the server failing, not the client: the key ring cannot be
		# searched (found by name through /proc/keys), or others could
		# change the key or the ring
		keyctl setperm "$ring" 0x37210000
		pair "$tmp/ring.conf" --psk -- --psk-file "$pki/psk.txt"
		failed "... a key ring the agent cannot search: EACCES (not EKEYREJECTED), the client told internal_error" EACCES \
			"cannot search key ring $ring for identity .client1.: Permission denied" \
			"peer sent fatal alert: Internal error"
		keyctl setperm "$ring" 0x3f010000
		keyctl setperm "$key" 0x3f010004
		pair "$tmp/ring.conf" --psk -- --psk-file "$pki/psk.txt"
		failed "... a key others may write: not used, EACCES with the reason" EACCES \
			"PSK key $key for identity .client1. can be written by others \(permissions 3f010004\): not used"
		keyctl setperm "$key" 0x3f010000
		keyctl setperm "$ring" 0x3f010400
		pair "$tmp/ring.conf" --psk -- --psk-file "$pki/psk.txt"
		failed "... a key ring its group may write: not used, the reason logged" "" \
			"key ring .$name. \($ring\) can be written by others \(permissions 3f010400\): not used"
		keyctl setperm "$ring" 0x3f010000
		# an x509 server (as for the kernel, plain --accept) finds it too
		{ cat "$tmp/mtls.conf"; echo "server-psk-keyring = $name"; } > "$tmp/ringmtls.conf"
		pair "$tmp/ringmtls.conf" -- --psk-file "$pki/psk.txt"
		[ "$arc" = 0 ] && grep -q "^client: PSK identity client1 (identity key $key)$" <<< "$aout" &&
			ok "x509 server with the configured PSK keyring: a PSK client, named by its key as for a PSK request" ||
			nok "x509 server with the configured PSK keyring: a PSK client" "$aout"
		pair "$tmp/ringmtls.conf" -- --cert-file "$pki/client.pem" --key-file "$pki/client.key"
		[ "$arc" = 0 ] && grep -q "^client: CN=client.test (identity key [0-9]*: tlsh:client:" <<< "$aout" &&
			ok "... a certificate client, verified and named by its certificate" ||
			nok "... a certificate client, verified and named by its certificate" "$aout"
		pair "$tmp/ring.conf" -- --psk-file "$pki/psk.txt"
		[ "$arc" = 0 ] && grep -q "^client: PSK identity client1 (identity key $key)$" <<< "$aout" &&
			ok "x509 server with the PSK keyring and no certificate: a PSK client" ||
			nok "x509 server with the PSK keyring and no certificate: a PSK client" "$aout"
	'
else
	tap ok "PSK server (--psk): the configured keyring # SKIP no keyctl, or no session keyring"
fi

# kTLS on the server's side
if [ -d /sys/module/tls ]; then
	pair "$tmp/srv.conf" --ktls --send srv -- --ktls --send cli
	accept_expect "--accept --ktls: the server's keys installed, data round-trips through the kernel" 0 \
		'received: cli'
else
	hs -c "$tmp/srv.conf" --accept $A:0 --ktls
	expect "--accept --ktls refuses to load the tls module" 3 'kernel TLS is not available'
fi

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
