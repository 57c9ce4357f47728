#!/bin/sh
# Install what vfio-gpu-p2p needs on a fresh Debian 12 (bookworm) machine.
# Idempotent: running it again installs nothing new. Every program the
# scripts and tests call is listed in tests/unit/programs.txt, and
# tests/unit/test_setup.py checks that this script installs it.
set -eu

# GPUP2P_APT_ETC (another /etc/apt) and GPUP2P_SETUP_SOURCES_ONLY=1 (stop
# after the sources and the pin) exist for tests.
apt_etc=${GPUP2P_APT_ETC:-/etc/apt}
if [ -z "${GPUP2P_APT_ETC:-}" ] && [ "$(id -u)" -ne 0 ]; then
    echo "setup-debian.sh: run as root (it calls apt-get)" >&2
    exit 1
fi

# The mirror this machine's apt sources use for SUITE's main component.
suite_mirror() {
    apt-get -o Dir::Etc="$apt_etc" indextargets --no-release-info \
        --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
        'Identifier: Packages' 2>/dev/null |
    awk -v suite="$1" '$2 == suite && $3 == "main" { print $1; exit }'
}

# The Debian mirror this machine already uses (its bookworm main source),
# so that an operator's own mirror serves every suite we add.
mirror=$(suite_mirror bookworm)
if [ -z "$mirror" ]; then
    echo "setup-debian.sh: no apt source in $apt_etc serves Debian bookworm" \
         "main; add one (any Debian mirror) and run again" >&2
    exit 1
fi

# And its security mirror (bookworm-security), where Debian's security
# uploads of QEMU reach trixie first; none: no trixie-security source.
security=$(suite_mirror bookworm-security)

