#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The markdown a GPU campaign's closing note and docs need, from its
folder (tests/gpu/campaign.sh's OUTDIR, one part or both, or a folder of
modes-bench.sh): each mode's wall times and exit codes, where the tool's
phase seconds go, each --benchmark figure over nvbandwidth's of the same
round (min, median, max over runs and pairs, and per pair),
p2pBandwidthLatencyTest's matrices beside the tool's, NCCL's topology dump
without and with the tool's file, the CUDA_VISIBLE_DEVICES cases and
persistence mode.

    campaign-summary.py OUTDIR

Reads runs*.tsv, machine-*.txt, nvidia-smi-topo.txt, the files of OUTDIR's
raw-*/ folders and every *.tar.gz in OUTDIR, without unpacking it. A file
that is absent or that does not parse is reported as missing, never as a
pass; exits 1 when anything is missing or not as it must be, else 0.
Standard library only.
"""
import json
import os
import re
import statistics
import sys
import tarfile

missing = []
wrong = []


def note_missing(what):
    missing.append(what)
    print("**missing**: %s" % what)
    print()


def note_wrong(what):
    wrong.append(what)


def norm(name):
    """A member or file path as the run names it: no ./, no raw-PART/."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if parts and re.fullmatch(r"raw(-[A-Za-z0-9]+)?", parts[0]) and \
            len(parts) > 1:
        parts = parts[1:]
    return "/".join(parts)


def inner(name):
    """norm() for a file of a raw folder or an archive, whose runs.tsv is
    the copy of OUTDIR's runs-PART.tsv: kept apart from it."""
    n = norm(name)
    return "archived-runs.tsv" if n == "runs.tsv" else n


def load(top):
    files = {}
    for root, _, names in os.walk(top):
        for n in names:
            path = os.path.join(root, n)
            rel = os.path.relpath(path, top)
            if n.endswith(".tar.gz") and root == top:
                try:
                    with tarfile.open(path) as t:
                        for m in t.getmembers():
                            f = t.extractfile(m) if m.isfile() else None
                            if f:
                                files.setdefault(inner(m.name), f.read())
                except (OSError, tarfile.TarError) as e:
                    note_missing("%s: not a readable archive (%s)" % (rel, e))
                continue
            with open(path, "rb") as f:
                files[norm(rel) if root == top else inner(rel)] = f.read()
    return files


def text(files, name):
    b = files.get(name)
    return b.decode("utf-8", "replace") if b is not None else None


def json_doc(files, name):
    t = text(files, name)
    if t is None:
        return None
    try:
        return json.loads(t)
    except ValueError:
        return None


def runs_table(files):
    """[(name, exit, wall)] in order, from OUTDIR's runs*.tsv (or the
    archive's runs.tsv where OUTDIR has none)."""
    names = sorted(n for n in files if re.fullmatch(r"runs(-\w+)?\.tsv", n))
    if not names and "archived-runs.tsv" in files:
        names = ["archived-runs.tsv"]
    rows = []
    for n in names:
        for line in text(files, n).splitlines()[1:]:
            cells = line.split("\t")
            if len(cells) != 3:
                continue
            try:
                wall = float(cells[2])
            except ValueError:
                wall = None
            rows.append((cells[0], cells[1], wall))
    return rows


def group_of(name):
    """validate-2 -> validate; nvbandwidth-3 -> nvbandwidth; the first
    reference run has no number."""
    return re.sub(r"-\d+$", "", name)


