# SPDX-License-Identifier: GPL-2.0-or-later
"""Copies of the captured hosts (tests/fixtures) changed in one respect,
for the cases a capture of the virtual host cannot show: its GPU
stand-ins are QEMU's (vendor 1234), and its CPU is AMD Zen."""

import glob
import os
import shutil


def _devices(root):
    """Each PCI device directory of the capture at @root, resolved."""
    for link in sorted(glob.glob(os.path.join(root, "sys", "bus", "pci",
                                              "devices", "*"))):
        yield os.path.realpath(link)


def nvidia_host(src, dst):
    """@src copied to @dst with each display-class stand-in showing
    NVIDIA's vendor id, in its `vendor` attribute and its config space
    (the reader refuses a device where the two differ)."""
    shutil.copytree(src, dst, symlinks=True)
    for dev in _devices(dst):
        with open(os.path.join(dev, "class")) as f:
            cls = f.read().strip()
        with open(os.path.join(dev, "vendor")) as f:
            vendor = f.read().strip()
        if not cls.startswith("0x03") or vendor != "0x1234":
            continue
        with open(os.path.join(dev, "vendor"), "w") as f:
            f.write("0x10de\n")
        with open(os.path.join(dev, "config"), "r+b") as f:
            f.write(bytes([0xde, 0x10]))
    return dst


def intel_host(src, dst):
    """@src copied to @dst with an Intel CPU in its proc/cpuinfo: the
    root complex (QEMU's q35 host bridge, 8086:29c0) is then not on
    Linux's p2pdma list, so whether it forwards P2P is not known."""
    shutil.copytree(src, dst, symlinks=True)
    path = os.path.join(dst, "proc", "cpuinfo")
    with open(path) as f:
        lines = f.read().splitlines(True)
    with open(path, "w") as f:
        for line in lines:
            key = line.split(":")[0].strip()
            if key == "vendor_id":
                line = "vendor_id\t: GenuineIntel\n"
            elif key == "cpu family":
                line = "cpu family\t: 6\n"
            f.write(line)
    return dst


def same_group_host(src, dst, a, b):
    """@src copied to @dst with device @a in device @b's IOMMU group (as
    behind a bridge without ACS). Only for a capture without
    kernel/iommu_groups, whose group links name the group alone."""
    shutil.copytree(src, dst, symlinks=True)
    assert not os.path.exists(os.path.join(dst, "sys", "kernel",
                                           "iommu_groups"))
    devices = os.path.join(dst, "sys", "bus", "pci", "devices")
    link_a = os.path.join(os.path.realpath(os.path.join(devices, a)),
                          "iommu_group")
    link_b = os.path.join(os.path.realpath(os.path.join(devices, b)),
                          "iommu_group")
    group_b = os.path.basename(os.readlink(link_b))
    target = os.path.join(os.path.dirname(os.readlink(link_a)), group_b)
    os.unlink(link_a)
    os.symlink(target, link_a)
    return dst


def cpu_kernel_host(src, dst, phys_bits=None, release=None):
    """@src copied to @dst with a CPU of @phys_bits physical address bits
    (its proc/cpuinfo's "address sizes", written where the capture has
    none) and Linux @release in proc/sys/kernel/osrelease; None leaves
    each as the capture has it."""
    shutil.copytree(src, dst, symlinks=True)
    if phys_bits is not None:
        path = os.path.join(dst, "proc", "cpuinfo")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lines = []
        if os.path.exists(path):
            with open(path) as f:
                lines = [line for line in f.read().splitlines(True)
                         if line.split(":")[0].strip() != "address sizes"
                         and line.strip()]
        with open(path, "w") as f:
            f.writelines(lines)
            f.write("address sizes\t: %d bits physical, 57 bits virtual\n"
                    % phys_bits)
    if release is not None:
        path = os.path.join(dst, "proc", "sys", "kernel", "osrelease")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(release + "\n")
    return dst


def gate_host(src, dst, release=None, config=None, type1=False, cap=None,
              reserved="0x00000000fee00000 0x00000000feefffff msi\n"):
    """@src copied to @dst with what the BAR gate reads (gpup2p/bar-gate.h),
    as Linux shows it: Linux @release (proc/sys/kernel/osrelease) and its
    boot/config-@release holding @config; sys/module/vfio_iommu_type1
    where @type1; each device's `iommu` link to an Intel IOMMU (dmar0)
    whose Capability register is @cap (hex text; None: no link); and
    kernel/iommu_groups/N/reserved_regions (@reserved) for every group a
    device's iommu_group link names."""
    shutil.copytree(src, dst, symlinks=True)
    sysdir = os.path.join(dst, "sys")
    if release is not None:
        path = os.path.join(dst, "proc", "sys", "kernel", "osrelease")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(release + "\n")
        if config is not None:
            os.makedirs(os.path.join(dst, "boot"), exist_ok=True)
            with open(os.path.join(dst, "boot", "config-" + release),
                      "w") as f:
                f.write(config)
    if type1:
        path = os.path.join(sysdir, "module", "vfio_iommu_type1",
                            "parameters")
        os.makedirs(path)
        with open(os.path.join(path, "dma_entry_limit"), "w") as f:
            f.write("65535\n")
    if cap is not None:
        path = os.path.join(sysdir, "class", "iommu", "dmar0", "intel-iommu")
        os.makedirs(path)
        with open(os.path.join(path, "cap"), "w") as f:
            f.write(cap + "\n")
    for dev in _devices(dst):
        if cap is not None:
            os.symlink("../../../virtual/iommu/dmar0",
                       os.path.join(dev, "iommu"))
        link = os.path.join(dev, "iommu_group")
        if not os.path.islink(link):
            continue
        group = os.path.join(sysdir, "kernel", "iommu_groups",
                             os.path.basename(os.readlink(link)))
        os.makedirs(group, exist_ok=True)
        with open(os.path.join(group, "reserved_regions"), "w") as f:
            f.write(reserved)
    return dst
