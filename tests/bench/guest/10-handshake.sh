# Handshake benchmarks (runs in C1): latency cold / warm / resident agent /
# user-space floor, scaling in one namespace and across namespaces, the
# helper's resident memory and the kernel memory of a queued handshake.
S=$TLSH_SERVER_ADDR
# gnutls-serv on 4433 asks for no client certificate, as the floor's
# server; on 4435 it asks for one (optional): then the agent, after its
# TLS 1.3 handshake, waits for the server's verdict on the certificate
# (an alert, or its first post-handshake record) before it hands the
# socket over, which the floor does not do
HS="addr=$S port=4433 name=server.test data=none timeout=120000"
HSCR="addr=$S port=4435 name=server.test data=none timeout=120000"
# the scaling runs use hs-serv (threaded, backlog 1024): gnutls-serv's small
# accept queue overflows with many connections at once (see hs-serv.c)
HSS="addr=$S port=4443 name=server.test data=none timeout=120000"

bench_setup || { echo "bench: cannot load the test consumer"; exit 1; }
serve 4433 server --disable-client-cert
serve 4435 server
ip netns exec S hs-serv 4443 $CERTS/server.pem $CERTS/server-key.pem > $TLSH_ARTIFACTS/hs-serv.log 2>&1 &
hsserv=$!
wait_for 10 sh -c "ip netns exec S ss -ltn | grep -q ':4443 '"
info kernel "$(uname -r)"
info cpus "$(grep -c ^processor /proc/cpuinfo) vCPU online, $(awk '/^model name/ {sub(/.*: /, ""); print; exit}' /proc/cpuinfo)"

