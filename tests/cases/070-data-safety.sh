#!/bin/bash
# Data safety under connection loss: 512 MiB written and read back over
# xprtsec=tls in 64 MiB rounds, each checked by sha256 on the server and
# through the mount, while the TLS front drops every connection a few
# seconds after accepting it (FIN in odd rounds, RST in even ones). No
# byte differs, every reconnect is a new TLS session, and no plaintext
# goes on the wire: each round's data carries a known text that must
# never appear in the capture, and the front relays only after STARTTLS.
# TLSH_SAFETY_MIB=N (default 512) changes the total.
# tlsh-vm: timeout=1200
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_tls_ready "data safety" || exit 0

nfs_trace_setup
S=$TLSH_SERVER_NAME
M=/mnt/safe
MIB=${TLSH_SAFETY_MIB:-512}
ROUND=64
rounds=$(( (MIB + ROUND - 1) / ROUND ))

# headers only (snaplen 256): enough to see plaintext RPC or the marker
# at the start of any segment, small enough for 1 GiB of traffic
rm -f /tmp/safe.pcap
tcpdump -Z root --immediate-mode -i eth0 -s 256 -U -w /tmp/safe.pcap \
	tcp portrange 3070-3071 > /tmp/safe.tcpdump 2>&1 &
cap=$!
wait_for 10 grep -q "listening on" /tmp/safe.tcpdump

# this case's own front logs only (an earlier case may have used a port)
rm -f $TLSH_ARTIFACTS/front-3070.log $TLSH_ARTIFACTS/front-3071.log
est0=$(count rpc_tls_established)
bad_w=0 bad_r=0 done_mib=0
start=$(date +%s)
for r in $(seq $rounds); do
	port=3070 opts=
	if [ $((r % 2)) = 0 ]; then port=3071 opts=--drop-rst; fi
	front $port --drop-every=3 $opts
	if ! nfs_mount vers=4.2,xprtsec=tls,port=$port $S $M; then
		not_ok "round $r: mount through the dropping front"
		front_stop $port
		break
	fi
	# 60 MiB of random data and 4 MiB of a known text, shuffled by round
	dd if=/dev/urandom of=/tmp/safe.src bs=1M count=$((ROUND - 4)) status=none
	yes "TLSH-SAFETY-MARKER-$r" | head -c 4194304 >> /tmp/safe.src
	want=$(sha256sum < /tmp/safe.src | cut -d' ' -f1)
	dd if=/tmp/safe.src of=$M/safe bs=1M conv=fsync status=none || bad_w=$((bad_w + 1))
	[ "$(sha256sum < $TLSH_EXPORT_DIR/safe | cut -d' ' -f1)" = "$want" ] || bad_w=$((bad_w + 1))
	umount $M
	echo 3 > /proc/sys/vm/drop_caches
	nfs_mount vers=4.2,xprtsec=tls,port=$port $S $M &&
		[ "$(sha256sum < $M/safe | cut -d' ' -f1)" = "$want" ] || bad_r=$((bad_r + 1))
	umount $M
	rm -f $TLSH_EXPORT_DIR/safe
	front_stop $port
	done_mib=$((done_mib + ROUND))
	echo "# round $r/$rounds: $done_mib MiB, $(( $(date +%s) - start )) s, $(( $(count rpc_tls_established) - est0 )) TLS sessions so far"
done
el=$(( $(date +%s) - start ))
capture_pid_stop() { sleep 1; kill $cap 2>/dev/null; wait $cap 2>/dev/null; }
capture_pid_stop
rm -f /tmp/safe.src

all=0
[ $done_mib -ge $MIB ] && all=1
check "$done_mib MiB written through the dropping front, server's sha256 equal every round" [ $all$bad_w = 10 ]
check "... and read back through a new mount, sha256 equal every round" [ $all$bad_r = 10 ]
echo "# $done_mib MiB each way in $el s"
sessions=$(( $(count rpc_tls_established) - est0 ))
drops=$(cat $TLSH_ARTIFACTS/front-3070.log $TLSH_ARTIFACTS/front-3071.log | grep -c 'close="drop-every"')
check "... the front dropped connections mid-transfer ($drops drops)" [ "$drops" -ge $rounds ]
check "... each reconnect was a new TLS session ($sessions sessions)" [ "$sessions" -gt "$drops" ]
# connections relayed without STARTTLS (shown when there are any)
unsafe=$(cat $TLSH_ARTIFACTS/front-3070.log $TLSH_ARTIFACTS/front-3071.log | grep 'conn=' | grep -v 'probe=starttls' | grep 'c2b=[1-9]')
[ -z "$unsafe" ] || echo "$unsafe" | head -5 | sed 's/^/# /'
check "... the front relayed nothing without STARTTLS and TLS" [ -z "$unsafe" ]
check "capture: TLS application data on the wire" [ "$(tls_records /tmp/safe.pcap)" -gt 1000 ]
check_fail "capture: the known text never appears on the wire" sh -c "tcpdump -Z root -nr /tmp/safe.pcap -A 2>/dev/null | grep -q TLSH-SAFETY-MARKER"
rm -f /tmp/safe.pcap
check "no helper left some seconds after the last handshake" wait_for 30 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'
[ "${TLSH_FAILED:-0}" = 0 ] || tail -n 40 /var/log/messages
finish
