/* _coopreduce.c — the Python extension: the library's calls on raw pointers, with handles cached
 * per (thread, device). The package's Python layer (coopreduce/_core.py) turns numpy arrays,
 * torch tensors and CuPy arrays into pointers and extents, allocates results in the caller's
 * framework and calls in here; fast() does all of that itself for contiguous numpy arrays and
 * torch tensors, through the types and functions the Python layer registers (this file imports
 * no framework). It is the hot path: arguments are read through METH_FASTCALL and the GIL is
 * kept for short calls (releasing it costs more than a small reduction). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "coopreduce.h"
#ifdef COOPREDUCE_PY_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* DLPack's stable (pre-1.0) ABI, which every producer hands out when no max_version is asked
 * for: the capsule named "dltensor" holds a DLManagedTensor. Declared here so that building
 * needs no DLPack header. */
typedef struct {
    int32_t device_type, device_id;
} DLDevice;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* DLPack's exchange API (DLPack 1.2): a table of C functions a framework publishes on its tensor
 * type as __dlpack_c_exchange_api__ (torch >= 2.10), through which the fast path reads a tensor's
 * pointer, extents, dtype and device, and the framework's current stream, without a Python call
 * (each of those attribute and method calls costs some 0.1 us on a fast host). Only the members
 * read here are typed. */
typedef struct {
    uint32_t major, minor;
} DLPackVersion;
typedef struct DLPackExchangeAPIHeader {
    DLPackVersion version;
    struct DLPackExchangeAPIHeader *prev_api;
} DLPackExchangeAPIHeader;
typedef struct {
    DLPackExchangeAPIHeader header;
    void *managed_tensor_allocator, *managed_tensor_from_py_object_no_sync,
        *managed_tensor_to_py_object_no_sync;
    int (*dltensor_from_py_object_no_sync)(void *py_object, DLTensor *out);
    int (*current_work_stream)(int32_t device_type, int32_t device_id, void **out_stream);
} DLPackExchangeAPI;
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_CPU = 1, DL_CUDA = 2 };

#define MAX_DEVICES 64 /* GPU ordinals cached; slot 0 is the CPU */

/* One thread's handles: slot 0 the CPU, slot d + 1 GPU d, each with the mode last set on it so
 * that a call sets the mode only when it changes. Freed when the thread ends. */
typedef struct {
    coopreduce_handle *h[MAX_DEVICES + 1];
    int mode[MAX_DEVICES + 1];
} handle_cache;

static pthread_key_t cache_key;
/* coopreduce.Error, and its subclass that is also a ValueError (a refused argument, an empty
 * array), set by the Python layer. */
static PyObject *error_class, *argument_error_class;

static void cache_free(void *p)
{
    handle_cache *c = p;
    for (int i = 0; i <= MAX_DEVICES; i++) coopreduce_destroy(c->h[i]);
    PyMem_RawFree(c);
}

