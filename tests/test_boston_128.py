"""The seeded 128-case Boston housing splits of paper 002's comparison."""

import numpy as np

from bnnsweep import datasets
from bnnsweep.datasets.uci import small_split_indices


def test_splits_partition_the_rows_with_128_training_cases():
    parts = small_split_indices(506)
    assert len(parts) == 5
    for train, test in parts:
        assert len(train) == 128 and len(test) == 378
        assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(506))
    assert not np.array_equal(parts[0][0], parts[1][0])
    again = small_split_indices(506)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(parts, again, strict=True))


def test_split_is_standardised_on_its_training_rows():
    split = datasets.load("boston_housing_128").split("0")
    assert split.x_train.shape == (128, 13) and split.x_test.shape == (378, 13)
    np.testing.assert_allclose(split.y_train.mean(), 0.0, atol=1e-12)
    np.testing.assert_allclose(split.y_train.std(), 1.0, rtol=1e-12)
    raw = datasets.load("boston_housing").split("0")
    original = np.concatenate([split.y_train, split.y_test]) * split.y_scale + split.y_mean
    everything = np.concatenate([raw.y_train, raw.y_test]) * raw.y_scale + raw.y_mean
    np.testing.assert_allclose(np.sort(original.ravel()), np.sort(everything.ravel()))
