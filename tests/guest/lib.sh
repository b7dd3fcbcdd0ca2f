# Shell library for guest test scripts: source it with
#   . /tlsh/guest/lib.sh
#
# Environment every script gets (see README, "The bench"):
#   TLSH_SERVER_NAME   server.test (resolves through /etc/hosts)
#   TLSH_SERVER_ADDR   192.0.2.1      TLSH_SERVER_ADDR6  2001:db8::1
#   TLSH_C1_ADDR       192.0.2.11     TLSH_C2_ADDR       192.0.2.12
#   TLSH_EXPORT        /srv/export    the exported path (mount SERVER:$TLSH_EXPORT)
#   TLSH_EXPORT_DIR    /srv/export    the same directory seen locally, to
#                                     check what arrived at the server
#   TLSH_ARTIFACTS     /tmp/artifacts scratch space that survives one script

export TLSH_SERVER_NAME=server.test
export TLSH_SERVER_ADDR=192.0.2.1
export TLSH_SERVER_ADDR6=2001:db8::1
export TLSH_PLAIN_NAME=plain.test
export TLSH_PLAIN_ADDR=192.0.2.2 TLSH_PLAIN_ADDR6=2001:db8::2
export TLSH_C1_ADDR=192.0.2.11 TLSH_C1_ADDR6=2001:db8::11
export TLSH_C2_ADDR=192.0.2.12 TLSH_C2_ADDR6=2001:db8::12
export TLSH_EXPORT=/srv/export
export TLSH_EXPORT_DIR=/srv/export
export TLSH_ARTIFACTS=/tmp/artifacts
# TLSH_SLOWDOWN: how many times slower this kernel is than the normal one
# (tlsh.slowdown= on the command line: make check-debug sets it); bounds
# that are about speed, not behaviour, are multiplied by it
TLSH_SLOWDOWN=$(sed -n 's/.*tlsh\.slowdown=\([0-9]*\).*/\1/p' /proc/cmdline 2>/dev/null)
export TLSH_SLOWDOWN=${TLSH_SLOWDOWN:-1}
# (a kernel-mode GPF reads "general protection fault, probably for ..." or
# "general protection fault: 0000 [#1]"; "traps: PROG[PID] general
# protection fault ip:..." is a user process that crashed, which the
# fault injection of case 080 can cause and is not a kernel report)
export TLSH_KERNEL_REPORT_RE='WARNING:|BUG:|Oops|KASAN|kmemleak:|blocked for more than|INFO: task .* blocked|possible circular locking|inconsistent lock state|lockdep|Call Trace:|general protection fault[,:]|UBSAN'
mkdir -p "$TLSH_ARTIFACTS"

# without_injected_reports: filter kernel log lines (stdin to stdout),
# leaving out the stack dump of an allocation failure (warn_alloc: "page
# allocation failure" or "vmalloc error") that fault injection forced:
# the injection's "name fail_page_alloc" or "name failslab" line comes
# just before it (case 080). Any other report stays.
without_injected_reports() {
	awk '/name (fail_page_alloc|failslab),/ { inj = NR }
		inj && NR - inj <= 5 && /(page allocation failure: order:|vmalloc error: size)/ { skip = 1 }
		skip { if (/<\/TASK>/) skip = 0; next }
		{ print }'
}

# TAP helpers. Lines carry no number; the host side numbers them.
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; TLSH_FAILED=$((${TLSH_FAILED:-0} + 1)); }
skip() { echo "ok - $* # SKIP"; }

# check DESCRIPTION COMMAND...: ok when COMMAND succeeds.
check() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}

# check_fail DESCRIPTION COMMAND...: ok when COMMAND fails.
check_fail() {
	local d=$1
	shift
	if "$@"; then not_ok "$d"; else ok "$d"; fi
}

# in_ns NS COMMAND...: run COMMAND in network namespace NS
in_ns() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# wait_for SECONDS COMMAND...: poll COMMAND every 0.1 s until it succeeds
wait_for() {
	local t=$1 i=0
	shift
	while ! "$@"; do
		i=$((i + 1))
		[ $i -ge $((t * 10)) ] && return 1
		sleep 0.1
	done
}

# finish: exit with the number of failures (0 = all passed)
finish() {
	exit "${TLSH_FAILED:-0}"
}
