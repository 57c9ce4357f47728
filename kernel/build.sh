#!/bin/sh
# Build the kernel helper out of the source tree, into BUILD_DIR
# (default build/kernel), against KVER's headers (default: the kernel the
# virtual GPU host boots, else the running one).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=${1:-$top/build/kernel}
kver=${KVER:-$(cat "$top/build/vhost/kernel-version" 2>/dev/null || uname -r)}
kdir=/lib/modules/$kver/build
[ -d "$kdir" ] || { echo "kernel/build.sh: no headers in $kdir" >&2; exit 1; }
mkdir -p "$out/include/uapi" "$out/include/gpup2p"
for f in Kbuild gpup2p.h gpup2p_main.c gpup2p_map.c gpup2p_verdict.c; do
    cmp -s "$here/$f" "$out/$f" 2>/dev/null || cp "$here/$f" "$out/$f"
done
cp "$top/include/uapi/gpup2p.h" "$out/include/uapi/"
cp "$top/include/gpup2p/p2p-hostbridge.h" "$out/include/gpup2p/"
# In the copy, the shared headers sit under include/ beside the sources.
sed -i 's|-I$(src)/include -I$(src)/../include|-I$(src)/include|' "$out/Kbuild"
make -C "$kdir" M="$out" W=1 modules
echo "kernel/build.sh: $out/gpup2p.ko"
