"""The extension's fast path (coopreduce._core._fast) against the Python layer (_core._reduce):
for every case the fast path takes, the same kind of result, dtype, shape and bits; for every
other case it hands over (NotImplemented) and the package answers as the Python layer does.
numpy always; torch tensors on the CPU when torch is installed."""
import sys

import numpy as np
import pytest

import coopreduce as cr
from coopreduce import _core

OPS = [op for op in cr.OPS if op != "dot"]
NP_DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint32", "uint64"]
SHAPES = [(), (0,), (7,), (3, 0), (0, 3), (4, 5, 6)]


def call(f, op, x, axis=None, keepdims=False, mode="deterministic", out=None, stream=None,
         host=False, y=None):
    """f's answer, or the exception it raised."""
    try:
        if f is _core._fast:
            a = (cr.OPS.index(op), x, axis, keepdims, mode, out, stream, host)
            return f(*a) if y is None else f(*a, y)
        return f(op, x, y, axis, keepdims, mode, out, stream, host)
    except Exception as e:  # noqa: BLE001 - compared with the other path's
        return e


def as_numpy(v):
    if "torch" in sys.modules and isinstance(v, sys.modules["torch"].Tensor):
        return v.view(sys.modules["torch"].int16).numpy() if v.dtype.itemsize == 2 and \
            v.dtype.is_floating_point else v.numpy()
    return np.asarray(v)


def assert_same(got, want):
    assert type(got) is type(want), (got, want)
    if isinstance(want, Exception):
        assert got.args == want.args
        return
    if hasattr(want, "dtype"):
        assert got.dtype == want.dtype
    a, b = as_numpy(got), as_numpy(want)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes(), (a, b)


def check(op, x, expect_fast, **kw):
    """The fast path against the Python layer on one case, and the public function's answer
    (the same), which is returned."""
    want = call(_core._reduce, op, x, **kw)
    got = call(_core._fast, op, x, **kw)
    if got is NotImplemented:
        assert not expect_fast or isinstance(want, Exception), (op, kw, want)
    else:
        assert expect_fast, (op, kw, "taken by the fast path")
        assert_same(got, want)
    public = call(_core.reduce, op, x, **kw)
    assert_same(public, want)
    return public


def taken(x, **kw):
    """Whether the fast path takes a sum of x."""
    return call(_core._fast, "sum", x, **kw) is not NotImplemented


def wide_sum(op, dtype):
    return op == "sum" and str(dtype).replace("torch.", "") in ("int64", "uint64")


def values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return np.asarray(rng.normal(size=shape) * 100, dtype)  # an array, also for shape ()
    lo = 0 if np.dtype(dtype).kind == "u" else -1000
    return np.asarray(rng.integers(lo, 1000, size=shape), dtype)


@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_numpy_matches_python_layer(rng, dtype):
    for shape in SHAPES:
        x = values(rng, shape, dtype)
        for op in OPS:
            for axis in [None] + list(range(-len(shape), len(shape))):
                for keepdims in (False, True):
                    full = axis is None or len(shape) == 1
                    scalar = full and not keepdims
                    fast = not wide_sum(op, dtype) or scalar
                    for mode in ("deterministic", "exact"):
                        check(op, x, fast, axis=axis, keepdims=keepdims, mode=mode)
            if shape:
                check(op, x, not wide_sum(op, dtype) or len(shape) == 1, axis=0, stream=0)
                check(op, x, True, host=True)
                check(op, x, False, axis=len(shape))  # out of bounds: ValueError
            if len(shape) > 1:
                check(op, x, False, axis=0, host=True)  # host=True is for full reductions


def test_numpy_results_are_new_and_of_numpy_kinds():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    s = cr.sum(x)
    assert type(s) is np.float32 and s == 66
    assert type(cr.sum(np.float32(5) * np.ones(()))) is np.float64
    assert type(cr.argmax(x)) is np.int64 and cr.argmax(x) == 11
    k = cr.sum(x, keepdims=True)
    assert type(k) is np.ndarray and k.shape == (1, 1) and k[0, 0] == 66
    r1, r2 = cr.sum(x, axis=-1), cr.sum(x, axis=-1)
    assert r1.shape == (3,) and r1 is not r2 and not np.shares_memory(r1, r2)
    assert cr.sum(np.zeros((3, 0), np.float32), axis=1).tolist() == [0, 0, 0]
    assert cr.sum(np.zeros((3, 0), np.float32), axis=0).shape == (0,)
    assert type(cr.sum(np.ones(3, np.int64), host=True)) is int
    assert cr.sum(np.ones(2**17, np.float32), host=True) == 2**17  # the GIL released meanwhile


