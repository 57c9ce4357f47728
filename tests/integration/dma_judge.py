# SPDX-License-Identifier: GPL-2.0-or-later
"""What the tests read from a nested guest's DMA (tests/kernel/guest-dma.c
into ivshmem's BAR, whose backing file the outer emulator keeps) and from
the virtual host's kernel log."""

import re

N = 4096        # bytes guest-dma writes


def pattern(seed):
    """The bytes guest-dma writes for @seed."""
    return bytes((i * 7 + seed) & 0xff for i in range(N))


def dmar_faults(dmesg, addr=None):
    """The IOMMU's fault lines: DMA that found no mapping. With @addr, only
    the faults on its page (VT-d reports the page: "fault addr 0x...")."""
    lines = [l for l in dmesg.splitlines()
             if "DMAR" in l and "fault" in l.lower()]
    if addr is None:
        return lines
    page = re.compile(r"fault addr 0x%x\b" % (addr & ~0xfff))
    return [l for l in lines if page.search(l)]


def kernel_problems(dmesg):
    """WARN, BUG, Oops and call traces. 7.x's SRSO notice (no IBPB
    microcode under TCG, docs/testbed.md) is a printed line, not a kernel
    warning; everything else counts."""
    return [l for l in dmesg.splitlines()
            if re.search(r"WARNING|BUG:|Oops|Call Trace", l) and not
            re.search(r"Speculative Return Stack Overflow: WARNING: See "
                      r"\S+ for mitigation options\.$", l)]
