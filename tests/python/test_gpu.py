"""The GPU path from torch and CuPy: bits equal to the CPU's, the caller's kind of result on the
caller's device, a non-default stream, a CUDA graph capture, and no host synchronisation.
Skipped without torch (or CuPy) and a usable GPU; scripts/gpu-check.sh runs it."""
import numpy as np
import pytest

import coopreduce as cr

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available() or not cr.info()["gpus"]:
    pytest.skip("no usable GPU (or coopreduce built without the GPU path)", allow_module_level=True)

OPS = list(cr.OPS)
TDTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64]


def rand(rng, shape, dtype):
    if dtype.is_floating_point:
        v = torch.from_numpy(rng.normal(size=shape) * 2.0 ** rng.integers(-6, 6, shape))
        return v.to(dtype)
    return torch.from_numpy(rng.integers(-1000, 1000, shape)).to(dtype)


def same_bits(a, b):
    a, b = a.cpu(), b.cpu()
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.is_floating_point:
        w = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.contiguous().view(w), b.contiguous().view(w))
    return torch.equal(a, b)


@pytest.mark.parametrize("dtype", TDTYPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_bits_equal_cpu(rng, op, dtype):
    if op in ("sumsq", "norm2", "dot") and not dtype.is_floating_point:
        pytest.skip("floats only")
    for shape, axis in (((1 << 20) + 1, None), ((257, 129), 1), ((257, 129), 0), ((5, 31, 7), (1, 2)),
                        ((3, 1000), None)):
        x = rand(rng, shape, dtype)
        y = rand(rng, shape, dtype) if op == "dot" else None
        for mode in ("deterministic", "exact"):
            args = (x, y) if y is not None else (x,)
            try:
                want = getattr(cr, op)(*args, axis=axis, mode=mode)
            except cr.Error:
                continue  # refused in this mode: the same refusal is checked below
            gargs = tuple(a.cuda() for a in args)
            got = getattr(cr, op)(*gargs, axis=axis, mode=mode)
            assert isinstance(got, torch.Tensor) and got.device == gargs[0].device
            assert got.dim() == (0 if axis is None else want.dim())
            assert same_bits(got, want), (op, dtype, shape, axis, mode)
            # Strided and transposed inputs give the same bits.
            if isinstance(shape, tuple) and len(shape) == 2 and op != "dot":
                assert same_bits(getattr(cr, op)(gargs[0].t().contiguous().t(), axis=axis,
                                                 mode=mode), want)


def test_protocols_and_stream_objects(rng):
    x = rand(rng, (1000, 33), torch.float32).cuda()
    want = cr.sum(x, axis=0)

    class CAI:
        def __init__(self, t):
            self.__cuda_array_interface__ = t.__cuda_array_interface__

    class DL:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    for wrapped in (CAI(x), DL(x)):
        got = cr.sum(wrapped, axis=0)
        assert isinstance(got, torch.Tensor) and same_bits(got, want)

    s = torch.cuda.Stream()

    class Proto:
        def __cuda_stream__(self):
            return (0, s.cuda_stream)

    for st in (s, s.cuda_stream, Proto()):
        s.wait_stream(torch.cuda.current_stream())
        r = cr.sum(x, axis=0, stream=st)
        s.synchronize()
        assert same_bits(r, want)


def test_non_default_stream(rng):
    x = rand(rng, (1 << 22,), torch.float32).cuda()
    want = cr.sum(x.cpu())
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)  # the side stream is busy: work on it must wait
        r = cr.sum(x)
        m = cr.max(x.view(1024, -1), axis=1)
    torch.cuda.current_stream().wait_stream(s)
    assert same_bits(r, want)
    assert same_bits(m, cr.max(x.cpu().view(1024, -1), axis=1))


