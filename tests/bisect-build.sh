#!/bin/bash
# tests/bisect-build.sh [FIRST]: build the kernel after each patch of
# patches/series (from number FIRST, default 1), reusing build/kbuild's
# objects, then once more with the whole series. Prints TAP.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
first=${1:-1}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
n=0 pass=0 fail=0
total=$(grep -c '^[0-9]' "$top/patches/series")
for i in $(seq "$first" "$total"); do
	head -n "$i" "$top/patches/series" > "$tmp"
	p=$(sed -n "${i}p" "$top/patches/series")
	n=$((n + 1))
	if TLSH_SERIES=$tmp "$top/scripts/build-kernel.sh" > "$top/build/logs/bisect-$i.log" 2>&1; then
		echo "ok $n - builds after $p"; pass=$((pass + 1))
	else
		echo "not ok $n - builds after $p (build/logs/bisect-$i.log)"; fail=$((fail + 1))
	fi
done
"$top/scripts/build-kernel.sh" > "$top/build/logs/bisect-all.log" 2>&1 || echo "# the whole series did not build"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
