#!/bin/bash
# Load: 200 handshakes in flight at once in one namespace (the test
# consumer, each echoing a line over kTLS afterwards), then 32 network
# namespaces each mounting knfsd serving TLS (plain.test) with
# xprtsec=tls at the same moment, each with its own agent (and knfsd's
# agent doing the 32 server handshakes), writing and reading its own
# file. Every handshake's
# done() runs exactly once, nothing waits out a deadline, and every
# namespace can be deleted afterwards with no agent left behind.
# tlsh-vm: timeout=600
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

if [ ! -x /usr/sbin/tlsh-helper ] || ! command -v hs-serv > /dev/null; then
	skip "scaling: tlsh-helper or hs-serv is not built"
	exit 0
fi
if ! grep -q " rpc_starttls_probe" /proc/kallsyms; then
	skip "scaling: this kernel has no xprtsec= support"
	exit 0
fi

knfsd_tls_setup "$KNFSD_CONF"
trap knfsd_cleanup EXIT
M=/mnt/m1
s_net=$(stat -L -c %i /run/netns/S)
# client_upcalls: agents started for a client namespace (not for S's knfsd)
client_upcalls() { grep " tlsh_upcall_start:" $TRACE/trace | grep -vc "netns=$s_net "; }
check "test consumer module loads" tlsh_setup "$KNFSD_CONF"
S=$TLSH_SERVER_NAME

# --- 200 handshakes in flight in one namespace ---------------------------
# hs-serv: threaded, listen backlog 1024 (gnutls-serv's small accept
# queue would drop SYNs and measure its retransmits instead)
ip netns exec S hs-serv 4450 $CERTS/server.pem $CERTS/server-key.pem \
	> $TLSH_ARTIFACTS/hs-serv.log 2>&1 &
wait_for 10 sh -c "ip netns exec S ss -ltn | grep -q ':4450 '"
done0=$(count tlsh_req_done)
up0=$(count tlsh_upcall_start)
start=$(date +%s)
out=$(hs addr=$TLSH_SERVER_ADDR port=4450 name=server.test timeout=120000 count=200)
el=$(( $(date +%s) - start ))
good=$(grep -c ' start=0 status=0 done=1 cancelled=0 data=ok ' <<< "$out")
check "200 handshakes at once: all succeed and echo over kTLS ($good of 200)" [ "$good" = 200 ]
grep -v ' status=0 done=1 ' <<< "$out" | head -5 | sed 's/^/# /'
check "... within 120 s, no deadline waited out (took ${el} s)" [ $el -lt 120 ]
sleep 0.5
check "... exactly 200 completions traced (done() once each)" [ $(( $(count tlsh_req_done) - done0 )) = 200 ]
check "... served by one agent: one upcall" [ $(( $(count tlsh_upcall_start) - up0 )) = 1 ]
pkill hs-serv

# --- 32 namespaces mounting at once --------------------------------------
N=32
for i in $(seq $N); do
	client_ns m$i 192.0.2.$((150 + i)) v$i
done
bad=0
for i in $(seq $N); do
	wait_for 10 ip netns exec m$i ping -c1 -W1 $TLSH_PLAIN_ADDR > /dev/null || bad=$((bad + 1))
done
check "$N client namespaces on the server's bridge" [ $bad = 0 ]

check "no agent before the mounts" wait_for 30 sh -c '[ "$(pgrep -x tlsh-helper | wc -l)" = 0 ]'
check "knfsd serves TLS" [ "$(nfsd_tls 1)" = 1 ]
up0=$(client_upcalls)
est0=$(count rpc_tls_established)
sdone0=$(svc_count svc_tls_done 'status=0 ')
rm -f /tmp/scale.* /tmp/scale-ready.*
mkfifo /tmp/scale.go
# Each namespace is its own NFSv4 client: without its own identifier all
# would present the same client owner ("Linux NFSv4.2 <hostname>") and
# the server would take each new one for a reboot of the last.
cat > /tmp/scale-worker.sh <<'W'
#!/bin/bash
. /tlsh/guest/lib.sh
. /tlsh/guest/nfs-lib.sh
i=$1
echo "tlsh-scale-m$i" > /sys/fs/nfs/net/nfs_client/identifier
touch /tmp/scale-ready.$i
: < /tmp/scale.go
s=${EPOCHREALTIME/./}	# microseconds (busybox date has no %N)
if nfs_mount vers=4.2,xprtsec=tls "$TLSH_PLAIN_NAME" /mnt/m$i > /tmp/scale.$i.err 2>&1; then
	echo "m$i $EPOCHREALTIME" > /mnt/m$i/scale-m$i &&
		grep -q "^m$i " /mnt/m$i/scale-m$i &&
		encrypted /mnt/m$i 1 > /dev/null && r=0 || r=2
	umount /mnt/m$i || r=3
else
	r=1
fi
echo "$r $(( (${EPOCHREALTIME/./} - s) / 1000 ))" > /tmp/scale.$i
W
chmod +x /tmp/scale-worker.sh
pids=()
for i in $(seq $N); do
	ip netns exec m$i /tmp/scale-worker.sh $i &
	pids+=($!)
done
wait_for 60 sh -c "[ \$(ls /tmp/scale-ready.* 2>/dev/null | wc -l) = $N ]"
sleep 0.5
start=$(date +%s)
exec 7> /tmp/scale.go	# releases all workers at once
exec 7>&-
wait "${pids[@]}"
el=$(( $(date +%s) - start ))
okc=$(cat /tmp/scale.[0-9]* 2>/dev/null | grep -c '^0 ')
check "$N namespaces mount with xprtsec=tls at once, write, read, umount ($okc of $N)" [ "$okc" = $N ]
for i in $(seq $N); do
	r=$(cat /tmp/scale.$i 2>/dev/null)
	case "$r" in 0\ *) ;; *) echo "# m$i: ${r:-no result} $(head -c 300 /tmp/scale.$i.err 2>/dev/null)" ;; esac
done
check "... within 300 s (took ${el} s; slowest $(sort -k2 -n /tmp/scale.[0-9]* | tail -1 | cut -d' ' -f2) ms)" [ $el -le 300 ]
check "... each namespace spawned its own agent ($N upcalls)" [ $(( $(client_upcalls) - up0 )) = $N ]
check "... $N TLS sessions established" [ $(( $(count rpc_tls_established) - est0 )) -ge $N ]
check "... knfsd's agent did $N server handshakes" [ $(( $(svc_count svc_tls_done 'status=0 ') - sdone0 )) -ge $N ]
check "... the server has every namespace's file" [ "$(ls $TLSH_EXPORT_DIR/scale-m* 2>/dev/null | wc -l)" = $N ]

bad=0
for i in $(seq $N); do
	ip netns del m$i || bad=$((bad + 1))
done
check "all $N namespaces can be deleted" [ $bad = 0 ]
check "... and no agent is left" wait_for 30 sh -c '! pgrep -x tlsh-helper > /dev/null'
check "... their veth ends are gone from the server" wait_for 20 sh -c '! ip -n S link show | grep -q " v[0-9]*@"'
rm -f $TLSH_EXPORT_DIR/scale-m* /tmp/scale.* /tmp/scale-ready.* /tmp/scale-worker.sh
check "the test module unloads (no leaked references)" rmmod tlsh_test
[ "${TLSH_FAILED:-0}" = 0 ] || tail -n 40 /var/log/messages
finish
