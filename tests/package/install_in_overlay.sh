#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs in a private mount namespace (unshare -m): /usr, /etc and /var become
# overlays on a tmpfs and /run a tmpfs, so the packages install, run and go
# away as on a real machine while the machine itself stays untouched.
#   install_in_overlay.sh DEB_DIR OUT_DIR FIXTURE
set -u
debs=$1 out=$2 fixture=$3
w=$(mktemp -d /tmp/gpup2p-overlay.XXXXXX)
mount -t tmpfs tmpfs "$w" || exit 1
for d in usr etc var; do
    mkdir -p "$w/$d-up" "$w/$d-work"
    mount -t overlay overlay \
        -o "lowerdir=/$d,upperdir=$w/$d-up,workdir=$w/$d-work" "/$d" || exit 1
done
mount -t tmpfs tmpfs /run || exit 1

step() {    # step NAME COMMAND...: output to OUT/NAME.txt, status to NAME.rc
    name=$1; shift
    "$@" > "$out/$name.txt" 2>&1
    echo $? > "$out/$name.rc"
}

export DEBIAN_FRONTEND=noninteractive
# systemd does not run here: for the install, /run/systemd/system says it
# does and a recording stand-in answers for deb-systemd-invoke, so the
# services the maintainer scripts ask to (re)start are seen (in
# OUT/deb-systemd-invoke.log).
stand_in=$w/deb-systemd-invoke-stand-in
mkdir -p "$stand_in" /run/systemd/system
cat > "$stand_in/deb-systemd-invoke" <<STANDIN
#!/bin/sh
echo "\$*" >> "$out/deb-systemd-invoke.log"
STANDIN
chmod 0755 "$stand_in/deb-systemd-invoke"
: > "$out/deb-systemd-invoke.log"
step install env PATH="$stand_in:$PATH" dpkg -i "$debs"/gpup2p_*.deb \
    "$debs"/gpup2p-dkms_*.deb "$debs"/gpup2p-verify_*.deb \
    "$debs"/gpup2p-qemu_*.deb
# Configured again with nothing changed (an upgrade that keeps the hook and
# the AppArmor snippet): libvirt must not be restarted a second time.
cp "$out/deb-systemd-invoke.log" "$out/deb-systemd-invoke-install.log"
: > "$out/deb-systemd-invoke.log"
step reconfigure env PATH="$stand_in:$PATH" \
    /var/lib/dpkg/info/gpup2p.postinst configure 0.2.0
mv "$out/deb-systemd-invoke.log" "$out/deb-systemd-invoke-reconfigure.log"
mv "$out/deb-systemd-invoke-install.log" "$out/deb-systemd-invoke.log"
rmdir /run/systemd/system /run/systemd
step version gpup2p --version
step help gpup2p --help
step dkms-status dkms status gpup2p
for ko in /lib/modules/*/updates/dkms/gpup2p.ko*; do
    [ -e "$ko" ] && step modinfo modinfo "$ko" && break
done
step files ls -l /lib/systemd/system/gpup2p-host-topology.service \
    /lib/udev/rules.d/90-gpup2p-host-topology.rules \
    /etc/apparmor.d/abstractions/libvirt-qemu.d/gpup2p \
    /etc/libvirt/hooks/qemu.d/gpup2p \
    /usr/libexec/gpup2p/gpup2p-host-snapshot
step module-files ls -l /lib/udev/rules.d/60-gpup2p.rules \
    /usr/share/doc/gpup2p-dkms/examples/modules-load.d-gpup2p.conf
step no-autoload sh -c '! ls /usr/lib/modules-load.d/gpup2p.conf \
    /etc/modules-load.d/gpup2p.conf 2>/dev/null' 
step dkms-source sh -c 'cd /usr/src/gpup2p-*/ &&
    find . -type f ! -path ./dkms.conf | LC_ALL=C sort | xargs sha256sum'
step module-group getent group gpup2p
step man sh -c 'ls /usr/share/man/man1/gpup2p.1*'
step enabled readlink \
    /etc/systemd/system/multi-user.target.wants/gpup2p-host-topology.service
step verify-help gpup2p-verify --help
step hook sh -c "echo \"<domain><name>x</name></domain>\" |
    /etc/libvirt/hooks/qemu.d/gpup2p x prepare begin -"
# The packaged QEMU: its property's default, firmware found from its own
# prefix (a q35 machine reaches the monitor), and gpup2p libvirt's choice
# of <emulator>.
qemu=/usr/lib/gpup2p/qemu/bin/qemu-system-x86_64
step qemu-version "$qemu" --version
step qemu-vfio-help "$qemu" -device vfio-pci,help
step qemu-machines "$qemu" -machine help
step qemu-start sh -c "echo quit | timeout 120 $qemu -machine q35 \
    -accel tcg -nodefaults -display none -S -monitor stdio"
# Modules load from the package's own module folder: ui-curses from
# gpup2p-qemu; GTK, SDL, SPICE and the extra block drivers only once
# gpup2p-qemu-modules is installed.
# (A block driver's module loads only when a -blockdev asks for it: ssh
# against a closed port fails in the driver itself once its module is
# there, and says the module is missing before.)
ssh_blockdev="driver=ssh,node-name=b,server.host=127.0.0.1,server.port=1,path=/x,user=u"
step qemu-display "$qemu" -display help
step qemu-ssh "$qemu" -machine none -nodefaults -display none -S \
    -blockdev "$ssh_blockdev"
step qemu-modules-install dpkg -i "$debs"/gpup2p-qemu-modules_*.deb
step qemu-display-all "$qemu" -display help
step qemu-ssh-all "$qemu" -machine none -nodefaults -display none -S \
    -blockdev "$ssh_blockdev"
step qemu-emulator sh -c "gpup2p libvirt --sysfs-root $fixture \
    $fixture/../libvirt/gpu-vm.xml 2>/dev/null | grep '<emulator>'"
step snapshot env GPUP2P_SYSFS_ROOT="$fixture" \
    /usr/libexec/gpup2p/gpup2p-host-snapshot
step snapshot-topo gpup2p topo --sysfs-root /run/gpup2p/host
# Without libvirt's library: only --connect needs it.
if dpkg -s libvirt0 > /dev/null 2>&1; then
    dpkg --remove --force-depends libvirt0 > "$out/remove-libvirt.txt" 2>&1
    step nolibvirt-topo gpup2p topo --sysfs-root "$fixture"
    step nolibvirt-connect gpup2p libvirt --connect test:///default \
        --domain test
fi
step purge dpkg --purge gpup2p gpup2p-dkms gpup2p-verify gpup2p-qemu \
    gpup2p-qemu-modules
step dkms-after dkms status gpup2p
# What is still there (nothing, when purge removed it all).
step files-after sh -c 'for f in /usr/bin/gpup2p /usr/bin/gpup2p-verify \
    /etc/libvirt/hooks/qemu.d/gpup2p /usr/lib/gpup2p /usr/src/gpup2p-* \
    /lib/systemd/system/gpup2p-host-topology.service; do
        [ ! -e "$f" ] || echo "$f"; done'
exit 0