def test_numpy_out():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    for axis, keepdims in ((0, False), (-1, False), (1, True), (None, True), (None, False)):
        want = _core._reduce("sum", x, None, axis, keepdims, "deterministic", None, None, False)
        out = np.empty(np.shape(want), np.float64)
        assert check("sum", x, True, axis=axis, keepdims=keepdims, out=out) is out
        assert np.array_equal(out, want)
    # Outs the fast path hands over: the Python layer copies, or raises as before.
    strided = np.zeros((3, 8))[:, ::2]
    assert check("sum", x, False, axis=0, out=strided) is strided
    assert np.array_equal(strided, x.sum(axis=0))
    base = np.zeros(8)
    one_d = base[::2]  # a strided 1-D out: copied into, not written as if contiguous
    assert check("sum", x.reshape(4, 6), False, axis=1, out=one_d) is one_d
    assert np.array_equal(one_d, x.reshape(4, 6).sum(1)) and not base[1::2].any()
    for bad in (np.empty(3), np.empty((3, 4), np.float32), np.empty((3, 4), np.int64), [0.0] * 12):
        assert isinstance(check("sum", x, False, axis=0, out=bad), (ValueError, TypeError))
    i = np.arange(6, dtype=np.int64).reshape(2, 3)
    assert isinstance(check("sum", i, False, axis=0, out=np.empty(3, np.int64)), np.ndarray)
    idx = np.empty(2, np.int64)
    assert check("argmax", i, True, axis=1, out=idx) is idx and idx.tolist() == [2, 2]


def test_numpy_handed_over(rng):
    """Layouts, dtypes and arguments the fast path leaves to the Python layer, which answers."""
    x = values(rng, (6, 8), "float32")
    for v in (x.T, x[:, ::2], x[::-1], np.asfortranarray(x)):
        for axis in (None, 0, 1):
            check("sum", v, False, axis=axis)
    check("sum", x[:, 0], False)  # a strided 1-D view
    check("sum", x[0], True)      # a contiguous row
    for kw in ({"axis": (0, 1)}, {"axis": np.int64(1)}, {"axis": 1.0}, {"mode": "fast"},
               {"mode": None}, {"stream": "s"}, {"axis": 2}, {"axis": -3}):
        check("sum", x, False, **kw)
    for dt in (bool, np.int8, np.int16, np.complex64, ">f4", object, np.longdouble):
        assert not taken(np.zeros(3, dt))
        with pytest.raises(TypeError):
            cr.sum(np.zeros(3, dt))
    assert isinstance(check("sumsq", np.ones(3, np.int32), False), TypeError)
    for op in ("min", "argmax"):
        assert isinstance(check(op, np.zeros(0, np.float32), False), ValueError)
        assert isinstance(check(op, np.zeros((0, 3)), False, axis=0), ValueError)
    assert isinstance(check("sum", np.zeros(()), False, axis=0), ValueError)
    assert isinstance(check("sum", np.ma.masked_array(x), False), np.float32)  # a subclass


def test_library_errors_raised_by_the_fast_path():
    e = check("mean", np.ones(4, np.float32), True, mode="exact")
    assert isinstance(e, cr.Error) and e.status == 11
    e = check("sum", np.array([2**62, 2**62], np.int64), True)  # overflow past 64 bits
    assert isinstance(e, cr.Error) and e.status == 12


def test_no_reference_leaks():
    x = np.ones((3, 4), np.float32)
    out = np.empty(3, np.float32)
    dt = np.dtype(np.float32)

    def counts():
        return sys.getrefcount(x), sys.getrefcount(out), sys.getrefcount(dt)

    def calls():
        cr.sum(x), cr.sum(x, axis=1), cr.sum(x, axis=1, out=out), cr.sum(x, host=True)
        cr.max(x, keepdims=True)
        for bad in ({"mode": "exact"}, {"axis": 0, "out": out}):  # a library error, a refusal
            try:
                cr.mean(x, **bad)
            except (cr.Error, ValueError):
                pass

    calls()
    before = counts()
    for _ in range(1000):
        calls()
    assert counts() == before


# ---- torch tensors on the CPU (the GPU path: test_gpu.py) ----------------------------------

@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="torch is not installed")


def test_torch_matches_python_layer(rng, torch):
    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
              torch.int64]
    for dtype in dtypes:
        for shape in SHAPES:
            x = torch.from_numpy(values(rng, shape, "float64" if dtype.is_floating_point
                                        else "int64")).to(dtype)
            for op in OPS:
                for axis in [None] + list(range(-len(shape), len(shape))):
                    for keepdims in (False, True):
                        fast = not wide_sum(op, dtype)
                        for mode in ("deterministic", "exact"):
                            check(op, x, fast, axis=axis, keepdims=keepdims, mode=mode)
                if shape:
                    check(op, x, True, host=True)
                    check(op, x, fast, axis=0, stream=0)


