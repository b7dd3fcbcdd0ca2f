#!/bin/bash
# The peer comparison of make bench (tests/bench/run.sh puts the settings
# in front of this file): the same measurements, against the same upstream
# 6.12 server (ref.test: knfsd with tlshd), from two clients in turn:
#   CLIENT=tlsh      our guest (patched 6.1, the agent started on demand)
#   CLIENT=upstream  the peer's kernel booted as a client (6.12, tlshd
#                    resident)
# Each client VM has the same vCPUs and memory. run.sh puts the settings
# and tests/guest/peer-lib.sh (peer: the server's control service) in
# front of this file. Output: BENCH/BENCHNA/
# BENCHINFO lines (tests/bench/report.py), metrics peer.CLIENT.*.
#
#   mount.none, mount.tls (tlsh: .warm, the agent still up, and .cold,
#   none running), mount.auto.notlshd (tlsh: xprtsec=auto with tlshd
#   stopped on the server; upstream has no xprtsec=auto:
#   mount.none.notlshd stands for what its users do instead)
#   tput.{write,read}.{none,tls}: MiB/s of PEER_MIB MiB, written with
#   fsync, read after a remount; cpu.{write,read}.{none,tls}: busy CPU
#   time of the whole client VM per MiB (ms/MiB)
export LC_ALL=C
: "${CLIENT:=tlsh}" "${PEER_MOUNT_REPS:=8}" "${PEER_MIB:=128}" "${PAIR_REPS:=3}"
SERVER=$TLSH_PEER_NAME
EXPORT=/export
# The pairs, client and server in one VM with the same vCPUs and memory:
#   CLIENT=tlsh-pair      our guest: a client in namespace S mounts S's
#                         own knfsd (plain.test) serving RPC-with-TLS, one
#                         agent started on demand for both handshakes
#   CLIENT=upstream-pair  the peer's kernel booted alone (tlsh.role=pair):
#                         its client mounts its own knfsd (ref.test),
#                         tlshd resident for both handshakes
# Both go over the VM's loopback; only throughput and CPU (tput.*, cpu.*:
# client and server together) are measured, for none, tls (PAIR_REPS times)
# and, as often, plaintext NFS through stunnel in the same VM (.stunnel):
# each pair's own kTLS/stunnel ratio.
case $CLIENT in
tlsh-pair)
	if [ -z "${PAIR_IN_S:-}" ]; then
		PAIR_IN_S=1 exec ip netns exec S bash "$0"
	fi
	SERVER=plain.test EXPORT=/srv/export ;;
esac
M=/mnt/peerbench
CERTS=/etc/tlsh-test-certs
P=peer.$CLIENT

emit() { echo "BENCH $P.$1 $2"; }
na() { local m=$1; shift; echo "BENCHNA $P.$m $*"; }
info() { echo "BENCHINFO $P.$*"; }
now() { NOW=${EPOCHREALTIME/./}; }
ms_since() { now; MS=$(( (NOW - $1) / 1000 )).$(printf '%03d' $(( (NOW - $1) % 1000 ))); }
cpu_ticks() { awk '/^cpu / {print $2+$3+$4+$7+$8+$9; exit}' /proc/stat; }

# the server peer's control service: peer COMMAND... from
# tests/guest/peer-lib.sh (run.sh puts it in front of this file); tlshd
# takes up to 10 s to come up
PEER_TIMEOUT=30
ctl() { peer "$@" > /dev/null; }

mnt() { mount -t nfs -o "vers=4.2,retry=0,$1" "$SERVER:$EXPORT" $M; }

# Our agent's priorities here (our guest only): its defaults with
# AES-256-GCM as the only cipher, the one tlshd negotiates (GnuTLS's
# default order puts it first; ours puts AES-128-GCM first), so that both
# sides of every ratio encrypt with the same cipher. cipher_info KIND: the
# cipher of the mounted TLS connection, from ss's ULP line, as a note.
# The pairs' cipher is PAIR_CIPHER (BENCH_PAIR_CIPHER, default
# AES-256-GCM): ours gets it the same way; tlshd, which has no setting for
# it, gets it first in GnuTLS's default priorities in the 6.12 VM
# (pair_tlshd_cipher).
: "${PAIR_CIPHER:=AES-256-GCM}"
case $CLIENT in
tlsh)
	. /tlsh/guest/tlsh-lib.sh
	TLSH_PRIO=$(one_cipher_priorities AES-256-GCM) ;;
tlsh-pair)
	. /tlsh/guest/tlsh-lib.sh
	TLSH_PRIO=$(one_cipher_priorities "$PAIR_CIPHER") ;;
