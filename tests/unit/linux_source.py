# SPDX-License-Identifier: GPL-2.0-or-later
"""What the tests that judge the rule header against Linux's own source
share: where Debian's linux-source is (scripts/linux-source.sh unpacks it;
GPUP2P_LINUX_SRC names another tree), its PCI id macros, and a C program
that prints the header's facts."""

import os
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.normpath(os.path.join(HERE, "..", ".."))
SRC = os.environ.get("GPUP2P_LINUX_SRC",
                     "/var/cache/gpup2p/linux-source-7.3")


def pci_ids(src=SRC):
    """PCI_VENDOR_ID_* and PCI_DEVICE_ID_* from include/linux/pci_ids.h."""
    ids = {}
    with open(os.path.join(src, "include", "linux", "pci_ids.h")) as f:
        for m in re.finditer(r"^#define\s+(PCI_\w+)\s+(0x[0-9a-fA-F]+)",
                             f.read(), re.M):
            ids[m.group(1)] = int(m.group(2), 16)
    return ids


def run_header_dump(code):
    """Build @code against kernel/include and return its output lines."""
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, "dump.c")
        exe = os.path.join(d, "dump")
        with open(c, "w") as f:
            f.write(code)
        subprocess.run(["gcc", "-Wall", "-Wextra", "-Werror", "-I",
                        os.path.join(PROJECT, "kernel", "include"), c, "-o",
                        exe], check=True)
        return subprocess.run([exe], capture_output=True, text=True,
                              check=True).stdout.splitlines()
