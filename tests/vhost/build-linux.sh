#!/bin/sh
# Build the Linux 7.x kernel of the second virtual GPU host and lay it out
# as a vhost.py cache directory:
#
#   tests/vhost/build-linux.sh [SERIES]     (default 7.3)
#
# Source: Debian's linux-source-SERIES (scripts/linux-source.sh). Config:
# Debian's amd64 flavour (linux-config-SERIES), trimmed by localmodconfig
# to the modules the virtual host loads (linux/modules.lsmod), plus
# linux/vhost-7.x.config (iommufd, the vfio cdev; P2PDMA and vfio dma-buf
# checked on). Every option of the fragment must survive olddefconfig.
#
# The build is cached per machine in $GPUP2P_CACHE (/var/cache/gpup2p),
# keyed by the source version, the two inputs above and this script: a second
# run, or a fresh clone on the same machine, takes seconds. The layout
# (kernel-version, kernel/boot, kernel/lib/modules, initrd.gz,
# kernel-source) is linked at build/vhost-SERIES; boot it with
# VHOST_CACHE=build/vhost-SERIES. Prints that directory.
set -eu
series=${1:-7.3}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${GPUP2P_CACHE:-/var/cache/gpup2p}
jobs=${JOBS:-$(nproc)}
fragment=$here/linux/vhost-7.x.config
lsmod=$here/linux/modules.lsmod

src=$("$top/scripts/linux-source.sh" "$series")
srcver=$(cat "$src/.gpup2p-version")
key=$(cat "$src/.gpup2p-version" "$fragment" "$lsmod" "$0" |
      sha256sum | cut -c1-16)
out=$cache/vhost-linux-$series-$key
link=$top/build/vhost-$series

if [ -f "$out/kernel-version" ]; then
    # The initramfs follows vhost.py's init script (rebuilt if it changed).
    VHOST_CACHE="$out" python3 "$here/vhost.py" initrd >&2
    mkdir -p "$top/build"
    ln -sfn "$out" "$link"
    echo "$link"
    exit 0
fi

# Debian's config for its amd64 flavour, from the package of the same
# version as the source.
work=$(mktemp -d "$cache/.vhost-linux-$series.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && "$top/scripts/apt-newer.sh" download -q \
    "linux-config-$series=$srcver" >&2)
dpkg-deb --fsys-tarfile "$work"/linux-config-*.deb |
    tar -xOf - "./usr/src/linux-config-$series/config.amd64_none_amd64.xz" |
    xz -dc > "$work/debian.config"

obj=$work/obj
mkdir -p "$obj"
cp "$work/debian.config" "$obj/.config"
start=$(date +%s)
make -s -C "$src" O="$obj" olddefconfig
make -s -C "$src" O="$obj" LSMOD="$lsmod" localmodconfig >/dev/null 2>&1
"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" \
    "$fragment" >/dev/null
make -s -C "$src" O="$obj" olddefconfig
missing=$(sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=\(.*\)$/\1=\2/p' "$fragment" |
    while read -r line; do
        opt=${line%%=*}; want=${line#*=}
        if [ "$want" = n ]; then
            if grep -q "^$opt=" "$obj/.config"; then echo "$opt"; fi
        elif ! grep -qx "$line" "$obj/.config"; then
            echo "$opt"
        fi
    done)
if [ -n "$missing" ]; then
    echo "build-linux: options of $fragment not kept by Kconfig:" $missing >&2
    exit 1
fi
make -s -C "$src" O="$obj" -j"$jobs" bzImage modules
version=$(make -s -C "$src" O="$obj" kernelrelease)
lay=$work/cache
mkdir -p "$lay/kernel/boot"
cp "$obj/arch/x86/boot/bzImage" "$lay/kernel/boot/vmlinuz-$version"
make -s -C "$src" O="$obj" INSTALL_MOD_PATH="$lay/kernel" \
    INSTALL_MOD_STRIP=1 modules_install
# Out-of-tree modules (kernel/) build against the object tree.
rm -f "$lay/kernel/lib/modules/$version/build" \
      "$lay/kernel/lib/modules/$version/source"
mv "$obj" "$lay/obj"
ln -s "$out/obj" "$lay/kernel/lib/modules/$version/build"
# kernel/build.sh builds the helper module against the object tree.
echo "$out/obj" > "$lay/kernel-source"
echo "$(( $(date +%s) - start ))" > "$lay/build-seconds"
echo "$version" > "$lay/kernel-version"
VHOST_CACHE="$lay" python3 "$here/vhost.py" initrd >&2
rm -rf "$cache/vhost-linux-$series-"*
mv "$lay" "$out"
mkdir -p "$top/build"
ln -sfn "$out" "$link"
echo "build-linux: $version in $((($(date +%s) - start) / 60)) min" >&2
echo "$link"
