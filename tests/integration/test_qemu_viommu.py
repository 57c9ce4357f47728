#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A vIOMMU in the VM, on a real kernel (the virtual host, Linux 6.12):
the guest's own IOMMU decides what its devices reach, and QEMU shadows
the guest's maps into the container (caching mode). Judged by the nested
guest's DMA (tests/kernel/guest-viommu-dma.c): edu writes to the peer's
guest-physical address, which reaches it without a vIOMMU, and nothing
arrives (the virtual host's IOMMU faults on it); to the IOVA where the
guest mapped a page of ivshmem's BAR, and the bytes arrive, through our
QEMU and through Debian's QEMU 11.1; to that IOVA once the guest
unmapped it, and nothing arrives. With x-no-mmap the guest's map reaches
QEMU, which has nothing to map, and the write faults.

So the gates' answers: a vIOMMU alone is an unknown (the guest decides;
a warning, the capability kept), x-no-mmap under a vIOMMU stays proven
(no capability with auto, an explicit id refused) in our QEMU, and
`gpup2p check --domain` gives the same for our QEMU and for stock QEMU.

Not the 7.x virtual host: there nested KVM (Linux 6.14 on) refuses to
emulate the nested guest's writes to the vIOMMU's registers when they
follow an injected event, which the outer TCG leaves in EXITINTINFO
("KVM internal error. Suberror: 3", docs/testbed.md). iommufd's
dma-buf path behind a vIOMMU needs that kernel: test_qemu_viommu_iommufd.py
judges it there, its nested guests' own DMA kept off the vIOMMU."""

import os
import re

from dma_judge import N, pattern, dmar_faults, kernel_problems
from taplib import (Tap, built, prepare, our_qemu, qemu_vhost_env,
                    vhost_run, read_text as read, load_result, run_failure,
                    PROJECT)
STOCK_NEWER = os.path.join(PROJECT, "tests", "vhost", "stock-qemu-newer.sh")
# What each nested guest ran (qemu_p2p_dma.sh viommu): its offset in
# ivshmem's BAR and pattern seed.
GUESTS = {"viommu": (0x4000, 31), "viommu-nommap": (0x6000, 32),
          "viommu-stock": (0x8000, 33)}
GUEST_RAM = 512 << 20       # vhost.py inner's default
NOMMAP = "x-no-mmap=on: its BARs are not mmapped"
VIOMMU = "a vIOMMU in the VM (intel-iommu)"


def shadow_errors(log, guest_iovas):
    """QEMU's errors on shadowing the guest's maps: "iommu map to non
    memory area", and each failed map (vfio_container_dma_map) that
    covers one of @guest_iovas or spans more than a page. Where the guest
    has not turned its IOMMU's translation on, or uses identity domains
    (iommu=pt), QEMU maps each BAR at its GPA; QEMU 11.1 on iommufd then
    fails on one smaller than a page (no dma-buf for it, a page's map
    from its mmap), which is no map of the guest's."""
    errors = re.findall(r"iommu map to non memory area.*", log)
    for m in re.finditer(r"vfio_container_dma_map\(\S+, 0x([0-9a-f]+), "
                         r"0x([0-9a-f]+),.*", log):
        iova, size = int(m.group(1), 16), int(m.group(2), 16)
        if size > 0x1000 or any(iova <= g < iova + size
                                for g in guest_iovas):
            errors.append(m.group(0))
    return errors


def guest_dma(t, outdir, mem, edu, name, arrives, off=None, seed=None,
              refusal=None):
    """The nested guest @name's writes (tests/kernel/guest-viommu-dma.c)
    at @off with @seed (GUESTS' by default):
    to the peer's GPA, which the guest's IOMMU does not map (never
    arrives, faults); to the page the guest mapped at its IOVA (arrives,
    or with @arrives False faults like the first); to that IOVA after the
    guest unmapped it, another pattern (never arrives, faults). Where
    nothing arrives, QEMU's log must hold its own error for that page:
    @refusal, a pattern (x-no-mmap's by default)."""
    if off is None:
        off, seed = GUESTS[name]
    r = load_result(outdir, name + ".json")
    iova = int(r.get("iova_peer", "0"), 16) + off
    gpa = int(r.get("peer_gpa", "0"), 16) + off + N
    # With the peer left unmapped by QEMU (arrives False) the guest keeps
    # its map: that write must fault on its own, not beside a revoked one.
    revoke = [("revoke", True), ("unmapped_bytes", N), ("to_edu_again", 1),
              ("to_peer_unmapped", 1)] if arrives else [
        ("revoke", False), ("unmapped_bytes", 0), ("to_edu_again", 0),
        ("to_peer_unmapped", 0)]
    ran = (read(outdir, name + ".rc") == "0" and
           all(r.get(k) == 0 for k in ("map_src", "map_peer")) and
           all(r.get(k) == 1 for k in ("to_edu", "to_peer_gpa", "to_peer")) and
           all(r.get(k) == v for k, v in revoke) and
           r.get("offset") == "0x%x" % off and r.get("seed") == seed and
           r.get("edu_group", -1) >= 0 and r.get("ivshmem_group", -1) >= 0 and
           int(r.get("iova_src", "0"), 16) >= GUEST_RAM and
           GUEST_RAM <= iova < gpa - N - off)
    t.ok(ran, "%s: the nested guest's IOMMU groups its devices, it maps "
         "its RAM and one page of the peer's BAR at IOVAs that are no GPA%s, "
         "and all of edu's DMA completed" % (
             name, ", then unmaps that page" if arrives else ""),
         str(r) + read(outdir, name + ".err")[-2000:])
    dmesg = read(outdir, name + ".dmesg")
    # Each pattern reached edu's buffer: no fault on the RAM's IOVA (a
    # read that faulted would leave the buffer as it was).
    t.ok(ran and not dmar_faults(dmesg, int(r["iova_src"], 16)),
         "%s: edu read its RAM buffer through the guest's IOMMU each time, "
         "no fault" % name, dmesg[-2000:])
    t.ok(ran and mem[off + N:off + 2 * N] == bytes(N) and
         dmar_faults(dmesg, gpa, edu),
         "%s: a write to the peer's GPA, which reaches it without a vIOMMU, "
         "never arrives, and the virtual host's IOMMU faults on it" % name,
         dmesg[-2000:])
    if arrives:
        t.ok(ran and mem[off:off + N] == pattern(seed) and
             dmar_faults(dmesg, iova, edu),
             "%s: the write to the page the guest mapped arrives in "
             "ivshmem's backing file; once the guest unmapped it, the next "
             "pattern never arrives and the IOMMU faults on that IOVA"
             % name, dmesg[-2000:])
        log = read(os.path.join(outdir, name), "qemu-output.log")
        t.ok(ran and not shadow_errors(log, [int(r["iova_src"], 16),
                                             iova]),
             "%s: QEMU shadowed every map of the guest without an error"
             % name, log[-2000:])
    else:
        t.ok(ran and mem[off:off + N] == bytes(N) and
             dmar_faults(dmesg, iova, edu),
             "%s: the guest's map changes nothing: the write never arrives "
             "and the IOMMU faults on its IOVA" % name, dmesg[-2000:])
        # QEMU names the offset in the region the guest's map reached.
        log = read(os.path.join(outdir, name), "qemu-output.log")
        t.ok(ran and re.search(refusal or
                               r"iommu map to non memory area %x\b" % off,
                               log),
             "%s: QEMU could not shadow the guest's map of that page (its "
             "own error)" % name, log[-2000:])
    return r


