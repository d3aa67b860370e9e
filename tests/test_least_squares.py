"""``least_squares``: the linear and quadratic regression rows of paper 000 Table 2 and
thesis Table 5.2, checked on functions they represent exactly and against the textbook
predictive variance."""

import numpy as np
import pytest

from bnnsweep.datasets.generated import unstandardised_split
from bnnsweep.methods import get_method


def quadratic_split(seed: int, noise: float):
    rng = np.random.default_rng(seed)
    x, x_test = rng.normal(size=(60, 3)), rng.normal(size=(20, 3))

    def f(x):
        return 1.0 + x @ np.array([0.5, -1.0, 2.0]) + 0.7 * x[:, 0] * x[:, 1] - 0.3 * x[:, 2] ** 2

    y = f(x) + noise * rng.normal(size=60)
    return unstandardised_split("0", x, y, x_test, f(x_test))


def fitted(split, degree):
    method = get_method("least_squares")
    settings = method.settings({"degree": degree})
    return method.fit(split, settings, np.random.default_rng(0), log=lambda *_: None)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quadratic_terms_recover_a_quadratic_function_and_linear_ones_do_not(seed):
    split = quadratic_split(seed, noise=0.0)
    quad = fitted(split, 2)
    np.testing.assert_allclose(quad.pred_mean[:, 0], split.y_test[:, 0], atol=1e-8)
    linear = fitted(split, 1)
    assert np.sqrt(np.mean((linear.pred_mean[:, 0] - split.y_test[:, 0]) ** 2)) > 0.1


def test_predictive_variance_is_the_gaussian_linear_models():
    """s^2 (1 + x^T (X^T X)^-1 x) with s^2 = RSS / (N - p), by hand for degree 1."""
    split = quadratic_split(3, noise=0.2)
    result = fitted(split, 1)
    design = np.column_stack([np.ones(60), split.x_train])
    coef, rss, *_ = np.linalg.lstsq(design, split.y_train[:, 0], rcond=None)
    s2 = rss[0] / (60 - 4)
    test = np.column_stack([np.ones(20), split.x_test])
    leverage = np.einsum("ti,ij,tj->t", test, np.linalg.inv(design.T @ design), test)
    np.testing.assert_allclose(result.pred_mean[:, 0], test @ coef, rtol=1e-10)
    np.testing.assert_allclose(result.pred_var[:, 0], s2 * (1 + leverage), rtol=1e-8)


def test_degree_other_than_1_or_2_is_refused_by_name():
    from bnnsweep.method_base import SettingsError

    with pytest.raises(SettingsError, match="degree"):
        get_method("least_squares").settings({"degree": 3})
