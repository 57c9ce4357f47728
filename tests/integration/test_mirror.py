#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The mirrored topology end to end, judged by a guest kernel.

1. The host is the hidden-style virtual host as captured
   (tests/fixtures/vhost-hidden: two switches under two host bridges on
   two NUMA nodes, a third host bridge on node 1). A guest is booted with
   `gpup2p qemu-args --mirror` for its seven devices; vfio-pci cannot run
   on this machine, so emulated stand-ins of the same class take the
   vfio-pci devices' places (bochs-display for a GPU, e1000e for a NIC).
   The guest must find every device where the host predicted, with the
   host's path classes between them and the host's NUMA split, and read
   the host's NCCL file from fw_cfg byte for byte. A flat guest of the
   same devices (a root port each on pcie.0, as a plain domain has them)
   sees PHB between all of them.
2. With the argument "libvirt", in the virtual host itself
   (tests/vhost/topologies/hidden.json), real vfio-pci: libvirt's QEMU
   driver defines and starts a domain `gpup2p libvirt --mirror` prepared,
   and the guest firmware numbers the buses as the host predicted.

A nested KVM guest in the virtual host would run `gpup2p topo` on real
vfio-pci devices, but here it takes over five minutes to boot and longer
to read its sysfs: too slow for CI."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from taplib import (PROJECT, Tap, gpup2p, prepare, vhost_run,
                    read_text as read, load_result, run_failure)

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
# NCCL's own reader on the guest (tests/nccl): the guest's GPUs by bus id
# and its network devices at the path NCCL's Socket plugin takes for them,
# placed with the fw_cfg file, with a control file that moves the NICs,
# and from the guest's sysfs alone.
J=build/nccl-judge/nccl-topo-judge
if [ -x $J ]; then
    # The NICs' driver, for their network devices.
    modprobe -d $VHOST_KERNEL_DIR -S $VHOST_KERNEL_VERSION e1000e
    args=""
    for d in /sys/bus/pci/devices/*; do
        if [ "$(cat $d/class)" = 0x038000 ]; then
            args="$args gpu:${d##*/}"
        fi
    done
    for n in /sys/class/net/*; do
        if [ -e $n/device ]; then
            args="$args ${n##*/}=$(realpath $n/device)"
        fi
    done
    echo "$args" > $VHOST_OUT/nccl-judge.args
    judge() {
        rc=0
        $J $2 $VHOST_OUT/nccl-dump-$1.xml $args \
            > $VHOST_OUT/nccl-judge-$1.out 2>&1 || rc=$?
        echo $rc > $VHOST_OUT/nccl-judge-$1.rc
    }
    judge sysfs none
    if [ -e $VHOST_OUT/fwcfg-nccl-topo.xml ]; then
        judge file $VHOST_OUT/fwcfg-nccl-topo.xml
        judge control build/nccl-judge/control-nccl-topo.xml
    fi
