"""coopreduce — deterministic and exact reductions of numpy arrays (on the CPU) and of PyTorch
tensors and CuPy arrays (on their GPU), bit for bit the same on either.

    import coopreduce as cr
    cr.sum(x)                          # canonical order v1: the same bits on every device
    cr.sum(x, axis=1, mode="exact")    # the correctly rounded sum of each row
    cr.argmax(x, axis=-1)

Every function takes axis=None | int | tuple of adjacent ints, keepdims, mode
("deterministic" | "exact"), out and stream; docs/PYTHON.md is the manual."""
from ._core import OPS, ArgumentError, Error, info, reduce, reduce_segments, reserve, synchronize
from ._core import _fast, _reduce

__version__ = info()["version"]


def _op(name, doc):
    opc = OPS.index(name)

    def f(x, axis=None, keepdims=False, mode="deterministic", out=None, stream=None, host=False):
        r = _fast(opc, x, axis, keepdims, mode, out, stream, host)  # common cases, in C
        if r is NotImplemented:
            return _reduce(name, x, None, axis, keepdims, mode, out, stream, host)
        return r
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + "\n\nSee coopreduce.reduce and docs/PYTHON.md for the arguments."
    return f


sum = _op("sum", "The sum: canonical order v1, or the correctly rounded sum in exact mode.")
min = _op("min", "The minimum (NaN if any element is NaN; -0.0 below +0.0).")
max = _op("max", "The maximum (NaN if any element is NaN; +0.0 above -0.0).")
absmax = _op("absmax", "The largest absolute value.")
mean = _op("mean", "The sum divided by the count, rounded once (float64 for integers).")
sumsq = _op("sumsq", "The sum of squares (floats).")
norm2 = _op("norm2", "The Euclidean norm, without overflow or underflow (floats).")
argmin = _op("argmin", "The index of the first minimum (or of the first NaN), as int64.")
argmax = _op("argmax", "The index of the first maximum (or of the first NaN), as int64.")


def dot(x, y, axis=None, keepdims=False, mode="deterministic", out=None, stream=None,
        host=False):
    """The sum of x * y (floats), along axis as the other reductions."""
    return reduce("dot", x, y, axis, keepdims, mode, out, stream, host)


__all__ = ["ArgumentError", "Error", "OPS", "info", "reduce", "reduce_segments", "reserve", "synchronize", "sum", "min", "max",
           "absmax", "mean", "sumsq", "norm2", "dot", "argmin", "argmax"]
