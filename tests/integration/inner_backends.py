#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs inside the virtual host (tests/vhost/topologies/backends.json):
our QEMU with two GPU stand-ins on root ports (a clique under the VM rule)
on each VFIO backend the kernel offers, read through qtest and QMP. The
capability gate: a device whose BARs the IOMMU will not hold for its
peers (iommufd on this QEMU, x-no-mmap=on, iommufd's emulated container
as a stand-in) gets no capability with auto, and an explicit id is
refused or warned per x-gpu-p2p-verify; behind a guest vIOMMU (unknown)
both keep it with a warning. Then the
guest's view: BARs placed by config writes as firmware would, and what the
container's listener did with them as x-gpu-p2p-bar-maps reports (a BAR
placed beyond the IOMMU's reach is refused by VFIO itself; a 64-bit BAR
window reaching past the container's IOVA ranges is warned at machine
done, before firmware places a BAR). The machine
type pc-q35-*-gpup2p gives auto with no per-device setting; plain q35
keeps stock's default (off). Writes $VHOST_OUT/backends.json."""

import json
import os
import re

from qemu_cfg import OURS, Vm, cap_list, start_error
from vfio_helpers import OUT, bdf, bind_vfio, modprobe

NV = "x-pci-vendor-id=0x10de"
IOMMUFD = ["-object", "iommufd,id=iommufd0"]
# Where the stand-ins' 16 MiB BAR0 go, as firmware would place them.
BAR0 = [0xc0000000, 0xc2000000]
# A guest vIOMMU; VFIO needs caching mode to follow the guest's maps.
VIOMMU = "intel-iommu,caching-mode=on"
# Beyond any IOMMU's input address width the outer vIOMMU offers.
FAR = 1 << 52


def dev(host, bus, ident, extra=""):
    return "vfio-pci,host=%s,bus=%s,id=%s,%s%s" % (host, bus, ident, NV,
                                                   extra)


def window(vm, port, base, size):
    """Root port @port forwards [base, base + size) (both memory windows,
    64-bit prefetchable) with memory decode on, as firmware sets bridges."""
    limit = base + size - 1

    def field(lo, hi):
        return ((hi >> 16) & 0xfff0) << 16 | ((lo >> 16) & 0xfff0)
    slot = 0x10 + port
    if limit < 1 << 32:
        vm.cfg_write_legacy(0, slot, 0x20, field(base, limit))
    vm.cfg_write_legacy(0, slot, 0x24, field(base & 0xffffffff,
                                             limit & 0xffffffff))
    vm.cfg_write_legacy(0, slot, 0x28, base >> 32)
    vm.cfg_write_legacy(0, slot, 0x2c, limit >> 32)
    vm.cfg_write_legacy(0, slot, 0x04, 0x6)


def enable_bar(vm, bus, bar, addr, is64=False, size=1 << 25):
    """A guest's BAR programming and memory enable, by config writes; the
    device sits on root port bus - 1, whose windows are opened first."""
    window(vm, bus - 1, addr, size)
    off = 0x10 + 4 * bar
    vm.write(bus, off, (addr & 0xffffffff).to_bytes(4, "little"))
    if is64:
        vm.write(bus, off + 4, (addr >> 32).to_bytes(4, "little"))
    cmd = int.from_bytes(vm.config(bus, 8)[4:6], "little")
    vm.write(bus, 4, (cmd | 0x2).to_bytes(2, "little"))


def run(devices, extra=(), ids=("g0", "g1"), bars=True):
    vm = Vm(OURS, devices, extra, qmp=True)
    r = {"started": vm.started}
    if vm.started:
        r["in_effect"] = {i: vm.qom(i, "x-gpu-p2p-clique-in-effect")
                          for i in ids}
        r["caps"] = {i: cap_list(vm.config(n + 1, 256))
                     for n, i in enumerate(ids)}
        if bars:
            for n, _ in enumerate(ids):
                enable_bar(vm, n + 1, 0, BAR0[n])
        r["bar_maps"] = {i: vm.qom(i, "x-gpu-p2p-bar-maps") for i in ids}
        r["bar_map_status"] = {i: vm.qom(i, "x-gpu-p2p-bar-map-status")
                               for i in ids}
        r["peer_maps"] = {i: vm.qom(i, "x-gpu-p2p-peer-maps") for i in ids}
    r["rc"], r["stderr"], _ = vm.quit()
    return r


def far_bar(g0, shm):
    """ivshmem's 64-bit BAR2 placed beyond the IOMMU's reach."""
    vm = Vm(OURS, [dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=auto"),
                   "vfio-pci,host=%s,bus=rp1,id=s0" % shm], qmp=True)
    r = {"started": vm.started}
    if vm.started:
        enable_bar(vm, 2, 2, FAR, is64=True)
        r["bar_maps"] = vm.qom("s0", "x-gpu-p2p-bar-maps")
    r["rc"], r["stderr"], _ = vm.quit()
    return r