esac
case $PAIR_CIPHER in
AES-128-GCM) OSSL_SUITE=TLS_AES_128_GCM_SHA256 ;;
AES-256-GCM) OSSL_SUITE=TLS_AES_256_GCM_SHA384 ;;
*) echo "# peer compare: BENCH_PAIR_CIPHER=$PAIR_CIPHER is not AES-128-GCM or AES-256-GCM"; exit 1 ;;
esac
cipher_info() {
	info "cipher.$1" "$(ss -tnie state established | grep -o 'tcp-ulp-tls.*cipher: [^ ]*' | grep -o '[^ ]*$' | sort -u | tr '\n' ' ')"
}

agents() { pgrep -x tlsh-helper; }
agent_gone() { [ -z "$(agents)" ]; }
wait_agent_gone() {
	local i
	for i in $(seq 300); do agent_gone && return 0; sleep 0.1; done
	return 1
}

# mount_latency METRIC OPTIONS [cold]: PEER_MOUNT_REPS mount+umount
# pairs, the mount timed; "cold": no agent running before each
mount_latency() {
	local metric=$1 opts=$2 cold=${3:-} i ok=0
	umount $M 2>/dev/null
	# one untimed mount: the server's export cache, the client's name lookups
	[ -n "$cold" ] || { mnt "$opts" && umount $M; }
	for i in $(seq "$PEER_MOUNT_REPS"); do
		[ -z "$cold" ] || wait_agent_gone || { na "$metric" "the agent did not exit"; return; }
		now; local t0=$NOW
		if mnt "$opts"; then
			ms_since $t0
			emit "$metric" "$MS"
			ok=$((ok + 1))
			umount $M
		fi
	done
	[ $ok -gt 0 ] || na "$metric" "no mount with $opts succeeded"
}

# transfer KIND OPTIONS: write then read PEER_MIB MiB
transfer() {
	local kind=$1 opts=$2 t0 c0 c1
	mnt "$opts" || { na "tput.write.$kind" "mount with $opts failed"; return; }
	[ "$kind" != tls ] || cipher_info tls
	rm -f $M/bench-$CLIENT
	c0=$(cpu_ticks); now; t0=$NOW
	if dd if=/dev/zero of=$M/bench-$CLIENT bs=1M count="$PEER_MIB" conv=fsync status=none; then
		ms_since $t0; c1=$(cpu_ticks)
		emit "tput.write.$kind" "$(awk -v m="$PEER_MIB" -v t="$MS" 'BEGIN { printf "%.2f", m * 1000 / t }')"
		emit "cpu.write.$kind" "$(awk -v m="$PEER_MIB" -v c=$((c1 - c0)) 'BEGIN { printf "%.3f", c * 10 / m }')"
	else
		na "tput.write.$kind" "dd failed"
	fi
	umount $M
	mnt "$opts" || { na "tput.read.$kind" "remount failed"; return; }
	c0=$(cpu_ticks); now; t0=$NOW
	if dd if=$M/bench-$CLIENT of=/dev/null bs=1M status=none; then
		ms_since $t0; c1=$(cpu_ticks)
		emit "tput.read.$kind" "$(awk -v m="$PEER_MIB" -v t="$MS" 'BEGIN { printf "%.2f", m * 1000 / t }')"
		emit "cpu.read.$kind" "$(awk -v m="$PEER_MIB" -v c=$((c1 - c0)) 'BEGIN { printf "%.3f", c * 10 / m }')"
	else
		na "tput.read.$kind" "dd failed"
	fi
	rm -f $M/bench-$CLIENT
	umount $M
}

# pair_cipher: the kernel's AES-GCM alone (crypto-loop: 64 MiB of 16 KiB
# kTLS records over loopback TCP, both ends; tests/bench/crypto-loop.c),
# the same program in both pairs' VMs: crypto.ktls.CIPHER, CPU ms per MiB
pair_cipher() {
	local c out
	for c in AES-128-GCM AES-256-GCM; do
		if out=$(crypto-loop ktls $c 64 2>&1); then
			read -r _ _ _ _ out _ <<< "$out"
			emit "crypto.ktls.$c" "$out"
		else
			na "crypto.ktls.$c" "failed: $out"
		fi
	done
}