/* Raises coopreduce.Error(status, name, message) for a failed library call. */
static PyObject *raise_status(coopreduce_status s, const coopreduce_handle *h)
{
    PyObject *cls = s == COOPREDUCE_ERROR_INVALID_ARGUMENT || s == COOPREDUCE_ERROR_EMPTY
                        ? argument_error_class
                        : error_class;
    if (!cls) cls = PyExc_RuntimeError;
    PyObject *args = Py_BuildValue("(iss)", (int)s, coopreduce_status_string(s),
                                   coopreduce_last_error(h));
    if (args) {
        PyErr_SetObject(cls, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* The calling thread's handle for `device` (-1: the CPU), created on first use, in `mode`. */
static coopreduce_handle *get_handle(int device, int mode)
{
    if (device < -1 || device >= MAX_DEVICES) {
        PyErr_Format(PyExc_ValueError, "device %d is out of range (at most %d GPUs)", device,
                     MAX_DEVICES);
        return NULL;
    }
    handle_cache *c = pthread_getspecific(cache_key);
    if (!c) {
        c = PyMem_RawCalloc(1, sizeof *c);
        if (!c) {
            PyErr_NoMemory();
            return NULL;
        }
        if (pthread_setspecific(cache_key, c) != 0) {
            PyMem_RawFree(c);
            PyErr_SetString(PyExc_RuntimeError, "cannot store the thread's handle cache");
            return NULL;
        }
    }
    const int slot = device + 1;
    coopreduce_handle *h = c->h[slot];
    if (!h) {
        coopreduce_status s =
            device < 0 ? coopreduce_create_cpu(&h, 0) : coopreduce_create_gpu(&h, device);
        if (s) {
            raise_status(s, NULL);
            return NULL;
        }
        c->h[slot] = h;
        c->mode[slot] = COOPREDUCE_MODE_DETERMINISTIC;
    }
    if (mode >= 0 && c->mode[slot] != mode) { /* mode < 0: as it is */
        coopreduce_status s = coopreduce_set_mode(h, (coopreduce_mode)mode);
        if (s) {
            raise_status(s, h);
            return NULL;
        }
        c->mode[slot] = mode;
    }
    return h;
}

/* An address: an int, None (NULL), or an object exporting a contiguous buffer (numpy arrays),
 * whose view is kept in *view until release_view. */
static int get_address(PyObject *o, int writable, void **p, Py_buffer *view, int *has_view)
{
    *has_view = 0;
    if (o == Py_None) {
        *p = NULL;
        return 0;
    }
    if (PyLong_Check(o)) {
        *p = PyLong_AsVoidPtr(o);
        return PyErr_Occurred() ? -1 : 0;
    }
    int flags = PyBUF_ANY_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(o, view, flags) != 0) return -1;
    *has_view = 1;
    *p = view->buf;
    return 0;
}

static void release_views(Py_buffer *v, const int *has, int n)
{
    for (int i = 0; i < n; i++)
        if (has[i]) PyBuffer_Release(&v[i]);
}

static int as_u64(PyObject *o, uint64_t *v)
{
    *v = PyLong_AsUnsignedLongLong(o);
    return (*v == (uint64_t)-1 && PyErr_Occurred()) ? -1 : 0;
}

static int as_int(PyObject *o, int *v)
{
    long l = PyLong_AsLong(o);
    if (l == -1 && PyErr_Occurred()) return -1;
    *v = (int)l;
    return 0;
}

/* A CPU call reduces while other Python threads run when it is large enough to be worth the
 * GIL's round trip; a GPU call only enqueues, so it keeps the GIL. */
#define RELEASE_GIL_ELEMENTS (1u << 16)

/* reduce(op, dtype, x, y, out, outer, len, inner, device, mode, stream) -> None
 * result[o * inner + i] = op over k of x[(o * len + k) * inner + i]; outer == inner == 1 is the
 * 1-D coopreduce_reduce (the same bits, by the library's contract). */
static PyObject *py_reduce(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (n != 11) {
        PyErr_SetString(PyExc_TypeError, "reduce takes 11 arguments");
        return NULL;
    }
    int op, dtype, device, mode;
    uint64_t outer, len, inner, stream;
    if (as_int(a[0], &op) || as_int(a[1], &dtype) || as_u64(a[5], &outer) ||
        as_u64(a[6], &len) || as_u64(a[7], &inner) || as_int(a[8], &device) ||
        as_int(a[9], &mode) || as_u64(a[10], &stream))
        return NULL;
    coopreduce_handle *h = get_handle(device, mode);
    if (!h) return NULL;
    Py_buffer v[3];
    int has[3] = {0, 0, 0};
    void *x, *y, *out;
    if (get_address(a[2], 0, &x, &v[0], &has[0]) || get_address(a[3], 0, &y, &v[1], &has[1]) ||
        get_address(a[4], 1, &out, &v[2], &has[2])) {
        release_views(v, has, 3);
        return NULL;
    }
    void *st = (void *)(uintptr_t)stream;
    coopreduce_status s;
    const int release = device < 0 && outer * len * inner >= RELEASE_GIL_ELEMENTS;
    PyThreadState *ts = release ? PyEval_SaveThread() : NULL;
    if (outer == 1 && inner == 1)
        s = coopreduce_reduce((coopreduce_op)op, x, y, out, len, (coopreduce_dtype)dtype, h, st);
    else
        s = coopreduce_reduce_axis((coopreduce_op)op, x, y, out, outer, len, inner,
                                   (coopreduce_dtype)dtype, h, st);
    if (ts) PyEval_RestoreThread(ts);
    release_views(v, has, 3);
    if (s) return raise_status(s, h);
    Py_RETURN_NONE;
}

/* A result of `size` bytes of type `rt` as a Python number. */
static PyObject *to_python(const unsigned char *r, coopreduce_dtype rt, size_t size, int op)
{
    if (op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX) {
        uint64_t i;
        memcpy(&i, r, 8);
        return PyLong_FromUnsignedLongLong(i);
    }
    if (size == 16) /* a 128-bit integer sum, low 8 bytes first */
        return _PyLong_FromByteArray(r, 16, 1, rt == COOPREDUCE_INT64);
    switch (rt) {
    case COOPREDUCE_FLOAT32: {
        float f;
        memcpy(&f, r, 4);
        return PyFloat_FromDouble(f);
    }
    case COOPREDUCE_FLOAT64: {
        double d;
        memcpy(&d, r, 8);
        return PyFloat_FromDouble(d);
    }
    case COOPREDUCE_FLOAT16: { /* IEEE binary16, decoded by hand (PyFloat_Unpack2 is 3.11+) */
        const unsigned bits = (unsigned)(r[0] | r[1] << 8), e = bits >> 10 & 31, m = bits & 1023;
        double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? Py_NAN : Py_HUGE_VAL)
                                                    : ldexp(m | 1024, (int)e - 25);
        return PyFloat_FromDouble(bits & 0x8000 ? -v : v);
    }
    case COOPREDUCE_BFLOAT16: {
        uint32_t bits = (uint32_t)(r[0] | r[1] << 8) << 16;
        float f;
        memcpy(&f, &bits, 4);
        return PyFloat_FromDouble(f);
    }
    case COOPREDUCE_INT32: {
        int32_t i;
        memcpy(&i, r, 4);
        return PyLong_FromLong(i);
    }
    case COOPREDUCE_UINT32: {
        uint32_t u;
        memcpy(&u, r, 4);
        return PyLong_FromUnsignedLong(u);
    }
    case COOPREDUCE_INT64: {
        int64_t i;
        memcpy(&i, r, 8);
        return PyLong_FromLongLong(i);
    }
    case COOPREDUCE_UINT64: {
        uint64_t u;
        memcpy(&u, r, 8);
        return PyLong_FromUnsignedLongLong(u);
    }
    default: break;
    }
    PyErr_Format(PyExc_SystemError, "unexpected result type %d", (int)rt);
    return NULL;
}

/* reduce_to_host(op, dtype, x, y, n, device, mode, stream) -> int or float
 * The whole reduction, its result read on the host: synchronous (the library's lowest-latency
 * path for a device array), so the GIL is released while it waits. */
static PyObject *py_reduce_to_host(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (n != 8) {
        PyErr_SetString(PyExc_TypeError, "reduce_to_host takes 8 arguments");
        return NULL;
    }
    int op, dtype, device, mode;
    uint64_t len, stream;
    if (as_int(a[0], &op) || as_int(a[1], &dtype) || as_u64(a[4], &len) ||
        as_int(a[5], &device) || as_int(a[6], &mode) || as_u64(a[7], &stream))
        return NULL;
    coopreduce_dtype rt;
    size_t size = coopreduce_op_result_size((coopreduce_op)op, (coopreduce_dtype)dtype, 0, &rt);
    if (!size) {
        PyErr_Format(PyExc_TypeError, "operation %d has no result for dtype %d", op, dtype);
        return NULL;
    }
    coopreduce_handle *h = get_handle(device, mode);
    if (!h) return NULL;
    Py_buffer v[2];
    int has[2] = {0, 0};
    void *x, *y;
    if (get_address(a[2], 0, &x, &v[0], &has[0]) || get_address(a[3], 0, &y, &v[1], &has[1])) {
        release_views(v, has, 2);
        return NULL;
    }
    _Alignas(16) unsigned char r[16] = {0};
    coopreduce_status s;
    Py_BEGIN_ALLOW_THREADS
    s = coopreduce_reduce_to_host((coopreduce_op)op, x, y, r, len, (coopreduce_dtype)dtype, h,
                                  (void *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    release_views(v, has, 2);
    if (s) return raise_status(s, h);
    return to_python(r, rt, size, op);
}

/* reduce_segments(op, dtype, x, y, out, offsets, nseg, device, mode, stream, n) -> None */
static PyObject *py_reduce_segments(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (n != 11) {
        PyErr_SetString(PyExc_TypeError, "reduce_segments takes 11 arguments");
        return NULL;
    }
    int op, dtype, device, mode;
    uint64_t nseg, stream, count;
    if (as_int(a[0], &op) || as_int(a[1], &dtype) || as_u64(a[6], &nseg) ||
        as_int(a[7], &device) || as_int(a[8], &mode) || as_u64(a[9], &stream) ||
        as_u64(a[10], &count))
        return NULL;
    coopreduce_handle *h = get_handle(device, mode);
    if (!h) return NULL;
    Py_buffer v[4];
    int has[4] = {0, 0, 0, 0};
    void *x, *y, *out, *off;
    if (get_address(a[2], 0, &x, &v[0], &has[0]) || get_address(a[3], 0, &y, &v[1], &has[1]) ||
        get_address(a[4], 1, &out, &v[2], &has[2]) ||
        get_address(a[5], 0, &off, &v[3], &has[3])) {
        release_views(v, has, 4);
        return NULL;
    }
    coopreduce_status s;
    /* On a GPU the call may read the offsets back (the operations outside the canonical order),
     * waiting for the stream: no GIL meanwhile. */
    Py_BEGIN_ALLOW_THREADS
    s = coopreduce_reduce_segments((coopreduce_op)op, x, y, out, count, off, nseg,
                                   (coopreduce_dtype)dtype, h, (void *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    release_views(v, has, 4);
    if (s) return raise_status(s, h);
    Py_RETURN_NONE;
}

/* synchronize(device, stream) -> None: waits for the stream, then raises what the GPU found wrong
 * in the calling thread's handle's earlier segments calls (coopreduce_synchronize). */
static PyObject *py_synchronize(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    int device;
    uint64_t stream;
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "synchronize takes 2 arguments");
        return NULL;
    }
    if (as_int(a[0], &device) || as_u64(a[1], &stream)) return NULL;
    coopreduce_handle *h = get_handle(device, -1);
    if (!h) return NULL;
    coopreduce_status s;
    Py_BEGIN_ALLOW_THREADS
    s = coopreduce_synchronize(h, (void *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    if (s) return raise_status(s, h);
    Py_RETURN_NONE;
}

/* reserve(device, kind, a, b, c, dtype, mode) -> None: the calling thread's handle for `device`
 * grows its buffers (before a CUDA graph capture): kind 0, for 1-D reductions of up to a
 * elements; 1, along an axis of the shape (outer a, len b, inner c); 2, for up to b segments
 * over a elements. */
static PyObject *py_reserve(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    int device, kind, dtype, mode;
    uint64_t e[3];
    if (n != 7) {
        PyErr_SetString(PyExc_TypeError, "reserve takes 7 arguments");
        return NULL;
    }
    if (as_int(a[0], &device) || as_int(a[1], &kind) || as_u64(a[2], &e[0]) ||
        as_u64(a[3], &e[1]) || as_u64(a[4], &e[2]) || as_int(a[5], &dtype) || as_int(a[6], &mode))
        return NULL;
    coopreduce_handle *h = get_handle(device, mode);
    if (!h) return NULL;
    const coopreduce_dtype dt = (coopreduce_dtype)dtype;
    coopreduce_status s;
    Py_BEGIN_ALLOW_THREADS
    s = kind == 1   ? coopreduce_reserve_axis(h, e[0], e[1], e[2], dt)
        : kind == 2 ? coopreduce_reserve_segments(h, e[0], e[1], dt)
                    : coopreduce_reserve(h, e[0], dt);
    Py_END_ALLOW_THREADS
    if (s) return raise_status(s, h);
    Py_RETURN_NONE;
}

/* result_type(op, dtype) -> (result dtype, size in bytes), or None for a pair without one. */
static PyObject *py_result_type(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    int op, dtype;
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "result_type takes 2 arguments");
        return NULL;
    }
    if (as_int(a[0], &op) || as_int(a[1], &dtype)) return NULL;
    coopreduce_dtype rt;
    size_t size = coopreduce_op_result_size((coopreduce_op)op, (coopreduce_dtype)dtype, 0, &rt);
    if (!size) Py_RETURN_NONE;
    return Py_BuildValue("(in)", (int)rt, (Py_ssize_t)size);
}

/* dlpack_info(capsule) -> (address, device_type, device_id, code, bits, lanes, shape, strides)
 * Reads a "dltensor" capsule without consuming it: the producer's capsule destructor frees the
 * tensor when the capsule goes, so the caller keeps the capsule until the call is enqueued.
 * strides is None for a compact C-ordered tensor; both are in elements. */
static PyObject *py_dlpack_info(PyObject *self, PyObject *cap)
{
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (!m) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError,
                        "__dlpack__ did not return an unconsumed \"dltensor\" capsule");
        return NULL;
    }
    const DLTensor *t = &m->dl_tensor;
    PyObject *shape = PyTuple_New(t->ndim), *strides = NULL;
    if (!shape) return NULL;
    for (int d = 0; d < t->ndim; d++)
        PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(t->shape[d]));
    if (t->strides) {
        if (!(strides = PyTuple_New(t->ndim))) {
            Py_DECREF(shape);
            return NULL;
        }
        for (int d = 0; d < t->ndim; d++)
            PyTuple_SET_ITEM(strides, d, PyLong_FromLongLong(t->strides[d]));
    } else {
        strides = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(KiiiiiNN)", (unsigned long long)((uintptr_t)t->data + t->byte_offset),
                         (int)t->device.device_type, (int)t->device.device_id,
                         (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes, shape,
                         strides);
}

/* info() -> dict: the library's version, the canonical order, whether the GPU path was built,
 * and each GPU with its properties. */
static PyObject *py_info(PyObject *self, PyObject *unused)
{
    int count = 0;
    coopreduce_gpu_count(&count);
    PyObject *gpus = PyList_New(0);
    if (!gpus) return NULL;
    for (int i = 0; i < count; i++) {
        coopreduce_gpu_props p;
        if (coopreduce_gpu_props_get(i, &p)) continue;
        PyObject *g = Py_BuildValue(
            "{s:i,s:s,s:(ii),s:i,s:K,s:K,s:O,s:O,s:O}", "ordinal", p.ordinal, "name", p.name,
            "compute_capability", p.cc_major, p.cc_minor, "sm_count", p.sm_count,
            "memory_bytes", (unsigned long long)p.total_memory_bytes, "l2_bytes",
            (unsigned long long)p.l2_bytes, "usable", p.usable ? Py_True : Py_False,
            "cooperative_launch", p.cooperative_launch ? Py_True : Py_False, "clusters",
            p.cluster_launch ? Py_True : Py_False);
        if (!g || PyList_Append(gpus, g) != 0) {
            Py_XDECREF(g);
            Py_DECREF(gpus);
            return NULL;
        }
        Py_DECREF(g);
    }
#ifdef COOPREDUCE_PY_HAVE_CUDA
    PyObject *cuda = Py_True;
#else
    PyObject *cuda = Py_False;
#endif
    return Py_BuildValue("{s:s,s:i,s:O,s:N}", "version", coopreduce_version_string(),
                         "order_version", coopreduce_order_version(), "gpu_path", cuda, "gpus",
                         gpus);
}

/* time_c(op, dtype, x, out, n, device, mode, stream, iters) -> seconds per call
 * For the benchmark (coopreduce.bench): `iters` back-to-back coopreduce_reduce calls from C,
 * host time only (the caller synchronises around it): the C library's own per-call cost, which
 * the Python call's is compared with. */
static PyObject *py_time_c(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    int op, dtype, device, mode;
    uint64_t len, stream, iters;
    if (n != 9) {
        PyErr_SetString(PyExc_TypeError, "time_c takes 9 arguments");
        return NULL;
    }
    if (as_int(a[0], &op) || as_int(a[1], &dtype) || as_u64(a[4], &len) ||
        as_int(a[5], &device) || as_int(a[6], &mode) || as_u64(a[7], &stream) ||
        as_u64(a[8], &iters))
        return NULL;
    coopreduce_handle *h = get_handle(device, mode);
    if (!h) return NULL;
    Py_buffer v[2];
    int has[2] = {0, 0};
    void *x, *out;
    if (get_address(a[2], 0, &x, &v[0], &has[0]) || get_address(a[3], 1, &out, &v[1], &has[1])) {
        release_views(v, has, 2);
        return NULL;
    }
    coopreduce_status s = COOPREDUCE_SUCCESS;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t i = 0; i < iters && !s; i++)
        s = coopreduce_reduce((coopreduce_op)op, x, NULL, out, len, (coopreduce_dtype)dtype, h,
                              (void *)(uintptr_t)stream);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    release_views(v, has, 2);
    if (s) return raise_status(s, h);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return PyFloat_FromDouble(iters ? secs / (double)iters : 0.0);
}

