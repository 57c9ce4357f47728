#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The rule header's ACS quirks (gp_acs_quirk_list[] and the id lists its
functions match) against Linux's own pci_dev_acs_enabled[] and quirk
functions in drivers/pci/quirks.c, read from Debian's linux-source
(scripts/linux-source.sh unpacks it; GPUP2P_LINUX_SRC names another tree).
Any difference fails, and so does a missing source (setup unpacks it)."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import Tap  # noqa: E402
from linux_source import SRC, pci_ids, run_header_dump  # noqa: E402

# Prints the header's facts: "entry VENDOR DEVICE|any FUNCTION" lines in
# table order, then "ids FUNCTION FIRST LAST" for each id list.
DUMP = r"""
#include <stdio.h>
#include "gpup2p/p2p-rule.h"
static void ranges(const char *fn, const struct gp_acs_id_range *r,
                   unsigned n)
{
    unsigned i;
    for (i = 0; i < n; i++)
        printf("ids %s %04x %04x\n", fn, r[i].first, r[i].last);
}
int main(void)
{
    unsigned i;
    for (i = 0; i < GP_ACS_N(gp_acs_quirk_list); i++) {
        const struct gp_acs_quirk_entry *e = &gp_acs_quirk_list[i];
        if (e->any_device)
            printf("entry %04x any %s\n", e->vendor,
                   gp_acs_quirk_name(e->kind));
        else
            printf("entry %04x %04x %s\n", e->vendor, e->device,
                   gp_acs_quirk_name(e->kind));
    }
    for (i = 0; i < GP_ACS_N(gp_acs_quirk_intel_pch_ids); i++)
        printf("ids pci_quirk_intel_pch_acs %04x %04x\n",
               gp_acs_quirk_intel_pch_ids[i], gp_acs_quirk_intel_pch_ids[i]);
    ranges("pci_quirk_cavium_acs", gp_acs_quirk_cavium_ids,
           GP_ACS_N(gp_acs_quirk_cavium_ids));
    ranges("pci_quirk_zhaoxin_pcie_ports_acs", gp_acs_quirk_zhaoxin_ids,
           GP_ACS_N(gp_acs_quirk_zhaoxin_ids));
    ranges("pci_quirk_intel_spt_pch_acs", gp_acs_quirk_intel_spt_ids,
           GP_ACS_N(gp_acs_quirk_intel_spt_ids));
    ranges("pci_quirk_wangxun_nic_acs", gp_acs_quirk_wangxun_ids,
           GP_ACS_N(gp_acs_quirk_wangxun_ids));
    return 0;
}
"""

# Where each quirk's device ids live in quirks.c: the function whose
# "case" labels list them.
CASE_FUNCTIONS = {
    "pci_quirk_cavium_acs": "pci_quirk_cavium_acs_match",
    "pci_quirk_zhaoxin_pcie_ports_acs": "pci_quirk_zhaoxin_pcie_ports_acs",
    "pci_quirk_intel_spt_pch_acs": "pci_quirk_intel_spt_pch_acs_match",
    "pci_quirk_wangxun_nic_acs": "pci_quirk_wangxun_nic_acs",
}

# The controls each modelled function grants (pci_acs_ctrl_enabled()'s
# second argument), as the header's gp_acs_quirk_answer() grants them.
ISOLATE = "PCI_ACS_SV | PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_UF"
GRANTS = {
    "pci_quirk_cavium_acs": ISOLATE,
    "pci_quirk_xgene_acs": ISOLATE,
    "pci_quirk_zhaoxin_pcie_ports_acs": ISOLATE,
    "pci_quirk_intel_pch_acs": ISOLATE,
    "pci_quirk_qcom_rp_acs": ISOLATE,
    "pci_quirk_nxp_rp_acs": ISOLATE,
    "pci_quirk_rciep_acs": ISOLATE,
    "pci_quirk_brcm_acs": ISOLATE,
    "pci_quirk_loongson_acs": ISOLATE,
    "pci_quirk_wangxun_nic_acs": ISOLATE,
    "pci_quirk_mf_endpoint_acs": "PCI_ACS_SV | PCI_ACS_TB | PCI_ACS_RR | "
                                 "PCI_ACS_CR | PCI_ACS_UF | PCI_ACS_DT",
}


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def kernel_table(text, ids):
    body = re.search(r"\}\s*pci_dev_acs_enabled\[\]\s*=\s*\{(.*?)\n\};",
                     text, re.S).group(1)
    entries = []
    for m in re.finditer(r"\{\s*([^,{}]+?)\s*,\s*([^,{}]+?)\s*,\s*"
                         r"(\w+)\s*\}", strip_comments(body)):
        vendor, device, fn = (x.strip() for x in m.groups())

        def value(tok):
            return int(tok, 0) if re.match(r"^(0x)?[0-9a-fA-F]+$", tok) \
                else ids[tok]
        entries.append("entry %04x %s %s" % (
            value(vendor),
            "any" if device == "PCI_ANY_ID" else "%04x" % value(device), fn))
    return entries