MODE_NAMES = {
    "validate": "default (validation) `--skip-rdma --json`",
    "quick": "`--quick`",
    "verify": "`--benchmark`",
    "validate-text": "default, text report",
    "validate-pm": "default after `nvidia-smi -pm 1`",
    "validate-pmoff": "default after `nvidia-smi -pm 0`",
    "nccl-validate": "default with `--nccl-topo`",
    "nvbandwidth": "nvbandwidth `-j -t` (10 cases)",
    "p2pBandwidthLatencyTest": "p2pBandwidthLatencyTest",
    "sub2-validate": "2 GPUs: default",
    "sub2-quick": "2 GPUs: `--quick`",
    "sub2-verify": "2 GPUs: `--benchmark`",
    "sub2-nvbandwidth": "2 GPUs: nvbandwidth",
    "sub2-p2pBandwidthLatencyTest": "2 GPUs: p2pBandwidthLatencyTest",
    "cvd0-validate": "`CUDA_VISIBLE_DEVICES=0` default",
    "cvd0-quick": "`CUDA_VISIBLE_DEVICES=0` `--quick`",
    "nccl-topo-used": "NCCL dump without, with, control (nccl_topo_used.py)",
}


def med(vals):
    return statistics.median(vals) if vals else None


def fmt(v, f="%.2f"):
    return f % v if v is not None else "n/a"


def section_runs(rows):
    print("## Wall time per mode (runs*.tsv)")
    print()
    if not rows:
        note_missing("runs.tsv / runs-PART.tsv")
        return
    groups = {}
    for name, rc, wall in rows:
        groups.setdefault(group_of(name), []).append((name, rc, wall))
    print("| mode | runs | exit codes | wall s, each | median s |")
    print("| --- | --- | --- | --- | --- |")
    for g, rs in groups.items():
        walls = [w for _, rc, w in rs if w is not None and rc != "skipped"]
        print("| %s | %d | %s | %s | %s |" % (
            MODE_NAMES.get(g, "`%s`" % g), len(rs),
            ", ".join(rc for _, rc, _ in rs),
            ", ".join(fmt(w) for w in walls) or "-", fmt(med(walls))))
        for name, rc, _ in rs:
            if rc == "skipped":
                note_missing("%s: skipped, the time budget ran out" % name)
    print()


PHASES = ["cuda_init", "discover", "allocate", "peer_access", "pair_checks",
          "figures", "teardown"]


def section_phases(files, rows):
    print("## The tool's own phase seconds (`phase_seconds`, medians)")
    print()
    groups = {}
    for name, _, _ in rows:
        doc = json_doc(files, name + ".out")
        if isinstance(doc, dict) and isinstance(doc.get("phase_seconds"),
                                                 dict):
            groups.setdefault(group_of(name), []).append(doc)
    if not groups:
        note_missing("no run's JSON with phase_seconds")
        return
    print("| mode | runs | seconds | " + " | ".join(PHASES) + " |")
    print("| --- | --- | --- |" + " --- |" * len(PHASES))
    for g, docs in groups.items():
        cells = [fmt(med([d["phase_seconds"].get(p) for d in docs
                          if isinstance(d["phase_seconds"].get(p),
                                        (int, float))]), "%.3f")
                 for p in PHASES]
        secs = med([d["seconds"] for d in docs
                    if isinstance(d.get("seconds"), (int, float))])
        print("| %s | %d | %s | %s |" % (MODE_NAMES.get(g, "`%s`" % g),
                                         len(docs), fmt(secs),
                                         " | ".join(cells)))
    print()


# --- nvbandwidth ----------------------------------------------------------

def nvb_matrices(doc):
    """test name -> square matrix of floats (None for N/A), for passed
    cases; the bidirectional cases keep their last (_total) matrix."""
    out = {}
    try:
        cases = doc["nvbandwidth"]["testcases"]
    except (KeyError, TypeError):
        return None
    for t in cases:
        rows = t.get("bandwidth_matrix") or []
        if t.get("status") != "Passed" or not rows:
            continue
        ncol = len(rows[0])
        if len(rows) > ncol and len(rows) % ncol == 0:
            rows = rows[-ncol:]

        def num(v):
            try:
                return float(v)
            except (TypeError, ValueError):
                return None
        out[t["name"]] = [[num(v) for v in row] for row in rows]
    return out