/* ---- The fast path -------------------------------------------------------------------------
 * fast(op, x, axis, keepdims, mode, out, stream, host) -> the result, or NotImplemented
 * One call from the package's reductions for the common cases, with no Python in between: a
 * C-contiguous numpy.ndarray or torch.Tensor (exact types, registered by the Python layer once it
 * has met them), axis None or an int, mode given by name, out None or a contiguous array of the
 * input's kind holding the result exactly, stream None or an int, and an (op, dtype) pair with a
 * result of at most 8 bytes (a full numpy reduction or host=True takes the 16-byte integer sums
 * too). Anything else, and every argument the Python layer refuses, returns NotImplemented so
 * that the Python layer (coopreduce/_core.py) handles it and raises its errors; the library's
 * own failures raise here as they do through reduce(). */

#define N_DTYPES 8
static const unsigned char dtype_size[N_DTYPES] = {4, 8, 4, 2, 2, 8, 4, 8};

static PyTypeObject *np_type, *torch_type;
static PyObject *np_empty;                /* numpy.empty */
static PyObject *np_dtypes[N_DTYPES];     /* numpy.dtype by coopreduce code, or NULL */
static PyObject *np_scratch[N_DTYPES];    /* a 0-d array of each, for numpy scalars */
static unsigned char *np_scratch_data[N_DTYPES];
static PyObject *torch_dtypes[N_DTYPES];  /* torch.dtype by code, or NULL */
static PyObject *torch_raw_stream;        /* device -> the current stream, an int */
static PyObject *torch_empty_like;        /* torch.empty_like */
/* A 0-d tensor of each dtype on each device (slot 0 the CPU), never handed out: a full
 * reduction's result is a new tensor made like it, which torch makes faster than one of a
 * given shape, dtype and device. */
static PyObject *torch_zero_d[MAX_DEVICES + 1][N_DTYPES];
static PyObject *s_dtype, *s_get_device, *s_is_cpu, *s_is_cuda, *s_is_contiguous, *s_shape,
    *s_data_ptr, *s_new_empty, *s_unbind, *s_deterministic, *s_exact, *s_is_neg, *s_use_count,
    *s_requires_grad, *s_grad, *s_data, *kw_dtype, *empty_tuple;
static PyObject *weakref_count;          /* _weakref.getweakrefcount */
static const DLPackExchangeAPI *torch_api; /* torch.Tensor's exchange API, or NULL */

/* The fast path's ways, for the tests and the benchmark (_set_fast_flags): FAST_EXCHANGE reads
 * tensors and the current stream through the exchange API where torch has it (else through
 * torch's attributes and methods); FAST_RECYCLE hands out again the views of a block of results
 * that nobody holds any more (reusable()) instead of a new block's. */
enum { FAST_EXCHANGE = 1, FAST_RECYCLE = 2 };
static unsigned fast_flags = FAST_EXCHANGE | FAST_RECYCLE;

/* 0-d results of full reductions of tensors: the 0-d views (unbind) of a block of results,
 * handed out in turn, one block per device, result dtype and stream (POOL_STREAMS streams of
 * each, the least recently used making room for a new one). torch makes a view faster than a
 * tensor of its own (H100 host, torch 2.11: empty_like of a 0-d CUDA tensor 3.6 us, a view of
 * unbind 1.6 us, each with its release; docs/perf-log run 102). The block's memory is the
 * framework's, from its allocator on the stream of the calls that write into it. The first
 * call on a stream takes a tensor of its own, and each block of a stream is twice its last, 16
 * to pool_size results: streams used once or in a rotation longer than POOL_STREAMS cost what
 * they did. A view keeps its block alive: a result holds at most pool_size results' bytes. */
#define RESULT_POOL 256
#define POOL_STREAMS 4
typedef struct {
    PyObject *views;       /* a tuple of the block's 0-d views, or NULL */
    Py_ssize_t next, size; /* the next view to hand out; the block's size (0: none yet) */
    int again;             /* every view handed out once: next is the next one to reuse */
    uint64_t stream;       /* the stream of the calls writing into it */
    uint64_t used;         /* the call count when last used */
    uintptr_t base;        /* view 0's address */
} result_pool;
static result_pool torch_pool[MAX_DEVICES + 1][N_DTYPES][POOL_STREAMS];
static uint64_t pool_calls;
static Py_ssize_t pool_size = RESULT_POOL; /* _set_result_pool(n); 0: a tensor a result */

static void clear_pools(void)
{
    for (int d = 0; d <= MAX_DEVICES; d++)
        for (int i = 0; i < N_DTYPES; i++)
            for (int k = 0; k < POOL_STREAMS; k++) {
                Py_CLEAR(torch_pool[d][i][k].views);
                torch_pool[d][i][k].size = 0;
                torch_pool[d][i][k].used = 0;
            }
}

/* The coopreduce dtype of a numpy buffer's native single-character format, or -1. */
static int buffer_code(const Py_buffer *v)
{
    const char *f = v->format;
    if (!f || !f[0] || f[1]) return -1;
    const Py_ssize_t k = v->itemsize;
    switch (f[0]) {
    case 'f': return k == 4 ? COOPREDUCE_FLOAT32 : -1;
    case 'd': return k == 8 ? COOPREDUCE_FLOAT64 : -1;
    case 'e': return k == 2 ? COOPREDUCE_FLOAT16 : -1;
    case 'i': case 'l': case 'q':
        return k == 4 ? COOPREDUCE_INT32 : k == 8 ? COOPREDUCE_INT64 : -1;
    case 'I': case 'L': case 'Q':
        return k == 4 ? COOPREDUCE_UINT32 : k == 8 ? COOPREDUCE_UINT64 : -1;
    default: return -1;
    }
}

