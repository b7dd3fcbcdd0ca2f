#!/bin/bash
# pNFS over RPC-with-TLS. knfsd's flexfiles layouts name knfsd itself
# as an NFSv3 data server and forbid I/O through the metadata server, so
# an xprtsec=mtls mount of a "pnfs" export writes file data over a
# second connection, made by a data server client of its own: that
# connection must be TLS with the mount's keys as well, and a remount
# that replaces the keys (the old ones revoked) must give them to the
# data server client too, or the mount's writes stall on handshakes that
# keep failing. An xprtsec=psk mount of the same export (an mtls export
# takes PSK clients too) must present its PSK to the data server as well,
# not use the mtls mount's data server connection; and with an export
# open to both, a tls mount after a none mount must not use the none
# mount's data server connection (in plaintext). Once unmounted, no
# data server client outlives its mount (a remount used to leave one).
# A data server whose certificate lacks its address makes I/O wait, but
# a killed reader or writer ends, and the writer's data is not lost; on
# a soft mount, reads and writes fail with EIO in bounded time instead.
# tlsh-vm: timeout=600
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_policy_ready "pNFS over mTLS" || exit 0

P=$TLSH_PLAIN_NAME
M=/mnt/k
ring=
cleanup() {
	knfsd_cleanup
	export_policy ""
	umount -f -l /mnt/k2 2>/dev/null
	rm -f $TLSH_EXPORT_DIR/pnfs-[a-g]
	[ -z "$ring" ] || keyctl unlink "$ring" @u > /dev/null 2>&1
}
trap cleanup EXIT
knfsd_tls_setup "$KNFSD_MTLS_CONF"
# the client's layout and data server events, printed when a check fails
for e in pnfs_update_layout nfs4_layoutget nfs4_getdeviceinfo nfs4_pnfs_write \
	nfs4_pnfs_commit_ds ff_layout_write_error ff_layout_commit_error; do
	echo 1 > $TRACE/events/nfs4/$e/enable
done
kmark pnfs-start
keyctl new_session > /dev/null

# ds_writes: NFSv3 WRITE calls knfsd has served (the data server's
# writes: the mount itself is NFSv4.2)
ds_writes() {
	nfsd_sh S "cat /proc/net/rpc/nfsd" | awk '$1 == "proc3" { print $10 }'
}
# layout_of MOUNTPOINT: the pNFS layout driver mountstats names for it
layout_of() {
	awk -v m="$1" '$1 == "device" { cur = ($5 == m) }
		cur { if (match($0, /pnfs=[A-Z_]+/)) print substr($0, RSTART + 5, RLENGTH - 5) }' \
		/proc/self/mountstats
}
# no_revoked_key MARK: since MARK, no handshake failed on a revoked key
# and no agent was refused one
no_revoked_key() {
	! dmesg_since "$1" | grep -q "key revoked" &&
		! log_since "$1" | grep -q "cannot read key"
}
# write_file FILE: 4 MiB of /tmp/pnfs-data to FILE, flushed, within
# bounded time (a stalled write is killed)
write_file() {
	timeout -s KILL $((120 * TLSH_SLOWDOWN)) \
		dd if=/tmp/pnfs-data of="$1" bs=1M conv=fsync status=none
}
# read_back WRITTEN NAME FILE...: check NAME, that each FILE reads back
# from the server (caches dropped) as /tmp/pnfs-data; when WRITTEN is
# not 1 a write stalled, whose dirty pages no sync would flush: not
# tried, and $M is let go
read_back() {
	local written=$1 name=$2
	shift 2
	if [ "$written" != 1 ]; then
		not_ok "$name (not tried: the write stalled)"
		umount -f -l $M
		return
	fi
	sync
	echo 3 > /proc/sys/vm/drop_caches
	check "$name" sh -c 'for f; do cmp -s /tmp/pnfs-data "$f" || exit 1; done' sh "$@"
}
# let_go MOUNTPOINT: unmount, lazily if it does not finish in 60 s
let_go() {
	timeout 60 umount "$1" 2>/dev/null || umount -f -l "$1" 2>/dev/null
}
# none_left: no NFS client of knfsd (metadata or data server) and no
# kTLS connection to it is left in this namespace
none_left() { nfs_client_gone 2049 && [ -z "$(tls-diag 2049)" ]; }

