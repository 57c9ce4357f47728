#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""P2P DMA inside a nested guest: edu writes to ivshmem's BAR at its
guest-physical address and the bytes arrive in the backing file outside,
first through the VMM's own BAR mapping, then with the VMM's mapping
withheld and the kernel helper making it (x-gpu-p2p-bar-mapper=helper)."""

import os
import re

from taplib import Tap, prepare, vhost_run, read_text as read, load_json

N = 4096


def pattern(seed):
    return bytes((i * 7 + seed) & 0xff for i in range(N))


def test(t):
    prepare()
    rc, out, err, outdir = vhost_run("kernel-helper.json",
                                     "sh tests/integration/qemu_p2p_dma.sh",
                                     timeout=900)
    if not t.ok(rc == 0, "the scenario ran in the virtual host", out + err):
        return
    mem = open(os.path.join(outdir, "shm0.mem"), "rb").read()

    t.ok(read(outdir, "helper-missing.rc") != "0" and
         "/dev/gpup2p" in read(outdir, "helper-missing.err"),
         "bar-mapper=helper without the module: QEMU refuses to start",
         read(outdir, "helper-missing.err")[-1500:])

    t.eq(read(outdir, "vmm.rc"), "0", "nested guest, VMM mapping: ran")
    d = load_json(os.path.join(outdir, "vmm.json"))
    t.eq(d.get("to_peer"), 1, "edu's DMA to the peer BAR's GPA completed")
    t.eq(mem[0x4000:0x4000 + N] == pattern(11), True,
         "VMM mapping: the bytes arrived in ivshmem's backing file")
    t.eq(read(outdir, "vmm.helper-mappings"), "0",
         "VMM mapping: the helper held no mapping")

    t.eq(read(outdir, "helper.rc"), "0", "nested guest, helper mapping: ran")
    d = load_json(os.path.join(outdir, "helper.json"))
    t.eq(d.get("to_peer"), 1, "edu's DMA to the peer BAR's GPA completed")
    t.eq(mem[0x5000:0x5000 + N] == pattern(12), True,
         "helper mapping: the bytes arrived in ivshmem's backing file")
    t.ok(int(read(outdir, "helper.helper-mappings") or 0) >= 1,
         "the helper held the peer BAR's mapping while the guest ran",
         read(outdir, "helper.helper-mappings"))
    t.eq(read(outdir, "audit.rc"), "0", "nested guest, VMM mapping + audit")
    t.eq(mem[0x7000:0x7000 + N] == pattern(14), True,
         "audit run: the bytes arrived")
    log = read(outdir, "audit/qemu-output.log")
    t.ok(re.search(r"vfio_gpu_p2p_audit .*BAR 2 for .*: ok", log) is not None,
         "x-gpu-p2p-audit checked the VMM's mapping of the peer BAR: ok",
         log[-2000:])
    t.ok("will fault" not in log, "and did not warn")
    t.eq(load_json(os.path.join(outdir, "mappings-after.json")), [],
         "QEMU's exit left no mapping")
    t.eq(read(outdir, "rmmod.rc"), "0", "the module unloads afterwards")
    bad = [l for l in read(outdir, "dmesg.txt").splitlines()
           if re.search(r"WARNING|BUG:|Oops|Call Trace", l)]
    t.eq(bad, [], "the kernel log has no WARN, BUG or Oops")


if __name__ == "__main__":
    Tap().run(test)
