#!/bin/sh
# Build the virtual GPU host's kernel with KASAN and lockdep
# (PROVE_LOCKING) from Debian's source package of the kernel the virtual
# host boots, and lay it out as a VHOST_CACHE directory:
#
#   tests/kernel/build-kasan-kernel.sh SRC_DIR OUT_CACHE
#
# SRC_DIR: Debian's source of the virtual host's kernel with Debian's
# patches applied, e.g. linux-source-6.12 6.12.95-1~bpo12+1's tarball
# (docs/kernel-helper.md). OUT_CACHE gets kernel-version,
# kernel/boot/vmlinuz-VERSION, kernel/lib/modules/VERSION, the stock
# cache's initrd.gz (VHOST_CACHE, default build/vhost) and kernel-source
# (SRC_DIR). Then run the integration tests with VHOST_CACHE=OUT_CACHE.
set -eu
src=$(cd "$1" && pwd)
out=$2
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
stock=${VHOST_CACHE:-$top/build/vhost}
jobs=${JOBS:-$(nproc)}

cd "$src"
make -s x86_64_defconfig
scripts/kconfig/merge_config.sh -m .config "$here/kasan-vhost.config" >/dev/null
make -s olddefconfig
# Every option of the fragment must have survived olddefconfig.
missing=$(sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=\(.*\)$/\1=\2/p' \
          "$here/kasan-vhost.config" | while read -r line; do
    opt=${line%%=*}; want=${line#*=}
    if [ "$want" = n ]; then
        if grep -q "^$opt=" .config; then echo "$opt"; fi
    else
        if ! grep -qx "$line" .config; then echo "$opt"; fi
    fi
done)
[ -z "$missing" ] || { echo "build-kasan-kernel: not set: $missing" >&2; exit 1; }
make -s -j"$jobs" bzImage modules
version=$(make -s kernelrelease)
mkdir -p "$out/kernel/boot"
cp arch/x86/boot/bzImage "$out/kernel/boot/vmlinuz-$version"
make -s INSTALL_MOD_PATH="$out/kernel" modules_install
cp "$stock/initrd.gz" "$out/initrd.gz"
echo "$version" > "$out/kernel-version"
# Marks the cache as built from source: vhost.py prepare leaves it alone
# and kernel/build.sh builds the module against this tree.
echo "$src" > "$out/kernel-source"
echo "build-kasan-kernel: $version in $out"
