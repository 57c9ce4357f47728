#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The mirrored topology end to end, judged by a guest kernel.

1. The host is the hidden-style virtual host as captured
   (tests/fixtures/vhost-hidden: two switches under two host bridges on
   two NUMA nodes, a third host bridge on node 1). A guest is booted with
   `gpup2p qemu-args --mirror` for its seven devices; vfio-pci cannot run
   on this machine, so emulated stand-ins of the same class take the
   vfio-pci devices' places (bochs-display for a GPU, e1000e for a NIC).
2. With the argument "nested", in the virtual host itself
   (tests/vhost/topologies/hidden.json), real vfio-pci: a nested KVM guest
   gets four GPU stand-ins through the mirrored arguments, and a flat
   guest gets the same devices on root ports.

Each guest must find every device where the host predicted, with the
host's path classes between them and the host's NUMA split, and read the
host's NCCL file from fw_cfg byte for byte."""

import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from taplib import (PROJECT, Tap, gpup2p, prepare, vhost_run,
                    read_text as read)

HIDDEN = os.path.join(PROJECT, "tests", "fixtures", "vhost-hidden")
DEVICES = {"gpu0": "0000:23:00.0", "gpu1": "0000:24:00.0",
           "nic0": "0000:25:00.0", "gpu2": "0000:43:00.0",
           "gpu3": "0000:44:00.0", "nic1": "0000:45:00.0",
           "gpu4": "0000:61:00.0"}
PAIRS = {("gpu0", "gpu1"): "PIX", ("gpu0", "nic0"): "PIX",
         ("gpu2", "gpu3"): "PIX", ("gpu2", "nic1"): "PIX",
         ("gpu3", "gpu4"): "NODE", ("gpu0", "gpu2"): "SYS",
         ("nic0", "nic1"): "SYS"}

# What each guest runs: its own view, and the fw_cfg item if any.
GUEST = """
G=build/tools/gpup2p/gpup2p
$G topo --json > $VHOST_OUT/topo.json
$G topo > $VHOST_OUT/topo.txt
cat /sys/devices/system/node/online > $VHOST_OUT/nodes-online 2>&1 || true
modprobe -d $VHOST_KERNEL_DIR -S $VHOST_KERNEL_VERSION qemu_fw_cfg
F=/sys/firmware/qemu_fw_cfg/by_name/opt/gpup2p/nccl-topo.xml/raw
if [ -e $F ]; then cp $F $VHOST_OUT/fwcfg-nccl-topo.xml; fi
"""


def load(outdir, name):
    try:
        with open(os.path.join(outdir, name)) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"error": str(e)}


def classes(topo):
    return {frozenset((link["a"], link["b"])): link["type"]
            for link in topo.get("links", [])}


def guest_map(text):
    """Host BDF -> predicted guest BDF, from `qemu-args --map`."""
    out = {}
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) >= 3 and f[2] == "device":
            out[f[1]] = f[0]
    return out


def judge(t, what, b, host, gmap, gdir, nccl):
    """The guest in @gdir against the host's view @host of devices @b."""
    hc = classes(host)
    gtopo = load(gdir, "topo.json")
    gdevs = {d["bdf"]: d for d in gtopo.get("devices", [])}
    hdevs = {d["bdf"]: d for d in host.get("devices", [])}
    for n, hb in sorted(b.items()):
        g = gdevs.get(gmap.get(hb))
        h = hdevs.get(hb, {})
        t.ok(g is not None and g.get("class") == h.get("class"),
             "%s: the guest kernel finds %s (host %s) at %s, as predicted"
             % (what, n, hb, gmap.get(hb)), json.dumps(g))
    want = {n: hdevs.get(b[n], {}).get("numa_node") for n in b}
    got = {n: gdevs.get(gmap.get(b[n]), {}).get("numa_node") for n in b}
    t.eq(got, want, "%s: each device on the guest node of its host node"
         % what)
    gc = classes(gtopo)
    mismatches = []
    pairs = [(x, y) for x in sorted(b) for y in sorted(b) if x < y]
    for x, y in pairs:
        hk = hc.get(frozenset((b[x], b[y])))
        gk = gc.get(frozenset((gmap.get(b[x]), gmap.get(b[y]))))
        if hk is None or hk != gk:
            mismatches.append("%s-%s host %s guest %s" % (x, y, hk, gk))
    t.ok(not mismatches, "%s: all %d pairs keep the host's path class"
         % (what, len(pairs)), "\n".join(mismatches))
    sent = read(os.path.dirname(nccl), os.path.basename(nccl))
    got = read(gdir, "fwcfg-nccl-topo.xml")
    t.ok(sent.startswith("<system") and got == sent,
         "%s: the guest reads the host's NCCL file from fw_cfg, unchanged"
         % what, got[:300])
    try:
        busids = [e.get("busid") for e in ET.fromstring(got).iter("pci")]
    except ET.ParseError as e:
        busids = ["parse error: %s" % e]
    t.ok(busids and all(x in gdevs for x in busids),
         "%s: every bus id in the NCCL file is a device of the guest" % what,
         " ".join(x for x in busids if x not in gdevs))


