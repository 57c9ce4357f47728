#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The QEMU extension end to end: our QEMU in the virtual host, GPU
stand-ins on vfio-pci, a nested KVM guest reading the capability back."""

import json
import os
import subprocess

from taplib import Tap, prepare, vhost_run, load_json, PROJECT

REF = "0900085032502800"   # x-nv-gpudirect-clique=5, seen at C8h


def startup_checks(t, s):
    def refused(name, *words):
        r = s[name]
        t.ok(r["rc"] != 0 and all(w in r["stderr"] for w in words),
             "start-up refused: %s" % name, json.dumps(r))

    refused("bad-value", "'17' is not off, auto or a clique id")
    refused("bad-verify", "'maybe' is not refuse, warn or trust")
    refused("not-nvidia", "is not an NVIDIA device", "vendor 1234")
    refused("not-display", "is not a display-class device")
    refused("both-properties", "cannot be used together")
    refused("bad-plan", "/nonexistent/plan.json")
    refused("verify-refuse", "x-gpu-p2p-clique=3", "cannot do P2P on the host",
            "not known to forward P2P")
    r = s["verify-warn"]
    t.ok(r["rc"] == 0 and "warning" in r["stderr"] and
         "cannot do P2P on the host" in r["stderr"],
         "verify=warn starts with a warning", json.dumps(r))
    t.eq(s["verify-ok"]["rc"], 0, "switch peers with one explicit id start")
    t.eq(s["host-plan"]["rc"], 0, "auto from a host plan file starts")


def test(t):
    prepare()
    qemu = os.path.join(PROJECT, "build", "qemu", "qemu-system-x86_64")
    if not t.ok(os.path.exists(qemu), "our QEMU is built (build-qemu.sh)"):
        return
    checkpatch = os.path.join(PROJECT, "build", "qemu", "qemu-10.0.2",
                              "scripts", "checkpatch.pl")
    ext = os.path.join(PROJECT, "hw", "vfio-gpu-p2p")
    p = subprocess.run([checkpatch, "--no-tree", "-f",
                        os.path.join(ext, "vfio-gpu-p2p.c"),
                        os.path.join(ext, "vfio-gpu-p2p.h")],
                       capture_output=True, text=True)
    t.ok(p.returncode == 0, "QEMU's checkpatch passes the extension",
         p.stdout[-3000:])
    p = subprocess.run([checkpatch, "--no-tree",
                        os.path.join(ext, "qemu-10.0.2-hooks.patch")],
                       capture_output=True, text=True)
    t.ok(p.returncode == 0, "QEMU's checkpatch passes the hook patch",
         p.stdout[-3000:])
    rc, out, err, outdir = vhost_run(
        "vfio-gpus.json", "python3 tests/integration/inner_qemu.py",
        timeout=900)
    if not t.ok(rc == 0, "the scenario ran inside the virtual host",
                out + err):
        return
    r = load_json(os.path.join(outdir, "results.json"))
    startup_checks(t, r["startup"])
    t.eq(r["inner_rc"], 0, "the nested guest ran its checks")
    t.diag("nested guest timing: %s" % r.get("timing"))

    cold = {g["bdf"]: g for g in r["cold"]["gpus"]}
    t.eq(len(cold), 2, "the nested guest sees two NVIDIA GPUs at boot")
    cliques = sorted(g["clique"] for g in cold.values())
    t.eq(cliques, [0, 0], "switch peers share clique 0 (auto)")
    for g in cold.values():
        cap = g["capability"]
        t.ok(cap and cap["valid"] and cap["offset"] in (0xc8, 0xd4),
             "%s: a valid capability at C8h/D4h, last in the list"
             % g["bdf"], json.dumps(cap))
    q = r["qmp"]
    t.eq(q["g0"]["x-gpu-p2p-clique-in-effect"], 0,
         "QMP reads the id in effect of g0")
    t.eq(q["g1"]["x-gpu-p2p-clique-in-effect"], 0,
         "QMP reads the id in effect of g1")
    t.eq(q["g0"]["x-gpu-p2p-source"], "sysfs",
         "QMP says where the host topology came from")
    t.eq(q["g3"]["x-gpu-p2p-clique-in-effect"], 0,
         "hot-plugged switch peer joins clique 0")
    t.eq(q["g2"]["x-gpu-p2p-clique-in-effect"], -1,
         "hot-plugged device under another host bridge gets none")
    t.ok("error" in q["set-after-realize"],
         "the clique cannot be changed after realize",
         json.dumps(q["set-after-realize"]))

    hot = {g["bdf"]: g for g in r["hot"]["gpus"]}
    t.eq(len(hot), 4, "the nested guest sees the hot-plugged GPUs")
    t.eq(sorted(str(g["clique"]) for g in hot.values()),
         ["0", "0", "0", "None"],
         "after hot-plug: three in clique 0, one without a capability")
    writes = r["writes"]
    t.ok(writes and all(w["before"] == w["after"] for w in writes.values()),
         "guest writes to the capability are ignored", json.dumps(writes))
    for w in writes.values():
        t.eq(w["before"][:12], REF[:12],
             "capability bytes match upstream's layout")
        break
    times = r["startup_seconds"]
    auto = sorted(x for x in times["auto"] if x)
    off = sorted(x for x in times["off"] if x)
    if t.ok(len(auto) == 3 and len(off) == 3, "start-up timings taken"):
        t.diag("QEMU start to quit, 3 devices: auto %.3f s, off %.3f s, "
               "ratio %.2f" % (auto[1], off[1], auto[1] / off[1]))


if __name__ == "__main__":
    Tap().run(test)
