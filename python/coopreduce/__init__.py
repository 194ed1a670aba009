"""coopreduce — deterministic and exact reductions of numpy arrays (on the CPU) and of PyTorch
tensors and CuPy arrays (on their GPU), bit for bit the same on either.

    import coopreduce as cr
    cr.sum(x)                          # canonical order v1: the same bits on every device
    cr.sum(x, axis=1, mode="exact")    # the correctly rounded sum of each row
    cr.argmax(x, axis=-1)

Every function takes axis=None | int | tuple of adjacent ints, keepdims, mode
("deterministic" | "exact"), out and stream; docs/PYTHON.md is the manual."""
from ._core import OPS, ArgumentError, Error, info, reduce, reduce_segments, reserve, synchronize
from ._core import _C, _reduce

__version__ = info()["version"]


# The reductions are the extension's built-in functions, which take the common cases in C and
# hand the others to the Python layer (_core._reduce).
_C._set_reduction_fallback(_reduce)
from ._coopreduce import absmax, argmax, argmin, dot, max, mean, min, norm2, sum, sumsq  # noqa: E402


__all__ = ["ArgumentError", "Error", "OPS", "info", "reduce", "reduce_segments", "reserve", "synchronize", "sum", "min", "max",
           "absmax", "mean", "sumsq", "norm2", "dot", "argmin", "argmax"]
