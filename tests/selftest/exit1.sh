#!/bin/bash
# vm-run self-test: a script that fails.
echo "selftest: this script exits 1 on purpose"
exit 1
