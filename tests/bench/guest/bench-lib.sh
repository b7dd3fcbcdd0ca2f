# Shell library of the guest benchmark scripts. tests/bench/run.sh puts it,
# after the BENCH_* settings, into each generated script.
#
# Output protocol (read by tests/bench/report.py from the console log):
#   BENCH METRIC VALUE          one sample
#   BENCHNA METRIC REASON...    the metric could not be measured, and why
#   BENCHINFO KEY TEXT...       context (versions, cipher, slab deltas...)
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh

CA=$CERTS/ca.pem
BW=/tmp/bench
mkdir -p $BW
export LC_ALL=C

emit() { echo "BENCH $1 $2"; }
na() { local m=$1; shift; echo "BENCHNA $m $*"; }
info() { echo "BENCHINFO $*"; }
note() { echo "# $*"; }

# now: microseconds (bash's EPOCHREALTIME, no fork) into $NOW
now() { NOW=${EPOCHREALTIME/./}; }
# ms_since T0: milliseconds since T0 (µs) with 3 decimals, into $MS
ms_since() { now; MS=$(( (NOW - $1) / 1000 )).$(printf '%03d' $(( (NOW - $1) % 1000 ))); }
us_to_ms() { printf '%d.%03d' $(( $1 / 1000 )) $(( $1 % 1000 )); }

# tt ARGS...: one run of the test consumer through its own read-write
# file (runs of other namespaces may go on at the same time); the result
# lines are in the array TT
tt() {
	local fd
	exec {fd}<>/debug/tlsh_test/run || return 1
	if ! echo "$*" >&$fd; then
		exec {fd}>&-
		TT=()
		return 1
	fi
	mapfile -t TT <&$fd
	exec {fd}>&-
}
# tt_ok: all lines of the last run succeeded
tt_ok() {
	local l
	[ ${#TT[@]} -gt 0 ] || return 1
	for l in "${TT[@]}"; do
		case "$l" in *" start=0 status=0 done=1 "*) ;; *) return 1 ;; esac
	done
}
tt_us() { local l=${TT[${1:-0}]}; echo "${l##*time_us=}"; }

# the helper's configuration for the benchmarks: trusts the test CA, stays
# up a minute, logs only warnings (logging is not what is measured)
bench_config() {
	mkdir -p /etc/tlsh
	cat > /etc/tlsh/tlsh-helper.conf <<C
[global]
trust-store = $CA
idle-timeout = 60
handshake-timeout = 60
log-level = warning
$1
C
}

live_keys() { awk '$8 == "tlsh" && $2 !~ /N/' /proc/keys; }
# agents: tlsh-helper processes, but for a resident one kept on purpose
agents() { pgrep -x tlsh-helper | grep -vx "${KEEP_PID:-none}"; }
agent_gone() { [ -z "$(agents)" ] && [ -z "$(live_keys)" ]; }
# kill_agents: no tlsh-helper anywhere (but KEEP_PID) and no live tlsh key
kill_agents() {
	local p
	for p in $(agents); do kill $p 2>/dev/null; done
	wait_for 10 agent_gone || { for p in $(agents); do kill -9 $p; done; wait_for 10 agent_gone; }
}

bench_setup() {
	grep -q '^tlsh_test ' /proc/modules || insmod /lib/tlsh/tlsh_test.ko || return 1
	echo 0 > $TRACE/tracing_on 2>/dev/null
	bench_config
}

# cpu_ticks: busy ticks (USER_HZ) of the whole guest since boot
cpu_ticks() { awk '/^cpu / {print $2+$3+$4+$7+$8+$9; exit}' /proc/stat; }
# pid_ticks PID...: utime+stime of these processes (whole thread groups)
pid_ticks() {
	local p s=0 f
	for p in "$@"; do
		[ -r /proc/$p/stat ] || continue
		f=$(sed 's/.*) //' /proc/$p/stat)
		set -- $f
		s=$((s + ${12} + ${13}))
	done
	echo $s
}
