"""Round trips of the seed figures (issue 17 item 6) from small merged files written and read
back as `bnnsweep merge` writes them."""

from __future__ import annotations

import json

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bnnsweep.figures import FIGURES, draw, load_merged
from bnnsweep.figures.adf_softmax import (
    adf_samples_loglik,
    adf_softmax_approximation,
    approximation_frame,
    samples_frame,
)
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


# ---- paper 004 supplement figs. 2-3: softmax PBP/EBP -------------------------------------

SOFTMAX_SEEDS = 4


def _softmax_merged() -> tuple[xr.Dataset, dict]:
    """PBP and EBP runs on two datasets with S = 1, 10 and the log bound, SOFTMAX_SEEDS seeds
    each, training log-likelihoods whose spread shrinks with S, and one run of another
    likelihood and one diverged run that the figures must leave out."""
    rng = np.random.default_rng(3)
    rows, truth = [], {}
    for dataset in ("synthetic_softmax10", "synthetic_softmax100"):
        for algorithm in ("pbp", "ebp"):
            for approximation, samples in (("mc", 1), ("mc", 10), ("bound", 10)):
                values = -1.0 - rng.normal(scale=1.0 / samples, size=SOFTMAX_SEEDS)
                if approximation == "mc":
                    truth[(dataset, algorithm, samples)] = values
                label = f"{algorithm}_s{samples}" if approximation == "mc" else f"{algorithm}_b"
                for seed, value in enumerate(values):
                    settings = {
                        "likelihood": "softmax",
                        "softmax_approximation": approximation,
                        "mc_samples": samples,
                    }
                    rows.append((dataset, label, algorithm, seed, "ok", settings, value))
    rows.append(("synthetic_softmax10", "pbp_g", "pbp", 0, "ok", {"likelihood": "gaussian"}, 5.0))
    rows.append(("synthetic_softmax10", "pbp_s1", "pbp", 9, "diverged", rows[0][5], 50.0))
    n = len(rows)
    col = list(zip(*rows, strict=True))
    error = np.array([0.3 if r[5].get("softmax_approximation") == "bound" else 0.2 for r in rows])
    data = {
        "train_loglik": ("run", np.array(col[6], dtype=float)),
        "test_loglik": ("run", np.array(col[6], dtype=float) - 0.5),
        "test_error_rate": ("run", error),
        "status": ("run", list(col[4])),
        "method_name": ("run", list(col[2])),
        "resolved_settings_json": ("run", [json.dumps(s) for s in col[5]]),
        "log_evidence": ("run", np.full(n, np.nan)),
    }
    coords = {
        "experiment": ("run", ["t"] * n),
        "dataset": ("run", list(col[0])),
        "split": ("run", ["0"] * n),
        "method": ("run", list(col[1])),
        "seed": ("run", np.array(col[3], dtype=np.int64)),
        "hidden": ("run", np.full(n, 50, dtype=np.int64)),
    }
    return xr.Dataset(data, coords=coords, attrs={"title": "bnnsweep merged results"}), truth


@pytest.fixture
def softmax_file(tmp_path):
    path = tmp_path / "softmax.nc"
    write_netcdf_atomic(_softmax_merged()[0], path)
    return path


def test_samples_frame_is_the_mean_and_sd_over_repeats_of_mc_runs_only(softmax_file):
    frame = samples_frame(load_merged(softmax_file))
    _, truth = _softmax_merged()
    assert len(frame) == len(truth) == 8  # 2 datasets x 2 algorithms x S in {1, 10}
    for row in frame.itertuples():
        values = truth[(row.dataset, row.algorithm, row.samples)]
        assert row.repeats == SOFTMAX_SEEDS  # the diverged repeat is not counted
        assert row.train_loglik_mean == pytest.approx(values.mean())
        assert row.train_loglik_sd == pytest.approx(values.std(ddof=1))


