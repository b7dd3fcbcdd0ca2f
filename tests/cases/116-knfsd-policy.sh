#!/bin/bash
# Export policies: the bench's export with xprtsec=tls:mtls and then
# xprtsec=mtls in /etc/exports (exportfs and rpc.mountd of nfs-utils
# 2.6.4, which pass the option to the kernel), knfsd serving TLS: clients
# whose connection does not meet the policy are refused (NFSv4 and v3),
# with a clear line on the server and a failed mount on the client whose
# kernel says which kind of connection was refused and which xprtsec=
# could meet the policy (also for the export as the pseudo-root, fsid=0);
# clients that meet it mount; exportfs -v shows the policy; without the
# option everything is allowed again. An mtls client's NFSv4 client ID
# is bound to its TLS identity: the same owner from a plaintext
# connection gets NFS4ERR_CLID_INUSE (NFSv4.1 and 4.0), and its sessions
# cannot be created, bound to, used or destroyed from there.
# tlsh-vm: timeout=900
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_policy_ready "knfsd export policies" || exit 0

P=$TLSH_PLAIN_NAME
M=/mnt/p
SERVER_CONF=$KNFSD_MTLS_CONF
cleanup() {
	knfsd_cleanup
	export_policy ""
}
trap cleanup EXIT

knfsd_tls_setup "$SERVER_CONF"
keyctl new_session > /dev/null
cert=$(padd tlsh:cert $CERTS/client.pem)
key=$(padd tlsh:key $CERTS/client-key.pem)
check "keyctl: the client's certificate and key provisioned" test -n "$cert" -a -n "$key"
check "TLS on for knfsd" [ "$(nfsd_tls 1)" = 1 ]
yes TLSH-PLAINTEXT-MARKER | head -c 1048576 > /tmp/marker
MTLS=vers=4.2,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key

# --- xprtsec=tls:mtls: TLS required, any client ---------------------------
check "exportfs (nfs-utils 2.6.4) takes xprtsec=tls:mtls" export_policy tls:mtls
check "exportfs -v shows xprtsec=tls:mtls" exported_with "xprtsec=tls:mtls"
check "tls:mtls: a plaintext NFSv4.2 client is refused" denied none42 vers=4.2,xprtsec=none "a connection without TLS"
check "tls:mtls: a plaintext NFSv3 client is refused" denied none3 vers=3,nolock,xprtsec=none "a connection without TLS"
check "... the client's kernel says the export may require RPC-with-TLS (NFSv3)" \
	kgrep none3 "NFS: $P refused .* (xprtsec=none): the export may require RPC-with-TLS (xprtsec=tls, mtls or psk)"
check "tls:mtls: xprtsec=tls mounts (NFSv4.2)" mounted_tls vers=4.2,xprtsec=tls
check "... write + read back" rw_marker tls
umount $M
check "tls:mtls: xprtsec=tls mounts (NFSv3)" mounted_tls vers=3,nolock,xprtsec=tls
umount $M
check "tls:mtls: xprtsec=mtls mounts" mounted_tls $MTLS
umount $M

# --- xprtsec=mtls: authenticated clients only ---------------------------
check "exportfs takes xprtsec=mtls" export_policy mtls
check "exportfs -v shows xprtsec=mtls" exported_with "xprtsec=mtls"
check "mtls: a TLS client without a certificate is refused" denied tls42 vers=4.2,xprtsec=tls "a TLS connection without client authentication"
check "... the client's kernel names the option that could meet the policy" \
	kgrep tls42 "NFS: $P refused .* (xprtsec=tls): the export may require an authenticated client (xprtsec=mtls or psk)"
check "mtls: a plaintext client is refused" denied none42b vers=4.2,xprtsec=none "a connection without TLS"
check "mtls: xprtsec=mtls mounts" mounted_tls $MTLS
check "... write + read back" rw_marker mtls
umount $M

