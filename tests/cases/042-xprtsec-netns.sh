#!/bin/bash
# One certificate from two network namespaces (containers) with the same
# host name. An xprtsec=mtls client is named by the identity its keys
# present, so both would present one NFSv4 owner to knfsd and each would
# be taken for the other's reboot, as two tls or auto mounts from such
# namespaces always are; nfs-xprtsec(7) tells administrators to give each
# namespace its own /sys/fs/nfs/net/nfs_client/identifier. With one set
# in the second namespace, knfsd sees two clients, and the first one's
# lock survives the second one's mount.
# tlsh-vm: timeout=600
. /tlsh/guest/lib.sh
. /tlsh/guest/tlsh-lib.sh
. /tlsh/guest/nfs-lib.sh

nfs_policy_ready "mTLS from two namespaces" || exit 0

P=$TLSH_PLAIN_NAME
M=/mnt/k
M3=/mnt/c3
cleanup() {
	exec 8>&-
	[ -n "${c3pid:-}" ] && kill $c3pid 2>/dev/null
	umount -f -l $M3 2>/dev/null
	knfsd_cleanup
	export_policy ""
	ip netns del C3 2>/dev/null
}
trap cleanup EXIT
knfsd_tls_setup "$KNFSD_MTLS_CONF"
kmark netns-start
keyctl new_session > /dev/null

cid=$(cert-id $CERTS/client.pem)
cert=$(padd tlsh:netns-cert $CERTS/client.pem)
key=$(padd tlsh:netns-key $CERTS/client-key.pem)
OPTS=vers=4.2,xprtsec=mtls,cert_serial=$cert,privkey_serial=$key

check "knfsd serves TLS" [ "$(nfsd_tls 1)" = 1 ]
check "the export requires an authenticated client (xprtsec=mtls)" export_policy mtls
check "a third client namespace, C3, on the server's bridge" client_ns C3 192.0.2.13 s3
check "C3's NFS client gets a uniquifier of its own" \
	ip netns exec C3 sh -c "echo tlsh-c3 > /sys/fs/nfs/net/nfs_client/identifier"
check "... C1's is not C3's" \
	[ "$(cat /sys/fs/nfs/net/nfs_client/identifier)" != tlsh-c3 ]
# a process in C3, to mount from C3 into this case's mount namespace
# (ip netns exec execs sleep: $! is the sleep, once in C3)
ip netns exec C3 sleep 600 &
c3pid=$!
c3net=$(ip netns exec C3 readlink /proc/self/ns/net)
in_c3() { [ "$(readlink /proc/$c3pid/ns/net)" = "$c3net" ]; }
check "a process in C3 to enter it by" wait_for 10 in_c3

check "C1 mounts with the certificate" nfs_mount $OPTS $P $M
echo lock > $M/netns-lock
exec 8>> $M/netns-lock
check "... and locks a file" flock -x -n 8
mkdir -p $M3
check "C3 mounts with the same certificate and key" \
	nsenter --net=/proc/$c3pid/ns/net timeout $((90 * TLSH_SLOWDOWN)) \
		mount -t nfs -o "$OPTS,retry=0" "$P:$TLSH_EXPORT" $M3
check "... encrypted with the certificate" policy_is $M3 mtls
check "knfsd sees two clients, the same identity under two owners" \
	nfsd_owners_are "NFSv4.2 tlsh-guest xprtsec=mtls/$cid\"" \
		"NFSv4.2 tlsh-c3/tlsh-guest xprtsec=mtls/$cid\""
check "C1's lock survived C3's mount" locked_elsewhere $M3/netns-lock
exec 8>&-
check "... and C3 takes it once C1 lets go" flock -x -n $M3/netns-lock true
rm -f $M/netns-lock
umount $M3 $M
check "no client lost a lock" no_lost_locks netns-start
kill $c3pid
ip netns del C3
check "C3 dismantled once its agent and NFS client are gone" \
	ns_gone s3 $((30 * TLSH_SLOWDOWN))

finish