# bookworm-backports, unless a source already names it: apt refuses one
# suite listed twice with different Signed-By values.
backports=$apt_etc/sources.list.d/vfio-gpu-p2p-backports.sources
if [ ! -f "$backports" ] &&
   ! grep -qsE '^[^#]*[[:space:]]bookworm-backports([[:space:]]|$)' \
        "$apt_etc/sources.list" "$apt_etc"/sources.list.d/*.list \
        "$apt_etc"/sources.list.d/*.sources; then
    cat > "$backports.tmp" <<SRC
Types: deb deb-src
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    mv "$backports.tmp" "$backports"
fi

# trixie-backports (Linux 7.3's source, QEMU 11.1's source) and trixie's
# sources (QEMU 10.0.13's) go into an apt configuration of our own, never
# into the host's: nothing from a newer suite can be installed on this
# machine by accident.
# scripts/apt-newer.sh runs apt-get on it.
if [ -n "${GPUP2P_APT_ETC:-}" ]; then
    newer=${GPUP2P_APT_NEWER:-$apt_etc/gpup2p-newer}
else
    newer=${GPUP2P_APT_NEWER:-/var/lib/gpup2p/apt-newer}
fi
mkdir -p "$newer/etc/sources.list.d" "$newer/etc/preferences.d" \
         "$newer/etc/apt.conf.d" "$newer/state/lists/partial" \
         "$newer/cache/archives/partial"
: > "$newer/etc/sources.list"
cat > "$newer/etc/sources.list.d/trixie-backports.sources.tmp" <<SRC
Types: deb deb-src
URIs: $mirror
Suites: trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
mv "$newer/etc/sources.list.d/trixie-backports.sources.tmp" \
   "$newer/etc/sources.list.d/trixie-backports.sources"
# trixie's sources (deb-src only): Debian 13's QEMU source package, which
# hw/vfio-gpu-p2p/build-qemu.sh builds with the extension.
cat > "$newer/etc/sources.list.d/trixie-src.sources.tmp" <<SRC
Types: deb-src
URIs: $mirror
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
if [ -n "$security" ]; then
    cat >> "$newer/etc/sources.list.d/trixie-src.sources.tmp" <<SRC

Types: deb-src
URIs: $security
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
mv "$newer/etc/sources.list.d/trixie-src.sources.tmp" \
   "$newer/etc/sources.list.d/trixie-src.sources"
# sid, binaries only, for rdma-core's rdma_topo (the GPUDirect RDMA test's
# judge, scripts/rdma-topo.sh): pinned to 1 so that no package of sid is
# ever a candidate there; the script names sid's version explicitly.
cat > "$newer/etc/sources.list.d/sid.sources.tmp" <<SRC
Types: deb
URIs: $mirror
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
mv "$newer/etc/sources.list.d/sid.sources.tmp" \
   "$newer/etc/sources.list.d/sid.sources"
# sid's contrib sources (deb-src only): NCCL's, whose topology reader judges
# the NCCL file the host writes for a mirrored guest (scripts/nccl-source.sh).
cat > "$newer/etc/sources.list.d/sid-contrib-src.sources.tmp" <<SRC
Types: deb-src
URIs: $mirror
Suites: sid
Components: contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
mv "$newer/etc/sources.list.d/sid-contrib-src.sources.tmp" \
   "$newer/etc/sources.list.d/sid-contrib-src.sources"
cat > "$newer/etc/preferences.d/sid.tmp" <<'PIN'
Package: *
Pin: release n=sid
Pin-Priority: 1
PIN
mv "$newer/etc/preferences.d/sid.tmp" "$newer/etc/preferences.d/sid"

# libvirt from backports, to match QEMU 10.0 from there; everything else
# libvirt needs (systemd among them) stays at bookworm's version.
pin=$apt_etc/preferences.d/vfio-gpu-p2p-libvirt
if [ ! -f "$pin" ]; then
    cat > "$pin.tmp" <<'PIN'
Package: libvirt* libnss-libvirt
Pin: release n=bookworm-backports
Pin-Priority: 600
PIN
    mv "$pin.tmp" "$pin"
fi
[ "${GPUP2P_SETUP_SOURCES_ONLY:-0}" != 1 ] || exit 0

export DEBIAN_FRONTEND=noninteractive
apt-get update -q

# Build and unit tests.
apt-get install -y -q --no-install-recommends \
    gcc g++ libc6-dev make binutils pkg-config ninja-build git \
    ca-certificates \
    libglib2.0-dev libjson-glib-dev libxml2-dev libxml2-utils \
    libvirt-dev libibverbs-dev rdma-core ibverbs-providers
# The libvirt tests: virt-xml-validate, virsh and libvirtd; the host
# topology service's unit is checked by systemd-analyze.
apt-get install -y -q --no-install-recommends \
    libvirt-clients libvirt-daemon-system systemd
# libFuzzer targets (tests/fuzz), the kernel helper's DKMS package, and
# groff, which judges the man pages.
apt-get install -y -q --no-install-recommends \
    clang libclang-rt-dev dkms groff-base
apt-get install -y -q --no-install-recommends -t bookworm-backports \
    meson python3-pycotap python3-prometheus-client

# The virtual GPU host: Debian's QEMU 10.0 and tools to build its initramfs.
apt-get install -y -q --no-install-recommends -t bookworm-backports \
    qemu-system-x86 qemu-system-data seabios ipxe-qemu
apt-get install -y -q --no-install-recommends \
    busybox-static cpio xz-utils zstd kmod pciutils procps python3
apt-get install -y -q --no-install-recommends -t bookworm-backports \
    linux-headers-amd64

# Debian packages (debian/, tests/package/; debootstrap for the clean-root
# check), the host topology unit's checks (systemd-analyze) and the libvirt
# tests' judges.
apt-get install -y -q --no-install-recommends \
    debhelper dh-dkms dkms systemd udev libvirt-clients util-linux binutils \
    libvirt-daemon-system apparmor debootstrap

# Building Debian 13's QEMU 10.0.13 with the extension
# (hw/vfio-gpu-p2p/build-qemu.sh): the libraries of the features Debian's
# qemu-system-x86 is configured with (its debian/control's
# Build-Depends-Arch for amd64; libblkio-dev alone is not in Debian 12).
apt-get install -y -q --no-install-recommends \
    python3-venv flex bison bzip2 patch dpkg-dev \
    libglib2.0-dev zlib1g-dev libcapstone-dev libaio-dev libjack-dev \
    libpulse-dev libasound2-dev libpipewire-0.3-dev libbpf-dev \
    libbrlapi-dev libcap-ng-dev libattr1-dev libcurl4-gnutls-dev \
    libfdt-dev libfuse3-dev gnutls-dev libgtk-3-dev libvte-2.91-dev \
    libiscsi-dev libncurses-dev libvirglrenderer-dev libepoxy-dev \
    libdrm-dev libgbm-dev libnfs-dev libnuma-dev libcacard-dev \
    libpixman-1-dev librbd-dev libglusterfs-dev libsasl2-dev libsdl2-dev \
    libseccomp-dev libslirp-dev libspice-server-dev librdmacm-dev \
    libibverbs-dev libibumad-dev liburing-dev libusb-1.0-0-dev \
    libusbredirparser-dev libssh-dev libzstd-dev libvdeplug-dev \
    nettle-dev libudev-dev libjpeg-dev libpng-dev libpmem-dev

# Building the Linux 7.x virtual host's kernel (tests/vhost/build-linux.sh)
# and tracing QEMU's config writes (tests/integration/inner_backends.py).
apt-get install -y -q --no-install-recommends \
    bc libelf-dev libssl-dev strace

# Linux 7.3's source from trixie-backports, unpacked once per machine: the
# P2P rule's list test reads its drivers/pci/p2pdma.c, and the 7.x virtual
# host is built from it.
scripts_dir=$(cd "$(dirname "$0")" && pwd)
"$scripts_dir/apt-newer.sh" update -q
"$scripts_dir/linux-source.sh" 7.3
# rdma-core's rdma_topo from sid, unpacked (never installed): the judge of
# the GPUDirect RDMA pair test.
"$scripts_dir/rdma-topo.sh"
# NCCL's source from sid, checked and unpacked (never built as a library):
# its topology reader judges the host's NCCL file for a mirrored guest.
"$scripts_dir/nccl-source.sh"
