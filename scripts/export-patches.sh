#!/bin/bash
# Developer tool: regenerate patches/ from the development tree
# build/dev (a git repository of the pristine source, tag "base", with
# one commit per patch). Keeps patches/series in commit order.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dev=${1:-$top/build/dev}
rm -f "$top"/patches/[0-9]*.patch
git -C "$dev" format-patch -q -N --no-signature --zero-commit -o "$top/patches" base..HEAD
(cd "$top/patches" && ls [0-9]*.patch > series)
cat "$top/patches/series"
