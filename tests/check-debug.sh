#!/bin/bash
# make check-debug: the guest suite on the debug flavor of the kernel
# (scripts/kconfig/debug.config on top of tlsh.config: KASAN, lockdep,
# DEBUG_ATOMIC_SLEEP, list/object debugging, kmemleak), then a kmemleak
# scan, then a harness check that the bench sees KASAN and kmemleak reports.
# TAP like tests/check.sh, ending "N passed, N failed, N skipped".
#
#   tests/check-debug.sh [CASE...]      (default: tests/cases/*.sh)
#
# Everything goes to its own build directory, TLSH_DEBUG_BUILD (default
# build/debug): trees, objects (kbuild-debug), test module, tools,
# initramfs, logs. The pristine tree is hard-linked from build/ when it is
# there. Settings: TLSH_DEBUG_SLOWDOWN (default 4) multiplies every
# script's "# tlsh-vm: timeout=" limit; TLSH_FUZZ_SECONDS (default 120)
# is the length of the hostile case's fuzzing; TLSH_FUZZ_SEED its seed.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
DB=${TLSH_DEBUG_BUILD:-$top/build/debug}
export TLSH_BUILD=$DB
slow=${TLSH_DEBUG_SLOWDOWN:-4}
fuzz=${TLSH_FUZZ_SECONDS:-120}
mkdir -p "$DB/logs"
# one run at a time per build directory
exec 9> "$DB/.check-debug.lock"
if ! flock -n 9; then
	echo "check-debug: another run is using $DB" >&2
	exit 1
fi

. "$top/tests/tap-lib.sh"

cases=()
for a in "$@"; do
	a=$(case_path "$a") || exit 64
	cases+=("$a")
