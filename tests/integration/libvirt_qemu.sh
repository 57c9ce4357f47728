#!/bin/sh
# Runs inside the virtual host (topologies/vfio-gpus.json): a real libvirt
# daemon with the QEMU driver runs our QEMU unprivileged (libvirt-qemu) for
# a domain that `gpup2p libvirt` prepared with --host-plan.
set -u
O=$VHOST_OUT
G=$PWD/build/tools/gpup2p/gpup2p
QEMU=$PWD/build/qemu/qemu-system-x86_64
. tests/vhost/guest-lib.sh
load_module kvm_amd
# What udev would do for /dev/kvm (there is no udev here).
chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
G0=$(bdf gpu0); G1=$(bdf gpu1)
bind_vfio $G0 $G1
# libvirt needs writable state; the root is shared read-only.
cp -a /etc/libvirt /tmp/etc-libvirt
for d in /etc/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt; do
    mount -t tmpfs tmpfs $d
done
cp -a /tmp/etc-libvirt/. /etc/libvirt/
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
addr() { echo "domain='0x$(echo $1 | cut -c1-4)' bus='0x$(echo $1 | cut -c6-7)' slot='0x$(echo $1 | cut -c9-10)' function='0x$(echo $1 | cut -c12)'"; }
cat > $O/dom.xml <<XML
<domain type='kvm'>
  <name>gpu-vm</name>
  <memory unit='MiB'>256</memory>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <features><acpi/></features>
  <devices>
    <emulator>$QEMU</emulator>
    <hostdev mode='subsystem' type='pci' managed='no'>
      <source><address $(addr $G0)/></source>
      <driver name='vfio'/>
    </hostdev>
    <hostdev mode='subsystem' type='pci' managed='no'>
      <source><address $(addr $G1)/></source>
      <driver name='vfio'/>
    </hostdev>
  </devices>
</domain>
XML
mkdir -p /run/gpup2p
$G libvirt --host-plan /run/gpup2p/gpu-vm-plan.json $O/dom.xml > $O/out.xml
echo $? > $O/libvirt.rc
# The stand-ins show NVIDIA's vendor id to the guest, as the extension needs.
python3 - $O/out.xml <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace('<qemu:property name="x-gpu-p2p-clique"',
              '<qemu:property name="x-pci-vendor-id" type="unsigned" '
              'value="4318"/>\n        <qemu:property name="x-gpu-p2p-clique"')
open(p, "w").write(s)
PY
virsh define $O/out.xml > $O/define.txt 2>&1; echo $? > $O/define.rc
virsh dumpxml gpu-vm > $O/dump.xml 2>&1
virsh domxml-to-native qemu-argv $O/out.xml > $O/argv.txt 2>&1
virsh start gpu-vm > $O/start.txt 2>&1; echo $? > $O/start.rc
for a in ua-gpup2p-$(echo $G0 | tr ':.' '--') ua-gpup2p-$(echo $G1 | tr ':.' '--'); do
    for p in x-gpu-p2p-clique-in-effect x-gpu-p2p-source; do
        virsh qemu-monitor-command gpu-vm \
            "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/machine/peripheral/$a\",\"property\":\"$p\"}}"
    done
done > $O/qom.txt 2>&1
ps -o user= -C qemu-system-x86_64 > $O/qemu-user.txt 2>&1 || true
cp /var/log/libvirt/qemu/gpu-vm.log $O/qemu.log 2>/dev/null
virsh destroy gpu-vm > /dev/null 2>&1
# Without the plan, the unprivileged QEMU sees 64 bytes of config space
# and must refuse auto, saying why.
sed -e '/x-gpu-p2p-host-plan/d' $O/out.xml > $O/out-noplan.xml
virsh undefine gpu-vm > /dev/null 2>&1
virsh define $O/out-noplan.xml > $O/define-noplan.txt 2>&1
set +e
virsh start gpu-vm > $O/start-noplan.txt 2>&1; echo $? > $O/start-noplan.rc
virsh destroy gpu-vm > /dev/null 2>&1
exit 0