# key, aggregate (per GPU)?, nvbandwidth test, orientation, scale, unit
FIGURES = [
    ("unidirectional_ce_gbps", False, "device_to_device_memcpy_write_ce",
     "ab", 1),
    ("unidirectional_ce_read_gbps", False, "device_to_device_memcpy_read_ce",
     "ba", 1),
    ("bidirectional_ce_gbps", False,
     "device_to_device_bidirectional_memcpy_write_ce", "ab", 1),
    ("unidirectional_sm_gbps", False, "device_to_device_memcpy_write_sm",
     "ab", 1),
    ("unidirectional_sm_read_gbps", False, "device_to_device_memcpy_read_sm",
     "ba", 1),
    ("latency_sm_us", False, "device_to_device_latency_sm", "ab", 1000),
    ("all_to_one_ce_gbps", True, "all_to_one_write_ce", "g", 1),
    ("one_to_all_ce_gbps", True, "one_to_all_write_ce", "g", 1),
    ("host_to_device_ce_gbps", True, "host_to_device_memcpy_ce", "g", 1),
    ("device_to_host_ce_gbps", True, "device_to_host_memcpy_ce", "g", 1),
]


def cuda_of(doc, idx):
    try:
        c = doc["gpus"][idx].get("cuda_index")
    except (IndexError, KeyError, TypeError, AttributeError):
        return None
    return c if isinstance(c, int) else None


def cell(m, i, j):
    try:
        return m[i][j]
    except (IndexError, TypeError):
        return None


def ratios_of(doc, nvb, key, agg, test, orient, scale):
    """{(a, b) or (g,): ratio} for one tool run against one nvbandwidth
    run; a, b, g are CUDA ordinals."""
    m = nvb.get(test)
    out = {}
    if m is None:
        return out
    if agg:
        for i, g in enumerate(doc.get("gpus") or []):
            c = cuda_of(doc, i)
            v = (g.get(key) or {}).get("median") if isinstance(
                g.get(key), dict) else None
            ref = cell(m, 0, c) if c is not None else None
            if v and ref:
                out[(c,)] = v * scale / ref
        return out
    for p in doc.get("pairs") or []:
        a, b = cuda_of(doc, p.get("a")), cuda_of(doc, p.get("b"))
        v = p.get(key)
        v = v.get("median") if isinstance(v, dict) else None
        if a is None or b is None or not v:
            continue
        ref = cell(m, a, b) if orient == "ab" else cell(m, b, a)
        if ref:
            out[(a, b)] = v * scale / ref
    return out


def matrix_md(values, n, fmtcell):
    """values {(a, b): x} as an n x n markdown table (rows a)."""
    lines = ["| a \\ b | " + " | ".join(str(j) for j in range(n)) + " |",
             "| --- |" + " --- |" * n]
    for i in range(n):
        lines.append("| %d | " % i + " | ".join(
            fmtcell(values.get((i, j))) if i != j else "-"
            for j in range(n)) + " |")
    return "\n".join(lines)