def iommu_bits():
    """The virtual host's IOMMU input address width (Intel's MGAW, from
    its capability register), which bounds every container's IOVA."""
    for name in sorted(os.listdir("/sys/class/iommu")):
        try:
            with open("/sys/class/iommu/%s/intel-iommu/cap" % name) as f:
                return ((int(f.read(), 16) >> 16) & 0x3f) + 1
        except OSError:
            continue
    return None


def window_past(g0, g1, clique="auto"):
    """A 64-bit BAR window (pci-hole64) reaching past the container's IOVA
    ranges, the guest's address width raised to hold it: the capability
    stays (the firmware places BARs) and a warning names the window."""
    bits = iommu_bits()
    if not bits or bits > 50:
        return {"skipped": "IOMMU width %s: no guest can reach past it"
                % bits}
    r = run([dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=" + clique),
             dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=" + clique)],
            ["-cpu", "qemu64,phys-bits=%d" % (bits + 2), "-global",
             "q35-pcihost.pci-hole64-size=%dG" % (1 << (bits - 30)),
             "-trace", "vfio_gpu_p2p_iova_ranges"],
            bars=False)
    r["iommu_bits"] = bits
    return r


def window_past_hotplug(g0, g1):
    """The same window with the second GPU hot-plugged: at machine done
    the lone g0 is not checked (a trace line says why); at hot-plug the
    newcomer and g0, which gains it as a peer writing to it, both are."""
    bits = iommu_bits()
    if not bits or bits > 50:
        return {"skipped": "IOMMU width %s: no guest can reach past it"
                % bits}
    vm = Vm(OURS, [dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=auto")],
            ["-cpu", "qemu64,phys-bits=%d" % (bits + 2), "-global",
             "q35-pcihost.pci-hole64-size=%dG" % (1 << (bits - 30)),
             "-trace", "vfio_gpu_p2p_window_skipped",
             "-trace", "vfio_gpu_p2p_iova_ranges"], qmp=True)
    r = {"started": vm.started, "iommu_bits": bits}
    if vm.started:
        r["device_add"] = vm.qmp.cmd(
            "device_add", driver="vfio-pci", host=g1, bus="rp1", id="g1",
            **{"x-pci-vendor-id": 0x10de, "x-gpu-p2p-clique": "auto"})
        vm.power_slot(1)
        r["in_effect"] = {i: vm.qom(i, "x-gpu-p2p-clique-in-effect")
                          for i in ("g0", "g1")}
    r["rc"], r["stderr"], _ = vm.quit()
    return r


def window_past_two_ioas(g0, g1):
    """The window past the ranges with each GPU in a container of its own
    (two iommufd backends): each is judged against its peer's container,
    which translates the peer's writes to it, and the warning names it."""
    bits = iommu_bits()
    if not bits or bits > 50:
        return {"skipped": "IOMMU width %s: no guest can reach past it"
                % bits}
    r = run([dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=3,"
                 "x-gpu-p2p-verify=warn,iommufd=iommufd0"),
             dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=3,"
                 "x-gpu-p2p-verify=warn,iommufd=iommufd1")],
            IOMMUFD + ["-object", "iommufd,id=iommufd1",
                       "-cpu", "qemu64,phys-bits=%d" % (bits + 2), "-global",
                       "q35-pcihost.pci-hole64-size=%dG" % (1 << (bits - 30))],
            bars=False)
    r["iommu_bits"] = bits
    return r


def emulated_container_qemu():
    """A stand-in for iommufd's emulated type1 container, which no kernel
    here builds: our QEMU in a mount namespace whose sys/module shows
    iommufd and no vfio_iommu_type1, as that host's does. The container
    is still type1's; only what the gate reads is the emulation's."""
    wrapper = os.path.join(OUT, "qemu-emulated-container.sh")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec unshare -m sh -c 'mount -t tmpfs tmpfs "
                "/sys/module && mkdir /sys/module/iommufd && exec \"$0\" "
                "\"$@\"' %s \"$@\"\n" % OURS)
    os.chmod(wrapper, 0o755)
    return wrapper


def emulated(devices):
    vm = Vm(emulated_container_qemu(), devices, qmp=True)
    r = {"started": vm.started}
    if vm.started:
        r["in_effect"] = {i: vm.qom(i, "x-gpu-p2p-clique-in-effect")
                          for i in ("g0", "g1")}
        r["bar_maps"] = {i: vm.qom(i, "x-gpu-p2p-bar-maps")
                         for i in ("g0", "g1")}
    r["rc"], r["stderr"], _ = vm.quit()
    return r


