#!/bin/bash
# Host-side test of "make install": with DESTDIR, the helper, its two man
# pages, the request-key rule and the example configuration land where
# README.md, tlsh-helper(8) and docs/interface.md say, with sane modes,
# nothing else is installed, a second install keeps an edited
# configuration, and PREFIX moves the program and the rule that runs it.
#
# TAP: "ok N - name" / "not ok N - name"; the last line is
# "N passed, N failed, N skipped"; exit status 1 if anything failed.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsh-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/tap-lib.sh"

mode_is() { [ -f "$2" ] && [ "$(stat -c %a "$2")" = "$1" ]; }
# the rule's fields, whitespace-normalised, comments dropped
rule() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$1" | tr -s ' \t' ' ' | sed 's/^ //; s/ $//'; }

d=$tmp/root
make -s -C "$top" install DESTDIR="$d" > "$tmp/install.log" 2>&1
rc=$?
tap_check "make install DESTDIR=... succeeds" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/install.log" | tail -n 20

helper=$d/usr/sbin/tlsh-helper
man8=$d/usr/share/man/man8/tlsh-helper.8
man5=$d/usr/share/man/man5/tlsh-helper.conf.5
rk=$d/etc/request-key.d/tlsh.conf
conf=$d/etc/tlsh/tlsh-helper.conf

tap_check "helper at /usr/sbin/tlsh-helper, mode 755" mode_is 755 "$helper"
tap_check "the installed helper runs (--version)" sh -c "'$helper' --version | grep -q '^tlsh-helper '"
tap_check "its default configuration is /etc/tlsh/tlsh-helper.conf" sh -c "'$helper' -h 2>&1 | grep -q 'default /etc/tlsh/tlsh-helper.conf)'"
tap_check "tlsh-helper(8) at /usr/share/man/man8/tlsh-helper.8, mode 644" mode_is 644 "$man8"
tap_check "tlsh-helper.conf(5) at /usr/share/man/man5/tlsh-helper.conf.5, mode 644" mode_is 644 "$man5"
tap_check "nfs-xprtsec(7) at /usr/share/man/man7/nfs-xprtsec.7, mode 644" mode_is 644 "$d/usr/share/man/man7/nfs-xprtsec.7"
tap_check "tlsh-helper.8 is section 8 of tlsh-helper" grep -Eiq '^\.TH "?tlsh-helper"? "?8"?' "$man8"
tap_check "tlsh-helper.conf.5 is section 5 of tlsh-helper.conf" grep -Eiq '^\.TH "?tlsh-helper\.conf"? "?5"?' "$man5"
if command -v groff >/dev/null; then
	for m in "$man8" "$man5" "$d/usr/share/man/man7/nfs-xprtsec.7"; do
		out=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
		tap_check "$(basename "$m") formats without groff warnings" [ -z "$out" ]
		[ -z "$out" ] || echo "$out" | head -n 5 | sed 's/^/# /'
	done
else
	tap ok "man pages format without groff warnings: groff not installed # SKIP"
fi
tap_check "request-key rule at /etc/request-key.d/tlsh.conf, mode 644" mode_is 644 "$rk"
tap_check "the rule is the one in request-key.d/" cmp -s "$rk" "$top/request-key.d/tlsh.conf"
tap_check "the rule runs /usr/sbin/tlsh-helper -k %k for keys of type tlsh" \
	[ "$(rule "$rk")" = "create tlsh * * /usr/sbin/tlsh-helper -k %k" ]
tap_check "example configuration at /etc/tlsh/tlsh-helper.conf, mode 644" mode_is 644 "$conf"
tap_check "it is handshake-helper/tlsh-helper.conf" cmp -s "$conf" "$top/handshake-helper/tlsh-helper.conf"
# a malformed configuration exits 2 with FILE:LINE; --connect to a closed
# port fails (1) only after the configuration was read
out=$("$helper" -c "$conf" --connect 127.0.0.1:1 2>&1)
rc=$?
tap_check "the installed helper accepts the example configuration" [ $rc -ne 2 ] && ! grep -q "tlsh-helper.conf:[0-9]" <<< "$out"
[ $rc -ne 2 ] || echo "$out" | sed 's/^/# /'

expected="etc/request-key.d/tlsh.conf
etc/tlsh/tlsh-helper.conf
usr/sbin/tlsh-helper
usr/share/man/man5/tlsh-helper.conf.5
usr/share/man/man7/nfs-xprtsec.7
usr/share/man/man8/tlsh-helper.8"
got=$(cd "$d" && find . -type f -o -type l | sed 's|^\./||' | sort)
tap_check "nothing else is installed" [ "$got" = "$expected" ]
[ "$got" = "$expected" ] || diff <(echo "$expected") <(echo "$got") | sed 's/^/# /'

# a second install keeps the administrator's configuration
echo "# edited" >> "$conf"
rm -f "$helper"
make -s -C "$top" install DESTDIR="$d" > "$tmp/install2.log" 2>&1
tap_check "a second make install succeeds" [ $? -eq 0 ]
tap_check "and reinstalls the helper" [ -x "$helper" ]
tap_check "but keeps an edited /etc/tlsh/tlsh-helper.conf" grep -q "^# edited" "$conf"

# PREFIX: the program moves, and the rule that request-key runs follows it
d2=$tmp/local
make -s -C "$top" install DESTDIR="$d2" PREFIX=/usr/local > "$tmp/install3.log" 2>&1
tap_check "make install PREFIX=/usr/local succeeds" [ $? -eq 0 ]
tap_check "PREFIX=/usr/local: helper at /usr/local/sbin/tlsh-helper" [ -x "$d2/usr/local/sbin/tlsh-helper" ]
tap_check "PREFIX=/usr/local: man page at /usr/local/share/man/man8/tlsh-helper.8" [ -f "$d2/usr/local/share/man/man8/tlsh-helper.8" ]
tap_check "PREFIX=/usr/local: the request-key rule stays in /etc/request-key.d" [ -f "$d2/etc/request-key.d/tlsh.conf" ]
tap_check "PREFIX=/usr/local: the rule runs /usr/local/sbin/tlsh-helper" \
	[ "$(rule "$d2/etc/request-key.d/tlsh.conf" 2>/dev/null)" = "create tlsh * * /usr/local/sbin/tlsh-helper -k %k" ]

tap_summary
