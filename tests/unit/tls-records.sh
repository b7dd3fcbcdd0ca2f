#!/bin/bash
# Host test of tests/tools/tls-records (the guest's view of how a kTLS
# sender cuts its data into TLS records): captures made up here with
# known records, in order, out of order with a retransmission, over IPv6,
# with a hole, and without the connection's start.
# TAP; the last line is "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TLSH_BUILD:-$top/build}
. "$top/tests/tap-lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsh-records.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tool=$tmp/tls-records

tap_check "tls-records builds (libpcap)" \
	sh -c "${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 -o $tool $top/tests/tools/tls-records.c \$(pkg-config --cflags --libs libpcap)"

# mkpcap OUT ORDER [v6] [nosyn] [hole]: one server->client connection from
# port 2049: an RPC reply in plaintext (the AUTH_TLS probe's), a TLS
# handshake record, a change_cipher_spec, then application data records
# of 16401, 16401, 4113 and 125 octets, cut into 1448-octet segments;
# ORDER "inorder" or "shuffled" (neighbours swapped, one segment sent
# twice)
mkpcap() {
	python3 - "$@" <<'EOF'
import struct, sys
out, order = sys.argv[1], sys.argv[2]
flags = sys.argv[3:]
v6 = "v6" in flags
def rec(t, n):
    return bytes([t, 3, 3]) + struct.pack(">H", n) + bytes(n)
probe = struct.pack(">I", 0x80000000 | 24) + bytes(24)
tls = rec(22, 90) + rec(20, 1) + rec(23, 16401) + rec(23, 16401) + rec(23, 4113) + rec(23, 125)
isn = 1000
segs = [(isn + 1, probe)]
seq = isn + 1 + len(probe)
for i in range(0, len(tls), 1448):
    segs.append((seq + i, tls[i:i + 1448]))
if order == "shuffled":
    s = segs[1:]
    for i in range(0, len(s) - 1, 2):
        s[i], s[i + 1] = s[i + 1], s[i]
    segs = segs[:1] + s[:5] + [s[3]] + s[5:]
if "hole" in flags:
    del segs[10]
def pkt(seq, data, fl):
    tcp = struct.pack(">HHIIBBHHH", 2049, 40000, seq, 1, 5 << 4, fl, 65535, 0, 0)
    if v6:
        ip = struct.pack(">IHBB", 6 << 28, len(tcp) + len(data), 6, 64) + bytes(15) + b"\x02" + bytes(15) + b"\x0b"
        et = 0x86dd
    else:
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(data), 0, 0, 64, 6, 0,
                         bytes([192, 0, 2, 2]), bytes([192, 0, 2, 11]))
        et = 0x0800
    return bytes(12) + struct.pack(">H", et) + ip + tcp + data
pkts = [] if "nosyn" in flags else [pkt(isn, b"", 0x12)]
pkts += [pkt(s, d, 0x18) for s, d in segs]
with open(out, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
    for p in pkts:
        f.write(struct.pack("<IIII", 0, 0, len(p), len(p)) + p)
EOF
}

want="1 20 1
1 22 90
1 23 125
1 23 4113
2 23 16401"

# records PCAP: the tool's output, sorted
records() {
	"$tool" "$1" 2049 2> "$tmp/err" | sort -k2n -k3n
}

mkpcap "$tmp/in.pcap" inorder
tap_check "in order: the plaintext probe reply skipped, every record found" \
	[ "$(records "$tmp/in.pcap")" = "$want" ]
mkpcap "$tmp/sh.pcap" shuffled
tap_check "segments out of order and one twice: the same records" \
	[ "$(records "$tmp/sh.pcap")" = "$want" ]
tap_check "... and exit status 0" "$tool" "$tmp/sh.pcap" 2049
mkpcap "$tmp/v6.pcap" shuffled v6
tap_check "IPv6: the same records" [ "$(records "$tmp/v6.pcap")" = "$want" ]
tap_check "another port: no records" [ -z "$("$tool" "$tmp/in.pcap" 2050)" ]

mkpcap "$tmp/hole.pcap" inorder hole
out=$("$tool" "$tmp/hole.pcap" 2049 2> "$tmp/err")
rc=$?
tap_check "a hole: exit status 1 and the reason on stderr" \
	sh -c "[ $rc = 1 ] && grep -q 'a hole' '$tmp/err'"
tap_check "... the records before the hole still counted" \
	sh -c "printf '%s\n' '$out' | grep -qx '1 23 16401'"

mkpcap "$tmp/nosyn.pcap" inorder nosyn
out=$("$tool" "$tmp/nosyn.pcap" 2049 2> "$tmp/err")
rc=$?
tap_check "no SYN captured: exit status 1, the connection left out, the reason on stderr" \
	sh -c "[ $rc = 1 ] && [ -z '$out' ] && grep -q 'started before the capture' '$tmp/err'"

printf 'not a capture' > "$tmp/bad.pcap"
"$tool" "$tmp/bad.pcap" 2049 > /dev/null 2>&1
rc=$?
tap_check "not a capture file: exit status 2" [ $rc = 2 ]
"$tool" > /dev/null 2>&1
rc=$?
tap_check "usage error: exit status 2" [ $rc = 2 ]

tap_summary
