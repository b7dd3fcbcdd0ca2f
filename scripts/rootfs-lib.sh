# Making a root file system (initramfs) from this machine's installed
# programs and their shared libraries: shared by scripts/mkinitramfs.sh (our
# guest) and tests/peer/mkinitramfs-peer.sh (the upstream peer). Source it
# after setting "root" (the staging directory) and defining die MESSAGE.

# rootfs_skeleton: an empty merged-/usr tree in $root
rootfs_skeleton() {
	rm -rf "$root"
	mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,run,root,var/lib/nfs,mnt}
	ln -s usr/bin "$root/bin"
	ln -s usr/sbin "$root/sbin"
	ln -s usr/lib "$root/lib"
	ln -s usr/lib64 "$root/lib64"
}

# copy_file PATH: copy PATH (following symlinks, keeping the link names) to
# the same place in the initramfs.
copy_file() {
	local f=$1 dst
	[ -e "$f" ] || die "$f missing"
	case "$f" in
	/usr/* | /etc/*) dst=$root$f ;;
	*) dst=$root/usr$f ;;	# merged /usr: /lib, /bin, /sbin live there
	esac
	[ -e "$dst" ] && return 0
	mkdir -p "$(dirname "$dst")"
	if [ -L "$f" ]; then
		local t
		t=$(readlink -f "$f")
		copy_file "$t"
		ln -sf "$(readlink -f "$t")" "$dst" 2>/dev/null || true
		[ -e "$dst" ] || cp -L "$f" "$dst"
	else
		cp -a "$f" "$dst"
	fi
}

declare -A libs_done
# copy_libs BINARY: the shared libraries BINARY needs
copy_libs() {
	local l
	for l in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | sort -u); do
		[ -n "${libs_done[$l]:-}" ] && continue
		libs_done[$l]=1
		copy_file "$l"
	done
}

# copy_prog NAME-OR-PATH: a program and its libraries
copy_prog() {
	local p
	p=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$1") || die "program $1 not installed (run: make deps)"
	p=$(readlink -f "$p")
	copy_file "$p"
	# keep the name it is called by (e.g. /sbin/mount.nfs4 -> mount.nfs)
	local name
	name=$(basename "$1")
	if [ "$(basename "$p")" != "$name" ]; then
		ln -sf "$(basename "$p")" "$root/usr/$(basename "$(dirname "$p")")/$name"
	fi
	copy_libs "$p"
}

# copy_libgcc_s: libgcc_s, which glibc dlopens for pthread_exit and
# pthread_cancel (stunnel4 needs it; ldd does not list it)
copy_libgcc_s() {
	copy_file "$(ldconfig -p | awk '/libgcc_s\.so\.1 .*x86-64/ {print $NF; exit}')"
}

# opt_prog PATH DIR: a program of the project (or built for the bench)
# and its libraries into DIR of the initramfs, when it was built
opt_prog() {
	if [ -x "$1" ]; then
		mkdir -p "$root$2"
		cp "$1" "$root$2/"
		copy_libs "$1"
	fi
}

# rootfs_busybox: busybox for everything else; real programs copied before
# win over its applets, and /bin/sh is bash, which looks programs up in
# PATH.
rootfs_busybox() {
	local a
	cp /bin/busybox "$root/usr/bin/busybox"
	for a in $(/bin/busybox --list); do
		[ -e "$root/usr/bin/$a" ] || [ -e "$root/usr/sbin/$a" ] || ln -s busybox "$root/usr/bin/$a"
	done
	ln -sf bash "$root/usr/bin/sh"
}

# rootfs_nfs_etc: the files under /etc the NFS and RPC programs read
rootfs_nfs_etc() {
	echo "hosts: files" > "$root/etc/nsswitch.conf"
	echo "passwd: files" >> "$root/etc/nsswitch.conf"
	echo "group: files" >> "$root/etc/nsswitch.conf"
	cp /etc/netconfig "$root/etc/netconfig"
	local f
	for f in protocols services rpc; do cp /etc/$f "$root/etc/$f"; done
	mkdir -p "$root/etc/exports.d"
	: > "$root/etc/nfs.conf"
	echo "/dev/root / rootfs rw 0 0" > "$root/etc/fstab"
}

# rootfs_cpio OUT: pack $root into the uncompressed newc archive OUT (the
# kernel unpacks it faster than a compressed one under TCG)
rootfs_cpio() {
	(cd "$root" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) > "$1.tmp"
	mv "$1.tmp" "$1"
}