done
[ ${#cases[@]} -gt 0 ] || cases=("$top"/tests/cases/*.sh)

# the pristine tree: hard links to the normal build's, or extracted
if [ ! -f "$DB/linux-source-6.1/.tlsh-pristine" ] &&
   [ -f "$top/build/linux-source-6.1/.tlsh-pristine" ]; then
	rm -rf "$DB/linux-source-6.1"
	cp -al "$top/build/linux-source-6.1" "$DB/linux-source-6.1"
fi

kobj=$DB/kbuild-debug
kernel=$kobj/arch/x86/boot/bzImage
build_kmod() {
	# the test consumer, built out of the source tree (tests/kmod is the
	# normal flavor's), plus the kernel's KASAN and kmemleak test modules
	rm -rf "$DB/kmod-src" "$DB/kmod"
	mkdir -p "$DB/kmod-src" "$DB/kmod"
	cp "$top"/tests/kmod/Makefile "$top"/tests/kmod/*.c "$DB/kmod-src/" &&
	make -C "$DB/linux" O="$kobj" M="$DB/kmod-src" modules &&
	cp "$DB"/kmod-src/*.ko "$DB/kmod/" &&
	cp "$kobj/mm/kasan/kasan_test_module.ko" "$kobj/samples/kmemleak/kmemleak-test.ko" "$DB/kmod/"
}
ok=1
progress "check-debug: building the debug kernel (KASAN, lockdep, kmemleak; cold: ~45 min on 2 cores, incremental: seconds to 20 min; see $DB/logs/kernel.log)"
step "debug kernel builds (KASAN, lockdep, kmemleak)" "$DB/logs/kernel.log" \
	"$top/scripts/build-kernel.sh" debug || ok=0
if [ $ok = 1 ]; then
	step "test modules build against the debug kernel" "$DB/logs/kmod.log" build_kmod || ok=0
fi
step "debug initramfs builds" "$DB/logs/initramfs.log" make -C "$top" B="$DB" initramfs || ok=0

if [ $ok = 1 ]; then
	# the suite's scripts, with their time limits scaled for the debug kernel
	sdir=$DB/scripts
	rm -rf "$sdir"
	mkdir -p "$sdir"
	list=("$top/tests/debug/000-debug-start.sh" "${cases[@]}" "$top/tests/debug/999-kmemleak.sh")
	scripts=()
	for s in "${list[@]}"; do
		d=$sdir/$(basename "$s")
		awk -v k="$slow" '/^# tlsh-vm: timeout=[0-9]+/ { split($0, a, "="); print "# tlsh-vm: timeout=" a[2] * k; next } { print }' "$s" > "$d"
		chmod +x "$d"
		scripts+=("$d")
	done
	# the kernel's RPC-with-TLS handshake deadline scales too (half the
	# slowdown: the cases' bounds are derived from it)
	append="tlsh.fuzz=$fuzz rcupdate.rcu_cpu_stall_timeout=120"
	append="$append sunrpc.tls_handshake_timeout_ms=$((20000 * (slow > 2 ? slow / 2 : 1)))"
	# the hung-task detector prints the stuck task's stack at KERN_INFO
	append="$append loglevel=7 tlsh.slowdown=$slow"
	[ -z "${TLSH_FUZZ_SEED:-}" ] || append="$append tlsh.fuzz_seed=$TLSH_FUZZ_SEED"
	log=$DB/logs/guest.log
	t0=$SECONDS
	progress "check-debug: booting the debug kernel and running ${#scripts[@]} script(s) (the whole suite: ~40 min on 2 cores); TAP lines as they finish"
	# the TAP lines stream as the cases print them; the log keeps all
	relay "debug guest " <("$top/tests/vm-run" --kernel "$kernel" --timeout $((300 * slow)) \
		--boot-timeout 600 --append "$append" "${scripts[@]}" 2>&1 | tee "$log" | tr -d '\000'
		echo "${PIPESTATUS[0]}" > "$DB/logs/guest.rc")
	rc=$(cat "$DB/logs/guest.rc")
	while read -r name r; do
		if [ "$r" = 0 ]; then
			tap ok "debug guest case ${name#[0-9][0-9][0-9]-} exited 0"
		else
			tap "not ok" "debug guest case ${name#[0-9][0-9][0-9]-} exited $r"
		fi
	done < <(tr -d '\000\r' < "$log" | sed -n 's/.*TLSH-SCRIPT-END \([^ ]*\) rc=\([0-9]*\).*/\1 \2/p')
	if grep -aq "TLSH-KERNEL-REPORT" "$log"; then
		tap "not ok" "debug guest: kernel reported KASAN/lockdep/kmemleak/warning (see $log)"
		grep -a "TLSH-KERNEL-REPORT" "$log" | sed 's/^/# /'
	else
		tap ok "debug guest: no KASAN, lockdep, kmemleak, warning or hung task report"
	fi
	if [ $rc -eq 0 ]; then
		tap ok "debug guest suite finished cleanly ($((SECONDS - t0)) s)"
	else
		tap "not ok" "debug guest suite: vm-run exited $rc (see $log)"
		grep -a -E "^vm: " "$log" | sed 's/^/# /'
	fi

	# the debug bench sees what it is there for
	log=$DB/logs/harness.log
	"$top/tests/vm-run" --kernel "$kernel" --boot-timeout 600 \
		"$top/tests/debug/harness-kasan.sh" "$top/tests/debug/harness-kmemleak.sh" > "$log" 2>&1
	rc=$?
	# what each harness check script saw, between its BEGIN and END lines
	part() { tr -d '\000\r' < "$log" | sed -n "/TLSH-SCRIPT-BEGIN [0-9]*-$1/,/TLSH-SCRIPT-END [0-9]*-$1/p"; }
	if [ $rc -eq 4 ] && grep -q "BUG: KASAN: .* \[kasan_test_module\]" <<< "$(part harness-kasan.sh)" &&
	   grep -q "TLSH-KERNEL-REPORT during" <<< "$(part harness-kasan.sh)"; then
		tap ok "debug bench: a KASAN report fails the run (vm-run exit 4)"
	else
		tap "not ok" "debug bench: a KASAN report fails the run (rc=$rc, see $log)"
	fi
	if grep -q "TLSH-KMEMLEAK-SUSPECTS [1-9]" <<< "$(part harness-kmemleak.sh)" &&
	   grep -q "kmemleak: [0-9]* new suspected memory leaks" <<< "$(part harness-kmemleak.sh)" &&
	   grep -q "TLSH-KERNEL-REPORT during" <<< "$(part harness-kmemleak.sh)"; then
		tap ok "debug bench: a kmemleak suspect is found and reported"
	else
		tap "not ok" "debug bench: a kmemleak suspect is found and reported (see $log)"
	fi
fi

tap_summary
