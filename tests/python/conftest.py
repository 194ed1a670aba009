"""Shared by the Python tests: fresh random seeds (printed, so a failure can be replayed with
COOPREDUCE_TEST_SEED), the CLI to compare bits with (COOPREDUCE_CLI, set by ctest), and the
exact oracle: Python's fractions, rounded once to the result type."""
import os
import random
from fractions import Fraction

import numpy as np
import pytest

SEED = int(os.environ.get("COOPREDUCE_TEST_SEED", random.SystemRandom().randrange(2**32)))
print(f"coopreduce python tests: seed {SEED} (COOPREDUCE_TEST_SEED={SEED} replays it)")


@pytest.fixture
def rng(request):
    # One stream per test, from the run's seed and the test's name.
    return np.random.default_rng([SEED, abs(hash(request.node.name)) % 2**32])


def round_fraction(fr, dtype):
    """The float of `dtype` nearest to the exact value fr, ties to even (float(fr) is correctly
    rounded to float64, but a narrower type would round twice, so the neighbours are compared)."""
    t = np.dtype(dtype).type
    if fr == 0:
        return t(0.0)
    f = t(float(fr)) if abs(fr) < 2**1023 else t(np.inf if fr > 0 else -np.inf)
    if not np.isfinite(f):
        return f
    cands = [np.nextafter(f, t(-np.inf)), f, np.nextafter(f, t(np.inf))]
    cands = [c for c in cands if np.isfinite(c)]
    err = [abs(Fraction(float(c)) - fr) for c in cands]
    best = min(err)
    ties = [c for c, e in zip(cands, err) if e == best]
    if len(ties) == 1:
        return ties[0]
    width = np.dtype(dtype).itemsize * 8
    return next(c for c in ties if int(c.view(f"u{width // 8}")) % 2 == 0)


def exact_sum(values):
    return sum((Fraction(float(v)) for v in values), Fraction(0))


def bits(v):
    a = np.asarray(v)
    return a.view(f"u{a.dtype.itemsize}").tolist() if a.dtype.kind == "f" else a.tolist()
