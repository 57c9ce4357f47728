#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The kernel helper in the virtual host: real DMA by edu into ivshmem's
BAR through the helper's mapping (and a fault without it), audit of the
helper's and the VMM's mappings, every validation rule, a killed holder,
an unbind, concurrent map/unmap, unloading, and a clean kernel log."""

import json
import os
import re

from taplib import Tap, prepare, vhost_run, PROJECT

PATTERN_LEN = 4096


def pattern(seed):
    return bytes((i * 7 + seed) & 0xff for i in range(PATTERN_LEN))


def j(outdir, name):
    with open(os.path.join(outdir, name)) as f:
        text = f.read()
    return json.loads(text) if name.endswith(".json") else text.strip()


def test(t):
    prepare()
    ko = os.path.join(PROJECT, "build", "kernel", "gpup2p.ko")
    if not t.ok(os.path.exists(ko), "the module is built (kernel/build.sh)"):
        return
    rc, out, err, outdir = vhost_run("kernel-helper.json",
                                     "sh tests/integration/kernel_helper.sh",
                                     timeout=600)
    if not t.ok(rc == 0, "the scenario ran in the virtual host", out + err):
        return
    mem = open(os.path.join(outdir, "shm0.mem"), "rb").read()

    d = j(outdir, "dma-helper.json")
    t.ok(d.get("dma_to_peer"), "edu's DMA through the helper's mapping "
         "completed", json.dumps(d))
    t.eq(mem[0x1000:0x1000 + PATTERN_LEN] == pattern(1), True,
         "the pattern landed in ivshmem's backing file outside the host")
    t.eq(d.get("audit"), 0, "audit finds the helper's mapping complete")

    d = j(outdir, "dma-none.json")
    t.eq(mem[0x2000:0x2000 + PATTERN_LEN] == bytes(PATTERN_LEN), True,
         "without a mapping nothing is written")
    t.eq(d.get("audit"), 1, "and audit reports the mapping missing")
    dmesg = j(outdir, "dmesg.txt")
    t.ok(re.search(r"DMAR: \[DMA Write", dmesg) is not None,
         "the IOMMU faulted the unmapped DMA write")

    d = j(outdir, "dma-vfio.json")
    t.eq(mem[0x3000:0x3000 + PATTERN_LEN] == pattern(3), True,
         "the VMM's own BAR mapping (VFIO_IOMMU_MAP_DMA) works too")
    t.eq(d.get("audit"), 0, "audit finds the VMM's mapping complete")

    v = j(outdir, "validate.json")
    want = {
        "valid": "ok", "overlap-own": "EEXIST", "overlap-partial": "EEXIST",
        "overlap-vmm": "EEXIST", "unaligned-iova": "EINVAL",
        "unaligned-offset": "EINVAL", "size-zero": "EINVAL",
        "wrap-around": "EOVERFLOW", "past-bar-end": "ERANGE",
        "bar-index": "ENXIO", "bar-absent": "ENXIO", "bar-io": "EOPNOTSUPP",
        "no-access-flags": "EINVAL", "closed-fd": "EBADF",
        "not-vfio-fd": "EBADFD", "wrong-group": "ENODEV",
        "no-such-device": "ENODEV", "no-vfio-domain": "ENOLINK",
        "no-cap-sys-admin": "EPERM", "unmap-unknown": "ENOENT",
        "unmap-valid": "ok",
    }
    for case, errno in want.items():
        t.eq(v.get(case), errno, "validation: %s -> %s" % (case, errno))
    t.eq(v.get("left"), 0, "validation leaves no mapping")

    s = j(outdir, "stress.json")
    t.eq((s.get("failures"), s.get("left")), (0, 0),
         "4 threads x 50 concurrent map/unmap: no failure, nothing left")
    k = j(outdir, "killed.json")
    t.eq((k.get("before_kill"), k.get("after_kill")), (4, 0),
         "a killed holder's 4 mappings go with it")
    u = j(outdir, "unbind.json")
    t.eq((u.get("mapped"), u.get("before_unbind"), u.get("after_unbind")),
         (True, 1, 0), "unbinding the peer removes its mapping first")
    t.eq(u.get("map_unbound"), "EBUSY", "an unbound device cannot be mapped")

    held = j(outdir, "mappings-held.json")
    t.eq(len(held), 1, "gpup2p mappings lists the CLI's held mapping")
    t.eq(j(outdir, "audit-held.rc"), "0", "gpup2p audit: held mapping ok")
    t.eq(j(outdir, "audit-missing.rc"), "4", "audit of an unmapped IOVA: 4")
    t.eq(j(outdir, "audit-missing.json").get("status"), "missing",
         "... reported missing")
    t.eq(j(outdir, "audit-wrong.json").get("status"), "wrong",
         "audit of a window mapped elsewhere: wrong")
    t.ok(j(outdir, "rmmod-held.rc") != "0",
         "rmmod is refused while a mapping's holder is alive")
    t.eq(j(outdir, "mappings-after.json"), [],
         "the holder stopped: no mapping left")
    t.eq(j(outdir, "rmmod.rc"), "0", "then the module unloads")

    kv = j(outdir, "verdict-kernel.json")
    topo = j(outdir, "topo-user.json")
    user = topo["links"][0]["p2p"] if topo["links"] else None
    t.eq(kv.get("p2p"), user,
         "the kernel's verdict matches the user-space model (%s)" % user)

    bench = j(outdir, "bench.json")
    t.ok(len(bench) >= 2, "benchmark figures taken", json.dumps(bench))
    for b in bench:
        t.diag("map+unmap %8d bytes: helper %.1f us, VFIO %.1f us, "
               "ratio %.2f" % (b["size"], b["helper_us"], b["vfio_us"],
                               b["helper_over_vfio"]))
    bad = [l for l in dmesg.splitlines()
           if re.search(r"WARNING|BUG:|Oops|Call Trace|gpup2p.*unmapped",
                        l)]
    t.eq(bad, [], "the kernel log has no WARN, BUG or Oops")


if __name__ == "__main__":
    Tap().run(test)
