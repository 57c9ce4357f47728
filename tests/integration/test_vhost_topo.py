#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gpup2p topo, plan and snapshot inside the virtual GPU host, checked
against the topology description; snapshots read the same outside."""

import os
import subprocess

from taplib import Tap, prepare, vhost_run, load_json, gpup2p, TOPOLOGIES

GPUS = ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6"]

INSIDE = r"""
G=%(gpup2p)s
for n in %(gpus)s; do
    echo "$n $(python3 tests/vhost/vhost.py bdf $n)" >> $VHOST_OUT/bdfs
done
$G topo --json > $VHOST_OUT/topo.json
$G plan --devices "$(cut -d' ' -f2 $VHOST_OUT/bdfs | paste -sd,)" --json \
    > $VHOST_OUT/plan.json
$G snapshot $VHOST_OUT/snapshot
for g in /sys/kernel/iommu_groups/*; do
    for d in $g/devices/*; do echo "$(basename $d) $(basename $g)"; done
done > $VHOST_OUT/groups
"""


def expected_class(desc, a, b):
    """The path class the description implies for two GPU stand-ins."""
    na, nb = desc[a], desc[b]
    if na["host_bridge"] != nb["host_bridge"]:
        return "NODE" if na["numa_node"] == nb["numa_node"] else "SYS"
    # Same host bridge: sharing the root port (and a switch below it, or
    # the device) stays below the host bridge.
    return "PIX" if na["path"][1] == nb["path"][1] else "PHB"


def boot(t, append, label):
    script = INSIDE % {"gpup2p": gpup2p(), "gpus": " ".join(GPUS)}
    rc, out, err, outdir = vhost_run("two-numa.json", script, append=append)
    if not t.ok(rc == 0, "%s: commands inside the virtual host" % label,
                out + err):
        return None
    t.diag(err.strip().splitlines()[-1] if err.strip() else "")
    return outdir


def check_topology(t, outdir, label):
    manifest = load_json(os.path.join(outdir, "topology.json"))["nodes"]
    bdfs = dict(line.split() for line in open(os.path.join(outdir, "bdfs")))
    topo = load_json(os.path.join(outdir, "topo.json"))
    devs = {d["bdf"]: d for d in topo["devices"]}
    links = {(l["a"], l["b"]): l for l in topo["links"]}
    groups = dict(line.split() for line in open(os.path.join(outdir,
                                                             "groups")))
    for name in GPUS:
        d = devs.get(bdfs[name])
        if not t.ok(d is not None, "%s: %s seen at %s" % (label, name,
                                                         bdfs[name])):
            continue
        want_node = manifest[name]["numa_node"]
        t.eq(d["numa_node"], -1 if want_node is None else want_node,
             "%s: %s NUMA node" % (label, name))
        t.eq(d["host_bridge"], manifest[name]["host_bridge"],
             "%s: %s host bridge" % (label, name))
        t.eq(str(d["iommu_group"]), groups.get(bdfs[name]),
             "%s: %s IOMMU group matches /sys/kernel/iommu_groups"
             % (label, name))
    for i, a in enumerate(GPUS):
        for b in GPUS[i + 1:]:
            ba, bb = sorted([bdfs[a], bdfs[b]])
            link = links.get((ba, bb))
            t.eq(link and link["type"], expected_class(manifest, a, b),
                 "%s: path class %s-%s" % (label, a, b))
    return bdfs, devs, links


def pair(bdfs, links, x, y):
    a, b = sorted([bdfs[x], bdfs[y]])
    return (a, b), links[(a, b)]


def test(t):
    prepare()

    # 1. The kernel's defaults: with the IOMMU on, Linux enables ACS
    #    SV RR CR UF on root ports; QEMU's xio3130 ports have no ACS.
    outdir = boot(t, "", "acs-on")
    if outdir:
        bdfs, devs, links = check_topology(t, outdir, "acs-on")
        sw, link = pair(bdfs, links, "gpu0", "gpu1")
        t.eq(link["p2p"], "direct", "acs-on: switch peers: direct P2P")
        fn, link = pair(bdfs, links, "gpu5", "gpu6")
        t.eq(link["p2p"], "none",
             "acs-on: functions under an ACS root port: no P2P")
        port = devs[bdfs["gpu5"]]["upstream"][0]
        t.ok(port + " (RR CR)" in link["reason"],
             "acs-on: the reason names the root port and its RR CR bits",
             link["reason"])
        _, link = pair(bdfs, links, "gpu0", "gpu2")
        t.ok(link["p2p"] == "none" and "8086:29c0" in link["reason"],
             "acs-on: across root ports: Q35's host bridge does not forward",
             link["reason"])
        t.ok(devs[bdfs["gpu0"]]["iommu_group"] !=
             devs[bdfs["gpu1"]]["iommu_group"],
             "acs-on: switch peers are in separate IOMMU groups")
        plan = load_json(os.path.join(outdir, "plan.json"))
        t.eq([c["devices"] for c in plan["cliques"]], [list(sw)],
             "acs-on: only the switch peers share a clique")
        snapshot_round_trip(t, outdir, "acs-on")

    # 2. ACS redirect disabled on QEMU's root ports (1b36:000c): the two
    #    functions under one root port talk directly and get a clique.
    outdir = boot(t, "pci=disable_acs_redir=pci:1b36:000c", "acs-off")
    if outdir:
        bdfs, devs, links = check_topology(t, outdir, "acs-off")
        sw, _ = pair(bdfs, links, "gpu0", "gpu1")
        fn, link = pair(bdfs, links, "gpu5", "gpu6")
        t.eq(link["p2p"], "direct",
             "acs-off: functions under the root port: direct P2P")
        plan = load_json(os.path.join(outdir, "plan.json"))
        t.eq([c["devices"] for c in plan["cliques"]], [list(sw), list(fn)],
             "acs-off: switch peers clique 0, the functions clique 1")
        snapshot_round_trip(t, outdir, "acs-off")


def snapshot_round_trip(t, outdir, label):
    snap = os.path.join(outdir, "snapshot")
    p = subprocess.run([gpup2p(), "topo", "--sysfs-root", snap, "--json"],
                       capture_output=True, text=True)
    if not t.ok(p.returncode == 0, "%s: topo on the snapshot outside"
                % label, p.stderr):
        return
    import json
    inside = load_json(os.path.join(outdir, "topo.json"))
    outside = json.loads(p.stdout)
    inside.pop("root")
    outside.pop("root")
    t.eq(outside, inside, "%s: the snapshot reads the same outside" % label)


if __name__ == "__main__":
    Tap().run(test)
