# TAP for the test runners (tests/check.sh, tests/check-debug.sh) and the
# host tests that use it (tests/unit/deb.sh): one
# numbering for everything they run, and the closing line
# "N passed, N failed, N skipped". Sourced; the guest side has its own
# (tests/guest/lib.sh: check, check_fail, finish), whose lines these
# runners renumber with relay.

n=0 pass=0 fail=0 skipped=0

# case_path CASE: a guest case given as a file, or by its name in
# tests/cases (such as 100-peer-basic.sh): prints its path, or says
# there is no such case and fails
case_path() {
	local a=$1
	if [ ! -f "$a" ] && [ -f "$top/tests/cases/$a" ]; then
		a=$top/tests/cases/$a
	fi
	[ -f "$a" ] || { echo "$(basename "$0"): $1: no such case (tests/cases/ has them)" >&2; return 1; }
	echo "$a"
}

# tap STATUS(ok|not ok) DESCRIPTION
tap() {
	n=$((n + 1))
	case "$1" in
	ok)
		case "$2" in
		*"# SKIP"*) skipped=$((skipped + 1)) ;;
		*) pass=$((pass + 1)) ;;
		esac
		echo "ok $n - $2" ;;
	*)
		fail=$((fail + 1))
		echo "not ok $n - $2" ;;
	esac
}

# relay PREFIX LOG: renumber the TAP lines found in LOG (a file or a pipe,
# read as it grows: the lines appear as they are written)
relay() {
	local prefix=$1 log=$2 line
	while IFS= read -r line; do
		line=${line%$'\r'}
		if [[ $line =~ ^ok([[:space:]]+[0-9]+)?([[:space:]]+-)?[[:space:]]*(.*)$ ]]; then
			tap ok "$prefix${BASH_REMATCH[3]}"
		elif [[ $line =~ ^not\ ok([[:space:]]+[0-9]+)?([[:space:]]+-)?[[:space:]]*(.*)$ ]]; then
			tap "not ok" "$prefix${BASH_REMATCH[3]}"
		fi
	done < "$log"
}

# tap_check DESCRIPTION COMMAND...: one TAP line, ok when COMMAND succeeds
tap_check() {
	local d=$1
	shift
	if "$@"; then tap ok "$d"; else tap "not ok" "$d"; fi
}

# step NAME LOG COMMAND...: run COMMAND, log its output, one TAP line
# with the time it took; on failure the log's last lines as comments
step() {
	local name=$1 log=$2
	shift 2
	local t0=$SECONDS
	if "$@" > "$log" 2>&1; then
		tap ok "$name ($((SECONDS - t0)) s)"
		return 0
	fi
	tap "not ok" "$name (see $log)"
	tail -n 20 "$log" | sed 's/^/# /'
	return 1
}

# progress TEXT: a line for the person watching (stderr: not TAP)
progress() {
	echo "$*" >&2
}

# tap_summary: the closing line; the status says whether anything failed
tap_summary() {
	echo "$pass passed, $fail failed, $skipped skipped"
	[ "$fail" -eq 0 ]
}
