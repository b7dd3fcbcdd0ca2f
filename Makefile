# tlsh: NFS over TLS with an on-demand handshake agent.
#
#   make check    host unit tests + the guest suite (TAP; the README's test command)
#   make demo     boot the guest and show the main job end to end
#   make check-debug  the guest suite on the debug kernel (KASAN, lockdep,
#                 kmemleak), in build/debug; see docs/reliability.md "What runs where"
#
# Other targets: deps kernel helper nfs-utils initramfs peer shell bench install clean

SHELL := /bin/bash
TOP := $(CURDIR)
B := $(TOP)/build
BZIMAGE := $(B)/kbuild/arch/x86/boot/bzImage
KSRC := $(B)/linux
KOBJ := $(B)/kbuild
DEPS_OK := $(shell $(TOP)/scripts/deps.sh --check 2>/dev/null && echo yes)

.PHONY: all deps docs kernel uapi helper front kmod certs tools nfs-utils initramfs peer check check-host \
	check-guest check-debug demo shell bench install deb deb-helper deb-kernel clean distclean checkpatch

all: kernel helper initramfs

deps:
	$(TOP)/scripts/deps.sh

# Every other target depends on this: installs what is missing.
ensure-deps:
ifneq ($(DEPS_OK),yes)
	$(TOP)/scripts/deps.sh
endif

kernel: ensure-deps
	$(TOP)/scripts/build-kernel.sh

# the series' UAPI headers, which the helper is built against
uapi: ensure-deps
	@$(TOP)/scripts/build-kernel.sh --headers-only

# the kernel <-> agent contract, from the patched tree (docs/interface.md)
docs: uapi
	@mkdir -p $(B)/docs
	@cp $(B)/linux/Documentation/networking/tls-in-kernel-handshake.rst $(B)/docs/
	@echo "$(B)/docs/tls-in-kernel-handshake.rst"

helper: ensure-deps uapi
	@if [ -f handshake-helper/Makefile ]; then $(MAKE) -C handshake-helper; fi

front: ensure-deps
	@if [ -f tests/tls-front/Makefile ]; then $(MAKE) -C tests/tls-front; fi

