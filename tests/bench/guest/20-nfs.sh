# NFS benchmarks (runs in C1): mount latency (none, tls cold and warm,
# auto against a server without TLS), sequential throughput, a small-file
# metadata workload and CPU time per MiB (client and server side), for
# plaintext NFS, NFS over kTLS on the client (xprtsec=tls to the
# user-space TLS front), kTLS on both ends (xprtsec=tls to knfsd serving
# RPC-with-TLS itself: mode ktls) and plaintext NFS through a stunnel
# tunnel.
S=$TLSH_SERVER_ADDR
MNT=/mnt/bench
mkdir -p $MNT
bench_setup || { echo "bench: cannot set up"; exit 1; }
# One TLS 1.3 cipher suite for every TLS mode (BENCH_CIPHER, GnuTLS's
# name; default AES-128-GCM, TLS 1.3's mandatory one and the agent's first
# choice): left to their defaults, the agent would negotiate AES-128-GCM
# and stunnel (OpenSSL) AES-256-GCM, and the ratio would compare ciphers.
# The agent's priorities are its default ones with that cipher only
# (one_cipher_priorities, tlsh-lib.sh).
CIPHER=${BENCH_CIPHER:-AES-128-GCM}
case $CIPHER in
AES-128-GCM) OSSL_SUITE=TLS_AES_128_GCM_SHA256 KTLS_NAME=aes-gcm-128 ;;
AES-256-GCM) OSSL_SUITE=TLS_AES_256_GCM_SHA384 KTLS_NAME=aes-gcm-256 ;;
CHACHA20-POLY1305) OSSL_SUITE=TLS_CHACHA20_POLY1305_SHA256 KTLS_NAME="" ;; # ss 6.1 names only AES-GCM
*) echo "bench: BENCH_CIPHER=$CIPHER is not AES-128-GCM, AES-256-GCM or CHACHA20-POLY1305"; exit 1 ;;
esac
info nfs.cipher "$CIPHER (every TLS mode)"
# the agent also serves knfsd's handshakes (mode ktls)
bench_config "$KNFSD_CONF
$(one_cipher_priorities "$CIPHER")"
# nfsd_tls 0|1: knfsd's RPC-with-TLS in S (on only for the ktls mode, so
# that plain.test stays the server without TLS of the auto measurements)
nfsd_tls() {
	ip netns exec S sh -c "mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
		echo $1 > /proc/fs/nfsd/tls" 2>/dev/null
}
KTLS=0
nfsd_tls 0 && KTLS=1
info nfs.knfsd-tls "$KTLS"
NA_XPRTSEC="n/a (xprtsec= not supported by this kernel)"

# knfsd's port in S (the TLS front, once there, owns server.test:2049)
kport=$(ip netns exec S sh -c 'mount -t nfsd nfsd /proc/fs/nfsd 2>/dev/null; cat /proc/fs/nfsd/portlist' 2>/dev/null |
	awk '$1 == "tcp" {print $2; exit}')
kport=${kport:-2049}
info nfs.knfsd-port "$kport"

# The plain server: knfsd itself on plain.test when the topology has it
# (server.test:2049 is then the RPC-with-TLS front); before that, knfsd
# owns server.test:2049.
PLAIN=${TLSH_PLAIN_NAME:-server.test}
info nfs.plain-server "$PLAIN"
# every mount: one try (mount.nfs retries refused connections for 2 min)
MO="vers=4.2,retry=0"
mnt() { timeout -k 5 120 mount -t nfs -o "$1" "$2" $MNT 2>> $BW/mount.err; }

# Does this kernel know xprtsec=? (mount.nfs passes it on; the kernel says
# "Unknown parameter" when it does not)
dmesg_lines=$(dmesg | wc -l)
XPRTSEC=0
NONE_OPT=""
if mnt $MO,xprtsec=none $PLAIN:$TLSH_EXPORT 2> $BW/xprtsec.err; then
	umount $MNT
	XPRTSEC=1
	NONE_OPT=",xprtsec=none"
elif dmesg | tail -n +$((dmesg_lines + 1)) | grep -qi "unknown parameter 'xprtsec'" ||
	grep -qi "incorrect mount option" $BW/mount.err; then
	info nfs.xprtsec "$(tail -1 $BW/mount.err) / $(dmesg | tail -n +$((dmesg_lines + 1)) | grep -i xprtsec | tail -1)"
else
	XPRTSEC=0
	NA_XPRTSEC="failed: mount -o xprtsec=none: $(tail -1 $BW/mount.err)"
	info nfs.xprtsec "$NA_XPRTSEC"
