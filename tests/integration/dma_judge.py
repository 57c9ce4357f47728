# SPDX-License-Identifier: GPL-2.0-or-later
"""What the tests read from a nested guest's DMA (tests/kernel/guest-dma.c
into ivshmem's BAR, whose backing file the outer emulator keeps) and from
the virtual host's kernel log."""

import re

N = 4096        # bytes guest-dma writes


def pattern(seed):
    """The bytes guest-dma writes for @seed."""
    return bytes((i * 7 + seed) & 0xff for i in range(N))


def dmar_faults(dmesg, addr=None, device=None):
    """The IOMMU's fault lines: DMA that found no mapping. With @addr, only
    the faults on its page (VT-d reports the page: "fault addr 0x...");
    with @device (a BDF), only its writes."""
    lines = [l for l in dmesg.splitlines()
             if "DMAR" in l and "fault" in l.lower()]
    if addr is not None:
        page = re.compile(r"fault addr 0x%x\b" % (addr & ~0xfff))
        lines = [l for l in lines if page.search(l)]
    if device is not None:
        # Linux 6.12 names the device without its PCI domain, 7.x with it.
        bus = device[5:] if device.startswith("0000:") else device
        who = re.compile(r"DMA Write NO_PASID\] Request device "
                         r"\[(0000:)?%s\]" % re.escape(bus))
        lines = [l for l in lines if who.search(l)]
    return lines


def kernel_problems(dmesg):
    """WARN, BUG, Oops and call traces. 7.x's SRSO notice (no IBPB
    microcode under TCG, docs/testbed.md) is a printed line, not a kernel
    warning; everything else counts."""
    return [l for l in dmesg.splitlines()
            if re.search(r"WARNING|BUG:|Oops|Call Trace", l) and not
            re.search(r"Speculative Return Stack Overflow: WARNING: See "
                      r"\S+ for mitigation options\.$", l)]
