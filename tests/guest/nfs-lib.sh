# Helpers for the NFS-over-TLS guest cases (source after lib.sh and
# tlsh-lib.sh).
FRONT=/usr/local/bin/tls-front

# nfs_trace_setup: the helper's test configuration, tracing of the RPC
# TLS and tlsh events
nfs_trace_setup() {
	mkdir -p /etc/tlsh
	tlsh_config "${1:-}"
	trace_start 'tlsh/tlsh_*' 'sunrpc/rpc_tls_*' 'sunrpc/xs_tls_contenttype' \
		'sunrpc/rpc_clnt_new'
}

# front PORT [tls-front options]: an extra RPC-with-TLS front in S on
# server.test:PORT in front of knfsd; its log is $TLSH_ARTIFACTS/front-PORT.log
front() {
	local port=$1
	shift
	rm -f "$TLSH_ARTIFACTS/front-$port.pid"
	ip netns exec S $FRONT --listen "$TLSH_SERVER_ADDR:$port" \
		--backend 127.0.0.1:2049 \
		--cert $CERTS/server.pem --key $CERTS/server-key.pem \
		--log "$TLSH_ARTIFACTS/front-$port.log" \
		--pid-file "$TLSH_ARTIFACTS/front-$port.pid" "$@" \
		>> "$TLSH_ARTIFACTS/front-$port.out" 2>&1 &
	wait_for 10 test -s "$TLSH_ARTIFACTS/front-$port.pid"
}

# front_stop PORT
front_stop() {
	local pid
	pid=$(cat "$TLSH_ARTIFACTS/front-$1.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null
	wait_for 10 sh -c "! kill -0 $pid 2>/dev/null"
}

# nfs_client_gone PORT: no NFS client of this namespace is left for a
# server on PORT (/proc/fs/nfsfs/servers lists ports in hex). A client
# that lingers after its unmount would be taken for the same server by a
# later mount through another front of the same knfsd (NFSv4.1 trunking).
nfs_client_gone() {
	awk -v p="$(printf '%x' "$1")" 'NR > 1 && $3 == p { found = 1 }
		END { exit found }' /proc/fs/nfsfs/servers
}

# nfs_mount OPTIONS SERVER MOUNTPOINT: mount the export, no retries
nfs_mount() {
	mkdir -p "$3"
	timeout $((90 * TLSH_SLOWDOWN)) mount -t nfs -o "$1,retry=0" "$2:$TLSH_EXPORT" "$3"
}

# xprtsec_of MOUNTPOINT: the "xprtsec:" line of the mount in mountstats
xprtsec_of() {
	awk -v m="$1" '$1 == "device" { cur = ($5 == m) }
		cur && $1 == "xprtsec:" { print $2 }' /proc/self/mountstats
}

# encrypted MOUNTPOINT N: N transports connected, all of them encrypted
encrypted() {
	local s
	s=$(xprtsec_of "$1")
	case "$s" in
	*",connected=$2,encrypted=$2,"*) return 0 ;;
	esac
	echo "# $1: $s"
	return 1
}
# policy_is MOUNTPOINT POLICY: mountstats shows POLICY for the mount, its
# one transport connected and encrypted
policy_is() { xprtsec_of "$1" | grep -q "^policy=$2," && encrypted "$1" 1; }

# plaintext MOUNTPOINT: connected, none encrypted
plaintext() {
	local s
	s=$(xprtsec_of "$1")
	case "$s" in
	*",connected=0,"*) ;;
	*",encrypted=0,"*) return 0 ;;
	esac
	echo "# $1: $s"
	return 1
}

# authenticated MOUNTPOINT N: N of the encrypted transports authenticated
# their server (xprtsec=auto may encrypt without)
authenticated() {
	local s
	s=$(xprtsec_of "$1")
	case "$s" in
	*",authenticated=$2") return 0 ;;
	esac
	echo "# $1: $s"
	return 1
}

# tls_records PCAP: number of packets whose TCP payload starts with a
# TLS 1.2/1.3 application data record header
tls_records() {
	tcpdump -Z root -nr "$1" 'tcp[((tcp[12:1] & 0xf0) >> 2):1] = 0x17 and tcp[((tcp[12:1] & 0xf0) >> 2) + 1:2] = 0x0303' 2>/dev/null | wc -l
}

# full_record_share PCAP PORT: the share (percent) of the application
# data that the side with TCP port PORT sent in records of 16 KiB or more
# (a kTLS sender that closes a record per page sends 4 KiB ones), from
# at least 1 MiB of it (-1: less than that was found)
full_record_share() {
	tls-records "$1" "$2" | awk '$2 == 23 { all += $1 * $3; if ($3 >= 16384) full += $1 * $3 }
		END { print (all >= 1048576 ? int(100 * full / all) : -1) }'
}

# syns PCAP: number of connection attempts (SYN without ACK)
syns() {
	tcpdump -Z root -nr "$1" 'tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn' 2>/dev/null | wc -l
}

