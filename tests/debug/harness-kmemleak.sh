#!/bin/bash
# Self-test of the debug bench (not part of the suite): the kernel's
# kmemleak test module leaks on purpose; the scan must list it.
# tlsh-vm: netns=root
# tlsh-vm: timeout=600
m=/lib/tlsh/kmemleak-test.ko
kl=/sys/kernel/debug/kmemleak
[ -f $m ] || { echo "no $m"; exit 1; }
echo clear > $kl
insmod $m && rmmod kmemleak_test
echo scan > $kl
sleep 1
echo scan > $kl
n=$(grep -c '^unreferenced object' $kl)
echo "TLSH-KMEMLEAK-SUSPECTS $n"
grep -m1 -A10 '^unreferenced object' $kl
exit 0
