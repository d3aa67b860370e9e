"""Figures and tables from synthetic merged files (built by hand; no fits are run)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.collections import PathCollection

from bnnsweep.figures import FIGURES, draw, error_table, method_palette, occam_hill
from bnnsweep.figures._common import runs_frame
from bnnsweep.figures.published import PUBLISHED, format_references
from bnnsweep.figures.toy_regression import toy_regression

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
N_MODES = 3

# (dataset, method, hidden, seed, status, test_rmse, test_loglik, log_evidence, mode evidences,
#  mode distinct flags); mode evidences None = the method has no modes.
RUNS = [
    ("toy_sine", "laplace", 1, 0, "ok", 0.30, -0.5, -40.0, [-40.0, -40.0, np.nan], [1, 0, 0]),
    ("toy_sine", "laplace", 1, 1, "ok", 0.32, -0.6, -41.0, [-41.0, -45.0, -47.0], [1, 1, 0]),
    ("toy_sine", "laplace", 2, 0, "ok", 0.05, 1.2, -5.0, [-5.5, -6.0, np.nan], [1, 1, 0]),
    # every mode without a positive-definite Hessian: no evidence at all
    ("toy_sine", "laplace", 2, 1, "not_converged", 0.07, 1.0, np.nan, [np.nan] * 3, [0, 0, 0]),
    ("toy_sine", "map", 1, 0, "ok", 0.35, -2.0, np.nan, None, None),
    ("toy_sine", "map", 1, 1, "ok", 0.33, -1.5, np.nan, None, None),
    ("toy_sine", "map", 2, 0, "ok", 0.06, 0.8, np.nan, None, None),
    ("toy_sine", "map", 2, 1, "ok", 0.08, 0.6, np.nan, None, None),
    # sunspots: a single hidden size
    ("sunspots", "laplace", 2, 0, "ok", 20.0, -4.4, -170.0, [-170.0, -171.0, -190.0], [0, 1, 1]),
    ("sunspots", "laplace", 2, 1, "ok", 22.0, -4.5, -172.0, [-172.0, np.nan, -180.0], [1, 0, 1]),
    ("sunspots", "laplace", 2, 2, "ok", 21.0, -4.6, -169.0, [-169.0, -169.0, -169.0], [1, 0, 0]),
    ("sunspots", "map", 2, 0, "not_converged", 24.0, -5.9, np.nan, None, None),
    ("sunspots", "map", 2, 1, "ok", 21.5, -5.1, np.nan, None, None),
    ("sunspots", "map", 2, 2, "diverged", np.nan, np.nan, np.nan, None, None),
]

SHAPES = {"toy_sine": (60, 1), "sunspots": (25, 3)}  # (test points, inputs); one output each


def _targets(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    n, n_in = SHAPES[dataset]
    if dataset == "toy_sine":
        x = np.linspace(-0.2, 1.2, n)[:, None]
        return x, 0.4 * np.sin(2 * np.pi * x)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(n, n_in))
    return x, 50 + 40 * np.sin(x[:, :1])


def make_merged(runs=RUNS) -> xr.Dataset:
    """A merged file with the layout of ``bnnsweep.results.merge_cells``: ragged test sets
    padded with NaN, per-mode variables NaN for methods without modes."""
    n_run = len(runs)
    n_test = max(s[0] for s in SHAPES.values())
    n_in = max(s[1] for s in SHAPES.values())
    pad3 = np.full((n_run, n_test, 1), np.nan)
    pred_mean, pred_var, y_test = pad3.copy(), pad3.copy(), pad3.copy()
    x_test = np.full((n_run, n_test, n_in), np.nan)
    mode_ev = np.full((n_run, N_MODES), np.nan)
    mode_distinct = np.full((n_run, N_MODES), np.nan)
    mode_mse = np.full((n_run, N_MODES), np.nan)
    mode_mean = np.full((n_run, N_MODES, n_test, 1), np.nan)
    scalars = {k: [] for k in ("test_rmse", "test_mse", "test_nmse", "test_loglik")}
    for i, (dataset, _m, hidden, seed, status, rmse, loglik, _ev, modes, _d) in enumerate(runs):
        x, y = _targets(dataset)
        n, k = x.shape
        x_test[i, :n, :k] = x
        y_test[i, :n] = y
        wiggle = 0.1 * np.cos(3 * x[:, :1] + seed) * (y.std() if dataset == "sunspots" else 1)
        if status != "diverged":
            pred_mean[i, :n] = y + wiggle / hidden
            pred_var[i, :n] = (0.05 * y.std()) ** 2 * (1 + x[:, :1] ** 2)
        mse = rmse**2
        scalars["test_rmse"].append(rmse)
        scalars["test_mse"].append(mse)
        scalars["test_nmse"].append(mse / float(np.var(y)))
        scalars["test_loglik"].append(loglik)
        if modes is not None:
            mode_ev[i] = modes
            mode_distinct[i] = runs[i][9]
            mode_mse[i] = mse * np.array([1.0, 1.3, 0.8])
            mode_mean[i, :, :n] = (
                pred_mean[i, :n][None] * np.array([1.0, 1.01, 0.99])[:, None, None]
            )
    column = list(zip(*runs, strict=True))
    data = {
        "pred_mean": (("run", "test_point", "output"), pred_mean),
        "pred_var": (("run", "test_point", "output"), pred_var),
        "y_test": (("run", "test_point", "output"), y_test),
        "x_test": (("run", "test_point", "input"), x_test),
        "log_evidence": ("run", np.array(column[7], dtype=float)),
        "log_evidence_se": ("run", np.full(n_run, np.nan)),
        "log_evidence_kind": (
            "run",
            ["laplace" if m == "laplace" else "none" for m in column[1]],
        ),
        "train_loglik": ("run", np.zeros(n_run)),
        "status": ("run", list(column[4])),
        "status_message": ("run", ["" if s == "ok" else "trouble" for s in column[4]]),
        "runtime_s": ("run", np.ones(n_run)),
        "n_grad_evals": ("run", np.full(n_run, 100)),
        "settings_json": ("run", ["{}"] * n_run),
        "mode_log_evidence": (("run", "mode"), mode_ev),
        "mode_distinct": (("run", "mode"), mode_distinct.astype(np.float32)),
        "mode_test_mse": (("run", "mode"), mode_mse),
        "mode_test_rmse": (("run", "mode"), np.sqrt(mode_mse)),
        "mode_pred_mean": (("run", "mode", "test_point", "output"), mode_mean),
    }
    data.update({k: ("run", np.array(v, dtype=float)) for k, v in scalars.items()})
    coords = {
        "experiment": ("run", ["synthetic"] * n_run),
        "dataset": ("run", list(column[0])),
        "split": ("run", ["default"] * n_run),
        "method": ("run", list(column[1])),
        "seed": ("run", np.array(column[3], dtype=np.int64)),
        "hidden": ("run", np.array(column[2], dtype=np.int64)),
        "components": ("run", np.full(n_run, -1, dtype=np.int64)),
        "schedule": ("run", ["none"] * n_run),
        "cell_file": ("run", [f"cell{i}.nc" for i in range(n_run)]),
        "test_point": np.arange(n_test),
        "output": [0],
        "input": np.arange(n_in),
        "mode": np.arange(N_MODES),
    }
    return xr.Dataset(data, coords=coords, attrs={"title": "bnnsweep merged results"})


@pytest.fixture(scope="module")
def merged_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("merged") / "merged.nc"
    from bnnsweep.results import write_netcdf_atomic

    write_netcdf_atomic(make_merged(), path)  # as `bnnsweep merge` writes it: sealed
    return str(path)


def _assert_png(path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 5_000


@pytest.mark.parametrize("kind", ["occam_hill", "evidence_vs_error", "toy_regression"])
def test_each_figure_kind_writes_a_png(kind, merged_path, tmp_path):
    written = draw(kind, merged_path, tmp_path / f"{kind}.png")
    assert written == [tmp_path / f"{kind}.png"]
    _assert_png(written[0])


def test_missing_suffix_gets_the_kind_suffix_and_a_wrong_one_is_refused(merged_path, tmp_path):
    assert draw("occam_hill", merged_path, tmp_path / "hill") == [tmp_path / "hill.png"]
    with pytest.raises(ValueError, match=r"\.png"):
        draw("occam_hill", merged_path, tmp_path / "hill.md")


@pytest.mark.parametrize(("suffix", "magic"), [(".pdf", b"%PDF"), (".svg", b"<?xml")])
def test_figures_are_written_as_pdf_or_svg_when_asked(merged_path, tmp_path, suffix, magic):
    """``figure_format: [pdf, svg]``: vector figures for a paper."""
    path = tmp_path / f"hill{suffix}"
    assert draw("occam_hill", merged_path, path) == [path]
    assert path.read_bytes().startswith(magic)


def test_unknown_kind_names_the_valid_kinds(merged_path, tmp_path):
    with pytest.raises(ValueError) as info:
        draw("occam_valley", merged_path, tmp_path / "x.png")
    message = str(info.value)
    assert "occam_valley" in message
    for kind in FIGURES:
        assert kind in message
    assert not (tmp_path / "x.png").exists()


def test_error_table_writes_markdown_and_csv_with_the_same_stem(merged_path, tmp_path):
    written = draw("error_table", merged_path, tmp_path / "errors.md")
    assert written == [tmp_path / "errors.md", tmp_path / "errors.csv"]
    md = (tmp_path / "errors.md").read_text()
    csv = pd.read_csv(tmp_path / "errors.csv")
    # one row per dataset x method x hidden: toy_sine 2 methods x 2 sizes, sunspots 2 x 1
    assert len(csv) == 6
    assert md.count("\n| sunspots |") == 2 and md.count("\n| toy_sine |") == 4
    assert {"test_rmse_mean", "test_rmse_se", "log_evidence_se", "n_not_ok"} <= set(csv)


def _row(table: pd.DataFrame, dataset: str, method: str, hidden: int) -> pd.Series:
    rows = table[
        (table["dataset"] == dataset) & (table["method"] == method) & (table["hidden"] == hidden)
    ]
    assert len(rows) == 1
    return rows.iloc[0]


def _hand(values):
    values = [v for v in values if not math.isnan(v)]
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan
    return statistics.fmean(values), se


def test_error_table_values_are_means_and_standard_errors(merged_path, tmp_path):
    draw("error_table", merged_path, tmp_path / "t.md")
    table = pd.read_csv(tmp_path / "t.csv")
    assert_equal = np.testing.assert_allclose

    row = _row(table, "sunspots", "laplace", 2)
    assert (row["n_runs"], row["n_not_ok"]) == (3, 0)
    mean, se = _hand([20.0, 22.0, 21.0])
    assert_equal([row["test_rmse_mean"], row["test_rmse_se"]], [mean, se], rtol=1e-9)
    assert_equal(row["test_rmse_se"], 1 / math.sqrt(3), rtol=1e-9)
    mean, se = _hand([-170.0, -172.0, -169.0])
    assert_equal([row["log_evidence_mean"], row["log_evidence_se"]], [mean, se], rtol=1e-9)
    mean, se = _hand([-4.4, -4.5, -4.6])
    assert_equal([row["test_loglik_mean"], row["test_loglik_se"]], [mean, se], rtol=1e-9)
    y = _targets("sunspots")[1]
    mean, se = _hand([r**2 / float(np.var(y)) for r in (20.0, 22.0, 21.0)])
    assert_equal([row["test_nmse_mean"], row["test_nmse_se"]], [mean, se], rtol=1e-9)

    # a not_converged run counts; the diverged one is a run that is not ok but has no values
    row = _row(table, "sunspots", "map", 2)
    assert (row["n_runs"], row["n_not_ok"]) == (3, 2)
    mean, se = _hand([24.0, 21.5])
    assert_equal([row["test_rmse_mean"], row["test_rmse_se"]], [mean, se], rtol=1e-9)
    assert math.isnan(row["log_evidence_mean"]) and math.isnan(row["log_evidence_se"])

    # a run with NaN evidence is left out of the evidence mean only; one value -> no s.e.
    row = _row(table, "toy_sine", "laplace", 2)
    assert (row["n_runs"], row["n_not_ok"]) == (2, 1)
    assert_equal(row["log_evidence_mean"], -5.0)
    assert math.isnan(row["log_evidence_se"])
    assert_equal(row["test_rmse_mean"], 0.06, rtol=1e-9)


def test_error_table_shows_published_values_for_sunspots(merged_path, tmp_path):
    table = error_table(make_merged())
    laplace = _row(table, "sunspots", "laplace", 2)["published"]
    assert "0.171 (thesis T5.1); 0.18 (paper 000 T1)" in laplace
    assert "test_nmse" in laplace
    assert (
        "0.262 (thesis T5.1); 0.22 (paper 000 T1)" in _row(table, "sunspots", "map", 2)["published"]
    )
    assert _row(table, "toy_sine", "laplace", 1)["published"] == ""
    draw("error_table", merged_path, tmp_path / "t.md")
    md_lines = (tmp_path / "t.md").read_text().splitlines()
    sunspots = [line for line in md_lines if line.startswith("| sunspots | laplace |")]
    assert len(sunspots) == 1 and "0.171 (thesis T5.1)" in sunspots[0]
    assert "21 ± 0.58" in sunspots[0]


def test_published_references_cover_the_brief():
    assert [r.value for r in PUBLISHED[("sunspots", "laplace", "test_nmse")]] == [0.171, 0.18]
    assert [r.value for r in PUBLISHED[("sunspots", "map", "test_nmse")]] == [0.262, 0.22]
    assert PUBLISHED[("tecator", "laplace", "test_rmse")][0].value == 0.55
    assert PUBLISHED[("tecator", "map", "test_rmse")][0].value == 0.65
    assert format_references("tecator", "map") == (
        "test_rmse: 0.65 (thesis T5.2); 0.65 (paper 000 T2)"
    )
    assert format_references("robot_arm", "map") == ""


def _n_points(ax) -> int:
    return sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))


def test_occam_hill_skips_nan_mode_evidences_and_draws_methods_without_modes():
    fig = occam_hill(make_merged())
    axes = [ax for ax in fig.axes if ax.get_title()]
    titles = [ax.get_title() for ax in axes]
    assert titles == [
        "sunspots: (a) log evidence",
        "sunspots: (b) test error",
        "toy_sine: (a) log evidence",
        "toy_sine: (b) test error",
    ]
    ev_sun, err_sun, ev_toy, err_toy = axes
    # (a) counted modes with a finite evidence: sunspots 2 + 2 + 1, toy_sine 1 + 2 + 2 + 0;
    # map has no evidence, so no points of its own
    assert _n_points(ev_sun) == 5
    assert _n_points(ev_toy) == 5
    # (b) every mode with a test error (3 per Laplace run) plus one point per map run that
    # is not diverged
    assert _n_points(err_toy) == 4 * 3 + 4
    assert _n_points(err_sun) == 3 * 3 + 2
    # the noise level of toy_sine is known: test error is MSE / noise variance
    assert "noise variance" in err_toy.get_ylabel()
    assert "RMSE" in err_sun.get_ylabel()
    texts = " ".join(t.get_text() for t in ev_toy.texts)
    assert "no log evidence: map" in texts


def test_occam_hill_draws_a_cells_second_estimator_as_its_own_series():
    """A chaining cell with ``tempering_check`` carries the tempering's estimate on the SMC's
    reference: drawn as "<method>: tempering on its reference" beside the cell's own."""
    from bnnsweep.figures.occam_hill import second_estimates

    ds = make_merged()
    second = np.where(ds["method"].values == "laplace", ds["log_evidence"].values + 1.0, np.nan)
    ds["diag_smc_log_z_tempering"] = ("run", second)
    ds["diag_smc_log_z_tempering_se"] = ("run", np.full(ds.sizes["run"], 0.2))
    extra = second_estimates(runs_frame(ds))
    assert set(extra["method"]) == {"laplace: tempering on its reference"}
    np.testing.assert_allclose(extra["log_evidence"], second[np.isfinite(second)])
    assert extra["test_rmse"].isna().all() and (extra["log_evidence_se"] == 0.2).all()
    fig = occam_hill(ds)
    ev_sun = next(ax for ax in fig.axes if ax.get_title() == "sunspots: (a) log evidence")
    # 5 counted modes as before, and one point per sunspots laplace run with a finite second
    assert _n_points(ev_sun) == 5 + 3
    labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().texts]
    assert "laplace: tempering on its reference" in labels


