"""Chaining figures and the published HMC values, from synthetic merged files (no fits)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from matplotlib.collections import PathCollection
from test_figures import PNG_MAGIC, _assert_png

from bnnsweep.engines.evidence.schedules import schedule as make_schedule
from bnnsweep.figures import FIGURES, draw, error_table
from bnnsweep.figures.chaining_diagnostics import (
    chaining_diagnostics,
    chaining_runs,
    choose_run,
    n_links,
    nearest_link,
)
from bnnsweep.figures.published import PUBLISHED, format_references
from bnnsweep.figures.schedule_comparison import (
    estimates_frame,
    schedule_comparison,
    schedule_family,
)

N_CHAINS = 2
N_SAMPLES = 12

# (dataset, method, hidden, seed, schedule, status, (ratio, TI, AIS) evidences, test_nmse);
# schedule "none" = not a chaining run
RUNS = [
    ("toy_sine", "chaining", 2, 0, "paper", "ok", (-10.0, -10.5, -9.8), 0.2),
    ("toy_sine", "chaining", 3, 0, "paper", "ok", (-8.0, -8.4, -7.9), 0.15),
    ("toy_sine", "chaining", 3, 1, "paper", "diverged", (np.nan, -8.2, np.nan), 0.16),
    # larger network, but not the paper schedule: never the diagnostics run of toy_sine
    ("toy_sine", "chaining", 5, 0, "geometric10", "ok", (-9.0, -9.3, -9.1), 0.14),
    ("toy_sine", "chaining", 3, 0, "power4_10", "ok", (-8.2, -8.1, -8.6), 0.15),
    ("toy_sine", "chaining", 3, 0, "linear10", "ok", (-8.9, -8.3, -8.5), 0.15),
    ("toy_sine", "chaining", 3, 0, "geometric5", "ok", (-7.5, -8.8, -9.9), 0.15),
    ("toy_sine", "chaining", 3, 0, "power2p5_20", "ok", (-8.1, -8.0, -8.2), 0.15),
    # no paper schedule for this dataset: the largest network among all chaining runs
    ("robot_arm", "chaining", 4, 0, "linear10", "ok", (-30.0, -31.0, -29.5), 1.1),
    ("robot_arm", "chaining", 6, 0, "geometric10", "ok", (-28.0, -29.0, -27.5), 1.05),
    # other methods, with NaN-padded link variables
    ("sunspots", "hmc", 4, 0, "none", "ok", (np.nan,) * 3, 0.14),
    ("sunspots", "hmc", 4, 1, "none", "ok", (np.nan,) * 3, 0.12),
    ("toy_sine", "laplace", 3, 0, "none", "ok", (np.nan,) * 3, 0.18),
]


def phi_value(run: int, link: int, chain: int, sample: int) -> float:
    """A phi trace value that identifies its run, link, chain and sample."""
    return 1000.0 * run + 10.0 * link + chain + 0.01 * sample


def make_merged(runs=RUNS) -> xr.Dataset:
    """The layout of ``bnnsweep.results.merge_cells`` for chaining runs: link variables over
    (run, link), the phi trace over (run, link, chain, sample), NaN-padded where a run has
    fewer links (or is not a chaining run) and, for one run, fewer samples."""
    lambdas = [make_schedule(r[4]) if r[4] != "none" else np.array([]) for r in runs]
    n_run, n_link = len(runs), max(len(lam) for lam in lambdas)
    pad = np.full((n_run, n_link), np.nan)
    lam, ratio, ratio_se, accept, mean_phi = (pad.copy() for _ in range(5))
    trace = np.full((n_run, n_link, N_CHAINS, N_SAMPLES), np.nan)
    for i, values in enumerate(lambdas):
        k = len(values)
        if k == 0:
            continue
        lam[i, :k] = values
        wiggle = np.sin(np.arange(1, k))
        ratio[i, 1:k] = runs[i][6][0] / (k - 1) + 0.1 * (wiggle - wiggle.mean())  # sum: ln Z
        ratio_se[i, 1:k] = 0.05 + 0.01 * np.arange(1, k)
        accept[i, 1:k] = np.linspace(0.95, 0.6, k - 1)
        n_samples = N_SAMPLES if i != 1 else N_SAMPLES - 3  # ragged samples, NaN-padded
        for link in range(k):
            for chain in range(N_CHAINS):
                trace[i, link, chain, :n_samples] = [
                    phi_value(i, link, chain, s) for s in range(n_samples)
                ]
        mean_phi[i, :k] = np.nanmean(trace[i, :k], axis=(1, 2))
    column = list(zip(*runs, strict=True))
    evidences = np.array(column[6], dtype=float)
    ses = np.where(np.isfinite(evidences), 0.3 + 0.1 * np.arange(3), np.nan)
    settings = [json.dumps({"target_accept": 0.8} if r[1] == "chaining" else {}) for r in runs]
    data = {
        "link_lambda": (("run", "link"), lam),
        "link_ln_ratio": (("run", "link"), ratio),
        "link_ln_ratio_se": (("run", "link"), ratio_se),
        "link_acceptance": (("run", "link"), accept),
        "link_mean_phi": (("run", "link"), mean_phi),
        "link_phi_trace": (("run", "link", "chain", "sample"), trace),
        "log_evidence": ("run", evidences[:, 0]),
        "log_evidence_se": ("run", ses[:, 0]),
        "diag_log_evidence_ratio": ("run", evidences[:, 0]),
        "diag_log_evidence_ratio_se": ("run", ses[:, 0]),
        "diag_log_evidence_ti": ("run", evidences[:, 1]),
        "diag_log_evidence_ti_se": ("run", ses[:, 1]),
        "diag_log_evidence_ais": ("run", evidences[:, 2]),
        "diag_log_evidence_ais_se": ("run", ses[:, 2]),
        "status": ("run", list(column[5])),
        "test_nmse": ("run", np.array(column[7], dtype=float)),
        "test_rmse": ("run", np.sqrt(np.array(column[7], dtype=float))),
        "settings_json": ("run", settings),
        "resolved_settings_json": ("run", settings),
    }
    coords = {
        "experiment": ("run", ["synthetic"] * n_run),
        "dataset": ("run", list(column[0])),
        "split": ("run", ["default"] * n_run),
        "method": ("run", list(column[1])),
        "seed": ("run", np.array(column[3], dtype=np.int64)),
        "hidden": ("run", np.array(column[2], dtype=np.int64)),
        "components": ("run", np.full(n_run, -1, dtype=np.int64)),
        "schedule": ("run", list(column[4])),
        "method_name": ("run", list(column[1])),
        "link": np.arange(n_link),
        "chain": np.arange(N_CHAINS),
        "sample": np.arange(N_SAMPLES),
    }
    return xr.Dataset(data, coords=coords, attrs={"title": "bnnsweep merged results"})


@pytest.fixture(scope="module")
def merged_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("chaining") / "merged.nc"
    from bnnsweep.results import write_netcdf_atomic

    write_netcdf_atomic(make_merged(), path)  # as `bnnsweep merge` writes it: sealed
    return str(path)


def _texts(fig) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts) + " ".join(
        t.get_text() for t in fig.texts
    )


def test_kinds_are_registered_and_write_pngs(merged_path, tmp_path):
    for kind in ("chaining_diagnostics", "schedule_comparison"):
        assert FIGURES[kind][1] == ".png"
        written = draw(kind, merged_path, tmp_path / kind)
        assert written == [tmp_path / f"{kind}.png"]
        _assert_png(written[0])


def test_kinds_are_allowed_by_the_config_schema():
    from importlib.resources import files

    import yaml

    schema = yaml.safe_load(files("bnnsweep").joinpath("schemas/config.schema.yaml").read_text())
    text = json.dumps(schema)
    for kind in FIGURES:
        assert f'"{kind}"' in text


@pytest.mark.parametrize(
    ("name", "expected"),
    [("paper", 16), ("geometric10", 9), ("power4_10", 9), ("linear10", 6), ("geometric5", 5)],
)
def test_nearest_link_to_lambda_0_6(name, expected):
    lambdas = make_schedule(name)
    assert nearest_link(lambdas) == expected
    # NaN padding of a merged file changes nothing
    padded = np.concatenate([lambdas, np.full(7, np.nan)])
    assert nearest_link(padded) == expected
    assert nearest_link(padded, 0.0) == 0
    assert nearest_link(padded, 2.0) == len(lambdas) - 1


def test_nearest_link_without_finite_lambda_is_an_error():
    with pytest.raises(ValueError):
        nearest_link(np.full(4, np.nan))


def test_link_count_ignores_nan_padding():
    assert n_links([0.0, 0.5, 1.0, np.nan, np.nan]) == 2
    assert n_links(make_schedule("paper")) == 18
    assert n_links(np.full(5, np.nan)) == 0
    assert n_links([0.0]) == 0
    chains = chaining_runs(make_merged())
    expected = [18, 18, 18, 10, 10, 10, 5, 20, 10, 10]
    assert chains["n_links"].tolist() == expected
    assert chains["method"].eq("chaining").all()  # the hmc and laplace runs are left out
    points = estimates_frame(make_merged())
    ratio = points[points["estimator"] == "ratio"]
    assert ratio["n_links"].tolist() == expected


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("paper", "paper"),
        ("geometric10", "geometric"),
        ("geometric5", "geometric"),
        ("power4_10", "power"),
        ("power2p5_20", "power"),
        ("linear10", "linear"),
    ],
)
def test_schedule_family(name, family):
    assert schedule_family(name) == family


def test_chosen_run_is_the_largest_paper_network_not_diverged():
    chains = chaining_runs(make_merged())
    toy = choose_run(chains[chains["dataset"] == "toy_sine"])
    assert (toy["hidden"], toy["schedule"], toy["seed"], toy["run"]) == (3, "paper", 0, 1)
    arm = choose_run(chains[chains["dataset"] == "robot_arm"])
    assert (arm["hidden"], arm["schedule"]) == (6, "geometric10")


def test_trace_panel_prefers_the_tempered_energy():
    ds = make_merged()
    ds["link_energy_trace"] = ds["link_phi_trace"] * 0.5 + 1.0
    fig = chaining_diagnostics(ds)
    assert fig.axes[0].get_ylabel().startswith("E(λ = 0.359, w)")
    expected = [0.5 * phi_value(9, 9, 0, s) + 1.0 for s in range(N_SAMPLES)]
    np.testing.assert_allclose(fig.axes[0].get_lines()[0].get_ydata(), expected)


def test_trace_panel_shows_the_link_nearest_0_6_per_chain():
    fig = chaining_diagnostics(make_merged())
    titles = [ax.get_title() for ax in fig.axes]
    assert len(fig.axes) == 6  # two datasets x three panels
    # rows sorted by dataset: robot_arm (geometric10, lambda 0.359 at link 9), toy_sine (paper)
    assert "(a) error at λ = 0.359" in titles[0]
    assert "robot_arm, H = 6, schedule geometric10 (K = 10)" in titles[1]
    assert "(a) error at λ = 0.6" in titles[3]
    # the synthetic file has no link_energy_trace: the panel falls back to phi and says so
    assert fig.axes[0].get_ylabel().startswith("φ(w)")
    assert "toy_sine, H = 3, schedule paper (K = 18), seed 0" in titles[4]
    for ax, run, link, n_samples in ((fig.axes[0], 9, 9, N_SAMPLES), (fig.axes[3], 1, 16, 9)):
        lines = ax.get_lines()
        assert len(lines) == N_CHAINS
        for chain, line in enumerate(lines):
            expected = [phi_value(run, link, chain, s) for s in range(n_samples)]
            np.testing.assert_allclose(line.get_ydata(), expected)
            np.testing.assert_array_equal(line.get_xdata(), np.arange(n_samples))


def test_ratio_and_acceptance_panels_use_links_1_to_k_on_a_log_axis():
    ds = make_merged()
    fig = chaining_diagnostics(ds)
    ratio_ax, accept_ax = fig.axes[4], fig.axes[5]
    assert ratio_ax.get_xscale() == "log" and accept_ax.get_xscale() == "log"
    lambdas = make_schedule("paper")[1:]
    ratio_line = [line for line in ratio_ax.get_lines() if line.get_marker() == "o"]
    assert len(ratio_line) == 1
    np.testing.assert_allclose(ratio_line[0].get_xdata(), lambdas)
    np.testing.assert_allclose(ratio_line[0].get_ydata(), ds["link_ln_ratio"].values[1, 1:19])
    accept = [line for line in accept_ax.get_lines() if line.get_marker() == "o"]
    assert len(accept) == 1
    np.testing.assert_allclose(accept[0].get_ydata(), np.linspace(0.95, 0.6, 18))
    # the summed ratios are the run's ratio estimate
    assert "Σ = -8 ±" in " ".join(t.get_text() for t in ratio_ax.texts)


def test_schedule_comparison_panels_values_and_se_axis():
    fig = schedule_comparison(make_merged())
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        "robot_arm, H = 4: (a) log evidence",
        "robot_arm, H = 4: (b) standard error",
        "robot_arm, H = 6: (a) log evidence",
        "robot_arm, H = 6: (b) standard error",
        "toy_sine, H = 2: (a) log evidence",
        "toy_sine, H = 2: (b) standard error",
        "toy_sine, H = 3: (a) log evidence",
        "toy_sine, H = 3: (b) standard error",
        "toy_sine, H = 5: (a) log evidence",
        "toy_sine, H = 5: (b) standard error",
    ]
    se_ax = fig.axes[7]
    assert se_ax.get_yscale() == "log"
    # toy_sine H = 3: 6 runs x 3 estimators, less the two NaN estimates of the diverged run
    points = [c for c in se_ax.collections if isinstance(c, PathCollection)]
    assert sum(len(c.get_offsets()) for c in points) == 6 * 3 - 2
    ev_ax = fig.axes[6]
    assert "not finite: ratio 1/6, AIS 1/6" in " ".join(t.get_text() for t in ev_ax.texts)
    ys = np.concatenate([line.get_ydata() for line in ev_ax.get_lines()])
    for value in (-8.0, -8.4, -7.9, -8.2, -8.1, -8.6, -7.5, -8.8, -9.9):
        assert np.isclose(ys, value).any()


def test_no_chaining_runs_draws_a_note(tmp_path):
    ds = make_merged([r for r in RUNS if r[1] != "chaining"])
    for kind, function in (
        ("chaining_diagnostics", chaining_diagnostics),
        ("schedule_comparison", schedule_comparison),
    ):
        assert "no chaining run" in _texts(function(ds))
        _assert_png(draw(kind, ds, tmp_path / f"{kind}.png")[0])
    # a merged file without any link variable at all
    bare = ds.drop_vars([v for v in ds.data_vars if str(v).startswith("link_")])
    bare = bare.drop_dims(["link", "chain", "sample"])
    for kind in ("chaining_diagnostics", "schedule_comparison"):
        assert "no chaining run" in _texts(FIGURES[kind][0](bare))
        assert draw(kind, bare, tmp_path / f"bare_{kind}.png")[0].read_bytes()[:8] == PNG_MAGIC


def test_published_hmc_rows_in_the_error_table():
    table = error_table(make_merged())
    rows = table[(table["dataset"] == "sunspots") & (table["method"] == "hmc")]
    assert len(rows) == 1
    assert rows.iloc[0]["published"] == "test_nmse: 0.131 (thesis T5.1); 0.09 (paper 000 T1)"
    assert rows.iloc[0]["n_runs"] == 2
    np.testing.assert_allclose(rows.iloc[0]["test_nmse_mean"], 0.13)
    assert [r.value for r in PUBLISHED[("tecator", "hmc", "test_rmse")]] == [0.481, 0.59]
    assert (
        format_references("tecator", "hmc") == "test_rmse: 0.481 (thesis T5.2); 0.59 (paper 000 T2)"
    )
    # the earlier entries are kept
    assert [r.value for r in PUBLISHED[("sunspots", "laplace", "test_nmse")]] == [0.171, 0.18]
    assert PUBLISHED[("tecator", "map", "test_rmse")][0].value == 0.65
