#!/bin/bash
# Run the kernel's checkpatch.pl --strict on every patch in patches/series;
# one TAP line per patch. A warning that a patch keeps on purpose must be
# explained in that patch's commit message, and is listed in
# patches/checkpatch-ignore as "PATCH TYPE" (the checkpatch message type).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
B=${TLSH_BUILD:-$top/build}
cp=$B/linux-source-6.1/scripts/checkpatch.pl
if [ ! -f "$cp" ]; then
	"$top/scripts/build-kernel.sh" --extract-only >/dev/null 2>&1 || true
fi
[ -f "$cp" ] || { echo "not ok - checkpatch.pl not found"; exit 1; }
ignore=$top/patches/checkpatch-ignore
rc=0
while read -r p _; do
	case "$p" in ''|'#'*) continue ;; esac
	# matched by the name after the number: moving a patch keeps its list
	types=$(awk -v p="${p#[0-9][0-9][0-9][0-9]-}" '{ n = $1; sub(/^[0-9]+-/, "", n) } n == p {print $2}' \
		"$ignore" 2>/dev/null | paste -sd, -)
	out=$(cd "$B/linux-source-6.1" && perl scripts/checkpatch.pl --strict --terse --show-types \
		${types:+--ignore "$types"} "$top/patches/$p" 2>&1)
	if echo "$out" | grep -qE '(ERROR|WARNING|CHECK):'; then
		echo "not ok - checkpatch --strict: $p"
		echo "$out" | grep -E '(ERROR|WARNING|CHECK):' | head -20 | sed 's/^/# /'
		rc=1
	else
		echo "ok - checkpatch --strict: $p"
	fi
done < "$top/patches/series"
exit $rc