# --- an authenticated client's NFSv4 client ID is bound to its TLS
# identity: another host that presents the same client owner, over a
# connection that did not authenticate as that client (here: plaintext,
# which no export policy covers, as client IDs belong to no export),
# cannot take the client's lease and state over as if it had rebooted --
echo 1 > $TRACE/events/nfsd/nfsd_clid_cred_mismatch/enable
echo 1 > $TRACE/events/nfsd/nfsd_clid_peer_mismatch/enable
for v in 4.2 4.0; do
	check "NFSv$v, mtls: mounted, a file held open" mounted_tls "${MTLS/vers=4.2/vers=$v}"
	exec 7> $M/held-$v
	info=$(nfsd_sh S "cat /proc/fs/nfsd/clients/*/info")
	owner=$(sed -n 's/^name: "\(.*\)"$/\1/p' <<< "$info" | grep "NFSv$v .* xprtsec=mtls/" | head -1)
	echo "$info" | sed 's/^/# /'
	check "NFSv$v: knfsd shows the client's TLS identity (tls peer: in clients/*/info)" \
		grep -qE "^tls peer: [0-9a-f]{64}$" <<< "$info"
	opt=; [ $v = 4.0 ] && opt=-0
	out=$(ip netns exec C1 nfs4-clientid $opt $TLSH_PLAIN_ADDR "$owner" 2>&1)
	echo "# nfs4-clientid $opt: $out"
	check "NFSv$v: a plaintext $([ $v = 4.0 ] && echo SETCLIENTID || echo EXCHANGE_ID) presenting its owner is refused: NFS4ERR_CLID_INUSE" \
		[ "$out" = NFS4ERR_CLID_INUSE ]
	check "NFSv$v: ... traced: nfsd_clid_cred_mismatch, the conflict without a TLS identity" \
		grep -q "nfsd_clid_cred_mismatch: .*conflict=.* tls_peer=0000000000000000 " $TRACE/trace
	# nor use its client ID (not secret: the server's boot time and a
	# counter), nor, NFSv4.1 on, its sessions: their IDs are the client
	# ID and a counter, so a host with a session of its own can walk the
	# ones before it
	clid=$(nfsd_sh S "for f in /proc/fs/nfsd/clients/*/info; do grep -q 'NFSv$v .*xprtsec=mtls/' \$f && sed -n 's/^clientid: //p' \$f; done" | head -1)
	# as nfsd's tracepoints show it (cl_boot:cl_id, the u64's halves)
	traced=$(printf "%08x:%08x" $((clid & 0xffffffff)) $(((clid >> 32) & 0xffffffff)))
	if [ $v = 4.0 ]; then
		out=$(ip netns exec C1 nfs4-clientid -r $TLSH_PLAIN_ADDR "$clid" 2>&1)
		echo "# nfs4-clientid -r $clid: $out"
		check "NFSv4.0: a plaintext RENEW of its client ID is refused as for an unknown one: NFS4ERR_EXPIRED" \
			[ "$out" = "RENEW: NFS4ERR_EXPIRED" ]
	else
		out=$(ip netns exec C1 nfs4-clientid -s $TLSH_PLAIN_ADDR "$clid" 2>&1)
		echo "$out" | sed "s/^/# nfs4-clientid -s $clid: /"
		check "NFSv4.2: a plaintext CREATE_SESSION for its client ID is refused: NFS4ERR_WRONG_CRED" \
			grep -qx "CREATE_SESSION: NFS4ERR_WRONG_CRED" <<< "$out"
		check "NFSv4.2: ... its session is found among the session IDs before ours" \
			grep -q "^session: counter [0-9]" <<< "$out"
		check "NFSv4.2: ... binding a plaintext connection to it is refused: NFS4ERR_WRONG_CRED" \
			grep -qx "BIND_CONN_TO_SESSION: NFS4ERR_WRONG_CRED" <<< "$out"
		check "NFSv4.2: ... SEQUENCE in it from that connection is refused: NFS4ERR_CONN_NOT_BOUND_TO_SESSION" \
			grep -qx "SEQUENCE: NFS4ERR_CONN_NOT_BOUND_TO_SESSION" <<< "$out"
		check "NFSv4.2: ... and so is DESTROY_SESSION: NFS4ERR_WRONG_CRED" \
			grep -qx "DESTROY_SESSION: NFS4ERR_WRONG_CRED" <<< "$out"
	fi
	check "NFSv$v: ... traced: nfsd_clid_peer_mismatch on client $traced, its TLS identity against none" \
		grep -q "nfsd_clid_peer_mismatch: client $traced tls_peer=[0-9a-f]\{16\}, request tls_peer=0000000000000000 " $TRACE/trace
	echo kept >&7
	exec 7>&-
	check "NFSv$v: ... the client keeps its open file and writes through it" [ "$(cat $M/held-$v)" = kept ]
	umount $M
	echo > $TRACE/trace
done

# --- xprtsec=tls alone: as upstream, only clients that were not
# authenticated ----------------------------------------------------------
check "exportfs takes xprtsec=tls" export_policy tls
check "tls: an authenticated (mtls) client is refused, as upstream's" denied mtls42 "$MTLS" "a TLS connection with client authentication"
check "tls: xprtsec=tls mounts" mounted_tls vers=4.2,xprtsec=tls
umount $M

# --- the export as NFSv4's pseudo-root (fsid=0): PUTROOTFH is refused, and
# the client finds that the flavor SECINFO_NO_NAME offers does not help --
check "exportfs takes the pseudo-root (fsid=0) with xprtsec=mtls" export_policy mtls 0
kmark root
check_fail "pseudo-root, mtls: xprtsec=tls is refused (NFSv4.2)" \
	timeout $((90 * TLSH_SLOWDOWN)) mount -t nfs -o vers=4.2,xprtsec=tls,retry=0 $P:/ $M
check "... the client's kernel says an authenticated client may be required" \
	kgrep root "NFS: $P refused a TLS connection without client authentication (xprtsec=tls): the export may require an authenticated client"
check "pseudo-root, mtls: xprtsec=mtls mounts" \
	timeout $((90 * TLSH_SLOWDOWN)) mount -t nfs -o "${MTLS},retry=0" $P:/ $M
umount $M

# --- no option: everything allowed ---------------------------------------
check "exportfs without xprtsec=" export_policy ""
check "no policy: a plaintext client mounts" mounted_plain vers=4.2,xprtsec=none
check "... write + read back" rw_marker plain
umount $M
check "no policy: xprtsec=tls mounts" mounted_tls vers=4.2,xprtsec=tls
umount $M
rm -f $TLSH_EXPORT_DIR/tls $TLSH_EXPORT_DIR/mtls $TLSH_EXPORT_DIR/plain $TLSH_EXPORT_DIR/held-*
finish