def section_benchmark(files, rows, prefix, title):
    tool_names = [n for n, _, _ in rows
                  if re.fullmatch(re.escape(prefix) + r"verify(-\d+)?", n)]
    print("## %s: `--benchmark` over nvbandwidth of the same round" % title)
    print()
    if not tool_names:
        note_missing("%s: no --benchmark run (%s)" % (
            title, "verify-N" if not prefix else prefix + "verify"))
        return
    rounds = []
    for n in tool_names:
        r = re.search(r"-(\d+)$", n)
        nvb_name = prefix + "nvbandwidth"
        if r and r.group(1) != "1":
            nvb_name += "-" + r.group(1)
        doc = json_doc(files, n + ".out")
        nvb_doc = json_doc(files, nvb_name + ".out")
        nvb = nvb_matrices(nvb_doc) if nvb_doc is not None else None
        if not isinstance(doc, dict):
            note_missing("%s.out: the tool's JSON (absent or not JSON)" % n)
            continue
        if not nvb:
            note_missing("%s.out: nvbandwidth's JSON for %s (absent, not "
                         "JSON or no passed case)" % (nvb_name, n))
            continue
        rounds.append((n, nvb_name, doc, nvb))
    if not rounds:
        return
    print("Rounds: " + ", ".join("%s / %s" % (n, v) for n, v, _, _ in rounds)
          + ". Ratio = the tool's median over nvbandwidth's cell (latency: "
          "lower is better).")
    print()
    print("| figure | nvbandwidth | values (runs x pairs) | min | median | "
          "max |")
    print("| --- | --- | --- | --- | --- | --- |")
    per_pair = {}
    for key, agg, test, orient, scale in FIGURES:
        vals = {}
        for _, _, doc, nvb in rounds:
            for k, v in ratios_of(doc, nvb, key, agg, test, orient,
                                  scale).items():
                vals.setdefault(k, []).append(v)
        flat = [v for vs in vals.values() for v in vs]
        if not flat:
            print("| %s | %s | 0 | **missing** | | |" % (key, test))
            missing.append("%s: %s against %s" % (title, key, test))
            continue
        print("| %s | %s | %d | %.3f | %.3f | %.3f |" % (
            key, test, len(flat), min(flat), statistics.median(flat),
            max(flat)))
        per_pair[(key, agg, test)] = {k: statistics.median(v)
                                      for k, v in vals.items()}
    print()
    n = max([len(doc.get("gpus") or []) for _, _, doc, _ in rounds] + [0])
    ncuda = max([c + 1 for _, _, doc, _ in rounds
                 for c in (cuda_of(doc, i) for i in range(n))
                 if c is not None] + [0])
    print("### %s: per pair, median ratio over the rounds" % title)
    print()
    for (key, agg, test), vals in per_pair.items():
        print("`%s` / `%s`:" % (key, test))
        print()
        if agg:
            print("| GPU | " + " | ".join(str(g) for g in range(ncuda)) +
                  " |")
            print("| --- |" + " --- |" * ncuda)
            print("| ratio | " + " | ".join(
                fmt(vals.get((g,)), "%.3f") for g in range(ncuda)) + " |")
        else:
            print(matrix_md(vals, ncuda, lambda v: fmt(v, "%.3f")))
        print()


# --- p2pBandwidthLatencyTest ---------------------------------------------

# title line as the sample prints it, the header's first cell
P2P_SECTIONS = [
    ("uni", "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)",
     "D\\D", "unidirectional_ce_gbps", "GB/s"),
    ("bi", "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", "D\\D",
     "bidirectional_ce_gbps", "GB/s"),
    ("lat", "P2P=Enabled Latency (P2P Writes) Matrix (us)", "GPU",
     "latency_ce_us", "us"),
]


def p2p_matrix(lines, title, head):
    """The n x n matrix under TITLE: the header row names columns 0..n-1,
    then rows 0..n-1 of n numbers; None when anything differs."""
    try:
        at = [line.strip() for line in lines].index(title)
    except ValueError:
        return None
    hdr = lines[at + 1].split() if at + 1 < len(lines) else []
    if not hdr or hdr[0] != head or hdr[1:] != [str(j)
                                                for j in range(len(hdr) - 1)]:
        return None
    n = len(hdr) - 1
    if n < 1 or at + 1 + n >= len(lines):
        return None
    m = []
    for i in range(n):
        cells = lines[at + 2 + i].split()
        if len(cells) != n + 1 or cells[0] != str(i):
            return None
        try:
            m.append([float(v) for v in cells[1:]])
        except ValueError:
            return None
    return m


def parse_p2p(t):
    """{uni, bi, lat: matrix} or an error string."""
    if t is None:
        return "absent"
    if "Cuda failure" in t:
        return "a CUDA failure: " + next(x for x in t.splitlines()
                                         if "Cuda failure" in x).strip()
    lines = t.splitlines()
    out = {}
    for key, title, head, _, _ in P2P_SECTIONS:
        m = p2p_matrix(lines, title, head)
        if m is None:
            return "no well-formed matrix under \"%s\"" % title
        out[key] = m
    if len({len(m) for m in out.values()}) != 1:
        return "matrices of different sizes"
    return out


