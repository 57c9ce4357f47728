#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""NCCL all-reduce across every visible GPU, one process per GPU, with the
environment as given (NCCL_TOPO_FILE, NCCL_DEBUG...). Prints one JSON line:
the GPU count, whether every rank got the right sum, and the wall time.

    nccl_allreduce.py
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, world, port, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    x = torch.full((1 << 24,), float(rank + 1), device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    want = world * (world + 1) / 2
    results[rank] = bool(torch.all(x == want).item())
    dist.destroy_process_group()


def main():
    world = torch.cuda.device_count()
    t0 = time.time()
    with mp.Manager() as m:
        results = m.dict()
        mp.spawn(rank_main, args=(world, 29500 + os.getpid() % 1000, results),
                 nprocs=world, join=True)
        ok = len(results) == world and all(results.values())
    print(json.dumps({"gpus": world, "sum_ok": ok,
                      "seconds": round(time.time() - t0, 2)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