def test_occam_hill_without_any_modes_or_evidence(tmp_path):
    only_map = [r for r in RUNS if r[1] == "map"]
    ds = make_merged(only_map).drop_vars([v for v in make_merged().data_vars if "mode" in v])
    ds = ds.drop_dims("mode")
    fig = occam_hill(ds)
    ev_axes = [ax for ax in fig.axes if ax.get_title().endswith("(a) log evidence")]
    assert all(_n_points(ax) == 0 for ax in ev_axes)
    assert any("no method with a log evidence" in t.get_text() for t in ev_axes[0].texts)
    path = draw("occam_hill", ds, tmp_path / "only_map.png")[0]
    _assert_png(path)


def test_toy_regression_draws_one_input_datasets_with_training_data():
    fig = toy_regression(make_merged())
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    # sunspots has three inputs and is skipped; toy_sine: 2 hidden sizes x 2 methods, a
    # panel titled by its method, a row labelled by its dataset and H
    assert len(titles) == 4 and len(set(titles)) == 2
    rows = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert len(rows) == 2 and all(r.startswith("toy_sine, H = ") for r in rows)
    assert "seed 0" in fig.get_suptitle()
    # the 30 training points of the registered toy_sine dataset are reloaded
    assert all(_n_points(ax) == 30 for ax in fig.axes if ax.get_title())


