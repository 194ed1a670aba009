"""Every operation x dtype x axis x mode over numpy arrays (the CPU path): values against numpy
and the exact oracle (conftest.py), bits against the CLI's on the same .npy data, and every
row of an axis reduction against the 1-D call on that row alone."""
import json
import math
import os
import subprocess
from fractions import Fraction

import numpy as np
import pytest

import coopreduce as cr
from conftest import bits, exact_sum, round_fraction

CLI = os.environ.get("COOPREDUCE_CLI")
DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint32", "uint64"]
FLOATS = {"float32", "float64", "float16"}
OPS = list(cr.OPS)
AXES = [None, 0, 1, -1, (1, 2)]
SIZES = [0, 1, 2, 3, 7, 31, 127, 255, 257, 1023, 1025, 4099]


def data(rng, dtype, shape):
    """Varied distributions: uniform, normal with a spread of exponents, or mostly-cancelling
    sums for floats; full-range small or large integers."""
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "f":
        kind = rng.integers(3)
        if kind == 0:
            v = rng.uniform(-1, 1, n)
        elif kind == 1:
            v = rng.normal(size=n) * 2.0 ** rng.integers(-8, 8, n)
        else:  # large values that cancel, small ones that survive
            v = rng.normal(size=n)
            v[: n // 2] *= 1e4 if dt.itemsize == 2 else 1e12
            v[n // 2: 2 * (n // 2)] = -v[: n // 2]
            rng.shuffle(v)
        return v.astype(dt).reshape(shape)
    info = np.iinfo(dt)
    hi = min(info.max, 2**40) if rng.integers(2) else min(info.max, 1000)
    lo = max(info.min, -hi)
    return rng.integers(lo, hi, n, dtype=dt, endpoint=True).reshape(shape)


def cli_bits(tmp_path, op, x, y, axis, mode):
    """The CLI's result bits for the same data: --json for one result, --out .npy along an axis."""
    np.save(tmp_path / "x.npy", x)
    cmd = [CLI, "sum", str(tmp_path / "x.npy"), "--op", op, "--mode", mode, "--device", "cpu"]
    if y is not None:
        np.save(tmp_path / "y.npy", y)
        cmd.insert(3, str(tmp_path / "y.npy"))
    if axis is None:
        out = subprocess.run(cmd + ["--json"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return int(json.loads(out.stdout)["bits"], 16)
    out = subprocess.run(cmd + ["--axis", str(axis), "--out", str(tmp_path / "r.npy"), "--force"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return bits(np.load(tmp_path / "r.npy").reshape(-1))


def reference(op, x, y, mode, got):
    """The independent reference of a 1-D reduction, or None where only bits are compared
    (deterministic float sums, sumsq, norm2 and dot: checked against the CLI and, loosely,
    numpy)."""
    v = x.tolist()
    fl = x.dtype.kind == "f"
    if op in ("min", "max"):
        return getattr(np, op)(x)
    if op == "argmin":
        return int(np.argmin(x))
    if op == "argmax":
        return int(np.argmax(x))
    if op == "absmax":
        return np.max(np.abs(x)) if fl else max(abs(int(e)) for e in v)
    if op == "sum" and not fl:
        return sum(int(e) for e in v)
    if op == "sum" and mode == "exact":
        return round_fraction(exact_sum(v), np.float32 if x.dtype.itemsize == 2 else x.dtype)
    if op == "dot" and mode == "exact":
        return round_fraction(sum((Fraction(float(a)) * Fraction(float(b))
                                   for a, b in zip(v, y.tolist())), Fraction(0)), x.dtype)
    if op == "mean":  # the library's own sum, divided by n and rounded once
        if len(v) == 0:
            return np.nan
        s = cr.sum(x, mode=mode)
        rt = np.float64 if not fl else np.asarray(s).dtype
        return round_fraction(Fraction(int(s)) / len(v) if not fl else
                              Fraction(float(s)) / len(v), rt)
    return None


def check_1d(op, x, y, mode, got):
    ref = reference(op, x, y, mode, got)
    if ref is not None:
        if isinstance(ref, float) and math.isnan(ref):
            assert math.isnan(got)
        elif isinstance(ref, np.floating):
            assert bits(got) == bits(ref.astype(np.asarray(got).dtype)), (op, got, ref)
        else:
            assert int(got) == int(ref), (op, got, ref)
    elif x.size:  # a loose check that the deterministic result is the right number
        w = x.astype(np.float64)
        want = {"sum": w.sum(), "sumsq": (w * w).sum(), "norm2": np.sqrt((w * w).sum()),
                "dot": (w * (y.astype(np.float64) if y is not None else w)).sum()}[op]
        scale = {"sum": np.abs(w).sum(), "sumsq": (w * w).sum(), "norm2": np.sqrt((w * w).sum()),
                 "dot": np.abs(w * (y if y is not None else w)).sum()}[op]
        eps = float(np.finfo(np.float32 if x.dtype.itemsize <= 4 else np.float64).eps)
        assert abs(float(got) - want) <= 4 * eps * math.log2(x.size + 1) * scale + 1e-300


def supported(op, dtype, mode):
    fl = dtype in FLOATS
    if op in ("sumsq", "norm2", "dot") and not fl:
        return "type"
    if mode == "exact" and (op in ("mean", "sumsq", "norm2") or op == "dot" and dtype == "float16"):
        return "mode"
    return None


@pytest.mark.parametrize("mode", ["deterministic", "exact"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_op_dtype_axis_mode(rng, tmp_path, op, dtype, axis, mode):
    shape = tuple(int(e) for e in rng.choice([1, 2, 3, 5, 7, 8, 17, 33], 3))
    x = data(rng, dtype, shape)
    y = data(rng, dtype, shape) if op == "dot" else None
    args = (x, y) if op == "dot" else (x,)
    why = supported(op, dtype, mode)
    if why == "type":
        with pytest.raises(TypeError):
            getattr(cr, op)(*args, axis=axis, mode=mode)
        return
    if why == "mode":
        with pytest.raises(cr.Error) as e:
            getattr(cr, op)(*args, axis=axis, mode=mode)
        assert e.value.status == 11 and "exact" in e.value.message
        return
    got = getattr(cr, op)(*args, axis=axis, mode=mode)
    if axis is None:
        assert np.ndim(got) == 0
        check_1d(op, x.ravel(), None if y is None else y.ravel(), mode, got)
        if CLI and x.size and np.asarray(got).dtype.kind == "f":
            assert bits(got) == cli_bits(tmp_path, op, x, y, None, mode)
        return
    # Along axes: every result is the 1-D call on its own values, which is checked above.
    a, b = (axis[0], axis[-1] + 1) if isinstance(axis, tuple) else (axis % x.ndim, axis % x.ndim + 1)
    moved = np.moveaxis(x, list(range(a, b)), list(range(x.ndim - (b - a), x.ndim)))
    rows = moved.reshape(-1, int(np.prod(x.shape[a:b])))
    ymoved = None if y is None else np.moveaxis(y, list(range(a, b)),
                                                list(range(y.ndim - (b - a), y.ndim)))
    yrows = None if y is None else ymoved.reshape(rows.shape)
    assert got.shape == x.shape[:a] + x.shape[b:]
    flat = got.reshape(-1)
    for r in sorted(set(rng.integers(0, rows.shape[0], 12).tolist())):
        row = np.ascontiguousarray(rows[r])
        yrow = None if y is None else np.ascontiguousarray(yrows[r])
        one = getattr(cr, op)(*((row, yrow) if op == "dot" else (row,)), mode=mode)
        assert bits(flat[r]) == bits(one), (r, flat[r], one)
        check_1d(op, row, yrow, mode, one)
    if CLI and isinstance(axis, int):
        assert bits(got.reshape(-1)) == cli_bits(tmp_path, op, x, y, axis, mode)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_sum_sizes(rng, tmp_path, dtype, n):
    x = data(rng, dtype, (n,))
    for mode in ("deterministic", "exact"):
        got = cr.sum(x, mode=mode)
        if CLI:
            assert bits(got) == cli_bits(tmp_path, "sum", x, None, None, mode)
        check_1d("sum", x, None, mode, got)


def test_exact_beats_cancellation():
    x = np.array([1e16, 1.0, -1e16, 1.0] * 3, np.float64)
    assert cr.sum(x, mode="exact") == 6.0
    assert cr.sum(x, mode="exact", host=True) == 6.0


def test_layouts_and_keepdims(rng):
    x = data(rng, "float32", (6, 9, 4))
    for axis in (0, 1, 2, (0, 1), (1, 2), None):
        want = cr.sum(x, axis=axis)
        for v in (np.asfortranarray(x), x.copy()[:, :, :], np.swapaxes(np.swapaxes(x, 0, 2).copy(), 0, 2)):
            assert bits(cr.sum(v, axis=axis)) == bits(want), axis
        k = cr.sum(x, axis=axis, keepdims=True)
        assert k.shape == np.sum(x, axis=axis, keepdims=True).shape
        assert bits(k.reshape(-1)) == bits(np.asarray(want).reshape(-1))
    s = x[::2, 1::3, ::-1]  # strided, copied
    for axis in (0, 1, 2, None):
        assert bits(cr.max(s, axis=axis)) == bits(np.max(s, axis=axis))


def test_out_and_host(rng):
    x = data(rng, "float64", (5, 7))
    out = np.empty(7)
    r = cr.sum(x, axis=0, out=out)
    assert r is out and bits(out) == bits(cr.sum(x, axis=0))
    fout = np.empty((5, 1), order="F")
    assert bits(cr.max(x, axis=1, keepdims=True, out=fout)) == bits(np.max(x, 1, keepdims=True))
    assert cr.argmax(x, host=True) == int(np.argmax(x))
    assert cr.sum(x, host=True) == float(cr.sum(x))


def test_special_values():
    x = np.array([1.0, np.nan, -np.inf, 3.0], np.float32)
    assert np.isnan(cr.sum(x)) and np.isnan(cr.max(x)) and cr.argmax(x) == 1 and cr.argmin(x) == 1
    z = np.array([-0.0, -0.0], np.float64)
    assert bits(cr.sum(z)) == bits(np.float64(-0.0))
    assert bits(cr.min(np.array([0.0, -0.0]))) == bits(np.float64(-0.0))
    assert cr.absmax(np.array([np.iinfo(np.int32).min, 5], np.int32)) == 2**31


def test_int_sums_exact_and_overflow():
    x = np.full(4, 2**62, np.int64)
    with pytest.raises(cr.Error) as e:
        cr.sum(x)
    assert e.value.status == 12
    assert cr.sum(np.full(1000, 2**31 - 1, np.int32)) == 1000 * (2**31 - 1)
    assert cr.sum(np.array([2**63, 2**63 - 1], np.uint64)[:1]) == 2**63


def test_segments(rng):
    x = data(rng, "float32", (1000,))
    off = np.array([0, 0, 1, 17, 500, 999, 1000])
    for op in ("sum", "max", "norm2"):
        offs = off if op == "sum" else off[1:]  # the empty segment only where it has a value
        got = cr.reduce_segments(op, x, offs)
        want = [getattr(cr, op)(x[offs[s]:offs[s + 1]]) for s in range(len(offs) - 1)]
        assert bits(got) == bits(np.array(want, got.dtype))
    assert bits(cr.reduce_segments("sum", x, list(off))) == bits(cr.reduce_segments("sum", x, off))
    y = data(rng, "float32", (1000,))
    d = cr.reduce_segments("dot", x, off, y=y)
    assert bits(d[3]) == bits(cr.dot(x[17:500], y[17:500]))
    i = cr.reduce_segments("sum", np.arange(10, dtype=np.int64), [0, 3, 10])
    assert i.tolist() == [3, 42]
    with pytest.raises(cr.Error) as e:
        cr.reduce_segments("max", x, off)
    assert e.value.status == 13