def cap_writes(g0):
    """Guest writes over every byte of the capability, QEMU under strace:
    none may reach the device (a pwrite64 to its config region), while a
    write to another register does (the control)."""
    trace = os.path.join(OUT, "cap-writes.strace")
    wrapper = os.path.join(OUT, "qemu-strace.sh")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec strace -f -qq -e trace=pwrite64 -o %s "
                "%s \"$@\"\n" % (trace, OURS))
    os.chmod(wrapper, 0o755)
    vm = Vm(wrapper, [dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=1")],
            qmp=True)
    r = {"started": vm.started}
    if vm.started:
        caps = cap_list(vm.config(1, 256))
        off = caps[-1][0] if caps and caps[-1][1] == 9 else None
        r["cap_offset"] = off
        if off:
            for o in range(off, off + 8, 4):
                vm.write(1, o, b"\xff\xff\xff\xff")
            vm.write(1, off + 6, b"\x81")
        line = vm.config(1, 64)[0x3c]
        vm.write(1, 0x3c, bytes([line]))          # the control
        vm.qmp.cmd("quit")
    r["rc"], r["stderr"], _ = vm.quit()
    try:
        with open(trace) as f:
            r["pwrite_offsets"] = [
                int(m.group(1)) for m in (
                    re.search(r"pwrite64\(.*, \d+, (\d+)\) += ", l)
                    for l in f) if m]
    except OSError as e:
        r["pwrite_offsets"] = repr(e)
    return r


def main():
    b = {n: bdf(n) for n in ("gpu0", "gpu1", "shm0")}
    for d in b.values():
        bind_vfio(d)
    g0, g1 = b["gpu0"], b["gpu1"]
    res = {"bdfs": b, "kernel": os.uname().release}
    try:
        modprobe("iommufd")
        res["iommufd"] = os.path.exists("/dev/iommu")
    except Exception as e:      # Linux 6.12 of Debian has no iommufd
        res["iommufd"] = False
        res["iommufd_error"] = repr(e)
    cases = {
        "type1-auto": lambda: run([
            dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=auto"),
            dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=auto")]),
        "nommap-auto": lambda: run([
            dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=auto"),
            dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=auto,x-no-mmap=on")]),
        "nommap-explicit": lambda: start_error(OURS, [
            dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=2"),
            dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=2,x-no-mmap=on")]),
        "machine-default": lambda: run([dev(g0, "rp0", "g0"),
                                        dev(g1, "rp1", "g1")],
                                       ["-M", "q35-gpup2p"], bars=False),
        "q35-default": lambda: run([dev(g0, "rp0", "g0"),
                                    dev(g1, "rp1", "g1")], bars=False),
        "far-bar": lambda: far_bar(g0, b["shm0"]),
        "window-past": lambda: window_past(g0, g1),
        "window-past-explicit": lambda: window_past(g0, g1, "5"),
        "window-past-hotplug": lambda: window_past_hotplug(g0, g1),
        # A vIOMMU first, so that the devices sit behind it.
        "viommu-auto": lambda: run([
            VIOMMU, dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=auto"),
            dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=auto")], bars=False),
        "viommu-explicit": lambda: run([
            VIOMMU, dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=4"),
            dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=4")], bars=False),
        "emulated-auto": lambda: emulated([
            dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=auto"),
            dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=auto")]),
        "emulated-explicit": lambda: start_error(emulated_container_qemu(), [
            dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=2"),
            dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=2")]),
        "cap-writes": lambda: cap_writes(g0),
    }
    if res["iommufd"]:
        fd = ",iommufd=iommufd0"
        cases.update({
            "iommufd-auto": lambda: run([
                dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=auto" + fd),
                dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=auto" + fd)],
                IOMMUFD),
            "iommufd-explicit": lambda: start_error(OURS, [
                dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=3" + fd),
                dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=3" + fd)], IOMMUFD),
            "window-past-two-ioas": lambda: window_past_two_ioas(g0, g1),
            "iommufd-explicit-warn": lambda: run([
                dev(g0, "rp0", "g0", ",x-gpu-p2p-clique=3,"
                    "x-gpu-p2p-verify=warn" + fd),
                dev(g1, "rp1", "g1", ",x-gpu-p2p-clique=3,"
                    "x-gpu-p2p-verify=warn" + fd)],
                IOMMUFD + ["-trace", "vfio_gpu_p2p_iova_ranges"]),
        })
    for name, fn in cases.items():
        try:
            res[name] = fn()
        except Exception as e:      # recorded; the test outside fails it
            res[name] = {"exception": repr(e)}
    with open(os.path.join(OUT, "backends.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
