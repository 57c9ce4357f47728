#!/bin/sh
# Build the kernel module out of the source tree, into BUILD_DIR (default
# build/kernel), against KVER's headers (default: the kernel the virtual
# GPU host boots, VHOST_CACHE's or else build/vhost's, else the running
# one). A virtual host kernel built from source (its cache has a
# kernel-source file) is built against that source tree. kernel/ is
# self-contained (as DKMS needs it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=${1:-$top/build/kernel}
cache=${VHOST_CACHE:-$top/build/vhost}
kver=${KVER:-$(cat "$cache/kernel-version" 2>/dev/null || uname -r)}
if [ -z "${KVER:-}" ] && [ -f "$cache/kernel-source" ]; then
    kdir=$(cat "$cache/kernel-source")
else
    kdir=/lib/modules/$kver/build
fi
[ -d "$kdir" ] || { echo "kernel/build.sh: no headers in $kdir" >&2; exit 1; }
mkdir -p "$out"
# Kbuild names the objects (the one list); the sources are every .c and .h.
for f in "$here"/Kbuild "$here"/*.c "$here"/*.h; do
    name=$(basename "$f")
    cmp -s "$f" "$out/$name" 2>/dev/null || cp "$f" "$out/$name"
done
# The shared headers are read where they are, not copied: a copy under
# build/kernel/include would shadow them for meson's build-directory
# include path (kernel/include).
rm -rf "$out/include"
# An object tree built with O= and moved afterwards (tests/vhost/
# build-linux.sh builds in a temporary directory) keeps the old path in
# its generated Makefile; its source link and O= name both trees anew.
if [ -L "$kdir/source" ]; then
    set -- -C "$(cd "$kdir/source" && pwd -P)" O="$(cd "$kdir" && pwd -P)"
else
    set -- -C "$kdir"
fi
make "$@" M="$out" W=1 ccflags-y="-I$here/include" modules
echo "kernel/build.sh: $out/gpup2p.ko"