static int mode_of(PyObject *m)
{
    if (m == s_deterministic) return COOPREDUCE_MODE_DETERMINISTIC;
    if (m == s_exact) return COOPREDUCE_MODE_EXACT;
    if (!PyUnicode_Check(m)) return -1;
    if (PyUnicode_CompareWithASCIIString(m, "deterministic") == 0)
        return COOPREDUCE_MODE_DETERMINISTIC;
    if (PyUnicode_CompareWithASCIIString(m, "exact") == 0) return COOPREDUCE_MODE_EXACT;
    return -1;
}

/* What one fast call reduces: the library's arguments and the result's shape. */
typedef struct {
    int op, code, rt, words, device, a, b, keepdims;
    const void *y; /* DOT: the second array's data, of x's dtype, extents and device */
    int ndim;
    const Py_ssize_t *shape; /* numpy: the buffer's; torch: filled from x.shape */
    Py_ssize_t tshape[64];
    uint64_t outer, len, inner;
} fast_call;

/* The reduced axes [a, b), the extents and the result type; 0, or 1 to fall back. */
static int fast_plan(fast_call *c, PyObject *axis)
{
    if (axis == Py_None) {
        c->a = 0;
        c->b = c->ndim;
    } else if (PyLong_Check(axis)) {
        int overflow;
        long l = PyLong_AsLongAndOverflow(axis, &overflow);
        if (overflow || (l == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 1;
        }
        if (l < -c->ndim || l >= c->ndim) return 1;
        c->a = (int)(l < 0 ? l + c->ndim : l);
        c->b = c->a + 1;
    } else {
        return 1;
    }
    c->outer = c->len = c->inner = 1;
    for (int d = 0; d < c->ndim; d++) {
        uint64_t *e = d < c->a ? &c->outer : d < c->b ? &c->len : &c->inner;
        *e *= (uint64_t)c->shape[d];
    }
    const int op = c->op;
    if (c->len == 0 && (op == COOPREDUCE_OP_MIN || op == COOPREDUCE_OP_MAX ||
                        op == COOPREDUCE_OP_ABSMAX || op == COOPREDUCE_OP_ARGMIN ||
                        op == COOPREDUCE_OP_ARGMAX))
        return 1;
    coopreduce_dtype rt;
    size_t size = coopreduce_op_result_size((coopreduce_op)op, (coopreduce_dtype)c->code, 0, &rt);
    if (!size) return 1;
    c->rt = op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX ? COOPREDUCE_INT64 : (int)rt;
    c->words = size == 16 ? 2 : 1;
    if ((int)rt < 0 || (int)rt >= N_DTYPES) return 1;
    return 0;
}

static int is_full(const fast_call *c) { return c->a == 0 && c->b == c->ndim; }

/* The result's shape as a new tuple. */
static PyObject *result_shape(const fast_call *c)
{
    const int removed = c->b - c->a, n = c->ndim - (c->keepdims ? 0 : removed);
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    int j = 0;
    for (int d = 0; d < c->ndim; d++) {
        if (d >= c->a && d < c->b && !c->keepdims) continue;
        PyObject *e = PyLong_FromSsize_t(d >= c->a && d < c->b ? 1 : c->shape[d]);
        if (!e) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, j++, e);
    }
    return t;
}

/* Whether `shape` (n extents) is the result's shape. */
static int same_result_shape(const fast_call *c, const Py_ssize_t *shape, int n)
{
    int j = 0;
    for (int d = 0; d < c->ndim; d++) {
        const int reduced = d >= c->a && d < c->b;
        if (reduced && !c->keepdims) continue;
        if (j >= n || shape[j++] != (reduced ? 1 : c->shape[d])) return 0;
    }
    return j == n;
}

/* The library call, the GIL released for a large CPU reduction (as in reduce()). */
static coopreduce_status fast_run(const fast_call *c, coopreduce_handle *h, const void *x,
                                  void *result, uint64_t stream)
{
    coopreduce_status s;
    void *st = (void *)(uintptr_t)stream;
    const int release = c->device < 0 && c->outer * c->len * c->inner >= RELEASE_GIL_ELEMENTS;
    PyThreadState *ts = release ? PyEval_SaveThread() : NULL;
    if (c->outer == 1 && c->inner == 1)
        s = coopreduce_reduce((coopreduce_op)c->op, x, c->y, result, c->len,
                              (coopreduce_dtype)c->code, h, st);
    else
        s = coopreduce_reduce_axis((coopreduce_op)c->op, x, c->y, result, c->outer, c->len,
                                   c->inner, (coopreduce_dtype)c->code, h, st);
    if (ts) PyEval_RestoreThread(ts);
    return s;
}