fi
"""

# NCCL's topology reader, built from NCCL's source (scripts/nccl-source.sh)
# into the build tree the guests see.
JUDGE_DIR = os.path.join(PROJECT, "build", "nccl-judge")


def build_nccl_judge(t):
    """Build nccl-topo-judge (tests/nccl/build-judge.sh); a failure is a
    failed check that names what is missing."""
    p = subprocess.run([os.path.join(PROJECT, "scripts", "nccl-source.sh")],
                       capture_output=True, text=True)
    tree = p.stdout.strip()
    if not t.ok(p.returncode == 0 and tree, "NCCL's source is at hand "
                "(scripts/nccl-source.sh: %s)" % (tree or "none"),
                p.stderr + "\nrun scripts/setup-debian.sh, or set "
                "GPUP2P_NCCL_SOURCE to an unpacked NCCL tree"):
        return False
    shutil.rmtree(JUDGE_DIR, ignore_errors=True)
    p = subprocess.run([os.path.join(PROJECT, "tests", "nccl",
                                     "build-judge.sh"), tree, JUDGE_DIR],
                       capture_output=True, text=True)
    stamp = os.path.join(tree, ".gpup2p-orig")
    t.diag("NCCL source: %s" % (read(tree, ".gpup2p-orig")
                                if os.path.exists(stamp) else tree))
    return t.ok(p.returncode == 0, "NCCL's topology reader (src/graph/xml.cc "
                "of %s) is built into nccl-topo-judge" % tree,
                p.stdout + p.stderr)


def nccl_dump(t, what, gdir, run):
    """NCCL's dump of judge run @run in @gdir: {bus id of each <pci>: (its
    parent element's tag, the parent's bus id)} and {net name: bus id of
    the <pci> holding its <nic>, or None}; None where the run failed."""
    if not t.eq(read(gdir, "nccl-judge-%s.rc" % run), "0",
                "%s: NCCL's reader placed the guest's GPUs and network "
                "devices (%s) and wrote its dump" % (what, RUNS[run])):
        t.diag(read(gdir, "nccl-judge-%s.out" % run))
        return None
    try:
        root = ET.parse(os.path.join(gdir, "nccl-dump-%s.xml" % run)) \
            .getroot()
    except (OSError, ET.ParseError) as e:
        t.ok(False, "%s: NCCL's dump parses (%s)" % (what, RUNS[run]),
             str(e))
        return None
    parent_of = {c: p for p in root.iter() for c in p}
    pcis = {}
    for e in root.iter("pci"):
        up = parent_of.get(e)
        pcis[e.get("busid")] = (up.tag if up is not None else None,
                                up.get("busid") if up is not None else None)
    nets = {}
    for net in root.iter("net"):
        nic = parent_of.get(net)
        holder = parent_of.get(nic) if nic is not None else None
        nets[net.get("name")] = holder.get("busid") \
            if holder is not None and holder.tag == "pci" else None
    return pcis, nets


RUNS = {"file": "the host's file", "sysfs": "no file, the guest's sysfs",
        "control": "a control file with the NICs moved onto their CPU"}


def switch_of(map_text):
    """Host BDF of each device -> guest bus id of the switch upstream port
    above it in `qemu-args --map` (None: on a root port)."""
    out, up = {}, None
    for line in map_text.splitlines()[1:]:
        f = line.split()
        if len(f) < 3:
            continue
        if f[2] in ("expander", "root-port"):
            up = None
        elif f[2] == "switch-upstream":
            up = f[0]
        elif f[2] == "device":
            out[f[1]] = up
    return out


def nics_beside(dump, nic_bdfs, pairs):
    """Whether, in @dump, a net sits on each of @nic_bdfs' functions and
    each (nic, gpu, switch) of @pairs has both under that switch's <pci>;
    and what was found, for the diagnostic."""
    pcis, nets = dump
    found = {"nets": nets}
    ok = sorted(str(v) for v in nets.values()) == sorted(nic_bdfs)
    for nic, gpu, switch in pairs:
        found[nic] = pcis.get(nic)
        found[gpu] = pcis.get(gpu)
        ok = ok and switch is not None and \
            pcis.get(nic) == pcis.get(gpu) == ("pci", switch)
    return ok, found


def judge_nccl_nics(t, what, b, gmap, switches, gdir):
    """NCCL's own placement in the mirrored guest: with the host's file
    and from the guest's sysfs alone, each NIC's <nic><net> sits in its
    <pci> under the switch where the host predicted it (--map), beside the
    GPU the host paired it with (PAIRS: nic0-gpu0, nic1-gpu2); a control
    file that moves the NICs onto their CPU moves them in NCCL's dump, so
    the file, where given, decides."""
    nic_bdfs = [gmap.get(b[n]) for n in sorted(b) if n.startswith("nic")]
    pairs = [(gmap.get(b[nic]), gmap.get(b[gpu]), switches.get(b[nic]))
             for nic, gpu in (("nic0", "gpu0"), ("nic1", "gpu2"))]
    for run in ("file", "sysfs"):
        dump = nccl_dump(t, what, gdir, run)
        if dump is None:
            continue
        ok, found = nics_beside(dump, nic_bdfs, pairs)
        t.ok(ok, "%s, %s: in NCCL's dump a net on each NIC (%s), and "
             "%s" % (what, RUNS[run], ", ".join(nic_bdfs), "; ".join(
                 "%s beside %s under the switch %s" % p for p in pairs)),
             json.dumps(found))
    dump = nccl_dump(t, what, gdir, "control")
    if dump is not None:
        pcis, nets = dump
        hung = {name: pcis.get(bdf) for name, bdf in nets.items()}
        t.ok(len(nets) == len(nic_bdfs) and
             all(up and up[0] == "cpu" for up in hung.values()) and
             not nics_beside(dump, nic_bdfs, pairs)[0],
             "%s, %s: NCCL's dump follows the file, the NICs on their CPU "
             "and beside no GPU" % (what, RUNS["control"]), hung)


def control_file(src, dst):
    """@src with each NIC's <pci> (class 0x02...) moved from its switch to
    hang on its <cpu>, written as NCCL reads a file (one element a line,
    no declaration, no space before "/>")."""
    tree = ET.parse(src)
    for cpu in tree.getroot().iter("cpu"):
        parents = {c: p for p in cpu.iter() for c in p}
        for nic in [n for n in cpu.iter("pci")
                    if n.get("class", "").startswith("0x02")]:
            parents[nic].remove(nic)
            cpu.append(nic)
    ET.indent(tree, space="  ")
    text = ET.tostring(tree.getroot(), encoding="unicode")
    with open(dst, "w") as f:
        f.write(text.replace(" />", "/>") + "\n")


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
    gtopo = load_result(gdir, "topo.json")
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


def stand_in(cls, props):
    """An emulated device of class @cls with @props (id, bus, addr...):
    the arguments that put it where a vfio-pci device would go."""
    rest = ",".join("%s=%s" % kv for kv in props.items())
    if cls.startswith("02"):
        return ["-netdev", "user,id=%s-net,restrict=on" % props["id"],
                "-device", "e1000e,%s,netdev=%s-net" % (rest, props["id"])]
    return ["-device", "bochs-display," + rest]


def stand_ins(args, host):
    """vfio-pci devices -> emulated devices of the same class at the same
    place (the fake for assignment, which this machine cannot do)."""
    classes_of = {d["bdf"]: d["class"] for d in host["devices"]}
    out = []
    for a in args:
        if a.startswith("vfio-pci,"):
            props = dict(p.split("=", 1) for p in a.split(",")[1:])
            out[-1:] = stand_in(classes_of[props.pop("host")], props)
        else:
            out.append(a)
    return out


def test_flat(t, host, have_judge):
    """The same devices as a plain domain has them: a root port each."""
    args = []
    for i, d in enumerate(DEVICES.values()):
        args += ["-device", "pcie-root-port,id=flat%d,chassis=%d,slot=%d"
                 % (i, 100 + i, 100 + i)]
        args += stand_in({x["bdf"]: x["class"] for x in host["devices"]}[d],
                         {"id": "flatdev%d" % i, "bus": "flat%d" % i})
    rc, out, err, gdir = vhost_run(
        "mirror-guest.json", GUEST, timeout=300,
        extra=["--qemu-arg=" + a for a in args],
        retry_host_death=True)
    if not t.ok(rc == 0, "the flat guest booted and ran",
                run_failure(rc, out, err)):
        return
    gtopo = load_result(gdir, "topo.json")
    bdfs = [x["bdf"] for x in gtopo.get("devices", [])
            if x["class"] in ("038000", "020000")]
    c = classes(gtopo)
    kinds = {c.get(frozenset((a, b))) for a in bdfs for b in bdfs if a < b}
    t.ok(len(bdfs) == 7 and kinds == {"PHB"},
         "flat guest: PHB between all seven devices (what mirroring fixes)",
         "%s %s" % (bdfs, kinds))
    t.ok(not os.path.exists(os.path.join(gdir, "fwcfg-nccl-topo.xml")),
         "flat guest: no NCCL file in fw_cfg")
    # The judge's own control: NCCL's reader on the flat guest's sysfs
    # hangs each NIC on a CPU, under no switch: a placement the mirrored
    # checks above would fail.
    got = nccl_dump(t, "flat guest", gdir, "sysfs") if have_judge else None
    if got is not None:
        pcis, nets = got
        hung = {name: pcis.get(bdf) for name, bdf in nets.items()}
        t.ok(len(nets) == 2 and all(up and up[0] == "cpu"
                                    for up in hung.values()),
             "flat guest: in NCCL's dump both NICs hang on a CPU, under no "
             "switch (what mirroring changes)", hung)
    t.diag("flat guest results in " + gdir)


def test_stand_ins(t):
    g = gpup2p()
    have_judge = build_nccl_judge(t)
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
        map_text = subprocess.run(
            [g, "qemu-args", "--mirror", "--map", "--sysfs-root", HIDDEN]
            + devs, capture_output=True, text=True).stdout
        gmap = guest_map(map_text)
        if have_judge:
            control_file(nccl, os.path.join(JUDGE_DIR,
                                            "control-nccl-topo.xml"))
        rc, out, err, gdir = vhost_run(
            "mirror-guest.json", GUEST, timeout=300,
            extra=["--qemu-arg=" + a for a in args],
            retry_host_death=True)
        if not t.ok(rc == 0, "the mirrored guest booted and ran",
                    run_failure(rc, out, err)):
            return
        t.eq(read(gdir, "nodes-online"), "0-1",
             "the guest has two NUMA nodes")
        judge(t, "stand-ins", DEVICES, host, gmap, gdir, nccl)
        if have_judge:
            judge_nccl_nics(t, "stand-ins", DEVICES, gmap,
                            switch_of(map_text), gdir)
        t.diag("guest results in " + gdir)
    test_flat(t, host, have_judge)


def pci_functions(reply):
    """(bus, slot, function) -> class of every function in a QMP
    query-pci reply, through bridges."""
    out = {}

    def walk(devices):
        for d in devices:
            out[(d["bus"], d["slot"], d["function"])] = \
                d.get("class_info", {}).get("class")
            walk(d.get("pci_bridge", {}).get("devices", []))
    for bus in reply.get("return", []):
        walk(bus.get("devices", []))
    return out


def test_libvirt(t):
    rc, out, err, o = vhost_run("hidden.json",
                                "sh tests/integration/mirror_libvirt.sh",
                                timeout=600, retry_host_death=True)
    if not t.ok(rc == 0, "libvirt: the scenario ran in the virtual host",
                run_failure(rc, out, err)):
        return
    t.eq(read(o, "libvirt.rc"), "0",
         "libvirt: gpup2p libvirt --mirror --qemu-stock")
    t.eq(read(o, "define.rc"), "0", "libvirt: the QEMU driver defines the "
         "mirrored domain")
    argv = read(o, "argv.txt")
    t.ok("pxb-pcie" in argv and '"numa_node":1' in argv and
         "x3130-upstream" in argv and
         "name=opt/gpup2p/nccl-topo.xml,file=/run/gpup2p/mirror-vm-nccl.xml"
         in argv and '"x-speed":"2_5"' in argv and
         "node,nodeid=1,cpus=1,memdev=ram-node1" in argv and
         "x-nv-gpudirect-clique" not in argv,
         "libvirt: its QEMU command line has the NUMA cells, the expander "
         "buses with their nodes, the switch, the root port link, the "
         "fw_cfg file, and no clique: every GPU pair of this host crosses "
         "a switch port without ACS", argv)
    t.eq(read(o, "start.rc"), "0", "libvirt: virsh start runs it")
    qom = [json.loads(x).get("return") for x in read(o, "qom.txt")
           .splitlines() if x.startswith("{")]
    t.eq(qom, [0, 1, 1], "libvirt: QMP shows the expander buses on guest "
         "nodes 0, 1, 1")
    try:
        funcs = pci_functions(json.loads(read(o, "query-pci.json")))
    except ValueError:
        funcs = {}
    gmap = guest_map(read(o, "map.txt"))
    names = dict(x.split() for x in read(o, "bdfs").splitlines())
    wrong = []
    for n, hb in sorted(names.items()):
        g = gmap.get(hb, "-")
        key = (int(g[5:7], 16), int(g[8:10], 16), int(g[11], 16)) \
            if len(g) == 12 else None
        want = 0x0200 if n.startswith("nic") else 0x0380
        if funcs.get(key) != want:
            wrong.append("%s (host %s): at %s class %s, want %#06x"
                         % (n, hb, g, funcs.get(key), want))
    t.ok(funcs and not wrong, "libvirt: the guest's firmware put every "
         "device, of its class, at the predicted bus number (QMP "
         "query-pci)",
         "\n".join(wrong) + "\n" + read(o, "query-pci.json")[:1500])


def test(t):
    prepare()
    if sys.argv[1:] == ["libvirt"]:
        test_libvirt(t)
    else:
        test_stand_ins(t)


if __name__ == "__main__":
    Tap().run(test)
