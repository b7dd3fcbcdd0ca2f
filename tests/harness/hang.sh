#!/bin/bash
# harness check of vm-run: a script that hangs (it asks for a 5 s limit).
# tlsh-vm: timeout=5
echo "harness check: this script hangs on purpose"
sleep 1000