def function_body(text, name):
    m = re.search(r"^(?:static\s+)?\w+\s+\**\s*%s\(.*?\n\}" % re.escape(name),
                  text, re.S | re.M)
    return strip_comments(m.group(0)) if m else None


def case_ranges(body):
    out = []
    for m in re.finditer(r"case\s+(0x[0-9a-fA-F]+)(?:\s*\.\.\.\s*"
                         r"(0x[0-9a-fA-F]+))?\s*:", body):
        first = int(m.group(1), 16)
        last = int(m.group(2), 16) if m.group(2) else first
        out.append((first, last))
    return out


def expand(ranges):
    return sorted({i for first, last in ranges
                   for i in range(first, last + 1)})


def kernel_ids(text):
    """The id lists of the quirk functions, by our function names."""
    out = {}
    arr = re.search(r"pci_quirk_intel_pch_acs_ids\[\]\s*=\s*\{(.*?)\};",
                    text, re.S)
    out["pci_quirk_intel_pch_acs"] = expand(
        (int(x, 16), int(x, 16)) for x in
        re.findall(r"0x[0-9a-fA-F]+", strip_comments(arr.group(1))))
    for quirk, fn in CASE_FUNCTIONS.items():
        body = function_body(text, fn)
        out[quirk] = expand(case_ranges(body)) if body else None
    return out


def ours():
    out = run_header_dump(DUMP)
    table = [line for line in out if line.startswith("entry ")]
    ranges = {}
    for line in out:
        if line.startswith("ids "):
            _, fn, first, last = line.split()
            ranges.setdefault(fn, []).append((int(first, 16),
                                              int(last, 16)))
    return table, {fn: expand(r) for fn, r in ranges.items()}


def main():
    path = os.path.join(SRC, "drivers", "pci", "quirks.c")
    t = Tap()
    # scripts/setup-debian.sh unpacks the source: without it the list
    # would be judged against nothing, so the test fails.
    if not t.ok(os.path.isfile(path), "Linux's quirks.c is at %s" % path,
                "run scripts/setup-debian.sh (it unpacks Debian's "
                "linux-source), or set GPUP2P_LINUX_SRC"):
        t.done()
    with open(path) as f:
        text = f.read()
    kernel = kernel_table(text, pci_ids(SRC))
    table, ranges = ours()
    t.ok(len(kernel) > 50, "Linux's pci_dev_acs_enabled[] parses (%d "
         "entries)" % len(kernel))
    t.ok(table == kernel, "the rule header's gp_acs_quirk_list[] is Linux's "
         "pci_dev_acs_enabled[], entry for entry and in order",
         "\n".join("kernel %-45s ours %s" % (k, o) for k, o in
                   zip(kernel + [""] * (len(table) - len(kernel)),
                       table + [""] * (len(kernel) - len(table)))
                   if k != o))
    for fn, want in sorted(kernel_ids(text).items()):
        have = set(ranges.get(fn, []))
        t.ok(want is not None and sorted(have) == want,
             "%s: the header matches the same device ids as Linux" % fn,
             "no id list found in quirks.c" if want is None else
             "only Linux's: %s\nonly ours: %s" % (
                 " ".join("%04x" % i for i in sorted(set(want) - have)),
                 " ".join("%04x" % i for i in sorted(have - set(want)))))
    for fn, grant in sorted(GRANTS.items()):
        body = function_body(text, fn)
        flat = re.sub(r"\s+", " ", body or "")
        t.ok(grant in flat, "%s grants %s, as the header models it"
             % (fn, grant))
    # pci_quirk_al_acs: root ports only; passes when nothing beyond
    # SV RR CR UF is asked.
    al = re.sub(r"\s+", " ", function_body(text, "pci_quirk_al_acs") or "")
    t.ok("PCI_EXP_TYPE_ROOT_PORT" in al and
         "acs_flags &= ~(%s);" % ISOLATE in al,
         "pci_quirk_al_acs: root ports, SV RR CR UF masked")
    # Sunrise Point's Control is the word at ACS + 8.
    t.ok(re.search(r"#define\s+INTEL_SPT_ACS_CTRL\s+\(PCI_ACS_CAP \+ 4\)",
                   text) is not None and
         re.search(r"#define\s+PCI_ACS_CAP\s+0x04", open(os.path.join(
             SRC, "include", "uapi", "linux", "pci_regs.h")).read())
         is not None,
         "pci_quirk_intel_spt_pch_acs reads Control at ACS + 8")
    # pci_acs_enabled() asks the quirks before anything else.
    pci = open(os.path.join(SRC, "drivers", "pci", "pci.c")).read()
    enabled = function_body(pci, "pci_acs_enabled") or ""
    first = re.search(r"\{\s*int ret;\s*ret = (\w+)\(", enabled)
    t.ok(first is not None and first.group(1) ==
         "pci_dev_specific_acs_enabled",
         "pci_acs_enabled() asks pci_dev_specific_acs_enabled() first")
    print("1..%d" % t.n)
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
