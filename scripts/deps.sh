#!/bin/bash
# Install (or, with --check, only verify) the Debian packages the project
# needs. Called by "make deps"; the other targets run it with --check and
# fall back to installing when something is missing.
set -euo pipefail

PKGS=(
	# kernel source and build tools
	linux-source-6.1 build-essential bc bison flex libelf-dev libssl-dev
	dwarves cpio kmod rsync xz-utils python3 perl ccache
	# the bench
	qemu-system-x86 expect busybox-static iproute2 tcpdump util-linux
	bash procps libpcap-dev
	# keys, TLS, NFS
	keyutils libkeyutils-dev libgnutls28-dev gnutls-bin pkg-config
	nfs-common nfs-kernel-server rpcbind
	# code checks
	cppcheck
	# make deb: the agent's Debian package, and its check
	debhelper lintian
	# benchmarks (make bench): the user-space TLS tunnel, the chart
	stunnel4 gnuplot-nox
	# make bench BENCH_PROFILE=1: perf in both pairs' VMs
	linux-perf
	# the upstream reference peer VM (tests/peer): its kernel source, and
	# what ktls-utils' tlshd needs to build
	linux-source-6.12 autoconf automake libtool libglib2.0-dev
	libnl-3-dev libnl-genl-3-dev
	# the bench's exportfs and rpc.mountd from nfs-utils 2.6.4
	# (scripts/build-nfs-utils.sh): what its configure checks and the two
	# programs link with (rpcgen is in rpcsvc-proto)
	libtirpc-dev libevent-dev libsqlite3-dev libblkid-dev uuid-dev
	rpcsvc-proto
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qx installed ||
		missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "${1:-}" = "--check" ]; then
	echo "deps: missing packages: ${missing[*]}" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
