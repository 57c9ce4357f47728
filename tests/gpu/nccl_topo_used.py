#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Does NCCL use gpup2p-verify's topology file? NCCL itself judges: an
all-reduce over every visible GPU (PyTorch's NCCL, one process a GPU) is
run three times with NCCL_TOPO_DUMP_FILE, NCCL's own dump of the topology
it built:

  without  no NCCL_TOPO_FILE: what NCCL works out by itself;
  with     NCCL_TOPO_FILE=FILE: every <pci> of FILE must sit in the dump
           under the same chain of <pci> bus ids as in FILE;
  control  FILE with each GPU moved under a bridge that exists nowhere
           (ffff:ff:7f.0, link_width 4): the dump must show the move, so
           the file, not sysfs, decides NCCL's graph.

Prints one JSON object (the checks, the bus id chains, NCCL's graph
lines) and exits 0 when every check holds, 1 otherwise.

    nccl_topo_used.py FILE OUTDIR
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))


def chains(root):
    """bus id of each <pci> -> the bus ids of its <pci> ancestors, nearest
    first, then 'cpuN'."""
    out = {}

    def walk(node, above):
        for sub in node:
            if sub.tag == "cpu":
                walk(sub, ["cpu" + sub.get("numaid", "?")])
            elif sub.tag == "pci" and sub.get("busid"):
                busid = sub.get("busid").lower()
                out[busid] = list(above)
                walk(sub, [busid] + above)
            else:
                walk(sub, above)

    walk(root, [])
    return out


def control_file(src, dst):
    """@src with every GPU (class 0x03...) under a bridge no machine has."""
    tree = ET.parse(src)
    moved = []
    for cpu in tree.getroot().iter("cpu"):
        parents = {c: p for p in cpu.iter() for c in p}
        gpus = [n for n in cpu.iter("pci")
                if n.get("class", "").startswith("0x03")]
        if not gpus:
            continue
        bridge = ET.SubElement(cpu, "pci", {
            "busid": "ffff:ff:7f.0", "class": "0x060400",
            "link_speed": "8.0 GT/s PCIe", "link_width": "4"})
        for g in gpus:
            parents[g].remove(g)
            bridge.append(g)
            moved.append(g.get("busid").lower())
        break
    # NCCL's reader wants one element a line, no declaration, and no
    # space before "/>" (it would read an empty attribute there).
    ET.indent(tree, space="  ")
    text = ET.tostring(tree.getroot(), encoding="unicode").replace(" />",
                                                                  "/>")
    with open(dst, "w") as f:
        f.write(text + "\n")
    return moved


def run(name, outdir, topo_file):
    dump = os.path.join(outdir, "dump-%s.xml" % name)
    env = dict(os.environ, NCCL_TOPO_DUMP_FILE=dump, NCCL_DEBUG="INFO",
               NCCL_DEBUG_SUBSYS="INIT,GRAPH,ENV")
    env.pop("NCCL_TOPO_FILE", None)
    if topo_file:
        env["NCCL_TOPO_FILE"] = topo_file
    p = subprocess.run([sys.executable, os.path.join(HERE,
                                                     "nccl_allreduce.py")],
                       env=env, capture_output=True, text=True, timeout=300)
    log = p.stdout + p.stderr
    with open(os.path.join(outdir, "nccl-%s.log" % name), "w") as f:
        f.write(log)     # NCCL's order, unsorted
    tree = ET.parse(dump).getroot() if os.path.exists(dump) else None
    return {"rc": p.returncode, "chains": chains(tree) if tree is not None else None,
            "loaded": ("Loading topology file %s" % topo_file) in log
            if topo_file else None,
            "graph": [line.split("NCCL INFO ", 1)[1] for line in
                      log.splitlines() if "NCCL INFO Pattern" in line]}


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 64
    topo, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    control = os.path.join(outdir, "control-topo.xml")
    moved = control_file(topo, control)
    want = chains(ET.parse(topo).getroot())
    res = {k: run(k, outdir, f) for k, f in
           (("without", None), ("with", topo), ("control", control))}
    got, ctl = res["with"]["chains"] or {}, res["control"]["chains"] or {}
    checks = {
        "all three ran": all(r["rc"] == 0 for r in res.values()),
        "the file was loaded": bool(res["with"]["loaded"]),
        "every <pci> of the file sits in NCCL's dump where the file put it":
            bool(want) and all(got.get(b) == c for b, c in want.items()),
        "control: the moved GPUs sit under ffff:ff:7f.0 in NCCL's dump":
            bool(moved) and all((ctl.get(b) or [""])[0] == "ffff:ff:7f.0"
                                for b in moved),
        "control: NCCL's dump differs from the one with the file":
            ctl != got,
    }
    print(json.dumps({"checks": checks, "file": want, "moved": moved,
                      "runs": res}, indent=1))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
