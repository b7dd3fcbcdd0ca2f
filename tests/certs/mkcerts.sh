#!/bin/bash
# mkcerts.sh OUTDIR [-f]
#
# Generate the test PKI for tlsh with GnuTLS's certtool (package gnutls-bin).
# All keys are ECDSA P-256 (fast).  Idempotent: when OUTDIR already holds a
# complete set made by this version of the script (stamp file
# OUTDIR/.complete holds the script's sha256) nothing is done; -f
# regenerates.
# A partial set is always regenerated from scratch.
#
# Files written to OUTDIR (all PEM but client.der):
#   ca.pem               test CA certificate ("tlsh test CA")
#   ca-key.pem           its key
#   other-ca.pem         a second, untrusted CA ("tlsh other CA")
#   other-ca-key.pem     its key
#   server.pem           good server cert: DNS server.test, IP 192.0.2.1,
#                        IP 2001:db8::1; signed by ca.pem
#   server-key.pem
#   server-expired.pem   as server.pem but valid 2001-01-01..2002-01-01
#   server-expired-key.pem
#   server-wrongname.pem DNS wrong.test only; signed by ca.pem
#   server-wrongname-key.pem
#   server-untrusted.pem as server.pem but signed by other-ca.pem
#   server-untrusted-key.pem
#   client.pem           client cert CN=tlsh-client, signed by ca.pem
#   client-key.pem
#   client-renewed.pem   client.pem issued anew: the same subject and CA,
#                        another key and serial number
#   client-renewed-key.pem
#   client.der           client.pem in DER
#   client-other.pem     client cert CN=tlsh-client-other, signed by
#                        other-ca.pem (must be rejected by an mTLS server
#                        trusting ca.pem)
#   client-other-key.pem
#   knfsd.pem            the bench's knfsd serving RPC-with-TLS itself:
#                        DNS plain.test, IP 192.0.2.2, IP 2001:db8::2, and
#                        the guest's end of the peer link (IP
#                        198.51.100.2, 2001:db8:1::2); signed by ca.pem
#   knfsd-key.pem
#   knfsd-nameonly.pem   as knfsd.pem, but DNS plain.test only: a pNFS
#                        data server named by its address in a layout
#                        cannot be authenticated with it
#   knfsd-nameonly-key.pem
#   ref.pem              the upstream reference peer VM's server cert
#                        (tests/peer): DNS ref.test, IP 198.51.100.1,
#                        IP 2001:db8:1::1; signed by ca.pem
#   ref-key.pem
#   ref-untrusted.pem    as ref.pem but signed by other-ca.pem
#   ref-untrusted-key.pem
#   psk.txt              one line "tlsh-test:<64 hex digits>" (32-byte key),
#                        the format of gnutls psktool / --pskfile
#   psk.id               the identity alone ("tlsh-test")
#   psk.key              the hex key alone
#   server-chain100.pem  a server.test certificate followed by the 99
#                        intermediate CAs between it and ca.pem (a chain
#                        of 100 certificates, far deeper than any
#                        verifier accepts: the hostile-server tests)
#   server-chain100-key.pem
set -euo pipefail

