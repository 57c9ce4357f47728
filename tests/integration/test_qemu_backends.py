#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The VFIO backends on the Linux 7.x virtual host (Debian's 7.x with
iommufd and the vfio cdev on: tests/vhost/build-linux.sh), judged by DMA
and by VFIO's own answers:

- type1: a nested guest's edu DMA to ivshmem's BAR arrives through the
  mapping QEMU's listener makes; with x-no-mmap=on it faults.
- iommufd (-object iommufd, vfio cdev): this QEMU (10.0) maps a BAR into
  the IOAS from its mmap, which the kernel refuses, so the same DMA faults
  and nothing arrives; Debian's stock QEMU 11.1 (tests/vhost/
  stock-qemu-newer.sh, or GPUP2P_QEMU_DMABUF; empty: none) exports the BAR
  as a dma-buf into the IOAS, and the bytes arrive.
- the capability gate: auto gives no capability and an explicit id is
  refused where peers' writes would fault (iommufd here, x-no-mmap=on;
  iommufd's emulated container: test_qemu_emulated.py); behind a guest vIOMMU
  (unknown) both keep the capability with a warning;
  x-gpu-p2p-bar-maps shows what the listener did, a BAR beyond the IOMMU's
  reach included; the gpup2p machine type gives auto by default.

