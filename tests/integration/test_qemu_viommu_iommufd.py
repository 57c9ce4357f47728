#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A vIOMMU in the VM on iommufd, on a real kernel (the Linux 7.x virtual
host, CONFIG_VFIO_PCI_DMABUF): the nested guest maps a page of the
peer's BAR in its own IOMMU and edu writes to that IOVA, as in
test_qemu_viommu.py. Judged by the guest's DMA (ivshmem's backing file,
the virtual host's IOMMU faults) and by QEMU's own trace of each IOAS map:

- Debian's QEMU 11.1 shadows the guest's map from the BAR's dma-buf and
  the bytes arrive; after the guest's unmap nothing does;
- our QEMU 10.0 has only the BAR's mmap, which iommufd cannot pin: its
  map fails (EFAULT) and nothing arrives;
- Debian's QEMU 11.1 with x-no-mmap has nothing to map: nothing arrives.

So the gates' answers: Debian's QEMU 11.1 behind a vIOMMU is an unknown
(the guest decides; `gpup2p check --domain` untested), our QEMU on
iommufd stays proven not mapped (no capability with auto, an explicit id
refused, check --domain not mapped), and x-no-mmap stays proven.

Nested KVM on Linux 6.14 and later may refuse to emulate the nested
guest's MMIO write to the vIOMMU ("KVM internal error. Suberror: 3",
docs/testbed.md), and a nested guest here sometimes resets in early boot;
qemu_p2p_dma.sh boots such a guest again with a new seed at a new page,
at most five boots, and each death is named and counted here, with what
it left in the BAR. Behind the vIOMMU QEMU
gives each device an IOAS of its own, and the guest's container holds
both devices, so each map of the guest's reaches both IOASes."""

import os
import re

from dma_judge import N, pattern, kernel_problems
from taplib import (Tap, built, config_at_boot, our_qemu, qemu_vhost_env,
                    vhost_run, read_text as read, load_result, run_failure,
                    PROJECT)
from test_qemu_viommu import guest_dma, VIOMMU, NOMMAP

BUILD_LINUX = os.path.join(PROJECT, "tests", "vhost", "build-linux.sh")
STOCK_NEWER = os.path.join(PROJECT, "tests", "vhost", "stock-qemu-newer.sh")
SUBERROR = "KVM internal error. Suberror: 3"
EARLY = "the guest ended before the command started"
BOOTS = 5       # at most, per nested guest (qemu_p2p_dma.sh's TRIES)
IOMMUFD = "the iommufd backend"
IOVA_PEER = 0x40000000      # guest-viommu-dma.c's
# What each nested guest ran: its QEMU ("ours" or "stock"), its first
# boot's offset in ivshmem's BAR (boot N: N - 1 MiB further), whether the
# bytes may arrive, and QEMU's own refusal of the guest's map at offset
# OFF where they may not.
GUESTS = {
    "viommu-iommufd": ("stock", 0xa000, True, None),
    "viommu-iommufd-ours": (
        "ours", 0xc000, False, lambda off:
        r"vfio_container_dma_map\(0x[0-9a-f]+, 0x%x, 0x1000, 0x[0-9a-f]+\) "
        r"= -14 \(Bad address\)" % (IOVA_PEER + off)),
    "viommu-iommufd-nommap": ("stock", 0xe000, False, lambda off:
                              r"iommu map to non memory area %x\b" % off),
}
MIB = 0x100000


def map_traces(log, iova, from_file=None):
    """QEMU's trace lines of one-page IOAS maps at @iova (-trace
    iommufd_backend_map_dma / _map_file_dma): (IOAS, return value) pairs,
    from the file at (fd, offset) @from_file where that is given, else
    from memory."""
    if from_file is None:
        kind, source = "map_dma", r"addr=0x[0-9a-f]+"
    else:
        kind, source = "map_file_dma", r"fd=%d start=%d" % from_file
    return re.findall(r"^iommufd_backend_%s +iommufd=\d+ ioas=(\d+) "
                      r"iova=0x%x size=0x1000 %s readonly=0 \((-?\d+)\)$"
                      % (kind, iova, source), log, re.M)


def bar_dmabufs(log, host, bar):
    """The file descriptors of the dma-bufs QEMU made for @host's BAR
    @bar (-trace vfio_region_dmabuf; again where the BAR was set up
    again)."""
    return [int(fd) for fd in re.findall(
        r"^vfio_region_dmabuf Device %s, dmabuf fd (\d+) region %d \"%s "
        r"BAR %d\"" % (re.escape(host), bar, re.escape(host), bar), log,
        re.M)]


