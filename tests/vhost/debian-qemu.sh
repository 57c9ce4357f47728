#!/bin/sh
# A Debian 13 (trixie) QEMU binary, run with its own libraries: a minimal
# trixie root (debootstrap) with qemu-system-x86=VERSION from SUITE,
# cached once per machine under $GPUP2P_CACHE (/var/cache/gpup2p), and a
# wrapper at WRAPPER that starts it through that root's dynamic loader with
# its firmware first on the search path. Nothing is installed on this
# machine itself. Prints the wrapper's path.
#
#   tests/vhost/debian-qemu.sh SUITE VERSION WRAPPER [PACKAGE...]
#
# PACKAGEs (Debian's module packages of the same version, such as
# qemu-system-gui) go into a root of their own, made from a copy of the
# plain one, so the virtual host's emulator never runs from a root that
# apt is changing. The wrapper's QEMU_MODULE_DIR may be set by its caller
# (a folder with a chosen set of that root's modules).
#
# Callers: stock-qemu-newer.sh (QEMU 11.1, the iommufd judge) and
# outer-qemu.sh (QEMU 10.0.13, the virtual host's emulator) and
# test_qemu_parity.py (10.0.13 with every module package, our QEMU's
# judge).
set -eu
[ $# -ge 3 ] || { echo "usage: debian-qemu.sh SUITE VERSION WRAPPER" \
                       "[PACKAGE...]" >&2
                  exit 64; }
suite=$1 version=$2 wrapper=$3
shift 3
cache=${GPUP2P_CACHE:-/var/cache/gpup2p}
plain=$cache/trixie-qemu-$(echo "$version" | tr ':~+' '___')
root=$plain
[ $# -eq 0 ] || root=$plain-modules

# The mirror this machine's apt sources use for SUITE's main component.
suite_mirror() {
    apt-get indextargets --no-release-info \
        --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
        'Identifier: Packages' 2>/dev/null |
    awk -v suite="$1" '$2 == suite && $3 == "main" { print $1; exit }'
}

if [ ! -x "$plain/usr/bin/qemu-system-x86_64" ]; then
    mirror=$(suite_mirror bookworm)
    [ -n "$mirror" ] || { echo "debian-qemu: no Debian mirror in" \
                               "this machine's apt sources" >&2; exit 1; }
    mkdir -p "$cache"
    work=$(mktemp -d "$cache/.trixie-qemu.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    debootstrap --variant=minbase trixie "$work/root" "$mirror" >&2
    if [ "$suite" != trixie ]; then
        echo "deb $mirror $suite main" \
            > "$work/root/etc/apt/sources.list.d/$suite.list"
    fi
    # Debian's security uploads of QEMU reach trixie-security first.
    security=$(suite_mirror bookworm-security)
    if [ -n "$security" ]; then
        echo "deb $security trixie-security main" \
            > "$work/root/etc/apt/sources.list.d/trixie-security.list"
    fi
    chroot "$work/root" apt-get update -q >&2
    # -t: its dependencies (qemu-system-common, -data, seabios) must come
    # from the same suite; apt would take older ones.
    chroot "$work/root" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends -t "$suite" \
        "qemu-system-x86=$version" >&2
    rm -rf "$plain"
    mv "$work/root" "$plain"
    trap - EXIT
    rm -rf "$work"
fi
if [ $# -gt 0 ] && [ "$(cat "$root/.packages-done" 2>/dev/null)" != "$*" ]; then
    work=$(mktemp -d "$cache/.trixie-qemu.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    cp -a "$plain" "$work/root"
    pkgs=
    for p in "$@"; do
        pkgs="$pkgs $p=$version"
    done
    chroot "$work/root" apt-get update -q >&2
    # shellcheck disable=SC2086 # package words
    chroot "$work/root" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends -t "$suite" $pkgs >&2
    echo "$*" > "$work/root/.packages-done"
    rm -rf "$root"
    mv "$work/root" "$root"
fi
# (pulseaudio/ and ceph/: libpulse's and librados' private libraries,
# for the audio and rbd modules.)
lib=$root/usr/lib/x86_64-linux-gnu
libs=$lib:$root/lib/x86_64-linux-gnu:$lib/pulseaudio:$lib/ceph
mkdir -p "$(dirname "$wrapper")"
cat > "$wrapper.tmp" <<WRAP
#!/bin/sh
# Debian's qemu-system-x86 $version from $root
# Its modules (virtio-gpu among them) from that root, not this machine's,
# unless the caller names a folder.
QEMU_MODULE_DIR=\${QEMU_MODULE_DIR:-$root/usr/lib/x86_64-linux-gnu/qemu}
export QEMU_MODULE_DIR
exec $root/lib64/ld-linux-x86-64.so.2 \\
    --library-path $libs \\
    $root/usr/bin/qemu-system-x86_64 \\
    -L $root/usr/share/qemu -L $root/usr/share/seabios "\$@"
WRAP
chmod 0755 "$wrapper.tmp"
mv "$wrapper.tmp" "$wrapper"
echo "$wrapper"