# --- latency -----------------------------------------------------------
# The kinds are interleaved, one of each per repetition, so that the load
# of the machine (other VMs, builds) falls on all of them alike.
note "handshake latency, $BENCH_REPS repetitions, cold/warm/resident/floor interleaved"
cat > $BW/tt-once.sh <<'X'
#!/bin/bash
exec {fd}<>/debug/tlsh_test/run && echo "$*" >&$fd && mapfile -t L <&$fd && echo "${L[0]}"
X
chmod +x $BW/tt-once.sh
# the resident agent: tlsh-helper -f, by hand, serving C2 (kill_agents
# spares it: KEEP_PID)
kill_agents
ip netns exec C2 tlsh-helper -f -i 0 > $TLSH_ARTIFACTS/resident.log 2>&1 &
KEEP_PID=$!
wait_for 10 grep -q "serving network namespace" $TLSH_ARTIFACTS/resident.log
ip netns exec C2 $BW/tt-once.sh "$HS" > /dev/null
# the floor: one warm hs-floor process, a handshake per line it reads
coproc FLOOR { hs-floor server.test 4433 server.test $CA 0; }
# (its first handshake pays the process's first-use costs, as a freshly
# spawned agent's first one does: under TCG, translating the code anew)
echo go >&"${FLOOR[1]}"; read -r t st sess <&"${FLOOR[0]}"
info hs.floor.session "$sess"
[ "$st" = status=ok ] && emit hs.floor.first "$(us_to_ms "${t#time_us=}")"
# a second floor process whose handshakes each run in a process forked
# for it ("fork" lines), as the agent serves them: what that isolation
# costs (hs.floor.fork). Not the first process: a fork leaves the parent's
# pages copy-on-write, and its next handshake would pay for that.
mkfifo $BW/ff.in $BW/ff.out
hs-floor server.test 4433 server.test $CA 0 < $BW/ff.in > $BW/ff.out &
FFLOOR_PID=$!
exec {ffw}> $BW/ff.in {ffr}< $BW/ff.out
echo fork >&$ffw; read -r _ _ <&$ffr
fails=0
for i in $(seq "$BENCH_REPS"); do
	# cold: no agent, no key; request-key spawns tlsh-helper
	kill_agents
	tt $HS
	if tt_ok; then emit hs.cold "$(us_to_ms "$(tt_us)")"; else fails=$((fails + 1)); echo "cold: ${TT[*]}"; fi
	# warm: the agent just spawned is listening
	tt $HS
	if tt_ok; then emit hs.warm "$(us_to_ms "$(tt_us)")"; else fails=$((fails + 1)); echo "warm: ${TT[*]}"; fi
	# warm, a server that asks for a client certificate
	tt $HSCR
	if tt_ok; then emit hs.warm.certreq "$(us_to_ms "$(tt_us)")"; else fails=$((fails + 1)); echo "warm certreq: ${TT[*]}"; fi
	# resident (in C2)
	l=$(ip netns exec C2 $BW/tt-once.sh "$HS")
	case "$l" in *" start=0 status=0 done=1 "*) emit hs.resident "$(us_to_ms "${l##*time_us=}")" ;;
	*) fails=$((fails + 1)); echo "resident: $l" ;; esac
	# the floor: the same handshake from user space (timed inside hs-floor)
	echo go >&"${FLOOR[1]}"; read -r t st _ <&"${FLOOR[0]}"
	[ "$st" = status=ok ] && emit hs.floor "$(us_to_ms "${t#time_us=}")"
	echo fork >&$ffw; read -r t st _ <&$ffr
	[ "$st" = status=ok ] && emit hs.floor.fork "$(us_to_ms "${t#time_us=}")"
	# gnutls-cli: the same as a process (exec, libraries, CA loading)
	now; t0=$NOW
	gnutls-cli --x509cafile $CA -p 4433 server.test < /dev/null > /dev/null 2>&1 &&
		{ ms_since $t0; emit hs.gnutls-cli "$MS"; }
	# what a cold start pays on top: starting the agent's program (exec,
	# the dynamic loading of GnuTLS and friends), and request-key's own
	now; t0=$NOW
	tlsh-helper --version > /dev/null 2>&1
	ms_since $t0; emit hs.exec.tlsh-helper "$MS"
	now; t0=$NOW
	request-key --help > /dev/null 2>&1
	ms_since $t0; emit hs.exec.request-key "$MS"
done
[ $fails = 0 ] || info hs.failures $fails
# where a warm handshake's time goes, from the AF_TLSH tracepoints: the
# request waits for the agent (queued -> accepted: the agent's accept()
# wakes up), then the agent works (accepted -> done: six getsockopt()s,
# the GnuTLS handshake, kTLS installation, the done message); the rest of
# the consumer's time_us is the TCP connect before the request is queued
# trace_events 0|1 EVENT...: disable or enable these tlsh tracepoints
trace_events() {
	local on=$1 e
	shift
	for e in "$@"; do echo "$on" > $TRACE/events/tlsh/$e/enable; done
}
# tlsh_trace: the tls events of the trace buffer, one "TIMESTAMP EVENT
# FIRST-FIELD" line each, from the tracer's "task-pid [cpu] flags
# TIMESTAMP: event: sk=0x... ..." (timestamps in seconds)
tlsh_trace() {
	awk '{ for (i = 1; i < NF; i++) if ($(i + 1) ~ /^tlsh_[a-z_]*:$/) break
		if (i >= NF) next
		ts = $i; ev = $(i + 1); sub(/:$/, "", ts); sub(/:$/, "", ev)
		print ts, ev, $(i + 2) }' $TRACE/trace
}

note "warm handshake phases, $BENCH_REPS handshakes, AF_TLSH tracepoints"
EV="tlsh_req_queued tlsh_req_accepted tlsh_req_done"
tt $HS > /dev/null
echo > $TRACE/trace
trace_events 1 $EV
echo 1 > $TRACE/tracing_on
for i in $(seq "$BENCH_REPS"); do
	tt $HS
	tt_ok && emit hs.warm.total "$(us_to_ms "$(tt_us)")"
done
echo 0 > $TRACE/tracing_on
trace_events 0 $EV
# per request (its sk): queued -> accepted -> done
tlsh_trace | awk '$2 == "tlsh_req_queued" { q[$3] = $1 }
	$2 == "tlsh_req_accepted" { a[$3] = $1 }
	$2 == "tlsh_req_done" && ($3 in q) && ($3 in a) {
		printf "BENCH hs.warm.wait %.3f\n", (a[$3] - q[$3]) * 1000
		printf "BENCH hs.warm.agent %.3f\n", ($1 - a[$3]) * 1000
		delete q[$3]; delete a[$3] }'
# a cold handshake's phases: queued -> upcall started -> the spawned agent
# bound its listener (request-key and tlsh-helper exec'd and started)
# -> it accepted the request -> done
note "cold handshake phases, $((BENCH_REPS / 2)) handshakes, AF_TLSH tracepoints"
EV="tlsh_req_queued tlsh_upcall_start tlsh_agent_bound tlsh_req_accepted tlsh_req_done"
trace_events 1 $EV
for i in $(seq $((BENCH_REPS / 2))); do
	kill_agents
	echo > $TRACE/trace
	echo 1 > $TRACE/tracing_on
	tt $HS
	echo 0 > $TRACE/tracing_on
	tt_ok || continue
	emit hs.cold.total "$(us_to_ms "$(tt_us)")"
	# one request in the buffer: the first time of each event
	tlsh_trace | awk '!($2 in t) { t[$2] = $1 }
		END { if (("tlsh_req_done" in t) && ("tlsh_agent_bound" in t)) {
			printf "BENCH hs.cold.upcall %.3f\n", (t["tlsh_upcall_start"] - t["tlsh_req_queued"]) * 1000
			printf "BENCH hs.cold.spawn %.3f\n", (t["tlsh_agent_bound"] - t["tlsh_upcall_start"]) * 1000
			printf "BENCH hs.cold.accept %.3f\n", (t["tlsh_req_accepted"] - t["tlsh_agent_bound"]) * 1000
			printf "BENCH hs.cold.agent %.3f\n", (t["tlsh_req_done"] - t["tlsh_req_accepted"]) * 1000 } }'
done
trace_events 0 $EV
echo > $TRACE/trace
# one handshake with data over kTLS, to show the path is the real one
tt "addr=$S port=4433 name=server.test"
info hs.echo-check "${TT[0]}"
kill $KEEP_PID; wait $KEEP_PID 2>/dev/null
KEEP_PID=
eval "exec ${FLOOR[1]}>&-"; wait $FLOOR_PID 2>/dev/null
exec {ffw}>&- {ffr}<&-; wait $FFLOOR_PID 2>/dev/null

# --- one namespace, N handshakes at once (warm agent) ------------------
note "scaling: N handshakes at once in C1, $BENCH_SCALE_REPS repetitions"
tt $HSS
pid=$(pgrep -x tlsh-helper | head -1)
info helper.pid "$pid"
# the agent's memory: the proportional set size (shared pages counted
# once) of the accept loop and its handshake processes together
helper_kb() {
	local p t=0 k
	for p in $(pgrep -x tlsh-helper); do
		k=$(awk '/^Pss:/ {print $2}' /proc/$p/smaps_rollup 2>/dev/null)
		[ -n "$k" ] || k=$(awk '/^VmRSS/ {print $2}' /proc/$p/status 2>/dev/null)
		t=$((t + ${k:-0}))
	done
	echo $t
}
emit mem.helper.rss_idle_kb "$(helper_kb)"
# listen_overflows: SYNs the server namespace dropped for a full accept queue
listen_overflows() {
	ip netns exec S awk '/^TcpExt:/ {if (!h) {for (i = 1; i <= NF; i++) if ($i == "ListenOverflows") c = i; h = 1} else print $c}' /proc/net/netstat
}
for n in 1 8 64 256; do
	fails=0
	lo0=$(listen_overflows)
	lo1=0
	for i in $(seq "$BENCH_SCALE_REPS"); do
		# memory while serving: sampled in the background
		touch $BW/sampling
		( m=0; while [ -e $BW/sampling ]; do
			r=$(helper_kb)
			[ "$r" -gt $m ] && m=$r
			sleep 0.05
		  done; echo $m > $BW/rss.max ) &
		sampler=$!
		now; t0=$NOW
		tt $HSS count=$n
		ms_since $t0
		rm -f $BW/sampling; wait $sampler
		if tt_ok; then
			emit scale.hs.$n "$MS"
			emit mem.helper.rss_serving_${n}_kb "$(cat $BW/rss.max)"
		else
			fails=$((fails + 1))
			printf '%s\n' "${TT[@]}" | grep -v ' start=0 status=0 done=1 ' | head -3
		fi
		# the same from user space, right after: N threads of one process
		# (hs-floor: the cost of the handshakes alone)
		lo=$(listen_overflows)
		read -r b ok bad < <(hs-floor server.test 4443 server.test $CA 1 $n)
		[ "$bad" = failed=0 ] && emit scale.floor.$n "$(us_to_ms "${b#batch_us=}")"
		[ "$bad" = failed=0 ] || echo "floor $n: $b $ok $bad"
		lo1=$((lo1 + $(listen_overflows) - lo))
	done
	[ $fails = 0 ] || info scale.hs.$n.failures $fails
	info scale.hs.$n.listen-overflows $(( $(listen_overflows) - lo0 - lo1 ))
	info scale.floor.$n.listen-overflows $lo1
done
emit mem.helper.hwm_kb "$(awk '/^VmHWM/ {print $2}' /proc/$pid/status)"
info helper.processes_after "$(pgrep -x -c tlsh-helper)"

# --- N namespaces at once ----------------------------------------------
note "scaling: one handshake in each of N namespaces at once, cold and warm"
NS_MAX=16
for i in $(seq $NS_MAX); do
	ip netns add bn$i
	ip link add b$i type veth peer name eth0 netns bn$i
	ip link set b$i netns S
	ip -n S link set b$i master br0
	ip -n S link set b$i up
	ip -n bn$i link set lo up
	ip -n bn$i addr add 192.0.2.$((100 + i))/24 dev eth0
	ip -n bn$i link set eth0 up
done
for i in $(seq $NS_MAX); do
	wait_for 10 ip netns exec bn$i ping -c1 -W1 $S > /dev/null || echo "bench: bn$i cannot reach the server"
done
cat > $BW/nsworker.sh <<W
#!/bin/bash
touch $BW/ready.\$1
: < $BW/go
exec {fd}<>/debug/tlsh_test/run
echo "$HSS" >&\$fd
mapfile -t L <&\$fd
echo "\${EPOCHREALTIME/./} \${L[0]}" > $BW/res.\$1
W
chmod +x $BW/nsworker.sh
rm -f $BW/go; mkfifo $BW/go
# ns_round N: one handshake in bn1..bnN at once; emits the time until the
# last one finished (ms); returns 1 if one failed
ns_round() {
	local n=$1 i t0 last=0 bad=0 e l pids=()
	rm -f $BW/ready.* $BW/res.*
	for i in $(seq $n); do ip netns exec bn$i $BW/nsworker.sh $i & pids+=($!); done
	wait_for 20 sh -c "[ \$(ls $BW/ready.* 2>/dev/null | wc -l) = $n ]"
	sleep 0.3
	exec {go}> $BW/go
	now; t0=$NOW
	exec {go}>&-
	wait "${pids[@]}"
	for i in $(seq $n); do
		read -r e l < $BW/res.$i || { bad=1; continue; }
		case "$l" in *" status=0 done=1 "*) ;; *) bad=1; echo "bn$i: $l" ;; esac
		[ "$e" -gt $last ] && last=$e
	done
	NS_MS=$(us_to_ms $((last - t0)))
	return $bad
}
for n in 1 4 16; do
	for i in $(seq "$BENCH_SCALE_REPS"); do
		kill_agents
		ns_round $n && emit scale.ns.$n.cold "$NS_MS"
		ns_round $n && emit scale.ns.$n.warm "$NS_MS"
	done