def death(outdir, name):
    """Why the boot kept as @name ended, where qemu_p2p_dma.sh boots a
    guest again for it: nested KVM stopped it before its command's
    status, or it ended before its command started (QEMU exit 0) with no
    panic on its console; else None."""
    err = read(outdir, name + ".err")
    if os.path.exists(os.path.join(outdir, name, "rc")):
        return None
    if re.search(r"the guest stopped: %s; killed its emulator$"
                 % re.escape(SUBERROR), err, re.M):
        return SUBERROR
    console = read(os.path.join(outdir, name), "console.log")
    if EARLY + " (QEMU exit 0)" in err and not re.search(
            r"Kernel panic|BUG:|Oops|Call Trace", console):
        return EARLY
    return None


def boots(t, outdir, mem, name, base, arrives):
    """The boots @name took: each one before the last must have ended for
    a reason of nested KVM's, not ours (death()), and left in ivshmem's
    BAR only what a boot of that guest may: at its own page (@base + N - 1
    MiB for boot N) nothing, or with @arrives its own pattern (never the
    pattern it writes after the guest's unmap), and nothing at the page
    after, which it wrote at the GPA. They are named aloud."""
    n = read(outdir, name + ".boots")
    died = ["%s.died%d" % (name, i)
            for i in range(1, int(n) if n.isdigit() else 1)]
    why = [death(outdir, d) for d in died]
    t.ok(n.isdigit() and 1 <= int(n) <= BOOTS and all(why),
         "%s: %s boot(s) of at most %d, each one before the last stopped "
         "by nested KVM or ended before its command started, without a "
         "panic" % (name, n, BOOTS),
         "\n".join("%s: %s" % (d, read(outdir, d + ".err")[-600:])
                    for d in died))
    left = []
    for i, d in enumerate(died):
        off = base + i * MIB
        seed = read(outdir, d + ".seed")
        page, after = mem[off:off + N], mem[off + N:off + 2 * N]
        if not (read(outdir, d + ".offset") == "0x%x" % off and
                seed.isdigit() and after == bytes(N) and
                (page == bytes(N) or
                 arrives and page == pattern(int(seed)))):
            left.append("%s: offset %s, seed %s, its page %s..., the next "
                        "%s..." % (d, read(outdir, d + ".offset"), seed,
                                   page[:8].hex(), after[:8].hex()))
    t.eq(left, [], "%s: each boot before the last left in the BAR at most "
         "what a boot of it may" % name)
    for d, w in zip(died, why):
        console = os.path.join(outdir, d, "console.log")
        last = (read(os.path.join(outdir, d), "console.log").splitlines()
                if os.path.exists(console) else [])[-1:]
        t.diag("%s: %s; booted again (%s)" % (
            d, w, "its console's last line: " + last[0] if last else
            "nothing on its console"))
    return int(n) if n.isdigit() else 1


