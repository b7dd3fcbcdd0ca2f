#!/bin/bash
# Self-test of the debug bench (not part of the suite): load the kernel's
# KASAN test module; vm-run must see the report and exit 4.
# tlsh-vm: netns=root
# tlsh-vm: timeout=300
m=/lib/tlsh/kasan_test_module.ko
[ -f $m ] || { echo "no $m"; exit 1; }
insmod $m	# fails with EAGAIN by design, after the bad accesses
sleep 2
exit 0
