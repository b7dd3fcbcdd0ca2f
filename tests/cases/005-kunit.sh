#!/bin/bash
# KUnit tests of the AF_TLSH core (CONFIG_TLSH_KUNIT_TEST=y in
# scripts/kconfig/tlsh.config): queueing, the deadline, cancel, reference
# counting, the listener, namespace exit. Built in, they ran at boot,
# before this script; this case turns each test case's KTAP result in
# the suite's debugfs file into one TAP line, and fails if any failed,
# none ran, or fewer ran than the suite's plan announced.
# tlsh-vm: netns=root
# tlsh-vm: timeout=60
. /tlsh/guest/lib.sh

suite=tlsh
results=/sys/kernel/debug/kunit/$suite/results
if [ ! -r "$results" ] && ! mountpoint -q /sys/kernel/debug; then
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
fi
if [ ! -r "$results" ]; then
	not_ok "KUnit suite $suite: no results in $results (CONFIG_TLSH_KUNIT_TEST, CONFIG_KUNIT_DEBUGFS?)"
	finish
fi
cp "$results" "$TLSH_ARTIFACTS/kunit-$suite.ktap"
# the raw KTAP too, for the host: tests/check.sh has the kernel's own
# parser (tools/testing/kunit/kunit.py parse) read it again
sed 's/^/# ktap: /' "$results"

# Subtests (the test cases) are indented; the suite's own line is not.
plan=0 ran=0 diag=()
while IFS= read -r line; do
	if [[ $line =~ ^[[:space:]]+1\.\.([0-9]+) ]]; then
		plan=${BASH_REMATCH[1]}
	elif [[ $line =~ ^[[:space:]]+(KTAP|#[[:space:]]*Subtest:) ]]; then
		:
	elif [[ $line =~ ^[[:space:]]+(not )?ok\ [0-9]+\ (-\ )?([^#]*[^#[:space:]])[[:space:]]*(#.*)?$ ]]; then
		ran=$((ran + 1))
		name="kunit $suite: ${BASH_REMATCH[3]}"
		directive=${BASH_REMATCH[4]}
		if [ -n "${BASH_REMATCH[1]}" ]; then
			for d in "${diag[@]}"; do echo "# $d"; done
			not_ok "$name"
		elif [[ $directive == *SKIP* ]]; then
			reason=${directive#*SKIP}
			reason=${reason# }
			skip "$name${reason:+: $reason}"
		else
			ok "$name"
		fi
		diag=()
	elif [[ $line =~ ^[[:space:]]+#?[[:space:]]*(.*[^[:space:]])[[:space:]]*$ ]]; then
		# what a failing expectation printed, for the next result
		diag+=("${BASH_REMATCH[1]}")
	fi
done < "$results"

check "kunit $suite: $ran test cases ran, as planned ($plan)" [ "$ran" -gt 0 -a "$ran" = "$plan" ]
check "kunit $suite: the suite as a whole passed" grep -Eq "^ok [0-9]+ (- )?$suite\$" "$results"
finish
