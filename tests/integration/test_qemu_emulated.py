#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""iommufd's emulated type1 container on a real kernel: the Linux 7.x
virtual host rebuilt with CONFIG_IOMMUFD_VFIO_CONTAINER=y and
VFIO_CONTAINER=n (tests/vhost/build-linux-emulated.sh), so that QEMU's
legacy container path opens iommufd's /dev/vfio/vfio. Judged by the
kernel: a nested guest's edu DMA to ivshmem's BAR, through our QEMU and
through Debian's QEMU 11.1, must not arrive (the emulation cannot pin a
BAR's mmap), while its DMA from RAM works; with an explicit id and
x-gpu-p2p-verify=warn the capability is kept and VFIO's map of the BAR
fails, as any unchecked id would give. Our QEMU's gate (auto: no
capability; explicit: refused) and `gpup2p check --domain` (not mapped,
both QEMUs) must agree with that."""

import os
import re

from dma_judge import N, dmar_faults, kernel_problems
from taplib import (Tap, built, config_at_boot, our_qemu, qemu_vhost_env,
                    vhost_run, read_text as read, load_result, run_failure,
                    PROJECT)
BUILD = os.path.join(PROJECT, "tests", "vhost", "build-linux-emulated.sh")
STOCK_NEWER = os.path.join(PROJECT, "tests", "vhost", "stock-qemu-newer.sh")
REASON = "/dev/vfio/vfio is iommufd's emulated type1 container"



def test(t):
    cache = built(t, BUILD, "the virtual host's kernel with iommufd's "
                  "emulated container is built")
    stock = cache and built(t, STOCK_NEWER, "Debian's QEMU 11.1 is at hand")
    if not stock:
        return
    qemu = our_qemu()
    env = qemu_vhost_env(cache, qemu, stock)
    # The host tool and the facts read the kernel's config: the build's.
    config = os.path.join(os.path.realpath(cache), "config")
    rc, out, err, outdir = vhost_run(
        "backends.json",
        "%s%s sh tests/integration/qemu_p2p_dma.sh emulated; "
        "%s python3 tests/integration/inner_backends.py emulated; "
        "python3 tests/integration/inner_gate.py %s %s emulated; "
        "dmesg > $VHOST_OUT/dmesg-end.txt"
        % (config_at_boot(config), env, env, qemu, stock),
        timeout=1200, retry_host_death=True)
    if not t.ok(rc == 0, "the scenarios ran in the virtual host",
                run_failure(rc, out, err)):
        return
    res = load_result(outdir, "emulated.json")
    facts = res.get("facts", {})
    t.ok(res.get("kernel", "").startswith("7."), "the virtual host runs "
         "Linux 7.x", res.get("kernel"))
    t.ok("CONFIG_IOMMUFD_VFIO_CONTAINER=y" in facts.get("config", []) and
         "# CONFIG_VFIO_CONTAINER is not set" in facts.get("config", []),
         "its kernel builds iommufd's emulated container, not VFIO's", facts)
    t.ok(facts.get("type1_modprobe_rc") not in (None, 0) and
         facts.get("type1_loaded") is False and
         facts.get("vfio_node") is True,
         "no vfio_iommu_type1 can load, and /dev/vfio/vfio is there", facts)

    # The kernel's answer: the nested guest's DMA, and the IOMMU's faults
    # while each guest ran.
    mem = open(os.path.join(outdir, "shm0.mem"), "rb").read()
    for name, off, qname in (("emulated-ours", 0x9000, "our QEMU"),
                             ("emulated-stock", 0xa000,
                              "Debian's QEMU 11.1")):
        r = load_result(outdir, name + ".json")
        ran = (read(outdir, name + ".rc") == "0" and r.get("to_edu") == 1 and
               r.get("to_peer") == 1 and
               int(r.get("peer_gpa", "0"), 16) >= 0x100000 + off)
        t.ok(ran, "%s on the emulated container: the nested guest ran, its "
             "DMA from RAM works and its DMA to the peer BAR's GPA "
             "completed" % qname, str(r) + read(outdir, name + ".err")[-2000:])
        dmesg = read(outdir, name + ".dmesg")
        t.ok(ran and mem[off:off + N] == bytes(N) and
             dmar_faults(dmesg, int(r["peer_gpa"], 16)),
             "%s: the bytes never arrive, and the virtual host's IOMMU "
             "faults on the peer BAR's GPA" % qname, dmesg[-2000:])
    end = read(outdir, "dmesg-end.txt")
    t.ok("IOMMUFD is providing /dev/vfio/vfio, not VFIO" in end,
         "the kernel says so itself: iommufd provides /dev/vfio/vfio",
         end[-2000:])
    t.eq(kernel_problems(end), [],
         "the kernel log has no WARN, BUG or Oops at the end")

    # Our QEMU's gate against it.
    c = res.get("auto", {})
    t.ok(c.get("in_effect") == {"g0": -1, "g1": -1},
         "our QEMU, auto: no capability", c)
    t.ok("would fault: " + REASON in c.get("stderr", "") and
         str((c.get("bar_maps") or {}).get("g0")).startswith(
             "none: " + REASON),
         "and its warning and x-gpu-p2p-bar-maps say why", c)
    c = res.get("auto-noconfig", {})
    t.ok(c.get("in_effect") == {"g0": -1, "g1": -1} and
         "would fault: " + REASON + " (a VFIO container is open, and "
         "sys/module has iommufd but not vfio_iommu_type1)" in
         c.get("stderr", ""),
         "our QEMU, auto, no kernel config readable: no capability, proven "
         "from the open container and sys/module", c)
    c = res.get("explicit", {})
    t.ok(not c.get("started") and "lacks peer-to-peer DMA mapping" in
         c.get("stderr", ""),
         "our QEMU, explicit id: refused with the reason", c)
    c = res.get("explicit-warn", {})
    caps = c.get("caps") or {}
    t.ok(c.get("in_effect") == {"g0": 2, "g1": 2} and
         all(any(cid == 9 for _, cid in caps.get(g, [])) for g in
             ("g0", "g1")),
         "explicit id, verify=warn: the capability is given, as without "
         "the gate", c)
    # QEMU reports the first failed map itself (once a process); each
    # failed map's errno, the kernel's, is in the extension's record.
    err = c.get("stderr", "")
    t.ok(re.search(r"vfio_container_dma_map\([^)]*, 0xc[02]000000, "
                   r"0x1000000, [^)]*\) = -14 \(Bad address\)", err),
         "and VFIO refuses to map a BAR where the guest put it: EFAULT, "
         "as QEMU reports it", err)
    refused = re.findall(r"at 0x(c[02])000000 is not mapped by type1 "
                         r"\(vfio_container_dma_map\([^)]*\) = -14 "
                         r"\(Bad address\)\)", err)
    t.ok(sorted(set(refused)) == ["c0", "c2"], "and each GPU's BAR0 is "
         "refused so", err)

    # The host tool: not mapped, for both QEMUs, as the DMA says.
    gate = load_result(outdir, "gate-emulated.json")
    for name in ("emulated-ours", "emulated-stock"):
        c = gate.get(name, {})
        t.ok(c.get("rc") == 5 and c.get("verdict") == "fail" and
             set((c.get("gpus") or {}).values()) == {"not mapped"} and
             REASON in (c.get("detail") or ""),
             "check --domain, %s: not mapped, naming the emulated "
             "container" % name, c)


if __name__ == "__main__":
    Tap().run(test)
