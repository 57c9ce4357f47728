#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gpup2p check on a live kernel: the virtual host with interrupt remapping
on, then booted with intremap=off. The kernel's own log is the judge of
whether interrupt remapping is on; VFIO's binding is the judge of the
driver items."""

import json
import os

from taplib import Tap, prepare, vhost_run, read_text, run_failure

SCRIPT = """
. tests/vhost/guest-lib.sh
O=$VHOST_OUT
# Two GPU stand-ins on root ports (of two host bridges): a guest's P2P
# between them goes through the IOMMU and the AMD Zen root complex.
G0=$(bdf gpu2); G1=$(bdf gpu3)
echo "$G0 $G1" > $O/bdfs
bind_vfio $G0 $G1
dmesg > $O/dmesg.txt
readlink /sys/bus/pci/devices/$G0/driver > $O/driver0 || true
rc=0
build/tools/gpup2p/gpup2p check --devices $G0,$G1 \
    --qemu /usr/bin/qemu-system-x86_64 --json > $O/check.json || rc=$?
echo $rc > $O/check.rc
exit 0
"""


def items_of(outdir):
    with open(os.path.join(outdir, "check.json")) as f:
        report = json.load(f)
    return report, {i["item"]: i for i in report["items"]}


def one_boot(t, label, append):
    rc, out, err, outdir = vhost_run("two-numa.json", SCRIPT, append=append)
    if not t.ok(rc == 0, "%s: the check ran inside the virtual host"
                % label, run_failure(rc, out, err)):
        return None
    dmesg = read_text(outdir, "dmesg.txt")
    g0, g1 = read_text(outdir, "bdfs").split()
    report, items = items_of(outdir)
    t.ok(read_text(outdir, "driver0").endswith("/vfio-pci") and
         items["%s driver" % g0]["verdict"] == "ok",
         "%s: a GPU stand-in bound to vfio-pci is ok" % label,
         json.dumps(items.get("%s driver" % g0)))
    t.eq(items["IOMMU"]["verdict"], "ok", "%s: IOMMU on" % label)
    return dmesg, report, items, (g0, g1), read_text(outdir, "check.rc")


def test(t):
    prepare()
    got = one_boot(t, "intremap on", "")
    if got:
        dmesg, report, items, (g0, g1), rc = got
        t.ok("Enabled IRQ remapping" in dmesg,
             "intremap on: the kernel says interrupt remapping is on",
             "\n".join(l for l in dmesg.splitlines() if "DMAR" in l))
        t.eq(items["interrupt remapping"]["verdict"], "ok",
             "intremap on: check agrees")
        t.eq(items["P2P %s-%s" % (g0[5:], g1[5:])]["verdict"], "ok",
             "intremap on: GPUs on root ports can do P2P (guest rule)")
        t.eq(items["64-bit MMIO"]["verdict"], "ok",
             "intremap on: the BARs fit the CPU's address width")
        t.eq(report["failed"], 0, "intremap on: no item fails")
        t.eq(rc, "0", "intremap on: check exits 0 (ready)")
    got = one_boot(t, "intremap off", "intremap=off")
    if got:
        dmesg, report, items, _, rc = got
        t.ok("Enabled IRQ remapping" not in dmesg,
             "intremap off: the kernel did not enable interrupt remapping",
             "\n".join(l for l in dmesg.splitlines() if "DMAR" in l))
        t.eq(items["interrupt remapping"]["verdict"], "fail",
             "intremap off: check fails the item")
        t.ok(report["ready"] == "no" and rc == "5",
             "intremap off: the host is not ready, exit 5",
             "exit %s: %s" % (rc, json.dumps(report)))


if __name__ == "__main__":
    Tap().run(test)
