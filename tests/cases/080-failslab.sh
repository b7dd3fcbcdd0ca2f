#!/bin/bash
# Allocation failures (failslab, then fail_page_alloc) injected into the
# handshake and mount paths: only tasks marked with /proc/PID/make-it-fail
# fail their slab or page allocations (task-filter), i.e. the agent
# (tlsh-helper and its handshake processes, through a request-key rule that marks it
# before exec) and the process writing the handshake request or calling
# mount(2); the kernel code they run is AF_TLSH, kTLS setup, the tlsh key
# type, SUNRPC client creation and the NFS mount. (x86_64 has no stack
# filter for fault injection: the task filter is what limits injection
# to these paths.) Each handshake's done() runs exactly once with 0 or
# an error, within its deadline; each mount succeeds or fails within a
# bound; nothing is reported by the kernel; afterwards, with injection
# off, handshakes and mounts work, the test module unloads (no leaked
# references) and the namespace used can be deleted.
# tlsh-vm: timeout=600
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

# debugfs at /debug (guest init): "ip netns exec" remounts /sys
F=/debug/failslab
if [ ! -x /usr/sbin/tlsh-helper ]; then
	skip "failslab: tlsh-helper is not built"
	exit 0
fi

if [ ! -d $F ]; then
	not_ok "failslab: no $F (tlsh.config has FAILSLAB and FAULT_INJECTION_DEBUG_FS)"
	finish
fi
nfs_trace_setup
check "test consumer module loads" tlsh_setup
serve 4433 server
S=$TLSH_SERVER_ADDR
rule=/etc/request-key.d/tlsh.conf
cp "$rule" /tmp/tlsh.conf.saved
cat > /usr/local/bin/tlsh-helper-failing <<'W'
#!/bin/sh
echo 1 > /proc/self/make-it-fail
exec /usr/sbin/tlsh-helper "$@"
W
chmod +x /usr/local/bin/tlsh-helper-failing
echo "create tlsh * * /usr/local/bin/tlsh-helper-failing -k %k" > "$rule"

# injection: a share of the allocations of marked tasks, any GFP flags
# (also GFP_KERNEL ones), one line per injection in the kernel log
# (verbose=1: no stack dump). The share cycles from round to round
# through 12 and 4 per cent and one allocation in 400 (probability 100,
# interval 400): a high one fails the first allocations, a low one lets
# a handshake or mount get deep, or through, before one fails.
# inject_on DIR: arm the fault attribute in DIR (off: probability 0)
inject_on() {
	echo 0 > "$1"/times
	echo Y > "$1"/task-filter
	echo N > "$1"/ignore-gfp-wait
	echo 1 > "$1"/verbose
	echo 12 > "$1"/probability
	echo 1 > "$1"/interval
	echo -1 > "$1"/times
}
inject_off() {
	echo 1 > "$1"/interval
	echo 0 > "$1"/probability
	echo 0 > "$1"/times
}
pcts=(100 12 4)
ivals=(400 1 1)
# level DIR ROUND: this round's share
level() {
	echo ${ivals[$2 % 3]} > "$1"/interval
	echo ${pcts[$2 % 3]} > "$1"/probability
}

# handshake_rounds DIR ROUNDS: ROUNDS rounds of 4 handshakes written by a
# marked task to the test module, served by a marked agent
handshake_rounds() {
	local f=$1 rounds=$2 r start out el line
	local bad_once=0 bad_time=0 okhs=0 failhs=0 refused=0
	for r in $(seq "$rounds"); do
		level "$f" "$r"
		start=$(date +%s)
		if ! sh -c 'echo 1 > /proc/self/make-it-fail; echo "addr='$S' port=4433 name=server.test timeout=8000 count=4" > /debug/tlsh_test/run' 2> /dev/null; then
			# the request itself could not be set up (ENOMEM to the writer)
			refused=$((refused + 1))
			continue
		fi
		out=$(cat /debug/tlsh_test/run)
		el=$(( $(date +%s) - start ))
		[ $el -le 20 ] || bad_time=$((bad_time + 1))
		# each line: done=1 (exactly once); a refused start has done=0
		while read -r line; do
			case "$line" in
			*" start=0 status=0 done=1 "*) okhs=$((okhs + 1)) ;;
			*" start=0 status=-"*" done=1 "*) failhs=$((failhs + 1)) ;;
			*" start=-"*" done=0 "*) failhs=$((failhs + 1)) ;;
			[0-9]*) bad_once=$((bad_once + 1)); echo "# $line" ;;
			esac
		done <<< "$out"
		# let the agent exit now and then, so spawning is injected too
		[ $((r % 5)) = 0 ] && pkill -x tlsh-helper
	done
	check "$rounds rounds of 4 handshakes under ${f##*/}: each done() exactly once or refused at start ($okhs ok, $failhs failed, $refused rounds refused with ENOMEM)" [ "$bad_once/$((okhs + failhs))" = "0/$(( (rounds - refused) * 4))" ]
	check "... every round within 20 s (deadline 8 s)" [ $bad_time = 0 ]
	sleep 0.5
}

