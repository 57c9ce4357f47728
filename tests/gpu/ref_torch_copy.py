# SPDX-License-Identifier: GPL-2.0-or-later
"""Reference for gpup2p-verify: a PyTorch cross-device copy of the same
size, events around 8 copies, median of 3 samples, every ordered pair."""
import json
import sys

import torch

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 512
n = torch.cuda.device_count()
for a in range(n):
    for b in range(n):
        if a == b:
            continue
        src = torch.empty(mib << 20, dtype=torch.uint8, device="cuda:%d" % a)
        dst = torch.empty(mib << 20, dtype=torch.uint8, device="cuda:%d" % b)
        dst.copy_(src)
        torch.cuda.synchronize(a)
        times = []
        with torch.cuda.device(a):
            for _ in range(3):
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(8):
                    dst.copy_(src, non_blocking=True)
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1))
        times.sort()
        gbps = (mib << 20) * 8 / (times[1] / 1e3) / 1e9
        print(json.dumps({"ref": "torch", "a": a, "b": b, "gbps": round(gbps, 1)}))
