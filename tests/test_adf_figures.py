"""The ADF figures draw from merged cell files of small pbp/ebp/relu_map runs."""

import numpy as np
import pytest

from bnnsweep import datasets
from bnnsweep.figures import FIGURES, draw
from bnnsweep.figures.adf_classification import pointwise_kl
from bnnsweep.figures.adf_uci_table import adf_uci_frame
from bnnsweep.methods import get_method
from bnnsweep.results import cell_dataset, merge_cells, write_netcdf_atomic
from bnnsweep.sweep import Cell


def _merged(tmp_path, dataset, splits, methods):
    paths = []
    for split_name in splits:
        split = datasets.load(dataset).split(split_name)
        for label, (name, settings) in methods.items():
            m = get_method(name)
            result = m.fit(
                split, m.settings(settings), np.random.default_rng(0), log=lambda *_: None
            )
            cell = Cell(
                "t",
                dataset,
                split_name,
                label,
                name,
                0,
                (("hidden", settings["hidden"]),),
                settings,
            )
            path = tmp_path / f"{dataset}_{label}_{split_name}.nc"
            write_netcdf_atomic(cell_dataset(result, split, cell), path)
            paths.append(path)
    return merge_cells(paths)


def test_pointwise_kl_is_zero_for_equal_and_positive_otherwise():
    p = np.array([[0.2, 0.8], [0.5, 0.5]])
    np.testing.assert_allclose(pointwise_kl(p, p), 0.0, atol=1e-12)
    assert np.all(pointwise_kl(p, p[::-1]) > 0)


def test_toy_classification_and_epoch_error_figures(tmp_path):
    methods = {
        "pbp": ("pbp", {"hidden": 5, "likelihood": "softmax", "epochs": 3}),
        "ebp": ("ebp", {"hidden": 5, "likelihood": "softmax", "epochs": 3}),
        "relu_map": ("relu_map", {"hidden": 5, "likelihood": "softmax", "max_iter": 50}),
    }
    merged = _merged(tmp_path, "toy_two_class", ["default"], methods)
    for kind in ("adf_toy_classification", "adf_epoch_error"):
        (path,) = draw(kind, merged, tmp_path / kind)
        assert path.suffix == ".png" and path.stat().st_size > 10_000


def test_uci_table_figure_and_frame(tmp_path):
    methods = {name: (name, {"hidden": 5, "epochs": 2}) for name in ("pbp", "ebp")}
    merged = _merged(tmp_path, "yacht", ["0", "1"], methods)
    frame = adf_uci_frame(merged)
    assert set(frame["method"]) == {"pbp", "ebp"} and (frame["n_runs"] == 2).all()
    assert np.isfinite(frame["test_rmse_se"]).all() and np.isfinite(frame["test_loglik_mean"]).all()
    (path,) = draw("adf_uci_table", merged, tmp_path / "table")
    assert path.stat().st_size > 10_000


@pytest.mark.parametrize("kind", ["adf_uci_table", "adf_toy_classification", "adf_epoch_error"])
def test_adf_figures_registered(kind):
    assert kind in FIGURES
