#!/bin/sh
# The Linux 7.x virtual host as a host that builds iommufd's emulated type1
# container (CONFIG_IOMMUFD_VFIO_CONTAINER=y, VFIO_CONTAINER=n): QEMU's
# legacy container path then opens iommufd's /dev/vfio/vfio, whose Kconfig
# help says it lacks peer-to-peer DMA mapping. Laid out as a vhost.py cache
# directory and linked at build/vhost-SERIES-emulated; prints that path:
#
#   tests/vhost/build-linux-emulated.sh [SERIES]     (default 7.3)
#
# Built from the cached build of tests/vhost/build-linux.sh (run first,
# cached as there): its object tree copied, linux/vhost-7.x-emulated-
# container.config merged over, and only what those options touch rebuilt.
# Every option of the fragment must survive olddefconfig. Cached per
# machine in $GPUP2P_CACHE, keyed by the base build (its release and
# config), the fragment and this script.
set -eu
series=${1:-7.3}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${GPUP2P_CACHE:-/var/cache/gpup2p}
jobs=${JOBS:-$(nproc)}
fragment=$here/linux/vhost-7.x-emulated-container.config

base=$(readlink -f "$("$here/build-linux.sh" "$series" | tail -n 1)")
key=$(cat "$base/kernel-version" "$base/obj/.config" "$fragment" "$0" |
      sha256sum | cut -c1-16)
out=$cache/vhost-linux-emulated-$series-$key
link=$top/build/vhost-$series-emulated

if [ ! -f "$out/kernel-version" ]; then
    src=$(readlink -f "$base/obj/source")
    # What an interrupted build left (a copy of the object tree: GBs).
    rm -rf "$cache/.vhost-linux-emulated-$series."*
    work=$(mktemp -d "$cache/.vhost-linux-emulated-$series.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    trap 'exit 1' INT TERM HUP
    start=$(date +%s)
    # The copy keeps the object files' times, so make rebuilds only what
    # the changed options reach.
    cp -a "$base/obj" "$work/obj"
    obj=$work/obj
    "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" \
        "$fragment" >/dev/null
    make -s -C "$src" O="$obj" olddefconfig
    missing=$(sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=\(.*\)$/\1=\2/p' \
                  "$fragment" |
        while read -r line; do
            opt=${line%%=*}; want=${line#*=}
            if [ "$want" = n ]; then
                if grep -q "^$opt=" "$obj/.config"; then echo "$opt"; fi
            elif ! grep -qx "$line" "$obj/.config"; then
                echo "$opt"
            fi
        done)
    if [ -n "$missing" ]; then
        echo "build-linux-emulated: options of $fragment not kept by" \
             "Kconfig:" $missing >&2
        exit 1
    fi
    make -s -C "$src" O="$obj" -j"$jobs" bzImage modules
    version=$(make -s -C "$src" O="$obj" kernelrelease)
    lay=$work/cache
    mkdir -p "$lay/kernel/boot"
    cp "$obj/arch/x86/boot/bzImage" "$lay/kernel/boot/vmlinuz-$version"
    make -s -C "$src" O="$obj" INSTALL_MOD_PATH="$lay/kernel" \
        INSTALL_MOD_STRIP=1 modules_install
    rm -f "$lay/kernel/lib/modules/$version/build" \
          "$lay/kernel/lib/modules/$version/source"
    # The host tool reads the running kernel's config (/boot/config-*).
    cp "$obj/.config" "$lay/config"
    echo "$(( $(date +%s) - start ))" > "$lay/build-seconds"
    echo "$version" > "$lay/kernel-version"
    rm -rf "$cache/vhost-linux-emulated-$series-"*
    mv "$lay" "$out"
    echo "build-linux-emulated: $version in" \
         "$((($(date +%s) - start) / 60)) min" >&2
fi
# The initramfs follows vhost.py's init script (rebuilt if it changed).
VHOST_CACHE="$out" python3 "$here/vhost.py" initrd >&2
mkdir -p "$top/build"
ln -sfn "$out" "$link"
echo "$link"
