#!/bin/bash
# First script of "make check-debug": the debug kernel's own boot messages.
# Reports during boot fail here; kmemleak's and KASAN's banners do not.
# Then the kernel log is cleared (so that the banners do not count as a
# report against the next script) and kmemleak forgets what boot left.
# tlsh-vm: netns=root
# tlsh-vm: timeout=600
. /tlsh/guest/lib.sh

benign='kmemleak: Kernel memory leak detector initialized|kmemleak: Automatic memory scanning thread|RCU lockdep checking is enabled'
boot=$(dmesg | grep -vE "$benign" | grep -E "$TLSH_KERNEL_REPORT_RE")
if [ -n "$boot" ]; then
	not_ok "debug kernel: no report during boot"
	dmesg | grep -vE "$benign" | grep -E -A20 "$TLSH_KERNEL_REPORT_RE" | head -n 80 | sed 's/^/# /'
else
	ok "debug kernel: no report during boot"
fi
check "debug kernel: KASAN is on" grep -q "KernelAddressSanitizer initialized" <<< "$(dmesg)"
check "debug kernel: lockdep is on" [ -e /proc/lockdep ]
kl=/sys/kernel/debug/kmemleak
check "debug kernel: kmemleak is on" [ -w $kl ]
# what boot itself leaves (not the project's doing): shown, not counted
echo scan > $kl 2>/dev/null
n=$(grep -c '^unreferenced object' $kl 2>/dev/null)
echo "# kmemleak after boot: ${n:-?} suspects (forgotten; only later ones count)"
grep -A12 '^unreferenced object' $kl 2>/dev/null | head -n 40 | sed 's/^/#   /'
echo clear > $kl 2>/dev/null
dmesg -c > /dev/null	# (busybox dmesg has no -C)
finish
