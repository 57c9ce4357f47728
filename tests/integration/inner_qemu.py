#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs inside the virtual host (tests/vhost/topologies/vfio-gpus.json):
binds the GPU stand-ins to vfio-pci and boots a nested KVM guest with our
QEMU that reads the capability back, hot-plugs two more devices over QMP,
and writes every finding to $VHOST_OUT/results.json for the test outside
to judge."""

import json
import os
import subprocess
import sys
import time

from vfio_helpers import (OUT, PROJECT, VHOST, Qmp, bdf, bind_vfio,
                          modprobe)

QEMU = os.environ.get("GPUP2P_QEMU",
                      os.path.join(PROJECT, "build", "qemu",
                                   "qemu-system-x86_64"))
NV = "x-pci-vendor-id=0x10de"


def main():
    res = {}
    modprobe("kvm_amd")
    names = ["gpu0", "gpu1", "gpu2", "gpu3", "edu0"]
    b = {n: bdf(n) for n in names}
    for n in names:
        bind_vfio(b[n])
    res["bdfs"] = b
    g = {n: "vfio-pci,host=%s,%s" % (b[n], NV) for n in names}

    # The nested guest: gpu0 and gpu1 (root ports of the host) cold-plugged
    # with auto, gpu1 behind a second root port of the guest; gpu3 (behind
    # the switch without ACS) and gpu2 (other host bridge) hot-plugged. The virtio-gpu stand-in the
    # qtest scenario used stays bound to vfio-pci and out of this guest.
    inner_out = os.path.join(OUT, "inner")
    qmp_path = "/run/inner-qmp.sock"
    proc = subprocess.Popen(
        [sys.executable, VHOST, "inner", "--qemu", QEMU, "--out", inner_out,
         "--qmp", qmp_path, "--timeout", "300", "-v",
         "--device", g["gpu0"] + ",bus=rp0,id=g0,x-gpu-p2p-clique=auto",
         "--device", g["gpu1"] + ",bus=rp1,id=g1,x-gpu-p2p-clique=auto",
         "--", "sh", "tests/integration/inner_guest.sh"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # As long as the nested guest may take to reach its command (below).
    qmp = Qmp(qmp_path, timeout=240, proc=proc)
    res["qmp_connect_s"] = round(qmp.connect_s, 1)
    deadline = time.monotonic() + 240
    while not os.path.exists(os.path.join(inner_out, "cold.json")):
        if time.monotonic() > deadline or proc.poll() is not None:
            break
        time.sleep(0.2)
    q = {}
    for dev in ("g0", "g1"):
        q[dev] = {p: qmp.cmd("qom-get", path="/machine/peripheral/" + dev,
                             property=p).get("return")
                  for p in ("x-gpu-p2p-clique-in-effect", "x-gpu-p2p-source",
                            "x-gpu-p2p-clique")}
    for dev, node, bus in (("g3", "gpu3", "rp2"), ("g2", "gpu2", "rp3")):
        r = qmp.cmd("device_add", driver="vfio-pci", host=b[node], bus=bus,
                    id=dev, **{"x-pci-vendor-id": 0x10de,
                               "x-gpu-p2p-clique": "auto"})
        q[dev] = {"device_add": r,
                  "x-gpu-p2p-clique-in-effect": qmp.cmd(
                      "qom-get", path="/machine/peripheral/" + dev,
                      property="x-gpu-p2p-clique-in-effect").get("return")}
    r = qmp.cmd("qom-set", path="/machine/peripheral/g0",
                property="x-gpu-p2p-clique", value="5")
    q["set-after-realize"] = r
    res["qmp"] = q
    open(os.path.join(inner_out, "plugged"), "w").close()
    out, _ = proc.communicate(timeout=300)
    res["inner_rc"] = proc.returncode
    res["inner_output"] = out[-4000:]
    for f in ("cold.json", "hot.json", "writes.json", "timing.json"):
        try:
            with open(os.path.join(inner_out, f)) as fh:
                res[f.split(".")[0]] = json.load(fh)
        except (OSError, ValueError) as e:
            res[f.split(".")[0]] = {"error": str(e)}
    qmp.close()
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
