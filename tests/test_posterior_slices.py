"""Thesis figs. 5.4-5.5 (method ``posterior_slices``): the slices are what they claim to be,
the mutual information sits between the bound and its ceiling, and both figures draw."""

from __future__ import annotations

import numpy as np
import pytest

from bnnsweep import datasets
from bnnsweep.methods.posterior_slices import (
    PosteriorSlicesSettings,
    laplace_slices,
    mixture_log_density,
    mutual_information,
)


def toy_objective(hidden=3):
    split = datasets.load("toy_sine_gap").split("default")
    return PosteriorSlicesSettings(hidden=hidden).build(split)[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_laplace_slice_is_the_true_slice_to_second_order(seed):
    """Along each eigenvector u of A the true curve -(M(w + t u) - M(w)) has second
    derivative -u^T A u = -1/variance (at any w: the gradient does not enter the curvature),
    which is the approximation's parabola; checked by a central second difference."""
    objective = toy_objective()
    rng = np.random.default_rng(seed)
    w = rng.normal(0.0, 0.7, objective.network.n_weights)
    alpha, beta = rng.uniform(0.05, 1.0, objective.prior.n_groups), 80.0
    A = objective.hessian(w[None, :], alpha, beta)[0]
    A = A + (1.0 - min(0.0, np.linalg.eigvalsh(A).min())) * np.eye(len(w))  # positive definite
    variances, t, true, approx = laplace_slices(objective, w, alpha, beta, A, 3, 1e-3)
    assert np.all(np.diff(variances) <= 0)  # largest variance first
    assert np.allclose(true[:, 1], 0.0) and np.allclose(approx[:, 1], 0.0)
    h = t[:, 2]
    vectors = np.linalg.eigh(A)[1]
    curvature = np.einsum("wi,wv,vi->i", vectors, objective.hessian(w[None, :], alpha, beta)[0],
                          vectors)  # fmt: skip
    second = (true[:, 0] - 2 * true[:, 1] + true[:, 2]) / h**2
    assert np.allclose(second, -curvature, rtol=1e-4, atol=1e-3 * np.abs(curvature).max())
    assert np.allclose((approx[:, 0] - 2 * approx[:, 1] + approx[:, 2]) / h**2, -1 / variances)


def test_mixture_density_and_mutual_information_against_known_answers():
    """ln q against scipy's normal densities; I(m; w) is -sum Q ln Q for components far
    apart and 0 for identical ones (Monte Carlo within 4 s.e.)."""
    from scipy.stats import multivariate_normal

    rng = np.random.default_rng(3)
    W, log_Q = 3, np.log([0.2, 0.3, 0.5])
    comp = np.concatenate([rng.normal(0, 1, (3, W)), np.log(rng.uniform(0.3, 1.0, (3, W)))], 1)
    w = rng.normal(0, 1, (5, W))
    expected = np.log(sum(np.exp(lq) * multivariate_normal(c[:W], np.diag(np.exp(2 * c[W:]))).pdf(w)
                          for lq, c in zip(log_Q, comp, strict=True)))  # fmt: skip
    assert np.allclose(mixture_log_density(w, log_Q, comp), expected, rtol=1e-10)
    apart = comp.copy()
    apart[:, :W] = np.array([[0.0], [100.0], [200.0]])
    value, se = mutual_information(log_Q, apart, 500, rng)
    assert value == pytest.approx(-np.sum(np.exp(log_Q) * log_Q), abs=1e-9)
    same = np.repeat(comp[:1], 3, axis=0)
    value, se = mutual_information(log_Q, same, 500, rng)
    assert abs(value) < 1e-12


def test_the_fit_brackets_its_mutual_information(posterior_slices_merged_path):
    """I* (the bound the mixture is trained on) <= I(m; w) <= -sum Q ln Q (thesis sec.
    5.5.1's lower and minimum-overlap upper bounds), Monte Carlo within 4 s.e."""
    from bnnsweep.figures import load_merged

    ds = load_merged(posterior_slices_merged_path).isel(run=0)
    bound, limit = (
        float(ds["diag_mutual_information_bound"]),
        float(ds["diag_mutual_information_limit"]),
    )
    mc, se = float(ds["diag_mutual_information_mc"]), float(ds["diag_mutual_information_mc_se"])
    assert bound <= mc + 4 * se and mc <= limit + 4 * se
    assert limit <= np.log(ds.sizes["component"]) + 1e-12


@pytest.mark.parametrize(("kind", "panels"), [("laplace_slices", 10), ("mixture_slices", 3)])
def test_the_figures_draw_a_panel_per_direction_and_pair(
    kind, panels, posterior_slices_merged_path
):
    """Fig. 5.4: one panel per weight (3 hidden units: 10 weights); fig. 5.5: one per pair of
    the 3 components; each with the true and the approximate curve."""
    from bnnsweep.figures import FIGURES, load_merged

    fig = FIGURES[kind][0](load_merged(posterior_slices_merged_path))
    drawn = [ax for ax in fig.axes if ax.axison]
    finite = np.isfinite(load_merged(posterior_slices_merged_path)["laplace_slice_variance"])
    expected = int(finite.sum()) if kind == "laplace_slices" else panels
    assert len(drawn) == expected and expected <= panels
    assert all(len(ax.lines) >= 2 for ax in drawn)
    assert "Thesis fig. 5." in fig._suptitle.get_text()
