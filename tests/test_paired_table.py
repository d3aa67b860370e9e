"""Issue 17: the error table shows, beside the unpaired means, the differences of paired rows
(same dataset, split, seed and hidden units: common random numbers) to the dataset's
reference, mean ± s.e. over the pairs; blank where a row has no partner."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bnnsweep.figures import draw, error_table
from bnnsweep.figures._paired import reference_label

SETTINGS = {
    "vi_diag": ("vi_gauss", {"covariance": "diag"}),
    "vi_full": ("vi_gauss", {"covariance": "full"}),
    "vi_mix": ("vi_mixture", {"components": 2}),
    "laplace": ("laplace", {}),
}


def value(label: str, split: int, seed: int, hidden: int, metric: str) -> float:
    """A made-up but irregular number per run, so that pairing the wrong runs shows."""
    offset = {"vi_diag": 0.0, "vi_full": 1.5, "vi_mix": 2.5, "laplace": -3.0}[label]
    base = {"log_evidence": -50.0, "test_rmse": 0.4, "test_loglik": -1.0}[metric]
    scale = 1.0 if metric == "log_evidence" else 0.01
    k = {"vi_diag": 1.1, "vi_full": 2.3, "vi_mix": 0.7, "laplace": 3.1}[label]
    wiggle = math.sin(7 * split + 3 * seed + hidden) + 0.3 * math.cos(k * (split + 1) + seed)
    return base + scale * (offset + 2 * math.sin(split + 2 * seed) + wiggle)


def gain(split: int, seed: int) -> float:
    """What a warm-started fit gained over its start (made up, varying)."""
    return 0.5 + 0.3 * math.cos(split + 5 * seed)


def start(run, label: str) -> float:
    """The start bound of ``run`` if it is a run of ``label``, else NaN (not recorded)."""
    if run[0] != label:
        return math.nan
    return value(*run, "log_evidence") - gain(run[1], run[2])


def make_runs(drop=()):
    """Runs of four labels over 3 splits x 2 seeds x hidden 2, plus vi_full alone at hidden 5;
    ``drop`` lists (label, split, seed, hidden) runs left out."""
    runs = [
        (label, split, seed, 2)
        for label in SETTINGS
        for split in range(3)
        for seed in range(2)
        if (label, split, seed, 2) not in drop
    ]
    return runs + [("vi_full", split, 0, 5) for split in range(3)]


def merged(runs, status=None) -> xr.Dataset:
    n = len(runs)
    metrics = {
        m: ("run", np.array([value(*r, m) for r in runs]))
        for m in ("log_evidence", "test_rmse", "test_loglik")
    }
    data = {
        **metrics,
        "test_mse": ("run", metrics["test_rmse"][1] ** 2),
        "test_nmse": ("run", metrics["test_rmse"][1] ** 2 / 0.5),
        "status": ("run", status or ["ok"] * n),
        "settings_json": ("run", [json.dumps(SETTINGS[r[0]][1]) for r in runs]),
        # the bounds the warm-started fits started from, as vi_gauss and vi_mixture record them
        "diag_diagonal_start_bound": ("run", [start(r, "vi_full") for r in runs]),
        "diag_single_component_bound": ("run", [start(r, "vi_mix") for r in runs]),
    }
    coords = {
        "experiment": ("run", ["p"] * n),
        "dataset": ("run", ["toy_sine"] * n),
        "split": ("run", [str(r[1]) for r in runs]),
        "method": ("run", [r[0] for r in runs]),
        "method_name": ("run", [SETTINGS[r[0]][0] for r in runs]),
        "seed": ("run", np.array([r[2] for r in runs], dtype=np.int64)),
        "hidden": ("run", np.array([r[3] for r in runs], dtype=np.int64)),
        "components": ("run", np.array([2 if r[0] == "vi_mix" else -1 for r in runs])),
    }
    return xr.Dataset(data, coords=coords, attrs={"title": "bnnsweep merged results"})


def row(table: pd.DataFrame, label: str, hidden: int = 2) -> pd.Series:
    rows = table[(table["method"] == label) & (table["hidden"] == hidden)]
    assert len(rows) == 1
    return rows.iloc[0]


def hand(label: str, keys, metric: str) -> tuple[float, float]:
    diffs = [value(label, *k, metric) - value("vi_diag", *k, metric) for k in keys]
    return statistics.fmean(diffs), statistics.stdev(diffs) / math.sqrt(len(diffs))


ALL_KEYS = [(split, seed, 2) for split in range(3) for seed in range(2)]


@pytest.mark.parametrize("label", ["vi_full", "vi_mix", "laplace"])
@pytest.mark.parametrize("metric", ["log_evidence", "test_rmse", "test_loglik"])
def test_a_paired_difference_is_the_mean_and_se_of_the_per_pair_differences(label, metric):
    r = row(error_table(merged(make_runs())), label)
    assert r["paired_with"] == "vi_diag" and r["n_pairs"] == 6
    mean, se = hand(label, ALL_KEYS, metric)
    np.testing.assert_allclose([r[f"{metric}_diff_mean"], r[f"{metric}_diff_se"]], [mean, se])
    # paired, not unpaired: the s.e. differs from sqrt(se_row^2 + se_ref^2)
    ref = row(error_table(merged(make_runs())), "vi_diag")
    unpaired = math.hypot(r[f"{metric}_se"], ref[f"{metric}_se"])
    assert not math.isclose(r[f"{metric}_diff_se"], unpaired, rel_tol=1e-3)


def test_pairs_are_matched_on_split_seed_and_hidden_not_on_position():
    runs = make_runs(drop={("vi_diag", 0, 1, 2), ("vi_full", 2, 0, 2)})
    table = error_table(merged(runs))
    shuffled = merged(runs).isel(run=np.random.default_rng(3).permutation(len(runs)))
    pd.testing.assert_frame_equal(error_table(shuffled), table)
    r = row(table, "vi_full")
    keys = [k for k in ALL_KEYS if k not in {(0, 1, 2), (2, 0, 2)}]
    assert r["n_pairs"] == len(keys) == 4
    mean, se = hand("vi_full", keys, "log_evidence")
    np.testing.assert_allclose([r["log_evidence_diff_mean"], r["log_evidence_diff_se"]], [mean, se])


def test_diverged_runs_and_ambiguous_references_make_no_pair():
    runs = make_runs()
    status = ["diverged" if r == ("vi_diag", 1, 1, 2) else "ok" for r in runs]
    r = row(error_table(merged(runs, status)), "vi_mix")
    assert r["n_pairs"] == 5
    mean, _ = hand("vi_mix", [k for k in ALL_KEYS if k != (1, 1, 2)], "test_rmse")
    assert r["test_rmse_diff_mean"] == pytest.approx(mean)
    # a second vi_diag run at (split 0, seed 0): that key pairs with neither
    ds = merged([*runs, ("vi_diag", 0, 0, 2)])
    assert row(error_table(ds), "laplace")["n_pairs"] == 5


def test_a_row_without_a_partner_and_the_reference_row_are_blank(tmp_path):
    ds = merged(make_runs())
    table = error_table(ds)
    for r in (row(table, "vi_full", hidden=5), row(table, "vi_diag")):
        assert pd.isna(r["paired_with"]) and pd.isna(r["n_pairs"])
        assert all(math.isnan(r[c]) for c in table.columns if "_diff_" in c)
    md, csv = draw("error_table", ds, tmp_path / "t.md")
    lonely = [line for line in md.read_text().splitlines() if "| vi_full | 5 |" in line]
    assert len(lonely) == 1
    cells = [c.strip() for c in lonely[0].strip("|").split("|")]
    header = next(line for line in md.read_text().splitlines() if line.startswith("| dataset"))
    names = [c.strip() for c in header.strip("|").split("|")]
    for name in ("paired with", "n pairs", "Δ log_evidence", "Δ test_rmse"):
        assert cells[names.index(name)] == "", name
    text = csv.read_text()
    assert ",-1," not in text and "none" not in text and "nan" not in text.lower()


def test_the_reference_is_the_diagonal_gaussian_else_a_fallback_method():
    frame = lambda labels: pd.DataFrame(  # noqa: E731
        {
            "method": labels,
            "method_name": [SETTINGS.get(m, (m, {}))[0] for m in labels],
            "settings_json": [json.dumps(SETTINGS.get(m, ("", {}))[1]) for m in labels],
        }
    )
    assert reference_label(frame(["laplace", "vi_full", "vi_diag", "vi_mix"])) == "vi_diag"
    assert reference_label(frame(["laplace", "vi_full", "vi_mix"])) == "laplace"
    assert reference_label(frame(["vi_mix", "chaining"])) is None
    both = frame(["vi_diag", "vi_gauss", "laplace"])
    both["method_name"] = ["vi_gauss", "vi_gauss", "laplace"]
    assert reference_label(both) == "vi_gauss"  # the method's own label first


def test_the_adf_uci_table_shows_each_label_paired_with_pbp():
    from bnnsweep.figures.adf_uci_table import _cell, adf_uci_frame, adf_uci_table

    ds = merged(make_runs())
    ds = ds.isel(run=np.isin(ds["method"].values, ["vi_diag", "vi_full"]) & (ds["hidden"] == 2))
    ds = ds.assign_coords(method=("run", np.where(ds["method"] == "vi_diag", "pbp", "ebp")))
    frame = adf_uci_frame(ds).set_index("method")
    assert pd.isna(frame.loc["pbp", "paired_with"]) and pd.isna(frame.loc["pbp", "n_pairs"])
    assert frame.loc["ebp", "paired_with"] == "pbp" and frame.loc["ebp", "n_pairs"] == 6
    mean, se = hand("vi_full", ALL_KEYS, "test_rmse")
    got = frame.loc["ebp", ["test_rmse_diff_mean", "test_rmse_diff_se"]].to_numpy(float)
    np.testing.assert_allclose(got, [mean, se])
    texts = [
        c.get_text().get_text() for c in adf_uci_table(ds).axes[0].tables[0].get_celld().values()
    ]
    assert "ebp − pbp\nrmse (paired)" in texts and _cell(mean, se) in texts


def test_the_gain_over_a_runs_own_start_is_shown_where_the_fit_records_one(tmp_path):
    ds = merged(make_runs())
    table = error_table(ds)
    gains = [gain(split, seed) for split, seed, _ in ALL_KEYS]
    want = [statistics.fmean(gains), statistics.stdev(gains) / math.sqrt(len(gains))]
    for label in ("vi_full", "vi_mix"):
        r = row(table, label)
        np.testing.assert_allclose([r["start_gain_mean"], r["start_gain_se"]], want)
    for label in ("vi_diag", "laplace"):
        assert math.isnan(row(table, label)["start_gain_mean"])
    md, _ = draw("error_table", ds, tmp_path / "t.md")
    lines = md.read_text().splitlines()
    header = next(line for line in lines if line.startswith("| dataset"))
    column = [c.strip() for c in header.strip("|").split("|")].index("bound − own start")
    cells = {
        line.split("|")[2].strip(): line.strip("|").split("|")[column].strip()
        for line in lines
        if line.startswith("| toy_sine |") and "| 2 |" in line
    }
    assert cells["vi_diag"] == "" and cells["laplace"] == ""
    assert cells["vi_mix"].startswith(f"{want[0]:.4g} ± ")


def test_the_adf_uci_table_puts_paper_004_table_3_under_the_deep_labels():
    """Issue 17: the deep config's table shows paper 004 suppl. Table 3 beside our numbers."""
    from bnnsweep.figures.adf_uci_table import adf_uci_table
    from bnnsweep.figures.published import DEEP_ADF_TABLE3

    ds = merged(make_runs())
    ds = ds.isel(run=np.isin(ds["method"].values, ["vi_diag", "vi_full"]) & (ds["hidden"] == 2))
    labels = np.where(ds["method"] == "vi_diag", "pbp_2layer", "pbp_5layer")
    ds = ds.assign_coords(
        method=("run", labels), dataset=("run", np.full(ds.sizes["run"], "boston_housing"))
    )
    texts = [
        c.get_text().get_text() for c in adf_uci_table(ds).axes[0].tables[0].get_celld().values()
    ]
    two_layer, five_layer = (
        DEEP_ADF_TABLE3["boston_housing"][1],
        DEEP_ADF_TABLE3["boston_housing"][3],
    )
    assert any(t.endswith(f"\npaper 004 suppl. T3: {two_layer[0]:g}") for t in texts)
    assert any(t.endswith(f"\npaper 004 suppl. T3: {five_layer[0]:g}") for t in texts)
    # log-likelihood cells: the table gives no published value for them
    assert sum("paper 004" in t for t in texts) == 2