def test_no_host_synchronisation(rng):
    x = rand(rng, (1 << 24,), torch.float32).cuda()
    y = rand(rng, (1 << 24,), torch.float32).cuda()
    # handles, buffers and kernels made: a first call may allocate (torch's cudaMalloc for the
    # strided view's copy) or load a kernel, either of which may wait for the device
    cr.sum(x), cr.sum(x.view(4096, -1), axis=1), cr.dot(x, y)
    cr.sum(x, mode="exact"), cr.sum(x[::2]), cr.mean(x, axis=None)
    cr.argmax(x.view(64, -1), axis=0), cr.norm2(x, mode="deterministic")
    off = torch.tensor([0, 7, 7, 70000, 1 << 24], device="cuda")
    cr.reduce_segments("sum", x, off), cr.reduce_segments("norm2", x, off)
    torch.cuda.synchronize()
    st = torch.cuda.current_stream()
    torch.cuda._sleep(2_000_000_000)  # about a second of GPU time on the current stream
    calls = (("sum", lambda: cr.sum(x)), ("mean", lambda: cr.mean(x, axis=None)),
             ("sum rows", lambda: cr.sum(x.view(4096, -1), axis=1)),
             ("argmax columns", lambda: cr.argmax(x.view(64, -1), axis=0)),
             ("dot", lambda: cr.dot(x, y)), ("norm2", lambda: cr.norm2(x, mode="deterministic")),
             ("exact sum", lambda: cr.sum(x, mode="exact")),
             ("strided sum", lambda: cr.sum(x[::2])),  # a strided view: its copy is enqueued too
             ("segments", lambda: cr.reduce_segments("sum", x, off)),  # offsets checked on the GPU
             ("norm2 segments", lambda: cr.reduce_segments("norm2", x, off)))
    r, waited = [], []
    for name, call in calls:
        r.append(call())
        if st.query():  # idle already: this call (or an earlier one) waited for the sleep
            waited.append(name)
            break
    torch.cuda.synchronize()
    assert not waited, f"a call waited for the GPU: the stream was idle after {waited[0]}"
    assert same_bits(r[0], cr.sum(x.cpu())) and same_bits(r[6], cr.sum(x.cpu(), mode="exact"))
    assert same_bits(r[8], cr.reduce_segments("sum", x.cpu(), off.cpu()))


