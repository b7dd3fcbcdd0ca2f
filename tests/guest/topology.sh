# Topology of the guest (sourced by /init):
#
#   namespace S (server)                 namespaces C1, C2 (clients)
#   br0 192.0.2.1/24 2001:db8::1/64      eth0 192.0.2.11 / 2001:db8::11 (C1)
#    +-- s1 <-- veth --> eth0 (C1)       eth0 192.0.2.12 / 2001:db8::12 (C2)
#    +-- s2 <-- veth --> eth0 (C2)
#   lo 127.0.0.1
#
# /etc/hosts: server.test -> 192.0.2.1, 2001:db8::1 (RPC-with-TLS);
#             plain.test  -> 192.0.2.2, 2001:db8::2 (knfsd itself).
# With tests/vm-run --peer, the guest also has a virtio-net device (eth0 in
# the root namespace at boot) linked to the upstream reference peer VM
# (tests/peer): it becomes peer0 in C1 with 198.51.100.2/24 and
# 2001:db8:1::2/64, and ref.test -> 198.51.100.1, 2001:db8:1::1.
# knfsd (v3, v4.0, v4.1, v4.2) in S exports the tmpfs /srv/export on
# 127.0.0.1, 192.0.2.2 and 2001:db8::2, port 2049. tls-front owns port
# 2049 of server.test: it answers the AUTH_TLS probe, does the server
# side of the TLS handshake and relays to knfsd on 127.0.0.1 (clients
# that do not probe are relayed in plaintext). rpcbind and rpc.mountd
# run in S on all addresses.

topology_up() {
	set -e
	ip link set lo up
	ip netns add S
	ip netns add C1
	ip netns add C2
	peer_link_up
	ip -n S link set lo up
	ip -n S link add br0 type bridge
	ip -n S addr add 192.0.2.1/24 dev br0
	ip -n S addr add 2001:db8::1/64 dev br0 nodad
	ip -n S addr add 192.0.2.2/24 dev br0
	ip -n S addr add 2001:db8::2/64 dev br0 nodad
	ip -n S link set br0 up
	local c n
	n=1
	for c in C1 C2; do
		ip link add s$n type veth peer name eth0 netns $c
		ip link set s$n netns S
		ip -n S link set s$n master br0
		ip -n S link set s$n up
		ip -n $c link set lo up
		ip -n $c addr add 192.0.2.1$n/24 dev eth0
		ip -n $c addr add 2001:db8::1$n/64 dev eth0 nodad
		ip -n $c link set eth0 up
		n=$((n + 1))
	done
	# bridges need a moment before forwarding
	wait_for 10 ip netns exec C1 ping -c1 -W1 192.0.2.1 >/dev/null
	wait_for 10 ip netns exec C2 ping -c1 -W1 192.0.2.1 >/dev/null
	wait_for 10 ip netns exec C1 ping -c1 -W1 2001:db8::1 >/dev/null
	set +e
}

# peer_link_up: the virtio-net link to the reference peer, when there is
# one, into C1 as peer0 (before the veth ends named eth0 arrive there)
peer_link_up() {
	[ -e /sys/class/net/eth0/device ] || return 0
	ip link set eth0 name peer0
	ip link set peer0 netns C1
	ip -n C1 addr add 198.51.100.2/24 dev peer0
	ip -n C1 addr add 2001:db8:1::2/64 dev peer0 nodad
	ip -n C1 link set peer0 up
	printf '198.51.100.1\tref.test\n2001:db8:1::1\tref.test\n' >> /etc/hosts
	wait_for 20 ip netns exec C1 ping -c1 -W1 198.51.100.1 >/dev/null
}

# Everything the server side runs lives in one long-lived mount namespace
# entered with "ip netns exec S", so the nfsd filesystem mounted there is the
# one of namespace S.
server_up() {
	set -e
	mkdir -p /srv/export /var/lib/nfs/v4recovery /var/lib/nfs/sm /run/rpcbind
	mount -t tmpfs -o size=1g,mode=0777 export /srv/export
	: > /var/lib/nfs/etab
	: > /var/lib/nfs/rmtab
	ip netns exec S /tlsh/guest/server-start
	set +e
}

cleanup_between_scripts() {
	local m
	# unmount whatever NFS a script left behind (in the root namespace
	# view, all mounts made by "ip netns exec" are private to it)
	for m in $(awk '$3 ~ /^nfs/ {print $2}' /proc/mounts | sort -r); do
		umount -f -l "$m" 2>/dev/null
	done
	pkill -x tlsh-helper 2>/dev/null
	true
}

# leftovers: the NFS clients (/proc/fs/nfsfs/servers) and kTLS sockets
# (tls-diag) of every network namespace, one per line after the
# namespace's name; empty when a script left none behind
leftovers() {
	local ns
	for ns in root $(ip netns list | awk '{print $1}'); do
		if [ "$ns" = root ]; then
			{ tail -n +2 /proc/fs/nfsfs/servers; tls-diag; } 2>&1
		else
			ip netns exec "$ns" sh -c 'tail -n +2 /proc/fs/nfsfs/servers; tls-diag' 2>&1
		fi | sed "s/^/$ns: /"
	done
}

# new_leftovers BEFORE: the leftovers that are not in BEFORE (leftovers
# then); no_new_leftovers BEFORE: there are none
new_leftovers() { leftovers | grep -vxF -f <(echo "$1"); }
no_new_leftovers() { ! new_leftovers "$1" > /dev/null; }

# check_leftovers NAME BEFORE: after a script's cleanup, a TAP line
# saying whether it left an NFS client or a kTLS connection behind that
# was not there before it ran, given 15 s to go: a client that outlives
# its unmount is a leak
check_leftovers() {
	local new
	wait_for 15 no_new_leftovers "$2"
	new=$(new_leftovers "$2")
	if [ -n "$new" ]; then
		echo "not ok - $1 left NFS clients or kTLS connections behind"
		echo "$new" | sed 's/^/# /'
	else
		echo "ok - $1 left no NFS client or kTLS connection behind"
	fi
}
