"""ADF runs in numerical trouble are not ``ok`` (engines/adf/replicates.py ``flag_unstable``): a share of
rejected weight updates per point visit above ``REJECTED_SHARE_LIMIT``, or above
``NO_FIT_SHARE`` with a training fit no better than ``NO_FIT_RATIO``, is ``not_converged``; a
predictive mean fitting the training targets more than ``TRAIN_RMSE_LIMIT`` times worse than
their mean is ``diverged``; healthy runs stay ``ok``."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bnnsweep.datasets.base import Split
from bnnsweep.engines.adf.replicates import (
    ADF,
    NO_FIT_RATIO,
    NO_FIT_SHARE,
    REJECTED_SHARE_LIMIT,
    TRAIN_RMSE_LIMIT,
    flag_unstable,
    train_rmse_ratio,
)
from bnnsweep.method_base import FitResult
from bnnsweep.methods.adf import PBPSettings, fit

quiet = {"log": lambda *_: None}


def _regression(seed: int, n: int = 80, n_test: int = 20) -> Split:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + n_test, 3))
    y = (np.sin(x[:, 0]) + 0.5 * x[:, 1] + 0.1 * rng.normal(size=n + n_test))[:, None]
    return Split(f"s{seed}", x[:n], y[:n], x[n:], y[n:], np.zeros(1), np.ones(1))


def _result() -> FitResult:
    return FitResult(pred_mean=np.zeros((3, 1)), pred_var=np.ones((3, 1)))


def test_train_rmse_ratio_is_one_for_the_mean_and_zero_for_a_perfect_fit():
    y = np.random.default_rng(0).normal(3.0, 2.0, size=(50, 2))
    assert train_rmse_ratio(np.broadcast_to(y.mean(axis=0), y.shape), y) == pytest.approx(1.0)
    assert train_rmse_ratio(y, y) == 0.0
    assert train_rmse_ratio(y + 1e12, y) > 1e11
    assert train_rmse_ratio(np.full_like(y, np.nan), y) != train_rmse_ratio(y, y)


@given(
    visits=st.integers(1, 10**7),
    fraction=st.floats(0.0, 1.0),
    ratio=st.one_of(st.none(), st.floats(0.0, 5.0), st.floats(0.0, 1e30), st.just(float("nan"))),
)
def test_flag_unstable_against_its_limits(visits, fraction, ratio):
    rejected = int(fraction * 2 * REJECTED_SHARE_LIMIT * visits)
    result = _result()
    flag_unstable(result, rejected, visits, ratio)
    share = rejected / visits
    no_fit = ratio is not None and not ratio <= NO_FIT_RATIO
    unstable = share > REJECTED_SHARE_LIMIT or (share > NO_FIT_SHARE and no_fit)
    exploded = ratio is not None and not ratio <= TRAIN_RMSE_LIMIT
    expected = "diverged" if exploded else "not_converged" if unstable else "ok"
    assert result.status == expected
    assert ("weight updates rejected" in result.status_message) == unstable
    assert ("the predictions exploded" in result.status_message) == exploded
    if unstable:
        assert f"{rejected} weight updates rejected in {visits} point visits" in (
            result.status_message
        )


def test_healthy_regression_runs_stay_ok():
    settings = PBPSettings(hidden=10, epochs=10)
    for seed in (0, 1, 2):
        result = fit(_regression(seed), settings, np.random.default_rng(seed), **quiet)
        assert result.status == "ok", result.status_message
        assert result.diagnostics["rejected_weight_update_share"] <= REJECTED_SHARE_LIMIT
        assert result.diagnostics["train_rmse_ratio"] < 0.5


def test_exploded_weights_make_the_run_diverged():
    """The same run, once healthy and once with its output layer's means blown up by 1e9
    (as the five-layer PBP runs of uci_adf_deep_small.yaml ended): only the second is flagged,
    its predictions still finite (so the runner's non-finite check would pass it)."""
    for seed in (0, 1):
        run = ADF(
            [_regression(seed)],
            PBPSettings(hidden=10, epochs=5),
            [np.random.default_rng(seed)],
            **quiet,
        )
        (healthy,) = run.run()
        assert healthy.status == "ok", healthy.status_message
        means = run.state.means
        run.state = run.state._replace(means=(*means[:-1], means[-1] * 1e9))
        trace = np.full(5, np.nan)
        exploded = run._result(0, trace, trace, run.test_moments(), run.train_moments())
        assert np.all(np.isfinite(exploded.pred_mean))
        assert exploded.status == "diverged" and "training RMSE" in exploded.status_message
        assert exploded.diagnostics["train_rmse_ratio"] > 1e6