def test(t):
    prepare()
    cache = os.environ.get("VHOST_CACHE", os.path.join(PROJECT, "build",
                                                       "vhost"))
    stock = built(t, STOCK_NEWER, "Debian's QEMU 11.1 is at hand")
    if not stock:
        return
    qemu = our_qemu()
    env = qemu_vhost_env(cache, qemu, stock)
    rc, out, err, outdir = vhost_run(
        "backends.json",
        "%s sh tests/integration/qemu_p2p_dma.sh viommu; "
        "%s python3 tests/integration/inner_backends.py viommu; "
        "python3 tests/integration/inner_gate.py %s %s viommu; "
        "dmesg > $VHOST_OUT/dmesg-end.txt"
        % (env, env, qemu, stock), timeout=1200, retry_host_death=True)
    if not t.ok(rc == 0, "the scenarios ran in the virtual host",
                run_failure(rc, out, err)):
        return
    mem = open(os.path.join(outdir, "shm0.mem"), "rb").read()

    # The kernel's answer: the guest's IOMMU decides; x-no-mmap leaves
    # QEMU nothing to shadow its map with.
    edu = read(outdir, "edu-bdf")
    for name, arrives in (("viommu", True), ("viommu-nommap", False),
                          ("viommu-stock", True)):
        guest_dma(t, outdir, mem, edu, name, arrives)
    t.eq(kernel_problems(read(outdir, "dmesg-end.txt")), [],
         "the kernel log has no WARN, BUG or Oops at the end")

    # Our QEMU's gate agrees: an unknown behind a vIOMMU, x-no-mmap proven.
    res = load_result(outdir, "viommu-cases.json")
    release = re.match(r"(\d+)\.(\d+)", res.get("kernel", ""))
    t.ok(release and (int(release.group(1)), int(release.group(2))) < (6, 14),
         "the virtual host ran a kernel before 6.14, whose KVM emulates the "
         "nested guest's vIOMMU registers (docs/testbed.md)",
         res.get("kernel"))
    c = res.get("auto", {})
    t.ok(c.get("in_effect") == {"g0": 0, "g1": 0} and
         c.get("stderr", "").count("may fault: " + VIOMMU) == 2,
         "auto: both GPUs keep the capability, with a warning naming the "
         "vIOMMU", c)
    c = res.get("nommap-auto", {})
    t.ok(c.get("in_effect") == {"g0": 0, "g1": -1} and
         NOMMAP in c.get("stderr", ""),
         "auto, x-no-mmap on g1: no capability for it, the reason named", c)
    c = res.get("nommap-explicit", {})
    t.ok(not c.get("started") and NOMMAP in c.get("stderr", ""),
         "explicit id, x-no-mmap on g1: refused, the reason named", c)

    # The host tool: the same answers from the domain.
    gate = load_result(outdir, "gate-viommu.json")
    g0, g1 = (gate.get("gpus") or ["?", "?"])[:2]
    for case in ("viommu-ours", "viommu-stock"):
        c = gate.get(case, {})
        t.ok(c.get("verdict") == "untested" and c.get("rc") == 6 and
             c.get("gpus") == {g0: "unknown", g1: "unknown"} and
             VIOMMU.replace("intel-iommu", "<iommu model='intel'>") in
             (c.get("detail") or ""),
             "check --domain, %s: unknown for both GPUs, naming the vIOMMU, "
             "and the item untested (exit 6)" % case, c)
    for case in ("viommu-nommap", "viommu-stock-nommap"):
        c = gate.get(case, {})
        t.ok(c.get("verdict") == "fail" and c.get("rc") == 5 and
             c.get("gpus") == {g0: "unknown", g1: "not mapped"} and
             "x-no-mmap" in (c.get("detail") or ""),
             "check --domain, %s: x-no-mmap on g1 under a vIOMMU: fail "
             "(exit 5), g1 not mapped, g0 unknown" % case, c)


if __name__ == "__main__":
    Tap().run(test)
