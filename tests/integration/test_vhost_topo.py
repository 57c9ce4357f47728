#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gpup2p topo, plan and snapshot inside the virtual GPU host, checked
against the topology description; snapshots read the same outside."""

import os
import subprocess

from taplib import (Tap, prepare, vhost_run, load_json, gpup2p,
                    run_failure, TOPOLOGIES)

GPUS = ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6"]

INSIDE = r"""
G=%(gpup2p)s
for n in %(gpus)s; do
    echo "$n $(python3 tests/vhost/vhost.py bdf $n)" >> $VHOST_OUT/bdfs
done
$G topo --json > $VHOST_OUT/topo.json
$G plan --devices "$(cut -d' ' -f2 $VHOST_OUT/bdfs | paste -sd,)" --json \
    > $VHOST_OUT/plan.json
# The snapshot is made where the service makes it, on the virtual host's
# own tmpfs (/run), and comes out as one file: some 400 small files
# written one by one over 9p took minutes of a boot on a loaded host.
t0=$(date +%%s.%%N)
$G snapshot /run/vhost-snapshot
t1=$(date +%%s.%%N)
echo "$t0 $t1" | awk '{printf "%%.1f\n", $2 - $1}' > $VHOST_OUT/snapshot-seconds
tar -C /run -cf $VHOST_OUT/snapshot.tar vhost-snapshot
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


def boot(t, append, label, topology="two-numa.json", gpus=GPUS):
    script = INSIDE % {"gpup2p": gpup2p(), "gpus": " ".join(gpus)}
    # 400 s a boot (two fit in meson's 900 s); unloaded a boot takes
    # about 30 s.
    rc, out, err, outdir = vhost_run(topology, script, append=append,
                                     timeout=400)
    if not t.ok(rc == 0, "%s: commands inside the virtual host" % label,
                run_failure(rc, out, err)):
        return None
    t.diag(err.strip().splitlines()[-1] if err.strip() else "")
    t.diag("%s: gpup2p snapshot took %s s inside" % (
        label, open(os.path.join(outdir, "snapshot-seconds")).read().strip()))
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


# The description's GPUs that a guest may pair (the VM rule) on the
# virtual host's AMD Zen CPU (VHOST_CPU): endpoints straight under root
# ports, whichever host bridge, except the two functions of one device.
ROOT_PORT_GPUS = ["gpu2", "gpu3", "gpu4", "gpu5"]


def check_guest_rule(t, bdfs, devs, links, label):
    """The VM rule on the kernel's own ACS state, judged by the ports
    the topology description builds."""
    sw, link = pair(bdfs, links, "gpu0", "gpu1")
    t.eq(link["p2p"], "direct", "%s: switch peers: direct on bare metal"
         % label)
    ports = [devs[bdfs[g]]["upstream"][0] for g in ("gpu0", "gpu1")]
    t.ok(link["guest_p2p"] == "bypasses-iommu" and
         all(p + " (no ACS capability)" in link["guest_reason"]
             for p in ports),
         "%s: switch peers: a guest's request bypasses the IOMMU, the "
         "reason names both xio3130 ports" % label, link)
    _, link = pair(bdfs, links, "gpu0", "gpu2")
    t.eq(link["guest_p2p"], "bypasses-iommu",
         "%s: under the switch vs a root port: the switch port still "
         "routes the guest address" % label)
    _, link = pair(bdfs, links, "gpu5", "gpu6")
    t.ok(link["guest_p2p"] == "bypasses-iommu" and
         "functions of one device" in link["guest_reason"],
         "%s: two functions of one device route between themselves"
         % label, link)
    for i, a in enumerate(ROOT_PORT_GPUS):
        for b in ROOT_PORT_GPUS[i + 1:]:
            _, link = pair(bdfs, links, a, b)
            if label == "acs-off":
                # Linux's pci_acs_enabled() fails at a root port without
                # RR CR: a guest's request may turn there, never reaching
                # the IOMMU. The reason names one of the two root ports.
                rps = [devs[bdfs[g]]["upstream"][-1] for g in (a, b)]
                t.ok(link["guest_p2p"] == "bypasses-iommu" and
                     any(p in link["guest_reason"] for p in rps),
                     "%s: %s-%s under root ports without ACS redirect: "
                     "bypasses the IOMMU, naming the root port"
                     % (label, a, b), link)
                continue
            t.ok(link["guest_p2p"] == "through-iommu" and
                 "AMD CPU family 19h" in link["guest_reason"],
                 "%s: %s-%s under root ports: through the IOMMU, the AMD "
                 "Zen root complex forwards" % (label, a, b), link)


