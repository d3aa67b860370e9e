"""The allocator tuning used by the command line and the benchmarks."""

import platform

import numpy as np
import pytest

from bnnsweep import allocator


@pytest.mark.skipif(platform.system() != "Linux", reason="mallopt is glibc's")
def test_glibc_accepts_the_thresholds():
    assert allocator.tune() is True


def test_tuning_changes_no_arithmetic():
    x = np.random.default_rng(0).normal(size=(18, 200, 24))
    before = np.tanh(x) @ x.transpose(0, 2, 1)
    allocator.tune()
    assert np.array_equal(before, np.tanh(x) @ x.transpose(0, 2, 1))
