#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The kernel module in the virtual host: the kernel's P2P verdict against
the library's on every pair of devices of two topologies, in three boots
(two-numa with ACS redirect on and off; one rule, two readers: struct
pci_dev and sysfs), every UAPI rule, access by the udev rule's group and
mode, MAP and AUDIT refused, an ioctl fuzzer racing device removal, a
clean unload and a clean kernel log. Input errors both readers would share
(which device names a host bridge) are judged against p2pdma's code in
tests/unit/test-topo.c, as QEMU has no listed host bridge to show them."""

import json
import os
import re
import subprocess

from taplib import Tap, prepare, vhost_run, read_text, load_result, PROJECT

BAD_LOG = re.compile(r"WARNING:|BUG:|Oops|Call Trace|KASAN|UBSAN|"
                     r"refcount_t:|list_del corruption|general protection")


def check_verdicts(t, outdir, label, name="verdict-all"):
    """Every pair agrees; returns the results for further checks."""
    v = load_result(outdir, name + ".json")
    t.eq(read_text(outdir, name + ".rc"), "0",
         "%s: gpup2p verdict --all exits 0 (%s)"
         % (label, read_text(outdir, name + ".err")))
    pairs = v.get("pairs", 0)
    t.ok(pairs >= 100, "%s: %d ordered pairs asked" % (label, pairs))
    bad = [r for r in v.get("results", []) if not r["agree"]]
    t.eq(bad[:3], [], "%s: kernel == library on %d of %d pairs"
         % (label, v.get("agree", 0), pairs))
    return v.get("results", [])


def kinds(results):
    return {(r["a"], r["b"]): r["kernel"] for r in results}


def check_unload(t, outdir, label):
    t.eq(read_text(outdir, "insmod.rc"), "0", "%s: insmod" % label)
    t.eq(read_text(outdir, "rmmod.rc"), "0", "%s: rmmod is clean" % label)
    t.eq(read_text(outdir, "dev-gone.rc"), "1",
         "%s: /dev/gpup2p is gone after rmmod" % label)
    dmesg = read_text(outdir, "dmesg.txt")
    bad = [line for line in dmesg.splitlines() if BAD_LOG.search(line)]
    t.eq(bad[:5], [], "%s: no WARN, BUG, Oops or KASAN line in the kernel "
         "log" % label)


def boot(t, topology, mode, append, label):
    rc, out, err, outdir = vhost_run(
        topology, "sh tests/integration/kernel_helper.sh %s" % mode,
        timeout=600, append=append)
    t.ok(rc == 0, "%s: the scenario ran in the virtual host" % label,
         out + err)
    return outdir


def check_uapi(t, outdir):
    u = load_result(outdir, "uapi.json")
    t.eq((u.get("info"), u.get("info_api")), ("ok", 3),
         "GET_INFO answers API version 3")
    caps = u.get("info_caps", -1)
    t.eq(caps, 7, "capabilities: VERDICT, VM_VERDICT and IOMMU_GROUP; "
         "nothing that maps")
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
    t.eq(wrong, {}, "all %d UAPI cases give their errno (unknown flags "
         "per ioctl, argsz short/long/zero tail, reserved fields, unknown "
         "and old numbers)" % len(want))
    t.eq((u.get("info-argsz-min-untouched"),
          u.get("verdict-argsz-min-untouched")), (True, True),
         "an older caller's short struct: nothing written past its argsz")


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


def test(t):
    prepare()
    build = subprocess.run([os.path.join(PROJECT, "kernel", "build.sh")],
                           capture_output=True, text=True)
    if not t.ok(build.returncode == 0, "the module builds (kernel/build.sh)",
                build.stdout[-2000:] + build.stderr[-2000:]):
        return

    outdir = boot(t, "kernel-helper.json", "full", "", "kernel-helper")
    check_unload(t, outdir, "kernel-helper")
    res = check_verdicts(t, outdir, "kernel-helper")
    # The virtual host's CPU is AMD family 19h: the kernel's own CPU check
    # must let the root complex forward, as the library's does.
    t.ok({"direct", "host-bridge"} <= set(kinds(res).values()),
         "kernel-helper: direct and host-bridge (AMD Zen) verdicts among "
         "the pairs")
    check_uapi(t, outdir)
    check_access(t, outdir)
    check_cli(t, outdir)
    check_fuzz(t, outdir)
    check_verdicts(t, outdir, "kernel-helper after the fuzzer",
                   "verdict-after-fuzz")

    # acs-off also boots TCG's plain CPU (family 6, not Zen): there the
    # kernel's host bridge list lookup decides, and says none for Q35's.
    for label, append, cpu in [("two-numa acs-on", "", None),
                               ("two-numa acs-off",
                                "pci=disable_acs_redir=pci:1b36:000c",
                                "max")]:
        saved = os.environ.get("VHOST_CPU")
        if cpu:
            os.environ["VHOST_CPU"] = cpu
        try:
            outdir = boot(t, "two-numa.json", "verdict", append, label)
        finally:
            if saved is None:
                os.environ.pop("VHOST_CPU", None)
            else:
                os.environ["VHOST_CPU"] = saved
        check_unload(t, outdir, label)
        res = check_verdicts(t, outdir, label)
        if cpu:
            t.ok({"direct", "none"} <= set(kinds(res).values()),
                 "%s, family 6: direct and none verdicts among the pairs"
                 % label)
        redirects = [r for r in res if r["path_reason"] == 1]
        if label.endswith("on"):
            t.ok(len(redirects) > 0, "%s: pairs behind an ACS redirect "
                 "were compared (%d)" % (label, len(redirects)))
        else:
            t.eq(redirects, [], "%s: no pair sees an ACS redirect" % label)


if __name__ == "__main__":
    Tap().run(test)
