#!/bin/bash
# Host-side check of the bench's exportfs and rpc.mountd, nfs-utils 2.6.4
# from ../shared/third-party (scripts/build-nfs-utils.sh, "make nfs-utils";
# up to date: no rebuild): the version, and that exportfs takes the
# xprtsec= export option (nfs-utils >= 2.6.3), which Debian 12's 2.6.2
# rejects.
#
# exportfs always reads /etc/exports, /etc/exports.d and /etc/nfs.conf and
# writes /var/lib/nfs/etab, and there is no option to point it elsewhere:
# it runs in a mount namespace of its own (unshare -m, or unshare -rm
# where only a user namespace is allowed) with the test's files bind-mounted
# over those and a tmpfs on /var/lib/nfs, and in a network namespace of
# its own (/proc/net/rpc, knfsd's export cache, is per network namespace).
# No NFS service is started; the host's /etc/exports and /var/lib/nfs are
# checked to be unchanged. Without namespaces the parser is checked in the
# binary and the source only.
#
# TAP: "ok N - name" / "not ok N - name"; the last line is
# "N passed, N failed, N skipped"; exit status 1 if anything failed.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TLSH_BUILD:-$top/build}
out=$B/nfs-utils/out
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsh-nfs-utils.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/tap-lib.sh"
diag() { sed 's/^/# /'; }

# what this machine's NFS state looks like (must not change)
host_state() {
	{
		sha256sum /etc/exports 2>&1
		ls -la --time-style=full-iso /etc/exports.d /var/lib/nfs 2>&1
		find /var/lib/nfs -maxdepth 1 -type f -exec sha256sum {} + 2>&1
	} | LC_ALL=C sort
}
host_state > "$tmp/state.before"

t0=$SECONDS
if "$top/scripts/build-nfs-utils.sh" > "$tmp/build.out" 2>&1; then
	tap ok "nfs-utils 2.6.4's exportfs and rpc.mountd build ($((SECONDS - t0)) s)"
else
	tap "not ok" "nfs-utils 2.6.4's exportfs and rpc.mountd build"
	diag < "$tmp/build.out"
	tap_summary
	exit 1
fi

# (exportfs has no version option: -V is "invalid option" in 2.6.2 and
# 2.6.4 alike; rpc.mountd -v is built from the same tree)
v=$("$out/rpc.mountd" -v 2>&1)
if [ "$v" = "rpc.mountd version 2.6.4" ]; then
	tap ok "rpc.mountd -v: version 2.6.4 (exportfs has no version option; same build)"
else
	tap "not ok" "rpc.mountd -v: version 2.6.4"
	diag <<< "$v"
fi

# sandbox: run "exportfs ARGS..." with $tmp/exports as /etc/exports, an
# empty /etc/nfs.conf, /etc/exports.d and /etc/nfs.conf.d, and a tmpfs
# /var/lib/nfs; output in $tmp/run.out, status in $rc
: > "$tmp/nfs.conf"
cat > "$tmp/sandbox.sh" <<'S'
set -e
tmp=$1
shift
mount --make-rprivate / 2>/dev/null || true
mount --bind "$tmp/exports" /etc/exports
[ ! -f /etc/nfs.conf ] || mount --bind "$tmp/nfs.conf" /etc/nfs.conf
mount -t tmpfs tlsh-test /var/lib/nfs
for d in /etc/exports.d /etc/nfs.conf.d; do
	[ ! -d $d ] || mount -t tmpfs tlsh-test $d
done
set +e
for cmd in "$@"; do
	echo "\$ $cmd"
	eval "$cmd" 2>&1
	echo "exit status $?"
done
S
sandbox=
if [ ! -f /etc/exports ] || [ ! -d /var/lib/nfs ]; then
	: # nothing to mount over
elif unshare -m -n true 2>/dev/null; then
	sandbox="unshare -m -n"
elif unshare -r -m -n true 2>/dev/null; then
	sandbox="unshare -r -m -n"
fi
sb() {
	# shellcheck disable=SC2086
	$sandbox bash "$tmp/sandbox.sh" "$tmp" "$@" > "$tmp/run.out" 2>&1
}

