#!/bin/sh
# Runs inside the virtual host. Loads the kernel module and writes each
# finding into $VHOST_OUT for tests/integration/test_kernel_helper.py:
#   kernel_helper.sh verdict   the kernel's verdict against the library's
#                              on every pair of devices, then unload
#   kernel_helper.sh full      that, plus every UAPI rule, access by group,
#                              the removed commands and the ioctl fuzzer
# GPUP2P_KO names the module built for the running kernel (default
# build/kernel/gpup2p.ko, Debian's 6.12).
set -u
mode=${1:-full}
O=$VHOST_OUT
KO=${GPUP2P_KO:-build/kernel/gpup2p.ko}
U=build/tests/kernel/uapi-test
F=build/tests/kernel/fuzz
G=build/tools/gpup2p/gpup2p
. tests/vhost/guest-lib.sh

uname -r > $O/uname.txt
# Each device's sysfs directory: its root bus (pciDDDD:BB) is in the path.
for d in /sys/bus/pci/devices/*; do
    echo "${d##*/} $(cd "$d" && pwd -P)"
done > $O/pci-paths.txt
# Each GPU stand-in's address, by the runner's own lookup.
python3 -c 'import json, sys; nodes = json.load(open(sys.argv[1]))["nodes"]; print("\n".join(n for n in nodes if nodes[n]["kind"] == "gpu"))' \
    $O/topology.json | while read -r n; do
    echo "$n $(python3 tests/vhost/vhost.py bdf "$n")"
done > $O/bdfs
insmod $KO; echo $? > $O/insmod.rc
$G verdict --all --json > $O/verdict-all.json 2> $O/verdict-all.err
echo $? > $O/verdict-all.rc
# The host snapshot records the module's verdicts on GPU and NIC pairs.
$G snapshot /tmp/snap > $O/snapshot.out 2>&1; echo $? > $O/snapshot.rc
cp /tmp/snap/gpup2p/kernel-verdicts $O/kernel-verdicts.txt

if [ "$mode" = full ]; then
    EDU=$(bdf edu0); SHM=$(bdf shm0); GPU=$(bdf gpu0)
    stat -c '%a %g' /dev/gpup2p > $O/dev-perm-loaded.txt
    # No udevd runs in the virtual host: apply the rule's GROUP and MODE
    # by hand. The shared root is read-only and has no such group: a copy
    # of /etc/group with the rule's group as gid 4242 is bound over it
    # (for the rest of this boot), so the group is set by the name the
    # rule gives.
    rule_mode=$(sed -n 's/.*MODE="\([0-7]*\)".*/\1/p' kernel/60-gpup2p.rules)
    rule_group=$(sed -n 's/.*GROUP="\([a-z0-9_-]*\)".*/\1/p' \
                 kernel/60-gpup2p.rules)
    echo "$rule_group" > $O/rule-group.txt
    cp /etc/group /tmp/group && echo "$rule_group:x:4242:" >> /tmp/group &&
        mount --bind /tmp/group /etc/group
    chgrp "$rule_group" /dev/gpup2p && chmod "$rule_mode" /dev/gpup2p
    stat -c '%a %g' /dev/gpup2p > $O/dev-perm-rule.txt
    $U access 4243 4242 > $O/access-member.json
    $U access 4243 4343 > $O/access-other.json
    $U rules $EDU $SHM > $O/uapi.json 2> $O/uapi.err

    # The commands that are gone (map, unmap, mappings, audit).
    for c in map unmap mappings audit; do
        $G $c --initiator $EDU --peer $SHM --bar 2 --size 0x10000 \
            --iova 0xa0000000 > $O/cli-$c.out 2> $O/cli-$c.err
        echo $? > $O/cli-$c.rc
    done

    # The fuzzer, with the GPU stand-in removed and rescanned meanwhile.
    $F 3 4 3000 1 $GPU > $O/fuzz.json 2> $O/fuzz.err; echo $? > $O/fuzz.rc
    $G verdict --all --json > $O/verdict-after-fuzz.json \
        2> $O/verdict-after-fuzz.err
    echo $? > $O/verdict-after-fuzz.rc
fi

rmmod gpup2p; echo $? > $O/rmmod.rc
[ -e /dev/gpup2p ]; echo $? > $O/dev-gone.rc
dmesg > $O/dmesg.txt