fi
info nfs.xprtsec-supported $XPRTSEC

# mount_time OPTS SRC: one timed mount (ms in $MS), then umount
mount_time() {
	local t0
	now; t0=$NOW
	mnt "$1" "$2" || return 1
	ms_since $t0
	umount $MNT
}
# mode_opts MODE: mount options and source of a throughput mode
mode_src() {
	case $1 in
	none) echo "$MO$NONE_OPT $PLAIN:$TLSH_EXPORT" ;;
	none-front) echo "$MO$NONE_OPT server.test:$TLSH_EXPORT" ;;
	tls) echo "$MO,xprtsec=tls server.test:$TLSH_EXPORT" ;;
	stunnel) echo "$MO$NONE_OPT,port=2050 127.0.0.1:$TLSH_EXPORT" ;;
	ktls) echo "$MO,xprtsec=tls $PLAIN:$TLSH_EXPORT" ;;
	esac
}
mount_mode() {
	local o s
	read -r o s <<< "$(mode_src $1)"
	if [ $KTLS = 1 ]; then
		if [ $1 = ktls ]; then nfsd_tls 1; else nfsd_tls 0; fi
	fi
	mnt "$o" "$s"
}

# --- the stunnel tunnel: C1 127.0.0.1:2050 -> S 192.0.2.1:2051 -> knfsd ---
cat > $BW/stunnel-s.conf <<C
foreground = yes
pid =
output = $TLSH_ARTIFACTS/stunnel-s.log
[nfs]
accept = $S:2051
connect = 127.0.0.1:$kport
cert = $CERTS/server.pem
key = $CERTS/server-key.pem
ciphersuites = $OSSL_SUITE
C
cat > $BW/stunnel-c.conf <<C
foreground = yes
pid =
output = $TLSH_ARTIFACTS/stunnel-c.log
[nfs]
client = yes
accept = 127.0.0.1:2050
connect = $S:2051
CAfile = $CA
verifyChain = yes
checkHost = server.test
ciphersuites = $OSSL_SUITE
debug = info
C
ip netns exec S stunnel4 $BW/stunnel-s.conf > /dev/null 2>&1 &
stunnel_s=$!
stunnel4 $BW/stunnel-c.conf > /dev/null 2>&1 &
stunnel_c=$!
wait_for 10 sh -c "ip netns exec S ss -ltn | grep -q '$S:2051 '"
wait_for 10 sh -c "ss -ltn | grep -q '127.0.0.1:2050 '"
info stunnel.version "$(stunnel4 -version 2>&1 | grep -m1 -o 'stunnel [0-9.]* .*')"

# --- a server without TLS for xprtsec=auto: plain.test (knfsd), or before
# that topology a tls-front --no-tls in front of knfsd on port 20490 ------
if [ "$PLAIN" != server.test ]; then
	NOTLS_OPT="" NOTLS_SRV=$PLAIN
else
	NOTLS_OPT=",port=20490" NOTLS_SRV=server.test
fi
ip netns exec S tls-front --no-tls --listen $S:20490 --backend 127.0.0.1:$kport \
	--cert $CERTS/server.pem --key $CERTS/server-key.pem --log $TLSH_ARTIFACTS/front-notls.log > /dev/null 2>&1 &
front_notls=$!
wait_for 10 sh -c "ip netns exec S ss -ltn | grep -q '$S:20490 '"

MODES=${BENCH_NFS_MODES:-none tls ktls stunnel}
# mode_cipher MODE (mounted): the cipher its TLS connection negotiated, as
# a note; a different one than CIPHER voids the comparison, so it says so
mode_cipher() {
	local got
	case $1 in
	tls | ktls)
		# the kernel's TLS socket of the mount (ss's ULP line)
		got=$(ss -tnie state established | grep -o 'tcp-ulp-tls.*cipher: [^ ]*' | grep -o '[^ ]*$' | sort -u | tr '\n' ' ') ;;
	stunnel)
		# stunnel logs each connection's suite at debug = info
		got=$(grep -o 'ciphersuite: [A-Z0-9_]*' $TLSH_ARTIFACTS/stunnel-c.log | sort -u | awk '{printf "%s ", $2}') ;;
	*) return 0 ;;
	esac
	got=${got% }
	[ -n "$got$KTLS_NAME" ] || got="(not named by ss)" KTLS_NAME="(not named by ss)"
	case $got in
	"$KTLS_NAME" | "$OSSL_SUITE") info nfs.$1.cipher "$got" ;;
	*) info nfs.$1.cipher "$got (NOT $CIPHER: this mode's numbers compare another cipher)" ;;
	esac
}
mode_ok() {
	case $1 in
	tls) [ $XPRTSEC = 1 ] ;;
	ktls) [ $XPRTSEC = 1 ] && [ $KTLS = 1 ] ;;
	esac
}
# a mode that does not mount is reported n/a for all its metrics
for m in $MODES; do
	if ! mode_ok $m; then
		why=$NA_XPRTSEC
		[ $m = ktls ] && [ $XPRTSEC = 1 ] && why="n/a (no /proc/fs/nfsd/tls: knfsd cannot serve TLS)"
		for x in tput.write tput.read cpu.write cpu.read meta.create meta.stat meta.remove; do na $x.$m "$why"; done
	elif mount_mode $m; then
		mode_cipher $m
		umount $MNT
	else
		info nfs.$m.mount-failed "$(tail -1 $BW/mount.err)"
		MODES=${MODES/$m/}
		for x in tput.write tput.read cpu.write cpu.read meta.create meta.stat meta.remove; do na $x.$m "failed: $(tail -1 $BW/mount.err)"; done
	fi
