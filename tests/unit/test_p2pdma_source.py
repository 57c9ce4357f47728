#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The rule header's host bridge list and AMD condition against Linux's own
drivers/pci/p2pdma.c, read from Debian's linux-source (scripts/
linux-source.sh unpacks it; GPUP2P_LINUX_SRC names another tree). Any
difference fails, and so does a missing source: the list must never be
judged against nothing."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import Tap  # noqa: E402
from linux_source import PROJECT, SRC, pci_ids, run_header_dump  # noqa: E402

# Prints the header's table as "vendor device any same" lines.
DUMP = r"""
#include <stdio.h>
#include "gpup2p/p2p-rule.h"
int main(void)
{
    unsigned i;
    for (i = 0; i < sizeof(gp_hostbridge_p2p_list) /
                    sizeof(gp_hostbridge_p2p_list[0]); i++) {
        const struct gp_hostbridge_entry *e = &gp_hostbridge_p2p_list[i];
        printf("%04x %04x %d %d\n", e->vendor, e->device,
               !!(e->flags & GP_HOSTBRIDGE_ANY_DEVICE),
               !!(e->flags & GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE));
    }
    printf("amd-min-family %x\n", GP_AMD_P2P_MIN_FAMILY);
    return 0;
}
"""


def kernel_list(text, ids):
    body = re.search(r"pci_p2pdma_whitelist\[\]\s*=\s*\{(.*?)\n\};", text,
                     re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    entries = []
    for m in re.finditer(r"\{\s*([^,{}]+?)\s*,\s*([^,{}]+?)\s*,\s*"
                         r"([^,{}]+?)\s*\}", body):
        vendor, device, flags = (x.strip() for x in m.groups())

        def value(tok):
            return int(tok, 0) if re.match(r"^(0x)?[0-9a-fA-F]+$", tok) \
                else ids[tok]
        any_dev = device == "PCI_ANY_ID"
        entries.append((value(vendor), 0 if any_dev else value(device),
                        int(any_dev), int("REQ_SAME_HOST_BRIDGE" in flags)))
    return entries


def ours():
    out = run_header_dump(DUMP)
    table = [tuple(int(x, 16) if i < 2 else int(x)
                   for i, x in enumerate(line.split()))
             for line in out if not line.startswith("amd-min-family")]
    family = int(out[-1].split()[1], 16)
    return table, family


def main():
    t = Tap()
    path = os.path.join(SRC, "drivers", "pci", "p2pdma.c")
    if not t.ok(os.path.isfile(path), "Linux's p2pdma.c is at %s" % path,
                "run scripts/setup-debian.sh (it unpacks Debian's "
                "linux-source), or set GPUP2P_LINUX_SRC"):
        print("1..%d" % t.n)
        return 1
    with open(path) as f:
        text = f.read()
    kernel = kernel_list(text, pci_ids(SRC))
    table, family = ours()
    t.ok(len(kernel) > 10, "the kernel's list parses (%d entries)"
         % len(kernel))
    t.ok(table == kernel, "the rule header's list is the kernel's, entry "
         "for entry and in order",
         "kernel: %s\nours:   %s" % (
             [("%04x:%04x" % e[:2],) + e[2:] for e in kernel],
             [("%04x:%04x" % e[:2],) + e[2:] for e in table]))
    amd = re.search(r"static bool cpu_supports_p2pdma\(void\)\s*\{(.*?)\n\}",
                    text, re.S)
    t.ok(amd is not None, "cpu_supports_p2pdma() found")
    cond = re.findall(r"if\s*\((.*?)\)\s*\n\s*return true;",
                      amd.group(1) if amd else "", re.S)
    t.eq(cond, ["c->x86_vendor == X86_VENDOR_AMD && c->x86 >= 0x%x"
                % family],
         "cpu_supports_p2pdma(): AMD (X86_VENDOR_AMD only, so not Hygon) "
         "of family %xh or later, as the header says" % family)
    # The first matching entry decides, as __host_bridge_whitelist() walks.
    walk = re.search(r"static bool __host_bridge_whitelist\(.*?\n\}", text,
                     re.S)
    t.ok(walk is not None and "entry->device != PCI_ANY_ID" in walk.group(0)
         and "return true;" in walk.group(0),
         "__host_bridge_whitelist() matches PCI_ANY_ID and stops at the "
         "first entry of the vendor/device")
    check_ioctl_type(t)
    print("1..%d" % t.n)
    return 1 if t.failed else 0


def check_ioctl_type(t):
    """The module's ioctl type is listed by no subsystem in Linux's own
    Documentation/userspace-api/ioctl/ioctl-number.rst."""
    rst = os.path.join(SRC, "Documentation", "userspace-api", "ioctl",
                       "ioctl-number.rst")
    uapi = open(os.path.join(PROJECT, "kernel", "include", "uapi",
                             "gpup2p.h")).read()
    m = re.search(r"#define GPUP2P_TYPE\s+(0x[0-9A-Fa-f]+)", uapi)
    ours = int(m.group(1), 16) if m else None
    used = set()
    with open(rst) as f:
        for line in f:
            c = re.match(r"^(0x[0-9A-Fa-f]{2}|'.')\s", line)
            if c:
                code = c.group(1)
                used.add(int(code, 16) if code.startswith("0x")
                         else ord(code[1]))
    t.ok(len(used) > 100, "ioctl-number.rst parses (%d types)" % len(used))
    t.ok(ours is not None and ours not in used,
         "GPUP2P_TYPE (%s) is listed by no subsystem in ioctl-number.rst"
         % (hex(ours) if ours is not None else "?"))


if __name__ == "__main__":
    sys.exit(main())
