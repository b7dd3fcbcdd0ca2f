#!/bin/bash
# Last script of "make check-debug": kmemleak scans twice (an object is
# reported only when it stayed unreferenced over a scan) and lists what
# the suite leaked. Any suspect fails.
# tlsh-vm: netns=root
# tlsh-vm: timeout=900
. /tlsh/guest/lib.sh

kl=/sys/kernel/debug/kmemleak
if [ ! -w $kl ]; then
	not_ok "kmemleak: $kl is not there (not a debug kernel?)"
	finish
fi
# leave the RCU callbacks and deferred frees of the last case time to run
sleep 5
t0=$SECONDS
echo scan > $kl
sleep 1
echo scan > $kl
leaks=$(cat $kl)
n=$(grep -c '^unreferenced object' <<< "$leaks")
if [ "$n" = 0 ]; then
	ok "kmemleak: no leak after the whole suite (2 scans, $((SECONDS - t0)) s)"
else
	not_ok "kmemleak: $n suspected leaks after the suite"
	head -n 200 <<< "$leaks" | sed 's/^/# /'
	cp $kl "$TLSH_ARTIFACTS/kmemleak.txt" 2>/dev/null
fi
finish
