"""Thesis figs. 4.8-4.9 (Boltzmann machine learning on digits): the grid + hidden
connectivity, the phases of a small grid machine against enumeration, the clamped phase
started from the joint, the stand-in data, the two figures from a merged file, and the
refusal at validation of one model's data for the other model's method."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bnnsweep import datasets
from bnnsweep.datasets.generated import unstandardised_split
from bnnsweep.engines.boltzmann import fit_boltzmann
from bnnsweep.engines.boltzmann import mixture as mx
from bnnsweep.engines.boltzmann.objective import variational_gradient
from bnnsweep.engines.boltzmann.phases import (
    PhaseResult,
    initial_state,
    phase_machine,
    phase_moments,
    run_phase,
)
from bnnsweep.methods import get_method
from bnnsweep.models import boltzmann as bm
from bnnsweep.sweeps.config import ConfigError, expand, validate

METHOD = get_method("bm_vi")


# --------------------------------------------------------------------------- the mask
def _grid_pairs(rows, cols, hidden):
    """Connected pairs i < j, written out by hand: grid units within one step in both
    directions (8-neighbourhood), hidden units with every unit."""
    n_grid = rows * cols
    pairs = set()
    for i, j in itertools.combinations(range(n_grid + hidden), 2):
        if j >= n_grid:
            pairs.add((i, j))
            continue
        (ri, ci), (rj, cj) = divmod(i, cols), divmod(j, cols)
        if max(abs(ri - rj), abs(ci - cj)) == 1:
            pairs.add((i, j))
    return pairs


@pytest.mark.parametrize("rows, cols, hidden", [(8, 8, 10), (3, 4, 2), (2, 2, 0)])
def test_grid_mask_links_eight_neighbours_and_hidden_to_everything(rows, cols, hidden):
    mask = bm.grid_neighbourhood_mask(rows, cols, hidden)
    assert np.array_equal(mask, mask.T) and not mask.diagonal().any()
    got = {(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(mask, 1)), strict=True)}
    assert got == _grid_pairs(rows, cols, hidden)


def test_digits_machine_has_the_thesis_connectivity():
    mask = bm.grid_neighbourhood_mask(8, 8, 10)
    # 8 x 7 horizontal + 7 x 8 vertical + 2 x 7 x 7 diagonal links, 10 x 64 + 45 hidden ones
    assert np.triu(mask, 1).sum() == 56 + 56 + 98 + 640 + 45
    grid_degree = mask[:64, :64].sum(1).reshape(8, 8)
    assert grid_degree[0, 0] == 3 and grid_degree[0, 3] == 5 and grid_degree[3, 3] == 8
    assert not mask[0, 2] and not mask[0, 16] and mask[0, 9] and mask[7, 14]
    assert (mask[64:].sum(1) == 73).all()  # every other unit


def test_bm_vi_grid_architecture_builds_that_mask_and_refuses_other_data():
    from bnnsweep.methods.bm_vi import learning_task

    x = np.where(np.random.default_rng(0).random((5, 16)) < 0.5, -1.0, 1.0)
    split = unstandardised_split("d", x, np.zeros((5, 0)), np.zeros((0, 16)), np.zeros((0, 0)))
    s = METHOD.settings({"architecture": "grid", "grid_hidden": 3})
    task = learning_task(split, s)
    assert np.array_equal(task.mask, bm.grid_neighbourhood_mask(4, 4, 3))
    assert list(task.plus_clamped) == list(range(16)) and task.minus_clamped.size == 0
    bad = unstandardised_split(
        "d", x[:, :15], np.zeros((5, 0)), np.zeros((0, 15)), np.zeros((0, 0))
    )
    with pytest.raises(ValueError, match="square"):
        learning_task(bad, s)
    for settings, word in (
        ({"architecture": "grid", "hidden_layers": 1}, "hidden_layers"),
        ({"clamped_init": "joint", "joint_init": "conditional"}, "conditional"),
        ({"architecture": "ring"}, "architecture"),
    ):
        with pytest.raises(Exception, match=word):
            METHOD.settings(settings)


# --------------------------------------------------------------------------- phases
def _grid_machines(seed, hidden, k=2, rows=3, cols=3):
    mask = bm.grid_neighbourhood_mask(rows, cols, hidden)
    w, b = bm.random_machines(np.random.default_rng(seed), k, mask, -0.8, 0.8)
    return mask, w, b


def _patterns(seed, p=4, n=9):
    return np.where(np.random.default_rng(seed + 100).random((p, n)) < 0.5, -1.0, 1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clamped_phase_of_a_grid_machine_with_one_hidden_unit_is_exact(seed):
    """Visible units clamped, one free hidden unit: mean field is exact, so L+, <s_i>+ and
    <s_i s_j>+ equal enumeration whatever the start (zero or the joint's)."""
    _, w, b = _grid_machines(seed, 1)
    v = _patterns(seed)
    visible = np.arange(9)
    exact = bm.exact_phase(w, b, visible, v)
    machine = phase_machine(w, b, visible, v)
    for start in (None, np.full((2, 4, 1), 0.7)):
        state = initial_state(machine, 1, start_means=start)
        res = run_phase(w, b, visible, v, state, "mf", temperatures=(10.0, 3.0, 1.0), tol=1e-12)
        means, corr = phase_moments(res)
        np.testing.assert_allclose(res.bound, exact.log_partition, atol=1e-9)
        np.testing.assert_allclose(means, exact.means, atol=1e-9)
        np.testing.assert_allclose(corr, exact.correlations, atol=1e-9)


def _point_mass_joint(w, b):
    """The joint phase as a mixture of 2**n point masses at the states, weighted by the
    exact P(s): a PhaseResult whose statistics are the exact ones."""
    k, n = b.shape
    states = bm.all_states(n, bm.SPIN_VALUES)
    log_z = bm.exact_phase(w, b).log_partition  # (K, 1)
    log_p = bm.log_potential(states[None], w, b) - log_z  # (K, S)
    means = np.broadcast_to(states * mx.MEAN_LIMIT, (k,) + states.shape).copy()
    log_r = np.where(states[..., None] == np.array([-1.0, 1.0]), 0.0, -40.0)
    state = mx.MixtureState(
        means, log_p, np.broadcast_to(log_r, (k,) + log_r.shape).copy(), np.zeros(log_p.shape)
    )
    state = mx.update_lambda(state)
    bound = mx.mixture_bound(w, b, state)
    return PhaseResult(bound[:, None], means[:, None], log_p[:, None], state, 0), log_z


@pytest.mark.parametrize("seed", [0, 1])
def test_free_phase_and_gradient_on_a_grid_machine_agree_with_enumeration(seed):
    """2 x 3 grid + 2 hidden units (2**8 states): the joint written as point masses at every
    state reaches ln Z, its <s_i>- and <s_i s_j>- are the enumerated ones, and with an exact
    clamped phase (visible clamped, enumerated over the hidden pair) the F-gradient 4.25
    is the exact log-likelihood gradient 4.6, zero off the grid + hidden mask."""
    mask, w, b = _grid_machines(seed, 2, rows=2, cols=3)
    v = _patterns(seed, n=6)
    visible = np.arange(6)
    joint, log_z = _point_mass_joint(w, b)
    exact_free = bm.exact_phase(w, b)
    np.testing.assert_allclose(joint.bound, log_z, atol=1e-8)
    means, corr = phase_moments(joint)
    np.testing.assert_allclose(means, exact_free.means, atol=1e-9)
    np.testing.assert_allclose(corr, exact_free.correlations, atol=1e-9)
    # the clamped phase with the two hidden units enumerated, as a 4-component mixture
    hidden = bm.all_states(2, bm.SPIN_VALUES)  # (4, 2)
    states = np.zeros((4, 4, 8))
    states[:, :, :6] = v[:, None, :]
    states[:, :, 6:] = hidden[None]
    logp = bm.log_potential(states[None], w[:, None], b[:, None])  # (K, P, 4)
    exact_plus = bm.exact_phase(w, b, visible, v)
    log_q = logp - exact_plus.log_partition[..., None]
    plus = PhaseResult(
        exact_plus.log_partition, np.broadcast_to(states, (2, 4, 4, 8)), log_q, None, 0
    )
    grad_w, grad_b = variational_gradient(plus, joint, mask)
    ex = bm.exact_log_likelihood(w, b, visible, v, mask=mask)
    np.testing.assert_allclose(grad_w, ex.weight_gradient, atol=1e-8)
    np.testing.assert_allclose(grad_b, ex.bias_gradient, atol=1e-8)
    assert not grad_w[:, ~mask].any()


def test_clamped_phase_started_from_the_joint_learns_like_any_exact_start():
    """With one hidden unit the clamped phase is exact from any start, so learning with
    plus_init 'joint' (joint first, hidden unit started at <s_h>-) follows the same path as
    from zero, for both joint families."""
    mask, w, b = _grid_machines(3, 1)
    v = _patterns(3, p=6)
    for q, m in (("mf", 1), ("mixture", 3)):
        paths = []
        for plus_init in ("zero", "joint"):
            h = fit_boltzmann(
                w, b, mask, v, np.arange(9), q_minus=q, components=m, plus_init=plus_init,
                temperatures=(5.0, 1.0), max_sweeps=200, tol=1e-12, learning_rate=0.05,
                iterations=4, rng=np.random.default_rng(0), keep_path=True,
            )  # fmt: skip
            paths.append(h)
        np.testing.assert_allclose(paths[0].objective, paths[1].objective, atol=1e-7)
        np.testing.assert_allclose(paths[0].weight_path, paths[1].weight_path, atol=1e-7)
        assert paths[1].joint_log_mixing_path.shape == (4, 2, 1, m)


# --------------------------------------------------------------------------- data
def test_digits_binary_is_the_thresholded_stand_in():
    info = datasets.describe("digits_binary")
    assert info["task"] == "binary_density" and info["model"] == "boltzmann"
    assert "CEDAR" in info["stand_in_for"] and "700" in info["stand_in_for"]
    split = datasets.load("digits_binary").split("default")
    assert split.x_train.shape == (1797, 64) and split.y_train.shape == (1797, 0)
    assert set(np.unique(split.x_train)) == {-1.0, 1.0} and split.x_test.shape[0] == 0
    from bnnsweep.datasets.classes import load_vendored

    raw = load_vendored("sklearn-digits.npz", 1797, 65)[:, :64]
    np.testing.assert_array_equal(split.x_train == 1.0, raw >= 8)


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "dataset, method, model",
    [
        ("bm_two_point", "sbn_vi", "boltzmann"),
        ("digits_binary", "sbn_vi", "boltzmann"),
        ("bm_random_10", "sbn_vi", "boltzmann"),
        ("bars_4x4", "bm_vi", "sigmoid_belief"),
        ("sbn_random_246", "bm_vi", "sigmoid_belief"),
    ],
)
def test_the_other_models_data_are_refused_at_validation(dataset, method, model):
    settings = {"kind": "inference"} if (method, dataset) == ("bm_vi", "sbn_random_246") else {}
    config = validate(
        {"experiments": {"x": {"datasets": [dataset], "methods": {method: settings}}}}
    )
    with pytest.raises(ConfigError) as err:
        expand(config)
    text = str(err.value)
    assert f"dataset {dataset!r} holds {model} data" in text and repr(method) in text
    assert "\n" not in text