/* host=True: the whole reduction's value on the host, as reduce_to_host() gives it. */
static PyObject *fast_host(const fast_call *c, coopreduce_handle *h, const void *x,
                           uint64_t stream)
{
    _Alignas(16) unsigned char r[16] = {0};
    coopreduce_status s;
    Py_BEGIN_ALLOW_THREADS
    s = coopreduce_reduce_to_host((coopreduce_op)c->op, x, c->y, r, c->len,
                                  (coopreduce_dtype)c->code, h, (void *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    if (s) return raise_status(s, h);
    coopreduce_dtype rt;
    size_t size =
        coopreduce_op_result_size((coopreduce_op)c->op, (coopreduce_dtype)c->code, 0, &rt);
    return to_python(r, rt, size, c->op);
}

static PyObject *not_implemented(void) { Py_RETURN_NOTIMPLEMENTED; }

/* A numpy array y of x's (buffer v's) dtype and extents, C-contiguous: its buffer in *yv
 * (released by the caller); -1 (nothing raised) for any other. */
static int numpy_like(PyObject *y, const Py_buffer *v, Py_buffer *yv)
{
    if (Py_TYPE(y) != np_type || PyObject_GetBuffer(y, yv, PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear();
        return -1;
    }
    int same = yv->ndim == v->ndim && buffer_code(yv) == buffer_code(v) &&
               PyBuffer_IsContiguous(yv, 'C');
    for (int d = 0; same && d < v->ndim; d++) same = yv->shape[d] == v->shape[d];
    if (!same) PyBuffer_Release(yv);
    return same ? 0 : -1;
}

static PyObject *fast_numpy(fast_call *c, PyObject *x, PyObject *y, PyObject *axis, int mode,
                            PyObject *out, uint64_t stream, int host)
{
    Py_buffer v, yv;
    if (PyObject_GetBuffer(x, &v, PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear(); /* a dtype without a buffer format: the Python layer says why */
        return not_implemented();
    }
    PyObject *result = NULL;
    c->code = buffer_code(&v);
    c->ndim = v.ndim;
    c->shape = v.shape;
    c->device = -1;
    if (c->code < 0 || v.ndim > 64 || !PyBuffer_IsContiguous(&v, 'C') || fast_plan(c, axis) ||
        (host && !is_full(c))) {
        PyBuffer_Release(&v);
        return not_implemented();
    }
    const int dot = y != Py_None;
    if (dot && numpy_like(y, &v, &yv)) {
        PyBuffer_Release(&v);
        return not_implemented();
    }
    c->y = dot ? yv.buf : NULL;
    coopreduce_handle *h = get_handle(-1, mode);
    if (!h) goto done;
    if (host) {
        result = fast_host(c, h, v.buf, stream);
        goto done;
    }
    if (out == Py_None && is_full(c) && !c->keepdims) {
        /* A numpy scalar, as numpy's reductions give: the value from a local buffer, copied into
         * a 0-d array kept for the purpose and read back as a new scalar. */
        PyObject *scratch = np_scratch[c->rt];
        if (!scratch) {
            result = not_implemented();
            goto done;
        }
        _Alignas(16) unsigned char r[16] = {0};
        coopreduce_status s = fast_run(c, h, v.buf, r, stream);
        if (s) {
            raise_status(s, h);
            goto done;
        }
        memcpy(np_scratch_data[c->rt], r, dtype_size[c->rt]); /* a 16-byte sum: its low word */
        result = PyObject_GetItem(scratch, empty_tuple);
        goto done;
    }
    if (c->words != 1) {
        result = not_implemented();
        goto done;
    }
    Py_buffer ov;
    if (out != Py_None) {
        if (Py_TYPE(out) != np_type) {
            result = not_implemented();
            goto done;
        }
        if (PyObject_GetBuffer(out, &ov, PyBUF_RECORDS) != 0) {
            PyErr_Clear();
            result = not_implemented();
            goto done;
        }
        if (buffer_code(&ov) != c->rt || !PyBuffer_IsContiguous(&ov, 'C') ||
            !same_result_shape(c, ov.shape, ov.ndim)) {
            PyBuffer_Release(&ov);
            result = not_implemented();
            goto done;
        }
        result = Py_NewRef(out);
    } else {
        PyObject *dt = np_dtypes[c->rt], *shape;
        if (!dt) {
            result = not_implemented();
            goto done;
        }
        if (!(shape = result_shape(c))) goto done;
        PyObject *args[3] = {NULL, shape, dt};
        result =
            PyObject_Vectorcall(np_empty, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(shape);
        if (!result) goto done;
        if (PyObject_GetBuffer(result, &ov, PyBUF_SIMPLE | PyBUF_WRITABLE) != 0) {
            Py_CLEAR(result);
            goto done;
        }
    }
    coopreduce_status s = fast_run(c, h, v.buf, ov.buf, stream);
    PyBuffer_Release(&ov);
    if (s) {
        Py_CLEAR(result);
        raise_status(s, h);
    }
done:
    if (dot) PyBuffer_Release(&yv);
    PyBuffer_Release(&v);
    return result;
}

/* A torch attribute or no-argument method's value as a C integer; -1 with nothing raised when the
 * tensor does not answer (the Python layer then handles it). */
static int torch_int(PyObject *x, PyObject *name, int call, long long *v)
{
    PyObject *o = call ? PyObject_CallMethodNoArgs(x, name) : PyObject_GetAttr(x, name);
    if (!o) {
        PyErr_Clear();
        return -1;
    }
    *v = PyLong_AsLongLong(o);
    Py_DECREF(o);
    if (*v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/* The tensor's dtype code, or -1 for a dtype the fast path does not take. */
static int torch_code(PyObject *t)
{
    PyObject *dt = PyObject_GetAttr(t, s_dtype);
    if (!dt) {
        PyErr_Clear();
        return -1;
    }
    int code = -1;
    for (int i = 0; i < N_DTYPES; i++)
        if (torch_dtypes[i] == dt) code = i;
    Py_DECREF(dt);
    return code;
}

/* A C-contiguous tensor's shape into shape[0..*ndim); -1 (nothing raised) for any other. */
static int torch_shape(PyObject *t, Py_ssize_t *shape, int *ndim)
{
    long long contiguous;
    if (torch_int(t, s_is_contiguous, 1, &contiguous) || !contiguous) return -1;
    PyObject *s = PyObject_GetAttr(t, s_shape);
    if (!s) {
        PyErr_Clear();
        return -1;
    }
    int rc = -1;
    if (PyTuple_Check(s) && PyTuple_GET_SIZE(s) <= 64) {
        *ndim = (int)PyTuple_GET_SIZE(s);
        rc = 0;
        for (int d = 0; d < *ndim && !rc; d++) {
            shape[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(s, d));
            if (shape[d] < 0) {
                PyErr_Clear();
                rc = -1;
            }
        }
    }
    Py_DECREF(s);
    return rc;
}

/* The tensor's device: -1 for the CPU, k for CUDA GPU k; -1 (nothing raised) for any other
 * (meta tensors, other backends), whose get_device() may also say -1. */
static int torch_device(PyObject *t, long long *device)
{
    long long on;
    if (torch_int(t, s_get_device, 1, device) || *device < -1 || *device >= MAX_DEVICES ||
        torch_int(t, *device < 0 ? s_is_cpu : s_is_cuda, 0, &on) || !on)
        return -1;
    return 0;
}

/* The coopreduce dtype of a DLPack dtype, or -1. */
static int dl_code(DLDataType t)
{
    if (t.lanes != 1) return -1;
    switch (t.code) {
    case DL_FLOAT:
        return t.bits == 32 ? COOPREDUCE_FLOAT32 : t.bits == 64 ? COOPREDUCE_FLOAT64
               : t.bits == 16 ? COOPREDUCE_FLOAT16 : -1;
    case DL_BFLOAT: return t.bits == 16 ? COOPREDUCE_BFLOAT16 : -1;
    case DL_INT: return t.bits == 32 ? COOPREDUCE_INT32 : t.bits == 64 ? COOPREDUCE_INT64 : -1;
    case DL_UINT: return t.bits == 32 ? COOPREDUCE_UINT32 : t.bits == 64 ? COOPREDUCE_UINT64 : -1;
    default: return -1;
    }
}

/* Whether a DLTensor is C-contiguous as torch's is_contiguous() says: an empty tensor is, and
 * the stride of an extent of 1 does not matter. */
static int dl_contiguous(const DLTensor *t)
{
    if (!t->strides) return 1;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0) return 1;
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != expect) return 0;
        expect *= t->shape[d];
    }
    return 1;
}

/* What the fast path needs of a tensor. */
typedef struct {
    int code, ndim;
    long long device; /* -1: the CPU */
    uintptr_t addr;
    Py_ssize_t shape[64];
} tensor_info;

/* What the fast path needs of a tensor t, as its memory holds it (torch_info, below, also
 * turns away a tensor with the negative bit). */
static int torch_info_as_stored(PyObject *t, tensor_info *ti)
{
    if (torch_api && (fast_flags & FAST_EXCHANGE)) {
        DLTensor d;
        if (torch_api->dltensor_from_py_object_no_sync(t, &d) != 0) {
            PyErr_Clear();
            return -1;
        }
        if (d.ndim < 0 || d.ndim > 64 || (ti->code = dl_code(d.dtype)) < 0 ||
            !torch_dtypes[ti->code] || !dl_contiguous(&d))
            return -1;
        if (d.device.device_type == DL_CPU)
            ti->device = -1;
        else if (d.device.device_type == DL_CUDA && d.device.device_id >= 0 &&
                 d.device.device_id < MAX_DEVICES)
            ti->device = d.device.device_id;
        else
            return -1;
        ti->ndim = d.ndim;
        for (int k = 0; k < d.ndim; k++) ti->shape[k] = (Py_ssize_t)d.shape[k];
        ti->addr = (uintptr_t)d.data + (uintptr_t)d.byte_offset;
        return 0;
    }
    long long addr;
    if ((ti->code = torch_code(t)) < 0 || torch_shape(t, ti->shape, &ti->ndim) ||
        torch_device(t, &ti->device) || torch_int(t, s_data_ptr, 1, &addr))
        return -1;
    ti->addr = (uintptr_t)addr;
    return 0;
}

/* A C-contiguous tensor of a dtype the library reduces, on the CPU or a CUDA GPU: its pointer,
 * extents, dtype and device; -1 (nothing raised) for any other, which the Python layer takes.
 * A tensor with torch's negative bit is another: its memory holds the values' negations
 * (torch._neg_view, a real view of a conjugated complex tensor). */
static int torch_info(PyObject *t, tensor_info *ti)
{
    long long neg;
    if (torch_int(t, s_is_neg, 1, &neg) || neg) return -1;
    return torch_info_as_stored(t, ti);
}

/* torch's current stream on GPU `device` into *st; -1 with an exception set when torch fails. */
static int torch_stream(int device, uint64_t *st)
{
    if (torch_api && (fast_flags & FAST_EXCHANGE)) {
        void *s = NULL;
        if (torch_api->current_work_stream(DL_CUDA, device, &s) != 0) return -1;
        *st = (uint64_t)(uintptr_t)s;
        return 0;
    }
    PyObject *d = PyLong_FromLong(device);
    PyObject *r = d ? PyObject_CallOneArg(torch_raw_stream, d) : NULL;
    Py_XDECREF(d);
    if (!r) return -1;
    *st = PyLong_AsUnsignedLongLong(r);
    Py_DECREF(r);
    return *st == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

/* Whether a view of a block, at address a, may be handed out again as a new result of dtype rt:
 * nothing holds it but the block, in Python (its reference count) or in torch (its TensorImpl's
 * use count: an autograd graph that saved it, a C++ container), nobody watches it (weak
 * references), and it is still the plain 0-d view the block made (no gradient asked for or
 * given, no attributes set, not resized, re-pointed or retyped). Then no one can tell it from a
 * new view: its bytes are written again in stream order, as torch's allocator would hand out
 * the memory of a freed result. 1 yes, 0 no (nothing raised). */
static int reusable(PyObject *v, uintptr_t a, int rt, long long device)
{
    if (Py_REFCNT(v) != 1 || Py_TYPE(v) != torch_type) return 0;
    long long uses, weak;
    PyObject *rg = NULL, *grad = NULL, *dict = NULL, *w = NULL;
    int ok = !torch_int(v, s_use_count, 1, &uses) && uses == 1 &&
             (rg = PyObject_GetAttr(v, s_requires_grad)) == Py_False &&
             (grad = PyObject_GetAttr(v, s_grad)) == Py_None &&
             (w = PyObject_CallOneArg(weakref_count, v)) &&
             (weak = PyLong_AsLongLong(w)) == 0 &&
             (dict = PyObject_GenericGetDict(v, NULL)) && PyDict_GET_SIZE(dict) == 0;
    Py_XDECREF(rg);
    Py_XDECREF(grad);
    Py_XDECREF(w);
    Py_XDECREF(dict);
    PyErr_Clear();
    /* No negative bit to test: torch sets it on new tensors only (_neg_view, conj().imag). */
    tensor_info ti;
    return ok && !torch_info_as_stored(v, &ti) && ti.ndim == 0 && ti.addr == a &&
           ti.code == rt && ti.device == device;
}

/* Whether work on stream st (a GPU's) is being captured into a CUDA graph: such a call's result
 * is a tensor of its own, which torch allocates from the graph's private memory pool, as the
 * graph's other outputs (a view of a block would tie the graph to memory that the pool may let
 * go once the results are dropped). */
static int capturing(int device, uint64_t st)
{
#ifdef COOPREDUCE_PY_HAVE_CUDA
    if (device < 0) return 0;
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    /* an error (a stream of another context): not known to be free of a capture */
    if (cudaStreamIsCapturing((cudaStream_t)(uintptr_t)st, &status) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    return status != cudaStreamCaptureStatusNone;
#else
    (void)device, (void)st;
    return 0;
#endif
}

/* The next 0-d result of dtype dt (code rt) on x's device for a call on stream st, and its
 * address; NULL with nothing raised where the caller makes one itself (a stream's first call),
 * NULL with an exception set when torch fails. */
static PyObject *pooled_result(PyObject *x, int device, int rt, PyObject *dt, uint64_t st,
                               uintptr_t *addr)
{
    result_pool *pools = torch_pool[device + 1][rt], *p = NULL;
    pool_calls++;
    for (int k = 0; k < POOL_STREAMS && !p; k++)
        if (pools[k].used && pools[k].stream == st) p = &pools[k];
    if (!p) { /* a stream's first call (of late): the least recently used slot, no block yet */
        p = &pools[0];
        for (int k = 1; k < POOL_STREAMS; k++)
            if (pools[k].used < p->used) p = &pools[k];
        Py_CLEAR(p->views);
        p->stream = st;
        p->size = 0;
        p->used = pool_calls;
        return NULL;
    }
    p->used = pool_calls;
    if (p->views && p->next >= PyTuple_GET_SIZE(p->views)) {
        if (fast_flags & FAST_RECYCLE) {
            p->next = 0;
            p->again = 1;
        } else {
            Py_CLEAR(p->views);
        }
    }
    if (p->views && p->again) {
        /* The views handed out longest ago first; a block whose next few are all still held
         * (results kept in a list) makes way for a new one, its views living on. */
        const Py_ssize_t size = PyTuple_GET_SIZE(p->views);
        for (int tries = 0; tries < 8; tries++) {
            const Py_ssize_t i = p->next;
            const uintptr_t a = p->base + (uintptr_t)i * dtype_size[rt];
            PyObject *v = PyTuple_GET_ITEM(p->views, i);
            p->next = i + 1 < size ? i + 1 : 0;
            if (reusable(v, a, rt, device)) {
                *addr = a;
                return Py_NewRef(v);
            }
        }
        Py_CLEAR(p->views);
    }
    if (!p->views) {
        const Py_ssize_t size = p->size ? (2 * p->size < pool_size ? 2 * p->size : pool_size)
                                        : (16 < pool_size ? 16 : pool_size);
        PyObject *shape = Py_BuildValue("(n)", size);
        if (!shape) return NULL;
        PyObject *args[4] = {NULL, x, shape, dt};
        PyObject *block = PyObject_VectorcallMethod(s_new_empty, args + 1,
                                                    2 | PY_VECTORCALL_ARGUMENTS_OFFSET, kw_dtype);
        Py_DECREF(shape);
        if (!block) return NULL;
        PyObject *views = PyObject_CallMethodNoArgs(block, s_unbind);
        PyObject *ptr = views ? PyObject_CallMethodNoArgs(block, s_data_ptr) : NULL;
        Py_DECREF(block);
        const unsigned long long base = ptr ? PyLong_AsUnsignedLongLong(ptr) : 0;
        Py_XDECREF(ptr);
        if (!ptr || PyErr_Occurred() || !PyTuple_Check(views) || PyTuple_GET_SIZE(views) != size) {
            Py_XDECREF(views);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "torch's unbind gave no tuple of views");
            return NULL;
        }
        /* Each result its own version counter (x.data: the same memory, a counter of its own),
         * where views share their block's: an in-place change of one result must not make
         * autograd refuse a graph that saved another. */
        PyObject *own = PyTuple_New(size);
        for (Py_ssize_t k = 0; own && k < size; k++) {
            PyObject *d = PyObject_GetAttr(PyTuple_GET_ITEM(views, k), s_data);
            if (!d) Py_CLEAR(own);
            else PyTuple_SET_ITEM(own, k, d);
        }
        Py_SETREF(views, own);
        if (!views) return NULL;
        p->views = views;
        p->next = 0;
        p->again = 0;
        p->size = size;
        p->base = (uintptr_t)base;
    }
    *addr = p->base + (uintptr_t)p->next * dtype_size[rt];
    return Py_NewRef(PyTuple_GET_ITEM(p->views, p->next++));
}

static PyObject *fast_torch(fast_call *c, PyObject *x, PyObject *y, PyObject *axis, int mode,
                            PyObject *out, PyObject *stream, int host)
{
    tensor_info xi, oi, yi;
    if (torch_info(x, &xi)) return not_implemented();
    if (y != Py_None) { /* DOT: y a tensor of x's dtype, extents and device */
        if (Py_TYPE(y) != torch_type || torch_info(y, &yi) || yi.code != xi.code ||
            yi.ndim != xi.ndim || yi.device != xi.device ||
            memcmp(yi.shape, xi.shape, (size_t)xi.ndim * sizeof xi.shape[0]))
            return not_implemented();
        c->y = (const void *)yi.addr;
    }
    c->code = xi.code;
    c->ndim = xi.ndim;
    c->shape = xi.shape;
    c->device = (int)xi.device;
    if (fast_plan(c, axis) || (host && !is_full(c)) || (!host && c->words != 1))
        return not_implemented();
    PyObject *dt = torch_dtypes[c->rt];
    if (!dt) return not_implemented();
    if (out != Py_None && (Py_TYPE(out) != torch_type || torch_info(out, &oi) ||
                           oi.code != c->rt || !same_result_shape(c, oi.shape, oi.ndim) ||
                           oi.device != xi.device))
        return not_implemented();
    uint64_t st = 0;
    if (stream != Py_None) {
        st = PyLong_AsUnsignedLongLong(stream);
        if (st == (uint64_t)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return not_implemented();
        }
    } else if (c->device >= 0 && torch_stream(c->device, &st)) {
        return NULL;
    }
    coopreduce_handle *h = get_handle(c->device, mode);
    if (!h) return NULL;
    const void *xp = (const void *)xi.addr;
    if (host) return fast_host(c, h, xp, st);
    PyObject *result = NULL;
    uintptr_t raddr = 0;
    if (out != Py_None) {
        result = Py_NewRef(out);
        raddr = oi.addr;
    } else if (pool_size > 0 && is_full(c) && !c->keepdims && !capturing(c->device, st)) {
        result = pooled_result(x, c->device, c->rt, dt, st, &raddr);
        if (!result && PyErr_Occurred()) return NULL;
    }
    if (!result) {
        PyObject *shape = result_shape(c);
        if (!shape) return NULL;
        PyObject **like = PyTuple_GET_SIZE(shape) == 0 ? &torch_zero_d[c->device + 1][c->rt] : NULL;
        if (like && *like) {
            result = PyObject_CallOneArg(torch_empty_like, *like);
        } else {
            PyObject *args[4] = {NULL, x, shape, dt};
            result = PyObject_VectorcallMethod(s_new_empty, args + 1,
                                               2 | PY_VECTORCALL_ARGUMENTS_OFFSET, kw_dtype);
            if (result && like) { /* the first of its kind: a second one made to be the model */
                *like = result;
                result = PyObject_CallOneArg(torch_empty_like, *like);
            }
        }
        Py_DECREF(shape);
        if (!result) return NULL;
    }
    if (!raddr) {
        PyObject *p = PyObject_CallMethodNoArgs(result, s_data_ptr);
        const long long a = p ? PyLong_AsLongLong(p) : -1;
        Py_XDECREF(p);
        if (a == -1 && PyErr_Occurred()) {
            Py_DECREF(result);
            return NULL;
        }
        raddr = (uintptr_t)a;
    }
    coopreduce_status s = fast_run(c, h, xp, (void *)raddr, st);
    if (s) {
        Py_DECREF(result);
        return raise_status(s, h);
    }
    return result;
}

static PyObject *py_fast(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (n != 8 && n != 9) {
        PyErr_SetString(PyExc_TypeError, "fast takes 8 or 9 arguments");
        return NULL;
    }
    PyObject *x = a[1], *axis = a[2], *out = a[5], *stream = a[6], *y = n == 9 ? a[8] : Py_None;
    PyTypeObject *t = Py_TYPE(x);
    if (!t || (t != np_type && t != torch_type)) return not_implemented();
    fast_call c;
    int host, keepdims, mode = mode_of(a[4]);
    if (mode < 0 || as_int(a[0], &c.op) || (keepdims = PyObject_IsTrue(a[3])) < 0 ||
        (host = PyObject_IsTrue(a[7])) < 0 || (stream != Py_None && !PyLong_Check(stream))) {
        PyErr_Clear();
        return not_implemented();
    }
    if (c.op < 0 || c.op > COOPREDUCE_OP_ARGMAX || (c.op == COOPREDUCE_OP_DOT) != (y != Py_None))
        return not_implemented(); /* dot without y, or y for another operation: the errors */
    c.keepdims = keepdims;
    c.y = NULL;
    if (t == np_type) {
        uint64_t st = 0;
        if (stream != Py_None && as_u64(stream, &st)) {
            PyErr_Clear();
            return not_implemented();
        }
        return fast_numpy(&c, x, y, axis, mode, out, st, host);
    }
    return fast_torch(&c, x, y, axis, mode, out, stream, host);
}

/* ---- The package's reductions ----------------------------------------------------------------
 * cr.sum, cr.min, ..., cr.dot are this module's built-in functions, so that a call reaches fast()
 * with no Python frame between (some 0.1 us each). Their parameters are those of the signature
 * in each docstring; what fast() hands over goes to the Python layer's
 * _reduce(name, x, y, axis, keepdims, mode, out, stream, host), registered once. */
typedef struct {
    const char *name;
    int slot; /* in fast()'s arguments after op: x, axis, keepdims, mode, out, stream, host, y */
} param;
static const param one_params[] = {{"x", 0},   {"axis", 1},   {"keepdims", 2}, {"mode", 3},
                                   {"out", 4}, {"stream", 5}, {"host", 6}};
static const param dot_params[] = {{"x", 0},    {"y", 7},   {"axis", 1},   {"keepdims", 2},
                                   {"mode", 3}, {"out", 4}, {"stream", 5}, {"host", 6}};
static PyObject *reduction_fallback; /* _core._reduce */
static PyObject *op_codes[COOPREDUCE_OP_ARGMAX + 1], *op_names[COOPREDUCE_OP_ARGMAX + 1];

static PyObject *reduction(int op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    const int dot = op == COOPREDUCE_OP_DOT, np = dot ? 8 : 7;
    const param *params = dot ? dot_params : one_params;
    PyObject *name = op_names[op];
    const Py_ssize_t npos = PyVectorcall_NARGS(nargsf);
    /* fast()'s arguments: op, then x, axis, keepdims, mode, out, stream, host, y; defaults */
    PyObject *a[9] = {op_codes[op], NULL,    Py_None, Py_False, s_deterministic,
                      Py_None,      Py_None, Py_False, NULL};
    if (!dot) a[8] = Py_None;
    if (npos > np)
        return PyErr_Format(PyExc_TypeError,
                            "%U() takes at most %d positional arguments (%zd given)", name, np,
                            npos);
    for (Py_ssize_t i = 0; i < npos; i++) a[1 + params[i].slot] = args[i];
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int i = 0;
        while (i < np && PyUnicode_CompareWithASCIIString(key, params[i].name)) i++;
        if (i == np)
            return PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument '%U'",
                                name, key);
        if (i < npos)
            return PyErr_Format(PyExc_TypeError, "%U() got multiple values for argument '%s'",
                                name, params[i].name);
        a[1 + params[i].slot] = args[npos + k];
    }
    for (int i = 0; i < np; i++)
        if (!a[1 + params[i].slot])
            return PyErr_Format(PyExc_TypeError, "%U() missing required argument '%s'", name,
                                params[i].name);
    PyObject *r = py_fast(NULL, a, dot ? 9 : 8);
    if (r != Py_NotImplemented) return r;
    Py_DECREF(r);
    if (!reduction_fallback) {
        PyErr_SetString(PyExc_RuntimeError, "import coopreduce, not its extension alone");
        return NULL;
    }
    PyObject *fa[9] = {name, a[1], a[8], a[2], a[3], a[4], a[5], a[6], a[7]};
    return PyObject_Vectorcall(reduction_fallback, fa, 9, NULL);
}

#define REDUCTION(NAME, OP)                                                                      \
    static PyObject *py_##NAME(PyObject *m, PyObject *const *args, size_t nargsf,               \
                               PyObject *kwnames)                                                \
    {                                                                                            \
        return reduction(OP, args, nargsf, kwnames);                                             \
    }
REDUCTION(sum, COOPREDUCE_OP_SUM)
REDUCTION(min, COOPREDUCE_OP_MIN)
REDUCTION(max, COOPREDUCE_OP_MAX)
REDUCTION(absmax, COOPREDUCE_OP_ABSMAX)
REDUCTION(mean, COOPREDUCE_OP_MEAN)
REDUCTION(sumsq, COOPREDUCE_OP_SUMSQ)
REDUCTION(norm2, COOPREDUCE_OP_NORM2)
REDUCTION(argmin, COOPREDUCE_OP_ARGMIN)
REDUCTION(argmax, COOPREDUCE_OP_ARGMAX)
REDUCTION(dot, COOPREDUCE_OP_DOT)
#undef REDUCTION

#define REDUCTION_DOC(NAME, TEXT)                                                                \
    NAME "(x, axis=None, keepdims=False, mode='deterministic', out=None, stream=None, "          \
         "host=False)\n--\n\n" TEXT                                                              \
         "\n\nSee coopreduce.reduce and docs/PYTHON.md for the arguments."

/* _set_reduction_fallback(_reduce): the Python layer that takes what fast() hands over. */
static PyObject *py_set_reduction_fallback(PyObject *self, PyObject *f)
{
    if (!PyCallable_Check(f)) {
        PyErr_SetString(PyExc_TypeError, "_set_reduction_fallback(callable)");
        return NULL;
    }
    Py_XSETREF(reduction_fallback, Py_NewRef(f));
    Py_RETURN_NONE;
}

/* Item i of a tuple of N_DTYPES entries (None for a dtype the framework lacks) into slot[i]. */
static int set_dtypes(PyObject *tuple, PyObject **slot)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != N_DTYPES) {
        PyErr_SetString(PyExc_TypeError, "expected a tuple of one entry a dtype");
        return -1;
    }
    for (int i = 0; i < N_DTYPES; i++) {
        PyObject *o = PyTuple_GET_ITEM(tuple, i);
        Py_XSETREF(slot[i], o == Py_None ? NULL : Py_NewRef(o));
    }
    return 0;
}

