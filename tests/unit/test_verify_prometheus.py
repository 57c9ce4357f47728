#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gpup2p-verify --prometheus: the metrics file as the Prometheus client
library's own parser reads it (Debian's python3-prometheus-client), unknown
figures absent, and a file that cannot be written named in a failure."""

import os
import stat
import subprocess
import sys
import tempfile

from prometheus_client.parser import text_string_to_metric_families
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import Tap  # noqa: E402

V = os.environ["GPUP2P_VERIFY"]
VERSION = os.environ["GPUP2P_VERSION"]
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "fixtures", "h200x2-vm", "sys")

TAP = Tap()
ok = TAP.ok


def run(*args):
    return subprocess.run([V, "--sysfs-root", FIXTURE] + list(args),
                          capture_output=True, text=True)


def model_checks():
    """The series no GPU-less run fills, from verify-prometheus-model."""
    p = subprocess.run([os.environ["VERIFY_PROMETHEUS_MODEL"]],
                       capture_output=True, text=True)
    ok(p.returncode == 0, "the made-up model prints", p.stderr)
    try:
        fams = {f.name: f for f in text_string_to_metric_families(p.stdout)}
    except Exception as e:
        ok(False, "prometheus_client parses the model's metrics",
           "%r\n%s" % (e, p.stdout))
        return
    ok(all(f.type == "gauge" for f in fams.values()),
       "every family is a gauge", [(f.name, f.type) for f in fams.values()])

    def series(name):
        return {tuple(sorted(s.labels.items())): s.value
                for s in (fams[name].samples if name in fams else [])}

    pair01 = (("dst", "1"), ("dst_bus_id", "0000:02:00.0"), ("src", "0"),
              ("src_bus_id", "0000:01:00.0"))
    pair10 = (("dst", "0"), ("dst_bus_id", "0000:01:00.0"), ("src", "1"),
              ("src_bus_id", "0000:02:00.0"))
    info = series("gpup2p_verify_info")
    ok(list(info.values()) == [1] and dict(list(info)[0]).get("driver") ==
       '570.1 "beta\\x"\n', "info: the driver label escaped and read back",
       info)
    ok(series("gpup2p_verify_exit_code") == {(): 1},
       "exit_code follows the model (P2P broken: 1)")
    ok(series("gpup2p_verify_last_run_timestamp_seconds") == {(): 1.7e9},
       "the timestamp is the run's end in seconds")
    bw = series("gpup2p_verify_pair_bandwidth_bytes_per_second")
    def fig(pair, name):
        return tuple(sorted(pair + (("figure", name),)))

    ok(bw == {fig(pair01, "unidirectional_ce"): 380.5e9,
              fig(pair01, "unidirectional_ce_read"): 370.25e9,
              fig(pair10, "unidirectional_ce"): 12.25e9},
       "bandwidth per ordered pair in bytes/s, unmeasured figures absent",
       bw)
    lat = series("gpup2p_verify_pair_latency_seconds")
    ok(lat.keys() == {fig(pair01, "latency_sm")} and
       abs(lat[fig(pair01, "latency_sm")] - 2.5e-6) < 1e-15,
       "latency in seconds, only where measured", lat)
    ok(series("gpup2p_verify_pair_peer_access") == {pair01: 1},
       "peer access only where known")
    ok(series("gpup2p_verify_pair_nvlink_fault") == {pair01: 1},
       "an NVLink fault (CUDA error 220) on its pair; none where unknown")
    ok(series("gpup2p_verify_pair_link_limit_bytes_per_second") ==
       {pair01: 450e9}, "link limit only where known")
    agg = series("gpup2p_verify_gpu_bandwidth_bytes_per_second")
    ok(agg == {(("bus_id", "0000:01:00.0"), ("figure", "all_to_one_ce"),
                ("gpu", "0")): 400e9,
               (("bus_id", "0000:02:00.0"), ("figure", "host_to_device_ce"),
                ("gpu", "1")): 55.5e9},
       "per-GPU figures (aggregate, host to device) only where measured",
       agg)
    st = series("gpup2p_verify_check_status")
    want = {
        (("bus_id", "0000:01:00.0"), ("check", "p2p_capability"),
         ("gpu", "0")): 0,
        (("bus_id", "0000:02:00.0"), ("check", "p2p_capability"),
         ("gpu", "1")): 1,
        (("check", "data_ce"),) + pair01: 0,
        (("check", "data_sm_write"),) + pair01: 1,
        (("check", "data_sm_read"),) + pair01: 2,
        (("check", "data_ce"),) + pair10: 3,
        (("check", "rdma_host_mr"), ("device", "mlx5_0")): 0,
        (("check", "rdma_host_read"), ("device", "mlx5_0")): 3,
        (("check", "rdma_gpu_dmabuf"), ("device", "mlx5_0")): 3,
    }
    got = {k: st.get(tuple(sorted(k))) for k in want}
    ok(got == want and len(st) == 15,
       "check status: 0 ok, 1 failed, 2 not testable, 3 not run", st)

    def gpu0(*more):
        return tuple(sorted((("bus_id", "0000:01:00.0"), ("gpu", "0")) +
                            more))

    hs = series("gpup2p_verify_gpu_health_status")
    want = {gpu0(("counter", "ecc_uncorrected_volatile")): 0,
            gpu0(("counter", "xid_events")): 1,
            gpu0(("counter", "ecc_corrected_volatile")): 3}
    ok({k: hs.get(k) for k in want} == want and len(hs) == 2 * 9,
       "GPU health: 0 no rise, 1 a failing rise, 3 not read; every counter"
       " of every GPU", hs)
    ok(series("gpup2p_verify_gpu_health_rise") ==
       {gpu0(("counter", "ecc_uncorrected_volatile")): 0,
        gpu0(("counter", "xid_events")): 2},
       "GPU health rises only where read before and after")
    ls = series("gpup2p_verify_nvlink_health_status")
    ok(ls.get(gpu0(("counter", "nvlink_crc_data"), ("link", "3"))) == 2 and
       ls.get(gpu0(("counter", "nvlink_replay"), ("link", "3"))) == 3 and
       len(ls) == 4, "NVLink health: active links only; a CRC rate under "
       "DCGM's 100/s warns (2); an NVML error is not read (3)", ls)
    ok(series("gpup2p_verify_nvlink_health_rise") ==
       {gpu0(("counter", "nvlink_crc_data"), ("link", "3")): 5},
       "NVLink rises only where read twice", series(
           "gpup2p_verify_nvlink_health_rise"))


def main():
    p = subprocess.run([V, "--version"], capture_output=True, text=True)
    ok(p.returncode == 0 and p.stdout == "gpup2p-verify %s\n" % VERSION,
       "--version prints the project's version", p.stdout + p.stderr)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gpup2p.prom")
        p = run("--prometheus", path)
        # The H200 capture has no capability: PCI alone tests nothing.
        ok(p.returncode == 3, "a PCI-only run on the H200 capture is "
           "untested: exit 3", p.stdout + p.stderr)
        text = open(path).read()
        ok(os.listdir(d) == ["gpup2p.prom"],
           "only the metrics file is left in its directory", os.listdir(d))
        ok(stat.S_IMODE(os.stat(path).st_mode) == 0o644,
           "the collector may read it (mode 0644)")
        try:
            fams = {f.name: f for f in text_string_to_metric_families(text)}
        except Exception as e:  # the parser's verdict is the test
            ok(False, "prometheus_client parses the file", "%r\n%s"
               % (e, text))
            fams = {}
        else:
            ok(True, "prometheus_client parses the file")
        for name in ["gpup2p_verify_info", "gpup2p_verify_exit_code",
                     "gpup2p_verify_last_run_timestamp_seconds",
                     "gpup2p_verify_duration_seconds", "gpup2p_verify_gpus",
                     "gpup2p_verify_check_status"]:
            ok(name in fams and fams[name].type == "gauge",
               "%s is a gauge" % name, sorted(fams))

        def samples(name):
            return fams[name].samples if name in fams else []

        info = samples("gpup2p_verify_info")
        ok(len(info) == 1 and info[0].value == 1 and
           info[0].labels == {"version": VERSION, "mode": "pci-only"},
           "info: the version, no driver label where none is known", info)
        ex = samples("gpup2p_verify_exit_code")
        ok([s.value for s in ex] == [3], "exit_code is the run's, 3", ex)
        gpus = samples("gpup2p_verify_gpus")
        ok([s.value for s in gpus] == [2], "two GPUs in the fixture", gpus)
        ts = samples("gpup2p_verify_last_run_timestamp_seconds")
        ok(len(ts) == 1 and abs(ts[0].value - os.path.getmtime(path)) < 60,
           "the timestamp is the run's time", ts)
        # Nothing measured, no CUDA: no figure, no pair, no clique, not 0.
        for name in ["gpup2p_verify_pair_bandwidth_bytes_per_second",
                     "gpup2p_verify_pair_latency_seconds",
                     "gpup2p_verify_gpu_bandwidth_bytes_per_second",
                     "gpup2p_verify_pair_peer_access",
                     "gpup2p_verify_pair_link_limit_bytes_per_second",
                     "gpup2p_verify_pair_nvlink_fault",
                     "gpup2p_verify_gpu_clique"]:
            ok(not samples(name), "%s is absent: unknown here" % name,
               samples(name))
        ok(" 0\n" not in text.replace("gpup2p_verify_exit_code 0\n", ""),
           "no other value is written as 0", text)

    model_checks()

    for bad in ["/dev/full/x", "/proc/gpup2p-no-such-dir/m.prom"]:
        p = run("--prometheus", bad)
        ok(p.returncode != 0 and bad in p.stderr,
           "--prometheus %s: fails naming the file" % bad,
           "exit %d: %s" % (p.returncode, p.stderr))
    print("1..%d" % TAP.n)
    return 1 if TAP.failed else 0


if __name__ == "__main__":
    sys.exit(main())
