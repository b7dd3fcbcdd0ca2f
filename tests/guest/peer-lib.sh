# Helpers for the guest cases that use the upstream reference peer VM
# (tests/vm-run --peer; the peer is tests/peer). Source after lib.sh. The
# peer is reached from namespace C1 over peer0:
#   TLSH_PEER_NAME   ref.test        TLSH_PEER_EXPORT  /export
#   TLSH_PEER_ADDR   198.51.100.1    TLSH_PEER_ADDR6   2001:db8:1::1
#   TLSH_PEER_LOCAL  198.51.100.2    (this guest's end of the link)
export TLSH_PEER_NAME=ref.test
export TLSH_PEER_ADDR=198.51.100.1 TLSH_PEER_ADDR6=2001:db8:1::1
export TLSH_PEER_LOCAL=198.51.100.2
export TLSH_PEER_EXPORT=/export
PEER_PORT=7000

# peer_present: this guest was booted with a peer (peer0 is in C1, the
# namespace the cases run in by default)
peer_present() {
	ip link show peer0 > /dev/null 2>&1
}

# peer_ready WHAT: true when the peer is present; otherwise prints
# "ok - WHAT # SKIP no peer VM", false
peer_ready() {
	peer_present && return 0
	echo "ok - $1 # SKIP no peer VM"
	return 1
}

# peer COMMAND...: run a command of the peer's control service
# (tests/peer/peer-cmd lists them) and print its output; the status is
# the command's on the peer (124: no answer within PEER_TIMEOUT, 10 s)
peer() {
	local out rc
	out=$(timeout "${PEER_TIMEOUT:-10}" bash -c '
		exec 3<>/dev/tcp/$0/$1 || exit 125
		printf "%s\n" "$2" >&3
		cat <&3' "$TLSH_PEER_ADDR" "$PEER_PORT" "$*")
	rc=$?
	[ $rc -eq 0 ] || { echo "$out"; return $rc; }
	case "$out" in
	*peer-rc=*) ;;
	*) echo "$out"; return 125 ;;
	esac
	rc=${out##*peer-rc=}
	out=${out%peer-rc=*}
	printf '%s' "$out"
	return "$rc"
}

# peer_case MOUNTPOINT DATAFILE: the common start of a peer case: the
# mount point, the helper's test configuration, 16 MiB of random data in
# DATAFILE and its sha256 in $want
peer_case() {
	mkdir -p "$1" /etc/tlsh
	tlsh_config
	dd if=/dev/urandom of="$2" bs=1M count=16 status=none
	want=$(sha256sum < "$2" | cut -d' ' -f1)
}

# peer_mount OPTIONS MOUNTPOINT: mount the peer's export, no retries
peer_mount() {
	mkdir -p "$2"
	timeout $((90 * TLSH_SLOWDOWN)) mount -t nfs -o "$1,retry=0" \
		"$TLSH_PEER_NAME:$TLSH_PEER_EXPORT" "$2"
}

# capture_on_peer: ends the peer's capture; prints "TLS-RECORDS MARKERS":
# TLS application data records and lines of the marker file's text in it
# ("?" when the peer gave no count; why goes to stderr). The count is a
# fixed-string search by GNU grep over tens of MB in the 1-vCPU peer: it
# gets more than the control channel's usual 10 s.
capture_on_peer() {
	local st n rc
	st=$(peer capture stop)
	n=$(PEER_TIMEOUT=$((60 * TLSH_SLOWDOWN)) \
		peer sh "grep -Fac TLSH-PLAINTEXT-MARKER /tmp/capture.pcap")
	rc=$?
	case "$n" in
	*[!0-9]* | "")
		echo "# the peer's count of the marker: no number (status $rc${n:+: $n})" >&2
		n= ;;
	esac
	echo "$(sed -n 's/^tls=//p' <<< "$st") ${n:-?}"
}

# no_plaintext_on_peer: the peer's capture has TLS records and not the
# marker file's content
no_plaintext_on_peer() {
	local tls n
	read -r tls n < <(capture_on_peer)
	echo "# peer's capture: $tls TLS records, $n lines of the marker"
	[ "${tls:-0}" -gt 10 ] && [ "$n" = 0 ]
}

# plaintext_on_peer: the capture method sees the marker without TLS
plaintext_on_peer() {
	local tls n
	read -r tls n < <(capture_on_peer)
	echo "# peer's capture: $tls TLS records, $n lines of the marker"
	[ "${n:-0}" -gt 0 ] 2>/dev/null
}
