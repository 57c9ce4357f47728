#!/bin/sh
# Build Debian 13's QEMU with the vfio-gpu-p2p extension.
#
#   hw/vfio-gpu-p2p/build-qemu.sh [BUILD_DIR]       (default: build/qemu)
#
# The source is Debian's source package qemu 1:10.0.13+ds-0+deb13u1 (the
# .dsc pinned by its SHA-256 here; dpkg-source checks the tarballs against
# it and applies Debian's patch series). On top: hw/vfio-gpu-p2p/ (the
# extension and the core library units it links) and one patch,
# qemu-$version-hooks.patch. The x86_64 system emulator is configured with
# the features Debian's qemu-system-x86 has: the options debian/rules gives
# its system build and the feature set its debian/extract-config-opts reads
# from debian/control, less what Debian 12 cannot build (configure_debian
# below). Warnings are errors. Re-running rebuilds only what changed.
#
# Results, under BUILD_DIR:
#   qemu-system-x86_64  a link into the build tree (modules load from there)
#   stage/              the install tree (prefix /usr/lib/gpup2p/qemu)
#   modules-common.txt  the modules Debian ships with qemu-system-common
#   modules-extra.txt   the others (its GUI, OpenGL, SPICE, block-extra)
# x-gpu-p2p-clique defaults to off; the machine type pc-q35-X.Y-gpup2p
# (alias q35-gpup2p) makes auto the default.
#
# A newer Debian security release is one bump: deb_version and dsc_sha256
# (sha256sum of the new .dsc), then the patch renamed and refreshed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-$top/build/qemu}
version=10.0.13
deb_version=1:10.0.13+ds-0+deb13u1
dsc=qemu_10.0.13+ds-0+deb13u1.dsc
dsc_sha256=a426c892e5369058c3423816c8625bc8010bb5a58ece57261f62b64ee4d765ad
prefix=/usr/lib/gpup2p/qemu
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/qemu-$version

# The source package is whole: the .dsc is the pinned one and every file
# it lists has the SHA-256 it gives (an interrupted copy is caught here,
# not in dpkg-source).
source_ok() {
    [ "$(sha256sum "$out/$dsc" 2>/dev/null | cut -d' ' -f1)" = \
      "$dsc_sha256" ] || return 1
    sed -n '/^Checksums-Sha256:/,/^[^ ]/s/^ \([0-9a-f]\{64\}\) [0-9]* \(.*\)$/\1  \2/p' \
        "$out/$dsc" | (cd "$out" && sha256sum --check --status)
}
if ! source_ok; then
    # A copy fetched before: GPUP2P_QEMU_SOURCE (offline), else this
    # machine's cache, which outlives a mirror that drops the version.
    # Each file through a temporary name.
    cache=${GPUP2P_QEMU_SOURCE:-${GPUP2P_CACHE:-/var/cache/gpup2p}/qemu-source}
    for f in "$cache/qemu_$version+ds"*; do
        [ -e "$f" ] || continue
        cp "$f" "$out/.copy.tmp" && mv "$out/.copy.tmp" "$out/$(basename "$f")"
    done
    if ! source_ok && [ -z "${GPUP2P_QEMU_SOURCE:-}" ]; then
        # trixie's deb-src (and trixie-security's) is in the project's
        # own apt configuration (scripts/setup-debian.sh), never in the
        # host's; apt checks what it downloads against the signed index.
        (cd "$out" && "$top/scripts/apt-newer.sh" source --download-only \
            "qemu=$deb_version" >/dev/null 2>&1) || true
    fi
    if ! source_ok; then
        from="$cache or trixie's deb-src"
        [ -z "${GPUP2P_QEMU_SOURCE:-}" ] || from=$GPUP2P_QEMU_SOURCE
        echo "build-qemu: $dsc (from $from) missing, not the one pinned" \
             "(SHA-256 $dsc_sha256), or a file it lists does not match" >&2
        exit 1
    fi
fi

patch_file=$here/qemu-$version-hooks.patch
applied=$src/.vfio-gpu-p2p-patched     # a copy of the patch applied
# A tree of another .dsc (a Debian upload of the same upstream version
# keeps the folder's name) is unpacked afresh: its patches differ.
if [ -d "$src" ] && [ "$(cat "$src/.gpup2p-dsc" 2>/dev/null)" != "$dsc_sha256" ]
then
    rm -rf "$src"
fi
if [ ! -d "$src" ]; then
    # dpkg-source checks the tarballs against the .dsc and applies
    # Debian's series (debian/patches/series); unpacked beside the tree
    # and moved, so an interrupted unpack leaves no half tree.
    rm -rf "$src.tmp"
    # (Without Debian's keyring it warns that it cannot check the
    # signature: the pinned SHA-256 stands for it.)
    (cd "$out" && dpkg-source -x "$dsc" "$src.tmp" > "$out/unpack.log" 2>&1) ||
        { cat "$out/unpack.log" >&2; exit 1; }
    echo "$dsc_sha256" > "$src.tmp/.gpup2p-dsc"
    mv "$src.tmp" "$src"
    # Checked: kept in this machine's cache (not an offline copy's
    # place), file by file through a temporary name.
    keep=${GPUP2P_CACHE:-/var/cache/gpup2p}/qemu-source
    if [ -z "${GPUP2P_QEMU_SOURCE:-}" ] && mkdir -p "$keep" 2>/dev/null; then
        for f in "$out/qemu_$version+ds"*; do
            name=$(basename "$f")
            cmp -s "$f" "$keep/$name" ||
                { cp "$f" "$keep/.$name.tmp" &&
                  mv "$keep/.$name.tmp" "$keep/$name"; } || true
        done
    fi
