#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A BAR whose mmaps do not cover it, on a real kernel: the Linux 7.x
virtual host with the sparse-mmap stand-in (tests/kernel/sparse-standin,
a test module named as such: vfio-pci whose prefetchable BARs offer only
their first half for mmap through VFIO's sparse mmap capability). Judged
by the kernel: a nested guest's edu DMA into ivshmem's BAR, ivshmem on
the stand-in, arrives in the mmapped half and never in the other, which
QEMU traps and its listener never maps. Our QEMU's gate must agree: no
capability for such a GPU with auto, an explicit id refused, the reason
naming the BAR and the bytes left out. `gpup2p check --domain` holds no
region info: for a GPU on a vfio-pci variant driver, which may offer
sparse mmaps, it says unknown and why (a warning, not a stopped VM)."""

import os
import re

from dma_judge import N, pattern, dmar_faults, kernel_problems
from taplib import (Tap, built, our_qemu, qemu_vhost_env, vhost_run,
                    read_text as read, load_result, run_failure, PROJECT)
BUILD_LINUX = os.path.join(PROJECT, "tests", "vhost", "build-linux.sh")
BUILD_STANDIN = os.path.join(PROJECT, "tests", "kernel", "sparse-standin",
                             "build.sh")
COVERED, UNCOVERED = 0x4000, 0x900000      # in ivshmem's 16 MiB BAR2



def test(t):
    cache = built(t, BUILD_LINUX, "the Linux 7.x virtual host's kernel is "
                  "built")
    module = cache and built(t, BUILD_STANDIN, "the sparse-mmap stand-in "
                             "builds against it, warning-free (W=1)",
                             dict(os.environ, VHOST_CACHE=cache), True)
    if not module:
        return
    qemu = our_qemu()
    env = qemu_vhost_env(cache, qemu)
    rc, out, err, outdir = vhost_run(
        "backends.json",
        "insmod %s; "
        "%s sh tests/integration/qemu_p2p_dma.sh sparse; "
        "%s python3 tests/integration/inner_backends.py sparse; "
        "python3 tests/integration/inner_gate.py %s sparse; "
        "dmesg > $VHOST_OUT/dmesg-end.txt"
        % (module, env, env, qemu), timeout=1200)
    if not t.ok(rc == 0, "the scenarios ran in the virtual host",
                run_failure(rc, out, err)):
        return
    t.eq(read(outdir, "sparse-driver"), "gpup2p_sparse_standin_vfio_pci",
         "ivshmem is bound to the stand-in")

    # The kernel's answer: the nested guest's DMA into each half.
    mem = open(os.path.join(outdir, "shm0.mem"), "rb").read()
    for name, off, seed, arrives in (
            ("sparse-covered", COVERED, 21, True),
            ("sparse-uncovered", UNCOVERED, 22, False)):
        r = load_result(outdir, name + ".json")
        ran = (read(outdir, name + ".rc") == "0" and r.get("to_edu") == 1 and
               r.get("to_peer") == 1 and
               int(r.get("peer_gpa", "0"), 16) >= 0x100000 + off)
        t.ok(ran, "%s: the nested guest ran, its DMA from RAM works and its "
             "DMA to the peer BAR's GPA completed" % name,
             str(r) + read(outdir, name + ".err")[-2000:])
        dmesg = read(outdir, name + ".dmesg")
        if arrives:
            t.ok(ran and mem[off:off + N] == pattern(seed) and
                 not dmar_faults(dmesg),
                 "%s: the DMA into the mmapped half arrives, no IOMMU "
                 "fault" % name, dmesg[-2000:])
        else:
            t.ok(ran and mem[off:off + N] == bytes(N) and
                 dmar_faults(dmesg, int(r["peer_gpa"], 16)),
                 "%s: the DMA into the half left out of the mmaps never "
                 "arrives, and the IOMMU faults on that GPA" % name,
                 dmesg[-2000:])
    t.eq(kernel_problems(read(outdir, "dmesg-end.txt")), [],
         "the kernel log has no WARN, BUG or Oops at the end")

    # Our QEMU's gate against it.
    res = load_result(outdir, "sparse.json")
    c = res.get("auto", {})
    err = c.get("stderr", "")
    t.ok(re.search(r"vfio_region_sparse_mmap_entry sparse entry 0 "
                   r"\[0x0 - 0x7fffff\]", err),
         "QEMU read the kernel's sparse mmap capability (its own trace)",
         err[-2000:])
    t.ok((c.get("in_effect") or {}).get("g1") == -1,
         "auto: no capability for the GPU with the sparse BAR", c)
    maps = ((c.get("bar_map_status") or {}).get("g1") or {}).get("maps", [])
    t.ok([(m.get("iova"), m.get("size")) for m in maps
          if m.get("mapped")] == [(0xc2000000, 0x800000)],
         "and QEMU's listener mapped only the mmapped half of its BAR0",
         maps)
    why = ("BAR0: its mmaps leave 8388608 of its 16777216 bytes uncovered "
           "(a sparse mmap)")
    t.ok(why in err and str((c.get("bar_maps") or {}).get("g1"))
         .startswith("none: " + why),
         "and the warning and x-gpu-p2p-bar-maps name the BAR and the "
         "bytes", c)
    c = res.get("explicit", {})
    t.ok(not c.get("started") and why in c.get("stderr", ""),
         "explicit id: refused with the reason", c)
    c = res.get("explicit-warn", {})
    t.ok((c.get("in_effect") or {}).get("g1") == 2 and
         any(cid == 9 for _, cid in (c.get("caps") or {}).get("g1", [])) and
         why in c.get("stderr", ""),
         "explicit id, verify=warn: the capability is given, as without "
         "the gate, with the warning", c)

    # The host tool cannot read region info: unknown for that GPU, naming
    # its driver; the domain gives it a clique, so the item is untested,
    # not failed.
    gate = load_result(outdir, "gate-sparse.json")
    g0, g1 = (gate.get("gpus") or ["?", "?"])[:2]
    c = gate.get("sparse-ours", {})
    t.ok(c.get("verdict") == "untested" and
         c.get("gpus") == {g0: "mapped", g1: "unknown"} and
         "bound to gpup2p_sparse_standin_vfio_pci, a vfio-pci variant "
         "driver" in (c.get("detail") or ""),
         "check --domain: unknown for the GPU on the stand-in, naming the "
         "driver, and the item untested", c)


if __name__ == "__main__":
    Tap().run(test)
