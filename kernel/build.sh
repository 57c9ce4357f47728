#!/bin/sh
# Build the kernel module out of the source tree, into BUILD_DIR (default
# build/kernel), against KVER's headers (default: the kernel the virtual
# GPU host boots, else the running one). kernel/ is self-contained (as
# DKMS needs it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=${1:-$top/build/kernel}
kver=${KVER:-$(cat "$top/build/vhost/kernel-version" 2>/dev/null ||
               cat "${VHOST_CACHE:-/nonexistent}/kernel-version" 2>/dev/null ||
               uname -r)}
kdir=/lib/modules/$kver/build
[ -d "$kdir" ] || { echo "kernel/build.sh: no headers in $kdir" >&2; exit 1; }
mkdir -p "$out"
for f in Kbuild gpup2p.h gpup2p_main.c gpup2p_verdict.c; do
    cmp -s "$here/$f" "$out/$f" 2>/dev/null || cp "$here/$f" "$out/$f"
done
# The shared headers are read where they are, not copied: a copy under
# build/kernel/include would shadow them for meson's build-directory
# include path (kernel/include).
rm -rf "$out/include"
make -C "$kdir" M="$out" W=1 ccflags-y="-I$here/include" modules
echo "kernel/build.sh: $out/gpup2p.ko"