# pair_profile: with PAIR_PROFILE=1 (BENCH_PROFILE=1: run.sh adds perf and
# /etc/bench/cipher-symbols, the symbols of this kernel's crypto objects,
# to the root file system), 64 MiB written and read back over tls under
# perf record -a -F 500 (few samples: little overhead), untimed. Each
# direction's busy CPU per MiB is split by the samples' symbols:
# prof.DIR.cipher (the cipher and the crypto API: arch/x86/crypto, crypto,
# lib/crypto), prof.DIR.copy (memory copies and clears), prof.DIR.rest
# (everything else), in ms/MiB; prof.DIR.idle the idle share of all
# samples (%); the top symbols of the rest, the copies and the cipher as
# notes.
# By symbol, not call chain: 6.1's AES-GCM assembly uses %rbp, so frame-
# pointer call chains through it are lost.
pair_profile() {
	local dir c0 c1 t=/tmp/pair-prof mib=64
	command -v perf > /dev/null && [ -s /etc/bench/cipher-symbols ] ||
		{ na prof.write.cipher "no perf or cipher symbols in the root file system"; return; }
	mkdir -p $t
	mnt xprtsec=tls || { na prof.write.cipher "mount failed"; return; }
	for dir in write read; do
		if [ $dir = read ]; then
			umount $M
			echo 3 > /proc/sys/vm/drop_caches
			mnt xprtsec=tls || { na prof.read.cipher "remount failed"; return; }
		fi
		c0=$(cpu_ticks)
		if [ $dir = write ]; then
			perf record -q -a -F 500 -o $t/$dir.data -- \
				dd if=/dev/zero of=$M/prof bs=1M count=$mib conv=fsync status=none
		else
			perf record -q -a -F 500 -o $t/$dir.data -- dd if=$M/prof of=/dev/null bs=1M status=none
		fi
		c1=$(cpu_ticks)
		perf report -i $t/$dir.data --stdio --no-children --sort sym 2> /dev/null |
			awk -v syms=/etc/bench/cipher-symbols -v cpu=$(( (c1 - c0) * 10 )) -v mib=$mib \
			    -v p="BENCH $P.prof.$dir" -v notes="$t/$dir" '
			BEGIN { while ((getline s < syms) > 0) cipher[s] = 1
				# the top symbols of each kind: notes.NAME
				name["rest"] = "top"; most["rest"] = 6
				name["copy"] = "copies"; most["copy"] = 4
				name["cipher"] = "ciphers"; most["cipher"] = 6 }
			/^#/ || NF < 3 || $2 != "[k]" && $2 != "[.]" { next }
			{ pc = $1; sub("%", "", pc); s = $3
			  if (s in cipher) k = "cipher"
			  else if (s ~ /idle$|^default_idle|^poll_idle|^mwait_idle/) k = "idle"
			  else if (s ~ /mem(cpy|move|set)|copy_user|rep_(movs|stos)|clear_user|copy_page|_copy_(to|from)_iter/) k = "copy"
			  else k = "rest"
			  if ((k in name) && listed[k]++ < most[k]) printf "%s %s%%, ", s, pc > (notes "." name[k])
			  share[k] += pc }
			END { busy = share["cipher"] + share["copy"] + share["rest"]
			      if (busy <= 0) exit 1
			      for (k in share) if (k != "idle")
				      printf "%s.%s %.1f\n", p, k, share[k] / busy * cpu / mib
			      printf "%s.idle %.1f\n", p, share["idle"] }' ||
			na prof.$dir.cipher "perf report gave no samples"
		for n in top copies ciphers; do
			[ -s $t/$dir.$n ] && info "prof.$dir.$n" "$(sed 's/, $//' $t/$dir.$n)"
		done
	done
	rm -f $M/prof
	umount $M
	rm -rf $t
}

# pair_tlshd_cipher: (6.12 pair) tlshd restarted with PAIR_CIPHER first in
# GnuTLS's default priorities (/etc/gnutls/config, read when tlshd starts),
# from which tlshd orders the ciphers it offers and accepts; the other
# AES-GCM stays second (tlshd refuses to start if one of its PSK priority
# strings, SHA-256 or SHA-384, is left without a cipher). Both ends are
# tlshd, and GnuTLS takes the client's order.
pair_tlshd_cipher() {
	local other=AES-256-GCM
	[ "$PAIR_CIPHER" = AES-128-GCM ] || other=AES-128-GCM
	mkdir -p /etc/gnutls
	printf '[overrides]\ndefault-priority-string = NORMAL:-CIPHER-ALL:+%s:+%s\n' \
		"$PAIR_CIPHER" "$other" > /etc/gnutls/config
	(. /etc/peer/peer-lib.sh && tlshd_start trusted)
}