usage() { echo "usage: $0 OUTDIR [-f]" >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
out=$1
force=0
if [ $# -eq 2 ]; then
	[ "$2" = "-f" ] || usage
	force=1
fi
command -v certtool >/dev/null || {
	echo "mkcerts: certtool not found (install gnutls-bin)" >&2
	exit 1
}

FILES=(ca.pem ca-key.pem other-ca.pem other-ca-key.pem
	server.pem server-key.pem server-expired.pem server-expired-key.pem
	server-wrongname.pem server-wrongname-key.pem
	server-untrusted.pem server-untrusted-key.pem
	client.pem client-key.pem client-other.pem client-other-key.pem
	client2.pem client2-key.pem client-renewed.pem client-renewed-key.pem
	client.der
	ref.pem ref-key.pem ref-untrusted.pem ref-untrusted-key.pem knfsd.pem knfsd-key.pem
	knfsd-nameonly.pem knfsd-nameonly-key.pem
	psk.txt psk.id psk.key server-chain100.pem server-chain100-key.pem)

mkdir -p "$out"
out=$(cd "$out" && pwd)
self=$(sha256sum < "$0" | cut -d' ' -f1)
if [ $force -eq 0 ] && [ "$(cat "$out/.complete" 2>/dev/null)" = "$self" ]; then
	ok=1
	for f in "${FILES[@]}"; do [ -s "$out/$f" ] || ok=0; done
	[ $ok -eq 1 ] && exit 0
fi

tmp=$(mktemp -d "$out/.mkcerts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

key() { certtool --generate-privkey --key-type=ecdsa --curve=secp256r1 \
	--no-text --outfile "$1" 2>/dev/null; }

# ca NAME CN
ca() {
	key "$1-key.pem"
	cat >"$1.tmpl" <<T
cn = "$2"
organization = "tlsh tests"
ca
cert_signing_key
crl_signing_key
activation_date = "$since"
expiration_days = 3650
T
	certtool --generate-self-signed --load-privkey "$1-key.pem" \
		--template "$1.tmpl" --no-text --outfile "$1.pem" 2>/dev/null
}

# leaf NAME CA TEMPLATE-LINES...
leaf() {
	local name=$1 signer=$2
	shift 2
	key "$name-key.pem"
	printf '%s\n' "$@" >"$name.tmpl"
	certtool --generate-certificate --load-privkey "$name-key.pem" \
		--load-ca-certificate "$signer.pem" \
		--load-ca-privkey "$signer-key.pem" \
		--template "$name.tmpl" --no-text --outfile "$name.pem" 2>/dev/null
}

# Valid from a day ago, so a guest clock slightly behind the host's does
# not see "not yet valid" certificates.
since=$(date -u -d '-1 day' '+%Y-%m-%d %H:%M:%S')
VALID=("activation_date = \"$since\"" 'expiration_days = 3650')
SRV=('cn = "server.test"' 'organization = "tlsh tests"'
	'dns_name = "server.test"' 'ip_address = "192.0.2.1"'
	'ip_address = "2001:db8::1"' 'tls_www_server' 'signing_key')
REF=('cn = "ref.test"' 'organization = "tlsh tests"'
	'dns_name = "ref.test"' 'ip_address = "198.51.100.1"'
	'ip_address = "2001:db8:1::1"' 'tls_www_server' 'signing_key')

ca ca "tlsh test CA"
ca other-ca "tlsh other CA"
leaf server ca "${SRV[@]}" "${VALID[@]}"
leaf server-expired ca "${SRV[@]}" \
	'activation_date = "2001-01-01 00:00:00"' \
	'expiration_date = "2002-01-01 00:00:00"'
leaf server-wrongname ca 'cn = "wrong.test"' 'organization = "tlsh tests"' \
	'dns_name = "wrong.test"' 'tls_www_server' 'signing_key' \
	"${VALID[@]}"
leaf server-untrusted other-ca "${SRV[@]}" "${VALID[@]}"
leaf ref ca "${REF[@]}" "${VALID[@]}"
leaf knfsd ca 'cn = "plain.test"' 'organization = "tlsh tests"' \
	'dns_name = "plain.test"' 'ip_address = "192.0.2.2"' \
	'ip_address = "2001:db8::2"' 'ip_address = "198.51.100.2"' \
	'ip_address = "2001:db8:1::2"' 'tls_www_server' 'signing_key' \
	"${VALID[@]}"
leaf knfsd-nameonly ca 'cn = "plain.test"' 'organization = "tlsh tests"' \
	'dns_name = "plain.test"' 'tls_www_server' 'signing_key' "${VALID[@]}"
leaf ref-untrusted other-ca "${REF[@]}" "${VALID[@]}"
leaf client ca 'cn = "tlsh-client"' 'organization = "tlsh tests"' \
	'tls_www_client' 'signing_key' "${VALID[@]}"
leaf client-renewed ca 'cn = "tlsh-client"' 'organization = "tlsh tests"' \
	'tls_www_client' 'signing_key' "${VALID[@]}"
certtool --certificate-info --infile client.pem --outder \
	--outfile client.der 2>/dev/null
leaf client2 ca 'cn = "tlsh-client-2"' 'organization = "tlsh tests"' \
	'tls_www_client' 'signing_key' "${VALID[@]}"
leaf client-other other-ca 'cn = "tlsh-client-other"' \
	'organization = "tlsh tests"' 'tls_www_client' 'signing_key' \
	"${VALID[@]}"

# ca.pem -> int1 -> ... -> int99 -> server-chain100
inter() {
	key "$1-key.pem"
	printf '%s\n' "cn = \"tlsh intermediate $1\"" 'organization = "tlsh tests"' \
		ca cert_signing_key "${VALID[@]}" >"$1.tmpl"
	certtool --generate-certificate --load-privkey "$1-key.pem" \
		--load-ca-certificate "$2.pem" --load-ca-privkey "$2-key.pem" \
		--template "$1.tmpl" --no-text --outfile "$1.pem" 2>/dev/null
}
signer=ca
for i in $(seq 99); do
	inter "int$i" "$signer"
	signer=int$i
done
leaf server-chain100 int99 "${SRV[@]}" "${VALID[@]}"
for i in $(seq 99 -1 1); do cat "int$i.pem"; done >> server-chain100.pem

hex=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
[ ${#hex} -eq 64 ] || { echo "mkcerts: cannot read /dev/urandom" >&2; exit 1; }
echo "tlsh-test:$hex" >psk.txt
echo "tlsh-test" >psk.id
echo "$hex" >psk.key

chmod 600 ./*-key.pem psk.txt psk.key
for f in "${FILES[@]}"; do mv -f "$f" "$out/$f"; done
echo "$self" > "$out/.complete"