check "knfsd has flexfiles layouts (CONFIG_NFSD_FLEXFILELAYOUT)" \
	grep -q " nfsd4_ff_proc_layoutget" /proc/kallsyms
check "knfsd serves TLS" [ "$(nfsd_tls 1)" = 1 ]
EXPORT_BASE="$EXPORT_BASE,pnfs" export_policy mtls
check "the export offers pNFS layouts (exportfs -v)" exported_with "pnfs"
check "... to authenticated clients only" exported_with "xprtsec=mtls"
cert=$(padd tlsh:pnfs-cert $CERTS/client.pem)
key=$(padd tlsh:pnfs-key $CERTS/client-key.pem)
dd if=/dev/urandom of=/tmp/pnfs-data bs=1M count=4 status=none

h0=$(peer_keys)
check "xprtsec=mtls mount of the pNFS export" \
	nfs_mount vers=4.2,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key $P $M
check "... it uses flexfiles layouts (mountstats)" [ "$(layout_of $M)" = LAYOUT_FLEX_FILES ]
w0=$(ds_writes)
check "4 MiB written" write_file $M/pnfs-a
check "... and on the server" [ "$(stat -c %s $TLSH_EXPORT_DIR/pnfs-a)" = 4194304 ]
w1=$(ds_writes)
check "... through the data server (NFSv3 WRITEs: $w0 -> $w1)" [ "$w1" -gt "$w0" ]
h1=$(peer_keys)
check "... whose connection is TLS with the client certificate too ($h0 -> $h1 handshakes)" \
	[ "$h1" -ge $((h0 + 2)) ]
check "... and authenticates the data server by the address its layout gives" \
	lgrep pnfs-start "handshake with $TLSH_PLAIN_ADDR:2049 ($TLSH_PLAIN_ADDR) done"

# the same certificate and key under new serials, the old ones revoked:
# what an administrator does when a key is compromised
c2=$(padd tlsh:pnfs-cert2 $CERTS/client.pem)
k2=$(padd tlsh:pnfs-key2 $CERTS/client-key.pem)
kmark pnfs-remount
check "remount with new serials: accepted" \
	timeout 60 mount -o remount,cert_serial=$c2,privkey_serial=$k2 $M
check "the old serials revoked" sh -c "keyctl revoke $cert && keyctl revoke $key"
n=$(reconnect_knfsd)
check "the metadata and data server connections told to reconnect ($n)" [ "$n" -ge 2 ]
written=0
write_file $M/pnfs-b && written=1
check "4 MiB more written after the keys were replaced" [ $written = 1 ]
check "... and on the server" [ "$(stat -c %s $TLSH_EXPORT_DIR/pnfs-b)" = 4194304 ]
w2=$(ds_writes)
check "... through the data server (NFSv3 WRITEs: $w1 -> $w2)" [ "$w2" -gt "$w1" ]
h2=$(peer_keys)
check "... both connections authenticated again ($h1 -> $h2 handshakes)" \
	[ "$h2" -ge $((h1 + 2)) ]
check "... no handshake tried a revoked key" no_revoked_key pnfs-remount
read_back $written "both files read back the same" $M/pnfs-a $M/pnfs-b
let_go $M
# a remount probes the server again: the layout driver must still be
# counted once, or the data server client outlives the mount
check "unmounted after the remount: no client of knfsd or connection to it is left" \
	wait_for 30 none_left

# PSK: the server's agent finds the identity in its default keyring
ring=$(server_psk_ring)
check "keyctl: the server's PSK keyring holds the client's identity" \
	keyctl search "$ring" user "$(cat $CERTS/psk.id)"
