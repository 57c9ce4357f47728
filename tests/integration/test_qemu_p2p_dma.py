#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""P2P DMA inside a nested guest, judged by VFIO's own behaviour: edu
writes to ivshmem's BAR at its guest-physical address and the bytes arrive
in the backing file outside through the mapping QEMU's type1 listener makes
of the peer BAR; with the BAR not mmapped (x-no-mmap=on) there is no such
mapping, the virtual host's IOMMU faults and nothing arrives."""

import os
import re

from taplib import (Tap, prepare, vhost_run, read_text as read, load_json,
                    run_failure, PROJECT)

N = 4096


def pattern(seed):
    return bytes((i * 7 + seed) & 0xff for i in range(N))


def test(t):
    prepare()
    qemu = os.environ.get("GPUP2P_QEMU", os.path.join(
        PROJECT, "build", "qemu", "qemu-system-x86_64"))
    cache = os.environ.get("VHOST_CACHE", os.path.join(PROJECT, "build",
                                                       "vhost"))
    rc, out, err, outdir = vhost_run(
        "kernel-helper.json",
        "GPUP2P_QEMU=%s VHOST_CACHE=%s VHOST_INNER_CACHE=%s "
        "sh tests/integration/qemu_p2p_dma.sh"
        % (qemu, cache, os.environ.get("VHOST_INNER_CACHE", cache)),
        timeout=900, retry_host_death=True)
    if not t.ok(rc == 0, "the scenario ran in the virtual host",
                run_failure(rc, out, err)):
        return
    mem = open(os.path.join(outdir, "shm0.mem"), "rb").read()

    t.eq(read(outdir, "vmm.rc"), "0", "nested guest, VMM mapping: ran")
    d = load_json(os.path.join(outdir, "vmm.json"))
    t.eq(d.get("to_peer"), 1, "edu's DMA to the peer BAR's GPA completed")
    t.eq(mem[0x4000:0x4000 + N] == pattern(11), True,
         "the bytes arrived in ivshmem's backing file")

    t.eq(read(outdir, "nommap.rc"), "0", "nested guest, no mmap: ran")
    t.eq(mem[0x5000:0x5000 + N], bytes(N),
         "control: without the peer BAR's mapping nothing arrives")
    faults = [l for l in read(outdir, "dmesg.txt").splitlines()
              if "DMAR" in l and "fault" in l.lower()]
    t.ok(len(faults) > 0, "and the virtual host's IOMMU reports the fault",
         read(outdir, "dmesg.txt")[-2000:])
    bad = [l for l in read(outdir, "dmesg.txt").splitlines()
           if re.search(r"WARNING|BUG:|Oops|Call Trace", l)]
    t.eq(bad, [], "the kernel log has no WARN, BUG or Oops")


if __name__ == "__main__":
    Tap().run(test)