fi
if ! cmp -s "$patch_file" "$applied"; then
    # A changed hook patch: take the old one out, keeping the build tree.
    if [ -s "$applied" ]; then
        (cd "$src" && patch -R -p1 --quiet < "$applied")
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

# Debian's configuration of its system emulators. From debian/rules:
# common_configure_opts (less the paths: ours live under $prefix) and the
# options of its main system build; each is checked against this
# version's debian/rules, so a bump that changes them stops here.
debian_rules_opts="--disable-install-blobs --disable-strip --disable-download
    --disable-containers --disable-relocatable --disable-docs
    --disable-xkbcommon --disable-user --disable-linux-user --disable-xen
    --enable-modules --libexecdir=/usr/lib/qemu"
for opt in $debian_rules_opts --enable-module-upgrades; do
    if ! grep -q -e "[[:space:],]$opt\([[:space:])]\|$\)" "$src/debian/rules"
    then
        echo "build-qemu: $src/debian/rules no longer gives $opt;" \
             "review the options against it" >&2
        exit 1
    fi
done
# The feature set: Debian's own script reads it from debian/control.
# Debian 12 has no libblkio (the blkio block driver); this build alone
# among Debian's features goes without it.
features=$(sh "$src/debian/extract-config-opts" linux-amd64 \
               "$src/debian/control" | sed 's/^--enable-blkio$/--disable-blkio/')
# Ours: the x86_64 emulator only (no tools, no guest agent), our prefix
# (its modules in $prefix/lib/qemu), the paths Debian's rules use for
# helpers (Debian's qemu-bridge-helper in /usr/lib/qemu), firmware,
# configuration and state, and -Werror. Not Debian's
# --enable-module-upgrades: its packages copy the old modules to
# /run/qemu/ before an upgrade (debian/gen-module-upgrade.sh), ours do not,
# so a running VM would find none there; a module of another build is
# refused by its stamp instead (the pkgversion below names our version).
configure_args="--target-list=x86_64-softmmu --disable-tools
    --disable-guest-agent
    --prefix=$prefix --libdir=lib --sysconfdir=/etc --localstatedir=/var
    --firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu
    --enable-werror --python=/usr/bin/python3
    $debian_rules_opts
    $features"
# Ours first, then the Debian upload it is built from (not "Debian ..."
# alone: Debian's scripts take /run/qemu/Debian_* as theirs). One word for
# the list above, so passed on its own.
project_version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" "$top/meson.build")
pkgversion="vfio-gpu-p2p $project_version, Debian $deb_version"
# shellcheck disable=SC2086,SC2116 # one line of words, for the stamp
configure_args=$(echo $configure_args)
stamp="$configure_args --with-pkgversion=$pkgversion"
# And the other way: every option Debian's rules give the system build is
# ours too or a difference named above (paths, flags, tools, module
# upgrades), so a bump that adds one stops here.
rules_opts=$(awk '/^common_configure_opts = \\/,/\$\{empty\}/
                  /^common_configure_opts +\+=/
                  /^b\/qemu\/configured:/,/\|\| \\/' "$src/debian/rules" |
             grep -o -e '--[a-z0-9][a-z0-9-]*\(=[^ \\"]*\)\?' | sort -u)
for opt in $rules_opts; do
    case " $configure_args " in *" $opt "*) continue ;; esac
    case ${opt%%=*} in
    --with-pkgversion|--prefix|--libdir|--firmwarepath|--mandir|\
    --extra-cflags|--extra-ldflags|--enable-tools|--enable-module-upgrades|\
    --cross-prefix) continue ;;
    esac
    echo "build-qemu: $src/debian/rules gives $opt, which this build" \
         "neither takes nor names as a difference" >&2
    exit 1
done
if [ ! -f "$src/build/build.ninja" ] ||
   [ "$(cat "$src/build/.gpup2p-configure" 2>/dev/null)" != "$stamp" ]
then
    rm -rf "$src/build"
    mkdir -p "$src/build"
    # shellcheck disable=SC2086 # the arguments are words
    (cd "$src/build" && ../configure $configure_args \
        "--with-pkgversion=$pkgversion" > configure.log 2>&1) || {
        tail -n 30 "$src/build/configure.log" >&2
        echo "build-qemu: configure failed (its log:" \
             "$src/build/configure.log)" >&2
        exit 1
    }
    printf '%s' "$stamp" > "$src/build/.gpup2p-configure"
fi
# The emulator and its modules.
ninja -C "$src/build"
# The install tree the package takes (afresh each time: no stale module).
rm -rf "$out/stage"
DESTDIR=$out/stage "$src/build/pyvenv/bin/meson" install -C "$src/build" \
    --no-rebuild --quiet \
    >/dev/null
# Debian's rules remove the qtest accelerator modules from its install.
rm -f "$out/stage$prefix/lib/qemu"/accel-qtest-*.so
# Which modules Debian ships with qemu-system-common (the emulator's own
# package set); the rest it puts in qemu-system-gui, the OpenGL and SPICE
# module packages and qemu-block-extra.
for f in "$out/stage$prefix/lib/qemu"/*.so; do
    basename "$f"
done | sort > "$out/modules.all"
# shellcheck disable=SC2016 # Debian's variable, as its file spells it
sed -n 's|^usr/lib/${DEB_HOST_MULTIARCH}/qemu/\([^/]*\.so\)$|\1|p' \
    "$src/debian/qemu-system-common.install" | sort > "$out/modules.debian-common"
comm -12 "$out/modules.all" "$out/modules.debian-common" \
    > "$out/modules-common.txt"
comm -23 "$out/modules.all" "$out/modules.debian-common" \
    > "$out/modules-extra.txt"
rm -f "$out/modules.all" "$out/modules.debian-common"
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
