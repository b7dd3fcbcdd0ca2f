#!/bin/bash
# vm-run self-test: a script that hangs (it asks for a 5 s limit).
# tlsh-vm: timeout=5
echo "selftest: this script hangs on purpose"
sleep 1000
