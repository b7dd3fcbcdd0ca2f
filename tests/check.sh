#!/bin/bash
# make check: host-side tests, then the guest suite in QEMU.
# Prints TAP ("ok N - name" / "not ok N - name") and ends with the line
# "N passed, N failed, N skipped". Exit status 0 only if nothing failed.
#
#   tests/check.sh [--host-only] [--guest-only] [CASE...]
#   (CASE: a file, or a name in tests/cases such as 100-peer-basic.sh)
#
# The guest suite runs with the upstream reference peer VM (tests/peer,
# "make peer"; vm-run --peer) unless TLSH_PEER=0; when the peer does not
# build, its step fails and the suite runs without it (its cases skip).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
B=${TLSH_BUILD:-$top/build}
mkdir -p "$B/logs"
. "$top/tests/tap-lib.sh"

host=1
guest=1
cases=()
for a in "$@"; do
	case "$a" in
	--host-only) guest=0 ;;
	--guest-only) host=0 ;;
	*)
		a=$(case_path "$a") || exit 64
		cases+=("$a") ;;
	esac
done

# make deb-kernel, and make deb-helper unless the host tests just built the
# agent's package from the same sources
deb_build() {
	local d
	make -C "$top" deb-kernel || return 1
	d=$(ls "$B"/deb/tlsh-helper_*_amd64.deb 2>/dev/null | tail -1)
	if [ -z "$d" ] || [ -n "$(find "$top/handshake-helper" -newer "$d" -type f \
		! -name '*.o' ! -name 'tlsh-helper' ! -name 'tlsh-helper-testing' -print -quit)" ]; then
		make -C "$top" deb-helper || return 1
	fi
}

