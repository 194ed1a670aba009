#!/usr/bin/env python3
"""torch_baseline.py — the peers' figures that come from PyTorch, for docs/PERF.md: the time of
torch.sum(x, dtype=torch.float32) on a bfloat16 (and float16) array, and of torch.sum on float32,
with CUDA events, median of batches of back-to-back calls (as coopreduce bench times its rows).

usage: python3 scripts/torch_baseline.py [--n 2^28]  (on the GPU machine, where torch is)"""
import argparse
import statistics

import torch


def parse_n(s):
    return 2 ** int(s[2:]) if s.startswith("2^") else int(s)


def time_us(fn, batches=7, calls=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    v = []
    for _ in range(batches):
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        e1.synchronize()
        v.append(e0.elapsed_time(e1) * 1e3 / calls)
    return statistics.median(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="2^28")
    n = parse_n(ap.parse_args().n)
    g = torch.Generator(device="cuda").manual_seed(1)
    base = torch.rand(n, device="cuda", generator=g)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}, n = {n}")
    print("| what | median us | GB/s |\n|---|---|---|")
    for name, dt in (("bfloat16", torch.bfloat16), ("float16", torch.float16),
                     ("float32", torch.float32)):
        x = base.to(dt)
        us = time_us(lambda: torch.sum(x, dtype=torch.float32))
        print(f"| torch.sum({name}, dtype=float32) | {us:.2f} | {n * x.element_size() / us / 1e3:.0f} |")


if __name__ == "__main__":
    main()
