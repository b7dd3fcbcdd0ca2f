# Boot the upstream reference peer VM (sourced by tests/vm-run --peer).
#
# peer_vm_start: boots build/peer's kernel and initramfs in QEMU (TCG,
# microvm without ACPI, no NIC but the link), its console in
# build/logs/peer-console.log, QEMU's own messages in
# build/logs/peer-qemu.log; its virtio-net device listens on a free port
# of 127.0.0.1 (peer_port) for our guest's socket netdev to connect to.
# Waits for the peer's ready marker (TLSH_PEER_BOOT_TIMEOUT, 120 s). Sets
# peer_pid (the caller kills it; a watchdog kills it too when the caller
# is gone) and peer_port. Returns 1 with a message when the peer did not
# come up.
#
# Settings: TLSH_PEER_SMP (1), TLSH_PEER_MEM (1024), TLSH_PEER_PORTS (the
# first and last port to try, "17000 17999").

peer_vm_start() {
	local kernel=$B/peer/kbuild/arch/x86/boot/bzImage
	local initrd=$B/peer/initramfs.cpio qemu_pid
	local log=$B/logs/peer-console.log qlog=$B/logs/peer-qemu.log
	local t0=$SECONDS limit=${TLSH_PEER_BOOT_TIMEOUT:-120}
	local first last port tries=0
	[ -f "$kernel" ] || { echo "vm-run: no peer kernel at $kernel (run: make peer)" >&2; return 1; }
	[ -f "$initrd" ] || { echo "vm-run: no peer initramfs at $initrd (run: make peer)" >&2; return 1; }
	mkdir -p "$B/logs"
	exec {peer_lock}> "$B/logs/peer-console.lock"
	if ! flock -n "$peer_lock"; then
		log=$B/logs/peer-console-$$.log qlog=$B/logs/peer-qemu-$$.log
	fi
	read -r first last <<< "${TLSH_PEER_PORTS:-17000 17999}"
	# start somewhere in the range, so that runs side by side rarely try
	# the same port; a port that is taken makes QEMU exit at once
	port=$((first + $$ % (last - first + 1)))
	while :; do
		if ! ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
			peer_qemu "$initrd" "$log" "$qlog" "${TLSH_PEER_SMP:-1}" \
				"${TLSH_PEER_MEM:-1024}" "listen=127.0.0.1:$port" 52:54:00:00:01:01
			peer_pid=$qemu_pid
			sleep 0.5
			if kill -0 "$peer_pid" 2>/dev/null || ! grep -qi "address already in use" "$qlog"; then
				break
			fi
			wait "$peer_pid" 2>/dev/null || true
			peer_pid=""
		fi
		tries=$((tries + 1))
		[ $tries -lt 50 ] || { echo "vm-run: no free port for the peer link in $first..$last" >&2; return 1; }
		port=$((port + 1))
		[ $port -le "$last" ] || port=$first
	done
	peer_port=$port
	peer_watchdog "$$" "$peer_pid"
	echo "vm-run: peer VM (linux 6.12, ref.test) booting, link on 127.0.0.1:$port, console in $log"
	while ! grep -aq "TLSH-PEER-READY" "$log" 2>/dev/null; do
		if grep -aq "TLSH-PEER-SETUP-FAILED\|Kernel panic" "$log" 2>/dev/null; then
			peer_boot_failed "setup failed in the peer" "$log" "$qlog"
			return 1
		fi
		if ! kill -0 "$peer_pid" 2>/dev/null; then
			peer_boot_failed "the peer's QEMU exited" "$log" "$qlog"
			return 1
		fi
		if [ $((SECONDS - t0)) -ge "$limit" ]; then
			peer_boot_failed "the peer was not ready within $limit s" "$log" "$qlog"
			return 1
		fi
		sleep 0.5
	done
	echo "vm-run: peer VM ready in $((SECONDS - t0)) s: $(grep -a '^peer: ' "$log" | tail -1 | tr -d '\r')"
}

