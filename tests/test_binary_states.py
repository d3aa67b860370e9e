import numpy as np
import pytest

from bnnsweep.models.binary_states import all_states


def test_all_states_are_distinct_and_complete():
    s = all_states(4)
    assert s.shape == (16, 4)
    assert len({tuple(r) for r in s}) == 16
    np.testing.assert_array_equal(s[5], [1, 0, 1, 0])


def test_plus_minus_values():
    s = all_states(3, values=(-1.0, 1.0))
    assert set(np.unique(s)) == {-1.0, 1.0}
    np.testing.assert_array_equal(s.sum(axis=0), 0)


def test_refuses_too_many_units():
    with pytest.raises(ValueError, match="cannot enumerate"):
        all_states(40)
