#!/bin/bash
# Host-side test of "make deb-helper": the agent's Debian package is built with
# debhelper into build/deb/, holds what "make install" installs (the
# agent, its three man pages, the request-key rule, the example
# configuration), marks both files under /etc as conffiles, depends on
# keyutils and the GnuTLS and keyutils libraries, passes lintian, and the
# packaged agent runs.
#
# TAP: "ok N - name" / "not ok N - name"; the last line is
# "N passed, N failed, N skipped"; exit status 1 if anything failed.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${TLSH_BUILD:-$top/build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsh-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/tap-lib.sh"

make -s -C "$top" deb-helper > "$tmp/deb.log" 2>&1
rc=$?
tap_check "make deb-helper succeeds (dpkg-buildpackage, lintian without errors or warnings)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/deb.log" | tail -n 30
deb=$(ls "$B"/deb/tlsh-helper_*_amd64.deb 2>/dev/null | head -1)
tap_check "build/deb has tlsh-helper_VERSION_amd64.deb" [ -n "$deb" ]
if [ -z "$deb" ]; then
	tap_summary
	exit
fi
tap_check "the package's version is the agent's" \
	[ "$(dpkg-deb -f "$deb" Version)" = "$(sed -n 's/^#define TLSH_VERSION "\(.*\)"/\1/p' "$top/handshake-helper/main.c")" ]

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' > "$tmp/files"
for f in /usr/sbin/tlsh-helper /usr/share/man/man8/tlsh-helper.8.gz \
	/usr/share/man/man5/tlsh-helper.conf.5.gz /usr/share/man/man7/nfs-xprtsec.7.gz \
	/etc/request-key.d/tlsh.conf /etc/tlsh/tlsh-helper.conf \
	/usr/share/doc/tlsh-helper/copyright; do
	tap_check "the package has $f" grep -qx "$f" "$tmp/files"
done
dpkg-deb -e "$deb" "$tmp/control"
tap_check "/etc/tlsh/tlsh-helper.conf and the request-key rule are conffiles" \
	sh -c "sort '$tmp/control/conffiles' | tr '\n' ' ' | grep -qx '/etc/request-key.d/tlsh.conf /etc/tlsh/tlsh-helper.conf '"
deps=$(dpkg-deb -f "$deb" Depends)
for p in keyutils libgnutls30 libkeyutils1; do
	tap_check "it depends on $p" grep -qE "(^|, )$p( |,|$)" <<< "$deps"
done
dpkg-deb -x "$deb" "$tmp/root"
tap_check "the request-key rule runs /usr/sbin/tlsh-helper" \
	grep -qE '^create[[:space:]]+tlsh[[:space:]].*/usr/sbin/tlsh-helper -k %k' "$tmp/root/etc/request-key.d/tlsh.conf"
tap_check "the packaged agent runs (--version)" \
	sh -c "'$tmp/root/usr/sbin/tlsh-helper' --version | grep -q '^tlsh-helper '"
tap_check "the packaged agent is built with the hardening flags (PIE, RELRO, BIND_NOW)" \
	sh -c "readelf -hd '$tmp/root/usr/sbin/tlsh-helper' | grep -q 'DYN (Position-Independent' &&
	       readelf -d '$tmp/root/usr/sbin/tlsh-helper' | grep -q 'BIND_NOW\|FLAGS_1.*NOW'"

tap_summary
