"""The reductions: arguments checked, the array's memory viewed as the library's
(outer, len, inner), the result allocated by the caller's framework, one call into the
extension. The common cases never reach this Python: the extension's fast() does all of it and
answers NotImplemented for the rest, which _reduce handles. docs/PYTHON.md is the manual."""
import operator
import sys

from . import _coopreduce as _C
from . import _frameworks as _fw
from ._frameworks import DTYPE_NAMES

OPS = ("sum", "min", "max", "absmax", "mean", "sumsq", "norm2", "dot", "argmin", "argmax")
_OP = {n: i for i, n in enumerate(OPS)}
_MODE = {"deterministic": 0, "exact": 1}
_DOT, _ARGMIN, _ARGMAX = 7, 8, 9
_NEEDS_ELEMENT = {1, 2, 3, 8, 9}  # min, max, absmax, argmin, argmax: no value for n == 0
_NP_NAME = {1: "min", 2: "max", 3: "absmax", 8: "argmin", 9: "argmax"}


class Error(RuntimeError):
    """A failure reported by the library: .status (the coopreduce_status number), .status_name
    and .message (coopreduce_last_error's text)."""

    def __init__(self, status, status_name, message):
        super().__init__(f"{status_name}: {message}" if message else status_name)
        self.status, self.status_name, self.message = status, status_name, message


class ArgumentError(Error, ValueError):
    """The library's refusal of an argument (invalid argument, an empty array for an operation
    without a value for it): a coopreduce.Error that is also a ValueError."""


_C._set_error_class(Error, ArgumentError)


def _result_table():
    """(op, dtype) -> (result dtype name, words): the library's table. Indices are stored as
    int64 (they are below 2^63; numpy and torch index with int64). The 128-bit integer sums are
    two 64-bit words, low first: the result is the low word (module docstring)."""
    table = {}
    for op in range(len(OPS)):
        for dt in range(len(DTYPE_NAMES)):
            r = _C.result_type(op, dt)
            if r is None:
                continue
            rt, size = r
            if op in (_ARGMIN, _ARGMAX):
                table[op, dt] = ("int64", 1)
            else:
                table[op, dt] = (DTYPE_NAMES[rt], 2 if size == 16 else 1)
    return table


_RESULT = _result_table()


def _op_code(op):
    opc = _OP.get(op)
    if opc is None:
        raise ValueError(f"unknown operation {op!r}: one of {', '.join(OPS)}")
    return opc


def _mode_code(mode):
    modec = _MODE.get(mode)
    if modec is None:
        raise ValueError(f"mode must be 'deterministic' or 'exact', not {mode!r}")
    return modec


