#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""GPUDirect RDMA pairs judged by NVIDIA's own policy: rdma-core's
rdma_topo (Debian sid's rdma-core, unpacked by scripts/rdma-topo.sh and
never installed; GPUP2P_RDMA_TOPO names another copy) runs `check --virt`
on the same synthetic sysfs trees as `gpup2p topo --json` and
`gpup2p check --json` (RDMA_TOPO_DEVDIR points it at the tree).

For every port rdma_topo sets ACS on, our pair must ask the same controls
(a '0' of its mask at a control the port does not implement reads as
hard-wired, so as 'x'), and agree on whether the port has them; the same
for the NIC's ATS and the IOMMU groups; and `check` must name each failing
port with its flags in the pci=config_acs= fix. Trees cover each kind it
answers for (the inline ConnectX switch, Grace and Vera root ports, generic
root ports) with ACS and ATS varied; where it has no answer (the
ConnectX-8 DMA design for VMs, any other switch) ours must still give a
verdict with a reason. A missing judge fails: the rule must never be
judged against nothing."""

import json
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
from taplib import Tap  # noqa: E402
from sysfs_tree import (ACS_ALL, ACS_CR, ACS_DT, ACS_EC, ACS_LINUX,  # noqa
                        ACS_RR, ACS_SV, ACS_UF, Tree)

RDMA_TOPO = os.environ.get(
    "GPUP2P_RDMA_TOPO",
    "/var/cache/gpup2p/rdma-core-sid/usr/sbin/rdma_topo")
GPUP2P = os.environ.get("GPUP2P", "gpup2p")

CAP = ACS_ALL & ~ACS_EC          # what the ports here implement

GPU, NIC, CX8, SWITCH = (0x10de, 0x2335), (0x15b3, 0x1021), \
    (0x15b3, 0x1023), (0x15b3, 0x197c)


# ---- trees ----------------------------------------------------------------

def inline_tree(root, nic_port=ACS_LINUX | ACS_DT, nic_port_cap=CAP,
                gpu_port=ACS_LINUX, inner_port=ACS_LINUX,
                root_port=ACS_LINUX, ats=True, same_group=False):
    """NVIDIA's inline design: a root port, a ConnectX switch whose ports
    lead to the NIC and to a second switch level with the GPU."""
    t = Tree(root)
    t.cpu("AuthenticAMD", 0x19)
    t.add("0000:00:00.0", None, "endpoint", 0x1022, 0x14a4, 0x060000)
    t.add("0000:00:01.0", None, "root", 0x1022, 0x14ab, 0x060400, group=1)
    t.set_acs("0000:00:01.0", CAP, root_port)
    t.add("0000:01:00.0", "0000:00:01.0", "up", *SWITCH, 0x060400, group=1)
    t.add("0000:02:00.0", "0000:01:00.0", "down", *SWITCH, 0x060400,
          group=2)
    t.set_acs("0000:02:00.0", nic_port_cap, nic_port)
    t.add("0000:03:00.0", "0000:02:00.0", "endpoint", *NIC, 0x020700,
          group=2, driver="vfio-pci")
    if ats is not None:
        t.set_ats("0000:03:00.0", ats)
    t.add_verbs("mlx5_0", "0000:03:00.0")
    t.add("0000:02:01.0", "0000:01:00.0", "down", *SWITCH, 0x060400,
          group=3)
    t.set_acs("0000:02:01.0", CAP, gpu_port)
    t.add("0000:04:00.0", "0000:02:01.0", "up", *SWITCH, 0x060400, group=3)
    t.add("0000:05:00.0", "0000:04:00.0", "down", *SWITCH, 0x060400,
          group=3)
    t.set_acs("0000:05:00.0", CAP, inner_port)
    t.add("0000:06:00.0", "0000:05:00.0", "endpoint", *GPU, 0x030200,
          group=2 if same_group else 4, driver="vfio-pci")
    t.iommu_groups()


def root_port_tree(root, rp_id=(0x10de, 0x22b1), rp_cap=CAP,
                   rp_ctrl=ACS_LINUX, bad_port=None, ats=None):
    """GPUs and NICs each on a root port of their own (Grace's design),
    two NUMA nodes, each with one GPU and one NIC."""
    t = Tree(root)
    t.cpu("AuthenticAMD", 0x19)
    group = 1
    for node, domain in ((0, "0000"), (1, "0001")):
        for slot, dev, cls in (("01", GPU, 0x030200), ("02", NIC, 0x020000)):
            rp = "%s:00:%s.0" % (domain, slot)
            ep = "%s:%02x:00.0" % (domain, int(slot, 16))
            t.add(rp, None, "root", *rp_id, 0x060400, numa=node, group=group)
            t.set_acs(rp, rp_cap, 0 if rp == bad_port else rp_ctrl)
            t.add(ep, rp, "endpoint", *dev, cls, numa=node, group=group + 1,
                  driver="vfio-pci")
            if dev == NIC:
                t.add_verbs("mlx5_%d" % node, ep)
                if ats is not None:
                    t.set_ats(ep, ats)
            group += 2
    t.iommu_groups()


def dma_tree(root):
    """The ConnectX-8 DMA Direct design: a Grace root port, a ConnectX
    switch with the DMA function and, a level down, the GPU; the NIC's PF
    on a root port of its own, matched to the DMA function by VPD."""
    t = Tree(root)
    t.cpu("AuthenticAMD", 0x19)
    t.add("0000:00:01.0", None, "root", 0x10de, 0x22b1, 0x060400, group=1)
    t.set_acs("0000:00:01.0", CAP, ACS_LINUX)
    t.add("0000:01:00.0", "0000:00:01.0", "up", *SWITCH, 0x060400, group=1)
    t.add("0000:02:00.0", "0000:01:00.0", "down", *SWITCH, 0x060400,
          group=2)
    t.set_acs("0000:02:00.0", CAP, ACS_LINUX)
    t.add("0000:03:00.0", "0000:02:00.0", "endpoint", 0x15b3, 0x2100,
          0x080100, group=2)
    t.set_vpd("0000:03:00.0", "ConnectX-8", "SN1", "uuid-1")
    t.add("0000:02:01.0", "0000:01:00.0", "down", *SWITCH, 0x060400,
          group=3)
    t.set_acs("0000:02:01.0", CAP, ACS_LINUX)
    t.add("0000:04:00.0", "0000:02:01.0", "up", *SWITCH, 0x060400, group=3)
    t.add("0000:05:00.0", "0000:04:00.0", "down", *SWITCH, 0x060400,
          group=3)
    t.set_acs("0000:05:00.0", CAP, ACS_LINUX)
    t.add("0000:06:00.0", "0000:05:00.0", "endpoint", *GPU, 0x030200,
          group=4, driver="vfio-pci")
    t.add("0000:00:02.0", None, "root", 0x10de, 0x22b1, 0x060400, group=5)
    t.set_acs("0000:00:02.0", CAP, ACS_LINUX)
    t.add("0000:07:00.0", "0000:00:02.0", "endpoint", *CX8, 0x020000,
          group=6, driver="vfio-pci")
    t.set_vpd("0000:07:00.0", "ConnectX-8", "SN1", "uuid-1")
    t.add_verbs("mlx5_0", "0000:07:00.0")
    t.iommu_groups()


def other_switch_tree(root):
    """A NIC and a GPU under a Broadcom/PLX switch: no design of NVIDIA's."""
    t = Tree(root)
    t.cpu("AuthenticAMD", 0x19)
    t.add("0000:00:01.0", None, "root", 0x1022, 0x14ab, 0x060400, group=1)
    t.set_acs("0000:00:01.0", CAP, ACS_LINUX)
    t.add("0000:01:00.0", "0000:00:01.0", "up", 0x1000, 0xc030, 0x060400,
          group=1)
    for slot, bus, dev, cls, group in (("00", 2, NIC, 0x020000, 2),
                                       ("01", 3, GPU, 0x030200, 3)):
        port = "0000:02:%s.0" % slot
        ep = "0000:%02x:00.0" % (bus + 1)
        t.add(port, "0000:01:00.0", "down", 0x1000, 0xc030, 0x060400,
              group=group)
        t.set_acs(port, CAP, ACS_LINUX | (ACS_DT if dev == NIC else 0))
        t.add(ep, port, "endpoint", *dev, cls, group=group,
              driver="vfio-pci")
        if dev == NIC:
            t.set_ats(ep, True)
            t.add_verbs("mlx5_0", ep)
    t.iommu_groups()


def pairing_tree(root, verbs):
    """Two GPUs under one switch with an Intel Ethernet NIC (an RDMA NIC
    only with a verbs device on it), a third GPU on a root port."""
    t = Tree(root)
    t.cpu("AuthenticAMD", 0x19)
    t.add("0000:00:01.0", None, "root", 0x1022, 0x14ab, 0x060400, group=1)
    t.set_acs("0000:00:01.0", CAP, ACS_LINUX)
    t.add("0000:01:00.0", "0000:00:01.0", "up", 0x1000, 0xc030, 0x060400,
          group=1)
    for slot, dev, cls in (("00", (0x8086, 0x1592), 0x020000),
                           ("01", GPU, 0x030200), ("02", GPU, 0x030200)):
        port = "0000:02:%s.0" % slot
        ep = "0000:%02x:00.0" % (3 + int(slot))
        t.add(port, "0000:01:00.0", "down", 0x1000, 0xc030, 0x060400,
              group=2 + int(slot))
        t.set_acs(port, CAP, ACS_LINUX)
        t.add(ep, port, "endpoint", *dev, cls, group=5 + int(slot))
    t.add("0000:00:02.0", None, "root", 0x1022, 0x14ab, 0x060400, group=8)
    t.set_acs("0000:00:02.0", CAP, ACS_LINUX)
    t.add("0000:06:00.0", "0000:00:02.0", "endpoint", *GPU, 0x030200,
          group=9)
    if verbs:
        t.add_verbs("irdma0", "0000:03:00.0")
    t.iommu_groups()


def pairing(t):
    with tempfile.TemporaryDirectory() as root:
        pairing_tree(root, verbs=True)
        pairs, _ = ours(root)
        t.eq([(p["nic"], p["gpu"], p["type"]) for p in pairs],
             [("0000:03:00.0", "0000:04:00.0", "PIX"),
              ("0000:03:00.0", "0000:05:00.0", "PIX")],
             "pairs: a NIC with a verbs device pairs with its nearest GPUs "
             "(both PIX), not the PHB one")
    with tempfile.TemporaryDirectory() as root:
        pairing_tree(root, verbs=False)
        pairs, _ = ours(root)
        t.eq(pairs, [], "pairs: the same Ethernet NIC without a verbs "
             "device is no RDMA NIC")


DOMAIN = """<domain type='kvm'>
  <name>g</name>
  <memory unit='GiB'>16</memory>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <devices>
%s  </devices>
</domain>
"""
HOSTDEV = ("    <hostdev mode='subsystem' type='pci'><source><address "
           "domain='0x0000' bus='0x%02x' slot='0x00' function='0x0'/>"
           "</source></hostdev>\n")


def placement_items(root, buses):
    """check --domain's RDMA placement items for a domain assigning the
    devices on @buses."""
    path = os.path.join(root, "domain.xml")
    with open(path, "w") as f:
        f.write(DOMAIN % "".join(HOSTDEV % b for b in buses))
    p = subprocess.run([GPUP2P, "check", "--sysfs-root", root, "--domain",
                        path, "--json"], capture_output=True, text=True)
    try:
        items = json.loads(p.stdout)["items"]
    except ValueError:
        return p.stdout + p.stderr
    return [i for i in items if i["check"] == "RDMA placement"]


def placement(t):
    """check --domain warns where a NIC is given a GPU farther than one of
    the host's."""
    with tempfile.TemporaryDirectory() as root:
        pairing_tree(root, verbs=True)
        near = placement_items(root, [3, 4])
        if isinstance(near, str) and "built without libvirt" in near:
            t.skip("placement", "--domain needs a build with libvirt")
            return
        far = placement_items(root, [3, 6])
        t.ok(isinstance(near, list) and [i["verdict"] for i in near] ==
             ["ok"], "placement: a NIC assigned with a GPU of its switch is "
             "ok", near)
        t.ok(isinstance(far, list) and [i["verdict"] for i in far] ==
             ["warn"] and "0000:04:00.0" in far[0]["detail"],
             "placement: a NIC assigned with a GPU on another root port "
             "warns, naming the nearer GPU", far)


# ---- the two answers -------------------------------------------------------

ACS_LINE = re.compile(r"^(OK|FAIL)\tACS for (\S+) (\S+) has (?:in)?correct "
                      r"values \d+ !?= ([01x]{7})")
ATS_LINE = re.compile(r"^(OK|FAIL)\tATS capability for (\S+) (\S+) is "
                      r"(available|not available)")
GROUP_LINE = re.compile(r"^(OK|FAIL)\t(?:Kernel iommu_group|All kernel "
                        r"iommu_groups|Multiple devices share)")


def judge(root):
    """rdma_topo check --virt on @root: its exit status, its error line,
    and per port (mask, ok), per NIC (ATS wanted, ok), the group checks."""
    env = dict(os.environ,
               RDMA_TOPO_DEVDIR=os.path.join(root, "sys", "bus", "pci",
                                             "devices"))
    p = subprocess.run([sys.executable, RDMA_TOPO, "check", "--virt"],
                       env=env, capture_output=True, text=True)
    out = {"rc": p.returncode, "text": p.stdout + p.stderr, "error": None,
           "ports": {}, "ats": {}, "groups": []}
    for line in p.stdout.splitlines():
        m = ACS_LINE.match(line)
        if m:
            out["ports"][m.group(3)] = (m.group(4), m.group(1) == "OK")
            continue
        m = ATS_LINE.match(line)
        if m:
            ok = m.group(1) == "OK"
            available = m.group(4) == "available"
            # It wants ATS on where having it passes, off where it fails.
            out["ats"][m.group(3)] = ("on" if available == ok else "off", ok)
            continue
        if GROUP_LINE.match(line):
            out["groups"].append(line.startswith("OK"))
        elif line.startswith("E: "):
            out["error"] = line[3:]
    return out


def ours(root):
    topo = json.loads(subprocess.run(
        [GPUP2P, "topo", "--sysfs-root", root, "--json"],
        capture_output=True, text=True, check=True).stdout)
    check = subprocess.run([GPUP2P, "check", "--sysfs-root", root, "--json"],
                           capture_output=True, text=True)
    items = [i for i in json.loads(check.stdout)["items"]
             if i["check"] == "RDMA"]
    return topo["rdma_pairs"], items


def acs_capability(root, bdf):
    """The ACS Capability register of @bdf, read from the config space
    bytes of the tree (the extended capability list from 0x100, ID 0x000d),
    not from our reader: 0 where there is none. A port rdma_topo names
    whose config is missing from the tree is the tree's fault: raised."""
    path = os.path.join(root, "sys", "bus", "pci", "devices", bdf, "config")
    with open(path, "rb") as f:
        cfg = f.read()
    off, seen = 0x100, set()
    while 0x100 <= off <= len(cfg) - 8 and off not in seen:
        seen.add(off)
        head = struct.unpack_from("<I", cfg, off)[0]
        if head in (0, 0xffffffff):
            break
        if head & 0xffff == 0x000d:
            return struct.unpack_from("<H", cfg, off + 4)[0]
        off = head >> 20 & 0xffc
    return 0


def as_implemented(mask, cap):
    """@mask (bit 6 first) with a '0' at a control the port does not
    implement read as 'x': such a control is hard-wired off."""
    return "".join("x" if c == "0" and not cap & (1 << (6 - i)) else c
                   for i, c in enumerate(mask))


def compare(t, name, root, extra_ports=(), ats_stricter=False):
    """Our pairs' per-port ACS, ATS and group requirements against
    rdma_topo's; @extra_ports: ports we ask isolation of where rdma_topo
    sets nothing (generic root ports); @ats_stricter: ours also asks ATS
    to be enabled, where it looks at the capability alone."""
    j = judge(root)
    pairs, items = ours(root)
    t.diag("%s: rdma_topo exit %d%s" % (name, j["rc"], ": " + j["error"]
                                         if j["error"] else ""))
    if not t.ok(not j["error"] and j["ports"], "%s: rdma_topo answers"
                % name, j["text"]):
        return
    mine = {}
    for pair in pairs:
        for port in pair["ports"]:
            mine[port["bdf"]] = (port["acs_need_flags"], port["met"])
    theirs = {bdf: (as_implemented(mask, acs_capability(root, bdf)), ok)
              for bdf, (mask, ok) in j["ports"].items()}
    t.eq({b: mine.get(b) for b in theirs}, theirs,
         "%s: per port, the ACS controls asked and whether the port has "
         "them are rdma_topo's" % name)
    t.eq(sorted(set(mine) - set(theirs)), sorted(extra_ports),
         "%s: ports we ask more of than rdma_topo: only %s" %
         (name, ", ".join(extra_ports) or "none"))
    nic_ats = {p["nic"]: (p["ats"]["need"], p["ats"]["met"]) for p in pairs}
    if ats_stricter:
        t.eq({n: need for n, (need, ok) in nic_ats.items()},
             {n: need for n, (need, ok) in j["ats"].items()},
             "%s: ATS wanted as rdma_topo wants it" % name)
        # Where rdma_topo passes a NIC's ATS (the capability is there),
        # ours does not (it is not enabled); a NIC without the capability
        # fails both.
        passed = [n for n, (_, ok) in j["ats"].items() if ok]
        t.ok(passed and not any(nic_ats.get(n, (0, True))[1]
                                for n in passed),
             "%s: rdma_topo takes the ATS capability alone; ours also asks "
             "that it be enabled" % name,
             "rdma_topo: %s\nours: %s" % (j["ats"], nic_ats))
    else:
        t.eq(nic_ats, j["ats"], "%s: the NIC's ATS: wanted and had as "
             "rdma_topo says" % name)
    t.eq(all(p["iommu_groups_differ"] for p in pairs), all(j["groups"]),
         "%s: IOMMU groups differ as rdma_topo checks" % name)
    check_fix(t, name, j, pairs, items, ats_stricter)


def check_fix(t, name, j, pairs, items, ats_stricter):
    """`check`: ok exactly where rdma_topo passes everything (and, with
    @ats_stricter, not ok for ATS that is not enabled); else the fix names
    each failing port with its flags, and ATS where it fails."""
    want_ok = j["rc"] == 0 and not ats_stricter
    got_ok = bool(items) and all(i["verdict"] == "ok" for i in items)
    t.eq(got_ok, want_ok, "%s: check says ok exactly where rdma_topo does"
         % name)
    fix = " ".join(i.get("fix", "") for i in items)
    for pair in pairs:
        for port in pair["ports"]:
            if port["met"] or not port["settable"]:
                continue
            t.ok("%s@%s" % (port["acs_need_flags"], port["bdf"]) in fix,
                 "%s: the fix sets %s on %s with pci=config_acs=" %
                 (name, port["acs_need_flags"], port["bdf"]), fix)
    if ats_stricter or any(not ok for _, ok in j["ats"].values()):
        t.ok("ATS" in fix, "%s: the fix names the NIC's ATS" % name, fix)


def no_answer(t, name, root, why):
    """rdma_topo has no answer for VMs here; ours must still give one."""
    j = judge(root)
    pairs, items = ours(root)
    t.ok(j["rc"] != 0 and j["error"] and why in j["error"],
         "%s: rdma_topo has no answer (%s)" % (name, j["error"]), j["text"])
    t.ok(pairs and all(p["reason"] and p["guest_path"] for p in pairs),
         "%s: ours still pairs the NIC with its GPU and gives a verdict "
         "with a reason" % name, json.dumps(pairs, indent=1))
    for p in pairs:
        t.diag("%s: ours: %s-%s %s %s: %s" % (name, p["nic"], p["gpu"],
                                              p["type"], p["guest_path"],
                                              p["reason"]))
    t.ok(len(items) == len(pairs), "%s: check reports each pair" % name)


def main():
    t = Tap()
    if not t.ok(os.path.isfile(RDMA_TOPO), "rdma_topo is at %s" % RDMA_TOPO,
                "run scripts/setup-debian.sh (scripts/rdma-topo.sh unpacks "
                "sid's rdma-core), or set GPUP2P_RDMA_TOPO"):
        print("1..%d" % t.n)
        return 1
    pairing(t)
    placement(t)
    cases = [
        ("inline, as NVIDIA sets it for VMs", inline_tree, {}, {}),
        ("inline, the NIC's port without DT", inline_tree,
         {"nic_port": ACS_LINUX}, {}),
        ("inline, the NIC's port implements no DT", inline_tree,
         {"nic_port": ACS_LINUX, "nic_port_cap": CAP & ~ACS_DT}, {}),
        ("inline, the GPU's port without redirect", inline_tree,
         {"gpu_port": ACS_SV | ACS_UF}, {}),
        ("inline, the GPU's second-level port without ACS on", inline_tree,
         {"inner_port": 0}, {}),
        ("inline, the root port without ACS on", inline_tree,
         {"root_port": ACS_SV}, {}),
        ("inline, the NIC without ATS", inline_tree, {"ats": None}, {}),
        ("inline, NIC and GPU in one IOMMU group", inline_tree,
         {"same_group": True}, {}),
        ("inline, ATS implemented but not enabled", inline_tree,
         {"ats": False}, {"ats_stricter": True}),
        ("Grace root ports, isolated, no ATS", root_port_tree, {}, {}),
        ("Grace root ports, NICs with ATS", root_port_tree, {"ats": True},
         {}),
        ("Grace root ports, one without ACS on", root_port_tree,
         {"bad_port": "0001:00:02.0"}, {}),
        ("Vera root ports (CR not implemented)", root_port_tree,
         {"rp_id": (0x10de, 0x2f95), "rp_cap": CAP & ~ACS_CR,
          "rp_ctrl": ACS_SV | ACS_RR | ACS_UF}, {}),
    ]
    for name, build, args, opts in cases:
        with tempfile.TemporaryDirectory() as root:
            build(root, **args)
            compare(t, name, root, **opts)
    with tempfile.TemporaryDirectory() as root:
        root_port_tree(root, rp_id=(0x1022, 0x14ab))
        j = judge(root)
        pairs, _ = ours(root)
        t.ok(j["rc"] == 0 and not j["ports"],
             "generic root ports: rdma_topo sets no ACS on them", j["text"])
        t.ok(pairs and all(len(p["ports"]) == 2 and
                           all(q["acs_need"] == "SV RR CR UF"
                               for q in p["ports"]) for p in pairs),
             "generic root ports: ours asks Linux's isolation of both root "
             "ports of each pair (the VM rule)", json.dumps(pairs, indent=1))
    with tempfile.TemporaryDirectory() as root:
        dma_tree(root)
        no_answer(t, "ConnectX-8 DMA Direct", root,
                  "not supported on DMA-based topologies")
    with tempfile.TemporaryDirectory() as root:
        other_switch_tree(root)
        no_answer(t, "a Broadcom switch", root, "No supported topology")
    print("1..%d" % t.n)
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