def section_p2p(files, rows, prefix, title):
    print("## %s: p2pBandwidthLatencyTest beside `--benchmark`" % title)
    print()
    names = [n for n, _, _ in rows if re.fullmatch(
        re.escape(prefix) + r"p2pBandwidthLatencyTest(-\d+)?", n)]
    rcs = {n: rc for n, rc, _ in rows}
    good = []
    for n in names:
        if rcs.get(n) != "0":
            note_missing("%s: exit %s" % (n, rcs.get(n)))
            continue
        res = parse_p2p(text(files, n + ".out"))
        if isinstance(res, str):
            note_missing("%s.out: %s" % (n, res))
            continue
        good.append(res)
    if not names:
        note_missing("%s: no p2pBandwidthLatencyTest run" % title)
    tools = [json_doc(files, n + ".out") for n, _, _ in rows
             if re.fullmatch(re.escape(prefix) + r"verify(-\d+)?", n)]
    tools = [d for d in tools if isinstance(d, dict)]
    if not good or not tools:
        if good and not tools:
            note_missing("%s: no --benchmark JSON to set beside it" % title)
        return
    n = len(good[0]["uni"])
    print("%d p2pBandwidthLatencyTest run(s), %d `--benchmark` run(s); "
          "each cell: p2pBandwidthLatencyTest / the tool (the tool over "
          "it), medians over the runs; row = source, column = destination "
          "(the sample's P2P writes, the tool's a -> b)." % (len(good),
                                                            len(tools)))
    print()
    for key, sec_title, _, tool_key, unit in P2P_SECTIONS:
        ref = {}
        for g in good:
            if len(g[key]) != n:
                continue
            for i in range(n):
                for j in range(n):
                    ref.setdefault((i, j), []).append(g[key][i][j])
        tool = {}
        for d in tools:
            for p in d.get("pairs") or []:
                a, b = cuda_of(d, p.get("a")), cuda_of(d, p.get("b"))
                v = p.get(tool_key)
                if a is None or b is None or not isinstance(v, dict) or \
                        v.get("median") is None:
                    continue
                tool.setdefault((a, b), []).append(v["median"])
        cells = {}
        ratios = []
        for k, vs in ref.items():
            r = statistics.median(vs)
            t = med(tool.get(k, []))
            ratio = t / r if (t is not None and r) else None
            if ratio is not None and k[0] != k[1]:
                ratios.append(ratio)
            cells[k] = "%.2f / %s (%s)" % (r, fmt(t), fmt(ratio, "%.3f"))
        print("%s against `%s` (%s):" % (sec_title, tool_key, unit))
        print()
        print(matrix_md(cells, n, lambda c: c or "n/a"))
        print()
        if ratios:
            print("Off the diagonal: ratio min %.3f, median %.3f, max %.3f."
                  % (min(ratios), statistics.median(ratios), max(ratios)))
        else:
            print("**missing**: no pair of the tool to compare")
            missing.append("%s: %s beside p2pBandwidthLatencyTest" %
                           (title, tool_key))
        print()


# --- NCCL -----------------------------------------------------------------