def test_cuda_graph_capture(rng):
    n = 1 << 20
    x = rand(rng, (n,), torch.float32).cuda()
    cr.reserve(n, "float32", device=x.device.index)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up on the capture's stream (buffers of the axis path)
        cr.sum(x), cr.sum(x.view(1024, -1), axis=1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        total = cr.sum(x)
        rows = cr.sum(x.view(1024, -1), axis=1)
    for _ in range(3):
        x.copy_(rand(rng, (n,), torch.float32).cuda())
        g.replay()
        torch.cuda.synchronize()
        assert same_bits(total, cr.sum(x.cpu()))
        assert same_bits(rows, cr.sum(x.cpu().view(1024, -1), axis=1))


def test_cuda_graph_capture_after_reserve_alone(rng):
    """reserve() of the shapes, then the capture at once (torch's global capture mode, in which an
    allocation by the library fails the call): no warm-up call of any shape."""
    n, rows = 3 << 18, 96
    x = rand(rng, (n,), torch.float32).cuda()
    off = torch.tensor([0, 7, 7, 5000, 200000, n - 3], device="cuda")
    dev = x.device.index
    cr.reserve(n, "float32", device=dev)
    cr.reserve((rows, n // rows), "float32", device=dev, axis=1)
    cr.reserve((rows, n // rows), "float32", device=dev, axis=0)
    cr.reserve(n, "float32", device=dev, nseg=len(off) - 1)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        total = cr.sum(x)
        rows_sum = cr.sum(x.view(rows, -1), axis=1)
        cols_norm = cr.norm2(x.view(rows, -1), axis=0)
        segs = cr.reduce_segments("sum", x, off)
    for _ in range(2):
        x.copy_(rand(rng, (n,), torch.float32).cuda())
        g.replay()
        torch.cuda.synchronize()
        h = x.cpu()
        assert same_bits(total, cr.sum(h))
        assert same_bits(rows_sum, cr.sum(h.view(rows, -1), axis=1))
        assert same_bits(cols_norm, cr.norm2(h.view(rows, -1), axis=0))
        assert same_bits(segs, cr.reduce_segments("sum", h, off.cpu()))


def test_full_results_from_blocks(rng):
    """0-d results are views of blocks of results: more calls than several blocks hold, on five
    streams in turn (one more than the streams kept), results dropped among them, results of
    three dtypes, blocks of 1 and 3 results and none: each result keeps its own bits and memory."""
    xs = [rand(rng, (1000 + 7 * k,), torch.float32).cuda() for k in range(20)]
    ds = [rand(rng, (999,), torch.float64).cuda(), rand(rng, (999,), torch.bfloat16).cuda()]
    want = [cr.sum(x.cpu()) for x in xs]
    dwant = [cr.norm2(d.cpu()) for d in ds] + [cr.argmax(d.cpu()) for d in ds]
    streams = [torch.cuda.Stream() for _ in range(5)]
    for block in (1, 3, 0, 256):
        before = cr._coopreduce._set_result_pool(block)
        kept, extra = [], []
        for i in range(600):
            k, s = i % len(xs), streams[(i // 37) % (1 + (i // 200) * 2)]
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                r = cr.sum(xs[k])
                if i % 11 == 0:
                    extra.append([cr.norm2(d) for d in ds] + [cr.argmax(d) for d in ds])
            torch.cuda.current_stream().wait_stream(s)
            if i % 5 != 3:  # the others dropped at once
                kept.append((k, r))
        cr._coopreduce._set_result_pool(before)
        torch.cuda.synchronize()
        for k, r in kept:
            assert r.dim() == 0 and r.dtype == torch.float32 and same_bits(r, want[k]), (block, k)
        for e in extra:
            assert all(same_bits(g, w) for g, w in zip(e, dwant)), block
        ptrs = [r.data_ptr() for _, r in kept] + [g.data_ptr() for e in extra for g in e]
        assert len(set(ptrs)) == len(ptrs), block


def test_host_result_and_segments(rng):
    x = rand(rng, (1 << 20,), torch.float32).cuda()
    assert cr.sum(x, host=True) == cr.sum(x.cpu()).item()
    off = torch.tensor([0, 5, 5, 1000, 1 << 20], device="cuda")
    got = cr.reduce_segments("sum", x, off)
    want = cr.reduce_segments("sum", x.cpu(), off.cpu())
    assert same_bits(got, want)
    cr.synchronize(0)


def test_segments_checked_on_device(rng):
    """Bad device offsets: no wait and no exception at the call, every result NaN, then
    synchronize() names the first bad offset, once; the same handle then computes good ones."""
    x = rand(rng, (10000,), torch.float32).cuda()
    bad = torch.tensor([0, 9000, 100, 9100, 10000], device="cuda")
    got = cr.reduce_segments("sum", x, bad, stream=0)
    assert torch.isnan(got.cpu()).all()
    with pytest.raises(cr.ArgumentError, match=r"offsets\[2\]"):
        cr.synchronize(0)
    cr.synchronize(0)
    beyond = torch.tensor([0, 5, 10001], device="cuda")
    assert torch.isnan(cr.reduce_segments("norm2", x, beyond, stream=0).cpu()).all()
    with pytest.raises(cr.ArgumentError, match=r"offsets\[2\]"):
        cr.synchronize(0)
    with pytest.raises(ValueError):  # read back and checked at once
        cr.reduce_segments("max", x, beyond)
    good = torch.tensor([0, 9000, 9000, 9100, 10000], device="cuda")
    assert same_bits(cr.reduce_segments("sum", x, good), cr.reduce_segments("sum", x.cpu(), good.cpu()))


def test_synchronize_waits_for_the_current_stream(rng):
    """Bad offsets on a busy side stream: synchronize() inside `torch.cuda.stream(s)` waits for s
    (the stream the call ran on), not for the legacy default stream, and raises."""
    x = rand(rng, (10000,), torch.float32).cuda()
    bad = torch.tensor([0, 9000, 100, 10000], device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # the call's kernel runs after this
        got = cr.reduce_segments("sum", x, bad)
        with pytest.raises(cr.ArgumentError, match=r"offsets\[2\]"):
            cr.synchronize(0)
    torch.cuda.current_stream().wait_stream(s)
    assert torch.isnan(got.cpu()).all()


def test_cupy(rng):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    a = rng.normal(size=(513, 65)).astype(np.float32)
    x = cp.asarray(a)
    for op in ("sum", "max", "argmin", "norm2"):
        for axis in (None, 0, 1):
            got = getattr(cr, op)(x, axis=axis)
            assert isinstance(got, cp.ndarray)
            want = getattr(cr, op)(a, axis=axis)
            assert np.asarray(cp.asnumpy(got)).tobytes() == np.asarray(want).tobytes()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        r = cr.sum(x.T, axis=0)
    s.synchronize()
    assert cp.asnumpy(r).tobytes() == cr.sum(a.T, axis=0).tobytes()
