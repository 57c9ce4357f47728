#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The kernel module in the virtual host, on two kernels: Debian's 6.12
(no CONFIG_PCI_P2PDMA: the module runs the shared rule over struct
pci_dev, one rule and two readers) and Linux 7.3 (tests/vhost/
build-linux.sh, CONFIG_PCI_P2PDMA=y: the module answers from p2pdma
itself). On each: the kernel's P2P verdicts against the library's on
every ordered pair of devices of three topologies, in four boots
(two-numa with ACS redirect on and off; acs-shapes: a two-level switch,
root ports that are functions of one device, a PCIe-to-PCI bridge), the
kernel's IOMMU groups as witness (no pair in one group goes through the
IOMMU), every UAPI rule, access by the udev rule's
group and mode, MAP and AUDIT refused, an ioctl fuzzer racing device
removal, a clean unload and a clean kernel log. Input errors both readers
would share (which device names a host bridge) are judged against
p2pdma's code in tests/unit/test-topo.c, as QEMU has no listed host
bridge to show them.

Where the 7.3 kernel's p2pdma answers otherwise than the library's rule,
the pair must be one the module itself marks (its p2pdma answer differs
from the shared rule over the hops it read, so the difference is the
kernel's code, not a reader's) and must match a stated reason in
P2PDMA_DIFFERENCES; any other difference fails.

