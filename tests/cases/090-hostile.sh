#!/bin/bash
# Hostile user space (tests/tools/tlsh-fuzz.c): random AF_TLSH socket call
# sequences as root, as nobody and as root of a private user+net
# namespace, with handshake requests of the test consumer arriving
# meanwhile; a hostile agent in place of tlsh-helper; user-space requests of the "tlsh" key type with odd
# descriptions and huge callout data (refused, no helper spawned);
# malformed NFS mount options. The whole run lasts about tlsh.fuzz=SECONDS
# (kernel command line; default 20; make check-debug gives 120). The seed
# is tlsh.fuzz_seed=N, or the time; it is printed, and a kernel report
# during the run prints the last recorded calls.
# tlsh-vm: timeout=300
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh

total=20
seed=$(date +%s)
for a in $(cat /proc/cmdline); do
	case "$a" in
	tlsh.fuzz=*) total=${a#tlsh.fuzz=} ;;
	tlsh.fuzz_seed=*) seed=${a#tlsh.fuzz_seed=} ;;
	esac
done
if ! command -v tlsh-fuzz >/dev/null; then
	skip "hostile user space: tlsh-fuzz is not built"
	exit 0
fi
# share of the time of each part, in percent
t() { awk -v t="$total" -v p="$1" 'BEGIN { v = t * p / 100; if (v < 1) v = 1; printf "%.1f", v }'; }
echo "# hostile: seed=$seed, about ${total} s of fuzzing"
ring=$TLSH_ARTIFACTS/fuzz.ring
dmesg_start=$(dmesg | wc -l)
S=$TLSH_SERVER_ADDR
# knfsd itself (the bench may put a TLS front at the server's name)
plain=${TLSH_PLAIN_ADDR:-$TLSH_SERVER_ADDR}

# near this script's limit, show what is stuck (D state) and the last calls
limit=$(sed -n 's/^# tlsh-vm: timeout=\([0-9]*\).*/\1/p' "$0" | head -n 1)
(
	sleep $(( ${limit:-300} * 85 / 100 ))
	echo "# hostile: still running at 85% of ${limit:-300} s; tasks in D state:"
	for p in /proc/[0-9]*; do
		grep -q '^State:.*D' $p/status 2>/dev/null || continue
		echo "# --- ${p#/proc/} $(tr '\0' ' ' < $p/cmdline)"
		sed 's/^/#     /' $p/stack
	done
	ps -eo pid,stat,wchan:28,args | grep -v ' \[' | sed 's/^/# /'
	tlsh-fuzz -R "$ring" | tail -n 30 | sed 's/^/# /'
) &
watchdog=$!

kernel_reported() {
	dmesg | tail -n +$((dmesg_start + 1)) | grep -qE "$TLSH_KERNEL_REPORT_RE"
}

# fuzz DESCRIPTION ARGS...: one tlsh-fuzz run, one TAP line; its output
# is kept in the artifacts, the summary lines are shown
n=0
fuzz() {
	local d=$1 log rc
	shift
	n=$((n + 1))
	log=$TLSH_ARTIFACTS/fuzz-$n.log
	tlsh-fuzz -s "$((seed + n))" -r "$ring" "$@" > "$log" 2>&1
	rc=$?
	grep -E "^tlsh-fuzz: (w[0-9]+|reproduce|xprtsec|tlsh-helper|done)|^VIOLATION" "$log" | head -n 40 | sed 's/^/# /'
	if kernel_reported; then
		not_ok "$d: kernel report (last calls below; reproduce: tlsh-fuzz -s $((seed + n)) $*)"
		tlsh-fuzz -R "$ring" | tail -n 60 | sed 's/^/# /'
		dmesg | tail -n +$((dmesg_start + 1)) | grep -E -A30 "$TLSH_KERNEL_REPORT_RE" | head -n 80 | sed 's/^/# /'
		dmesg_start=$(dmesg | wc -l)
		return 1
	fi
	if [ $rc -eq 0 ] && grep -q "^tlsh-fuzz: done, " "$log"; then
		ok "$d ($(grep -o 'ops=[0-9]*' "$log" | awk -F= '{s+=$2} END {print s}') calls)"
	else
		not_ok "$d (exit $rc, see $log)"
		tail -n 5 "$log" | sed 's/^/# /'
	fi
}

consumer=0
if tlsh_setup; then
	consumer=1
else
	echo "# the test consumer module is not available: sockets fuzzed without handshakes"
	mkdir -p /etc/tlsh
	echo 1 > $TRACE/tracing_on 2>/dev/null
	for e in $TRACE/events/tlsh/tlsh_*/enable; do echo 1 > "$e"; done 2>/dev/null
fi
wait_for 15 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'

echo "# hostile: part 1 at $SECONDS s"
# --- 1. the tlsh key type from user space: refused, no helper ------------
before=$(count tlsh_upcall_start)
fuzz "request_key/add_key/keyctl of type tlsh as root: all refused" -m keys -t "$(t 8)"
fuzz "request_key/add_key/keyctl of type tlsh as nobody: all refused" -m keys -u -t "$(t 7)"
as_user() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }
huge=$(head -c 100000 /dev/zero | tr '\0' A)
long=$(head -c 5000 /dev/zero | tr '\0' n)
bad=0
for desc in "" "netns:1:1" "netns:99999999999999999999:1" "%k%s%n" "$long" \
	$'netns:1:1\n' "netns:4026531840:1 extra"; do
	for co in "" "$huge" "${huge:0:4095}" "${huge:0:4096}"; do
		for who in "" as_user; do
			if $who keyctl request2 tlsh "$desc" "$co" @s >/dev/null 2>&1; then
				echo "# keyctl request2 tlsh '${desc:0:20}' (callout ${#co} bytes) ${who:-as root} succeeded"
				bad=$((bad + 1))
			fi
		done
	done
	if keyctl add tlsh "$desc" "${huge:0:100000}" @s >/dev/null 2>&1; then
		echo "# keyctl add tlsh '${desc:0:20}' succeeded"
		bad=$((bad + 1))
	fi