def test_torch_results_out_and_handed_over(torch):
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    s1, s2 = cr.sum(x), cr.sum(x)
    assert isinstance(s1, torch.Tensor) and s1.dim() == 0 and s1.item() == 276
    assert s1.data_ptr() != s2.data_ptr()  # a new tensor every call
    assert cr.sum(x, keepdims=True).shape == (1, 1, 1)
    assert cr.argmin(x, axis=-1).dtype == torch.int64
    g = x.clone().requires_grad_()
    assert not cr.sum(g).requires_grad and not cr.sum(g, axis=1).requires_grad
    out = torch.empty(3, 4)
    assert check("sum", x, True, axis=0, out=out) is out and torch.equal(out, x.sum(0))
    o0 = torch.empty(())
    assert check("max", x, True, out=o0) is o0 and o0.item() == 23
    for bad in (torch.empty(4), torch.empty(3, 4, dtype=torch.float64), np.empty((3, 4))):
        assert isinstance(check("sum", x, False, axis=0, out=bad), (ValueError, TypeError))
    strided = torch.zeros(3, 8)[:, ::2]
    assert check("sum", x, False, axis=0, out=strided) is strided
    assert torch.equal(strided, x.sum(0))
    for v in (x.transpose(0, 2), x[:, :, ::2], torch.nn.Parameter(x)):
        for axis in (None, 1):
            check("sum", v, False, axis=axis)
    for dt in (torch.bool, torch.int8, torch.complex64, torch.uint8):
        assert not taken(torch.zeros(3, dtype=dt))
        with pytest.raises(TypeError):
            cr.sum(torch.zeros(3, dtype=dt))
    assert isinstance(check("argmax", torch.zeros(0), False), ValueError)
    assert isinstance(check("sum", torch.ones(3, dtype=torch.int64), False, axis=0), torch.Tensor)
    e = check("mean", torch.ones(4), True, mode="exact")
    assert isinstance(e, cr.Error) and e.status == 11


def test_torch_no_reference_leaks(torch):
    x = torch.ones(3, 4)
    out = torch.empty(3)

    def calls():
        cr.sum(x), cr.sum(x, axis=1), cr.sum(x, axis=1, out=out), cr.sum(x, host=True)
        cr.max(x, keepdims=True)
        for bad in ({"mode": "exact"}, {"axis": 0, "out": out}):
            try:
                cr.mean(x, **bad)
            except (cr.Error, ValueError):
                pass

    def counts():
        return sys.getrefcount(x), sys.getrefcount(out), sys.getrefcount(torch.float32)

    calls()
    before = counts()
    for _ in range(1000):
        calls()
    assert counts() == before


def test_torch_other_devices_handed_over(torch):
    m = torch.empty(3, 4, device="meta")  # get_device() says -1, as for the CPU
    assert not taken(m) and not taken(torch.ones(3, 4), axis=0, out=torch.empty(4, device="meta"))
    assert cr.sum(torch.ones(3)).device.type == "cpu"


def test_torch_negative_views(torch):
    """A tensor with torch's negative bit holds the negations of its values in memory: the fast
    path hands it over and the Python layer reads its values (or writes out= through torch)."""
    x = torch.arange(5, dtype=torch.float32)
    neg = torch._neg_view(x)
    assert neg.is_neg() and neg.is_contiguous() and not taken(neg)
    for op in ("sum", "max", "argmax"):
        for kw in ({}, {"axis": 0}):
            assert_same(getattr(cr, op)(neg, **kw), getattr(cr, op)(-x, **kw))
    assert not taken(x, out=torch._neg_view(torch.zeros(())))
    for out, kw in ((torch.zeros(()), {}), (torch.zeros(2), {"axis": 1})):
        o = torch._neg_view(out)
        y = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        assert cr.sum(y, out=o, **kw) is o and torch.equal(o, y.sum(**({"dim": 1} if kw else {})))


