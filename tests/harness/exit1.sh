#!/bin/bash
# harness check of vm-run: a script that fails.
echo "harness check: this script exits 1 on purpose"
exit 1
