#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs inside the virtual host (tests/vhost/topologies/vfio-gpus.json):
binds the GPU stand-ins to vfio-pci, starts our QEMU with them and checks
start-up errors, then boots a nested KVM guest that reads the capability
back, hot-plugs two more devices over QMP, and writes every finding to
$VHOST_OUT/results.json for the test outside to judge."""

import json
import os
import subprocess
import sys
import time

from vfio_helpers import (OUT, PROJECT, VHOST, Qmp, bdf, bind_vfio,
                          modprobe)

QEMU = os.path.join(PROJECT, "build", "qemu", "qemu-system-x86_64")
NV = "x-pci-vendor-id=0x10de"


def startup(devices, extra=()):
    """Start QEMU paused, quit over QMP; (exit code, stderr, seconds)."""
    cmd = [QEMU, "-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
           "-nodefaults", "-display", "none",
           "-M", "q35", "-accel",
           "kvm", "-cpu", "host", "-m", "128M", "-S", "-qmp", "stdio"]
    for i in range(4):
        cmd += ["-device", "pcie-root-port,id=rp%d,chassis=%d,addr=%x.0"
                % (i, i + 1, 0x10 + i)]
    for d in devices:
        cmd += ["-device", d]
    cmd += list(extra)
    t0 = time.monotonic()
    p = subprocess.run(cmd, input='{"execute":"qmp_capabilities"}\n'
                       '{"execute":"quit"}\n', capture_output=True,
                       text=True, timeout=120)
    return p.returncode, p.stderr.strip(), time.monotonic() - t0


def main():
    res = {}
    modprobe("kvm_amd")
    names = ["gpu0", "gpu1", "gpu2", "gpu3", "edu0"]
    b = {n: bdf(n) for n in names}
    for n in names:
        bind_vfio(b[n])
    res["bdfs"] = b
    g = {n: "vfio-pci,host=%s,%s" % (b[n], NV) for n in names}

    # Start-up errors and the verification policy.
    cases = {
        "bad-value": [g["gpu0"] + ",bus=rp0,x-gpu-p2p-clique=17"],
        "bad-verify": [g["gpu0"] + ",bus=rp0,x-gpu-p2p-clique=1,"
                       "x-gpu-p2p-verify=maybe"],
        "not-nvidia": ["vfio-pci,host=%s,bus=rp0,x-gpu-p2p-clique=auto"
                       % b["gpu0"]],
        "not-display": [g["edu0"] + ",bus=rp0,x-gpu-p2p-clique=auto"],
        "both-properties": [g["gpu0"] + ",bus=rp0,x-gpu-p2p-clique=2,"
                            "x-nv-gpudirect-clique=2"],
        "bad-plan": [g["gpu0"] + ",bus=rp0,x-gpu-p2p-clique=auto,"
                     "x-gpu-p2p-host-plan=/nonexistent/plan.json"],
        "verify-refuse": [g["gpu0"] + ",bus=rp0,x-gpu-p2p-clique=3",
                          g["gpu2"] + ",bus=rp1,x-gpu-p2p-clique=3"],
        "verify-warn": [g["gpu0"] + ",bus=rp0,x-gpu-p2p-clique=3,"
                        "x-gpu-p2p-verify=warn",
                        g["gpu2"] + ",bus=rp1,x-gpu-p2p-clique=3,"
                        "x-gpu-p2p-verify=warn"],
        "verify-ok": [g["gpu0"] + ",bus=rp0,x-gpu-p2p-clique=4",
                      g["gpu1"] + ",bus=rp1,x-gpu-p2p-clique=4"],
    }
    res["startup"] = {}
    for name, devs in cases.items():
        rc, err, _ = startup(devs)
        res["startup"][name] = {"rc": rc, "stderr": err}

    # Start-up cost: three auto devices against the same devices with the
    # extension off, medians of three.
    timing = {"auto": [], "off": []}
    for _ in range(3):
        for mode in ("auto", "off"):
            rc, err, secs = startup([g[n] + ",bus=rp%d,x-gpu-p2p-clique=%s"
                                     % (i, mode) for i, n in
                                     enumerate(["gpu0", "gpu1", "gpu2"])])
            timing[mode].append(secs if rc == 0 else None)
    res["startup_seconds"] = timing

    # A host plan written by `gpup2p plan` stands in for sysfs.
    plan = os.path.join(OUT, "host-plan.json")
    with open(plan, "w") as f:
        subprocess.run([os.path.join(PROJECT, "build", "tools", "gpup2p",
                                     "gpup2p"), "plan", "--devices",
                        ",".join(b[n] for n in ["gpu0", "gpu1", "gpu2",
                                                "gpu3"]), "--json"],
                       stdout=f, check=True)
    rc, err, _ = startup([g["gpu0"] + ",bus=rp0,id=g0,x-gpu-p2p-clique=auto,"
                          "x-gpu-p2p-host-plan=" + plan,
                          g["gpu1"] + ",bus=rp1,id=g1,x-gpu-p2p-clique=auto,"
                          "x-gpu-p2p-host-plan=" + plan])
    res["startup"]["host-plan"] = {"rc": rc, "stderr": err}

    # The nested guest: gpu0 and gpu1 (one switch) cold-plugged with auto,
    # gpu1 behind a second root port of the guest; gpu3 (same switch) and
    # gpu2 (other host bridge) hot-plugged.
    inner_out = os.path.join(OUT, "inner")
    qmp_path = "/run/inner-qmp.sock"
    proc = subprocess.Popen(
        [sys.executable, VHOST, "inner", "--out", inner_out, "--qmp",
         qmp_path, "--timeout", "300", "-v",
         "--device", g["gpu0"] + ",bus=rp0,id=g0,x-gpu-p2p-clique=auto",
         "--device", g["gpu1"] + ",bus=rp1,id=g1,x-gpu-p2p-clique=auto",
         "--", "sh", "tests/integration/inner_guest.sh"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    qmp = Qmp(qmp_path)
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