def allreduce_result(t):
    """nccl_allreduce.py's last JSON line in a log, or None."""
    for line in reversed((t or "").splitlines()):
        line = line.strip()
        if line.startswith("{") and "sum_ok" in line:
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def section_nccl(files, rows):
    print("## NCCL's topology dump without and with the tool's file")
    print()
    rcs = {n: rc for n, rc, _ in rows}
    if "nccl-topo-used" not in rcs and "nccl-topo-used.out" not in files:
        note_missing("NCCL: no nccl-topo-used run")
        return
    print("- `nccl-validate` (writes the file): exit %s; `nccl-topo-used`: "
          "exit %s" % (rcs.get("nccl-validate", "n/a"),
                       rcs.get("nccl-topo-used", "n/a")))
    if "nccl-topo.xml" not in files:
        note_missing("nccl-topo.xml, the tool's file")
    doc = json_doc(files, "nccl-topo-used.out")
    if isinstance(doc, dict) and isinstance(doc.get("checks"), dict):
        for k, v in doc["checks"].items():
            print("- %s: %s" % (k, "yes" if v else "**NO**"))
            if not v:
                note_wrong("NCCL: " + k)
    else:
        note_missing("nccl-topo-used.out: nccl_topo_used.py's JSON")
    for way in ("without", "with", "control"):
        res = allreduce_result(text(files, "nccl-topo-used/nccl-%s.log" %
                                    way))
        what = {"without": "without the file", "with": "with the file",
                "control": "with the control copy"}[way]
        if res is None:
            print("- all-reduce %s: **missing** (no result line in "
                  "nccl-topo-used/nccl-%s.log)" % (what, way))
            missing.append("nccl-topo-used/nccl-%s.log: the all-reduce's "
                           "result line" % way)
            continue
        print("- all-reduce %s: %s GPUs, sum_ok %s, %s s" % (
            what, res.get("gpus"), res.get("sum_ok"), res.get("seconds")))
        if res.get("sum_ok") is not True:
            note_wrong("NCCL all-reduce %s: sum wrong" % way)
    print()
    diff = text(files, "nccl-dump.diff")
    have = all("nccl-topo-used/dump-%s.xml" % w in files
               for w in ("without", "with"))
    if diff is None or not have:
        note_missing("nccl-dump.diff or the two dumps (nccl-topo-used/"
                     "dump-without.xml, dump-with.xml)")
        return
    body = [x for x in diff.splitlines()
            if x[:1] in "+-" and not x.startswith(("+++", "---"))]
    plus = sum(1 for x in body if x.startswith("+"))
    print("`diff -u dump-without.xml dump-with.xml`: %d line(s) only "
          "without the file, %d only with it%s" % (
              len(body) - plus, plus, ":" if body else
              " (NCCL built the same topology both ways)"))
    print()
    if body:
        print("```")
        for x in body[:40]:
            print(x)
        if len(body) > 40:
            print("... %d more" % (len(body) - 40))
        print("```")
        print()


# --- CUDA_VISIBLE_DEVICES -------------------------------------------------