def test_toy_regression_draws_posterior_functions_when_recorded():
    ds = make_merged()
    n_run, n_test = ds.sizes["run"], ds.sizes["test_point"]
    offsets = np.arange(3.0)[None, :, None, None]
    draws = ds["pred_mean"].values[:, None, :, :] + offsets
    ds["pred_function_samples"] = (("run", "function_sample", "test_point", "output"), draws)
    without = [len(ax.get_lines()) for ax in toy_regression(make_merged()).axes]
    with_draws = [len(ax.get_lines()) for ax in toy_regression(ds).axes]
    assert n_run and n_test
    assert all(b == a + 3 for a, b in zip(without, with_draws, strict=True) if a)


def test_toy_regression_without_one_input_datasets_is_a_note(tmp_path):
    ds = make_merged([r for r in RUNS if r[0] == "sunspots"])
    path = draw("toy_regression", ds, tmp_path / "none.png")[0]
    assert path.read_bytes()[:8] == PNG_MAGIC
    fig = toy_regression(ds)
    assert "no one-input dataset" in " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_method_colours_do_not_depend_on_order():
    assert method_palette(["map", "laplace"]) == method_palette(["laplace", "map", "map"])
    assert len(set(method_palette(["a", "b", "c"]).values())) == 3


def test_a_method_has_one_colour_in_every_figure():
    """Issue 17: laplace is not blue in one figure and orange in the next."""
    from bnnsweep.figures import method_palette
    from bnnsweep.methods import names

    alone = method_palette(["laplace"])["laplace"]
    for company in (["chaining"], ["map", "hmc", "vi_gauss"], ["my_label", "zz"]):
        assert method_palette(["laplace", *company])["laplace"] == alone
    labels = [*names(), "vi_gauss_full", "vi_gauss_fa", "a", "b", "c", "d", "e", "f", "g"]
    palette = method_palette(labels)
    assert len(set(palette.values())) == len(labels)  # distinct within one figure


