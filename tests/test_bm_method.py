"""The ``bm_vi`` method (thesis ch. 4) end to end: its answers against plain-loop
enumeration, mixtures of one component against mean field, exact learning against the
enumerated gradient, cells written and merged, the shipped config and the three figures."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from merged_fixtures import BM_TOY
from merged_fixtures import bm_density_split as density_split
from merged_fixtures import bm_ensemble_split as ensemble_split

from bnnsweep import datasets
from bnnsweep.datasets.boltzmann_tasks import (
    ensemble_machines,
    ensemble_rows,
    galland_pairs,
)
from bnnsweep.datasets.generated import unstandardised_split
from bnnsweep.method_base import SettingsError
from bnnsweep.methods import get_method
from bnnsweep.models import boltzmann as bm
from bnnsweep.sweeps.config import ConfigError, expand, load, validate

METHOD = get_method("bm_vi")
TOY = BM_TOY


def fit(split, rng_seed=0, **settings):
    return METHOD.fit(
        split, METHOD.settings(settings), np.random.default_rng(rng_seed), log=lambda m: None
    )


def loop_moments(w, b):
    """ln Z, <s_i> and <s_i s_j> of one machine by a plain loop over its 2^n states."""
    n = len(b)
    z, m, c = 0.0, np.zeros(n), np.zeros((n, n))
    for s in itertools.product((-1.0, 1.0), repeat=n):
        s = np.array(s)
        p = np.exp(0.5 * s @ w @ s + b @ s)
        z, m, c = z + p, m + p * s, c + p * np.outer(s, s)
    return np.log(z), m / z, c / z


def loop_log_likelihood(w12, b1, b2, data=TOY):
    """sum_n ln P(v_n) of a two-unit machine by enumerating its four states."""
    states = np.array(list(itertools.product((-1.0, 1.0), repeat=2)))
    logp = w12 * states[:, 0] * states[:, 1] + b1 * states[:, 0] + b2 * states[:, 1]
    log_z = np.log(np.exp(logp).sum())
    return sum(w12 * v[0] * v[1] + b1 * v[0] + b2 * v[1] - log_z for v in data)


# --------------------------------------------------------------------------- inference
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mean_field_errors_against_plain_enumeration(seed):
    """Inference cells: the exact moments and ln Z are those of a plain loop over states,
    the approximate moments (errors + exact) are a mean-field fixed point m = tanh(Wm + b)
    with <s_i s_j> = m_i m_j, the bound is below ln Z and pair_sq_error sums the squares."""
    rng = np.random.default_rng(seed)
    w, b = bm.random_machines(rng, 4, bm.fully_connected_mask(6))
    r = fit(
        ensemble_split(w, b),
        kind="inference",
        anneal_start=20.0,
        anneal_steps=5,
        max_sweeps=500,
        tol=1e-12,
    )
    iu = np.triu_indices(6, 1)
    for k in range(4):
        log_z, mean, corr = loop_moments(w[k], b[k])
        assert r.traces["log_partition"][1][k] == pytest.approx(log_z, abs=1e-10)
        m = r.traces["mean_error"][1][k] + mean
        np.testing.assert_allclose(m, np.tanh(w[k] @ m + b[k]), atol=1e-5)
        approx = r.traces["pair_error"][1][k] + corr[iu]
        np.testing.assert_allclose(approx, np.outer(m, m)[iu], atol=1e-10)
        assert r.traces["joint_bound"][1][k] <= log_z + 1e-12
    np.testing.assert_allclose(
        r.traces["pair_sq_error"][1], (r.traces["pair_error"][1] ** 2).sum(1)
    )
    assert r.likelihood == "none" and r.pred_mean.shape == (0, 0)
    assert r.status == "ok"


def test_independent_units_have_no_correlation_error():
    """With every weight zero the units are independent, mean field is exact and every pair
    error vanishes for mean field and (to the tolerance of a flat bound) for mixtures, while
    the random machines of the other tests have errors of order 0.1."""
    rng = np.random.default_rng(3)
    b = rng.uniform(-1, 1, (3, 5))
    split = ensemble_split(np.zeros((3, 5, 5)), b)
    # the mixture's components merge only slowly once the bound is flat: a looser tolerance
    for q, m, atol in (("mean_field", 1, 1e-9), ("mixture", 3, 1e-3)):
        r = fit(split, kind="inference", q_family=q, components=m, max_sweeps=300, tol=1e-12)
        np.testing.assert_allclose(r.traces["pair_error"][1], 0.0, atol=atol)


@pytest.mark.parametrize("seed", [0, 1])
def test_mixture_of_one_component_is_mean_field(seed):
    """q_family mixture with M = 1 (mixture updates, flat smoothing) gives mean field's
    answer, for inference and for learning."""
    rng = np.random.default_rng(seed)
    w, b = bm.random_machines(rng, 5, bm.fully_connected_mask(7))
    split = ensemble_split(w, b)
    common = dict(kind="inference", anneal_start=30.0, anneal_steps=4)
    mf = fit(split, q_family="mean_field", **common)
    mix = fit(split, q_family="mixture", components=1, **common)
    for name in ("pair_error", "mean_error", "joint_bound"):
        np.testing.assert_allclose(mix.traces[name][1], mf.traces[name][1], atol=1e-9)
    learn = dict(
        iterations=15,
        learning_rate=0.25,
        max_sweeps=20,
        init_weights="normal",
        init_scale=0.1,
        runs=3,
    )
    mf = fit(density_split(TOY), q_family="mean_field", **learn)
    mix = fit(density_split(TOY), q_family="mixture", components=1, **learn)
    np.testing.assert_allclose(mix.traces["objective"][1], mf.traces["objective"][1], atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_more_components_lower_the_mean_correlation_error(seed):
    rng = np.random.default_rng(10 + seed)
    w, b = bm.random_machines(rng, 20, bm.fully_connected_mask(8))
    split = ensemble_split(w, b)
    common = dict(kind="inference", anneal_start=60.0, anneal_steps=8, max_sweeps=200)
    mf = fit(split, rng_seed=seed, q_family="mean_field", **common)
    mix = fit(split, rng_seed=seed, q_family="mixture", components=4, **common)
    assert mix.diagnostics["mean_pair_sq_error"] < 0.7 * mf.diagnostics["mean_pair_sq_error"]


# --------------------------------------------------------------------------- learning
def test_exact_learning_follows_the_enumerated_gradient():
    """q_family exact on the toy: each step is learning_rate x the finite-difference
    gradient of a plain-loop log-likelihood, the objective is that log-likelihood and the
    KL trace is KL(data || model) of the same enumeration."""
    rate = 0.25
    r = fit(
        density_split(TOY),
        q_family="exact",
        learning_rate=rate,
        iterations=30,
        init_weights="normal",
        init_scale=0.1,
        runs=2,
    )
    w = r.traces["weight_path"][1][..., 0]  # (iteration, restart)
    b = r.traces["bias_path"][1]  # (iteration, restart, unit)
    eps = 1e-6
    p_data = np.array([2 / 3, 1 / 3])
    for t in range(29):
        for k in range(2):
            point = np.array([w[t, k], b[t, k, 0], b[t, k, 1]])
            ll = loop_log_likelihood(*point)
            assert r.traces["objective"][1][t, k] == pytest.approx(ll, abs=1e-10)
            grad = np.array(
                [
                    (loop_log_likelihood(*(point + d)) - loop_log_likelihood(*(point - d)))
                    / (2 * eps)
                    for d in np.eye(3) * eps
                ]
            )
            step = np.array([w[t + 1, k], b[t + 1, k, 0], b[t + 1, k, 1]]) - point
            np.testing.assert_allclose(step, rate * grad, atol=1e-7)
            kl = np.sum(p_data * np.log(p_data)) - ll / 3 + np.log(1.0)  # ll/3: mean over data
            # KL = sum_v p(v) ln p(v) - sum_v p(v) ln P(v), and ll/3 = sum_v p(v) ln P(v)
            assert r.traces["kl_data_model"][1][t, k] == pytest.approx(kl, abs=1e-10)
    assert r.log_evidence_kind == "exact"
    assert r.log_evidence == pytest.approx(r.traces["objective"][1][-1].mean())


def test_toy_mean_field_oscillates_and_two_components_track_exact():
    """Figs. 4.5-4.6 through the method: the same starting machines, mean field's KL jumps
    up again and again and its joint goes inconsistent (flagged); M = 2 follows exact
    learning."""
    learn = dict(
        iterations=60,
        learning_rate=0.25,
        max_sweeps=20,
        init_weights="normal",
        init_scale=0.1,
        runs=3,
    )
    kl = {}
    for q, m in (("mean_field", 1), ("mixture", 2), ("exact", 1)):
        r = fit(density_split(TOY), q_family=q, components=m, **learn)
        kl[q] = r.traces["kl_data_model"][1]
        if q == "mean_field":
            assert r.status == "not_converged" and "F > 0" in r.status_message
            # fig. 4.6's parameters: the joint's means at iteration t are a mean-field fixed
            # point of that iteration's machine, and they hop between the two modes
            m = r.traces["joint_means"][1][:, :, 0, 0]  # (iteration, restart, unit)
            w = r.traces["weight_path"][1][..., 0]
            b = r.traces["bias_path"][1]
            field = w[..., None] * m[..., ::-1] + b
            np.testing.assert_allclose(m, np.tanh(field), atol=2e-2)
            assert np.all((np.diff(np.sign(m[:, :, 0]), axis=0) != 0).sum(0) >= 5)
        else:
            assert r.status == "ok"
    assert np.all((np.diff(kl["mean_field"], axis=0) > 0.1).sum(0) >= 10)
    np.testing.assert_allclose(kl["mixture"][20:], kl["exact"][20:], atol=0.01)


def test_galland_conditional_start_converges_and_is_flagged_otherwise():
    """A small supervised task (the first 4 Galland pairs, one hidden layer): the conditional
    start meets the stopping rule in every run with a consistent joint; a run cut short is
    flagged not_converged with the count of runs."""
    x, y = galland_pairs()
    split = unstandardised_split("default", x[:4], y[:4], np.zeros((0, 6)), np.zeros((0, 6)))
    common = dict(
        hidden_layers=1,
        anneal_start=60.0,
        anneal_steps=8,
        damping=0.5,
        stop_within=0.2,
        runs=2,
        learning_rate=0.02,
    )
    r = fit(split, joint_init="conditional", iterations=300, **common)
    assert r.status == "ok", r.status_message
    its = r.traces["iterations_to_converge"][1]
    assert np.all(np.isfinite(its)) and r.diagnostics["runs_converged"] == 2
    assert r.traces["objective"][1].shape[0] == its.max() + 1
    short = fit(split, joint_init="conditional", iterations=2, **common)
    assert short.status == "not_converged" and "2 of 2 runs did not" in short.status_message
    assert np.all(np.isnan(short.traces["iterations_to_converge"][1]))


def test_settings_are_checked():
    for bad, match in (
        (dict(q_family="mean_field", components=3), "components"),
        (dict(kind="inference", q_family="exact"), "exact"),
        (dict(temperatures=[10.0, 2.0]), "end at 1"),
        (dict(temperatures="hot"), "temperatures"),
        (dict(joint_init="warm"), "joint_init"),
        (dict(damping=1.0), "damping"),
    ):
        with pytest.raises(SettingsError, match=match):
            METHOD.settings(bad)
    assert METHOD.settings(dict(temperatures=[8, 2, 1])).schedule() == (8.0, 2.0, 1.0)
    assert METHOD.accepted_tasks(METHOD.settings({"kind": "inference"})) == ("network_ensemble",)
    with pytest.raises(ValueError, match="±1"):
        fit(density_split(np.array([[0.0, 1.0]])), iterations=1)


# --------------------------------------------------------------------------- data, cells, config
def test_datasets_are_fixed_and_decode():
    ens = datasets.load("bm_random_10").split("default")
    w, b = ensemble_machines(ens.x_train)
    assert w.shape == (100, 10, 10) and np.allclose(w, np.swapaxes(w, 1, 2))
    assert np.all(np.abs(ens.x_train) <= 1) and np.all(np.diagonal(w, axis1=1, axis2=2) == 0)
    np.testing.assert_array_equal(ensemble_rows(w, b), ens.x_train)
    g = datasets.load("galland_6bit").split("default")
    assert g.x_train.shape == g.y_train.shape == (10, 6)
    assert len({tuple(r) for r in g.x_train}) == 10 and len({tuple(r) for r in g.y_train}) == 10
    np.testing.assert_array_equal(datasets.load("bm_two_point").split("default").x_train, TOY)
    for name, task in (("bm_random_10", "network_ensemble"), ("galland_6bit", "binary_density")):
        assert datasets.describe(name)["task"] == task


def test_cells_write_and_merge(tmp_path):
    """Cells of both kinds go through the runner and the merge; learning traces of other
    lengths (a run stopped early) are padded with NaN."""
    from bnnsweep.cells.reader import read_cell
    from bnnsweep.results import merge_cells
    from bnnsweep.runner import fit_cell_to_file
    from bnnsweep.sweeps.sweep import Cell

    base = dict(learning_rate=0.25, max_sweeps=20, init_weights="normal", init_scale=0.1, runs=2)
    cells = [
        Cell(
            "t",
            "bm_two_point",
            "default",
            "toy",
            "bm_vi",
            0,
            (("q_family", "mean_field"),),
            {**base, "q_family": "mean_field", "iterations": 5},
        ),
        Cell(
            "t",
            "bm_two_point",
            "default",
            "toy",
            "bm_vi",
            0,
            (("q_family", "exact"),),
            {**base, "q_family": "exact", "iterations": 8},
        ),
    ]
    paths = [
        fit_cell_to_file(c, tmp_path / f"{i}.nc", log=lambda m: None) for i, c in enumerate(cells)
    ]
    ens = Cell(
        "e",
        "bm_random_10",
        "default",
        "mf",
        "bm_vi",
        0,
        (("q_family", "mean_field"),),
        {"kind": "inference", "q_family": "mean_field", "anneal_start": 60.0, "anneal_steps": 8},
    )
    ens_path = fit_cell_to_file(ens, tmp_path / "ens.nc", log=lambda m: None)
    one = read_cell(ens_path)
    assert one["pair_error"].dims == ("network", "pair") and one["pair_error"].shape == (100, 45)
    assert "test_rmse" not in one
    merged = merge_cells(paths)
    assert merged["kl_data_model"].dims == ("run", "iteration", "restart")
    assert merged.sizes["iteration"] == 8
    assert np.isnan(merged["kl_data_model"].values[0, 5:]).all()
    assert np.isfinite(merged["kl_data_model"].values[1]).all()
    assert list(merged["q_family"].values) == ["mean_field", "exact"]
    assert set(merged["log_evidence_kind"].values) == {"approximation", "exact"}


def test_shipped_config_validates_and_checks_tasks():
    cells = expand(load("config/thesis_bm.yaml"))
    assert len(cells) == 22  # the digits task's two *_slow labels (a tenth of the rate)
    m = sorted(c.settings.get("components", 1) for c in cells if c.experiment == "bm_inference")
    assert m == list(range(1, 11))
    config = validate(
        {
            "experiments": {
                "x": {"datasets": ["bm_random_10"], "methods": {"bm_vi": {"kind": "learning"}}}
            }
        }
    )
    with pytest.raises(ConfigError, match="binary_density"):
        expand(config)
    config = validate(
        {
            "experiments": {
                "x": {
                    "datasets": ["bm_two_point"],
                    "methods": {"bm_vi": {"q_family": "mean_field", "components": [1, 2]}},
                }
            }
        }
    )
    with pytest.raises(ConfigError, match="components"):
        expand(config)


# --------------------------------------------------------------------------- figures
@pytest.fixture
def merged_file(bm_merged_files):
    """Merged files of real bm_vi cells (``merged_fixtures.bm_merged_files``)."""
    return bm_merged_files


@pytest.mark.parametrize(
    "kind, data",
    [("bm_correlation_error", "ens"), ("bm_galland_iterations", "gal"), ("bm_toy_learning", "toy")],
)
def test_each_figure_draws_from_a_merged_file(merged_file, tmp_path, kind, data):
    from matplotlib.figure import Figure

    from bnnsweep.figures import FIGURES, draw, load_merged

    fig = FIGURES[kind][0](load_merged(merged_file[data]))
    assert isinstance(fig, Figure)
    text = " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))
    assert "thesis" in text
    shown = [ax for ax in fig.axes if ax.axison]  # a legend-only axis is switched off
    assert len(shown) >= 2 and all(ax.has_data() for ax in shown)
    (png,) = draw(kind, merged_file[data], tmp_path / kind)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # another experiment's merged file gives a note, not a traceback
    other = {"ens": "toy", "gal": "ens", "toy": "ens"}[data]
    note = FIGURES[kind][0](load_merged(merged_file[other]))
    assert isinstance(note, Figure)


def test_correlation_figure_numbers(merged_file):
    from bnnsweep.figures import load_merged
    from bnnsweep.figures.bm_correlation import correlation_error_frame

    ds = load_merged(merged_file["ens"])
    frame = correlation_error_frame(ds)
    assert list(frame["M"]) == [1, 2]
    for m, run in ((1, 0), (2, 1)):
        want = ds["pair_sq_error"].isel(run=run).values.mean()
        assert frame.loc[frame["M"] == m, "mean_pair_sq_error"].item() == pytest.approx(want)
