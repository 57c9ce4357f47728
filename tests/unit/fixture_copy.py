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