def test_error_table_leaves_an_axis_blank_where_a_method_does_not_use_it(tmp_path):
    """Issue 17: no -1 or 'none' sentinels in tables."""
    ds = make_merged()
    is_map = ds["method"].values == "map"
    ds = ds.assign_coords(
        components=("run", np.where(is_map, 2, -1)),
        schedule=("run", np.where(is_map, "paper", "none")),
    )
    table = error_table(ds)
    laplace = table[table["method"] == "laplace"]
    assert laplace["components"].isna().all() and laplace["schedule"].isna().all()
    assert (table.loc[table["method"] == "map", "components"] == 2).all()
    draw("error_table", ds, tmp_path / "t.md")
    for line in (tmp_path / "t.md").read_text().splitlines():
        if line.startswith("| toy_sine | laplace | 1 |"):
            assert line.startswith("| toy_sine | laplace | 1 |  |  | 2 | 0 |"), line
    assert ",-1," not in (tmp_path / "t.csv").read_text()


def test_every_figure_kind_has_its_own_report_caption():
    """Issue 17: captions per figure kind, not one generic text: one caption file per kind,
    workflow/report/figures/<kind>.rst (the workflow draws all figures of an experiment in
    one job, so the caption is chosen per output, not through a wildcard)."""
    from pathlib import Path

    captions = Path(__file__).parents[1] / "workflow" / "report" / "figures"
    captioned = {path.stem for path in captions.glob("*.rst") if path.read_text().strip()}
    assert set(FIGURES) <= captioned, set(FIGURES) - captioned