done
info agents.after-16 "$(pgrep -x tlsh-helper | wc -l) tlsh-helper processes"

# --- kernel memory of a queued handshake -------------------------------
note "kernel memory: 256 handshakes queued on a stalled agent (bn1)"
kill_agents
ip netns exec S tcp-sink 4437 &
sink=$!
sleep 0.5
slab_active() { awk 'NR > 2 {s += $2 * $4} END {print s}' /proc/slabinfo; }
slab_snap() { awk 'NR > 2 {print $1, $2 * $4}' /proc/slabinfo > $1; }
meminfo_slab() { awk '/^Slab:/ {print $2 * 1024}' /proc/meminfo; }
established() { ip netns exec bn1 ss -Htn state established | wc -l; }
# baseline: 256 plain TCP connections from user space to the same sink
sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1
slab_snap $BW/slab.0; a0=$(slab_active); m0=$(meminfo_slab)
ip netns exec bn1 bash -c "for i in \$(seq 256); do exec {fd}<>/dev/tcp/$S/4437; done; touch $BW/tcp-open; sleep 8" &
tcp=$!
wait_for 20 test -e $BW/tcp-open; sleep 1
slab_snap $BW/slab.1; a1=$(slab_active); m1=$(meminfo_slab)
info mem.tcp-baseline "established=$(established)"
wait $tcp; rm -f $BW/tcp-open
sleep 2
# 256 handshakes queued: the request-key "helper" never binds
cat > $BW/stall.sh <<'X'
#!/bin/bash
exec sleep 120
X
chmod +x $BW/stall.sh
cp /etc/request-key.d/tlsh.conf $BW/tlsh.conf.saved
echo "create tlsh * * $BW/stall.sh %k" > /etc/request-key.d/tlsh.conf
sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1
slab_snap $BW/slab.2; a2=$(slab_active); m2=$(meminfo_slab)
ip netns exec bn1 bash -c "echo 'addr=$S port=4437 name=server.test data=none timeout=30000 count=256' > /debug/tlsh_test/run" &
queued=$!
wait_for 30 sh -c "[ \$(ip netns exec bn1 ss -Htn state established | wc -l) -ge 256 ]"; sleep 1
slab_snap $BW/slab.3; a3=$(slab_active); m3=$(meminfo_slab)
info mem.queued "established=$(established)"
cp $BW/tlsh.conf.saved /etc/request-key.d/tlsh.conf
pkill -f "$BW/stall.sh" ; pkill -x sleep
wait $queued
kill $sink
tcp_b=$(( (a1 - a0) / 256 )); hs_b=$(( (a3 - a2) / 256 ))
emit mem.kernel.per_tcp_conn_b $tcp_b
emit mem.kernel.per_queued_hs_b $hs_b
emit mem.kernel.per_queued_hs_extra_b $((hs_b - tcp_b))
emit mem.kernel.per_queued_hs_meminfo_b $(( (m3 - m2) / 256 ))
slab_delta() {
	awk 'NR == FNR {a[$1] = $2; next} {d = $2 - a[$1]; if (d > 0) print d, $1}' $1 $2 |
		sort -rn | head -8 | awk '{printf "%s:+%d ", $2, $1 / 256}'
}
info mem.slab-deltas-queued "$(slab_delta $BW/slab.2 $BW/slab.3)(bytes per handshake)"
info mem.slab-deltas-tcp "$(slab_delta $BW/slab.0 $BW/slab.1)(bytes per connection)"

kill_agents
pkill gnutls-serv
kill $hsserv
for i in $(seq $NS_MAX); do ip netns del bn$i; done
exit 0
