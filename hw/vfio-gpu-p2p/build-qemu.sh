#!/bin/sh
# Build QEMU 10.0.2 (Debian's source) with the vfio-gpu-p2p extension.
#
#   hw/vfio-gpu-p2p/build-qemu.sh [BUILD_DIR]       (default: build/qemu)
#
# Fetches the upstream tarball through Debian's source packages (or takes
# the file GPUP2P_QEMU_TARBALL names; either is checked against the SHA-256
# the script pins), adds
# hw/vfio-gpu-p2p/ (the extension and the core library it links), applies
# the small hook patch to hw/vfio, and builds a minimal x86_64 QEMU with KVM
# and TCG, warnings as errors. Re-running rebuilds only what changed. The
# binary ends up at BUILD_DIR/qemu-system-x86_64 (a link into the build
# tree). x-gpu-p2p-clique defaults to off; the machine type
# pc-q35-X.Y-gpup2p (alias q35-gpup2p) makes auto the default.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-$top/build/qemu}
version=10.0.2
tarball=qemu_$version+ds.orig.tar.xz
# Debian's upstream tarball of qemu 1:10.0.2+ds-2+deb13u1~bpo12+1, as its
# .dsc lists it: the check needs no apt index, so a copy builds offline.
tarball_sha256=0901da33844a331bf8b3602b9c1fbd178e60b737c8e3ade678255bd090c9b9f1
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/qemu-$version

if [ ! -f "$out/$tarball" ]; then
    if [ -n "${GPUP2P_QEMU_TARBALL:-}" ]; then
        # A copy fetched before (e.g. another build tree's).
        cp "$GPUP2P_QEMU_TARBALL" "$out/$tarball" || true
    else
        # The .dsc and Debian diff of this backport may be gone from the
        # mirror; the upstream tarball is what we need, so tolerate their
        # absence (bookworm-backports' deb-src: scripts/setup-debian.sh).
        (cd "$out" && apt-get source --download-only -t bookworm-backports \
            "qemu=1:$version+ds-2+deb13u1~bpo12+1" >/dev/null 2>&1) || true
    fi
    got=$(sha256sum "$out/$tarball" 2>/dev/null | cut -d' ' -f1)
    if [ "$got" != "$tarball_sha256" ]; then
        echo "build-qemu: ${GPUP2P_QEMU_TARBALL:-$tarball} missing or its" \
             "SHA-256 is not $tarball_sha256" >&2
        rm -f "$out/$tarball"
        exit 1
    fi
fi

patch_file=$here/qemu-$version-hooks.patch
applied=$src/.vfio-gpu-p2p-patched     # a copy of the patch applied
# The +ds tarball lacks the edk2 firmware blobs that meson unpacks
# whenever bzip2 is found.
no_edk2() {
    sed -i 's/unpack_edk2_blobs = bzip2.found()/unpack_edk2_blobs = false/' \
        "$src/meson.build"
}
if [ ! -d "$src" ]; then
    tar -C "$out" -xf "$out/$tarball"
    no_edk2
fi
if ! cmp -s "$patch_file" "$applied"; then
    # A changed hook patch: take the old one out, keeping the build tree.
    if [ -s "$applied" ]; then
        (cd "$src" && patch -R -p1 --quiet < "$applied")
    elif [ -e "$applied" ]; then
        # Trees of older scripts kept no copy: restore what patches touch.
        tar -C "$out" -xf "$out/$tarball" "qemu-$version/hw/vfio" \
            "qemu-$version/hw/meson.build" "qemu-$version/meson.build" \
            "qemu-$version/qapi/vfio.json"
        no_edk2
    fi
    (cd "$src" && patch -p1 --quiet < "$patch_file")
    cp "$patch_file" "$applied"
fi

# The extension and the core library: copied only when changed, so ninja
# rebuilds only them.
dst=$src/hw/vfio-gpu-p2p
mkdir -p "$dst/core/lib" "$dst/core/include/gpup2p"
sync_file() {
    cmp -s "$1" "$2" 2>/dev/null || cp "$1" "$2"
}
for f in vfio-gpu-p2p.c vfio-gpu-p2p.h machine.c trace-events trace.h; do
    sync_file "$here/$f" "$dst/$f"
done
rm -f "$dst/bar-mapper.c" "$dst/default-clique"
sync_file "$here/meson.build.qemu" "$dst/meson.build"
# The core library's units that QEMU calls (core-units.txt; the link
# fails if one is missing), with the library's private and public headers
# and the shared kernel headers (P2P rule, UAPI). The rest of the library
# (capture, output, libvirt mirroring) is the host tool's.
mkdir -p "$dst/core/include/uapi"
sync_file "$here/core-units.txt" "$dst/core/core-units.txt"
rm -f "$dst/core/core-sources.txt"
for f in $(cat "$here/core-units.txt") $(cd "$top/lib" && ls *.h); do
    sync_file "$top/lib/$f" "$dst/core/lib/$f"
done
for f in "$top"/include/gpup2p/*.h "$top"/kernel/include/gpup2p/*.h; do
    sync_file "$f" "$dst/core/include/gpup2p/$(basename "$f")"
done
for f in "$top"/kernel/include/uapi/*.h; do
    sync_file "$f" "$dst/core/include/uapi/$(basename "$f")"
done
# Drop files that left lib/, the list or the headers (renamed or removed,
# as helper.c and helper.h became module-client.*), so no stale copy stays
# beside the ones the list names.
for f in "$dst"/core/lib/*; do
    name=$(basename "$f")
    case $name in
    *.h) [ -e "$top/lib/$name" ] || rm -f "$f" ;;
    *) grep -qx "$name" "$here/core-units.txt" || rm -f "$f" ;;
    esac
done
for f in "$dst"/core/include/gpup2p/*; do
    name=$(basename "$f")
    [ -e "$top/include/gpup2p/$name" ] ||
        [ -e "$top/kernel/include/gpup2p/$name" ] || rm -f "$f"
done

# -Werror covers our files with QEMU's own warning flags; a tree
# configured with other options is configured afresh.
configure_args="--target-list=x86_64-softmmu --without-default-features
    --enable-kvm --enable-tcg --enable-virtfs --enable-attr --enable-cap-ng
    --enable-trace-backends=log --disable-install-blobs --disable-docs
    --enable-werror
    --firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu
    --python=/usr/bin/python3"
if [ ! -f "$src/build/build.ninja" ] ||
   [ "$(cat "$src/build/.gpup2p-configure" 2>/dev/null)" != "$configure_args" ]
then
    rm -rf "$src/build"
    # shellcheck disable=SC2086 # the arguments are words
    (cd "$src" && ./configure $configure_args >/dev/null)
    printf '%s' "$configure_args" > "$src/build/.gpup2p-configure"
fi
ninja -C "$src/build" qemu-system-x86_64
# Run from its build tree, QEMU looks for firmware under qemu-bundle/:
# point that at Debian's firmware packages (qemu-system-data, SeaBIOS,
# iPXE).
for d in usr/share/qemu usr/share/seabios usr/lib/ipxe/qemu; do
    if [ ! -e "$src/build/qemu-bundle/$d" ]; then
        mkdir -p "$(dirname "$src/build/qemu-bundle/$d")"
        ln -s "/$d" "$src/build/qemu-bundle/$d"
    fi
done
ln -sf "$src/build/qemu-system-x86_64" "$out/qemu-system-x86_64"
echo "build-qemu: $out/qemu-system-x86_64"
