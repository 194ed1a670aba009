/* _coopreduce.c — the Python extension: the library's calls on raw pointers, with handles cached
 * per (thread, device). The package's Python layer (coopreduce/_core.py) turns numpy arrays,
 * torch tensors and CuPy arrays into pointers and extents, allocates results in the caller's
 * framework and calls in here; this file imports no framework. It is the hot path: arguments
 * are read through METH_FASTCALL and the GIL is kept for short calls (releasing it costs more
 * than a small reduction). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "coopreduce.h"

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
    if (c->mode[slot] != mode) {
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

/* reduce_segments(op, dtype, x, y, out, offsets, nseg, device, mode, stream) -> None */
static PyObject *py_reduce_segments(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    if (n != 10) {
        PyErr_SetString(PyExc_TypeError, "reduce_segments takes 10 arguments");
        return NULL;
    }
    int op, dtype, device, mode;
    uint64_t nseg, stream;
    if (as_int(a[0], &op) || as_int(a[1], &dtype) || as_u64(a[6], &nseg) ||
        as_int(a[7], &device) || as_int(a[8], &mode) || as_u64(a[9], &stream))
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
    /* On a GPU the call reads the offsets back, so it waits for the stream: no GIL meanwhile. */
    Py_BEGIN_ALLOW_THREADS
    s = coopreduce_reduce_segments((coopreduce_op)op, x, y, out, off, nseg,
                                   (coopreduce_dtype)dtype, h, (void *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    release_views(v, has, 4);
    if (s) return raise_status(s, h);
    Py_RETURN_NONE;
}

/* reserve(device, n, dtype, mode) -> None: the calling thread's handle for `device` grows its
 * workspace for n elements (before a CUDA graph capture). */
static PyObject *py_reserve(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    int device, dtype, mode;
    uint64_t count;
    if (n != 4) {
        PyErr_SetString(PyExc_TypeError, "reserve takes 4 arguments");
        return NULL;
    }
    if (as_int(a[0], &device) || as_u64(a[1], &count) || as_int(a[2], &dtype) ||
        as_int(a[3], &mode))
        return NULL;
    coopreduce_handle *h = get_handle(device, mode);
    if (!h) return NULL;
    coopreduce_status s = coopreduce_reserve(h, count, (coopreduce_dtype)dtype);
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
     "reduce_segments(op, dtype, x, y, out, offsets, nseg, device, mode, stream)"},
    {"reserve", (PyCFunction)(void (*)(void))py_reserve, METH_FASTCALL,
     "reserve(device, n, dtype, mode)"},
    {"result_type", (PyCFunction)(void (*)(void))py_result_type, METH_FASTCALL,
     "result_type(op, dtype) -> (dtype, size) or None"},
    {"dlpack_info", py_dlpack_info, METH_O, "dlpack_info(capsule) -> tuple"},
    {"info", py_info, METH_NOARGS, "info() -> dict"},
    {"time_c", (PyCFunction)(void (*)(void))py_time_c, METH_FASTCALL,
     "time_c(op, dtype, x, out, n, device, mode, stream, iters) -> seconds per call"},
    {"_set_error_class", (PyCFunction)(void (*)(void))py_set_error_class, METH_FASTCALL, NULL},
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
    return PyModule_Create(&module);
}
