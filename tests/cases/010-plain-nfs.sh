#!/bin/bash
# The bench itself: topology up, the server exports, C1 mounts NFSv4.2 and
# NFSv3 without TLS, a 16 MiB random file written from C1 reads back with
# the same sha256 on the server side and from C2, umount is clean.
# tlsh-vm: timeout=240
. /tlsh/guest/lib.sh

cpus=$(sed -n 's/.*tlsh\.cpus=\([0-9]*\).*/\1/p' /proc/cmdline)
check "the guest runs on all ${cpus:-?} vCPUs QEMU gave it (SMP)" [ "$(nproc)" = "${cpus:-none}" ]
check "topology: C1 reaches the server over IPv4" ping -c1 -W2 "$TLSH_SERVER_ADDR"
check "topology: C1 reaches the server over IPv6" ping -c1 -W2 "$TLSH_SERVER_ADDR6"
check "topology: server.test resolves" grep -q "server.test" /etc/hosts
check "server: exports $TLSH_EXPORT" sh -c "ip netns exec S exportfs | grep -q '$TLSH_EXPORT'"
check "server: rpcbind lists nfs v3 and mountd" sh -c "rpcinfo -p $TLSH_SERVER_ADDR | grep -q nfs && rpcinfo -p $TLSH_SERVER_ADDR | grep -q mountd"

mnt=/mnt/v42
mkdir -p $mnt /mnt/c2
dd if=/dev/urandom of=/tmp/data16 bs=1M count=16 status=none
want=$(sha256sum < /tmp/data16 | cut -d' ' -f1)

check "NFSv4.2 mount from C1 (xprtsec=none)" mount -t nfs -o vers=4.2,proto=tcp,xprtsec=none,retry=0 "$TLSH_SERVER_NAME:$TLSH_EXPORT" $mnt
check "/proc/mounts shows nfs4 vers=4.2" grep -q " $mnt nfs4 .*vers=4.2" /proc/mounts
check "write 16 MiB from C1" sh -c "mountpoint -q $mnt && cp /tmp/data16 $mnt/file16"
sync
got=$(sha256sum < "$TLSH_EXPORT_DIR/file16" | cut -d' ' -f1)
check "server side has the same sha256" [ "$got" = "$want" ]
got=$(ip netns exec C2 sh -c "mount -t nfs -o vers=4.2,xprtsec=none,retry=0 $TLSH_SERVER_ADDR:$TLSH_EXPORT /mnt/c2 && sha256sum < /mnt/c2/file16; umount /mnt/c2" | cut -d' ' -f1)
check "C2 reads the same sha256 over NFSv4.2" [ "$got" = "$want" ]
check "umount NFSv4.2 is clean" umount $mnt
check_fail "no NFS mount left in C1" grep -q " $mnt " /proc/mounts

mnt=/mnt/v3
mkdir -p $mnt
check "NFSv3 mount from C1 (nolock)" mount -t nfs -o vers=3,proto=tcp,nolock,xprtsec=none,retry=0 "$TLSH_SERVER_NAME:$TLSH_EXPORT" $mnt
check "/proc/mounts shows nfs vers=3" grep -q " $mnt nfs .*vers=3" /proc/mounts
got=$(mountpoint -q $mnt && sha256sum < $mnt/file16 | cut -d' ' -f1)
check "NFSv3 reads the same sha256" [ "$got" = "$want" ]
check "NFSv3 write + read back" sh -c "mountpoint -q $mnt && cp /tmp/data16 $mnt/file16.v3 && cmp /tmp/data16 $mnt/file16.v3"
check "umount NFSv3 is clean" umount $mnt
rm -f "$TLSH_EXPORT_DIR"/file16*
finish