done
check "keyctl request2/add of type tlsh with odd descriptions and huge callout data: all refused" [ $bad = 0 ]
check "refused key requests traced no upcall (tlsh_upcall_start unchanged)" [ "$(count tlsh_upcall_start)" = "$before" ]
check "refused key requests started no tlsh-helper" [ "$(helpers)" = 0 ]
check "no tlsh key was created" [ -z "$(awk '$8 == "tlsh" && $2 !~ /N/' /proc/keys)" ]

echo "# hostile: part 2 at $SECONDS s"
# --- 2. AF_TLSH sockets, with handshakes arriving meanwhile --------------
# Upcalls fail fast (the system's catch-all negates the key), so the
# only listeners are the fuzzer's.
mv /etc/request-key.d/tlsh.conf /tmp/tlsh.conf.hostile
flag=/tmp/hostile.running
touch $flag
if [ $consumer = 1 ]; then
	ip netns exec S tcp-sink 4437 &
	sink=$!
	sleep 0.5
	(while [ -e $flag ]; do
		echo "addr=$S port=4437 name=server.test timeout=1000 count=8 data=none" > /debug/tlsh_test/run 2>/dev/null
	done) &
	feeder=$!
fi
fuzz "AF_TLSH calls as root, 2 workers x 2 threads" -m sock -j 2 -t "$(t 30)"
fuzz "AF_TLSH calls as nobody (EPERM for bind/listen/accept)" -m sock -u -j 2 -t "$(t 15)"
fuzz "AF_TLSH calls as nobody in its own user and net namespace" -m sock -U -t "$(t 10)"
if [ $consumer = 1 ]; then
	out=$(cat /debug/tlsh_test/run)
	check "handshake requests completed while the fuzzer held the listener" grep -q "done=1" <<< "$out"
	# a hostile agent started by request-key for every upcall: binds to
	# its key or to others, instantiates with odd payloads, negates,
	# accepts and drops handshakes, forks, dies at random points
	echo "create tlsh * * /usr/local/bin/tlsh-fuzz -m helper -k %k -s $((seed + 100)) -t 3" > /etc/request-key.d/tlsh.conf
	: > $TLSH_ARTIFACTS/fuzz-helper.log
	up0=$(count tlsh_upcall_start)
	sleep "$(t 10)"
	echo "create tlsh * * /bin/false" > /etc/request-key.d/tlsh.conf
	wait_for 10 sh -c '! pgrep -f "tlsh-fuz[z] -m helpe[r]" >/dev/null'
	ups=$(( $(count tlsh_upcall_start) - up0 ))
	echo "# hostile agent: $ups upcalls, $(grep -c ': start' $TLSH_ARTIFACTS/fuzz-helper.log) runs (log: $TLSH_ARTIFACTS/fuzz-helper.log)"
	grep -o ': [a-z_ ]*[(=]' $TLSH_ARTIFACTS/fuzz-helper.log | sort | uniq -c | sort -rn | head -n 12 | sed 's/^/#   /'
	check "hostile agents were started by the kernel" [ "$ups" -ge 1 ]
	check "no hostile agent is left over" sh -c '! pgrep -f "tlsh-fuz[z] -m helpe[r]" >/dev/null'