# peer_qemu INITRD LOG QLOG SMP MEM SOCKET MAC [APPEND]: boot the peer's
# kernel in QEMU (TCG, microvm, no NIC but the socket link SOCKET, e.g.
# "listen=127.0.0.1:PORT"), console in LOG, QEMU's messages in QLOG, APPEND
# added to the kernel command line (reboot=t: see vm-run); sets qemu_pid
peer_qemu() {
	: > "$2"
	qemu-system-x86_64 -accel tcg -machine microvm,acpi=off -cpu max \
		-smp "$4" -m "$5" \
		-display none -no-reboot -nic none -monitor none -serial "file:$2" \
		-netdev "socket,id=p0,$6" -device virtio-net-device,netdev=p0,mac="$7" \
		-kernel "$B/peer/kbuild/arch/x86/boot/bzImage" -initrd "$1" \
		-append "console=ttyS0 loglevel=5 panic=-1 reboot=t${8:+ $8}" \
		</dev/null > "$3" 2>&1 &
	qemu_pid=$!
}

# peer_watchdog OWNER PEER: kill PEER once process OWNER is gone (vm-run
# killed with SIGKILL cannot run its trap)
peer_watchdog() {
	(
		trap - EXIT INT TERM
		exec </dev/null >/dev/null 2>&1
		while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do
			sleep 2
		done
		kill "$2" 2>/dev/null
	) &
	disown $! 2>/dev/null || true
}

# peer_boot_failed WHY LOG QLOG
peer_boot_failed() {
	echo "vm-run: peer VM: $1 ($((SECONDS - t0)) s); the last lines of $2:" >&2
	tail -n 25 "$2" | tr -d '\r' | sed 's/^/  /' >&2
	[ -s "$3" ] && sed 's/^/  qemu: /' "$3" >&2
	return 0
}

# peer_client_run EXTRA_CPIO LOG LIMIT [pair]: boot the peer's kernel a
# second time, as the upstream *client* (tlsh.role=client: 198.51.100.2,
# tlshd resident, no NFS server), linked to the running peer (peer_port),
# with EXTRA_CPIO after the peer's root file system (it brings
# /etc/peer/client-run.sh, which the client runs before powering off).
# With "pair": no running peer; the kernel boots as ref.test, serves NFS
# and runs the script against itself (tlsh.role=pair), its link on a free
# port with nothing at the other end. The console goes to LOG. Same vCPUs
# and memory as our guest (TLSH_VM_SMP, TLSH_VM_MEM), so that the two
# clients compare. Returns the script's status, 124 after LIMIT seconds.
peer_client_run() {
	local cpio=$1 log=$2 limit=$3 both t0=$SECONDS rc= qemu_pid
	local link="connect=127.0.0.1:${peer_port:-}" mac=52:54:00:00:01:02 port
	both=$(mktemp "$B/peer/client-initramfs.XXXXXX")
	cat "$B/peer/initramfs.cpio" "$cpio" > "$both"
	if [ "${4:-}" = pair ]; then
		port=$((17000 + $$ % 1000))
		while ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; do
			port=$((port + 1))
		done
		link="listen=127.0.0.1:$port" mac=52:54:00:00:01:01
	fi
	peer_qemu "$both" "$log" "$log.qemu" "${TLSH_VM_SMP:-2}" "${TLSH_VM_MEM:-2048}" \
		"$link" $mac tlsh.role=${4:-client}
	while kill -0 "$qemu_pid" 2>/dev/null &&
	      ! grep -aq "TLSH-PEER-CLIENT-DONE" "$log"; do
		if [ $((SECONDS - t0)) -ge "$limit" ]; then
			echo "peer client: not done within $limit s" >&2
			rc=124
			break
		fi
		sleep 1
	done
	if [ -z "$rc" ]; then
		sleep 1
		rc=$(grep -ao "TLSH-PEER-CLIENT-DONE rc=[0-9]*" "$log" | tail -1)
		rc=${rc##*=}
	fi
	kill "$qemu_pid" 2>/dev/null
	wait "$qemu_pid" 2>/dev/null
	rm -f "$both"
	return "${rc:-125}"
}
