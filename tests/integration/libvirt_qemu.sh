#!/bin/sh
# Runs inside the virtual host (topologies/vfio-gpus.json): a real libvirt
# daemon with its default security drivers starts our QEMU as libvirt-qemu
# for a domain with plain <hostdev>s and no per-device override (zero
# touch); QEMU reads the host from the snapshot the topology service keeps.
# Then the libvirt hook refuses a domain whose clique ids the host
# contradicts. Results go to $VHOST_OUT, one file per step.
set -u
O=$VHOST_OUT
G=$PWD/build/tools/gpup2p/gpup2p
QEMU=$PWD/build/qemu/qemu-system-x86_64
. tests/vhost/guest-lib.sh
load_module kvm_amd
# What udev would do for /dev/kvm (there is no udev here).
chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
G0=$(bdf gpu0); G1=$(bdf gpu1); G2=$(bdf gpu2)
bind_vfio $G0 $G1 $G2
libvirt_writable_state
# The security driver stays libvirt's default. Mount namespaces and cgroups
# are off: the root here is a read-only 9p share and no cgroup tree is
# mounted.
cat >> /etc/libvirt/qemu.conf <<'CONF'
namespaces = [ ]
cgroup_controllers = [ ]
stdio_handler = "file"
CONF
# The hook as the package installs it, calling this build's gpup2p.
mkdir -p /etc/libvirt/hooks/qemu.d
sed -e "s|@GPUP2P@|$G|" -e "s|@SYSCONFDIR@|/etc|" data/libvirt-hook-qemu.in \
    > /etc/libvirt/hooks/qemu.d/gpup2p
chmod 0755 /etc/libvirt/hooks/qemu.d/gpup2p
/usr/sbin/libvirtd --daemon
i=0; while [ ! -S /run/libvirt/libvirt-sock ] && [ $i -lt 100 ]; do
    sleep 0.2; i=$((i + 1)); done
export LIBVIRT_DEFAULT_URI=qemu:///system
virsh capabilities > $O/capabilities.xml 2>&1

addr() { echo "domain='0x$(echo $1 | cut -c1-4)' bus='0x$(echo $1 | cut -c6-7)' slot='0x$(echo $1 | cut -c9-10)' function='0x$(echo $1 | cut -c12)'"; }
hostdev() {
    echo "    <hostdev mode='subsystem' type='pci' managed='no'>"
    echo "      <source><address $(addr $1)/></source>${2:+<alias name='$2'/>}"
    echo "    </hostdev>"
}
# domain NAME HOSTDEVS [EXTRA]: the stand-ins show NVIDIA's vendor id to
# the guest (domain-wide, -global); auto comes from the machine type
# q35-gpup2p (pc-q35-X.Y plus x-gpu-p2p-clique=auto), as a fleet that sets
# hw_machine_type or KubeVirt's machine type would have it.
domain() {
    cat <<XML
<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>$1</name>
  <memory unit='MiB'>256</memory>
  <os><type arch='x86_64' machine='q35-gpup2p'>hvm</type></os>
  <features><acpi/></features>
  <devices>
    <emulator>$QEMU</emulator>
$2
  </devices>
  <qemu:commandline>
    <qemu:arg value='-global'/>
    <qemu:arg value='vfio-pci.x-pci-vendor-id=0x10de'/>
  </qemu:commandline>
${3:-}
</domain>
XML
}
qom() {     # qom DOMAIN ALIAS PROPERTY
    virsh qemu-monitor-command $1 "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/machine/peripheral/$2\",\"property\":\"$3\"}}"
}

# Zero touch: plain hostdevs; the tool adds no override.
domain gpu-vm "$(hostdev $G0; hostdev $G1)" > $O/dom.xml
$G libvirt --qemu-default-auto $O/dom.xml > $O/zt.xml 2> $O/zt-nosnap.err
echo $? > $O/zt.rc
virsh define $O/zt.xml > $O/define.txt 2>&1; echo $? > $O/define.rc

# 1. No snapshot yet: the tool warned; QEMU, unprivileged, cannot judge
# the GPUs and starts the guest without a clique.
virsh start gpu-vm > $O/start-nosnap.txt 2>&1; echo $? > $O/start-nosnap.rc
for a in hostdev0 hostdev1; do
    qom gpu-vm $a x-gpu-p2p-clique-in-effect
    qom gpu-vm $a x-gpu-p2p-source
done > $O/qom-nosnap.txt 2>&1
cp /var/log/libvirt/qemu/gpu-vm.log $O/qemu-nosnap.log 2>/dev/null
virsh destroy gpu-vm > /dev/null 2>&1

# 2. The topology service's script, as systemd runs it.
GPUP2P=$G sh build/data/gpup2p-host-snapshot > $O/snapshot.txt 2>&1
echo $? > $O/snapshot.rc
$G libvirt --qemu-default-auto $O/dom.xml > /dev/null 2> $O/zt-snap.err
virsh start gpu-vm > $O/start.txt 2>&1; echo $? > $O/start.rc
ps -o user= -C qemu-system-x86_64 > $O/qemu-user.txt 2>&1
for a in hostdev0 hostdev1; do
    qom gpu-vm $a x-gpu-p2p-clique-in-effect
    qom gpu-vm $a x-gpu-p2p-source
done > $O/qom.txt 2>&1
virsh dumpxml gpu-vm > $O/dump.xml 2>&1
cp /var/log/libvirt/qemu/gpu-vm.log $O/qemu.log 2>/dev/null
virsh destroy gpu-vm > /dev/null 2>&1

# 3. The hook: one explicit clique with the GPU behind the switch without
# ACS (a guest's request would bypass the IOMMU) is refused before QEMU
# runs; for two GPUs on root ports (the AMD Zen root complex forwards) it
# passes to QEMU.
ids() {
    echo "  <qemu:override>"
    for a in "$@"; do
        echo "    <qemu:device alias='$a'><qemu:frontend><qemu:property name='x-gpu-p2p-clique' type='string' value='5'/></qemu:frontend></qemu:device>"
    done
    echo "  </qemu:override>"
}
G3=$(bdf gpu3)
bind_vfio $G3
domain bad-ids "$(hostdev $G0 ua-a; hostdev $G3 ua-b)" "$(ids ua-a ua-b)" \
    > $O/bad-ids.xml
virsh define $O/bad-ids.xml > /dev/null 2>&1
virsh start bad-ids > $O/start-bad.txt 2>&1; echo $? > $O/start-bad.rc
ps -o pid= -C qemu-system-x86_64 > $O/qemu-after-bad.txt 2>&1
domain good-ids "$(hostdev $G0 ua-a; hostdev $G1 ua-b)" "$(ids ua-a ua-b)" \
    > $O/good-ids.xml
virsh define $O/good-ids.xml > /dev/null 2>&1
virsh start good-ids > $O/start-good.txt 2>&1; echo $? > $O/start-good.rc
qom good-ids ua-a x-gpu-p2p-clique-in-effect > $O/qom-good.txt 2>&1
virsh destroy good-ids > /dev/null 2>&1
exit 0