VHOST_CACHE_7X names another 7.x build; KERNEL_HELPER_KERNELS (default
"6.12 7.3") picks the kernels."""

import json
import os
import re
import subprocess

from taplib import (Tap, prepare, vhost_run, read_text, load_result,
                    run_failure, PROJECT)

BAD_LOG = re.compile(r"WARNING:|BUG:|Oops|Call Trace|KASAN|UBSAN|"
                     r"refcount_t:|list_del corruption|general protection")
# 7.x prints this SRSO notice under TCG whatever the command line says
# (docs/testbed.md); it is a printed line, not a kernel warning.
SRSO_NOTICE = re.compile(r"Speculative Return Stack Overflow: WARNING: See "
                         r"\S+ for mitigation options\.$")
BUILD_LINUX = os.path.join(PROJECT, "tests", "vhost", "build-linux.sh")

# Where p2pdma may answer otherwise than the library's rule, and why: a
# regular expression over `gpup2p verdict`'s "differs" text, and the
# reason. On the virtual hosts none is expected: QEMU's host bridges
# (8086:29c0, pxb-pcie's root ports 1b36:000c) are on neither list, and
# p2pdma counts distance as the rule does (hops to the common bridge on
# each side; without one, every hop of both paths).
P2PDMA_DIFFERENCES = []


class Kernel:
    """One virtual host kernel: its cache, its module, what it answers."""

    def __init__(self, series, cache):
        self.series = series
        self.cache = cache
        self.p2pdma = series != "6.12"
        self.kodir = os.path.join(PROJECT, "build", "kernel" if
                                  series == "6.12" else "kernel-" + series)

    def label(self, what):
        return "%s: %s" % (self.series, what)


def explained(r):
    """The stated reason for a pair where p2pdma and the rule differ."""
    if not r.get("kernel_rule_differs"):
        return None
    for pattern, reason in P2PDMA_DIFFERENCES:
        if re.search(pattern, r.get("differs", "")):
            return reason
    return None


def lone_root_bus_devices(outdir):
    """Device -> its root bus, for the devices under a root bus that holds
    a single device (pci-paths.txt: each device's sysfs directory)."""
    root_of, first_level = {}, {}
    for line in read_text(outdir, "pci-paths.txt").splitlines():
        bdf, _, path = line.partition(" ")
        m = re.search(r"/devices/(pci[0-9a-f]+:[0-9a-f]+)/([^/]+)", path)
        if m:
            root_of[bdf] = m.group(1)
            first_level.setdefault(m.group(1), set()).add(m.group(2))
    return {bdf: root for bdf, root in root_of.items()
            if len(first_level[root]) == 1}


def check_verdicts(t, outdir, label, kernel, name="verdict-all"):
    """Every pair agrees, or differs for a stated reason (p2pdma's code
    against the rule); returns the results for further checks."""
    v = load_result(outdir, name + ".json")
    res = v.get("results", [])
    pairs = v.get("pairs", 0)
    t.ok(pairs >= 100, "%s: %d ordered pairs asked" % (label, pairs))
    source = "p2pdma" if kernel.p2pdma else "rule"
    t.eq(v.get("kernel_source"), source, "%s: the module answers from %s"
         % (label, source))
    t.eq(sorted({r.get("kernel_source") for r in res}), [source],
         "%s: every pair's bare-metal verdict is %s's" % (label, source))
    # The guest verdict's root complex half: p2pdma's answer for two
    # devices only the root complex joins, or the pair's own where its
    # walk crossed the host bridge. A root bus with a single device (a
    # pxb-pcie's one root port) offers no such two devices, so a pair
    # under it whose walk stays below the root port is the rule's.
    lone = lone_root_bus_devices(outdir)
    by_rule = [(r["a"], r["b"]) for r in res
               if r.get("kernel_guest_source") != source]
    if kernel.p2pdma:
        t.eq([p for p in by_rule if not (lone.get(p[0]) and
                                         lone.get(p[0]) == lone.get(p[1]))],
             [], "%s: the guest verdict's root complex half is p2pdma's on "
             "%d pairs; the rule's on %d, each under one root bus with a "
             "single device (nothing p2pdma could be asked about the root "
             "complex alone)" % (label, len(res) - len(by_rule),
                                 len(by_rule)))
    else:
        t.eq(by_rule, [], "%s: every pair's guest verdict is the rule's"
             % label)
    bad = [r for r in res if not r["agree"]]
    reasons = [(r, explained(r)) for r in bad]
    for r, why in reasons:
        if why:
            t.diag("%s: %s %s differs for a stated reason (%s): %s"
                   % (label, r["a"], r["b"], why, r["differs"]))
    unexplained = [r for r, why in reasons if not why]
    t.eq(unexplained[:3], [], "%s: kernel == library on %d of %d pairs, %d "
         "differ for a stated reason, %d for none" %
         (label, v.get("agree", 0), pairs, len(bad) - len(unexplained),
          len(unexplained)))
    t.eq(read_text(outdir, name + ".rc"), "0" if not bad else "1",
         "%s: gpup2p verdict --all exits %s (%s)" %
         (label, "0" if not bad else "1, as pairs differ",
          read_text(outdir, name + ".err")))
    return res


def check_groups_witness(t, results, label):
    """Isolation needs the kernel's own witness: no pair of two devices
    in one IOMMU group is ever "through the IOMMU" for a guest, from the
    module or the library. (Separate groups are not enough: Linux gives
    sibling downstream ports' subtrees their own groups without ACS.)"""
    pairs = [r for r in results if r["a"] != r["b"]]
    same = [r for r in pairs
            if r["iommu_group_a"] == r["iommu_group_b"] >= 0]
    wrong = ["%s %s group %d: module %s, library %s" % (
        r["a"], r["b"], r["iommu_group_a"], r["kernel_guest"],
        r["library_guest"]) for r in same
        if "through-iommu" in (r["kernel_guest"], r["library_guest"])]
    t.ok(len(same) > 0 and wrong == [],
         "%s: of %d ordered pairs, %d share an IOMMU group and none of "
         "those goes through the IOMMU for a guest" %
         (label, len(pairs), len(same)), "\n".join(wrong[:10]))
    apart = [r for r in pairs if r["iommu_group_a"] != r["iommu_group_b"]
             and r["kernel_guest"] != "through-iommu"]
    t.diag("%s: %d pairs in separate groups that still bypass or are "
           "unknown for a guest (ports without ACS between them)"
           % (label, len(apart)))


def check_shapes(t, outdir, label, results):
    """acs-shapes.json: the verdicts each shape must get, from the module
    and the library alike."""
    bdf = dict(line.partition(" ")[::2]
               for line in read_text(outdir, "bdfs").splitlines())
    if not t.ok(all(bdf.values()) and len(bdf) == 8,
                "%s: every stand-in found in the virtual host" % label,
                json.dumps(bdf)):
        return
    guest = {(r["a"], r["b"]): (r["kernel_guest"], r["library_guest"])
             for r in results}

    def verdicts(a, b):
        return guest.get((bdf[a], bdf[b]), ("missing", "missing"))

    for a, b, want, why in [
            ("gpu0", "gpu1", "bypasses-iommu",
             "under the lower switch of two (its ports have no ACS)"),
            ("gpu0", "gpu2", "bypasses-iommu",
             "one under the lower switch, one under the upper"),
            ("gpu3", "gpu4", "through-iommu",
             "under two functions of one multifunction root port (each "
             "with ACS), on a root complex that forwards"),
            ("gpu3", "gpu7", "through-iommu",
             "under a root port function and a plain root port")]:
        t.eq(verdicts(a, b), (want, want), "%s: %s and %s %s: %s for a "
             "guest, module and library" % (label, a, b, why, want))
    behind_bridge = [(a, b, verdicts(a, b)) for a in ("gpu5", "gpu6")
                     for b in sorted(bdf) if b != a
                     and "through-iommu" in verdicts(a, b)]
    t.eq(behind_bridge, [], "%s: a stand-in on the pcie-pci-bridge's "
         "conventional PCI bus never goes through the IOMMU with anything"
         % label)


def check_snapshot(t, outdir, label, kernel, results):
    """`gpup2p snapshot` with the module loaded recorded its verdicts: one
    line per ordered pair of GPUs and NICs, each the module's answer."""
    t.eq(read_text(outdir, "snapshot.rc"), "0", "%s: gpup2p snapshot (%s)"
         % (label, read_text(outdir, "snapshot.out")))
    lines = read_text(outdir, "kernel-verdicts.txt").splitlines()
    source = "p2pdma" if kernel.p2pdma else "rule"
    t.ok("source " + source in lines, "%s: the snapshot's kernel verdicts "
         "say they are %s's" % (label, source), "\n".join(lines[:3]))
    got = {}
    for line in lines:
        w = line.split()
        if len(w) == 6 and not line.startswith("#"):
            got[(w[0], w[1])] = (w[2], int(w[3]), w[4])
    want = {(r["a"], r["b"]): (r["kernel"], r["distance"], r["kernel_guest"])
            for r in results}
    wrong = {k: (v, want.get(k)) for k, v in got.items() if want.get(k) != v}
    t.ok(len(got) >= 2 and not wrong, "%s: the snapshot recorded %d GPU and "
         "NIC pairs, each as the module answers" % (label, len(got)),
         repr(list(wrong.items())[:3]))


def kinds(results):
    return {(r["a"], r["b"]): r["kernel"] for r in results}


def check_unload(t, outdir, label, kernel):
    t.ok(read_text(outdir, "uname.txt").startswith(kernel.series + "."),
         "%s: the virtual host runs Linux %s (%s)" %
         (label, kernel.series, read_text(outdir, "uname.txt")))
    t.eq(read_text(outdir, "insmod.rc"), "0", "%s: insmod" % label)
    t.eq(read_text(outdir, "rmmod.rc"), "0", "%s: rmmod is clean" % label)
    t.eq(read_text(outdir, "dev-gone.rc"), "1",
         "%s: /dev/gpup2p is gone after rmmod" % label)
    dmesg = read_text(outdir, "dmesg.txt")
    t.ok(os.path.exists(os.path.join(outdir, "dmesg.txt")) and
         "gpup2p" in dmesg, "%s: the kernel log was captured (it names "
         "the module)" % label, dmesg[-500:])
    bad = [line for line in dmesg.splitlines() if BAD_LOG.search(line) and
           not SRSO_NOTICE.search(line)]
    t.eq(bad[:5], [], "%s: no WARN, BUG, Oops or KASAN line in the kernel "
         "log" % label)


def boot(t, topology, mode, append, label, kernel):
    rc, out, err, outdir = vhost_run(
        topology, "GPUP2P_KO=%s sh tests/integration/kernel_helper.sh %s" %
        (os.path.join(kernel.kodir, "gpup2p.ko"), mode),
        timeout=600, append=append)
    t.ok(rc == 0, "%s: the scenario ran in the virtual host" % label,
         run_failure(rc, out, err))
    return outdir


def check_uapi(t, outdir, kernel):
    u = load_result(outdir, "uapi.json")
    t.eq((u.get("info"), u.get("info_api")), ("ok", 4),
         kernel.label("GET_INFO answers API version 4"))
    caps = u.get("info_caps", -1)
    t.eq(caps, 15 if kernel.p2pdma else 7,
         kernel.label("capabilities: VERDICT, VM_VERDICT and IOMMU_GROUP%s; "
                      "nothing that maps" % (", P2PDMA (CONFIG_PCI_P2PDMA)"
                                             if kernel.p2pdma else
                                             "; no P2PDMA (not built)")))
    # MAP and AUDIT are gone: API 2's numbers (type 0xB7, nsfs's) and the
    # first API's are unknown (ENOTTY), as any number is.
    want = {"api2-map": "ENOTTY", "api2-audit": "ENOTTY",
            "api2-verdict": "ENOTTY",
            "verdict": "ok", "verdict-no-device": "ENODEV",
            "unknown-next": "ENOTTY", "unknown-last": "ENOTTY",
            "unknown-type": "ENOTTY", "info-as-iowr": "ENOTTY",
            "old-map": "ENOTTY", "old-verdict": "ENOTTY"}
    for ioc in ["info", "verdict"]:
        want.update({
            ioc + "-reserved": "EINVAL",
            ioc + "-argsz-short": "EINVAL",
            ioc + "-argsz-min": "ok",
            ioc + "-long-zero-tail": "ok",
            ioc + "-long-tail": "E2BIG",
            ioc + "-bad-pointer": "EFAULT",
        })
        for bit in range(32):
            want["%s-flag-%d" % (ioc, bit)] = "EINVAL"
    want.update({"info-argsz-0": "EINVAL", "info-argsz-huge": "E2BIG",
                 "info-null": "EFAULT", "info-tail-unmapped": "EFAULT"})
    got = {k: u.get(k) for k in want}
    wrong = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    t.eq(wrong, {}, kernel.label(
        "all %d UAPI cases give their errno (unknown flags per ioctl, argsz "
        "short/long/zero tail, reserved fields, unknown and old numbers)"
        % len(want)))
    t.eq((u.get("info-argsz-min-untouched"),
          u.get("verdict-argsz-min-untouched")), (True, True),
         kernel.label("an older caller's short struct: nothing written past "
                      "its argsz"))


def check_access(t, outdir):
    t.eq(read_text(outdir, "dev-perm-loaded.txt"), "600 0",
         "/dev/gpup2p is root-only until the udev rule applies")
    sysusers = open(os.path.join(PROJECT, "debian",
                                 "gpup2p-dkms.sysusers")).read()
    made = re.findall(r"^g (\S+)", sysusers, re.M)
    group = read_text(outdir, "rule-group.txt")
    t.ok(group != "" and group in made, "the rule's GROUP (%s) is the group "
         "the package creates (%s)" % (group, made))
    t.eq(read_text(outdir, "dev-perm-rule.txt"), "660 4242",
         "the rule's MODE 0660 and GROUP, by name, applied by hand")
    m = load_result(outdir, "access-member.json")
    t.eq((m.get("uid"), m.get("open"), m.get("info")), (4243, "ok", "ok"),
         "a non-root user in the group opens and queries")
    o = load_result(outdir, "access-other.json")
    t.eq((o.get("uid"), o.get("open")), (4243, "EACCES"),
         "a non-root user outside the group cannot open (EACCES)")


def check_cli(t, outdir):
    for c in ["map", "unmap", "mappings", "audit"]:
        err = read_text(outdir, "cli-%s.err" % c)
        t.ok(read_text(outdir, "cli-%s.rc" % c) == "64" and
             "unknown command '%s'" % c in err,
             "gpup2p %s: no such command any more (exit 64)" % c, err)


def check_fuzz(t, outdir):
    f = load_result(outdir, "fuzz.json")
    t.eq(read_text(outdir, "fuzz.rc"), "0", "the fuzzer's processes ended "
         "normally (%s)" % read_text(outdir, "fuzz.err"))
    t.eq(f.get("operations"), 3 * 4 * 3000,
         "fuzzer: 3 processes x 4 threads x 3000 operations all ran")
    t.ok(f.get("removes", 0) > 0, "fuzzer: the GPU stand-in was removed and "
         "rescanned %s times meanwhile" % f.get("removes"))
    t.diag("fuzzer errno histogram: %s" % json.dumps(f.get("errno")))
    t.ok(len(f.get("errno", {})) >= 5, "fuzzer: reached several outcomes",
         json.dumps(f.get("errno")))


class Prefixed:
    """A Tap whose test names start with a kernel's series."""

    def __init__(self, t, prefix):
        self.t = t
        self.prefix = prefix

    def ok(self, cond, name, detail=""):
        return self.t.ok(cond, self.prefix + name, detail)

    def eq(self, got, want, name):
        return self.t.eq(got, want, self.prefix + name)

    def diag(self, text):
        self.t.diag(text)


def kernels(t):
    """The kernels asked for, each with its cache; 7.x is built (or found
    in the machine's cache) by tests/vhost/build-linux.sh."""
    out = []
    for series in os.environ.get("KERNEL_HELPER_KERNELS",
                                 "6.12 7.3").split():
        if series == "6.12":
            out.append(Kernel(series, os.path.join(PROJECT, "build",
                                                   "vhost")))
            continue
        cache = os.environ.get("VHOST_CACHE_7X")
        if not cache:
            p = subprocess.run(["sh", BUILD_LINUX, series],
                               capture_output=True, text=True)
            if not t.ok(p.returncode == 0, "the Linux %s virtual host's "
                        "kernel is built" % series, p.stderr[-3000:]):
                continue
            cache = p.stdout.strip().splitlines()[-1]
        out.append(Kernel(series, os.path.abspath(cache)))
    return out


def test_kernel(t, kernel):
    env = dict(os.environ, VHOST_CACHE=kernel.cache)
    build = subprocess.run([os.path.join(PROJECT, "kernel", "build.sh"),
                            kernel.kodir], capture_output=True, text=True,
                           env=env)
    if not t.ok(build.returncode == 0, kernel.label(
            "the module builds (kernel/build.sh, W=1)"),
                build.stdout[-2000:] + build.stderr[-2000:]):
        return
    warnings = [line for line in (build.stdout + build.stderr).splitlines()
                if "warning:" in line]
    t.eq(warnings, [], kernel.label("the module builds without a warning"))
    kt = Prefixed(t, kernel.label(""))

    label = kernel.label("kernel-helper")
    outdir = boot(t, "kernel-helper.json", "full", "", label, kernel)
    check_unload(t, outdir, label, kernel)
    res = check_verdicts(t, outdir, label, kernel)
    check_snapshot(t, outdir, label, kernel, res)
    # The virtual host's CPU is AMD family 19h: the kernel's own CPU check
    # must let the root complex forward, as the library's does.
    t.ok({"direct", "host-bridge"} <= set(kinds(res).values()),
         "%s: direct and host-bridge (AMD Zen) verdicts among the pairs"
         % label)
    check_uapi(t, outdir, kernel)
    check_access(kt, outdir)
    check_cli(kt, outdir)
    check_fuzz(kt, outdir)
    check_verdicts(t, outdir, label + " after the fuzzer", kernel,
                   "verdict-after-fuzz")

    # Linux's special shapes (issue 29): a two-level switch, root ports
    # as functions of one device, a PCIe-to-PCI bridge.
    label = kernel.label("acs-shapes")
    outdir = boot(t, "acs-shapes.json", "verdict", "", label, kernel)
    check_unload(t, outdir, label, kernel)
    res = check_verdicts(t, outdir, label, kernel)
    check_groups_witness(t, res, label)
    check_shapes(t, outdir, label, res)

    # acs-off also boots TCG's plain CPU (family 6, not Zen): there the
    # kernel's host bridge list lookup decides, and says none for Q35's.
    for what, append, cpu in [("two-numa acs-on", "", None),
                              ("two-numa acs-off",
                               "pci=disable_acs_redir=pci:1b36:000c",
                               "max")]:
        label = kernel.label(what)
        saved = os.environ.get("VHOST_CPU")
        if cpu:
            os.environ["VHOST_CPU"] = cpu
        try:
            outdir = boot(t, "two-numa.json", "verdict", append, label,
                          kernel)
        finally:
            if saved is None:
                os.environ.pop("VHOST_CPU", None)
            else:
                os.environ["VHOST_CPU"] = saved
        check_unload(t, outdir, label, kernel)
        res = check_verdicts(t, outdir, label, kernel)
        check_groups_witness(t, res, label)
        check_snapshot(t, outdir, label, kernel, res)
        if cpu:
            t.ok({"direct", "none"} <= set(kinds(res).values()),
                 "%s, family 6: direct and none verdicts among the pairs"
                 % label)
        redirects = [r for r in res if r["path_reason"] == 1]
        if what.endswith("on"):
            t.ok(len(redirects) > 0, "%s: pairs behind an ACS redirect "
                 "were compared (%d)" % (label, len(redirects)))
        else:
            t.eq(redirects, [], "%s: no pair sees an ACS redirect" % label)
        guest = {r["kernel_guest"] for r in res}
        if not what.endswith("on"):
            # No root port redirects (Linux's pci_acs_enabled() fails at
            # each): pairs below them bypass the IOMMU for a guest, and
            # on this family-6 CPU nothing goes through it.
            t.ok("bypasses-iommu" in guest and "through-iommu" not in guest,
                 "%s: guest verdicts bypass, never through the IOMMU (%s)"
                 % (label, sorted(guest)))
        elif kernel.p2pdma:
            # The guest verdict's root complex half, p2pdma's own: both
            # answers among the pairs that no port routes.
            t.ok({"through-iommu", "bypasses-iommu"} <= guest,
                 "%s: p2pdma's root complex answer decides the guest "
                 "verdicts that no port does (%s)" % (label, sorted(guest)))


def test(t):
    prepare()
    for kernel in kernels(t):
        saved = os.environ.get("VHOST_CACHE")
        os.environ["VHOST_CACHE"] = kernel.cache
        try:
            test_kernel(t, kernel)
        finally:
            if saved is None:
                os.environ.pop("VHOST_CACHE", None)
            else:
                os.environ["VHOST_CACHE"] = saved


if __name__ == "__main__":
    Tap().run(test)