# capture_start NAME [filter...]: tcpdump on this namespace's eth0
capture_start() {
	local name=$1
	shift
	rm -f "$TLSH_ARTIFACTS/$name.pcap"
	tcpdump -Z root --immediate-mode -B 32768 -i eth0 -s 0 -U -w "$TLSH_ARTIFACTS/$name.pcap" "$@" \
		> "$TLSH_ARTIFACTS/$name.tcpdump" 2>&1 &
	CAPTURE_PID=$!
	wait_for 10 grep -q "listening on" "$TLSH_ARTIFACTS/$name.tcpdump"
}

# capture_stop: end the capture (immediate mode: nothing is left in the
# kernel's capture buffer when tcpdump is stopped)
capture_stop() {
	sleep 1
	kill "$CAPTURE_PID" 2>/dev/null
	wait "$CAPTURE_PID" 2>/dev/null
}

# nfs_tls_ready WHAT [SYMBOL]: true when this guest can run an NFS-over-TLS
# case (tlsh-helper, tls-front, and a kernel with SYMBOL, by default
# rpc_starttls_probe); otherwise prints a SKIP line for WHAT, false
nfs_tls_ready() {
	local sym=${2:-rpc_starttls_probe}
	if [ ! -x /usr/sbin/tlsh-helper ] || [ ! -x $FRONT ]; then
		skip "$1: tlsh-helper or tls-front is not built"
		return 1
	fi
	if ! grep -q " $sym" /proc/kallsyms; then
		skip "$1: this kernel has no $sym (xprtsec= support)"
		return 1
	fi
}

# --- knfsd serving RPC-with-TLS (cases 030, 115, 116, 120) ------------------

# KNFSD_CONF (tlsh-lib.sh): the agent's lines for knfsd's server handshakes
# KNFSD_MTLS_CONF: the same, and clients' certificates verified with the
# bench CA (mtls)
KNFSD_MTLS_CONF="$KNFSD_CONF
client-trust-store = $CERTS/ca.pem"

# knfsd_cleanup: at a knfsd case's exit: $M unmounted, knfsd's TLS off
knfsd_cleanup() {
	umount -f -l $M 2>/dev/null
	nfsd_tls 0 > /dev/null
}

# knfsd_tls_setup CONF: the agent's configuration CONF, and tracing of
# the client's and the server's RPC-with-TLS events
knfsd_tls_setup() {
	local e
	nfs_trace_setup "$1"
	for e in $TRACE/events/sunrpc/svc_tls_*/enable $TRACE/events/sunrpc/svcsock_tls_record/enable \
		$TRACE/events/nfsd/nfsd_cb_nodelegs/enable; do
		echo 1 > "$e"
	done
}

# nfsd_owners_are RE...: each RE matches the owner name of exactly one of
# knfsd's NFSv4 clients in S (the names, quoted as
# /proc/fs/nfsd/clients/*/info shows them, "Linux NFSv4.2 HOST ...", are
# printed as TAP comments)
nfsd_owners_are() {
	local names re
	names=$(nfsd_sh S "cat /proc/fs/nfsd/clients/*/info" 2>/dev/null | sed -n 's/^name: //p')
	echo "$names" | sed 's/^/# /'
	for re in "$@"; do
		[ "$(echo "$names" | grep -c -- "$re")" = 1 ] || return 1
	done
}
# locked_elsewhere FILE: FILE is locked against us (flock -n fails)
locked_elsewhere() { ! flock -n "$1" true; }
# no_lost_locks MARK: the client logged no lost lock after MARK
no_lost_locks() { ! dmesg_since "$1" | grep -q "lost .* locks"; }

# svc_count EVENT [PATTERN]: how many server TLS events (matching PATTERN)
svc_count() {
	grep " $1:" $TRACE/trace | grep -c -- "${2:-}"
}

# nfsd_sh NS SCRIPT: run SCRIPT (sh) in namespace NS with that namespace's
# nfsd file system on /proc/fs/nfsd ("ip netns exec" gives each command a
# mount namespace of its own, so it is mounted again each time)
nfsd_sh() {
	ip netns exec "$1" sh -c "mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
		$2"
}
# nfsd_tls_ns NS [0|1]: write /proc/fs/nfsd/tls of namespace NS (when
# given), print it
nfsd_tls_ns() {
	nfsd_sh "$1" "${2:+echo $2 > /proc/fs/nfsd/tls || exit 1}
		cat /proc/fs/nfsd/tls"
}
# nfsd_tls [0|1]: the same for S
nfsd_tls() { nfsd_tls_ns S "$@"; }

# server_agents: live agents serving S's network namespace (an agent
# runs in the root namespace and says in syslog which one it serves)
server_agents() {
	local p n=0
	for p in $(sed -n "s/.*tlsh-helper\[\([0-9]*\)\]: serving network namespace $(stat -L -c %i /run/netns/S) .*/\1/p" /var/log/messages); do
		alive $p && n=$((n + 1))
	done
	echo $n
}
no_server_agents() { [ "$(server_agents)" = 0 ]; }

# new_config CONF: the agent's configuration, once no server agent that
# read the previous one is left
new_config() {
	tlsh_config "$1"
	wait_for 15 no_server_agents
}

