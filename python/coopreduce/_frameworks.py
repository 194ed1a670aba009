"""How each kind of array is read and made: numpy, PyTorch, CuPy, and any other object exposing
__cuda_array_interface__ (v3) or __dlpack__. One adapter a kind, chosen once per Python type
(_adapter); each answers the same few questions:

  describe(x)  -> (shape, layout, dtype code, device)   layout 'C', 'F' or None (strided)
  address(a)   -> an int, or an object exporting a buffer (numpy, read by the extension)
  contiguous(a)-> a C-ordered copy (only for strided input; docs/PYTHON.md says when)
  empty(like, shape, name, order) -> a new array of the caller's kind, on like's device
  stream(device) -> the framework's current stream on that device, as an int
  asarray(like, seq) -> an int64 array on like's device (segment offsets given as a list)

Nothing here imports torch or CuPy unless the caller's array is one."""
import sys

F32, F64, I32, F16, BF16, I64, U32, U64 = range(8)
DTYPE_NAMES = ("float32", "float64", "int32", "float16", "bfloat16", "int64", "uint32", "uint64")
_BY_NAME = {n: c for c, n in enumerate(DTYPE_NAMES)}
# numpy and CuPy dtypes by (kind, itemsize): independent of the platform's C type names.
_BY_KIND = {("f", 4): F32, ("f", 8): F64, ("f", 2): F16, ("i", 4): I32, ("i", 8): I64,
            ("u", 4): U32, ("u", 8): U64}


def _np_code(dt):
    """The coopreduce dtype of a numpy-style dtype (numpy, CuPy, ml_dtypes' bfloat16), or None."""
    if not dt.isnative:
        return None
    code = _BY_KIND.get((dt.kind, dt.itemsize))
    if code is None and dt.name == "bfloat16" and dt.itemsize == 2:
        code = BF16
    return code


def layout_of(shape, strides, itemsize):
    """'C', 'F' or None for an array of `shape` with byte `strides` (extents of 1 and empty
    arrays are contiguous whatever their strides, as numpy's flags say)."""
    if 0 in shape:
        return "C"
    for order, dims in (("C", range(len(shape) - 1, -1, -1)), ("F", range(len(shape)))):
        expect = itemsize
        for d in dims:
            if shape[d] != 1 and strides[d] != expect:
                break
            expect *= shape[d]
        else:
            return order
    return None


class Numpy:
    kind = "numpy"

    @staticmethod
    def register():
        """Hands numpy's array type to the extension's fast path (coopreduce._core.reduce)."""
        import numpy
        from . import _coopreduce
        dtypes = tuple(None if n == "bfloat16" else numpy.dtype(n) for n in DTYPE_NAMES)
        scalars = tuple(None if d is None else numpy.empty((), d) for d in dtypes)
        _coopreduce._register_numpy(numpy.ndarray, numpy.empty, dtypes, scalars)

    @staticmethod
    def describe(x):
        flags = x.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else None
        return x.shape, layout, _np_code(x.dtype), -1

    @staticmethod
    def address(a):
        return a  # the extension reads numpy's buffer: cheaper than a.ctypes.data

    @staticmethod
    def contiguous(a):
        import numpy
        return numpy.ascontiguousarray(a)

    @staticmethod
    def empty(like, shape, name, order):
        import numpy
        return numpy.empty(shape, _numpy_dtype(name), order)

    @staticmethod
    def stream(device):
        return 0

    @staticmethod
    def asarray(like, seq):
        import numpy
        return numpy.ascontiguousarray(seq, dtype=numpy.int64)


def _numpy_dtype(name):
    import numpy
    if name == "bfloat16":
        import ml_dtypes  # numpy has no bfloat16 of its own
        return ml_dtypes.bfloat16
    return numpy.dtype(name)


class Torch:
    kind = "torch"
    _codes = None

    @classmethod
    def describe(cls, x):
        if cls._codes is None:
            cls._load()
        shape = x.shape
        if x.is_contiguous():
            layout = "C"
        else:
            layout = layout_of(shape, [s * x.element_size() for s in x.stride()], x.element_size())
        return shape, layout, cls._codes.get(x.dtype), x.get_device()

    @classmethod
    def _load(cls):
        import torch
        cls._codes = {getattr(torch, n): c for c, n in enumerate(DTYPE_NAMES) if hasattr(torch, n)}
        cls._dtypes = {n: getattr(torch, n, None) for n in DTYPE_NAMES}
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        cls._raw_stream = raw if raw is not None else (
            lambda d: torch.cuda.current_stream(d).cuda_stream)
        from . import _coopreduce
        _coopreduce._register_torch(torch.Tensor, tuple(cls._dtypes[n] for n in DTYPE_NAMES),
                                    cls._raw_stream, torch.empty_like)

    @staticmethod
    def address(a):
        return a.data_ptr()

    @staticmethod
    def contiguous(a):
        return a.contiguous()  # enqueued on the current stream, like any torch op

    @classmethod
    def empty(cls, like, shape, name, order):
        dt = cls._dtypes[name]
        if dt is None:
            raise TypeError(f"this torch has no {name} dtype for the result")
        if order == "F" and len(shape) > 1:
            rev = like.new_empty(shape[::-1], dtype=dt)
            return rev.permute(*range(len(shape) - 1, -1, -1))
        return like.new_empty(shape, dtype=dt)

    @classmethod
    def stream(cls, device):
        if cls._codes is None:
            cls._load()
        return 0 if device < 0 else cls._raw_stream(device)

    @staticmethod
    def asarray(like, seq):
        import torch
        return torch.as_tensor(seq, dtype=torch.int64, device=like.device).contiguous()

    @staticmethod
    def on_device(device):
        """An empty tensor on GPU `device`, for results to be allocated beside."""
        import torch
        return torch.empty(0, device=torch.device("cuda", device))


