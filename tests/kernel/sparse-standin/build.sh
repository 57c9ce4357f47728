#!/bin/sh
# Build the sparse-mmap stand-in (a test module, not for any host) into
# OUT (default build/sparse-standin) against the object tree of the
# virtual host kernel VHOST_CACHE names (its kernel-source file, as
# tests/vhost/build-linux.sh lays it out). Prints the module's path.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
out=${1:-$top/build/sparse-standin}
cache=${VHOST_CACHE:?VHOST_CACHE: a virtual host kernel built from source}
kdir=$(cat "$cache/kernel-source")
# Built afresh each time, so that its W=1 warnings are seen every time.
rm -rf "$out"
mkdir -p "$out"
cp "$here"/Kbuild "$here"/*.c "$out/"
# The object tree was moved after its build: its source link and O= name
# both trees (as kernel/build.sh does).
make -s -C "$(cd "$kdir/source" && pwd -P)" O="$(cd "$kdir" && pwd -P)" \
    M="$out" W=1 modules >&2
echo "$out/gpup2p_sparse_standin.ko"
