# SPDX-License-Identifier: GPL-2.0-or-later
"""Synthetic sysfs trees from Python, in the shape tests/unit/sysfs-builder.c
writes them (devices nested under their bridges, bus/pci/devices links,
iommu_group links, a config space with a PCIe capability), plus what
outside judges read: `modalias`, ACS and ATS extended capabilities, VPD
and class/infiniband."""

import os
import struct

# PCIe capability port types (Device/Port Type field).
PORT_TYPES = {"root": 0x4, "up": 0x5, "down": 0x6, "endpoint": 0x0}

ACS_SV, ACS_TB, ACS_RR, ACS_CR, ACS_UF, ACS_EC, ACS_DT = (
    1 << i for i in range(7))
ACS_LINUX = ACS_SV | ACS_RR | ACS_CR | ACS_UF
ACS_ALL = ACS_LINUX | ACS_TB | ACS_EC | ACS_DT


class Tree:
    def __init__(self, root):
        self.root = root
        self.sys = os.path.join(root, "sys")
        self.devices = {}          # bdf -> dict
        os.makedirs(os.path.join(self.sys, "bus", "pci", "devices"))

    def cpu(self, vendor_id, family):
        os.makedirs(os.path.join(self.root, "proc"), exist_ok=True)
        with open(os.path.join(self.root, "proc", "cpuinfo"), "w") as f:
            f.write("processor\t: 0\nvendor_id\t: %s\ncpu family\t: %d\n"
                    "model name\t: test cpu\n\n" % (vendor_id, family))

    def add(self, bdf, parent, kind, vendor, device, class_code, numa=0,
            group=None, driver=None):
        """A device under @parent (a BDF) or on its root bus (None);
        @kind: root, up, down (bridges) or endpoint."""
        if parent:
            rel = os.path.join(self.devices[parent]["rel"], bdf)
        else:
            domain, bus = bdf.split(":")[:2]
            rel = os.path.join("devices", "pci%s:%s" % (domain, bus), bdf)
        d = os.path.join(self.sys, rel)
        os.makedirs(d)
        self.devices[bdf] = {"rel": rel, "dir": d, "kind": kind,
                             "vendor": vendor, "device": device,
                             "class": class_code, "acs": None, "ats": None,
                             "group": group}
        for name, text in (("vendor", "0x%04x" % vendor),
                           ("device", "0x%04x" % device),
                           ("class", "0x%06x" % class_code),
                           ("subsystem_vendor", "0x0000"),
                           ("subsystem_device", "0x0000"),
                           ("numa_node", "%d" % numa),
                           ("modalias", "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02X"
                            "sc%02Xi%02X" % (vendor, device, 0, 0,
                                              class_code >> 16,
                                              (class_code >> 8) & 0xff,
                                              class_code & 0xff))):
            with open(os.path.join(d, name), "w") as f:
                f.write(text + "\n")
        if group is not None:
            os.symlink("../../../kernel/iommu_groups/%d" % group,
                       os.path.join(d, "iommu_group"))
        if driver:
            os.symlink("../../../bus/pci/drivers/%s" % driver,
                       os.path.join(d, "driver"))
        os.symlink("../../../" + rel,
                   os.path.join(self.sys, "bus", "pci", "devices", bdf))
        self._write_config(bdf)

    def set_acs(self, bdf, cap, ctrl):
        self.devices[bdf]["acs"] = (cap, ctrl)
        self._write_config(bdf)

    def set_ats(self, bdf, enabled):
        """An ATS capability; @enabled sets ATS Control's Enable bit."""
        self.devices[bdf]["ats"] = enabled
        self._write_config(bdf)

    def set_vpd(self, bdf, name, serial, v3):
        keywords = b"".join(k + bytes([len(v)]) + v for k, v in
                            ((b"SN", serial.encode()), (b"V3", v3.encode())))
        vpd = (b"\x82" + struct.pack("<H", len(name)) + name.encode() +
               b"\x90" + struct.pack("<H", len(keywords)) + keywords +
               b"\x78")
        with open(os.path.join(self.devices[bdf]["dir"], "vpd"), "wb") as f:
            f.write(vpd)

    def add_verbs(self, name, bdf):
        """An RDMA device of class/infiniband on @bdf, as mlx5_ib makes."""
        ib = os.path.join(self.devices[bdf]["dir"], "infiniband", name)
        os.makedirs(ib)
        os.symlink("../../../" + bdf, os.path.join(ib, "device"))
        cls = os.path.join(self.sys, "class", "infiniband")
        os.makedirs(cls, exist_ok=True)
        os.symlink("../../" + os.path.relpath(ib, self.sys),
                   os.path.join(cls, name))

    def iommu_groups(self):
        base = os.path.join(self.sys, "kernel", "iommu_groups")
        for bdf, dev in self.devices.items():
            if dev["group"] is None:
                continue
            members = os.path.join(base, str(dev["group"]), "devices")
            os.makedirs(members, exist_ok=True)
            os.symlink("../../../../" + dev["rel"],
                       os.path.join(members, bdf))

    def _write_config(self, bdf):
        dev = self.devices[bdf]
        cfg = bytearray(4096)
        bridge = dev["kind"] in ("root", "up", "down")
        struct.pack_into("<HH", cfg, 0, dev["vendor"], dev["device"])
        struct.pack_into("<I", cfg, 8, dev["class"] << 8)
        cfg[0x0e] = 1 if bridge else 0
        struct.pack_into("<H", cfg, 0x06, 0x0010)   # capability list
        cfg[0x34] = 0x40
        cfg[0x40:0x44] = bytes([0x01, 0x60, 0x03, 0x00])   # PM
        cfg[0x60:0x62] = bytes([0x10, 0x00])                # PCIe v2
        struct.pack_into("<H", cfg, 0x62,
                         0x2 | PORT_TYPES[dev["kind"]] << 4)
        struct.pack_into("<I", cfg, 0x6c, 0x00000104)     # Gen4 x16
        struct.pack_into("<H", cfg, 0x72, 0x0104)
        ext = []
        if dev["acs"] is not None:
            cap, ctrl = dev["acs"]
            ext.append((0x000d, struct.pack("<HH", cap, ctrl)))
        if dev["ats"] is not None:
            ext.append((0x000f, struct.pack("<HH", 0,
                                            0x8000 if dev["ats"] else 0)))
        off = 0x100
        for i, (cap_id, body) in enumerate(ext):
            nxt = off + 0x40 if i + 1 < len(ext) else 0
            struct.pack_into("<I", cfg, off, cap_id | 1 << 16 | nxt << 20)
            cfg[off + 4:off + 4 + len(body)] = body
            off = nxt
        with open(os.path.join(dev["dir"], "config"), "wb") as f:
            f.write(bytes(cfg))