/* _register_numpy(ndarray, empty, dtypes, scalars): numpy's array type, numpy.empty, the dtype
 * of each coopreduce code and a 0-d array of each (None where numpy has none). */
static PyObject *py_register_numpy(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (n != 4 || !PyType_Check(a[0])) {
        PyErr_SetString(PyExc_TypeError, "_register_numpy(ndarray, empty, dtypes, scalars)");
        return NULL;
    }
    unsigned char *data[N_DTYPES] = {0};
    PyObject *scratch = a[3];
    if (!PyTuple_Check(scratch) || PyTuple_GET_SIZE(scratch) != N_DTYPES) {
        PyErr_SetString(PyExc_TypeError, "expected a tuple of one 0-d array a dtype");
        return NULL;
    }
    for (int i = 0; i < N_DTYPES; i++) {
        PyObject *o = PyTuple_GET_ITEM(scratch, i);
        if (o == Py_None) continue;
        Py_buffer v;
        if (PyObject_GetBuffer(o, &v, PyBUF_RECORDS) != 0) return NULL;
        const int ok = v.ndim == 0 && buffer_code(&v) == i;
        data[i] = v.buf; /* stays valid: the array is kept and never resized */
        PyBuffer_Release(&v);
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "scalar %d is not a 0-d array of its dtype", i);
            return NULL;
        }
    }
    if (set_dtypes(a[2], np_dtypes) || set_dtypes(scratch, np_scratch)) return NULL;
    memcpy(np_scratch_data, data, sizeof data);
    Py_XSETREF(np_empty, Py_NewRef(a[1]));
    Py_XSETREF(np_type, (PyTypeObject *)Py_NewRef(a[0]));
    Py_RETURN_NONE;
}