def section_cvd(files, rows):
    print("## CUDA_VISIBLE_DEVICES")
    print()
    rcs = {n: rc for n, rc, _ in rows}
    cases = [n for n, _, _ in rows
             if re.fullmatch(r"cvd0-\w+|sub2-(validate|quick|verify)", n)]
    if not cases:
        note_missing("no CUDA_VISIBLE_DEVICES run (cvd0-*, sub2-*)")
        return
    print("| run | exit | must | verdict | GPUs NVML sees | CUDA uses | "
          "hidden (left out) | hidden GPU failed? | as it must |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in cases:
        want_exit, want_vis = ("3", 1) if n.startswith("cvd0") else ("0", 2)
        doc = json_doc(files, n + ".out")
        if not isinstance(doc, dict) or not isinstance(doc.get("gpus"),
                                                       list):
            print("| %s | %s | %s | | | | | | **missing** JSON |" % (
                n, rcs.get(n), want_exit))
            missing.append("%s.out: the tool's JSON" % n)
            continue
        gpus = doc["gpus"]
        vis = [g for g in gpus if isinstance(g.get("cuda_index"), int)]
        hid = [g for g in gpus if g.get("hidden_by_cuda_visible_devices")]
        left = [g for g in gpus if not isinstance(g.get("cuda_index"), int)]
        hidden_idx = {g.get("index") for g in hid}
        failed = [g.get("index") for g in hid if g.get("lost")]
        failed += [(p.get("a"), p.get("b")) for p in doc.get("pairs") or []
                   if p.get("a") in hidden_idx or p.get("b") in hidden_idx]
        notes = " ".join(doc.get("notes") or [])
        noted = all(("GPU %s " % g.get("index")) in notes and
                    "left out by CUDA_VISIBLE_DEVICES" in notes for g in hid)
        ok = (rcs.get(n) == want_exit and str(doc.get("exit_code")) ==
              want_exit and len(vis) == want_vis and
              {id(g) for g in hid} == {id(g) for g in left} and
              len(gpus) > want_vis and not failed and noted)
        if not ok:
            note_wrong("%s: not as it must be" % n)
        print("| %s | %s | %s | %s | %d | %d | %s | %s | %s |" % (
            n, rcs.get(n), want_exit, doc.get("verdict"), len(gpus),
            len(vis), ", ".join("%s (%s)" % (g.get("index"), g.get("bdf"))
                                for g in hid) or "none",
            ", ".join(map(str, failed)) or "no",
            "yes" if ok else "**NO**"))
    print()


# --- persistence mode -----------------------------------------------------

def section_persistence(files, rows):
    print("## Persistence mode")
    print()
    rcs = {n: rc for n, rc, _ in rows}
    start = text(files, "pm-start.txt")
    if start is None:
        note_missing("pm-start.txt: persistence mode was not looked at")
        return
    print("- at the start: %s" % "; ".join(start.strip().splitlines()))
    for label, cmd in (("pm", "nvidia-smi -pm 1"),
                       ("pmoff", "nvidia-smi -pm 0")):
        name = "pm-set-" + label
        if name not in rcs:
            continue
        said = " ".join(((text(files, name + ".out") or "") + " " +
                         (text(files, name + ".err") or "")).split())
        print("- `%s`: exit %s, \"%s\"" % (cmd, rcs[name], said[:300]))
        after = text(files, "pm-after-%s.txt" % label)
        restored = text(files, "pm-restored-%s.txt" % label)
        print("  - after: %s" % ("; ".join((after or "n/a").strip()
                                           .splitlines())))
        print("  - restored: %s" % ("; ".join((restored or "n/a").strip()
                                              .splitlines())))
        walls = [w for n, rc, w in rows
                 if re.fullmatch("validate-%s-\\d" % label, n)]
        print("  - default runs then: %s" % (
            ", ".join("%.2f s" % w for w in walls) if walls else
            "none (the setting did not take)"))
        restores = [(n, rc) for n, rc, _ in rows
                    if n.startswith("pm-restore-%s-" % label)]
        for n, rc in restores:
            print("  - `%s`: exit %s" % (n, rc))
            if rc != "0":
                note_wrong("%s: exit %s" % (n, rc))
        if restored is not None and restored.strip() != start.strip():
            note_wrong("persistence mode not put back as it was (%s)" %
                       label)
    print()


def section_machine(files):
    print("## Machine")
    print()
    shown = False
    for n in sorted(files):
        if re.fullmatch(r"machine(-\w+)?\.txt|nvidia-smi-topo\.txt", n):
            lines = [" ".join(x.split()) for x in text(files, n).splitlines()
                     if re.search(r"^GPU \d+:|Driver Version|CUDA Version|"
                                  r"Persistence Mode|^gpup2p-verify|"
                                  r"^\d+\.\d+\.\d+\S* \d", x.strip())]
            print("- `%s`: %s" % (n, "; ".join(lines) or "(nothing read)"))
            shown = True
    if not shown:
        note_missing("machine-PART.txt or nvidia-smi-topo.txt")
    print()


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(__doc__, file=sys.stderr)
        return 64
    files = load(sys.argv[1])
    rows = runs_table(files)
    print("# Campaign summary: %s" % os.path.basename(
        os.path.abspath(sys.argv[1])))
    print()
    section_machine(files)
    section_runs(rows)
    section_phases(files, rows)
    section_benchmark(files, rows, "", "All GPUs")
    section_p2p(files, rows, "", "All GPUs")
    section_nccl(files, rows)
    section_cvd(files, rows)
    section_benchmark(files, rows, "sub2-", "First two GPUs")
    section_p2p(files, rows, "sub2-", "First two GPUs")
    section_persistence(files, rows)
    print("## Missing or not as it must be")
    print()
    for m in missing:
        print("- missing: %s" % m)
    for w in wrong:
        print("- **not as it must be**: %s" % w)
    if not missing and not wrong:
        print("- nothing")
    return 1 if missing or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