def check_plan(t, outdir, bdfs, label):
    """Every clique holds only pairs the VM rule allows; the switch peers
    and the two functions are never in one. Without ACS redirect on the
    root ports no pair is allowed: no clique at all."""
    plan = load_json(os.path.join(outdir, "plan.json"))
    if label == "acs-off":
        t.eq([c["devices"] for c in plan["cliques"]], [],
             "%s: no clique (no root port redirects)" % label)
        return
    allowed = {bdfs[g] for g in ROOT_PORT_GPUS + ["gpu6"]}
    cliques = [set(c["devices"]) for c in plan["cliques"]]
    t.ok(cliques and all(c <= allowed and len(c) >= 2 for c in cliques),
         "%s: cliques only of GPUs under root ports" % label, cliques)
    t.ok(not any({bdfs["gpu0"], bdfs["gpu1"]} & c for c in cliques),
         "%s: the switch peers get no clique" % label, cliques)
    t.ok(not any({bdfs["gpu5"], bdfs["gpu6"]} <= c for c in cliques),
         "%s: the two functions never share one" % label, cliques)
    grouped = set().union(*cliques) if cliques else set()
    t.ok({bdfs[g] for g in ROOT_PORT_GPUS} <= grouped,
         "%s: every root-port GPU is in a clique" % label, cliques)


SHAPE_GPUS = GPUS + ["gpu7"]


def check_shapes(t, outdir):
    """acs-shapes.json (Linux's special shapes): `topo`'s guest verdicts
    and `plan`'s cliques agree with what Linux isolates."""
    bdfs = dict(line.split() for line in open(os.path.join(outdir, "bdfs")))
    topo = load_json(os.path.join(outdir, "topo.json"))
    links = {(l["a"], l["b"]): l for l in topo["links"]}
    groups = {d["bdf"]: d["iommu_group"] for d in topo["devices"]}
    isolated = ["gpu3", "gpu4", "gpu7"]
    for i, a in enumerate(SHAPE_GPUS):
        for b in SHAPE_GPUS[i + 1:]:
            _, link = pair(bdfs, links, a, b)
            want = "through-iommu" if a in isolated and b in isolated \
                else "bypasses-iommu"
            t.eq(link["guest_p2p"], want, "shapes: %s-%s for a guest (%s)"
                 % (a, b, link["guest_reason"]))
            if groups[bdfs[a]] == groups[bdfs[b]]:
                t.ok(link["guest_p2p"] != "through-iommu",
                     "shapes: %s-%s share IOMMU group %s: never through "
                     "the IOMMU" % (a, b, groups[bdfs[a]]))
    _, link = pair(bdfs, links, "gpu5", "gpu6")
    t.ok(groups[bdfs["gpu5"]] == groups[bdfs["gpu6"]],
         "shapes: Linux groups the two stand-ins behind the PCIe-to-PCI "
         "bridge together")
    plan = load_json(os.path.join(outdir, "plan.json"))
    cliques = [sorted(c["devices"]) for c in plan["cliques"]]
    t.eq(cliques, [sorted(bdfs[g] for g in isolated)],
         "shapes: one clique, of the stand-ins under the multifunction "
         "root port's two functions and a plain root port")


def test(t):
    prepare()

    # 0. Linux's special shapes: a two-level switch, root ports that are
    #    functions of one device, a PCIe-to-PCI bridge.
    outdir = boot(t, "", "shapes", "acs-shapes.json", SHAPE_GPUS)
    if outdir:
        check_shapes(t, outdir)

    # 1. The kernel's defaults: with the IOMMU on, Linux enables ACS
    #    SV RR CR UF on root ports; QEMU's xio3130 ports have no ACS.
    outdir = boot(t, "", "acs-on")
    if outdir:
        bdfs, devs, links = check_topology(t, outdir, "acs-on")
        fn, link = pair(bdfs, links, "gpu5", "gpu6")
        port = devs[bdfs["gpu5"]]["upstream"][0]
        t.ok(link["p2p"] == "host-bridge" and
             port + " (RR CR)" in link["reason"],
             "acs-on: functions under an ACS root port: bare metal goes "
             "through the host bridge, the reason names the root port's "
             "RR CR bits", link["reason"])
        t.ok(devs[bdfs["gpu0"]]["iommu_group"] !=
             devs[bdfs["gpu1"]]["iommu_group"],
             "acs-on: switch peers are in separate IOMMU groups (which "
             "does not make them safe: the ports have no ACS)")
        check_guest_rule(t, bdfs, devs, links, "acs-on")
        check_plan(t, outdir, bdfs, "acs-on")
        snapshot_round_trip(t, outdir, "acs-on")

    # 2. ACS redirect disabled on QEMU's root ports (1b36:000c): bare metal
    #    now sees the two functions talk directly; a guest's verdicts do
    #    not change (root ports belong to the root complex).
    outdir = boot(t, "pci=disable_acs_redir=pci:1b36:000c", "acs-off")
    if outdir:
        bdfs, devs, links = check_topology(t, outdir, "acs-off")
        fn, link = pair(bdfs, links, "gpu5", "gpu6")
        t.eq(link["p2p"], "direct",
             "acs-off: functions under the root port: direct on bare metal")
        check_guest_rule(t, bdfs, devs, links, "acs-off")
        check_plan(t, outdir, bdfs, "acs-off")
        snapshot_round_trip(t, outdir, "acs-off")


def snapshot_round_trip(t, outdir, label):
    snap = os.path.join(outdir, "vhost-snapshot")
    p = subprocess.run(["tar", "-C", outdir, "-xf",
                        os.path.join(outdir, "snapshot.tar")],
                       capture_output=True, text=True)
    if not t.ok(p.returncode == 0, "%s: the snapshot's archive unpacks"
                % label, p.stderr):
        return
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
