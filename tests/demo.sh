#!/bin/bash
# make demo: the main job of tlsh, shown end to end in the guest.
# tlsh-vm: timeout=300
. /tlsh/guest/lib.sh

say() { printf '\n=== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "The guest: a server namespace S and client namespaces C1, C2 (we are in C1)"
run ip -br addr show eth0
say "The server exports $TLSH_EXPORT"
run ip netns exec S /usr/sbin/exportfs -v

# The xprtsec= mount option (RPC-with-TLS) is not in the series yet: until
# it is, the demo shows the plain mount on the bench.
opts=vers=4.2
say "Mount it from C1: mount -t nfs -o $opts $TLSH_SERVER_NAME:$TLSH_EXPORT /mnt"
mkdir -p /mnt
run mount -t nfs -o "$opts" "$TLSH_SERVER_NAME:$TLSH_EXPORT" /mnt || exit 1
run grep " /mnt " /proc/mounts

say "Write a 16 MiB file and read it back"
dd if=/dev/urandom of=/tmp/demo.bin bs=1M count=16 status=none
run cp /tmp/demo.bin /mnt/demo.bin
sync
echo "client : $(sha256sum < /tmp/demo.bin)"
echo "server : $(sha256sum < "$TLSH_EXPORT_DIR/demo.bin")"
echo "via NFS: $(sha256sum < /mnt/demo.bin)"
run umount /mnt
rm -f "$TLSH_EXPORT_DIR/demo.bin"
say "Done"