done
MODES=$(for m in $MODES; do mode_ok $m && echo $m; done | tr "\n" " ")

# --- mount latency -----------------------------------------------------
note "mount latency, $BENCH_MOUNT_REPS repetitions"
for i in $(seq "$BENCH_MOUNT_REPS"); do
	mount_time "$MO$NONE_OPT" $PLAIN:$TLSH_EXPORT && emit mount.none "$MS"
	mount_time "$MO$NONE_OPT,port=2050" 127.0.0.1:$TLSH_EXPORT && emit mount.stunnel "$MS"
	[ "$PLAIN" = server.test ] || { mount_time "$MO$NONE_OPT" server.test:$TLSH_EXPORT && emit mount.none-front "$MS"; }
done
[ -s $BW/mount.err ] && info nfs.mount-errors "$(sort $BW/mount.err | uniq -c | tr '\n' ' ')"
if [ $XPRTSEC = 1 ]; then
	for i in $(seq "$BENCH_MOUNT_REPS"); do
		kill_agents
		mount_time $MO,xprtsec=tls server.test:$TLSH_EXPORT && emit mount.tls.cold "$MS"
		mount_time $MO,xprtsec=tls server.test:$TLSH_EXPORT && emit mount.tls.warm "$MS"
		# auto and none to the server without TLS back to back, so
		# that both sides of the ratio see the same load
		mount_time "$MO$NONE_OPT$NOTLS_OPT" $NOTLS_SRV:$TLSH_EXPORT && emit mount.none.notls-server "$MS"
		mount_time $MO,xprtsec=auto$NOTLS_OPT $NOTLS_SRV:$TLSH_EXPORT && emit mount.auto.notls-server "$MS"
	done
else
	for i in $(seq "$BENCH_MOUNT_REPS"); do
		mount_time "$MO$NONE_OPT$NOTLS_OPT" $NOTLS_SRV:$TLSH_EXPORT && emit mount.none.notls-server "$MS"
	done
	for x in mount.tls.cold mount.tls.warm mount.auto.notls-server; do na $x "$NA_XPRTSEC"; done
fi

# server-side CPU (to leave out of the client's): nfsd threads and the
# server's user-space relays
server_pids() { echo $(pgrep -x nfsd) $stunnel_s $(pgrep -x tls-front); }