psk=$(padd tlsh:pnfs-psk $CERTS/psk.txt)
kmark pnfs-psk
check "xprtsec=psk mount of the pNFS export" \
	nfs_mount vers=4.2,xprtsec=psk,psk_serial=$psk $P $M
check "... it uses flexfiles layouts (mountstats)" [ "$(layout_of $M)" = LAYOUT_FLEX_FILES ]
w3=$(ds_writes)
written=0
write_file $M/pnfs-c && written=1
check "4 MiB written over PSK" [ $written = 1 ]
w4=$(ds_writes)
check "... through the data server (NFSv3 WRITEs: $w3 -> $w4)" [ "$w4" -gt "$w3" ]
check "... whose connection presents the PSK too" \
	lgrep pnfs-psk "handshake with $TLSH_PLAIN_ADDR:2049 ($TLSH_PLAIN_ADDR) done: .*, PSK$"
read_back $written "... and reads back the same" $M/pnfs-c
let_go $M
check "... unmounted: no client or connection is left" wait_for 30 none_left
check "knfsd refused no request on a connection without TLS" no_plain_requests pnfs-start

# one data server, two policies: a none mount's data server connection
# is plaintext; a tls mount of the same server must make its own
EXPORT_BASE="$EXPORT_BASE,pnfs" export_policy none:tls
check "the export takes none and tls (exportfs -v)" exported_with "xprtsec=none:tls"
check "xprtsec=none mount of the pNFS export" nfs_mount vers=4.2,xprtsec=none $P $M
w5=$(ds_writes)
check "4 MiB written in plaintext" write_file $M/pnfs-d
w6=$(ds_writes)
check "... through the data server (NFSv3 WRITEs: $w5 -> $w6)" [ "$w6" -gt "$w5" ]
kmark pnfs-tls
mkdir -p /mnt/k2
check "xprtsec=tls mount of the same export" nfs_mount vers=4.2,xprtsec=tls $P /mnt/k2
check "... 4 MiB written" write_file /mnt/k2/pnfs-e
w7=$(ds_writes)
check "... through the data server (NFSv3 WRITEs: $w6 -> $w7)" [ "$w7" -gt "$w6" ]
check "... over a TLS connection of its own to the data server" \
	lgrep pnfs-tls "handshake with $TLSH_PLAIN_ADDR:2049 ($TLSH_PLAIN_ADDR) done"
let_go /mnt/k2
let_go $M
check "both unmounted: no client or connection is left" wait_for 30 none_left

# a data server the client cannot authenticate: knfsd's certificate names
# plain.test only, not the address its layouts give, so every data
# server handshake fails and I/O waits as for a data server that is
# down (nfs-xprtsec(7)). Waiting is all it may do: a killed reader or
# writer ends at once, and the killed writer's data, still cached, is
# written once the data server can be authenticated again
no_agent() { [ "$(helpers)" = 0 ]; }
ended() { ! alive "$1"; }
# still_after SECS PID: PID is still running SECS seconds from now
still_after() { sleep "$1"; alive "$2"; }
# ends_killed PID: PID ends within 10 s (reaped); if not, the stacks of
# the tasks in D state are printed
ends_killed() {
	local p
	if wait_for 10 ended $1; then
		wait $1 2>/dev/null
		return 0
	fi
	for p in /proc/[0-9]*; do
		grep -q '^State:.*D' $p/status 2>/dev/null || continue
		echo "# in D state: $(cat $p/comm) ${p#/proc/}"
		sed 's/^/#   /' $p/stack
	done
	return 1
}
ds_refused() {
	dmesg_since pnfs-name | grep -q "TLS handshake with $TLSH_PLAIN_ADDR .*failed: server certificate not trusted"
}
wait_for 30 no_agent
# knfsd's certificate naming plain.test only, not the address its
# layouts give the data server by
NAMEONLY_CONF="server-certificate = $CERTS/knfsd-nameonly.pem
server-private-key = $CERTS/knfsd-nameonly-key.pem"
knfsd_tls_setup "$NAMEONLY_CONF"
kmark pnfs-name
check "xprtsec=tls mount of the pNFS export, knfsd's certificate naming plain.test only" \
	nfs_mount vers=4.2,xprtsec=tls $P $M
