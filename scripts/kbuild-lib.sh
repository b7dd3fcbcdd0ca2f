# Shared by the kernel builds of the bench (scripts/build-kernel.sh, our
# 6.1 kernel; tests/peer/build-peer.sh, the upstream 6.12 peer). Source it;
# it defines functions only.

# kconfig_apply SRC OBJ PREFIX FRAGMENT...: configure the tree SRC with
# objects in OBJ as "make allnoconfig" (or the configuration file
# KCONFIG_BASE, when set) plus the fragments (a later one overrides an
# earlier one), then check that every option of the fragments took effect
# (=n: not set); PREFIX names the build in messages. Returns 1 when one
# did not.
kconfig_apply() {
	local src=$1 obj=$2 prefix=$3
	shift 3
	local line k v got bad=0
	mkdir -p "$obj"
	if [ -n "${KCONFIG_BASE:-}" ]; then
		cp "$KCONFIG_BASE" "$obj/.config"
	else
		make -s -C "$src" O="$obj" allnoconfig >/dev/null
	fi
	"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$@" >/dev/null
	make -s -C "$src" O="$obj" olddefconfig >/dev/null
	while IFS= read -r line; do
		k=${line%%=*}; v=${line#*=}
		got=$(sed -n "s/^$k=//p" "$obj/.config")
		if [ "$v" = n ]; then
			[ -z "$got" ] && continue
		elif [ "$got" = "$v" ]; then
			continue
		fi
		echo "$prefix: config: $k=$v requested, got '${got:-not set}'" >&2
		bad=1
	done < <(cat "$@" | grep -E '^CONFIG_[A-Za-z0-9_]+=' |
		# a later fragment overrides an earlier one: check the last value
		awk -F= '!($1 in v) { k[n++] = $1 } { v[$1] = $0 } END { for (i = 0; i < n; i++) print v[k[i]] }')
	return $bad
}

# kbuild_cc BUILDDIR: sets KBUILD_CC, the compiler to pass as CC= (ccache
# when installed, unless TLSH_CCACHE=0), and exports ccache's base
# directory BUILDDIR so that two checkouts share hits
kbuild_cc() {
	KBUILD_CC=gcc
	if command -v ccache >/dev/null && [ "${TLSH_CCACHE:-1}" = 1 ]; then
		export CCACHE_BASEDIR=$1 CCACHE_NOHASHDIR=1
		KBUILD_CC="ccache gcc"
	fi
}
