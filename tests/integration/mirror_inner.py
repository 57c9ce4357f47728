#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs inside the virtual host (tests/vhost/topologies/hidden.json): the
host's view of the devices, then two nested KVM guests given the same
devices, one with `gpup2p qemu-args --mirror` (and the NCCL file through
fw_cfg), one flat on root ports of pcie.0 as a plain domain gets them.
Each guest writes its own `gpup2p topo` and what it reads from fw_cfg to
the results directory for the test outside to judge."""

import json
import os
import subprocess
import sys

from vfio_helpers import OUT, PROJECT, VHOST, bdf, bind_vfio, modprobe

QEMU = "/usr/bin/qemu-system-x86_64"
G = os.path.join(PROJECT, "build", "tools", "gpup2p", "gpup2p")
# PIX (gpu0-gpu1), SYS (gpu1-gpu3) and NODE (gpu3-gpu4); the NICs are
# left to the stand-in guest: each assigned device slows a nested boot.
NAMES = ["gpu0", "gpu1", "gpu3", "gpu4"]
MEMORY = 512

# What each nested guest runs: its own view, and the fw_cfg item if any.
GUEST = """
G=build/tools/gpup2p/gpup2p
$G topo --json > $VHOST_OUT/topo.json
$G topo > $VHOST_OUT/topo.txt
cat /sys/devices/system/node/online > $VHOST_OUT/nodes-online 2>&1 || true
modprobe -d $VHOST_KERNEL_DIR -S $VHOST_KERNEL_VERSION qemu_fw_cfg
F=/sys/firmware/qemu_fw_cfg/by_name/opt/gpup2p/nccl-topo.xml/raw
if [ -e $F ]; then cp $F $VHOST_OUT/fwcfg-nccl-topo.xml; fi
"""


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def inner(out, args, root_ports=0):
    cmd = [sys.executable, VHOST, "inner", "--qemu", QEMU, "--out", out,
           "--root-ports", str(root_ports), "--memory", str(MEMORY),
           "--timeout", "360", "-v"]
    for a in args:
        cmd += ["--qemu-arg=" + a]
    cmd += ["--", "sh", "-ec", GUEST]
    p = run(cmd, timeout=400)
    return {"rc": p.returncode, "output": (p.stdout + p.stderr)[-4000:]}


def main():
    res = {}
    modprobe("kvm_amd")
    b = {n: bdf(n) for n in NAMES}
    for n in NAMES:
        bind_vfio(b[n])
    res["bdfs"] = b
    devs = [b[n] for n in NAMES]

    p = run([G, "topo", "--json", "--devices", ",".join(devs)])
    res["host_topo_rc"] = p.returncode
    with open(os.path.join(OUT, "host-topo.json"), "w") as f:
        f.write(p.stdout)
    p = run([G, "topo", "--devices", ",".join(devs)])
    with open(os.path.join(OUT, "host-topo.txt"), "w") as f:
        f.write(p.stdout)

    p = run([G, "qemu-args", "--mirror", "--map"] + devs)
    res["map_rc"] = p.returncode
    with open(os.path.join(OUT, "map.txt"), "w") as f:
        f.write(p.stdout + p.stderr)
    nccl = os.path.join(OUT, "nccl-topo.xml")
    p = run([G, "qemu-args", "--mirror", "--cpus", "2", "--memory",
             str(MEMORY), "--nccl-topo", nccl] + devs)
    res["args_rc"] = p.returncode
    res["args_stderr"] = p.stderr
    args = p.stdout.splitlines()
    res["args"] = args

    res["mirrored"] = inner(os.path.join(OUT, "mirrored"), args)
    flat = []
    for i, d in enumerate(devs):
        flat += ["-device", "vfio-pci,host=%s,bus=rp%d" % (d, i)]
    res["flat"] = inner(os.path.join(OUT, "flat"), flat,
                        root_ports=len(devs))
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
