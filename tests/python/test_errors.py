"""Bad arguments raise ValueError or TypeError; the library's refusals coopreduce.Error."""
import numpy as np
import pytest

import coopreduce as cr


def test_bad_dtypes():
    for x in (np.zeros(3, bool), np.zeros(3, np.complex64), np.zeros(3, np.int8),
              np.zeros(3, ">f4"), np.zeros(3, object)):
        with pytest.raises(TypeError):
            cr.sum(x)
    with pytest.raises(TypeError):
        cr.sumsq(np.zeros(3, np.int32))


def test_empty_needs_element():
    for op in ("argmax", "argmin", "max", "min", "absmax"):
        with pytest.raises(ValueError):
            getattr(cr, op)(np.zeros(0, np.float32))
        with pytest.raises(ValueError):
            getattr(cr, op)(np.zeros((0, 3)), axis=0)
    assert cr.argmax(np.zeros((0, 3)), axis=1).shape == (0,)
    assert cr.sum(np.zeros(0)) == 0.0 and np.isnan(cr.mean(np.zeros(0, np.float32)))


def test_bad_axis():
    x = np.zeros((2, 3, 4))
    for axis, exc in ((3, ValueError), (-4, ValueError), ((0, 2), ValueError), ((1, 1), ValueError),
                      ((), ValueError), (1.0, TypeError), ("0", TypeError)):
        with pytest.raises(exc):
            cr.sum(x, axis=axis)
    with pytest.raises(ValueError):
        cr.sum(np.float64(3.0) * np.ones(()), axis=0)


def test_not_arrays():
    for x in ([1.0, 2.0], 3.0, "abc", None, object()):
        with pytest.raises(TypeError):
            cr.sum(x)


def test_bad_arguments():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError):
        cr.sum(x, mode="fast")
    with pytest.raises(ValueError):
        cr.reduce("product", x)
    with pytest.raises(TypeError):
        cr.dot(x, None)
    with pytest.raises(ValueError):
        cr.dot(x, np.ones(5, np.float32))
    with pytest.raises(ValueError):
        cr.dot(x, np.ones(4, np.float64))
    with pytest.raises(TypeError):
        cr.sum(x, stream="s")
    with pytest.raises(ValueError):
        cr.sum(np.ones((2, 2)), axis=0, out=np.empty(3))
    with pytest.raises(TypeError):
        cr.sum(np.ones((2, 2)), axis=0, out=np.empty(2, np.float32))
    with pytest.raises(ValueError):
        cr.sum(np.ones((2, 2)), axis=0, host=True)
    with pytest.raises(ValueError):
        cr.reduce_segments("sum", x, [0, 5, 3])  # beyond x
    with pytest.raises(ValueError):
        cr.reduce_segments("sum", x, [0, 3, 2])  # decreasing: the library's refusal
    with pytest.raises(ValueError):
        cr.reduce_segments("sum", np.ones((2, 2)), [0, 1])
    with pytest.raises(ValueError):
        cr.reserve(10, "float128")
    with pytest.raises(ValueError):
        cr.reserve((4, 5), "float32", axis=2)
    with pytest.raises(TypeError):
        cr.reserve((4, 5), "float32", axis=1, nseg=3)
    with pytest.raises(cr.Error):  # the shape's element count overflows
        cr.reserve((1 << 40, 1 << 20, 1 << 10), "float32", axis=1)
    cr.reserve((4, 5, 6), "float64", axis=(1, 2))
    cr.reserve(100, "bfloat16", nseg=7)


def test_library_errors_carry_status_and_message():
    with pytest.raises(cr.Error) as e:
        cr.reduce_segments("sum", np.ones(4), [0, 3, 2])
    assert e.value.status == 1 and e.value.status_name == "invalid argument"
    assert isinstance(e.value, ValueError) and "offset" in e.value.message
    with pytest.raises(cr.Error) as e:
        cr.mean(np.ones(4, np.float32), mode="exact")
    assert e.value.status == 11
    if not cr.info()["gpus"]:
        with pytest.raises(cr.Error) as e:
            cr.reserve(10, "float32", device=0)
        assert e.value.status == 3