fi
rm -f $flag
if [ $consumer = 1 ]; then
	wait $feeder
	out=$(echo "addr=$S port=4437 name=server.test timeout=3000 data=none" > /debug/tlsh_test/run; cat /debug/tlsh_test/run)
	d="after the hostile agents, a handshake with no agent fails cleanly (ENOKEY)"
	if grep -q "status=-126 done=1" <<< "$out"; then
		ok "$d"
	else
		not_ok "$d"
		echo "# got: $out"
		grep ' tlsh_' $TRACE/trace | tail -n 12 | sed 's/^/# /'
	fi
	kill $sink 2>/dev/null
	wait $sink 2>/dev/null
fi
mv /tmp/tlsh.conf.hostile /etc/request-key.d/tlsh.conf
check "no listener left behind: a fresh listener can be bound" grep -q "listen ok" <<< "$(tlsh-probe listen 2>&1)"
if [ $consumer = 1 ] && [ -x /usr/sbin/tlsh-helper ]; then
	serve 4433 server
	out=$(hs addr=$S port=4433 name=server.test)
	check "after the fuzzing an on-demand handshake still works" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"
	pkill gnutls-serv
	wait_for 15 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'
fi

echo "# hostile: part 3 at $SECONDS s"
# --- 3. NFS mount options ------------------------------------------------
mkdir -p /tmp/hostile-mnt
# the NFS option parser logs every bad option: keep that off the console
dmesg -n 1
xprtsec=off
out=$(mount -t nfs -o vers=4.2,retry=0,xprtsec=none "$plain:$TLSH_EXPORT" /tmp/hostile-mnt 2>&1)
if [ $? = 0 ]; then
	xprtsec=on
	umount /tmp/hostile-mnt
elif ! dmesg | tail -n 20 | grep -q "Unknown parameter 'xprtsec'" &&
     ! grep -qi "incorrect mount option\|unknown" <<< "$out"; then
	xprtsec=on	# known, but refused for another reason: fuzz it anyway
fi
fuzz "malformed NFS mount options (mount(2), fsconfig(2))" -m mount -a "$plain" -X $xprtsec -t "$(t 20)"
bad=0
opt_long=$(head -c 3000 /dev/zero | tr '\0' 9)
for o in "rsize=$opt_long" "vers=4.9" "vers=abc" "port=-1" "port=65536" "timeo=abc" \
	"proto=tcp,proto=udp,proto=bogus" "sec=bogus" "nconnect=0" "nconnect=99" \
	"vers=3,vers=4.2,vers=7" "lookupcache=sometimes" "$(printf 'soft,%.0s' {1..600})vers=9"; do
	if mount -t nfs -o "retry=0,$o" "$plain:$TLSH_EXPORT" /tmp/hostile-mnt >/dev/null 2>&1; then
		echo "# mount -o '${o:0:40}' was accepted"
		umount /tmp/hostile-mnt
		bad=$((bad + 1))
	fi
done
check "malformed mount options are refused by mount(8)" [ $bad = 0 ]
if [ $xprtsec = on ]; then
	bad=0
	for o in "xprtsec=bogus" "xprtsec=" "xprtsec" "xprtsec=$opt_long" "xprtsec=TLS" \
		"xprtsec=tls,xprtsec=bogus" "xprtsec=none,xprtsec="; do
		if mount -t nfs -o "vers=4.2,retry=0,$o" "$plain:$TLSH_EXPORT" /tmp/hostile-mnt >/dev/null 2>&1; then
			echo "# mount -o '${o:0:40}' was accepted"
			umount /tmp/hostile-mnt
			bad=$((bad + 1))
		fi
	done
	check "malformed xprtsec= values are refused" [ $bad = 0 ]
else
	skip "malformed xprtsec= values: the kernel does not know xprtsec= yet"
fi
check "a plain NFSv4.2 mount still works after all that" mount -t nfs -o vers=4.2,retry=0 "$plain:$TLSH_EXPORT" /tmp/hostile-mnt
umount /tmp/hostile-mnt 2>/dev/null
dmesg -n 5

if [ $consumer = 1 ]; then
	check "the test module unloads (no leaked references)" rmmod tlsh_test
fi
check_fail "no kernel report during the hostile run" kernel_reported
kill $watchdog 2>/dev/null
finish
