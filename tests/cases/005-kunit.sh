#!/bin/bash
# The series' KUnit suites (scripts/kconfig/tlsh.config): tlsh, the
# AF_TLSH core (CONFIG_TLSH_KUNIT_TEST: queueing, the deadline, cancel,
# reference counting, the listener, namespace exit), nfs_x509, the
# identity an mtls NFS client's certificate presents
# (CONFIG_NFS_X509_KUNIT_TEST), and sunrpc_xprtsec, the policy and keys
# of the transports an RPC client adds or switches to, and the refusal
# of a required policy on UDP, AF_LOCAL and RDMA
# (CONFIG_SUNRPC_XPRTSEC_KUNIT_TEST). Built in, they ran at boot, before
# this script; this case turns each test case's KTAP result in the
# suite's debugfs file into one TAP line, and fails if any failed, none
# ran, or fewer ran than the suite's plan announced.
# tlsh-vm: netns=root
# tlsh-vm: timeout=60
. /tlsh/guest/lib.sh

SUITES=(tlsh nfs_x509 sunrpc_xprtsec)
if ! mountpoint -q /sys/kernel/debug; then
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
fi
# the raw KTAP too, for the host: tests/check.sh has the kernel's own
# parser (tools/testing/kunit/kunit.py parse) read it again, as one
# document with a line per suite (each debugfs file is a document of one)
echo "# ktap: KTAP version 1"
echo "# ktap: 1..${#SUITES[@]}"
# one_suite SUITE N: the TAP lines of SUITE, the Nth suite of the KTAP
one_suite() {
	local suite=$1 n=$2
	local results=/sys/kernel/debug/kunit/$suite/results
	if [ ! -r "$results" ]; then
		not_ok "KUnit suite $suite: no results in $results (its CONFIG_*_KUNIT_TEST, CONFIG_KUNIT_DEBUGFS?)"
		return
	fi
	cp "$results" "$TLSH_ARTIFACTS/kunit-$suite.ktap"
	# without the document's own header, the suite's result line numbered
	sed -e '1,2d' -e "s/^\(\(not \)\?ok\) 1 \($suite\)\$/\1 $n \3/" -e 's/^/# ktap: /' "$results"

	# Subtests (the test cases) are indented; the suite's own line is not.
	local plan=0 ran=0 diag=() line name directive reason d
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
}

n=0
for suite in "${SUITES[@]}"; do
	n=$((n + 1))
	one_suite "$suite" $n
done
finish