if [ $host -eq 1 ]; then
	# the helper and the test tools build against the series' own headers
	step "the series' UAPI headers install (make uapi)" "$B/logs/uapi.log" make -C "$top" uapi
	for t in "$top"/tests/unit/*.sh; do
		[ -x "$t" ] || continue
		name=$(basename "$t" .sh)
		log=$B/logs/unit-$name.log
		if ! "$t" > "$log" 2>&1; then
			grep -qE '^not ok' "$log" || tap "not ok" "host $name exited non-zero (see $log)"
		fi
		relay "host $name: " "$log"
	done
	if ls "$top"/patches/*.patch >/dev/null 2>&1; then
		log=$B/logs/checkpatch.log
		"$top/tests/checkpatch.sh" > "$log" 2>&1
		relay "" "$log"
	fi
fi

if [ $guest -eq 1 ]; then
	ok=1
	# progress for a person watching: what runs now and how long it takes
	echo "kernel: building linux 6.1 with patches/series (cold: ~25 min on 2 cores, a few minutes with ccache; see $B/logs/kernel.log)" >&2
	step "kernel builds with patches/series" "$B/logs/kernel.log" make -C "$top" kernel || ok=0
	if [ $ok -eq 1 ]; then
		step "test modules build" "$B/logs/kmod.log" make -C "$top" kmod || ok=0
	fi
	# the guest boots the kernel and runs the agent of the Debian
	# packages, as a machine would after "apt install ./build/deb/..."
	if [ $ok -eq 1 ]; then
		echo "packages: the kernel's (bindeb-pkg, ~2 min) and the agent's (see $B/logs/deb.log)" >&2
		step "Debian packages build (make deb: linux-image, linux-headers, tlsh-helper)" \
			"$B/logs/deb.log" deb_build || ok=0
	fi
	step "initramfs builds (the agent and modules from the packages)" "$B/logs/initramfs.log" \
		env TLSH_FROM_DEB=1 make -C "$top" initramfs || ok=0
	if [ $ok -eq 1 ]; then
		image_deb=$(ls "$B"/deb/linux-image-*-tlsh_*_amd64.deb | tail -1)
		helper_deb=$(ls "$B"/deb/tlsh-helper_*_amd64.deb | tail -1)
		TLSH_KERNEL=$(ls "$B"/deb/image/boot/vmlinuz-* | tail -1)
		export TLSH_KERNEL
		tap_check "the guest's agent is the one in $(basename "$helper_deb")" \
			cmp -s "$B/initramfs/usr/sbin/tlsh-helper" \
			<(dpkg-deb --fsys-tarfile "$helper_deb" | tar -xO ./usr/sbin/tlsh-helper)
	fi
	peer=()
	if [ "${TLSH_PEER:-1}" != 0 ]; then
		if [ -f "$B/peer/kbuild/arch/x86/boot/bzImage" ]; then
			echo "peer: updating the reference peer VM (see $B/logs/peer.log)" >&2
		else
			echo "peer: building linux 6.12 and tlshd for the reference peer VM (cold: ~12 min on 2 cores; see $B/logs/peer.log)" >&2
		fi
		step "reference peer VM builds (linux 6.12, tlshd)" "$B/logs/peer.log" make -C "$top" peer &&
			peer=(--peer)
	fi
	if [ $ok -eq 1 ]; then
		[ ${#cases[@]} -gt 0 ] || cases=("$top"/tests/cases/*.sh)
		log=$B/logs/guest.log
		t0=$SECONDS
		echo "guest: booting the bench${peer:+ and the reference peer} and running ${#cases[@]} case(s) (the whole suite: ~15 min on 2 cores); TAP lines as they finish" >&2
		# the TAP lines stream as the cases print them; the log keeps all
		relay "guest " <("$top/tests/vm-run" "${peer[@]}" "${cases[@]}" 2>&1 | tee "$log"
			echo "${PIPESTATUS[0]}" > "$B/logs/guest.rc")
		rc=$(cat "$B/logs/guest.rc")
		# bindeb-pkg builds the kernel with the package's revision as its
		# version ("uname -v": #tlsh.N ...), which the guest prints at boot
		pkgver=$(dpkg-deb -f "$image_deb" Version)
		krel=$(dpkg-deb -f "$image_deb" Package | sed 's/^linux-image-//')
		tap_check "the guest ran the kernel of $(basename "$image_deb") ($krel #${pkgver##*-})" \
			grep -qE "TLSH-BOOT-OK kernel $krel #${pkgver##*-} " "$log"
		while read -r name r; do
			if [ "$r" = 0 ]; then
				tap ok "guest case ${name#[0-9][0-9][0-9]-} exited 0"
			else
				tap "not ok" "guest case ${name#[0-9][0-9][0-9]-} exited $r"
			fi
		done < <(sed -n 's/.*TLSH-SCRIPT-END \([^ ]*\) rc=\([0-9]*\).*/\1 \2/p' "$log" | tr -d '\r')
		# the KUnit results (case 005) once more, through the kernel's
		# own KTAP parser
		ktap=$B/logs/kunit.ktap
		tr -d '\r' < "$log" | sed -n 's/^# ktap: //p' > "$ktap"
		kp=$B/linux/tools/testing/kunit/kunit.py
		if [ -s "$ktap" ] && [ -f "$kp" ]; then
			if kout=$(python3 "$kp" parse "$ktap" 2>&1) &&
			   grep -qE "Testing complete\. Ran [0-9]+ tests: passed: [0-9]+\$" <<< "$kout"; then
				tap ok "kunit.py parse of the guest's KUnit KTAP: $(grep -oE 'Ran [0-9]+ tests: passed: [0-9]+' <<< "$kout")"
			else
				tap "not ok" "kunit.py parse of the guest's KUnit KTAP (see $ktap)"
				tail -n 15 <<< "$kout" | sed 's/^/# /'
			fi
		fi
		if grep -q "TLSH-KERNEL-REPORT" "$log"; then
			tap "not ok" "guest: kernel reported a warning/oops (see $log)"
		else
			tap ok "guest: no kernel warning, oops, lockdep or hung task report"
		fi
		if [ $rc -eq 0 ]; then
			tap ok "guest suite finished cleanly ($((SECONDS - t0)) s)"
		else
			tap "not ok" "guest suite: vm-run exited $rc (see $log)"
			grep -E "^vm: " "$log" | sed 's/^/# /'
		fi

		# the bench tests itself: a failing and a hanging script
		log=$B/logs/harness.log
		"$top/tests/vm-run" "$top/tests/harness/exit1.sh" "$top/tests/harness/hang.sh" > "$log" 2>&1
		rc=$?
		if [ $rc -ne 0 ] && grep -q "TLSH-SCRIPT-END [0-9]*-exit1.sh rc=1" "$log"; then
			tap ok "vm-run: a script exiting 1 makes vm-run exit non-zero ($rc)"
		else
			tap "not ok" "vm-run: a script exiting 1 makes vm-run exit non-zero (rc=$rc, see $log)"
			grep -aE "TLSH-|^vm: " "$log" | tr -d '\r' | sed 's/^/# /'
		fi
		# (the END line with the timeout's status counts too: a kernel
		# message on the shared console can split the TIMEOUT line)
		if grep -aqE "TLSH-SCRIPT-TIMEOUT [0-9]*-hang.sh|TLSH-SCRIPT-END [0-9]*-hang.sh rc=(124|137)" "$log"; then
			tap ok "vm-run: a hanging script is killed and reported"
		else
			tap "not ok" "vm-run: a hanging script is killed and reported (see $log)"
			grep -aE "TLSH-|^vm: |hang" "$log" | tr -d '\r' | sed 's/^/# /'
		fi
	fi
fi

tap_summary