def test_samples_figure_round_trip_draws_the_sd_against_s(softmax_file, tmp_path):
    (path,) = draw("adf_samples_loglik", softmax_file, tmp_path / "samples")
    assert path.suffix == ".png" and mpimg.imread(path).shape[1] > 800
    fig = adf_samples_loglik(load_merged(softmax_file))
    _, truth = _softmax_merged()
    bottoms = [ax for ax in fig.axes if ax.get_ylabel() == "s.d. over repeats"]
    assert len(bottoms) == 2
    for ax, dataset in zip(bottoms, ("synthetic_softmax10", "synthetic_softmax100"), strict=True):
        lines = {line.get_label(): line for line in ax.get_lines()}
        for algorithm in ("ebp", "pbp"):
            np.testing.assert_allclose(lines[algorithm].get_xdata(), [1, 10])
            expected = [truth[(dataset, algorithm, s)].std(ddof=1) for s in (1, 10)]
            np.testing.assert_allclose(lines[algorithm].get_ydata(), expected)
    assert "sd(1)/sd(10)" in fig.axes[0].get_title()


def test_approximation_frame_and_figure(softmax_file, tmp_path):
    ds = load_merged(softmax_file)
    frame = approximation_frame(ds)
    assert set(frame["approximation"]) == {"bound", "mc S=1", "mc S=10"}
    assert (frame["runs"] == SOFTMAX_SEEDS).all()
    bound = frame[frame["approximation"] == "bound"]
    np.testing.assert_allclose(bound["test_error_rate"], 0.3)
    (path,) = draw("adf_softmax_approximation", softmax_file, tmp_path / "approx")
    assert mpimg.imread(path).shape[0] > 300
    fig = adf_softmax_approximation(ds)
    bars = [patch.get_height() for patch in fig.axes[0].patches]
    np.testing.assert_allclose(bars, [0.3, 0.2, 0.2])  # bound, then S = 1, 10
    assert "stochastic approximation clearly outperforms" in fig.texts[0].get_text()


def test_softmax_figures_without_softmax_runs_are_notes():
    ds, _ = _softmax_merged()
    ds = ds.assign(resolved_settings_json=("run", ['{"likelihood": "gaussian"}'] * ds.sizes["run"]))
    for figure in (adf_samples_loglik, adf_softmax_approximation):
        assert len(figure(ds).axes) == 1  # the note's blank axes only


# ---- paper 004 supplement Table 3 beside the deep ADF runs ---------------------------------


def test_error_table_sets_table_3_beside_the_deep_adf_labels(tmp_path):
    labels = ["pbp_2layer", "ebp_2layer", "pbp_5layer", "ebp_5layer"]
    rmse = np.array([0.9, 1.2, 2.0, 5.0])
    n = len(labels)
    ds = xr.Dataset(
        {
            "test_rmse": ("run", rmse),
            "status": ("run", ["ok"] * n),
            "log_evidence": ("run", np.full(n, np.nan)),
        },
        coords={
            "experiment": ("run", ["t"] * n),
            "dataset": ("run", ["yacht"] * n),
            "split": ("run", ["0"] * n),
            "method": ("run", labels),
            "seed": ("run", np.zeros(n, dtype=np.int64)),
            "hidden": ("run", np.full(n, 50, dtype=np.int64)),
        },
        attrs={"title": "bnnsweep merged results"},
    )
    path = tmp_path / "deep.nc"
    write_netcdf_atomic(ds, path)
    md, csv = draw("error_table", path, tmp_path / "errors.md")
    table = pd.read_csv(csv).set_index("method")
    assert table.loc["pbp_2layer", "published"] == "test_rmse: 0.85 (paper 004 suppl. T3, ± 0.05)"
    assert table.loc["ebp_5layer", "published"] == "test_rmse: 5.58 (paper 004 suppl. T3, ± 5.77)"
    np.testing.assert_allclose(table.loc[labels, "test_rmse_mean"], rmse)
    assert "paper 004 suppl. T3" in md.read_text()
