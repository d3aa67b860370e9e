"""The ADF figures draw from merged cell files of small pbp/ebp/relu_map runs."""

import numpy as np
import pytest

from bnnsweep.figures import FIGURES, draw
from bnnsweep.figures.adf_classification import pointwise_kl
from bnnsweep.figures.adf_uci_table import adf_uci_frame


def test_pointwise_kl_is_zero_for_equal_and_positive_otherwise():
    p = np.array([[0.2, 0.8], [0.5, 0.5]])
    np.testing.assert_allclose(pointwise_kl(p, p), 0.0, atol=1e-12)
    assert np.all(pointwise_kl(p, p[::-1]) > 0)


def test_toy_classification_and_epoch_error_figures(adf_toy_merged, tmp_path):
    merged = adf_toy_merged
    for kind in ("adf_toy_classification", "adf_epoch_error"):
        (path,) = draw(kind, merged, tmp_path / kind)
        assert path.suffix == ".png" and path.stat().st_size > 10_000


def test_uci_table_figure_and_frame(adf_yacht_merged, tmp_path):
    merged = adf_yacht_merged
    frame = adf_uci_frame(merged)
    assert set(frame["method"]) == {"pbp", "ebp"} and (frame["n_runs"] == 2).all()
    assert np.isfinite(frame["test_rmse_se"]).all() and np.isfinite(frame["test_loglik_mean"]).all()
    (path,) = draw("adf_uci_table", merged, tmp_path / "table")
    assert path.stat().st_size > 10_000


@pytest.mark.parametrize("kind", ["adf_uci_table", "adf_toy_classification", "adf_epoch_error"])
def test_adf_figures_registered(kind):
    assert kind in FIGURES