def stand_ins(args, host):
    """vfio-pci devices -> emulated devices of the same class at the same
    place (the fake for assignment, which this machine cannot do)."""
    classes_of = {d["bdf"]: d["class"] for d in host["devices"]}
    out = []
    for a in args:
        if a.startswith("vfio-pci,"):
            props = dict(p.split("=", 1) for p in a.split(",")[1:])
            bdf = props.pop("host")
            rest = ",".join("%s=%s" % kv for kv in props.items())
            if classes_of[bdf].startswith("02"):
                out[-1:] = ["-netdev", "user,id=%s-net,restrict=on"
                            % props["id"], "-device"]
                a = "e1000e,%s,netdev=%s-net" % (rest, props["id"])
            else:
                a = "bochs-display," + rest
        out.append(a)
    return out


def test_stand_ins(t):
    g = gpup2p()
    devs = list(DEVICES.values())
    host = json.loads(subprocess.run(
        [g, "topo", "--sysfs-root", HIDDEN, "--json", "--devices",
         ",".join(devs)], capture_output=True, text=True).stdout)
    for (x, y), want in PAIRS.items():
        t.eq(classes(host).get(frozenset((DEVICES[x], DEVICES[y]))), want,
             "captured host: %s-%s is %s" % (x, y, want))
    with tempfile.TemporaryDirectory() as d:
        nccl = os.path.join(d, "nccl-topo.xml")
        p = subprocess.run([g, "qemu-args", "--mirror", "--sysfs-root",
                            HIDDEN, "--cpus", "2", "--memory", "1024",
                            "--nccl-topo", nccl] + devs,
                           capture_output=True, text=True)
        if not t.eq(p.returncode, 0, "gpup2p qemu-args --mirror"):
            t.diag(p.stderr)
            return
        args = stand_ins(p.stdout.splitlines(), host)
        gmap = guest_map(subprocess.run(
            [g, "qemu-args", "--mirror", "--map", "--sysfs-root", HIDDEN]
            + devs, capture_output=True, text=True).stdout)
        rc, out, err, gdir = vhost_run(
            "mirror-guest.json", GUEST, timeout=300,
            extra=["--qemu-arg=" + a for a in args])
        if not t.ok(rc == 0, "the mirrored guest booted and ran",
                    out + err):
            return
        t.eq(read(gdir, "nodes-online"), "0-1",
             "the guest has two NUMA nodes")
        judge(t, "stand-ins", DEVICES, host, gmap, gdir, nccl)
        t.diag("guest results in " + gdir)


def test_nested(t):
    # The nested guests boot the kernel the virtual host booted: tell the
    # runner inside where it is when the cache is not the project's.
    cache = os.environ.get("VHOST_CACHE")
    rc, out, err, outdir = vhost_run(
        "hidden.json", "%spython3 tests/integration/mirror_inner.py"
        % ("VHOST_CACHE=%s " % os.path.abspath(cache) if cache else ""),
        timeout=840)
    if not t.ok(rc == 0, "nested: the scenario ran in the virtual host",
                out + err):
        return
    res = load(outdir, "results.json")
    b = res.get("bdfs", {})
    t.eq(res.get("args_rc"), 0, "nested: gpup2p qemu-args --mirror")
    host = load(outdir, "host-topo.json")
    m = res.get("mirrored", {})
    if t.ok(m.get("rc") == 0, "nested: the mirrored guest booted and ran",
            m.get("output", "")):
        judge(t, "nested vfio-pci", b, host,
              guest_map(read(outdir, "map.txt")),
              os.path.join(outdir, "mirrored"),
              os.path.join(outdir, "nccl-topo.xml"))
    f = res.get("flat", {})
    if t.ok(f.get("rc") == 0, "nested: the flat guest booted and ran",
            f.get("output", "")):
        fdir = os.path.join(outdir, "flat")
        fc = classes(load(fdir, "topo.json"))
        t.ok(fc and set(fc.values()) == {"PHB"},
             "nested: the flat guest sees PHB between everything (what "
             "mirroring fixes)", json.dumps(sorted(set(fc.values()))))
        t.ok(not os.path.exists(os.path.join(fdir, "fwcfg-nccl-topo.xml")),
             "nested: the flat guest has no NCCL file in fw_cfg")
    t.diag("results in " + outdir)


def test(t):
    prepare()
    if sys.argv[1:] == ["nested"]:
        test_nested(t)
    else:
        test_stand_ins(t)


if __name__ == "__main__":
    Tap().run(test)