/* The exchange API a tensor type publishes (a capsule named "dlpack_exchange_api", or an
 * integer address, as DLPack allows), if its major version is DLPack 1's and it has the two
 * functions the fast path calls; NULL otherwise, an exception set only if Python failed. */
static const DLPackExchangeAPI *exchange_api(PyObject *type)
{
    PyObject *o = PyObject_GetAttrString(type, "__dlpack_c_exchange_api__");
    if (!o) {
        PyErr_Clear();
        return NULL;
    }
    const DLPackExchangeAPI *api = NULL;
    if (PyCapsule_CheckExact(o))
        api = PyCapsule_GetPointer(o, "dlpack_exchange_api");
    else if (PyLong_Check(o))
        api = PyLong_AsVoidPtr(o);
    Py_DECREF(o);
    PyErr_Clear(); /* a capsule of another name, a negative integer: no API */
    if (!api || api->header.version.major != 1 || !api->dltensor_from_py_object_no_sync ||
        !api->current_work_stream)
        return NULL;
    return api;
}

/* _register_torch(Tensor, dtypes, raw_stream, empty_like): torch.Tensor, the torch.dtype of each
 * coopreduce code (None where this torch has none), device -> its current stream as an int, and
 * torch.empty_like. */
static PyObject *py_register_torch(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (n != 4 || !PyType_Check(a[0])) {
        PyErr_SetString(PyExc_TypeError, "_register_torch(Tensor, dtypes, raw_stream, empty_like)");
        return NULL;
    }
    if (set_dtypes(a[1], torch_dtypes)) return NULL;
    for (int d = 0; d <= MAX_DEVICES; d++)
        for (int i = 0; i < N_DTYPES; i++) Py_CLEAR(torch_zero_d[d][i]);
    clear_pools();
    Py_XSETREF(torch_raw_stream, Py_NewRef(a[2]));
    Py_XSETREF(torch_empty_like, Py_NewRef(a[3]));
    Py_XSETREF(torch_type, (PyTypeObject *)Py_NewRef(a[0]));
    torch_api = exchange_api(a[0]);
    if (!torch_api && PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* _set_fast_flags(flags) -> the previous flags (FAST_EXCHANGE 1, FAST_RECYCLE 2); the blocks of
 * results so far are let go. For the tests and the benchmark. */
static PyObject *py_set_fast_flags(PyObject *self, PyObject *arg)
{
    const long f = PyLong_AsLong(arg);
    if (f == -1 && PyErr_Occurred()) return NULL;
    if (f < 0 || f > (FAST_EXCHANGE | FAST_RECYCLE)) {
        PyErr_SetString(PyExc_ValueError, "_set_fast_flags: a combination of 1 and 2");
        return NULL;
    }
    clear_pools();
    const unsigned before = fast_flags;
    fast_flags = (unsigned)f;
    return PyLong_FromUnsignedLong(before);
}

/* _fast_info() -> (flags, whether torch's exchange API was found): for the benchmark's notes. */
static PyObject *py_fast_info(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(IO)", fast_flags, torch_api ? Py_True : Py_False);
}

/* _set_result_pool(n) -> the previous n: 0-d torch results as views of blocks of up to n (0: a
 * tensor of its own each, as torch.empty_like makes them); the blocks so far are let go. For
 * the tests and the benchmark. */
static PyObject *py_set_result_pool(PyObject *self, PyObject *arg)
{
    const Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0 || n > 65536) {
        PyErr_SetString(PyExc_ValueError, "_set_result_pool: 0 .. 65536 results a block");
        return NULL;
    }
    clear_pools();
    const Py_ssize_t before = pool_size;
    pool_size = n;
    return PyLong_FromSsize_t(before);
}

static PyObject *py_set_error_class(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "_set_error_class takes 2 arguments");
        return NULL;
    }
    Py_XSETREF(error_class, Py_NewRef(a[0]));
    Py_XSETREF(argument_error_class, Py_NewRef(a[1]));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"reduce", (PyCFunction)(void (*)(void))py_reduce, METH_FASTCALL,
     "reduce(op, dtype, x, y, out, outer, len, inner, device, mode, stream)"},
    {"reduce_to_host", (PyCFunction)(void (*)(void))py_reduce_to_host, METH_FASTCALL,
     "reduce_to_host(op, dtype, x, y, n, device, mode, stream) -> number"},
    {"reduce_segments", (PyCFunction)(void (*)(void))py_reduce_segments, METH_FASTCALL,
     "reduce_segments(op, dtype, x, y, out, offsets, nseg, device, mode, stream, n)"},
    {"synchronize", (PyCFunction)(void (*)(void))py_synchronize, METH_FASTCALL,
     "synchronize(device, stream)"},
    {"reserve", (PyCFunction)(void (*)(void))py_reserve, METH_FASTCALL,
     "reserve(device, kind, a, b, c, dtype, mode)"},
    {"result_type", (PyCFunction)(void (*)(void))py_result_type, METH_FASTCALL,
     "result_type(op, dtype) -> (dtype, size) or None"},
    {"dlpack_info", py_dlpack_info, METH_O, "dlpack_info(capsule) -> tuple"},
    {"info", py_info, METH_NOARGS, "info() -> dict"},
    {"time_c", (PyCFunction)(void (*)(void))py_time_c, METH_FASTCALL,
     "time_c(op, dtype, x, out, n, device, mode, stream, iters) -> seconds per call"},
    {"fast", (PyCFunction)(void (*)(void))py_fast, METH_FASTCALL,
     "fast(op, x, axis, keepdims, mode, out, stream, host) -> result or NotImplemented"},
    {"_register_numpy", (PyCFunction)(void (*)(void))py_register_numpy, METH_FASTCALL, NULL},
    {"_register_torch", (PyCFunction)(void (*)(void))py_register_torch, METH_FASTCALL, NULL},
    {"_set_error_class", (PyCFunction)(void (*)(void))py_set_error_class, METH_FASTCALL, NULL},
    {"_set_result_pool", py_set_result_pool, METH_O, NULL},
    {"_set_fast_flags", py_set_fast_flags, METH_O, NULL},
    {"_set_reduction_fallback", py_set_reduction_fallback, METH_O, NULL},
