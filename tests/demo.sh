#!/bin/bash
# make demo: the main job of tlsh, shown end to end in the guest: a user
# mounts with xprtsec=auto, the kernel asks for a TLS handshake, the
# helper is spawned on demand, NFS runs over kTLS, the helper goes away.
# tlsh-vm: timeout=300
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

say() { printf '\n=== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "The guest: a server namespace S and client namespaces C1, C2 (we are in C1)"
run ip -br addr show eth0
say "The server exports $TLSH_EXPORT; knfsd sits behind an RPC-with-TLS front on $TLSH_SERVER_NAME:2049"
run ip netns exec S exportfs -v
run ip netns exec S ss -ltn 'sport = :2049'

say "The client side: request-key knows how to start the helper; no helper is running"
run cat /etc/request-key.d/tlsh.conf
printf '$ pgrep -x tlsh-helper\n%s\n' "$(pgrep -x tlsh-helper || echo '(none)')"
nfs_trace_setup

opts=vers=4.2,xprtsec=auto
say "Mount it: mount -t nfs -o $opts $TLSH_SERVER_NAME:$TLSH_EXPORT /mnt"
mkdir -p /mnt
capture_start demo tcp port 2049
run mount -t nfs -o "$opts" "$TLSH_SERVER_NAME:$TLSH_EXPORT" /mnt || exit 1
run grep " /mnt " /proc/mounts
say "The transport is encrypted (mountstats) and kTLS carries it (/proc/net/tls_stat)"
run grep -A0 "xprtsec:" /proc/self/mountstats
run grep -E "TlsCurrTxSw|TlsCurrRxSw" /proc/net/tls_stat
say "The kernel's trace of the handshake"
grep -E "rpc_tls_probe|tlsh_req_queued|tlsh_upcall_start|tlsh_agent_bound|tlsh_req_accepted|tlsh_req_done|rpc_tls_established" $TRACE/trace |
	sed 's/^ *//' | cut -c1-160 | head -n 12

say "Write a 16 MiB random file and a file of known text, read them back"
dd if=/dev/urandom of=/tmp/demo.bin bs=1M count=16 status=none
yes "TLSH-DEMO-SECRET" | head -c 1048576 > /tmp/demo.txt
run cp /tmp/demo.bin /tmp/demo.txt /mnt/
sync
run umount /mnt
run mount -t nfs -o "$opts" "$TLSH_SERVER_NAME:$TLSH_EXPORT" /mnt || exit 1
echo "client : $(sha256sum < /tmp/demo.bin)"
echo "server : $(sha256sum < "$TLSH_EXPORT_DIR/demo.bin")"
echo "via NFS: $(sha256sum < /mnt/demo.bin)"
cat /mnt/demo.txt > /dev/null
capture_stop
say "The wire (tcpdump on C1's eth0): TLS records, and the known text never appears"
echo "packets starting a TLS application data record: $(tls_records $TLSH_ARTIFACTS/demo.pcap)"
n=$(tcpdump -Z root -nr $TLSH_ARTIFACTS/demo.pcap -A 2>/dev/null | grep -c TLSH-DEMO-SECRET)
echo "packets containing 'TLSH-DEMO-SECRET': $n"
run umount /mnt
rm -f "$TLSH_EXPORT_DIR/demo.bin" "$TLSH_EXPORT_DIR/demo.txt"

say "The helper exits once idle (its idle time here: 3 s)"
wait_for 20 sh -c '! pgrep -x tlsh-helper > /dev/null'
printf '$ pgrep -x tlsh-helper\n%s\n' "$(pgrep -x tlsh-helper || echo '(none)')"
say "Done"