# --- throughput and CPU per MiB ----------------------------------------
# Each run writes BENCH_MIB MiB sequentially in chunks of 32 MiB (each
# fsynced), then, remounted with caches dropped, reads them back in the
# same chunks: the run's rate (tput.*) and each chunk's (tput.*.chunk, for
# a spread even with one run).
CH=32
NCH=$(( (BENCH_MIB + CH - 1) / CH ))
MIB=$((NCH * CH))
note "throughput: $MIB MiB sequential write and read in $CH MiB chunks, $BENCH_TPUT_REPS repetitions, modes: $MODES"
F=bench-seq
rate() { awk -v ms=$1 -v mib=$2 'BEGIN {printf "%.2f", mib * 1000 / ms}'; }
per_mib() { awk -v c=$1 -v mib=$2 'BEGIN {printf "%.2f", c * 10 / mib}'; }
for i in $(seq "$BENCH_TPUT_REPS"); do
	for m in $MODES; do
		rm -f $TLSH_EXPORT_DIR/$F
		sync; echo 3 > /proc/sys/vm/drop_caches
		mount_mode $m || continue
		c0=$(cpu_ticks); s0=$(pid_ticks $(server_pids))
		now; t0=$NOW
		bad=0
		for ((c = 0; c < NCH; c++)); do
			now; tc=$NOW
			dd if=/dev/zero of=$MNT/$F bs=1M count=$CH seek=$((c * CH)) conv=notrunc,fsync 2> $BW/dd.err ||
				{ cat $BW/dd.err; bad=1; break; }
			ms_since $tc; emit tput.write.$m.chunk "$(rate $MS $CH)"
		done
		ms_since $t0
		c1=$(cpu_ticks); s1=$(pid_ticks $(server_pids))
		umount $MNT
		if [ $bad = 0 ]; then
			emit tput.write.$m "$(rate $MS $MIB)"
			emit cpu.write.$m "$(per_mib $((c1 - c0 - (s1 - s0))) $MIB)"
			emit cpu.write.$m.all "$(per_mib $((c1 - c0)) $MIB)"
			emit cpu.server.write.$m "$(per_mib $((s1 - s0)) $MIB)"
		fi
		sync; echo 3 > /proc/sys/vm/drop_caches
		mount_mode $m || continue
		c0=$(cpu_ticks); s0=$(pid_ticks $(server_pids))
		now; t0=$NOW
		bad=0
		for ((c = 0; c < NCH; c++)); do
			now; tc=$NOW
			dd if=$MNT/$F of=/dev/null bs=1M count=$CH skip=$((c * CH)) 2> $BW/dd.err ||
				{ cat $BW/dd.err; bad=1; break; }
			ms_since $tc; emit tput.read.$m.chunk "$(rate $MS $CH)"
		done
		ms_since $t0
		c1=$(cpu_ticks); s1=$(pid_ticks $(server_pids))
		umount $MNT
		if [ $bad = 0 ]; then
			emit tput.read.$m "$(rate $MS $MIB)"
			emit cpu.read.$m "$(per_mib $((c1 - c0 - (s1 - s0))) $MIB)"
			emit cpu.read.$m.all "$(per_mib $((c1 - c0)) $MIB)"
			emit cpu.server.read.$m "$(per_mib $((s1 - s0)) $MIB)"
		fi
	done
done
rm -f $TLSH_EXPORT_DIR/$F

# --- metadata: create, stat, remove BENCH_FILES files -------------------
note "metadata: create/stat/remove $BENCH_FILES files, $BENCH_META_REPS repetitions"
for i in $(seq "$BENCH_META_REPS"); do
	for m in $MODES; do
		rm -rf $TLSH_EXPORT_DIR/meta
		mount_mode $m || continue
		mkdir $MNT/meta
		now; t0=$NOW
		for ((f = 0; f < BENCH_FILES; f++)); do : > $MNT/meta/f$f; done
		ms_since $t0
		emit meta.create.$m "$(awk -v ms=$MS -v n=$BENCH_FILES 'BEGIN {printf "%.1f", n * 1000 / ms}')"
		umount $MNT
		mount_mode $m || continue
		now; t0=$NOW
		stat -c %s $MNT/meta/* > /dev/null
		ms_since $t0
		emit meta.stat.$m "$(awk -v ms=$MS -v n=$BENCH_FILES 'BEGIN {printf "%.1f", n * 1000 / ms}')"
		now; t0=$NOW
		rm -rf $MNT/meta
		ms_since $t0
		emit meta.remove.$m "$(awk -v ms=$MS -v n=$BENCH_FILES 'BEGIN {printf "%.1f", n * 1000 / ms}')"
		umount $MNT
	done
done

kill $stunnel_c $stunnel_s $front_notls 2>/dev/null
[ $KTLS = 1 ] && nfsd_tls 0
kill_agents

# --- the ciphers alone (context for the kTLS/stunnel ratios) -------------
# crypto-loop (tests/bench/crypto-loop.c): 64 MiB of 16 KiB records over
# loopback TCP, encrypted and decrypted by kTLS or by OpenSSL (stunnel's
# library), no NFS: CPU per MiB of both ends
note "the ciphers alone: 64 MiB of 16 KiB records over loopback, kTLS vs OpenSSL"
for c in AES-128-GCM AES-256-GCM CHACHA20-POLY1305; do
	for impl in ktls openssl; do
		if out=$(crypto-loop $impl $c 64 2>&1); then
			read -r _ _ _ _ cpu _ <<< "$out"
			emit crypto.$impl.$c "$cpu"
		else
			na crypto.$impl.$c "failed: $out"
		fi
	done
done
exit 0