# Out-of-tree test modules (tests/kmod), loaded only in the guest.
kmod: kernel
	@if [ -f tests/kmod/Makefile ]; then \
		$(MAKE) -C $(KSRC) O=$(KOBJ) M=$(TOP)/tests/kmod modules >/dev/null && \
		mkdir -p $(B)/kmod && cp tests/kmod/*.ko $(B)/kmod/; fi

# Small test programs run inside the guest
TOOLS := $(patsubst tests/tools/%.c,$(B)/tools/%,$(wildcard tests/tools/*.c))
tools: uapi $(TOOLS)
$(B)/tools/%: tests/tools/%.c $(B)/uapi/.tlsh-uapi
	@mkdir -p $(B)/tools
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -isystem $(B)/uapi/include -o $@ $<
# the threaded TLS echo server (scaling cases and the bench)
$(B)/tools/hs-serv: tests/tools/hs-serv.c
	@mkdir -p $(B)/tools
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -pthread -o $@ $< \
		$$(pkg-config --cflags --libs gnutls)

# an mtls client's identity, by GnuTLS's certificate parser
$(B)/tools/cert-id: tests/tools/cert-id.c
	@mkdir -p $(B)/tools
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -o $@ $< \
		$$(pkg-config --cflags --libs gnutls)

# the capture's TLS records (libpcap)
$(B)/tools/tls-records: tests/tools/tls-records.c
	@mkdir -p $(B)/tools
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -o $@ $< $$(pkg-config --cflags --libs libpcap)

certs: ensure-deps
	@if [ -x tests/certs/mkcerts.sh ]; then tests/certs/mkcerts.sh $(B)/certs >/dev/null; fi

# the bench's exportfs and rpc.mountd, nfs-utils 2.6.4 from
# ../shared/third-party (Debian 12's 2.6.2 rejects the xprtsec= export
# option): build/nfs-utils/out/, rebuilt only when the tarball or the
# script changed
nfs-utils: ensure-deps
	$(TOP)/scripts/build-nfs-utils.sh

initramfs: ensure-deps helper front certs tools nfs-utils
	$(TOP)/scripts/mkinitramfs.sh

# The upstream reference peer VM for "tests/vm-run --peer" (tests/peer):
# linux-source-6.12 (scripts/kconfig/peer.config) in build/peer/kbuild,
# ktls-utils' tlshd from ../shared/third-party, build/peer/initramfs.cpio.
# Each part is rebuilt only when its inputs changed.
peer: ensure-deps certs
	$(TOP)/tests/peer/build-peer.sh

check: ensure-deps
	$(TOP)/tests/check.sh

check-host: ensure-deps
	$(TOP)/tests/check.sh --host-only

# The same guest suite on the debug flavor (scripts/kconfig/debug.config),
# built in build/debug (TLSH_DEBUG_BUILD), plus a kmemleak scan at the end.
check-debug: ensure-deps
	$(TOP)/tests/check-debug.sh

demo: kernel kmod initramfs
	@echo "demo: booting the bench guest (~15 s), then a TLS mount end to end (~1 min; tests/demo.sh)" >&2
	$(TOP)/tests/vm-run --timeout 300 $(TOP)/tests/demo.sh

shell: kernel kmod initramfs
	$(TOP)/tests/vm-run --shell

# Benchmarks in the guest (not a test; make check never runs it). Table on
# stdout; CSV, Markdown and PNG under build/bench/. Settings: BENCH_REPS,
# BENCH_MOUNT_REPS, BENCH_SCALE_REPS, BENCH_TPUT_REPS, BENCH_MIB,
# BENCH_FILES, BENCH_META_REPS, BENCH_NFS_MODES, BENCH_CIPHER,
# BENCH_PAIR_CIPHER, BENCH_PROFILE, BENCH_ONLY=handshake|nfs|peer|pair
# (tests/bench/run.sh).
# BENCH_NO_KERNEL=1 uses the kernel already built, as it is (the test
# module is rebuilt against it).
bench: $(if $(BENCH_NO_KERNEL),ensure-deps,kernel)
	@test -f $(BZIMAGE) || { echo "bench: no kernel (run: make kernel)"; exit 1; }
	$(MAKE) -s -C $(KSRC) O=$(KOBJ) M=$(TOP)/tests/kmod modules >/dev/null
	@mkdir -p $(B)/kmod $(B)/bench/bin && cp tests/kmod/*.ko $(B)/kmod/
	for c in tests/bench/*.c; do \
		$(CC) -std=c11 -Wall -Wextra -Werror -O2 -pthread -o $(B)/bench/bin/$$(basename $$c .c) \
			$$c $$(pkg-config --cflags --libs gnutls libcrypto) || exit 1; done
	$(MAKE) -s initramfs
	@[ "$(BENCH_PEER)" = 0 ] || [ -n "$(filter-out peer pair,$(BENCH_ONLY))" ] || $(MAKE) -s peer
	tests/bench/run.sh

# Debian packages, in build/deb/ (see docs/packages.md):
#   deb-helper  the agent: dpkg-buildpackage with debhelper
#               (handshake-helper/debian), built against the series' UAPI
#               headers; lintian must find nothing (error or warning)
#   deb-kernel  linux-image, linux-headers and linux-libc-dev from the
#               patched tree with the kernel's bindeb-pkg: the bench's
#               configuration, or KCONFIG=debian for Debian's own
#   deb         both
KCONFIG ?= bench
deb: deb-helper deb-kernel

deb-helper: ensure-deps uapi
	@mkdir -p $(B)/deb && rm -f $(B)/deb/tlsh-helper*
	cd handshake-helper && UAPI_INCLUDE=$(B)/uapi/include \
		dpkg-buildpackage -b -us -uc -tc >$(B)/deb/build.log 2>&1 || \
		{ tail -n 30 $(B)/deb/build.log; exit 1; }
	mv tlsh-helper_*.deb tlsh-helper-dbgsym_*.deb tlsh-helper_*.changes \
		tlsh-helper_*.buildinfo $(B)/deb/
	lintian --fail-on error,warning --tag-display-limit 0 $(B)/deb/tlsh-helper_*.changes
	@ls $(B)/deb/tlsh-helper*.deb

deb-kernel: ensure-deps
	$(TOP)/scripts/build-kernel-deb.sh $(KCONFIG)

checkpatch: kernel
	$(TOP)/tests/checkpatch.sh

install: helper
	$(MAKE) -C handshake-helper install DESTDIR=$(DESTDIR)

clean:
	-$(MAKE) -C handshake-helper clean 2>/dev/null
	-$(MAKE) -C tests/tls-front clean 2>/dev/null
	rm -rf $(B)/initramfs $(B)/initramfs.cpio $(B)/kmod $(B)/stage \
		$(B)/peer/rootfs $(B)/peer/initramfs.cpio

distclean: clean
	rm -rf $(B)