def test_torch_results_reused_only_when_no_one_holds_them(torch):
    """0-d results are views of blocks handed out again once nobody holds them: a loop that drops
    each result runs on a few views. One that is kept, saved by autograd, watched through a weak
    reference, given a gradient, an attribute or another shape is never written again, and a
    result never comes back with another's state."""
    import weakref
    from coopreduce import _coopreduce as _C
    if not _C._fast_info()[0] & 2:
        pytest.skip("reuse of results is off")
    xs = [torch.full((7,), float(k)) for k in range(64)]

    def total(k):
        return 7.0 * k

    addrs = set()
    for i in range(300):
        addrs.add(cr.sum(xs[i % 64]).data_ptr())
    assert len(addrs) <= 32, len(addrs)  # views reused, not a new block every 16 to 256 calls

    w = torch.ones((), requires_grad=True)
    r = cr.sum(xs[3])
    graph = r * w  # autograd saves r for w's gradient
    cr.sum(xs[2]).add_(1)  # another result changed in place: r's version stays (backward below)
    marked = cr.sum(xs[4]).requires_grad_()
    graded = cr.sum(xs[5])
    graded.grad = torch.ones(())
    tagged = cr.sum(xs[6])
    tagged.tag = "mine"
    watched = cr.sum(xs[7])
    ref = weakref.ref(watched)
    grown = cr.sum(xs[8])
    grown.resize_(2)
    del r, marked, graded, tagged, watched, grown
    for i in range(600):  # the block's views go round: the six above are passed over each time
        k = 10 + i % 54
        s = cr.sum(xs[k])
        assert s.item() == total(k) and s.dim() == 0 and not s.requires_grad
        assert s.grad is None and not hasattr(s, "tag") and s is not ref()
    graph.backward()
    assert w.grad.item() == total(3)
    assert ref().item() == total(7)
    kept = [cr.sum(xs[9]) for _ in range(100)]  # more than a block: new ones made
    for i in range(100):
        cr.sum(xs[10 + i % 54])
    assert all(s.item() == total(9) for s in kept)
    assert len({s.data_ptr() for s in kept}) == len(kept)


def test_torch_fast_ways_agree(torch):
    """The exchange API's reading of tensors and the attribute calls', with and without reused
    results, give the same answers (the flags are the benchmark's)."""
    from coopreduce import _coopreduce as _C
    rng = np.random.default_rng()
    x = torch.from_numpy(rng.normal(size=(5, 6)).astype(np.float32))
    want = [cr.sum(x), cr.norm2(x, axis=1), cr.argmax(x, axis=0), cr.max(x, keepdims=True)]
    before = _C._set_fast_flags(0)
    try:
        for flags in range(4):
            _C._set_fast_flags(flags)
            got = [cr.sum(x), cr.norm2(x, axis=1), cr.argmax(x, axis=0), cr.max(x, keepdims=True)]
            for g, w in zip(got, want):
                assert_same(g, w)
            assert taken(x) and taken(x, axis=1, out=torch.empty(5))
            assert not taken(x.t()) and not taken(torch._neg_view(x))
    finally:
        _C._set_fast_flags(before)


def test_dot_matches_python_layer(rng):
    """dot's fast path (two C-contiguous arrays of one kind, dtype, shape and device) against
    the Python layer, numpy always and torch on the CPU when installed; every other pair handed
    over, and answered (or refused) as the Python layer does."""
    kinds = [lambda a: a]
    try:
        import torch
        kinds.append(torch.from_numpy)
    except ImportError:
        pass
    for kind in kinds:
        for dtype in ("float32", "float64"):
            for shape in SHAPES:
                x, y = kind(values(rng, shape, dtype)), kind(values(rng, shape, dtype))
                for axis in [None] + list(range(-len(shape), len(shape))):
                    for keepdims in (False, True):
                        for mode in ("deterministic", "exact"):
                            check("dot", x, True, axis=axis, keepdims=keepdims, mode=mode, y=y)
                if shape:
                    check("dot", x, True, host=True, y=y)
                    check("dot", x, True, y=x)  # the same array twice
        x = kind(values(rng, (4, 6), "float32"))
        for y in (kind(values(rng, (6, 4), "float32")), kind(values(rng, (4, 6), "float64")),
                  kind(values(rng, (4, 6), "float32"))[:, ::2], kind(values(rng, (24,), "float32"))):
            assert isinstance(check("dot", x, False, y=y), ValueError)
        assert isinstance(check("dot", x, False), TypeError)  # no y
        assert isinstance(check("sum", x, False, y=x), TypeError)  # y for another operation
        assert isinstance(check("dot", kind(np.ones(3, np.int32)), False, y=kind(np.ones(3, np.int32))),
                          TypeError)
        out = kind(np.empty(4, np.float32))
        assert check("dot", x, True, axis=1, out=out, y=x) is out
    a = values(rng, (5,), "float32")
    if len(kinds) > 1:  # numpy with torch: one kind only
        assert isinstance(check("dot", a, False, y=kinds[1](a)), ValueError)
    assert_same(cr.dot(x=a, y=a), call(_core._reduce, "dot", a, y=a))  # by keyword
    with pytest.raises(TypeError):
        cr.dot(a)
    with pytest.raises(TypeError):
        cr.dot(a, a, z=1)