# pair_stunnel: plaintext NFS through a stunnel tunnel inside the VM
# (127.0.0.1:2050 -> 127.0.0.1:2051 -> the VM's knfsd), PAIR_CIPHER on both
# stunnels: tput/cpu.*.stunnel, so that each pair has its own kTLS/stunnel
# ratio, with the same OpenSSL and stunnel (this machine's) in both VMs
pair_stunnel() {
	local d=/tmp/pair-stunnel host=server.test cert=server sp cp i
	[ "$CLIENT" = tlsh-pair ] || host=ref.test cert=ref
	command -v stunnel4 > /dev/null || { na tput.write.stunnel "no stunnel4 in the VM"; return; }
	mkdir -p $d
	cat > $d/s.conf <<C
foreground = yes
pid =
output = $d/s.log
[nfs]
accept = 127.0.0.1:2051
connect = 127.0.0.1:2049
cert = $CERTS/$cert.pem
key = $CERTS/$cert-key.pem
ciphersuites = $OSSL_SUITE
C
	cat > $d/c.conf <<C
foreground = yes
pid =
output = $d/c.log
[nfs]
client = yes
accept = 127.0.0.1:2050
connect = 127.0.0.1:2051
CAfile = $CERTS/ca.pem
verifyChain = yes
checkHost = $host
ciphersuites = $OSSL_SUITE
debug = info
C
	stunnel4 $d/s.conf > /dev/null 2>&1 &
	sp=$!
	stunnel4 $d/c.conf > /dev/null 2>&1 &
	cp=$!
	for i in $(seq 100); do
		ss -ltn | grep -q '127.0.0.1:2050 ' && ss -ltn | grep -q '127.0.0.1:2051 ' && break
		sleep 0.1
	done
	SERVER=127.0.0.1 transfer stunnel xprtsec=none,port=2050
	info cipher.stunnel "$(grep -o 'ciphersuite: [A-Z0-9_]*' $d/c.log | sort -u | awk '{printf "%s ", $2}')"
	kill $sp $cp 2> /dev/null
	wait $sp $cp 2> /dev/null
	rm -rf $d
}

# pair_transfers: a first, untimed mount and 32 MiB each way (the first
# write into a fresh server and client ran at a fifth of the later
# rate), then none, PAIR_REPS rounds of tls and stunnel in turn (so that
# a drift of the machine's speed touches both alike), the cipher alone,
# and the profile
pair_transfers() {
	local r
	if mnt xprtsec=none; then
		dd if=/dev/zero of=$M/warm-up bs=1M count=32 conv=fsync status=none
		umount $M
		mnt xprtsec=none && dd if=$M/warm-up of=/dev/null bs=1M status=none
		rm -f $M/warm-up
		umount $M
	fi
	transfer none xprtsec=none
	for r in $(seq "$PAIR_REPS"); do
		transfer tls xprtsec=tls
		pair_stunnel
	done
	pair_cipher
	[ "${PAIR_PROFILE:-0}" = 0 ] || pair_profile
}

mkdir -p $M
info kernel "$(uname -r), $(nproc) vCPU, $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) MiB"
case $CLIENT in
tlsh-pair)
	mkdir -p /etc/tlsh
	cat > /etc/tlsh/tlsh-helper.conf <<C
[global]
trust-store = $CERTS/ca.pem
$KNFSD_CONF
idle-timeout = 2
log-level = warning
$TLSH_PRIO
C
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	echo 1 > /proc/fs/nfsd/tls
	info agent "tlsh-helper for both ends, started by request-key"
	pair_transfers
	echo 0 > /proc/fs/nfsd/tls
	exit 0 ;;
upstream-pair)
	info agent "tlshd of ktls-utils 1.4.0, resident, for both ends"
	pair_tlshd_cipher || echo "# peer compare: tlshd did not restart with $PAIR_CIPHER first"
	pair_transfers
	exit 0 ;;
esac
ctl tlshd start trusted || echo "# peer compare: the server's tlshd did not (re)start"
if [ "$CLIENT" = tlsh ]; then
	# the agent trusts the bench CA, exits 2 s after its last handshake
	# (the cold mounts wait for that), logs only warnings
	mkdir -p /etc/tlsh
	cat > /etc/tlsh/tlsh-helper.conf <<C
[global]
trust-store = $CERTS/ca.pem
idle-timeout = 2
log-level = warning
$TLSH_PRIO
C
	info agent "tlsh-helper, started by request-key, idle-timeout 2 s"
else
	info agent "tlshd of ktls-utils 1.4.0, resident"
fi

mount_latency mount.none xprtsec=none
if [ "$CLIENT" = tlsh ]; then
	mount_latency mount.tls.warm xprtsec=tls
	mount_latency mount.tls.cold xprtsec=tls cold
else
	mount_latency mount.tls.warm xprtsec=tls
	na mount.tls.cold "tlshd is resident: every mount is warm"
fi

if ctl tlshd stop; then
	if [ "$CLIENT" = tlsh ]; then
		mount_latency mount.auto.notlshd xprtsec=auto
		mount_latency mount.none.notlshd xprtsec=none
	else
		na mount.auto.notlshd "linux 6.12 has no xprtsec=auto"
		mount_latency mount.none.notlshd xprtsec=none
	fi
	ctl tlshd start trusted || echo "# peer compare: the server's tlshd did not restart"
else
	na mount.auto.notlshd "the server's tlshd could not be stopped"
fi

transfer none xprtsec=none
transfer tls xprtsec=tls
exit 0
