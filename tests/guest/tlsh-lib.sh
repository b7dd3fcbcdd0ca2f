# Helpers for the AF_TLSH guest cases (source after lib.sh).
CERTS=/etc/tlsh-test-certs
TRACE=/tracing   # tracefs; /sys is remounted by "ip netns exec"
# KNFSD_CONF: the agent's lines for knfsd's server handshakes (the
# certificate names plain.test and the server's addresses); the NFS cases
# and the bench use it
KNFSD_CONF="server-certificate = $CERTS/knfsd.pem
server-private-key = $CERTS/knfsd-key.pem"

# one_cipher_priorities CIPHER: a "priorities =" line of the agent's
# configuration: its default priorities (TLSH_DEFAULT_PRIORITIES in
# handshake-helper/priorities.h; keep the two alike) with CIPHER (GnuTLS's
# name) the only cipher.
# The bench gives its comparisons one cipher on both sides with it.
one_cipher_priorities() {
	echo "priorities = -COMP-ALL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+$1:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-X448:+GROUP-SECP521R1:+GROUP-FFDHE2048:+GROUP-FFDHE3072:+GROUP-FFDHE4096:%NO_TICKETS"
}

# tlsh_setup: load the test consumer, write a helper config that trusts
# the test CA, start tracing the tlsh events.
tlsh_setup() {
	grep -q '^tlsh_test ' /proc/modules || insmod /lib/tlsh/tlsh_test.ko || return 1
	mkdir -p /etc/tlsh
	tlsh_config "${1:-}"
	trace_start 'tlsh/tlsh_*'
}

# trace_start EVENT-GLOB...: an empty trace buffer with exactly these
# events (relative to events/, e.g. 'tlsh/tlsh_*') enabled
trace_start() {
	local g e
	echo 0 > $TRACE/tracing_on
	echo > $TRACE/trace
	echo 8192 > $TRACE/buffer_size_kb
	for g in "$@"; do
		for e in $TRACE/events/$g/enable; do echo 1 > "$e"; done
	done
	echo 1 > $TRACE/tracing_on
}

# tlsh_config [EXTRA-LINES]: the helper's configuration; its
# handshake-timeout is TLSH_HS_TIMEOUT seconds (10 unless the caller sets it)
tlsh_config() {
	cat > /etc/tlsh/tlsh-helper.conf <<C
[global]
trust-store = $CERTS/ca.pem
idle-timeout = 3
handshake-timeout = ${TLSH_HS_TIMEOUT:-10}
log-level = debug
$1
C
}

# count EVENT: how many times a tlsh trace event fired so far
count() {
	grep -c " $1:" $TRACE/trace
}

# server_psk_ring: the keyring a server agent looks PSK identities up in
# by default (tlsh-server-psk in root's user keyring), made with the
# bench's PSK in it; prints its serial. Our session keyring links root's
# user keyring first, so that we possess the ring and may fill it (a
# case's own session keyring, from keyctl new_session, does not)
server_psk_ring() {
	local ring
	keyctl link @u @s
	ring=$(keyctl newring tlsh-server-psk @u) || return 1
	keyctl padd user "$(cat $CERTS/psk.id)" "$ring" < $CERTS/psk.txt > /dev/null || return 1
	echo "$ring"
}
# serve PORT CERTNAME [gnutls-serv options]: a TLS echo server in S
serve() {
	local port=$1 name=$2
	shift 2
	ip netns exec S gnutls-serv --echo -q -p "$port" \
		--x509certfile "$CERTS/$name.pem" --x509keyfile "$CERTS/$name-key.pem" \
		"$@" > "$TLSH_ARTIFACTS/serv-$port.log" 2>&1 &
	wait_for 10 sh -c "ip netns exec S ss -ltn | grep -q ':$port '"
}

# hs ARGS...: run the test consumer in this namespace; prints its lines
hs() {
	echo "$*" > /debug/tlsh_test/run && cat /debug/tlsh_test/run
}

# alive PID: PID is a process that has not exited (gone, or a zombie
# that nobody reaped: the guest's init, a shell, reaps none)
alive() {
	local st
	st=$(awk '{print $3}' /proc/$1/stat 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

# helpers: number of live tlsh-helper processes (the agents and their
# handshake processes; not the zombies of a killed agent's handshake
# processes)
helpers() {
	local p n=0
	for p in $(pgrep -x tlsh-helper); do
		alive $p && n=$((n + 1))
	done
	echo $n
}

# client_ns NS ADDR VETH: a new network namespace NS on the server's
# bridge, eth0 with ADDR/24 (from 192.0.2.0/24); the bridge's end of the
# veth pair is VETH in S (it leaves S when NS is dismantled)
client_ns() {
	local ns=$1 addr=$2 v=$3
	ip netns add "$ns" &&
		ip link add "$v" type veth peer name eth0 netns "$ns" &&
		ip link set "$v" netns S &&
		ip -n S link set "$v" master br0 &&
		ip -n S link set "$v" up &&
		ip -n "$ns" link set lo up &&
		ip -n "$ns" addr add "$addr/24" dev eth0 &&
		ip -n "$ns" link set eth0 up
}

# ns_gone VETH SECONDS: the namespace whose veth end is VETH in S has been
# dismantled (the kernel removed that end) within SECONDS
ns_gone() {
	wait_for "$2" sh -c "! ip -n S link show $1 > /dev/null 2>&1"
}

# no_agent: no tlsh-helper (normal or testing) is left within 15 s, so the
# next request needs a new one
no_agent() {
	wait_for 15 sh -c '! pgrep tlsh-helper > /dev/null'
}

# ms LINE: the ms= field of a test consumer result line
ms() {
	sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<< "$1"
}

# kmark MARK: a mark in the kernel log and in the system log
kmark() {
	echo "tlsh-mark $1" > /dev/kmsg
	logger -t tlsh "tlsh-mark $1"
}
# dmesg_since MARK: kernel messages after the line MARK was written
dmesg_since() {
	dmesg | sed -n "/tlsh-mark $1\$/,\$p"
}
# log_since MARK: the system log (the agents' lines) after MARK (kmark
# writes it there too), across syslogd's one rotated file
log_since() {
	cat /var/log/messages.0 /var/log/messages 2>/dev/null |
		sed -n "/tlsh: tlsh-mark $1\$/,\$p"
}
# grep_since SOURCE MARK PATTERN WHAT: PATTERN is in what SOURCE
# (log_since, dmesg_since) prints after MARK, within 5 s; when it is
# not, the last lines after MARK are printed as TAP comments
grep_since() {
	local _src=$1 _m=$2 _p=$3

	wait_for 5 eval '$_src "$_m" | grep -q "$_p"' && return 0
	echo "# no $4 like '$_p' after mark $_m; the last ones:"
	$_src "$_m" | tail -8 | sed 's/^/#   /'
	return 1
}
# lgrep MARK PATTERN: in the system log (syslogd writes a line a moment
# after the agent sent it)
lgrep() { grep_since log_since "$1" "$2" "log line"; }
# kgrep MARK PATTERN: in the kernel log (a server thread may write a
# line after the client's call returned: knfsd turns TLS off when it
# deletes the transport, after the client saw the connection close)
kgrep() { grep_since dmesg_since "$1" "$2" "kernel message"; }
