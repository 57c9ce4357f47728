#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Zero touch on a real libvirt daemon in the virtual host: with libvirt's
default security drivers, QEMU runs as libvirt-qemu for a domain with
plain <hostdev>s and no per-device override, reads the host from the
snapshot the topology service keeps, and gives the GPUs their clique (QMP
qom-get). The libvirt hook refuses a domain whose clique ids the host
contradicts before QEMU runs."""

import json
import re

from taplib import Tap, prepare, vhost_run, read_text as read, run_failure


def replies(text):
    return [json.loads(l).get("return") for l in text.splitlines()
            if l.startswith("{")]


def test(t):
    prepare()
    rc, out, err, outdir = vhost_run("vfio-gpus.json",
                                     "sh tests/integration/libvirt_qemu.sh",
                                     timeout=600, retry_host_death=True)
    if not t.ok(rc == 0, "the scenario ran in the virtual host",
                run_failure(rc, out, err)):
        return
    caps = read(outdir, "capabilities.xml")
    models = re.findall(r"<secmodel>\s*<model>([^<]*)</model>", caps)
    t.diag("libvirt's security models here: %s" % models)
    t.ok("dac" in models, "libvirt runs its default DAC security driver",
         caps[-1500:])

    t.eq(read(outdir, "zt.rc"), "0", "gpup2p libvirt --qemu-default-auto "
         "succeeds")
    zt = read(outdir, "zt.xml")
    t.ok("<qemu:override" not in zt and "<alias" not in zt,
         "... and adds no per-device override", zt)
    t.eq(read(outdir, "define.rc"), "0", "libvirt defines the domain")
    t.ok("/run/gpup2p/host does not exist" in read(outdir, "zt-nosnap.err")
         and "no clique" in read(outdir, "zt-nosnap.err"),
         "without the snapshot the tool warns that the GPUs get no clique",
         read(outdir, "zt-nosnap.err"))
    t.eq(read(outdir, "start-nosnap.rc"), "0",
         "... QEMU, unprivileged, still starts the guest")
    t.eq(replies(read(outdir, "qom-nosnap.txt")), [-1, "", -1, ""],
         "... and gives it no clique, from no topology (QMP)")
    t.ok("x-gpu-p2p-clique" in read(outdir, "qemu-nosnap.log"),
         "... and QEMU's log says why", read(outdir, "qemu-nosnap.log"))

    t.eq(read(outdir, "snapshot.rc"), "0", "the service's script captures "
         "the host into /run/gpup2p/host")
    t.ok("refuse" not in read(outdir, "zt-snap.err"),
         "with the snapshot the tool no longer warns",
         read(outdir, "zt-snap.err"))
    t.eq(read(outdir, "start.rc"), "0", "virsh start runs our QEMU",)
    if read(outdir, "start.rc") != "0":
        t.diag(read(outdir, "start.txt"))
    t.eq(read(outdir, "qemu-user.txt"), "libvirt-qemu",
         "QEMU runs unprivileged (libvirt-qemu)")
    got = replies(read(outdir, "qom.txt"))
    t.ok(len(got) == 4 and got[0] == 0 and got[2] == 0,
         "both GPUs are in clique 0 (QMP qom-get x-gpu-p2p-clique-in-effect)",
         read(outdir, "qom.txt"))
    t.ok(len(got) == 4 and got[1] == got[3] == "snapshot /run/gpup2p/host",
         "... from the host snapshot (x-gpu-p2p-source)",
         read(outdir, "qom.txt"))

    bad = read(outdir, "start-bad.txt")
    t.ok(read(outdir, "start-bad.rc") != "0" and
         "refusing domain 'bad-ids'" in bad and "share clique 5" in bad and
         "bypasses the IOMMU" in bad,
         "the hook refuses one clique with a GPU behind a switch without "
         "ACS, and libvirt shows why", bad)
    t.eq(read(outdir, "qemu-after-bad.txt"), "",
         "... before any QEMU runs")
    t.eq(read(outdir, "start-good.rc"), "0",
         "the hook lets one clique of GPUs on root ports start",)
    t.eq(replies(read(outdir, "qom-good.txt")), [5],
         "... and QEMU gives the explicit id 5")


if __name__ == "__main__":
    Tap().run(test)
