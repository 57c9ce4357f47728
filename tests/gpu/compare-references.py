#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Ratios of gpup2p-verify's figures to the independent references of the
same run (tests/gpu/run-gpu-tests.sh): nvbandwidth, cuda-samples'
p2pBandwidthLatencyTest and a PyTorch copy. Each figure is the median over
all ordered pairs (over all GPUs for the aggregates); the tool's runs are
listed one by one, since they alternate with the references.

    compare-references.py RESULTDIR   (one gpusN folder)
"""
import glob
import json
import os
import re
import statistics
import sys

d = sys.argv[1]


def tool_runs():
    runs = []
    for path in sorted(glob.glob(os.path.join(d, "verify-[0-9].out"))):
        with open(path) as f:
            try:
                runs.append((os.path.basename(path)[:-4], json.load(f)))
            except ValueError:
                pass
    return runs


def tool_median(doc, key, gpus=False):
    rows = doc["gpus"] if gpus else doc["pairs"]
    vals = [r[key]["median"] for r in rows if r.get(key)]
    return statistics.median(vals) if vals else None


def nvb():
    try:
        with open(os.path.join(d, "nvbandwidth.out")) as f:
            doc = json.load(f)["nvbandwidth"]
    except (OSError, ValueError):
        return {}
    out = {}
    for t in doc["testcases"]:
        rows = t.get("bandwidth_matrix", [])
        # A test case that prints several matrices (the bidirectional ones:
        # _write1, _write2, _total) has their rows one after the other in
        # the JSON: keep the last, the total.
        ncol = len(rows[0]) if rows else 0
        if ncol and len(rows) > ncol and len(rows) % ncol == 0:
            rows = rows[-ncol:]
        vals = [float(v) for row in rows for v in row
                if v not in ("N/A", "")]
        if vals and t.get("status") == "Passed":
            out[t["name"]] = statistics.median(vals)
    return out


def p2pblt():
    try:
        text = open(os.path.join(d, "p2pBandwidthLatencyTest.out")).read()
    except OSError:
        return {}
    out = {}
    for key, title in (("uni", r"Unidirectional P2P=Enabled Bandwidth"),
                       ("bi", r"Bidirectional P2P=Enabled Bandwidth"),
                       ("lat", r"P2P=Enabled Latency \(P2P Writes\)")):
        m = re.search(title + r".*?\n(.*?)\n(?:\S|$)", text, re.S)
        if not m:
            continue
        vals = []
        for i, line in enumerate(m.group(1).splitlines()[1:]):
            cells = line.split()[1:]
            vals += [float(v) for j, v in enumerate(cells) if j != i]
        if vals:
            out[key] = statistics.median(vals)
    return out


def torch():
    try:
        rows = [json.loads(x) for x in
                open(os.path.join(d, "torch-copy.out")) if x.strip()]
    except OSError:
        return None
    return statistics.median(r["gbps"] for r in rows) if rows else None


ref_nvb = nvb()
ref_p2p = p2pblt()
ref_torch = torch()
# figure key, aggregate?, scale (tool value -> reference unit), references
table = [
    ("unidirectional_ce_gbps", False, 1, [
        ("nvbandwidth device_to_device_memcpy_write_ce",
         ref_nvb.get("device_to_device_memcpy_write_ce")),
        ("p2pBandwidthLatencyTest unidirectional P2P=Enabled",
         ref_p2p.get("uni")),
        ("PyTorch copy_", ref_torch)]),
    ("unidirectional_ce_read_gbps", False, 1, [
        ("nvbandwidth device_to_device_memcpy_read_ce",
         ref_nvb.get("device_to_device_memcpy_read_ce"))]),
    ("bidirectional_ce_gbps", False, 1, [
        ("nvbandwidth device_to_device_bidirectional_memcpy_write_ce "
         "(_total)",
         ref_nvb.get("device_to_device_bidirectional_memcpy_write_ce"))]),
    ("bidirectional_ce_gbps", False, 1, [
        ("p2pBandwidthLatencyTest bidirectional P2P=Enabled (total)",
         ref_p2p.get("bi"))]),
    ("unidirectional_sm_gbps", False, 1, [
        ("nvbandwidth device_to_device_memcpy_write_sm",
         ref_nvb.get("device_to_device_memcpy_write_sm"))]),
    ("unidirectional_sm_read_gbps", False, 1, [
        ("nvbandwidth device_to_device_memcpy_read_sm",
         ref_nvb.get("device_to_device_memcpy_read_sm"))]),
    ("latency_sm_us", False, 1000, [
        ("nvbandwidth device_to_device_latency_sm (ns)",
         ref_nvb.get("device_to_device_latency_sm"))]),
    ("latency_ce_us", False, 1, [
        ("p2pBandwidthLatencyTest P2P=Enabled latency (P2P writes)",
         ref_p2p.get("lat"))]),
    ("all_to_one_ce_gbps", True, 1, [
        ("nvbandwidth all_to_one_write_ce",
         ref_nvb.get("all_to_one_write_ce"))]),
    ("one_to_all_ce_gbps", True, 1, [
        ("nvbandwidth one_to_all_write_ce",
         ref_nvb.get("one_to_all_write_ce"))]),
    # Measurable on one GPU: the comparison a one-GPU machine gives.
    ("host_to_device_ce_gbps", True, 1, [
        ("nvbandwidth host_to_device_memcpy_ce",
         ref_nvb.get("host_to_device_memcpy_ce"))]),
    ("device_to_host_ce_gbps", True, 1, [
        ("nvbandwidth device_to_host_memcpy_ce",
         ref_nvb.get("device_to_host_memcpy_ce"))]),
]
runs = tool_runs()
print("| figure | reference | reference value | " +
      " | ".join("%s ratio" % name for name, _ in runs) + " |")
print("| --- | --- | --- |" + " --- |" * len(runs))
for key, agg, scale, refs in table:
    for name, ref in refs:
        if ref is None:
            continue
        ratios = []
        for _, doc in runs:
            v = tool_median(doc, key, agg)
            ratios.append("%.3f" % (v * scale / ref) if v else "n/a")
        print("| %s | %s | %.2f | %s |" % (key, name, ref, " | ".join(ratios)))
