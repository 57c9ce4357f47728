#!/bin/sh
# Runs inside the virtual host (topologies/hidden.json): libvirt's QEMU
# driver defines and starts a domain that `gpup2p libvirt --mirror
# --qemu-stock` prepared (Debian's QEMU: the mirror needs no extension),
# and QMP shows the guest's firmware numbering the buses as the host
# predicted.
set -u
O=$VHOST_OUT
G=$PWD/build/tools/gpup2p/gpup2p
. tests/vhost/guest-lib.sh
load_module kvm_amd
# What udev would do for /dev/kvm (there is no udev here).
chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
NAMES="gpu0 gpu1 nic0 gpu3 gpu4"
BDFS=""
for n in $NAMES; do
    b=$(bdf $n)
    echo "$n $b" >> $O/bdfs
    BDFS="$BDFS $b"
done
bind_vfio $BDFS
libvirt_writable_state
cat >> /etc/libvirt/qemu.conf <<'CONF'
namespaces = [ ]
security_driver = "none"
cgroup_controllers = [ ]
stdio_handler = "file"
CONF
/usr/sbin/libvirtd --daemon
i=0; while [ ! -S /run/libvirt/libvirt-sock ] && [ $i -lt 100 ]; do
    sleep 0.2; i=$((i + 1)); done
export LIBVIRT_DEFAULT_URI=qemu:///system
{
    echo "<domain type='kvm'><name>mirror-vm</name>"
    echo "<memory unit='MiB'>256</memory><vcpu>2</vcpu>"
    echo "<os><type arch='x86_64' machine='q35'>hvm</type></os>"
    echo "<features><acpi/></features><devices>"
    echo "<emulator>/usr/bin/qemu-system-x86_64</emulator>"
    for b in $BDFS; do
        echo "<hostdev mode='subsystem' type='pci' managed='no'><source>"
        echo "<address domain='0x$(echo $b | cut -c1-4)'" \
             "bus='0x$(echo $b | cut -c6-7)' slot='0x$(echo $b | cut -c9-10)'" \
             "function='0x$(echo $b | cut -c12)'/>"
        echo "</source><driver name='vfio'/></hostdev>"
    done
    echo "</devices></domain>"
} > $O/dom.xml
mkdir -p /run/gpup2p
$G libvirt --mirror --qemu-stock --nccl-topo /run/gpup2p/mirror-vm-nccl.xml \
    $O/dom.xml > $O/out.xml 2> $O/libvirt.err
echo $? > $O/libvirt.rc
# The stand-ins show NVIDIA's vendor id to the guest, as upstream's
# x-nv-gpudirect-clique needs.
CLIQUE='<qemu:property name="x-nv-gpudirect-clique"'
VENDOR='<qemu:property name="x-pci-vendor-id" type="unsigned" value="4318"/>'
sed -i "s|$CLIQUE|$VENDOR$CLIQUE|" $O/out.xml
$G qemu-args --mirror --map $BDFS > $O/map.txt 2>&1
cp /run/gpup2p/mirror-vm-nccl.xml $O/nccl-topo.xml
virsh define $O/out.xml > $O/define.txt 2>&1; echo $? > $O/define.rc
virsh domxml-to-native qemu-argv $O/out.xml > $O/argv.txt 2>&1
virsh start mirror-vm > $O/start.txt 2>&1; echo $? > $O/start.rc
# Firmware numbers the buses soon after start, one bridge after the
# other; wait until a bridge of the mirrored hierarchy has its secondary
# bus and no bridge is left without one (secondary 0).
i=0
[ "$(cat $O/start.rc)" = 0 ] || i=120
while [ $i -lt 120 ]; do
    virsh qemu-monitor-command mirror-vm '{"execute":"query-pci"}' \
        > $O/query-pci.json 2>&1
    grep -q '"secondary": *1[2-9][0-9]' $O/query-pci.json &&
        ! grep -q '"secondary": *0[,}]' $O/query-pci.json && break
    sleep 1; i=$((i + 1))
done
for id in ua-gpup2p-hb0 ua-gpup2p-hb1 ua-gpup2p-hb2; do
    virsh qemu-monitor-command mirror-vm "{\"execute\":\"qom-get\",
        \"arguments\":{\"path\":\"/machine/peripheral/$id\",
        \"property\":\"numa_node\"}}"
done > $O/qom.txt 2>&1
cp /var/log/libvirt/qemu/mirror-vm.log $O/qemu.log 2>/dev/null
virsh destroy mirror-vm > /dev/null 2>&1
exit 0
