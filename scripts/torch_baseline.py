#!/usr/bin/env python3
"""torch_baseline.py — the peers' figures that come from PyTorch, for docs/PERF.md, timed with
CUDA events, median of batches of back-to-back calls (as coopreduce bench times its rows).

Default: torch.sum(x, dtype=torch.float32) on a bfloat16 (and float16) array of --n elements,
and torch.sum on float32.

--axis-shapes: the shapes of scripts/axis-bench.sh, in well under a minute:
  - float32 torch.sum(x, dim=1) of (2^20,256), (2^16,4096), (4096,2^16), (256,2^20), (2^24,16),
    and torch.sum(x, dim=0) of (4096,2^16), (2^16,4096);
  - bfloat16 (16384,8192) and (128,8192) along the last axis: sumsq both as
    torch.sum(x.float()**2, dim=-1) (which writes a float32 copy, then its square) and as
    torch.linalg.vector_norm(x, dim=-1, dtype=torch.float32)**2, the faster one marked; norm2 as
    torch.linalg.vector_norm(x, dim=-1, dtype=torch.float32);
  - float32 segments over 2^26 elements, the same lengths as coopreduce bench --segments
    random:1:10000 --n 2^26 (uniform in 1..10000, seed 1, the last one cut), with
    torch.segment_reduce(x, "sum", lengths=...); where that fails, index_add_ over per-element
    segment ids (made before the timing), and the row says so;
  - a reference for the bandwidth of the same run: Tensor.copy_ of the float32 array (2^28
    elements), its GB/s counting the read and the write.
  GB/s are of the input read (the copy: read + write). For the smallest shapes the time may be
  that of the host issuing the calls rather than the GPU's.

usage: python3 scripts/torch_baseline.py [--n 2^28]     (on the GPU machine, where torch is)
       python3 scripts/torch_baseline.py --axis-shapes"""
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


def flat(n):
    g = torch.Generator(device="cuda").manual_seed(1)
    base = torch.rand(n, device="cuda", generator=g)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}, n = {n}")
    print("| what | median us | GB/s |\n|---|---|---|")
    for name, dt in (("bfloat16", torch.bfloat16), ("float16", torch.float16),
                     ("float32", torch.float32)):
        x = base.to(dt)
        us = time_us(lambda: torch.sum(x, dtype=torch.float32))
        print(f"| torch.sum({name}, dtype=float32) | {us:.2f} | {n * x.element_size() / us / 1e3:.0f} |")


MASK = (1 << 64) - 1


def splitmix64_mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def segment_lengths(n, lo, hi, seed=1):
    """The segments of coopreduce bench --segments random:LO:HI --n N (src/cli/offsets.c, the
    hash of src/tools/gen.c): length lo + hash(seed, s) % (hi - lo + 1), the last cut at n."""
    key = splitmix64_mix(seed ^ 0x6A09E667F3BCC908)
    lengths, at = [], 0
    while at < n:
        h = splitmix64_mix((key + (len(lengths) + 1) * 0x9E3779B97F4A7C15) & MASK)
        length = min(lo + h % (hi - lo + 1), n - at)
        lengths.append(length)
        at += length
    return lengths


def axis_shapes():
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    print("| what | shape | median us | GB/s |\n|---|---|---|---|")

    def row(what, shape, us, nbytes):
        dims = "x".join(str(d) for d in shape)
        print(f"| {what} | {dims} | {us:.2f} | {nbytes / us / 1e3:.0f} |", flush=True)

    g = torch.Generator(device="cuda").manual_seed(1)
    n = 2 ** 28
    base = torch.rand(n, device="cuda", generator=g)  # every float32 shape is a view of it
    copy = torch.empty_like(base)
    row("Tensor.copy_ float32 (read + write)", (n,), time_us(lambda: copy.copy_(base)), 8 * n)
    del copy
    for dim, shapes in ((1, ((2 ** 20, 256), (2 ** 16, 4096), (4096, 2 ** 16), (256, 2 ** 20),
                             (2 ** 24, 16))),
                        (0, ((4096, 2 ** 16), (2 ** 16, 4096)))):
        for shape in shapes:
            x = base.view(shape)
            row(f"torch.sum(float32, dim={dim})", shape, time_us(lambda: torch.sum(x, dim=dim)),
                4 * n)

    for shape in ((16384, 8192), (128, 8192)):
        m = shape[0] * shape[1]
        x = base[:m].view(shape).to(torch.bfloat16)
        sumsq = (("torch.sum(x.float()**2, dim=-1)",
                  lambda: torch.sum(x.float() ** 2, dim=-1)),
                 ("vector_norm(x, dim=-1, dtype=float32)**2",
                  lambda: torch.linalg.vector_norm(x, dim=-1, dtype=torch.float32) ** 2))
        times = [time_us(fn) for _, fn in sumsq]
        best = min(range(2), key=lambda k: times[k])
        for k, (what, _) in enumerate(sumsq):
            mark = " (the faster sumsq)" if k == best else ""
            row(f"sumsq bfloat16: {what}{mark}", shape, times[k], 2 * m)
        row("norm2 bfloat16: vector_norm(x, dim=-1, dtype=float32)", shape,
            time_us(lambda: torch.linalg.vector_norm(x, dim=-1, dtype=torch.float32)), 2 * m)
        del x

    n = 2 ** 26
    lengths_list = segment_lengths(n, 1, 10000)
    x = base[:n]
    lengths = torch.tensor(lengths_list, dtype=torch.int64, device="cuda")
    what = f"segments float32 ({len(lengths_list)} of 1..10000)"
    try:
        torch.segment_reduce(x, "sum", lengths=lengths)
        torch.cuda.synchronize()
        row(f"{what}: torch.segment_reduce sum", (n,),
            time_us(lambda: torch.segment_reduce(x, "sum", lengths=lengths)), 4 * n)
    except (RuntimeError, NotImplementedError) as e:
        failed = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        ids = torch.repeat_interleave(torch.arange(len(lengths_list), device="cuda"), lengths)
        out = torch.zeros(len(lengths_list), device="cuda")

        def index_add():
            out.zero_()
            out.index_add_(0, ids, x)

        row(f"{what}: zero_ + index_add_ (segment_reduce failed)", (n,), time_us(index_add),
            4 * n)
        print(f"\ntorch.segment_reduce failed ({failed}): the segments row is index_add_ over "
              "per-element segment ids, made before the timing")


def main():
    ap = argparse.ArgumentParser(description="PyTorch's times for docs/PERF.md")
    ap.add_argument("--n", default="2^28", help="elements of the flat sums (default 2^28)")
    ap.add_argument("--axis-shapes", action="store_true",
                    help="sums along an axis, bfloat16 sumsq and norm2 of rows, segments")
    args = ap.parse_args()
    if args.axis_shapes:
        axis_shapes()
    else:
        flat(parse_n(args.n))


if __name__ == "__main__":
    main()