def test(t):
    cache = os.environ.get("VHOST_CACHE_7X") or built(
        t, BUILD_LINUX, "the Linux 7.x virtual host's kernel is built")
    stock = cache and built(t, STOCK_NEWER, "Debian's QEMU 11.1 is at hand")
    if not stock:
        return
    qemu = our_qemu()
    env = qemu_vhost_env(cache, qemu, stock)
    # The host tool reads the kernel's config: the build's own.
    config = os.path.join(os.path.realpath(cache), "obj", ".config")
    rc, out, err, outdir = vhost_run(
        "backends.json",
        "%s%s sh tests/integration/qemu_p2p_dma.sh viommu-iommufd %d; "
        "%s python3 tests/integration/inner_backends.py viommu-iommufd; "
        "python3 tests/integration/inner_gate.py %s %s viommu-iommufd; "
        "dmesg > $VHOST_OUT/dmesg-end.txt"
        % (config_at_boot(config), env, BOOTS, env, qemu, stock),
        timeout=1500,
        retry_host_death=True)
    if not t.ok(rc == 0, "the scenarios ran in the virtual host",
                run_failure(rc, out, err)):
        return
    res = load_result(outdir, "viommu-iommufd-cases.json")
    t.ok(res.get("kernel", "").startswith("7."),
         "the virtual host ran Linux 7.x", res.get("kernel"))
    t.ok("CONFIG_VFIO_PCI_DMABUF=y" in open(config).read().splitlines(),
         "its kernel offers VFIO's BARs as dma-bufs "
         "(CONFIG_VFIO_PCI_DMABUF=y)")

    # The kernel's answer, and QEMU's account of each map.
    mem = open(os.path.join(outdir, "shm0.mem"), "rb").read()
    edu = read(outdir, "edu-bdf")
    for name, (which, base, arrives, refusal) in GUESTS.items():
        off = base + (boots(t, outdir, mem, name, base, arrives) - 1) * MIB
        cmdline = read(os.path.join(outdir, name), "qemu-cmdline")
        t.ok(cmdline.startswith((qemu if which == "ours" else stock) + " ")
             and ",iommufd=iommufd0" in cmdline and "iommu=pt" in cmdline,
             "%s: the nested guest ran on %s QEMU, iommufd, the guest's "
             "own DMA in identity domains" % (name, which), cmdline[:300])
        seed = read(outdir, name + ".seed")
        t.eq(read(outdir, name + ".offset"), "0x%x" % off,
             "%s: its last boot wrote at offset 0x%x" % (name, off))
        guest_dma(t, outdir, mem, edu, name, arrives, off,
                  int(seed) if seed.isdigit() else -1,
                  refusal(off) if refusal else None)
        log = read(os.path.join(outdir, name), "qemu-output.log")
        iova = IOVA_PEER + off
        src = int(load_result(outdir, name + ".json").get("iova_src", "0"),
                  16)
        if name == "viommu-iommufd":
            m = re.search(r"vfio-pci,host=(\S+?),bus=rp1", cmdline)
            fds = bar_dmabufs(log, m.group(1) if m else "?", 2)
            maps = [x for fd in fds for x in map_traces(log, iova, (fd, off))]
            t.ok(fds and len(maps) == 2 and
                 len({m[0] for m in maps}) == 2 and
                 all(m[1] == "0" for m in maps),
                 "%s: QEMU mapped the guest's page at 0x%x from offset 0x%x "
                 "of a dma-buf it made for ivshmem's BAR2 into both "
                 "devices' IOASes (its trace)" % (name, iova, off),
                 log[-2000:])
        elif name == "viommu-iommufd-ours":
            maps = map_traces(log, iova)
            t.ok(len(maps) == 2 and all(m[1] == "-1" for m in maps),
                 "%s: the kernel refused QEMU's map of the BAR's mmap at "
                 "0x%x into each IOAS (its trace)" % (name, iova),
                 log[-2000:])
        else:
            t.ok(map_traces(log, src) and all(
                m[1] == "0" for m in map_traces(log, src)) and
                 not map_traces(log, iova) and
                 not re.search(r"iommufd_backend_map\S* .* iova=0x%x " % iova,
                               log),
                 "%s: QEMU mapped the guest's RAM page at 0x%x and made no "
                 "IOAS map at 0x%x (its trace)" % (name, src, iova),
                 log[-2000:])
    t.eq(kernel_problems(read(outdir, "dmesg-end.txt")), [],
         "the kernel log has no WARN, BUG or Oops at the end")

    # Our QEMU's gate: the vIOMMU's unknown gives way to iommufd's proof.
    c = res.get("auto", {})
    t.ok(c.get("in_effect") == {"g0": -1, "g1": -1} and
         c.get("stderr", "").count("no capability: P2P writes to it would "
                                   "fault: " + IOMMUFD) == 2 and
         VIOMMU not in c.get("stderr", ""),
         "our QEMU, auto: no capability for either GPU, the reason iommufd, "
         "not the vIOMMU", c)
    c = res.get("explicit", {})
    t.ok(not c.get("started") and
         "would fault: " + IOMMUFD in c.get("stderr", ""),
         "our QEMU, explicit id: refused, the reason iommufd", c)

    # The host tool from the domains: the same answers.
    gate = load_result(outdir, "gate-viommu-iommufd.json")
    g0, g1 = (gate.get("gpus") or ["?", "?"])[:2]
    viommu = VIOMMU.replace("intel-iommu", "<iommu model='intel'>")
    for case, verdict, rc, gpus, why, what in (
            ("viommu-iommufd-ours", "fail", 5, ("not mapped", "not mapped"),
             "our QEMU (10.0)", "our QEMU: not mapped for both GPUs (exit "
             "5), the reason iommufd on QEMU 10.0"),
            ("viommu-iommufd-stock", "untested", 6, ("unknown", "unknown"),
             viommu, "Debian's QEMU 11.1: unknown for both GPUs, naming "
             "the vIOMMU, and the item untested (exit 6)"),
            ("viommu-iommufd-stock-nommap", "fail", 5,
             ("unknown", "not mapped"), NOMMAP, "Debian's QEMU 11.1, "
             "x-no-mmap on g1: fail (exit 5), g1 not mapped, g0 unknown")):
        c = gate.get(case, {})
        t.ok(c.get("verdict") == verdict and c.get("rc") == rc and
             c.get("gpus") == {g0: gpus[0], g1: gpus[1]} and
             why in (c.get("detail") or ""), "check --domain, " + what, c)


if __name__ == "__main__":
    Tap().run(test)
