"""Round trips of the seed figures (issue 17 item 6) from small merged files written and read
back as `bnnsweep merge` writes them."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pytest
import xarray as xr

from bnnsweep.figures import FIGURES, draw, load_merged
from bnnsweep.figures.sunspot_predictions import (
    coverage,
    sunspot_predictions,
    target_years,
)
from bnnsweep.results import with_run_test_data, write_netcdf_atomic

N_TEST = 59  # the sunspot test years 1921-1979


def _sunspot_merged(nmse_by_run) -> xr.Dataset:
    """Runs on ``sunspots`` (one per entry of ``nmse_by_run``: (method, components, seed,
    sd scale)) whose targets, means and variances are known: the mean is the target plus
    a fixed offset of 1, the s.d. ``scale`` everywhere, so exactly the targets are inside the
    +-1 s.d. bars when scale >= 1 and none when it is below."""
    n = len(nmse_by_run)
    years = np.arange(1921, 1921 + N_TEST)
    target = 50 + 40 * np.sin(2 * np.pi * (years - 1921) / 11.0)
    y = np.tile(target[None, :, None], (n, 1, 1))
    scale = np.array([r[3] for r in nmse_by_run])
    mean = y + 1.0
    var = np.tile((scale**2)[:, None, None], (1, N_TEST, 1))
    mse = np.ones(n)
    data = {
        "pred_mean": (("run", "test_point", "output"), mean),
        "pred_var": (("run", "test_point", "output"), var),
        "y_test": (("run", "test_point", "output"), y),
        "x_test": (("run", "test_point", "input"), np.zeros((n, N_TEST, 1))),
        "test_mse": ("run", mse),
        "test_rmse": ("run", np.sqrt(mse)),
        "test_nmse": ("run", mse / np.var(target)),
        "status": ("run", ["ok"] * n),
        "log_evidence": ("run", np.full(n, np.nan)),
    }
    coords = {
        "experiment": ("run", ["t"] * n),
        "dataset": ("run", ["sunspots"] * n),
        "split": ("run", ["default"] * n),
        "method": ("run", [r[0] for r in nmse_by_run]),
        "seed": ("run", np.array([r[2] for r in nmse_by_run], dtype=np.int64)),
        "hidden": ("run", np.full(n, 8, dtype=np.int64)),
        "components": ("run", np.array([r[1] for r in nmse_by_run], dtype=np.int64)),
        "test_point": np.arange(N_TEST),
        "output": [0],
        "input": [0],
    }
    return xr.Dataset(data, coords=coords, attrs={"title": "bnnsweep merged results"})


RUNS = [
    ("vi_mixture", 3, 1, 2.0),  # drawn: smallest seed of its label
    ("vi_mixture", 3, 0, 1.5),
    ("vi_mixture", 5, 0, 0.5),  # bars narrower than the offset: no target inside
    ("map", -1, 0, 1.0),
]


@pytest.fixture
def merged_file(tmp_path):
    path = tmp_path / "merged.nc"
    write_netcdf_atomic(_sunspot_merged(RUNS), path)
    return path


def test_coverage_counts_targets_inside_the_bars():
    target = np.array([0.0, 1.0, 2.0, 3.0])
    mean = np.zeros(4)
    assert coverage(mean, np.ones(4), target, 1.0) == 0.5
    assert coverage(mean, np.ones(4), target, 2.0) == 0.75
    assert coverage(mean, np.full(4, np.nan), target, 1.0) == 0.0


def test_sunspot_test_points_are_drawn_against_their_years():
    years, label = target_years("sunspots", N_TEST)
    assert label == "target year" and years[0] == 1921 and years[-1] == 1979
    index, label = target_years("sunspots", 10)  # a test set the metadata do not describe
    assert label == "test point" and list(index) == list(range(10))


def test_round_trip_draws_every_label_with_its_bars_and_targets(merged_file, tmp_path):
    (path,) = draw("sunspot_predictions", merged_file, tmp_path / "pred")
    assert path.suffix == ".png" and mpimg.imread(path).shape[0] > 500
    fig = sunspot_predictions(with_run_test_data(load_merged(merged_file)))
    axes = fig.axes
    # one panel per (method, components): map, vi_mixture M = 3, vi_mixture M = 5
    assert len(axes) == 3
    by_title = {ax.get_title().split(" (seed")[0]: ax for ax in axes}
    assert set(by_title) == {
        "sunspots · map · hidden 8",
        "sunspots · vi_mixture · hidden 8 · components 3",
        "sunspots · vi_mixture · hidden 8 · components 5",
    }
    ax = by_title["sunspots · vi_mixture · hidden 8 · components 3"]
    assert "(seed 0)" in ax.get_title()  # the smallest seed, though listed second
    mean, upper, lower = (line.get_ydata() for line in ax.get_lines()[:3])
    years = ax.get_lines()[0].get_xdata()
    assert years[0] == 1921 and years[-1] == 1979
    target = _sunspot_merged(RUNS)["y_test"].values[0, :, 0]
    np.testing.assert_allclose(mean, target + 1.0)
    np.testing.assert_allclose(sorted([upper[0], lower[0]]), [mean[0] - 1.5, mean[0] + 1.5])
    (circles,) = ax.collections
    np.testing.assert_allclose(circles.get_offsets()[:, 1], target)
    assert "100% of targets within" in ax.get_title()
    assert "over 2 seeds" in ax.get_title()
    assert (
        "0% of targets within"
        in by_title["sunspots · vi_mixture · hidden 8 · components 5"].get_title()
    )
    # the published NMSE (paper 000 Table 1: the committee 0.11; early stopping 0.22)
    assert "0.11 (paper 000 T1)" in ax.get_title()
    assert "0.22 (paper 000 T1)" in by_title["sunspots · map · hidden 8"].get_title()


def test_diverged_runs_are_left_out():
    ds = _sunspot_merged(RUNS)
    ds["status"] = ("run", ["ok", "ok", "ok", "diverged"])
    fig = sunspot_predictions(with_run_test_data(ds))
    assert len(fig.axes) == 2 and all("map" not in ax.get_title() for ax in fig.axes)


def test_kind_is_registered():
    assert FIGURES["sunspot_predictions"] == (sunspot_predictions, ".png")