The kernel is built once per machine (minutes to an hour); VHOST_CACHE_7X
names another build."""

import os
import re

from dma_judge import N, pattern, dmar_faults, kernel_problems
from taplib import (Tap, built, config_at_boot, our_qemu, qemu_vhost_env,
                    vhost_run, read_text as read, load_result, run_failure,
                    PROJECT)
BUILD_LINUX = os.path.join(PROJECT, "tests", "vhost", "build-linux.sh")
STOCK_NEWER = os.path.join(PROJECT, "tests", "vhost", "stock-qemu-newer.sh")
NO_DMABUF = "GPUP2P_QEMU_DMABUF is empty: no QEMU with the dma-buf path"
# Where inner_backends.py's split-bar case places its page.
SUBPAGE = 0xc4000000



def test(t):
    cache = os.environ.get("VHOST_CACHE_7X") or built(
        t, BUILD_LINUX, "the Linux 7.x virtual host's kernel is built")
    if not cache:
        return
    qemu = our_qemu()
    dmabuf = os.environ.get("GPUP2P_QEMU_DMABUF")
    if dmabuf is None:
        # Debian's QEMU 11.1, the dma-buf path's judge (stock-qemu-newer.sh)
        dmabuf = built(t, STOCK_NEWER, "Debian's QEMU 11.1 is at hand")
        if not dmabuf:
            return
    # What is under test is the virtual host's kernel.
    env = qemu_vhost_env(cache, qemu, dmabuf)
    # The host tool's BAR gate reads the kernel's config: the build's own.
    config = os.path.join(os.path.realpath(cache), "obj", ".config")
    rc, out, err, outdir = vhost_run(
        "backends.json",
        "%s sh tests/integration/qemu_p2p_dma.sh; "
        "%s python3 tests/integration/inner_backends.py; %s"
        "python3 tests/integration/inner_gate.py %s %s"
        % (env, env, config_at_boot(config), qemu, dmabuf or ""),
        timeout=1200, retry_host_death=True)
    if not t.ok(rc == 0, "the scenarios ran in the Linux 7.x virtual host",
                run_failure(rc, out, err)):
        return
    res = load_result(outdir, "backends.json")
    t.ok(res.get("kernel", "").startswith("7."), "the virtual host runs "
         "Linux 7.x", res.get("kernel"))
    t.eq(res.get("iommufd"), True, "iommufd is there (/dev/iommu)")

    # DMA, judged by the bytes in ivshmem's backing file.
    mem = open(os.path.join(outdir, "shm0.mem"), "rb").read()
    dmesg = read(outdir, "dmesg.txt")
    t.eq(read(outdir, "vmm.rc"), "0", "type1: the nested guest ran")
    t.eq(load_result(outdir, "vmm.json").get("to_peer"), 1,
         "type1: edu's DMA to the peer BAR's GPA completed")
    t.eq(mem[0x4000:0x4000 + N] == pattern(11), True,
         "type1: the bytes arrived through the listener's mapping")
    t.eq(mem[0x5000:0x5000 + N], bytes(N),
         "type1 control, x-no-mmap=on: nothing arrives")
    t.eq(read(outdir, "iommufd-available"), "yes", "the iommufd runs ran")
    t.eq(read(outdir, "iommufd.rc"), "0", "iommufd: the nested guest ran")
    t.eq(mem[0x6000:0x6000 + N], bytes(N),
         "iommufd, this QEMU: the BAR is not in the IOAS, nothing arrives")
    t.eq(mem[0x7000:0x7000 + N], bytes(N),
         "iommufd, x-no-mmap=on: nothing arrives")
    t.ok(dmar_faults(dmesg), "and the virtual host's IOMMU reports faults",
         dmesg[-2000:])
    if dmabuf:
        t.ok(mem[0x8000:0x8000 + N] == pattern(15),
             "iommufd, QEMU 11.1's dma-buf path: the bytes arrived",
             read(outdir, "iommufd-dmabuf.err")[-3000:])
    else:
        t.skip("iommufd, QEMU 11.1's dma-buf path: the bytes arrived",
               NO_DMABUF)
    t.eq(kernel_problems(dmesg), [], "the kernel log has no WARN, BUG or Oops")

    # The gate, the listener's record, the machine type.
    c = res.get("type1-auto", {})
    t.ok(c.get("in_effect") == {"g0": 0, "g1": 0},
         "type1: both stand-ins share clique 0", c)
    t.eq(c.get("stderr"), "", "type1: and the gate says nothing (the "
         "host facts show VFIO's own container, no vIOMMU)")
    t.ok("type1 0xc0000000+0x1000000" in str(c.get("bar_maps", {})
                                              .get("g0")),
         "type1: g0's BAR0 is mapped where the guest put it", c)
    maps = (c.get("bar_map_status") or {}).get("g0") or {}
    t.ok(any(m.get("backend") == "type1" and m.get("mapped") is True and
             m.get("iova") == 0xc0000000 and m.get("size") == 0x1000000
             for m in maps.get("maps", [])) and "unmappable" not in maps and
         "unrecorded" not in maps,
         "type1: and x-gpu-p2p-bar-map-status says so as a struct", maps)
    t.ok(str(res.get("bdfs", {}).get("gpu1")) in
         str(c.get("peer_maps", {}).get("g0")) and
         "type1 0xc2000000+0x1000000" in str(c.get("peer_maps", {})
                                               .get("g0")),
         "type1: g0's peer map shows g1's BAR0", c)
    c = res.get("nommap-auto", {})
    t.ok((c.get("in_effect") or {}).get("g1") == -1,
         "x-no-mmap=on, auto: no capability", c)
    t.ok(str((c.get("bar_maps") or {}).get("g1")).startswith(
        "none: x-no-mmap=on"), "and x-gpu-p2p-bar-maps says why", c)
    t.ok("would fault" in c.get("stderr", ""), "and a warning says so", c)
    c = res.get("nommap-explicit", {})
    t.ok(not c.get("started") and "would fault" in c.get("stderr", ""),
         "x-no-mmap=on, explicit id: refused with the reason", c)
    upstream_checks(t, res.get("nommap-upstream", {}), "x-no-mmap=on",
                    "2", ["g1"], res.get("bdfs", {}))
    c = res.get("machine-default", {})
    t.ok(c.get("in_effect") == {"g0": 0, "g1": 0},
         "machine q35-gpup2p: auto with no device setting", c)
    c = res.get("q35-default", {})
    t.ok(c.get("in_effect") == {"g0": -1, "g1": -1},
         "machine q35: off by default, stock's guest ABI", c)
    t.ok(all(cid != 9 for caps in (c.get("caps") or {"x": [(0, 9)]})
             .values() for _, cid in caps),
         "and no vendor capability is added", c)
    c = res.get("far-bar", {})
    t.ok("not mapped by type1" in str(c.get("bar_maps")),
         "a BAR beyond the IOMMU's reach: VFIO refuses the map and "
         "x-gpu-p2p-bar-maps says so", c)
    split_checks(t, res.get("split-bar", {}))
    # A 64-bit BAR window past the container's IOVA ranges, known at
    # machine done before any firmware: unknown (the firmware places the
    # BARs), so the capability stays and a warning names the window.
    # With explicit ids only, too: nothing to plan, the window checked.
    # A virtual host whose IOMMU no guest can reach past skips them.
    for case, clique, ids in (("window-past", "auto", 0),
                              ("window-past-explicit", "5", 5)):
        c = res.get(case, {})
        if window_skipped(t, case, c):
            continue
        bits = c.get("iommu_bits") or 0
        t.ok(c.get("in_effect") == {"g0": ids, "g1": ids} and
             c.get("rc") == 0, "%s: the capability is kept" % case, c)
        warned = re.findall(
            r"vfio \S+: x-gpu-p2p-clique=%s: P2P writes of its peers to "
            r"it may fault: the guest's 64-bit BAR window as this machine "
            r"declares it \(pci-hole64\), 0x[0-9a-f]+-0x[0-9a-f]+, reaches "
            r"past its container's IOVA ranges \(up to 0x%x\)"
            % (clique, (1 << bits) - 1),
            c.get("stderr", ""))
        t.ok(bits and len(warned) == 2, "%s: a warning for each GPU names "
             "the window and the ranges' end (the virtual host's %d-bit "
             "IOMMU)" % (case, bits), c)
        # The ranges judged are the kernel's at machine done, not QEMU's
        # copy from when the container was made.
        asked = re.findall(
            r"vfio_gpu_p2p_iova_ranges +\(\S+\) \d+ IOVA ranges up to "
            r"0x%x, from the kernel \(VFIO_IOMMU_GET_INFO\)"
            % ((1 << bits) - 1), c.get("stderr", ""))
        t.ok(bits and len(asked) == 2, "%s: each GPU's peer's container "
             "asked of the kernel at machine done" % case, c)
    # Hot-plugged: the lone GPU is not checked at machine done (a trace
    # line says why); at hot-plug the newcomer and the GPU that gains it
    # as a peer writing to it are, each warned once. Before, only the
    # newcomer was.
    c = res.get("window-past-hotplug", {})
    if not window_skipped(t, "window-past-hotplug", c):
        window_hotplug_checks(t, c)
    # The machine-done warnings are not repeated when a later check (a
    # hot-plug) finds the same: the cold cases gave one per GPU.
    for case in ("window-past", "window-past-explicit"):
        if "skipped" in res.get(case, {}):
            continue
        t.ok(len(re.findall(r"P2P writes of its peers to it may fault: the "
                            r"guest's 64-bit BAR window",
                            res.get(case, {}).get("stderr", ""))) == 2,
             "%s: one warning per GPU, none repeated" % case,
             res.get(case))
    # A guest vIOMMU: unknown (the guest decides what is mapped), so the
    # capability stays and a warning gives the reason, for auto and for
    # an explicit id under the default verify=refuse alike.
    for case, ids in (("viommu-auto", {"g0": 0, "g1": 0}),
                      ("viommu-explicit", {"g0": 4, "g1": 4})):
        c = res.get(case, {})
        t.ok(c.get("in_effect") == ids and c.get("rc") == 0,
             "%s: the capability is kept" % case, c)
        t.ok("may fault: a vIOMMU in the VM (intel-iommu)" in
             c.get("stderr", ""), "%s: and a warning names the vIOMMU"
             % case, c)
        t.ok(all(str(m).startswith("none recorded: behind a vIOMMU "
                                   "(intel-iommu)")
                 for m in (c.get("bar_maps") or {"g0": None}).values()),
             "%s: x-gpu-p2p-bar-maps says the vIOMMU decides, not that "
             "the guest enabled no BAR" % case, c.get("bar_maps"))
        t.ok(all(str((m or {}).get("unrecorded")).startswith(
                     "behind a vIOMMU (intel-iommu)")
                 for m in (c.get("bar_map_status") or
                           {"g0": None}).values()),
             "%s: and x-gpu-p2p-bar-map-status's unrecorded says so to a "
             "QMP client" % case, c.get("bar_map_status"))
    # Maps recorded behind a vIOMMU (BARs enabled while its translation
    # is off): both readers give them and what the record misses.
    c = res.get("viommu-bars", {})
    maps = (c.get("bar_map_status") or {}).get("g0") or {}
    gpus = sorted(str(res.get("bdfs", {}).get(n)) for n in ("gpu0", "gpu1"))
    text = str((c.get("bar_maps") or {}).get("g0"))
    # Behind the vIOMMU each GPU has a container of its own (QEMU's open
    # /dev/vfio/vfio files say how many), and both map g0's BAR.
    t.eq(c.get("vfio_containers"), 2,
         "viommu-bars: QEMU holds a container per GPU")
    t.eq(sorted(re.findall(r": type1 0xc0000000\+0x1000000 in the container "
                           r"of ([^;]+)", text)), gpus,
         "viommu-bars: x-gpu-p2p-bar-maps gives each container's map of "
         "g0's BAR, naming the container")
    t.ok(text.endswith("; others not recorded: behind a vIOMMU "
                       "(intel-iommu), the guest's own IOMMU maps decide "
                       "which BARs peers reach; maps made through its "
                       "notifier are not recorded here"),
         "viommu-bars: and says others are not recorded", text)
    t.eq(sorted((m.get("iova"), m.get("mapped"), m.get("container"))
                for m in maps.get("maps", []) if m.get("iova") == 0xc0000000),
         [(0xc0000000, True, [gpus[0]]), (0xc0000000, True, [gpus[1]])],
         "viommu-bars: x-gpu-p2p-bar-map-status names each map's container")
    t.ok(str(maps.get("unrecorded")).startswith("behind a vIOMMU "
                                                "(intel-iommu)"),
         "viommu-bars: and the struct's unrecorded says the same", maps)
    c = res.get("cap-writes", {})
    offs = c.get("pwrite_offsets") or []
    base = [o - 0x3c for o in offs if (o - 0x3c) % (1 << 40) == 0]
    off = c.get("cap_offset")
    t.ok(base and off, "QEMU under strace: the control write to 3Ch "
         "reached the device's config region", c)
    t.eq([o for o in offs if base and off and
          base[0] + off <= o < base[0] + off + 8], [],
         "guest writes over the capability never reach the device")
    c = res.get("iommufd-auto", {})
    t.ok(c.get("in_effect") == {"g0": -1, "g1": -1},
         "iommufd, auto: no capability (peers' writes would fault)", c)
    t.ok(str((c.get("bar_maps") or {}).get("g0")).startswith(
        "none: the iommufd backend"), "and x-gpu-p2p-bar-maps says why", c)
    c = res.get("iommufd-explicit", {})
    t.ok(not c.get("started") and "would fault" in c.get("stderr", ""),
         "iommufd, explicit id: refused with the reason", c)
    # The library's reasons and order (lib/bar-gate.c), as check --domain
    # gives them: x-no-mmap first, then our QEMU's iommufd.
    c = res.get("iommufd-nommap-auto", {})
    maps = c.get("bar_maps") or {}
    t.ok(c.get("in_effect") == {"g0": -1, "g1": -1} and
         str(maps.get("g0")).startswith(
             "none: the iommufd backend on our QEMU (10.0), which maps a BAR "
             "into an IOAS from its mmap") and
         str(maps.get("g1")).startswith("none: x-no-mmap=on: its BARs are "
                                        "not mmapped"),
         "iommufd and x-no-mmap=on on one GPU, auto: no capability; that "
         "GPU's reason is x-no-mmap, the other's our QEMU's iommufd, in "
         "check --domain's words", c)
    upstream_checks(t, res.get("iommufd-upstream", {}),
                    "the iommufd backend", "3", ["g0", "g1"],
                    res.get("bdfs", {}))
    c = res.get("iommufd-upstream-trust", {})
    t.ok(c.get("started") and
         all([0xc8, 9] in cl for cl in (c.get("caps") or {}).values()) and
         len(c.get("caps") or {}) == 2 and
         "x-nv-gpudirect-clique=3: P2P" not in c.get("stderr", "x"),
         "upstream's x-nv-gpudirect-clique with x-gpu-p2p-verify=trust, "
         "iommufd: the capability, and no warning", c)
    # A container per GPU: each judged against its peer's, and named.
    c = res.get("window-past-two-ioas", {})
    if not window_skipped(t, "window-past-two-ioas", c):
        bits = c.get("iommu_bits") or 0
        named = re.findall(
            r"vfio (\S+): x-gpu-p2p-clique=3: P2P writes of its peers to "
            r"it may fault: .*the guest's 64-bit BAR window as this machine "
            r"declares it \(pci-hole64\), 0x[0-9a-f]+-0x[0-9a-f]+, reaches "
            r"past the IOVA ranges of its peer (\S+)'s container \(up to "
            r"0x%x\)" % ((1 << bits) - 1), c.get("stderr", ""))
        t.ok(c.get("in_effect") == {"g0": 3, "g1": 3} and
             len(named) == 2 and all(a != b for a, b in named),
             "two iommufd containers: each GPU's window is judged against "
             "its peer's container, which the warning names", c)
    c = res.get("iommufd-explicit-warn", {})
    t.ok(c.get("in_effect") == {"g0": 3, "g1": 3},
         "iommufd, explicit id, verify=warn: kept", c)
    t.ok("is not mapped by iommufd" in c.get("stderr", ""),
         "and the failed BAR map at run time is reported", c)
    asked = re.findall(r"vfio_gpu_p2p_iova_ranges +\(\S+\) \d+ IOVA ranges "
                       r"up to 0x[0-9a-f]+, from the kernel "
                       r"\(IOMMU_IOAS_IOVA_RANGES\)", c.get("stderr", ""))
    t.ok(len(asked) == 2, "and each GPU's window is judged against its "
         "peer's IOAS ranges as the kernel gives them at machine done", c)
    gate_checks(t, load_result(outdir, "gate.json"), res, mem, dmabuf)


def upstream_checks(t, c, condition, clique, gated, hosts):
    """Upstream's x-nv-gpudirect-clique, the user's promise: QEMU keeps
    its capability (upstream's place, C8h), and warns for each GPU
    (@gated, g0 on host device @hosts["gpu0"], g1 on "gpu1") whose BARs
    the gate finds unmapped, naming @condition, as check --domain does."""
    caps = c.get("caps") or {}
    t.ok(c.get("started") and len(caps) == 2 and
         all([0xc8, 9] in cl for cl in caps.values()),
         "upstream's x-nv-gpudirect-clique=%s, %s: QEMU starts, each GPU "
         "with its capability at C8h" % (clique, condition), c)
    err = c.get("stderr", "")
    warned = re.findall(r"vfio (\S+): x-nv-gpudirect-clique=%s: P2P writes "
                        r"of its peers to it would fault: %s" %
                        (clique, re.escape(condition)), err)
    maps = {g: (c.get("bar_maps") or {}).get(g, "") for g in ("g0", "g1")}
    t.ok(sorted(warned) == sorted(hosts.get("gpu" + g[1:]) for g in gated)
         and all(maps[g].startswith("none: " + condition) for g in gated) and
         all(not maps[g].startswith("none:") for g in maps
             if g not in gated),
         "upstream's x-nv-gpudirect-clique=%s, %s: a warning for each GPU "
         "whose BARs will not be mapped (%s), and x-gpu-p2p-bar-maps says "
         "why" % (clique, condition, ", ".join(gated)), c)


def split_checks(t, c):
    """A passed-through BAR's section cut short of a page by an emulated
    BAR over its start: recorded as not mapped, as QEMU's own trace says
    it skipped it; the record goes when the guest disables the BAR
    (region_del's hook sits before its IOVA range check, which stops there
    for this section: 1b3b011)."""
    whole = (c.get("whole") or {}).get("maps") or []
    t.ok(len(whole) == 1 and whole[0].get("mapped") and
         whole[0].get("iova") == SUBPAGE and
         whole[0].get("size") == 0x1000 and
         whole[0].get("backend") == "type1",
         "split-bar: a 256-byte BAR placed at a page: QEMU widens it to the "
         "page and type1 maps it", c)
    skipped = re.findall(r'vfio_listener_region_add_no_dma_map +'
                         r'Region "[^"]*BAR 0 mmaps\[0\]" 0x%x size=0xf00 '
                         r'is not aligned to 0x1000' % (SUBPAGE + 0x100),
                         c.get("stderr", ""))
    split = (c.get("split") or {}).get("maps") or []
    was_split = (len(skipped) == 1 and len(split) == 1 and
                 not split[0].get("mapped") and
                 split[0].get("offset") == 0x100 and
                 split[0].get("iova") == SUBPAGE + 0x100 and
                 split[0].get("size") == 0xf00 and
                 split[0].get("reason") == "not aligned to the host page "
                 "size")
    t.ok(was_split, "split-bar: an emulated BAR over its first 256 bytes: "
         "QEMU's listener skips the rest and x-gpu-p2p-bar-map-status "
         "records it as not mapped", c)
    # Only a split section reaches region_del's early return.
    t.ok(was_split and c.get("off") == {"maps": []} and
         c.get("off_text") == "none (no BAR of it in the guest's address "
         "space)",
         "split-bar: with the BAR's memory decode off, the record is gone "
         "(region_del's own range check skips this section)", c)


def window_skipped(t, case, c):
    """A window case the virtual host could not make (inner_backends.py
    says why): one SKIP, not a pass or a failure."""
    if "skipped" not in c:
        return False
    t.skip("%s: the window checks" % case, c["skipped"])
    return True


def window_hotplug_checks(t, c):
    bits = c.get("iommu_bits") or 0
    err = c.get("stderr", "")
    t.ok(c.get("in_effect") == {"g0": 0, "g1": 0} and c.get("rc") == 0 and
         "error" not in str(c.get("device_add")),
         "window-past-hotplug: the hot-plugged GPU joins the clique", c)
    t.ok(re.search(r"vfio_gpu_p2p_window_skipped +\(\S+\) 64-bit BAR "
                   r"window not checked: no peer in its clique", err),
         "window-past-hotplug: the lone GPU is not checked at machine "
         "done, and a trace line says why", c)
    warned = re.findall(
        r"vfio (\S+): x-gpu-p2p-clique=auto: P2P writes of its peers to it "
        r"may fault: the guest's 64-bit BAR window as this machine declares "
        r"it \(pci-hole64\), 0x[0-9a-f]+-0x[0-9a-f]+, reaches past its "
        r"container's IOVA ranges \(up to 0x%x\)" % ((1 << bits) - 1), err)
    t.ok(bits and len(warned) == 2 and len(set(warned)) == 2,
         "window-past-hotplug: at hot-plug both GPUs are warned, the "
         "newcomer and its peer", c)
    # Each GPU's peer's container asked of the kernel after each hot-plug:
    # the GPU's, then the other VFIO device's (before, only the GPU's).
    asked = re.findall(r"vfio_gpu_p2p_iova_ranges +\(\S+\) \d+ IOVA "
                       r"ranges up to 0x[0-9a-f]+, from the kernel", err)
    t.ok(len(asked) == 4 and c.get("other_in_effect") == -1 and
         "error" not in str(c.get("device_add_other")),
         "window-past-hotplug: the kernel's ranges judged for both GPUs "
         "after the GPU's hot-plug and again after a non-GPU VFIO "
         "device's, with no warning repeated", c)


def gate_checks(t, gate, res, mem, dmabuf):
    """The host tool's BAR gate (check --domain, inner_gate.py) against
    what VFIO and the DMA did in the same virtual host: "mapped" where the
    bytes arrived, "not mapped" where nothing did and our QEMU's own gate
    withheld the capability."""
    g0, g1 = (gate.get("gpus") or ["?", "?"])[:2]
    c = gate.get("type1", {})
    t.ok(c.get("verdict") == "ok" and c.get("gpus") == {g0: "mapped",
                                                        g1: "mapped"} and
         mem[0x4000:0x4000 + N] == pattern(11),
         "gate, type1 on our QEMU: check --domain says mapped, and the "
         "bytes arrived", c)
    # The domains give each GPU a clique (inner_gate.py), so a GPU proven
    # not mapped fails the item.
    c = gate.get("nommap", {})
    t.ok(c.get("rc") == 5 and c.get("verdict") == "fail" and
         c.get("gpus") == {g0: "mapped", g1: "not mapped"} and
         "x-no-mmap=on" in (c.get("detail") or "") and
         mem[0x5000:0x5000 + N] == bytes(N) and
         (res.get("nommap-auto", {}).get("in_effect") or {}).get("g1") == -1,
         "gate, x-no-mmap: check --domain says not mapped for that GPU, as "
         "our QEMU's gate and the DMA (nothing arrived) say", c)
    c = gate.get("iommufd-ours", {})
    t.ok(c.get("rc") == 5 and c.get("verdict") == "fail" and
         set((c.get("gpus") or {}).values()) == {"not mapped"} and
         "our QEMU (10.0)" in (c.get("detail") or "") and
         mem[0x6000:0x6000 + N] == bytes(N) and
         res.get("iommufd-auto", {}).get("in_effect") == {"g0": -1,
                                                          "g1": -1},
         "gate, iommufd on our QEMU: not mapped, as our QEMU's gate and "
         "the DMA say", c)
    name = ("gate, iommufd on Debian's QEMU 11.1 with this kernel's "
            "CONFIG_VFIO_PCI_DMABUF: mapped, and the bytes arrived")
    if dmabuf:
        c = gate.get("iommufd-stock", {})
        t.ok(c.get("verdict") == "ok" and set((c.get("gpus") or {})
                                               .values()) == {"mapped"} and
             mem[0x8000:0x8000 + N] == pattern(15), name, c)
    else:
        t.skip(name, NO_DMABUF)


if __name__ == "__main__":
    Tap().run(test)
