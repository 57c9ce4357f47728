#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gpup2p libvirt --mirror and gpup2p qemu-args --mirror on captured hosts:
libvirt's schema (virt-xml-validate) judges the XML; the hierarchy is read
back from the XML the way libvirt reads it (address bus = controller
index)."""

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import Tap  # noqa: E402

from fixture_copy import nvidia_host  # noqa: E402
from sysfs_tree import Tree  # noqa: E402
from test_libvirt import _TMP, run, validate  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures")
TWO_NUMA = os.path.join(FIX, "vhost-two-numa")
HIDDEN = os.path.join(FIX, "vhost-hidden")
# Its stand-ins as NVIDIA's, for stock QEMU's ids (vendor 10de only).
NV_HIDDEN = nvidia_host(HIDDEN, os.path.join(_TMP, "nv-hidden"))

# The hidden-style capture (tests/vhost/topologies/hidden.json): node 0
# switch with gpu0 gpu1 nic0, node 1 switch with gpu2 gpu3 nic1, gpu4 on
# a second node-1 host bridge.
HIDDEN_DEVS = {"gpu0": "0000:23:00.0", "gpu1": "0000:24:00.0",
               "nic0": "0000:25:00.0", "gpu2": "0000:43:00.0",
               "gpu3": "0000:44:00.0", "nic1": "0000:45:00.0",
               "gpu4": "0000:61:00.0"}


def domain(bdfs, vcpus=4, memory_gib=8, extra=""):
    hostdevs = "".join(
        "    <hostdev mode='subsystem' type='pci' managed='yes'>\n"
        "      <source><address domain='0x%s' bus='0x%s' slot='0x%s' "
        "function='0x%s'/></source>\n    </hostdev>\n"
        % (b[0:4], b[5:7], b[8:10], b[11]) for b in bdfs)
    return ("<domain type='kvm'>\n  <name>mirror-vm</name>\n"
            "  <memory unit='GiB'>%d</memory>\n  <vcpu>%d</vcpu>\n"
            "  <os><type arch='x86_64' machine='q35'>hvm</type></os>\n%s"
            "  <devices>\n    <emulator>/usr/bin/qemu-system-x86_64"
            "</emulator>\n    <controller type='pci' index='0' "
            "model='pcie-root'/>\n%s  </devices>\n</domain>\n"
            % (memory_gib, vcpus, extra, hostdevs))


def chains(xml):
    """Host BDF -> [(guest address), controller models up to pcie-root]."""
    root = ET.fromstring(xml)
    ctl = {int(c.get("index")): c for c in root.iter("controller")
           if c.get("type") == "pci"}
    out = {}
    for hd in root.iter("hostdev"):
        s = hd.find("source/address")
        bdf = "%04x:%02x:%02x.%x" % tuple(int(s.get(k), 16) for k in (
            "domain", "bus", "slot", "function"))
        a = hd.find("address")
        models = []
        bus = int(a.get("bus"), 16) if a is not None else -1
        guard = 0
        while bus in ctl and guard < 16:
            c = ctl[bus]
            node = c.find("target/node")
            models.append(c.get("model") + ("@%s" % node.text
                                            if node is not None else ""))
            ca = c.find("address")
            bus = int(ca.get("bus"), 16) if ca is not None else -1
            guard += 1
        out[bdf] = ((a.get("bus"), a.get("slot"), a.get("function"),
                     a.get("multifunction")) if a is not None else None,
                    models)
    return root, out


def run_mirror(t, host, xml, *opts):
    with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
        f.write(xml)
        f.flush()
        return run("libvirt", "--sysfs-root", host, "--mirror", *opts,
                   f.name)


def test_hidden(t):
    names = list(HIDDEN_DEVS)
    bdfs = [HIDDEN_DEVS[n] for n in names]
    with tempfile.TemporaryDirectory() as d:
        nccl = os.path.join(d, "nccl-topo.xml")
        p = run_mirror(t, HIDDEN, domain(bdfs), "--nccl-topo", nccl)
        t.eq(p.returncode, 0, "libvirt --mirror on the hidden-style host")
        out = p.stdout
        validate(t, out, "the mirrored domain")
        root, ch = chains(out)
        sw = ["pcie-switch-downstream-port", "pcie-switch-upstream-port",
              "pcie-root-port"]
        for n in ("gpu0", "gpu1", "nic0"):
            t.eq(ch[HIDDEN_DEVS[n]][1],
                 sw + ["pcie-expander-bus@0", "pcie-root"],
                 "%s: behind a switch on the node-0 expander bus" % n)
        for n in ("gpu2", "gpu3", "nic1"):
            t.eq(ch[HIDDEN_DEVS[n]][1],
                 sw + ["pcie-expander-bus@1", "pcie-root"],
                 "%s: behind a switch on the node-1 expander bus" % n)
        t.eq(ch[HIDDEN_DEVS["gpu4"]][1],
             ["pcie-root-port", "pcie-expander-bus@1", "pcie-root"],
             "gpu4: a root port on a second node-1 expander bus")
        buses = [c.find("target").get("busNr") for c in root.iter(
            "controller") if c.get("model") == "pcie-expander-bus"]
        t.eq(buses, ["128", "136", "144"], "expander bus numbers")
        cells = [(c.get("id"), c.get("cpus"), c.get("memory"))
                 for c in root.iter("cell")]
        t.eq(cells, [("0", "0-1", "4194304"), ("1", "2-3", "4194304")],
             "two NUMA cells share the 4 vCPUs and 8 GiB")
        entry = root.find("sysinfo[@type='fwcfg']/entry")
        t.ok(entry is not None and entry.get("name") ==
             "opt/gpup2p/nccl-topo.xml" and entry.get("file") == nccl,
             "the NCCL file goes to fw_cfg through <sysinfo type='fwcfg'>")
        text = open(nccl).read()
        t.ok(text.startswith("<system version=\"1\">") and "<?xml" not in
             text, "the NCCL file has no XML declaration (NCCL's parser "
             "rejects one)", text[:100])
        n = ET.fromstring(text)
        t.eq([c.get("numaid") for c in n.iter("cpu")], ["0", "1"],
             "NCCL file: one cpu per guest node")
        t.eq(len(n.findall("cpu/pci/pci")), 6,
             "NCCL file: three devices behind each switch")

        # Idempotent, and stable whatever order the hostdevs come in.
        again = os.path.join(d, "again.xml")
        with open(again, "w") as f:
            f.write(out)
        p2 = run("libvirt", "--sysfs-root", HIDDEN, "--mirror",
                 "--nccl-topo", nccl, again)
        t.eq(p2.stdout, out, "running it again changes nothing")
        p3 = run_mirror(t, HIDDEN, domain(list(reversed(bdfs))),
                        "--nccl-topo", nccl)
        t.eq(chains(p3.stdout)[1], ch,
             "hostdevs in another order get the same guest addresses")

        # With the clique edits, either way round. Every GPU of this host
        # sits below a switch port without ACS: a guest's request would
        # bypass the IOMMU, so none gets an id, and each is named.
        p4 = run("libvirt", "--sysfs-root", NV_HIDDEN, "--qemu-stock",
                 again)
        both = p4.stdout
        t.ok(p4.returncode == 0 and "x-nv-gpudirect-clique" not in both and
             chains(both)[1] == ch, "--qemu-stock on a mirrored domain "
             "keeps the mirror", p4.stderr)
        t.ok(p4.stderr.count("gets no clique id") >= 3 and
             "bypasses the IOMMU" in p4.stderr,
             "--qemu-stock: each GPU behind a switch without ACS is named",
             p4.stderr)
        p5 = run("libvirt", "--sysfs-root", NV_HIDDEN, "--qemu-stock",
                 "--mirror", again)
        t.ok(p5.returncode == 0 and chains(p5.stdout)[1] == ch and
             p5.stdout.count("pcie-expander-bus") == 3,
             "--qemu-stock --mirror: one mirror", p5.stderr)
        validate(t, p5.stdout, "the mirrored domain after --qemu-stock")

        p6 = run_mirror(t, HIDDEN, domain(bdfs, vcpus=1))
        t.ok(p6.returncode == 1 and "cannot fill 2 NUMA cells" in p6.stderr,
             "one vCPU for two cells is refused, saying why", p6.stderr)
        p7 = run("libvirt", "--sysfs-root", HIDDEN, "--nccl-topo", nccl,
                 again)
        t.eq(p7.returncode, 64, "--nccl-topo without --mirror is a usage "
             "error")
        p8 = run_mirror(t, HIDDEN, domain(bdfs, extra=(
            "  <cpu><numa><cell id='0' cpus='0-3' memory='8' unit='GiB'/>"
            "</numa></cpu>\n")))
        t.ok(p8.returncode == 1 and "NUMA cells of its own" in p8.stderr
             and not p8.stdout,
             "the domain's own NUMA cells are refused, never replaced; "
             "nothing written", p8.stderr)
        p9 = run_mirror(t, HIDDEN, domain(bdfs, extra=(
            "  <cpu><numa><cell id='0' cpus='0' memory='2' unit='GiB'/>"
            "<cell id='1' cpus='1' memory='2' unit='GiB'/>"
            "<cell id='2' cpus='2-3' memory='4' unit='GiB'/></numa></cpu>\n"
            "  <numatune><memnode cellid='2' mode='strict' nodeset='0'/>"
            "</numatune>\n")))
        t.ok(p9.returncode == 1 and "NUMA cells of its own" in p9.stderr
             and not p9.stdout,
             "three cells and a memnode: refused, not cut to two", p9.stderr)
        # The cells --mirror would write, in other words (GiB, a CPU list,
        # no unit: KiB), are the same cells: taken, and kept as written.
        own = ("  <cpu><numa><cell id='0' cpus='0,1' memory='4' unit='GiB'/>"
               "<cell id='1' cpus='2-3' memory='4194304'/></numa></cpu>\n")
        p10 = run_mirror(t, HIDDEN, domain(bdfs, extra=own))
        cells = [(c.get("id"), c.get("cpus"), c.get("memory"),
                  c.get("unit")) for c in ET.fromstring(p10.stdout).iter(
                      "cell")] if p10.returncode == 0 else []
        t.ok(p10.returncode == 0 and cells ==
             [("0", "0,1", "4", "GiB"), ("1", "2-3", "4194304", None)],
             "the domain's own cells, equal in value (GiB vs KiB, 0,1 vs "
             "0-1), are taken and kept as the operator wrote them",
             p10.stderr + repr(cells))
        for what, cells in (
                ("one id twice", "<cell id='0' cpus='0-1' memory='4' "
                 "unit='GiB'/><cell id='0' cpus='2-3' memory='4' "
                 "unit='GiB'/>"),
                ("other CPUs", "<cell id='0' cpus='0,2' memory='4' "
                 "unit='GiB'/><cell id='1' cpus='1,3' memory='4' "
                 "unit='GiB'/>"),
                ("other memory", "<cell id='0' cpus='0-1' memory='4' "
                 "unit='GB'/><cell id='1' cpus='2-3' memory='4' "
                 "unit='GiB'/>")):
            p11 = run_mirror(t, HIDDEN, domain(bdfs, extra=(
                "  <cpu><numa>%s</numa></cpu>\n" % cells)))
            t.ok(p11.returncode == 1 and "NUMA cells of its own" in
                 p11.stderr, "cells that differ in value (%s) are refused"
                 % what, p11.stderr)


def test_qemu_args(t):
    bdfs = list(HIDDEN_DEVS.values())
    p = run("qemu-args", "--mirror", "--sysfs-root", HIDDEN, "--cpus", "4",
            "--memory", "2048", *bdfs)
    t.eq(p.returncode, 0, "qemu-args --mirror on the hidden-style host")
    args = p.stdout.splitlines()
    t.ok("node,nodeid=1,cpus=2-3,memdev=gpup2p-mem1" in args and
         "pxb-pcie,id=gpup2p-hb1,bus=pcie.0,addr=0x1d,bus_nr=136,numa_node=1"
         in args, "QEMU arguments: NUMA cells and expander buses",
         p.stdout)
    t.eq(sum(a.startswith("x3130-upstream,") for a in args), 2,
         "QEMU arguments: a switch per shared host switch")
    # Stock QEMU parses the whole list (-S: nothing runs; no device
    # exists here to assign, so vfio-pci is left out).
    dev_free = [a for i, a in enumerate(args)
                if not a.startswith("vfio-pci") and
                not (a == "-device" and i + 1 < len(args) and
                     args[i + 1].startswith("vfio-pci"))]
    q = subprocess.run(["qemu-system-x86_64", "-M", "q35", "-accel", "tcg",
                        "-nodefaults", "-display", "none", "-S",
                        "-qmp", "stdio"] + dev_free,
                       input='{"execute":"qmp_capabilities"}\n'
                       '{"execute":"quit"}\n', capture_output=True,
                       text=True, timeout=120)
    t.ok(q.returncode == 0, "stock QEMU accepts the mirrored hierarchy",
         q.stderr)
    p2 = run("qemu-args", "--mirror", "--sysfs-root", HIDDEN,
             "0000:22:00.0")
    t.ok(p2.returncode == 1 and "0000:22:00.0 is a bridge" in p2.stderr,
         "a bridge is refused, named", p2.stderr)
    p3 = run("qemu-args", "--sysfs-root", HIDDEN, *bdfs)
    t.eq(p3.returncode, 64, "without --mirror: usage error")


# ---- GPU-NIC pairs ----------------------------------------------------------

GPU, NIC, PLX = (0x10de, 0x2335), (0x15b3, 0x1021), (0x1000, 0xc030)


def pair_host(root):
    """A switch holding GPU 03:00.0 and its InfiniBand NIC 04:00.0, GPU
    05:00.0 on a root port of its own, and a second switch with GPU
    08:00.0 and NIC 09:00.0."""
    t = Tree(root)
    t.cpu("GenuineIntel", 6)
    t.add("0000:00:00.0", None, "endpoint", 0x8086, 0x09a2, 0x060000)
    for rp, up, downs in (("0000:00:01.0", "0000:01:00.0",
                           (("0000:02:00.0", "0000:03:00.0", GPU, 0x030200),
                            ("0000:02:01.0", "0000:04:00.0", NIC,
                             0x020700))),
                          ("0000:00:03.0", "0000:06:00.0",
                           (("0000:07:00.0", "0000:08:00.0", GPU, 0x030200),
                            ("0000:07:01.0", "0000:09:00.0", NIC,
                             0x020700)))):
        t.add(rp, None, "root", 0x8086, 0x347a, 0x060400)
        t.add(up, rp, "up", *PLX, 0x060400)
        for down, ep, ids, cls in downs:
            t.add(down, up, "down", *PLX, 0x060400)
            t.add(ep, down, "endpoint", *ids, cls, driver="vfio-pci")
    t.add("0000:00:02.0", None, "root", 0x8086, 0x347a, 0x060400)
    t.add("0000:05:00.0", "0000:00:02.0", "endpoint", *GPU, 0x030200,
          driver="vfio-pci")
    t.add_verbs("mlx5_0", "0000:04:00.0")
    t.add_verbs("mlx5_1", "0000:09:00.0")
    t.iommu_groups()


def switch_of(root, bdf):
    """The index of the switch upstream port above hostdev @bdf, or None."""
    ctl = {int(c.get("index")): c for c in root.iter("controller")
           if c.get("type") == "pci"}
    for hd in root.iter("hostdev"):
        s = hd.find("source/address")
        if "%04x:%02x:%02x.%x" % tuple(int(s.get(k), 16) for k in (
                "domain", "bus", "slot", "function")) != bdf:
            continue
        down = ctl.get(int(hd.find("address").get("bus"), 16))
        if down is None or down.get("model") != \
                "pcie-switch-downstream-port":
            return None
        return int(down.find("address").get("bus"), 16)
    return None


def test_nic_pairs(t):
    with tempfile.TemporaryDirectory() as d:
        host = os.path.join(d, "host")
        pair_host(host)
        nccl = os.path.join(d, "nccl-topo.xml")
        p = run_mirror(t, host, domain(["0000:03:00.0", "0000:04:00.0",
                                        "0000:05:00.0"]),
                       "--nccl-topo", nccl)
        t.ok(p.returncode == 0, "libvirt --mirror with a GPU-NIC pair",
             p.stderr)
        root, _ = chains(p.stdout)
        sw = switch_of(root, "0000:04:00.0")
        t.ok(sw is not None and sw == switch_of(root, "0000:03:00.0"),
             "libvirt: the NIC and the GPU it pairs with on the host sit "
             "under one emulated switch", p.stdout)
        t.eq(switch_of(root, "0000:05:00.0"), None,
             "libvirt: the lone GPU on a root port of its own")
        t.ok("partner" not in p.stderr, "no warning for a NIC beside its "
             "GPU", p.stderr)
        validate(t, p.stdout, "the domain with a GPU-NIC pair")
        n = ET.fromstring(open(nccl).read())
        under = {c.get("busid"): sw.get("busid")
                 for sw in n.iter("pci") for c in sw.findall("pci")}
        guest = {}
        m = run("qemu-args", "--mirror", "--map", "--sysfs-root", host,
                "0000:03:00.0", "0000:04:00.0", "0000:05:00.0")
        for line in m.stdout.splitlines():
            f = line.split()
            if len(f) >= 3 and f[2] == "device":
                guest[f[1]] = f[0]
        t.ok(guest.get("0000:04:00.0") in under and
             under.get(guest.get("0000:04:00.0")) ==
             under.get(guest.get("0000:03:00.0")),
             "NCCL file: the NIC's <pci> and its GPU's under one switch "
             "<pci>", "%s %s" % (guest, under))
        t.ok("is placed beside GPU 0000:03:00.0" in m.stdout and
             "under emulated switch" in m.stdout,
             "qemu-args --map says where the NIC went and beside which GPU",
             m.stdout)

        p = run_mirror(t, host, domain(["0000:04:00.0", "0000:05:00.0"]))
        t.eq(p.returncode, 0, "libvirt --mirror: a NIC without its GPU")
        t.ok("NIC 0000:04:00.0 (guest 0000:81:00.0) has no assigned GPU "
             "partner: its nearest GPUs on the host (0000:03:00.0: PIX) "
             "are not assigned and the nearest assigned GPU, 0000:05:00.0, "
             "is PHB from it; placed by its own host path" in p.stderr,
             "libvirt: the reason when a NIC has no assigned partner",
             p.stderr)
        q = run("qemu-args", "--mirror", "--sysfs-root", host,
                "0000:04:00.0", "0000:05:00.0")
        t.ok(q.returncode == 0 and "gpup2p qemu-args: warning: NIC "
             "0000:04:00.0" in q.stderr and "warning" not in q.stdout,
             "qemu-args: the same reason as a warning, arguments clean",
             q.stderr)


def test(t):
    test_hidden(t)
    test_qemu_args(t)
    test_nic_pairs(t)
    # The capture with a node-less host bridge: the expander there gets
    # no <node>, the node-1 ones do.
    with open(os.path.join(FIX, "libvirt", "gpu-vm.xml")) as f:
        dom = f.read()
    p = run_mirror(t, TWO_NUMA, dom)
    root, ch = chains(p.stdout)
    t.eq(ch.get("0000:41:00.0", (None, []))[1],
         ["pcie-root-port", "pcie-expander-bus@0", "pcie-root"],
         "two-numa: the node-1 device on guest node 0 (the only cell)")
    t.eq(ch.get("0000:03:00.0", (None, []))[1][-2:],
         ["pcie-expander-bus", "pcie-root"],
         "two-numa: a node-less host bridge gives an expander without node")
    validate(t, p.stdout, "the two-numa mirrored domain")


if __name__ == "__main__":
    Tap().run(test)