#define REDUCTION_ENTRY(NAME, TEXT)                                                              \
    {#NAME, (PyCFunction)(void (*)(void))py_##NAME, METH_FASTCALL | METH_KEYWORDS,               \
     REDUCTION_DOC(#NAME, TEXT)},
    REDUCTION_ENTRY(sum, "The sum: canonical order v1, or the correctly rounded sum in exact mode.")
    REDUCTION_ENTRY(min, "The minimum (NaN if any element is NaN; -0.0 below +0.0).")
    REDUCTION_ENTRY(max, "The maximum (NaN if any element is NaN; +0.0 above -0.0).")
    REDUCTION_ENTRY(absmax, "The largest absolute value.")
    REDUCTION_ENTRY(mean, "The sum divided by the count, rounded once (float64 for integers).")
    REDUCTION_ENTRY(sumsq, "The sum of squares (floats).")
    REDUCTION_ENTRY(norm2, "The Euclidean norm, without overflow or underflow (floats).")
    REDUCTION_ENTRY(argmin, "The index of the first minimum (or of the first NaN), as int64.")
    REDUCTION_ENTRY(argmax, "The index of the first maximum (or of the first NaN), as int64.")
#undef REDUCTION_ENTRY
    {"dot", (PyCFunction)(void (*)(void))py_dot, METH_FASTCALL | METH_KEYWORDS,
     "dot(x, y, axis=None, keepdims=False, mode='deterministic', out=None, stream=None, "
     "host=False)\n--\n\nThe sum of x * y (floats), along axis as the other reductions: x and y "
     "of one kind, shape, dtype and device.\n\nSee coopreduce.reduce and docs/PYTHON.md for the "
     "arguments."},
    {"_fast_info", py_fast_info, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_coopreduce",
                                    "coopreduce's compiled core (use the coopreduce package)", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__coopreduce(void)
{
    /* The key lives as long as the process: the module cannot be unloaded from CPython. */
    static int key_made;
    if (!key_made) {
        if (pthread_key_create(&cache_key, cache_free) != 0) {
            PyErr_SetString(PyExc_ImportError, "cannot create the handle cache's thread key");
            return NULL;
        }
        key_made = 1;
    }
    static const struct {
        PyObject **slot;
        const char *text;
    } names[] = {{&s_dtype, "dtype"},         {&s_get_device, "get_device"},
                 {&s_is_cpu, "is_cpu"},       {&s_is_cuda, "is_cuda"},
                 {&s_is_contiguous, "is_contiguous"}, {&s_shape, "shape"},
                 {&s_data_ptr, "data_ptr"},   {&s_new_empty, "new_empty"}, {&s_unbind, "unbind"},
                 {&s_deterministic, "deterministic"}, {&s_exact, "exact"},
                 {&s_is_neg, "is_neg"},       {&s_use_count, "_use_count"},
                 {&s_requires_grad, "requires_grad"}, {&s_grad, "grad"},
                 {&s_data, "data"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].text)))
            return NULL;
    if (!kw_dtype && !(kw_dtype = Py_BuildValue("(O)", s_dtype))) return NULL;
    if (!empty_tuple && !(empty_tuple = PyTuple_New(0))) return NULL;
    for (int op = 0; op <= COOPREDUCE_OP_ARGMAX; op++) /* names: the library's own table */
        if (!op_names[op] &&
            (!(op_names[op] = PyUnicode_InternFromString(coopreduce_op_name((coopreduce_op)op))) ||
             !(op_codes[op] = PyLong_FromLong(op))))
            return NULL;
    if (!weakref_count) {
        PyObject *m = PyImport_ImportModule("_weakref");
        weakref_count = m ? PyObject_GetAttrString(m, "getweakrefcount") : NULL;
        Py_XDECREF(m);
        if (!weakref_count) return NULL;
    }
    return PyModule_Create(&module);
}