# The helpers below mount knfsd ($P, plain.test) on $M
# mounted_tls OPTIONS: mount $P with OPTIONS; the transport encrypted
mounted_tls() { nfs_mount "$1" $P $M && encrypted $M 1; }
# same64: the 64 MiB file reads back with its sha256
same64() { [ "$(sha256sum < $M/r64 | cut -d' ' -f1)" = "$want64" ]; }
# rw_marker NAME: write the marker file as NAME and read it back
rw_marker() { mountpoint -q $M && cp /tmp/marker $M/$1 && cmp -s /tmp/marker $M/$1; }
# mounted_plain OPTIONS: mount $P with OPTIONS; the transport in plaintext
mounted_plain() { nfs_mount "$1" $P $M && plaintext $M; }

# mount_fails SERVER MARK PATTERN OPTIONS: mounting SERVER's export on $M
# with OPTIONS fails within 30 s, the kernel log after MARK has PATTERN,
# nothing is mounted; mount's message (and the time) as a TAP comment
mount_fails() {
	local srv=$1 mark=$2 msg=$3 opts=$4 start el
	kmark "$mark"
	start=$(date +%s)
	if nfs_mount "$opts" "$srv" $M 2> "$TLSH_ARTIFACTS/$mark.err"; then
		echo "# mounted with $opts"
		umount $M
		return 1
	fi
	el=$(( $(date +%s) - start ))
	echo "# $(tr '\n' ' ' < "$TLSH_ARTIFACTS/$mark.err")(${el} s)"
	[ $el -le 30 ] || { echo "# took ${el} s"; return 1; }
	kgrep "$mark" "$msg" || return 1
	! grep -q " $M " /proc/mounts
}
# refused MARK OPTIONS: mounting $P fails, the kernel says the server
# refused the TLS session
refused() {
	mount_fails $P "$1" "plain.test .* \(refused the TLS session\|failed: refused by the server\|failed: the server closed the connection during the handshake\)" "$2"
}
# peer_keys: server handshakes that named an authenticated client
peer_keys() { grep " svc_tls_done:" $TRACE/trace | grep "status=0 " | grep -vc "peer_key=00000000"; }

# --- export policies (cases 040, 116): exportfs of nfs-utils 2.6.3+ ---------
EXPORTFS=/usr/local/sbin/exportfs
EXPORT_BASE="rw,sync,no_subtree_check,no_root_squash,insecure"

# nfs_policy_ready WHAT: nfs_tls_ready for a case that sets knfsd's export
# policies, and an exportfs that knows xprtsec=; otherwise a SKIP line
# for WHAT and the summary, false
nfs_policy_ready() {
	nfs_tls_ready "$1" check_xprtsec_policy || return 1
	[ -x $EXPORTFS ] && return 0
	skip "$1: no exportfs of nfs-utils 2.6.3+ in this guest"
	finish
	return 1
}
# export_policy [MODES [FSID]]: export $TLSH_EXPORT with xprtsec=MODES (none
# given: without the option, as the bench exports it) and fsid=FSID
# (default 1; 0 makes it NFSv4's pseudo-root)
export_policy() {
	echo "$TLSH_EXPORT *($EXPORT_BASE,fsid=${2:-1}${1:+,xprtsec=$1})" > /etc/exports
	ip netns exec S $EXPORTFS -ra
}
# exported_with TEXT: exportfs -v shows TEXT for the export
exported_with() {
	ip netns exec S $EXPORTFS -v | tr -d ' \t\n' | grep -q -- "$1"
}
# denied MARK OPTIONS KIND: mounting $P with OPTIONS fails within 30 s,
# knfsd says that a KIND connection may not use the export, the client's
# kernel says that the server refused a KIND connection, nothing is
# mounted
denied() {
	mount_fails $P "$1" "nfsd: .*: $3 may not use export $TLSH_EXPORT " "$2" ||
		return 1
	kgrep "$1" "NFS: $P refused $3 (xprtsec=" ||
		{ echo "# the client's kernel did not say which connection was refused"; return 1; }
}

# padd NAME FILE: a user key in the session keyring, prints its serial
padd() { keyctl padd user "$1" @s < "$2"; }
# id_of: the identity the kernel names a psk client by, for a PSK
# identity on stdin: 16 hex digits of its SHA-256 (an mtls client's is
# cert-id's)
id_of() { sha256sum | cut -c1-16; }
# reconnect_knfsd: the client's transports to knfsd drop their
# connections and reconnect (writing a transport's own address to its
# dstaddr in /sys/kernel/sunrpc forces a disconnect); prints how many
reconnect_knfsd() {
	local f n=0
	for f in /sys/kernel/sunrpc/xprt-switches/*/xprt-*/dstaddr; do
		[ "$(cat "$f" 2>/dev/null)" = "$TLSH_PLAIN_ADDR" ] || continue
		echo "$TLSH_PLAIN_ADDR" > "$f" && n=$((n + 1))
	done
	echo $n
}
# no_plain_requests MARK: knfsd refused no request on a connection
# without TLS since MARK (an export that requires TLS refuses every one)
no_plain_requests() {
	! dmesg_since "$1" | grep -q "a connection without TLS may not use export"
}
