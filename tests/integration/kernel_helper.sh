#!/bin/sh
# Runs inside the virtual host (topologies/kernel-helper.json): loads the
# helper, binds the devices to vfio-pci, and writes each finding as JSON
# into $VHOST_OUT for tests/integration/test_kernel_helper.py to judge.
set -u
O=$VHOST_OUT
T=build/tests/kernel/helper-test
G=build/tools/gpup2p/gpup2p
. tests/vhost/guest-lib.sh
EDU=$(bdf edu0); SHM=$(bdf shm0); NIC=$(bdf nic0); GPU=$(bdf gpu0)
echo "{\"edu\": \"$EDU\", \"shm\": \"$SHM\", \"nic\": \"$NIC\"}" > $O/bdfs.json
bind_vfio $EDU $SHM $NIC $GPU
insmod build/kernel/gpup2p.ko || exit 1
dmesg > $O/dmesg-before.txt

$T dma $EDU $SHM 2 0x40000000 0x1000 1 helper > $O/dma-helper.json
$T dma $EDU $SHM 2 0x40000000 0x2000 2 none > $O/dma-none.json
$T dma $EDU $SHM 2 0x40000000 0x3000 3 vfio > $O/dma-vfio.json
$T validate $EDU $SHM $NIC $GPU > $O/validate.json
$T stress $EDU $SHM 4 50 > $O/stress.json
$T killed $EDU $SHM > $O/killed.json
$T unbind $EDU $SHM > $O/unbind.json
$T bench $EDU $SHM 2 > $O/bench.json

# Unloading with a live mapping is refused; once its holder is gone the
# mapping is gone and the module unloads.
$G map --initiator $EDU --peer $SHM --bar 2 --size 0x10000 --iova 0xa0000000 \
    --hold 60 --json > $O/map-cli.json &
holder=$!
i=0; while [ "$($G mappings --json | grep -c '"id"')" = 0 ] && [ $i -lt 100 ]; do
    sleep 0.1; i=$((i + 1)); done
$G mappings --json > $O/mappings-held.json
$G audit --initiator $EDU --peer $SHM --bar 2 --size 0x10000 --iova 0xa0000000 \
    --json > $O/audit-held.json; echo $? > $O/audit-held.rc
$G audit --initiator $EDU --peer $SHM --bar 2 --iova 0xc0000000 \
    --json > $O/audit-missing.json; echo $? > $O/audit-missing.rc
$G audit --initiator $EDU --peer $SHM --bar 2 --offset 0x10000 --size 0x10000 \
    --iova 0xa0000000 --json > $O/audit-wrong.json; echo $? > $O/audit-wrong.rc
rmmod gpup2p 2> $O/rmmod-held.err; echo $? > $O/rmmod-held.rc
kill $holder; wait $holder
$G mappings --json > $O/mappings-after.json
$G verdict $EDU $SHM --json > $O/verdict-kernel.json
$G topo --devices $EDU,$SHM --json > $O/topo-user.json
rmmod gpup2p; echo $? > $O/rmmod.rc
dmesg > $O/dmesg.txt
