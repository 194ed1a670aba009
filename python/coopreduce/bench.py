"""python -m coopreduce.bench — the package against torch.sum (and cupy.sum when installed) on
the same tensors and stream, on GPU 0, in about two minutes; a markdown table on stdout.

  overhead   host time per call of cr.sum on a small tensor (and on a numpy array, CPU path),
             against the C library's own call timed in C (the extension's time_c)
  throughput float32 sum of 2^16 and 2^28 elements, back-to-back, CUDA-event timed
  host value cr.sum(x, host=True) against torch.sum(x).item() at 2^20, wall clock
Medians of several batches; each row says what it timed."""
import statistics
import sys
import time

import numpy as np

from . import _coopreduce as _C
from . import sum as cr_sum

F32, SUM = 0, 0


def med(xs):
    return statistics.median(xs)


def host_overhead_numpy(rows):
    x = np.ones(1024, np.float32)
    out = np.empty((), np.float32)
    for _ in range(200):
        cr_sum(x)
    py = med([_wall(lambda: cr_sum(x), 2000) for _ in range(7)])
    c = med([_C.time_c(SUM, F32, x, out, x.size, -1, 0, 0, 2000) for _ in range(7)])
    rows.append(("CPU: cr.sum(numpy 2^10 float32) per call", py * 1e6, c * 1e6, "us",
                 f"overhead {1e6 * (py - c):.2f} us over the C call"))


def _wall(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def gpu_rows(rows):
    import torch
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    stream = torch.cuda.current_stream().cuda_stream

    # Host overhead: calls issued in batches short enough not to fill the launch queue.
    x = torch.ones(1 << 10, device=dev)
    out = torch.empty((), device=dev)
    for _ in range(100):
        cr_sum(x)
    torch.cuda.synchronize()
    # The fast path's ways (_set_fast_flags): 3 = the exchange API and reused results (the
    # default where torch has both), 1 = new blocks of results, 0 = torch's attributes.
    flags = _C._set_fast_flags(3)
    exchange = _C._fast_info()[1]
    ways = {"py": (3, None), "pyout": (3, out), "new_blocks": (1, None), "attributes": (0, None),
            "attributes_out": (0, out)}
    t = {k: [] for k in list(ways) + ["own", "c", "torch"]}
    for _ in range(9):
        for k, (f, o) in ways.items():
            _C._set_fast_flags(f)
            for _ in range(20):
                cr_sum(x, out=o)
            t[k].append(_wall(lambda: cr_sum(x, out=o), 300)); torch.cuda.synchronize()
        _C._set_fast_flags(3)
        block = _C._set_result_pool(0)  # each result a tensor of its own, as before the blocks
        t["own"].append(_wall(lambda: cr_sum(x), 300)); torch.cuda.synchronize()
        _C._set_result_pool(block)
        t["c"].append(_C.time_c(SUM, F32, x.data_ptr(), out.data_ptr(), x.numel(), 0, 0, stream,
                                300))
        torch.cuda.synchronize()
        t["torch"].append(_wall(lambda: torch.sum(x), 300)); torch.cuda.synchronize()
    _C._set_fast_flags(flags)
    c = med(t["c"])
    m = {k: med(v) for k, v in t.items()}
    py, pyout = m["py"], m["pyout"]
    rows.append(("GPU: cr.sum(tensor 2^10) host time per call", py * 1e6, c * 1e6, "us",
                 f"overhead {1e6 * (py - c):.2f} us over the C call (target <= 3)"
                 + ("" if exchange else "; this torch has no DLPack exchange API")))
    rows.append(("GPU: cr.sum(tensor 2^10, out=) host time per call", pyout * 1e6, c * 1e6,
                 "us", f"overhead {1e6 * (pyout - c):.2f} us over the C call"))
    for k, what in (("new_blocks", "results from new blocks, none reused"),
                    ("attributes", "tensors read through torch's attributes, new blocks"),
                    ("attributes_out", "out=, tensors read through torch's attributes"),
                    ("own", "a new tensor a result")):
        rows.append((f"GPU: cr.sum(tensor 2^10), {what}", m[k] * 1e6, c * 1e6, "us",
                     f"overhead {1e6 * (m[k] - c):.2f} us over the C call"))
    rows.append(("GPU: torch.sum(tensor 2^10) host time per call", m["torch"] * 1e6, c * 1e6, "us",
                 "for reference"))

    # Throughput: back-to-back calls between two CUDA events.
    for logn, calls in ((16, 200), (28, 20)):
        x = torch.rand(1 << logn, device=dev)
        ours = _events(lambda: cr_sum(x), calls)
        theirs = _events(lambda: torch.sum(x), calls)
        rows.append((f"GPU: float32 sum 2^{logn}, back-to-back, per call", ours, theirs, "us",
                     f"{theirs / ours:.2f}x torch.sum's throughput (target >= "
                     f"{1.3 if logn == 16 else 1.0})"))
        del x

    # A value on the host.
    x = torch.rand(1 << 20, device=dev)
    for _ in range(20):
        cr_sum(x, host=True), torch.sum(x).item()
    ours = med([_wall(lambda: cr_sum(x, host=True), 50) for _ in range(9)]) * 1e6
    theirs = med([_wall(lambda: torch.sum(x).item(), 50) for _ in range(9)]) * 1e6
    rows.append(("GPU: host value of a 2^20 float32 sum", ours, theirs, "us",
                 f"{theirs / ours:.2f}x faster than torch.sum(x).item() (target >= 2)"))

    try:
        import cupy
    except ImportError:
        return
    with cupy.cuda.Device(0):
        for logn, calls in ((16, 200), (28, 20)):
            xc = cupy.random.rand(1 << logn, dtype=cupy.float32)
            ours = _events(lambda: cr_sum(xc), calls, cupy)
            theirs = _events(lambda: cupy.sum(xc), calls, cupy)
            rows.append((f"GPU: float32 sum 2^{logn} (CuPy), per call", ours, theirs, "us",
                         f"{theirs / ours:.2f}x cupy.sum's throughput"))


def _events(fn, calls, cupy=None):
    """Median over batches of the time per call of `calls` back-to-back calls, in us, timed by
    events on the framework's current stream."""
    if cupy is None:
        import torch
        ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
        sync = torch.cuda.synchronize
        elapsed = lambda a, b: a.elapsed_time(b)  # noqa: E731
    else:
        ev = cupy.cuda.Event
        sync = cupy.cuda.Device().synchronize
        elapsed = cupy.cuda.get_elapsed_time
    for _ in range(5):
        fn()
    sync()
    times = []
    for _ in range(7):
        a, b = ev(), ev()
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        times.append(elapsed(a, b) * 1e3 / calls)
    return med(times)


def main():
    rows = []
    host_overhead_numpy(rows)
    try:
        import torch
        gpu = torch.cuda.is_available() and _C.info()["gpus"]
    except ImportError:
        gpu = False
    if gpu:
        gpu_rows(rows)
    else:
        print("no torch with a usable GPU: the GPU rows are left out", file=sys.stderr)
    print("| measurement | coopreduce | baseline | unit | note |")
    print("|---|---:|---:|---|---|")
    for name, ours, base, unit, note in rows:
        print(f"| {name} | {ours:.2f} | {base:.2f} | {unit} | {note} |")
    print("\nbaseline: the C call (overhead rows) or torch.sum / cupy.sum; one GPU, "
          "the tensors and stream shared.")


if __name__ == "__main__":
    main()