class Cupy:
    kind = "cupy"

    @staticmethod
    def describe(x):
        flags = x.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else None
        return x.shape, layout, _np_code(x.dtype), x.device.id

    @staticmethod
    def address(a):
        return a.data.ptr

    @staticmethod
    def contiguous(a):
        import cupy
        with a.device:
            return cupy.ascontiguousarray(a)

    @staticmethod
    def empty(like, shape, name, order):
        import cupy
        with like.device:
            return cupy.empty(shape, _numpy_dtype(name), order)

    @staticmethod
    def stream(device):
        import cupy
        with cupy.cuda.Device(device):
            return cupy.cuda.get_current_stream().ptr

    @staticmethod
    def asarray(like, seq):
        import cupy
        with like.device:
            return cupy.ascontiguousarray(cupy.asarray(seq, dtype=cupy.int64))

    @staticmethod
    def on_device(device):
        """An empty array on GPU `device`, for results to be allocated beside."""
        import cupy
        with cupy.cuda.Device(device):
            return cupy.empty(0)


class Foreign:
    """Any other object with __cuda_array_interface__ v3 or a CUDA __dlpack__: read through the
    protocol; results are made by torch, else CuPy (whichever is installed), since a protocol
    cannot allocate. A strided one is copied through the same framework."""
    kind = "foreign"

    @staticmethod
    def view(x, stream):
        """(shape, layout, code, device, address, keep-alive) of the object's memory."""
        from . import _coopreduce
        cai = getattr(x, "__cuda_array_interface__", None)
        if cai is not None:
            shape = tuple(cai["shape"])
            typestr = cai["typestr"]
            code = _BY_KIND.get((typestr[1], int(typestr[2:]))) if typestr[0] in "<|" else None
            size = int(typestr[2:])
            strides = cai.get("strides")
            layout = "C" if strides is None else layout_of(shape, strides, size)
            dev = getattr(getattr(x, "device", None), "id", None)
            return shape, layout, code, _current_device() if dev is None else dev, cai["data"][0], x
        dev_type, dev_id = x.__dlpack_device__()
        if dev_type != 2:  # kDLCUDA
            raise TypeError(f"{type(x).__name__}: DLPack device type {dev_type} is not a CUDA GPU "
                            "(host arrays: pass a numpy array)")
        cap = x.__dlpack__(stream=stream if stream else 1)  # DLPack spells the legacy stream 1
        addr, _, dev_id, dl_code, bits, lanes, shape, strides = _coopreduce.dlpack_info(cap)
        code = {(2, 32): F32, (2, 64): F64, (2, 16): F16, (4, 16): BF16, (0, 32): I32,
                (0, 64): I64, (1, 32): U32, (1, 64): U64}.get((dl_code, bits)) if lanes == 1 else None
        layout = "C" if strides is None else layout_of(shape, [s * bits // 8 for s in strides],
                                                      bits // 8)
        return shape, layout, code, dev_id, addr, cap

    @staticmethod
    def result_framework():
        for name, adapter in (("torch", Torch), ("cupy", Cupy)):
            try:
                __import__(name)
                return adapter
            except ImportError:
                pass
        return None

    @classmethod
    def converted(cls, x):
        """x as a torch tensor or CuPy array sharing its memory (for copies), or None."""
        fw = cls.result_framework()
        if fw is Torch:
            import torch
            return torch.as_tensor(x) if hasattr(x, "__cuda_array_interface__") else \
                torch.from_dlpack(x)
        if fw is Cupy:
            import cupy
            return cupy.asarray(x)
        return None


def _current_device():
    if "torch" in sys.modules:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.current_device()
    if "cupy" in sys.modules:
        import cupy
        return cupy.cuda.Device().id
    return 0


_ADAPTERS = {}


def adapter(x):
    """The adapter for x's type, looked up by the type's module once and cached."""
    t = type(x)
    a = _ADAPTERS.get(t)
    if a is None:
        root = t.__module__.split(".")[0]
        if root == "numpy" and hasattr(x, "flags"):
            a = Numpy
            Numpy.register()
        elif root == "torch" and hasattr(x, "data_ptr"):
            a = Torch
            if Torch._codes is None:
                Torch._load()
        elif root == "cupy" and hasattr(x, "data") and hasattr(x, "device"):
            a = Cupy
        elif hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__"):
            a = Foreign
        else:
            a = None
        _ADAPTERS[t] = a
    return a