def _stream_int(stream):
    """An explicit stream as a cudaStream_t value: an int, an object with __cuda_stream__
    (returning (version, handle)), a torch stream (.cuda_stream) or a CuPy stream (.ptr)."""
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return int((proto() if callable(proto) else proto)[1])
    for attr in ("cuda_stream", "ptr"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v
    raise TypeError(f"stream: expected an int, a torch or CuPy stream, or an object with "
                    f"__cuda_stream__; got {type(stream).__name__}")


def _axes(axis, ndim):
    """The reduced axes as a range [a, b) of adjacent axes."""
    if axis is None:
        return 0, ndim
    if isinstance(axis, (tuple, list)):
        if not axis:
            raise ValueError("axis: an empty tuple reduces nothing")
        ax = sorted(_axis(a, ndim) for a in axis)
        if len(set(ax)) != len(ax):
            raise ValueError(f"axis {tuple(axis)}: repeated axis")
        if ax[-1] - ax[0] + 1 != len(ax):
            raise ValueError(f"axis {tuple(axis)}: the axes must be adjacent")
        return ax[0], ax[-1] + 1
    a = _axis(axis, ndim)
    return a, a + 1


def _axis(a, ndim):
    try:
        a = operator.index(a)
    except TypeError:
        raise TypeError(f"axis must be None, an int or a tuple of ints, not {type(a).__name__}") \
            from None
    if not -ndim <= a < ndim:
        raise ValueError(f"axis {a} is out of bounds for an array of dimension {ndim}")
    return a + ndim if a < 0 else a


def _prod(extents):
    n = 1
    for e in extents:
        n *= e
    return n


def _view(x, stream):
    """(adapter, array, address, shape, layout, dtype code, device, keep-alive)."""
    fw = _fw.adapter(x)
    if fw is None:
        if hasattr(x, "__array_interface__") or hasattr(x, "__array_struct__"):
            import numpy  # a host array of another kind: numpy views it without a copy
            x = numpy.asarray(x)
            fw = _fw.Numpy
        else:
            raise TypeError(f"expected a numpy array, a torch tensor, a CuPy array or an object "
                            f"with __cuda_array_interface__ or __dlpack__; got {type(x).__name__}")
    if fw is _fw.Foreign:
        shape, layout, code, device, addr, keep = fw.view(x, stream)
        return fw, x, addr, shape, layout, code, device, keep
    if fw is _fw.Torch and x.is_neg():
        x = x.resolve_neg()  # a lazily negated view: its memory holds the negations
    shape, layout, code, device = fw.describe(x)
    return fw, x, None, shape, layout, code, device, None


def _dtype_error(x, code):
    if code is None:
        raise TypeError(f"unsupported dtype {getattr(x, 'dtype', '?')}: coopreduce reduces "
                        + ", ".join(DTYPE_NAMES))


def _contiguous(fw, x):
    """A C-ordered copy of a strided array, by its own framework."""
    if fw is _fw.Foreign:
        conv = fw.converted(x)
        if conv is None:
            raise ValueError("a strided array without torch or CuPy installed to copy it: "
                             "pass a contiguous one")
        fw, x = _fw.adapter(conv), conv
    return fw, fw.contiguous(x)


_fast = _C.fast  # the common cases in C; NotImplemented for the rest (_reduce)


def reduce(op, x, y=None, axis=None, keepdims=False, mode="deterministic", out=None,
           stream=None, host=False):
    """The general form of every reduction: op is one of OPS (docs/PYTHON.md)."""
    opc = _OP.get(op)
    if opc is not None:
        r = _fast(opc, x, axis, keepdims, mode, out, stream, host, y)
        if r is not NotImplemented:
            return r
    return _reduce(op, x, y, axis, keepdims, mode, out, stream, host)


def _reduce(op, x, y, axis, keepdims, mode, out, stream, host):
    """reduce() in Python: every kind of array and argument, and every error."""
    opc, modec, st = _op_code(op), _mode_code(mode), None if stream is None else _stream_int(stream)
    fw, x, xaddr, shape, layout, code, device, keep = _view(x, st)
    _dtype_error(x, code)
    ndim = len(shape)
    a, b = _axes(axis, ndim)
    if opc == _DOT:
        if y is None:
            raise TypeError("dot needs y")
        yfw, y, yaddr, yshape, ylayout, ycode, ydevice, ykeep = _view(y, st)
        if tuple(yshape) != tuple(shape) or ycode != code or ydevice != device or yfw is not fw:
            raise ValueError("dot: x and y must be arrays of one kind, shape, dtype and device")
    elif y is not None:
        raise TypeError(f"{op} takes no y")
    # The library reads memory in C order, or a Fortran-ordered array along one axis (the C
    # axis ndim-1-a of its memory); anything else is copied to C order first (docs/PYTHON.md).
    single = b - a == 1 and ndim > 1
    if layout != "C" and not (layout == "F" and single) or \
            opc == _DOT and layout != ylayout:
        fw, x = _contiguous(fw, x)
        layout, xaddr = "C", None
        if opc == _DOT:
            _, y = _contiguous(yfw, y)
            yaddr = None
    if layout == "F":
        outer, length, inner = _prod(shape[b:]), shape[a], _prod(shape[:a])
    else:
        outer, length, inner = _prod(shape[:a]), _prod(shape[a:b]), _prod(shape[b:])
    if length == 0 and opc in _NEEDS_ELEMENT:
        raise ValueError(f"zero-size array to reduction operation {_NP_NAME[opc]} which has no "
                         "identity")
    res = _RESULT.get((opc, code))
    if res is None:
        raise TypeError(f"{op} is not defined for {DTYPE_NAMES[code]} (floats only)")
    if xaddr is None:
        xaddr = fw.address(x)
        yaddr = fw.address(y) if opc == _DOT else None
    elif opc != _DOT:
        yaddr = None
    like = x  # what the result is allocated beside
    if fw is _fw.Foreign:  # results in a framework that can allocate on the GPU
        fw = _fw.Foreign.result_framework() if out is None else _fw.adapter(out)
        if fw is None:
            raise TypeError("a result for this array needs torch or CuPy installed, or out=")
        like = out if out is not None else fw.on_device(device)
    if st is None:
        st = fw.stream(device)
    if host:
        if a != 0 or b != ndim:
            raise ValueError("host=True is for a full reduction (axis=None)")
        return _C.reduce_to_host(opc, code, xaddr, yaddr, length, device, modec, st)
    full = a == 0 and b == ndim
    rshape = tuple(shape[:a]) + (1,) * (b - a) * bool(keepdims) + tuple(shape[b:])
    name, words = res
    if words == 2:  # a 128-bit integer sum: two words a result, the low one returned
        buf = fw.empty(like, rshape + (2,), name, "C")
        _C.reduce(opc, code, xaddr, yaddr, fw.address(buf), outer, length, inner, device, modec,
                  st)
        low = buf[..., 0]
        return _deliver(fw, low, out, rshape, name)
    order = layout if single else "C"
    if out is not None and _fits(fw, out, rshape, name, order):
        _C.reduce(opc, code, xaddr, yaddr, fw.address(out), outer, length, inner, device,
                  modec, st)
        return out
    r = fw.empty(like, rshape, name, order)
    _C.reduce(opc, code, xaddr, yaddr, fw.address(r), outer, length, inner, device, modec, st)
    if out is not None:
        return _deliver(fw, r, out, rshape, name)
    if full and not keepdims and fw is _fw.Numpy:
        return r[()]  # a numpy scalar, as numpy's reductions give
    return r


def _fits(fw, out, shape, name, order):
    """Whether the library can write straight into out; raises for an out that cannot hold the
    result at all."""
    if _fw.adapter(out) is not fw:
        raise TypeError(f"out must be a {fw.kind} array, like the input")
    if tuple(out.shape) != shape:
        raise ValueError(f"out has shape {tuple(out.shape)}, the result {shape}")
    if str(out.dtype).replace("torch.", "") != name:
        raise TypeError(f"out has dtype {out.dtype}, the result is {name}")
    if fw is _fw.Torch and out.is_neg():
        return False  # a lazily negated view: torch's copy_ writes the negations into it
    layout = fw.describe(out)[1]  # None: strided, even in one dimension (then copied into)
    return layout == order or len(shape) <= 1 and layout is not None


def _deliver(fw, r, out, shape, name):
    """r into out (a copy on the framework's stream), or r itself without out."""
    if out is None:
        if fw is _fw.Numpy and r.ndim == 0:
            return r[()]
        return r
    _fits(fw, out, shape, name, "C")
    if fw is _fw.Torch:
        out.copy_(r)
    else:
        out[...] = r
    return out


def reduce_segments(op, x, offsets, y=None, mode="deterministic", out=None, stream=None):
    """result[s] = op over x[offsets[s]:offsets[s + 1]] for s < len(offsets) - 1.

    offsets: non-decreasing, from 0 or more to at most len(x). On a GPU, the canonical-order
    operations (sum, mean, sumsq, norm2, dot in deterministic mode) check the offsets on the
    device, without waiting: bad offsets make every result NaN, and synchronize() raises. The
    other operations check them at once (reading them back), as the CPU does."""
    opc, modec, st = _op_code(op), _mode_code(mode), None if stream is None else _stream_int(stream)
    fw, x, xaddr, shape, layout, code, device, keep = _view(x, st)
    _dtype_error(x, code)
    if len(shape) != 1:
        raise ValueError(f"reduce_segments reduces a 1-D array; this one has shape {tuple(shape)}")
    if fw is _fw.Foreign:
        fw, x = _contiguous(fw, x)  # offsets and results live in a framework's arrays
    res = _RESULT.get((opc, code))
    if res is None:
        raise TypeError(f"{op} is not defined for {DTYPE_NAMES[code]} (floats only)")
    if opc == _DOT:
        if y is None:
            raise TypeError("dot needs y")
        yfw, y, _, yshape, _, ycode, ydevice, _ = _view(y, st)
        if yfw is not fw or tuple(yshape) != tuple(shape) or ycode != code or ydevice != device:
            raise ValueError("dot: x and y must be arrays of one kind, shape, dtype and device")
    elif y is not None:
        raise TypeError(f"{op} takes no y")
    if layout is None:
        fw, x = _contiguous(fw, x)
    if opc == _DOT and yfw.describe(y)[1] is None:
        _, y = _contiguous(yfw, y)
    off = offsets  # used as it is when it is a contiguous int64 array of x's kind
    if _fw.adapter(off) is not fw or fw.describe(off)[2] != _fw.I64 or \
            fw.describe(off)[1] is None:
        off = fw.asarray(x, offsets)
    oshape, _, _, odevice = fw.describe(off)
    if len(oshape) != 1 or oshape[0] < 1:
        raise ValueError("offsets must be a 1-D sequence of at least one int64")
    if odevice != device:
        raise ValueError("offsets must be on the device of x")
    nseg = oshape[0] - 1
    name, words = res
    rshape = (nseg,) + ((2,) if words == 2 else ())
    r = fw.empty(x, rshape, name, "C")
    if st is None:
        st = fw.stream(device)
    _C.reduce_segments(opc, code, fw.address(x), fw.address(y) if opc == _DOT else None,
                       fw.address(r), fw.address(off), nseg, device, modec, st, shape[0])
    if words == 2:
        r = r[..., 0]
    return _deliver(fw, r, out, (nseg,), name)


def _current_stream(device):
    """The current stream on GPU `device` of the framework in use, for a call given no array:
    torch's (once torch has used the GPU), else CuPy's, else 0, the legacy default stream."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return _fw.Torch.stream(device)
    if "cupy" in sys.modules:
        return _fw.Cupy.stream(device)
    return 0


def synchronize(device=0, stream=None):
    """Wait for `stream` on GPU `device` (default: the current stream of torch or CuPy, as the
    reductions use, else 0, the legacy default stream), then raise ArgumentError for the latest
    reduce_segments call of this thread whose offsets the GPU found bad (each is raised once).
    Does nothing for device -1, the CPU."""
    device = operator.index(device)
    if device == -1:
        return
    _C.synchronize(device, _current_stream(device) if stream is None else _stream_int(stream))


def reserve(n, dtype, device=-1, mode="deterministic", axis=None, nseg=None):
    """Grow the calling thread's handle for `device` (-1: the CPU, k: GPU k) so that reductions
    of up to n elements of `dtype` (a name such as "float32") allocate nothing: call it before
    capturing a CUDA graph, on the capturing thread, with the mode the graph uses.
    With `axis` (an int, or a tuple of adjacent axes), n is an array's shape: reductions of an
    array of that shape along that axis (C- or Fortran-ordered, or any smaller shape). With
    `nseg`, reduce_segments of up to nseg segments over up to n elements."""
    if dtype not in DTYPE_NAMES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_NAMES)}, not {dtype!r}")
    modec, device, dt = _mode_code(mode), operator.index(device), DTYPE_NAMES.index(dtype)
    if axis is not None and nseg is not None:
        raise TypeError("reserve takes axis or nseg, not both")
    if axis is None:
        n = operator.index(n)
        if nseg is None:
            _C.reserve(device, 0, n, 0, 0, dt, modec)
        else:
            _C.reserve(device, 2, n, operator.index(nseg), 0, dt, modec)
        return
    shape = tuple(operator.index(e) for e in n)
    a, b = _axes(axis, len(shape))
    # the C-ordered view, then the Fortran-ordered one (a single axis)
    _C.reserve(device, 1, _prod(shape[:a]), _prod(shape[a:b]), _prod(shape[b:]), dt, modec)
    if b - a == 1 and len(shape) > 1:
        _C.reserve(device, 1, _prod(shape[b:]), shape[a], _prod(shape[:a]), dt, modec)


def info():
    """What was built and which GPUs are usable: a dict."""
    return _C.info()
