#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A real libvirt daemon (QEMU driver) in the virtual host starts our QEMU,
unprivileged, for a domain `gpup2p libvirt --host-plan` prepared: the
overrides reach QEMU's command line and the ids come from the plan."""

import json
import os

from taplib import Tap, prepare, vhost_run, read_text as read


def test(t):
    prepare()
    rc, out, err, outdir = vhost_run("vfio-gpus.json",
                                     "sh tests/integration/libvirt_qemu.sh",
                                     timeout=600)
    if not t.ok(rc == 0, "the scenario ran in the virtual host", out + err):
        return
    t.eq(read(outdir, "libvirt.rc").strip(), "0", "gpup2p libvirt succeeded")
    t.eq(read(outdir, "define.rc").strip(), "0",
         "libvirt's QEMU driver defines the result")
    dump = read(outdir, "dump.xml")
    t.eq(dump.count("name='x-gpu-p2p-clique' type='string' value='auto'"), 2,
         "and keeps both overrides (virsh dumpxml)")
    argv = read(outdir, "argv.txt")
    t.eq(argv.count('"x-gpu-p2p-clique":"auto"'), 2,
         "domxml-to-native: both vfio-pci devices get x-gpu-p2p-clique=auto")
    t.ok('"x-gpu-p2p-host-plan":"/run/gpup2p/gpu-vm-plan.json"' in argv,
         "... and the host plan")
    t.eq(read(outdir, "start.rc").strip(), "0", "virsh start runs our QEMU",)
    t.eq(read(outdir, "qemu-user.txt").strip(), "libvirt-qemu",
         "QEMU runs unprivileged (libvirt-qemu)")
    replies = [json.loads(l) for l in read(outdir, "qom.txt").splitlines()
               if l.startswith("{")]
    t.eq([r.get("return") for r in replies],
         [0, "plan /run/gpup2p/gpu-vm-plan.json"] * 2,
         "both GPUs are in clique 0, from the plan (QMP qom-get)")
    t.ok(read(outdir, "start-noplan.rc").strip() != "0" and
         "incomplete" in read(outdir, "start-noplan.txt"),
         "without the plan an unprivileged QEMU refuses auto, saying why",
         read(outdir, "start-noplan.txt"))


if __name__ == "__main__":
    Tap().run(test)