echo 3 > /proc/sys/vm/drop_caches
cat $M/pnfs-d > /dev/null 2>&1 &
rpid=$!
check "a reader: the data server's handshakes fail (its address is not in the certificate)" \
	wait_for 60 ds_refused
check "... the reader waits for the data server" still_after 2 $rpid
kill -9 $rpid
check "... killed, it ends within 10 s" ends_killed $rpid
dd if=/tmp/pnfs-data of=$M/pnfs-f bs=1M conv=fsync status=none 2>/dev/null &
wpid=$!
check "a writer (dd, then fsync) waits for the data server too" still_after 3 $wpid
kill -9 $wpid
check "... killed, it ends within 10 s (its files flushed on exit do not wait either)" \
	ends_killed $wpid
# the certificate fixed (an agent started anew reads it)
tlsh_config "$KNFSD_CONF"
pkill -x tlsh-helper
written=0
timeout $((120 * TLSH_SLOWDOWN)) sync && written=1
check "the certificate fixed: sync writes the killed writer's cached data" [ $written = 1 ]
check "... all of it reached the server" cmp -s /tmp/pnfs-data $TLSH_EXPORT_DIR/pnfs-f
check "... through the data server, authenticated by its address" \
	lgrep pnfs-name "handshake with $TLSH_PLAIN_ADDR:2049 ($TLSH_PLAIN_ADDR) done"
let_go $M
check "unmounted: no client or connection is left" wait_for 30 none_left

# A soft mount does not wait on: once its major timeout (timeo=30,
# retrans=1: 6 s) has passed, a read fails with EIO and a write's fsync
# reports EIO, and umount does not wait for the data server either.
# The bound checked is generous (no hang), not a timing target.
# soft_fails NAME CMD...: CMD fails within 60 s (times the slowdown)
# with "Input/output error"
soft_fails() {
	local name=$1 t0 secs out rc
	shift
	t0=$(date +%s)
	out=$(timeout $((90 * TLSH_SLOWDOWN)) "$@" 2>&1 > /dev/null)
	rc=$?
	secs=$(($(date +%s) - t0))
	check "$name fails with EIO (exit $rc: ${out##*: })" \
		sh -c '[ "$1" != 0 ] && [ "$1" != 124 ] && [ "${2##*: }" = "Input/output error" ]' \
		sh "$rc" "$out"
	check "... within 60 s ($secs s)" [ $secs -le $((60 * TLSH_SLOWDOWN)) ]
}
wait_for 30 no_agent
tlsh_config "$NAMEONLY_CONF"
echo 1 > $TRACE/events/nfs4/ff_layout_ds_give_up/enable
kmark pnfs-soft
check "a soft mount (timeo=30,retrans=1) of the export, the certificate naming plain.test only" \
	nfs_mount vers=4.2,xprtsec=tls,soft,timeo=30,retrans=1 $P $M
echo 3 > /proc/sys/vm/drop_caches
soft_fails "... a reader" cat $M/pnfs-d
soft_fails "... a writer's fsync" dd if=/tmp/pnfs-data of=$M/pnfs-g bs=1M conv=fsync status=none
check "... the client traced giving up on the data server" \
	grep -q "ff_layout_ds_give_up: error=-5 " $TRACE/trace
check "... umount does not wait for the data server" timeout $((60 * TLSH_SLOWDOWN)) umount $M
check "... no client or connection is left" wait_for 30 none_left
tlsh_config "$KNFSD_CONF"

if [ "${TLSH_FAILED:-0}" != 0 ]; then
	echo "# --- kernel and helper log, layout and data server events"
	dmesg_since pnfs-start | tail -20 | sed 's/^/# /'
	grep " pnfs_\| nfs4_\| ff_layout" $TRACE/trace | tail -20 | cut -c 1-200 | sed 's/^/# /'
	grep tlsh-helper /var/log/messages | tail -20 | sed 's/^/# /'
fi
finish