def test_matching_model_data_still_validate():
    for dataset, method in (("digits_binary", "bm_vi"), ("bars_4x4", "sbn_vi")):
        config = validate({"experiments": {"x": {"datasets": [dataset], "methods": {method: {}}}}})
        assert len(expand(config)) == 1


# --------------------------------------------------------------------------- figures
def _text(fig) -> str:
    """Every string in a figure (table cells hold a Text of their own)."""
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    return " ".join(t if isinstance(t, str) else t.get_text() for t in texts)


@pytest.fixture
def merged_digits(bm_digits_merged):
    """``merged_fixtures.bm_digits_merged``: grid machines on 4 x 4 digits and a toy cell."""
    return bm_digits_merged


def test_digits_summary_numbers_come_from_the_traces(merged_digits):
    from bnnsweep.figures import load_merged
    from bnnsweep.figures.bm_digits import SETTLE, digits_summary

    ds = load_merged(merged_digits)
    summary = digits_summary(ds).set_index("label")
    assert list(summary.index) == ["digits_mf", "digits_mix"]  # the toy is not a grid run
    assert list(summary["M"]) == [1, 3]
    for r, label in enumerate(("digits_mf", "digits_mix")):
        f = ds["objective"].isel(run=r).values / 40.0  # (iteration, restart)
        assert summary.loc[label, "final_F_per_pattern"] == pytest.approx(np.median(f[-1]))
        steps = np.diff(f[SETTLE:], axis=0)
        assert summary.loc[label, "mean_abs_dF"] == pytest.approx(np.median(np.abs(steps).mean(0)))
        mu = ds["joint_means"].isel(run=r, joint_pattern=0).values[..., :16]
        mu = mu[:, :, : summary.loc[label, "M"]]  # (iteration, restart, component, unit)
        hop = np.abs(np.diff(mu, axis=0)).mean(-1)[SETTLE:]
        assert summary.loc[label, "mode_hopping"] == pytest.approx(np.median(hop.mean(axis=(0, 2))))


@pytest.mark.parametrize("kind", ["bm_digits_cost", "bm_digits_joint_means"])
def test_digits_figures_draw_from_a_merged_file(merged_digits, tmp_path, kind):
    from matplotlib.figure import Figure

    from bnnsweep.figures import FIGURES, draw, load_merged

    fig = FIGURES[kind][0](load_merged(merged_digits))
    assert isinstance(fig, Figure)
    text = _text(fig)
    assert "thesis fig. 4.8" in text or "thesis fig. 4.9" in text
    assert "STAND-IN DATA" in text and "CEDAR" in text
    assert "digits_mf" in text and "digits_mix" in text
    shown = [ax for ax in fig.axes if ax.axison]
    assert len(shown) >= 2 and all(ax.has_data() for ax in shown)
    (png,) = draw(kind, merged_digits, tmp_path / kind)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_digits_figures_without_grid_runs_are_notes(tmp_path):
    import xarray as xr

    from bnnsweep.figures.bm_digits import bm_digits_cost, bm_digits_joint_means

    for draw_kind in (bm_digits_cost, bm_digits_joint_means):
        fig = draw_kind(xr.Dataset())
        text = _text(fig)
        assert "no bm_vi grid learning runs" in text