mkdir -p "$tmp/a" "$tmp/b"
E=$out/exportfs
if [ -n "$sandbox" ]; then
	cat > "$tmp/exports" <<X
$tmp/a *(rw,sync,no_subtree_check,fsid=101,xprtsec=tls:mtls)
$tmp/b 192.0.2.0/24(ro,no_subtree_check,fsid=102,xprtsec=none:tls:mtls)
X
	sb "$E -ra" "$E -s"
	# (nothing between the command and its status: no message)
	if [ "$(sed -n 2p "$tmp/run.out")" = "exit status 0" ]; then
		tap ok "exportfs -ra takes /etc/exports lines with xprtsec=tls:mtls and xprtsec=none:tls:mtls, no message ($sandbox)"
	else
		tap "not ok" "exportfs -ra takes /etc/exports lines with xprtsec=tls:mtls and xprtsec=none:tls:mtls"
		diag < "$tmp/run.out"
	fi
	if grep -qE "^$tmp/a +\*\(.*,xprtsec=tls:mtls\)$" "$tmp/run.out" &&
		grep -qE "^$tmp/b +192\.0\.2\.0/24\(.*,xprtsec=none:tls:mtls\)$" "$tmp/run.out"; then
		tap ok "exportfs -s shows both exports with their xprtsec= modes (the etab rpc.mountd reads)"
	else
		tap "not ok" "exportfs -s shows both exports with their xprtsec= modes"
		diag < "$tmp/run.out"
	fi
	echo "$tmp/a *(rw,no_subtree_check,fsid=101,xprtsec=tls:bogus)" > "$tmp/exports"
	sb "$E -ra"
	if grep -q 'unknown xprtsec mode bogus' "$tmp/run.out" && ! grep -qx 'exit status 0' "$tmp/run.out"; then
		tap ok "exportfs -ra refuses xprtsec=tls:bogus: 'unknown xprtsec mode bogus', non-zero status"
	else
		tap "not ok" "exportfs -ra refuses xprtsec=tls:bogus"
		diag < "$tmp/run.out"
	fi
	# the check tells the two apart: Debian 12's 2.6.2 refuses the option
	echo "$tmp/a *(rw,no_subtree_check,fsid=101,xprtsec=tls:mtls)" > "$tmp/exports"
	if [ -x /usr/sbin/exportfs ]; then
		sb "/usr/sbin/exportfs -ra"
		if grep -q 'unknown keyword "xprtsec=tls:mtls"' "$tmp/run.out"; then
			tap ok "Debian's /usr/sbin/exportfs refuses the same line (unknown keyword \"xprtsec=tls:mtls\")"
		else
			tap ok "Debian's /usr/sbin/exportfs refuses the same line # SKIP it takes xprtsec= (newer than 2.6.2)"
		fi
	else
		tap ok "Debian's /usr/sbin/exportfs refuses the same line # SKIP not installed"
	fi
else
	tap ok "exportfs -ra takes xprtsec=tls:mtls # SKIP no mount namespace (unshare -m or -rm), or no /etc/exports or /var/lib/nfs to mount over"
	if grep -aq 'unknown xprtsec mode %s' "$E" && grep -aq ',xprtsec=%s' "$E" &&
		grep -q 'strncmp(opt, "xprtsec=", 8) == 0' "$B/nfs-utils/src/support/nfs/exports.c"; then
		tap ok "the built exportfs has the xprtsec= parser (support/nfs/exports.c: parse_xprtsec)"
	else
		tap "not ok" "the built exportfs has the xprtsec= parser"
	fi
fi

host_state > "$tmp/state.after"
if cmp -s "$tmp/state.before" "$tmp/state.after"; then
	tap ok "this machine's /etc/exports, /etc/exports.d and /var/lib/nfs are unchanged"
else
	tap "not ok" "this machine's /etc/exports, /etc/exports.d and /var/lib/nfs are unchanged"
	diff "$tmp/state.before" "$tmp/state.after" | diag
fi

tap_summary