# mount_rounds DIR ROUNDS: xprtsec=tls mounts by a marked task
mount_rounds() {
	local f=$1 rounds=$2 r start el mres="" bad_mt=0
	for r in $(seq "$rounds"); do
		level "$f" "$r"
		start=$(date +%s)
		if sh -c 'echo 1 > /proc/self/make-it-fail; exec timeout 90 mount -t nfs -o vers=4.2,xprtsec=tls,retry=0,soft,timeo=50,retrans=2 '"$TLSH_SERVER_NAME:$TLSH_EXPORT $M" 2>/dev/null; then
			mres="${mres}m"
			ls $M > /dev/null 2>&1
			umount $M 2>/dev/null || umount -f -l $M
		else
			mres="${mres}f"
		fi
		el=$(( $(date +%s) - start ))
		[ $el -le 60 ] || bad_mt=$((bad_mt + 1))
	done
	mkdir -p $M
	echo "# mounts under ${f##*/}: $mres (m mounted, f failed)"
	check "$rounds xprtsec=tls mounts under ${f##*/} each end within 60 s" [ $bad_mt = 0 ]
}

# injections MARK: how many failures were injected since MARK
injections() {
	dmesg_since "$1" | grep -c 'FAULT_INJECTION: forcing a failure'
}
# inject_phase DIR HANDSHAKE-ROUNDS MOUNT-ROUNDS: handshakes, then mounts,
# with DIR's injection on; the handshakes must have been injected into
inject_phase() {
	local f=$1 name=${1##*/}
	inject_on "$f"
	kmark "$name"
	handshake_rounds "$f" "$2"
	check "$name injected failures into the handshake path ($(injections "$name"))" \
		[ "$(injections "$name")" -gt 0 ]
	mount_rounds "$f" "$3"
	inject_off "$f"
	echo "# $name: $(injections "$name") failures injected in all"
}

M=/mnt/fs
# --- failslab: handshakes, mounts -----------------------------------------
inject_phase $F 25 12

# --- fail_page_alloc: the page allocations of the same tasks, order 0 up
# (socket buffers, kTLS and TCP pages, page tables, kernel stacks of the
# agent's processes); user pages (__GFP_HIGHMEM) are left alone, or the
# agent's own page faults would fail and retry without end. A page
# allocation failure is printed with a stack (warn_alloc); the runner
# does not count those that follow an injection as a kernel report.
P=/debug/fail_page_alloc
if [ -d $P ]; then
	echo 0 > $P/min-order
	echo Y > $P/ignore-gfp-highmem
	inject_phase $P 12 6
else
	not_ok "fail_page_alloc: no $P (tlsh.config has FAIL_PAGE_ALLOC)"
fi
cp /tmp/tlsh.conf.saved "$rule"

# --- afterwards ----------------------------------------------------------
pkill -x tlsh-helper
wait_for 15 sh -c '! pgrep tlsh-helper > /dev/null'
out=$(hs addr=$S port=4433 name=server.test)
check "injection off: a handshake works" grep -q "status=0 done=1 cancelled=0 data=ok" <<< "$out"
check "injection off: an xprtsec=tls mount works, encrypted" sh -c ". /tlsh/guest/lib.sh; . /tlsh/guest/nfs-lib.sh; nfs_mount vers=4.2,xprtsec=tls $TLSH_SERVER_NAME $M && encrypted $M 1; r=\$?; umount $M; exit \$r"
client_ns FS 192.0.2.99 fs0
wait_for 10 ip netns exec FS ping -c1 -W1 $S > /dev/null
echo 1 > $F/probability
echo -1 > $F/times
echo "create tlsh * * /usr/local/bin/tlsh-helper-failing -k %k" > "$rule"
out=$(ip netns exec FS sh -c 'echo "addr='$S' port=4433 name=server.test timeout=8000 count=8" > /debug/tlsh_test/run; cat /debug/tlsh_test/run')
inject_off $F
cp /tmp/tlsh.conf.saved "$rule"
check "handshakes in namespace FS under injection: none lost" [ "$(grep -c ' done=1 \| start=-' <<< "$out")" = 8 ]
pkill -x tlsh-helper
wait_for 15 sh -c '! pgrep tlsh-helper > /dev/null'
check "namespace FS can be deleted afterwards" ip netns del FS
check "... and is dismantled (its veth end leaves the server)" ns_gone fs0 20
check "the test module unloads (no leaked references)" rmmod tlsh_test
pkill gnutls-serv
rm -f /usr/local/bin/tlsh-helper-failing
[ "${TLSH_FAILED:-0}" = 0 ] || tail -n 40 /var/log/messages
finish
