"""Saul et al.'s bound and mean field for sigmoid belief nets (thesis 2.12-2.18, App. A)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnnsweep.engines.sbn.saul_bound import (
    _xi_objective_slope_curvature,
    clamp_visible,
    fit_mean_field,
    mean_field_bound,
    mean_field_log_odds,
    optimal_xi,
    softplus_upper_bound,
)
from bnnsweep.models.sigmoid_belief import (
    exact_expected_softplus,
    exact_log_marginal,
    random_layered_sbn,
)

seeds = st.integers(0, 2**31 - 1)
spans = st.floats(0.1, 4.0)


def _random_problem(seed, span, n_nets=20, layers=(2, 4, 6)):
    rng = np.random.default_rng(seed)
    net = random_layered_sbn(layers, n_nets, span, rng)
    visible = (rng.random(layers[-1]) < 0.5).astype(float)
    return rng, net, visible


@settings(max_examples=30, deadline=None)
@given(seed=seeds, span=spans)
def test_saul_bound_212_is_above_the_exact_softplus_termwise(seed, span):
    rng, net, visible = _random_problem(seed, span, layers=(2, 3, 3))
    mu = clamp_visible(rng.random((20, net.n_hidden)), visible)
    xi = rng.normal(0.5, 2.0, size=(20, net.n_units))  # arbitrary, not optimised
    upper = np.asarray(softplus_upper_bound(mu, xi, net.weights, net.biases))
    exact = exact_expected_softplus(np.asarray(mu), net.weights, net.biases)
    assert np.all(upper >= exact - 1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=seeds, span=spans)
def test_mean_field_bound_is_below_exact_log_marginal_for_arbitrary_parameters(seed, span):
    rng, net, visible = _random_problem(seed, span)
    mu = clamp_visible(rng.random((20, net.n_hidden)), visible)
    xi = rng.normal(0.5, 2.0, size=(20, net.n_units))
    bound = np.asarray(mean_field_bound(mu, xi, net.weights, net.biases, net.n_hidden))
    exact = exact_log_marginal(net, visible)[:, 0]
    assert np.all(bound <= exact + 1e-12)


def test_point_mass_mean_field_is_exact_log_joint():
    # mu at a corner: z is deterministic, 2.12 is tight for every xi, no entropy
    rng, net, visible = _random_problem(0, 2.0)
    h = (rng.random((20, net.n_hidden)) < 0.5).astype(float)
    mu = clamp_visible(h, visible)
    xi = rng.normal(size=(20, net.n_units))
    from bnnsweep.models.sigmoid_belief import log_joint

    exact = log_joint(net.weights, net.biases, np.asarray(mu)[:, None, :])[:, 0]
    np.testing.assert_allclose(
        mean_field_bound(mu, xi, net.weights, net.biases, 6), exact, atol=1e-10
    )


@pytest.mark.parametrize("seed,span", [(0, 1.0), (1, 3.0), (2, 0.5)])
def test_xi_search_finds_the_grid_maximum(seed, span):
    rng, net, visible = _random_problem(seed, span, n_nets=50)
    mu = clamp_visible(rng.random((50, net.n_hidden)), visible)
    xi = optimal_xi(mu, rng.random((50, 12)), net.weights, net.biases)
    t_opt, slope, _ = _xi_objective_slope_curvature(mu, xi, net.weights, net.biases)
    grid = np.broadcast_to(np.linspace(-0.5, 1.5, 401)[:, None, None], (401, 50, 12))
    t_grid, _, _ = _xi_objective_slope_curvature(
        mu[None], grid, net.weights[None], net.biases[None]
    )
    assert np.all(np.asarray(t_opt) >= np.asarray(t_grid).max(0) - 1e-12)
    assert np.max(np.abs(slope)) < 1e-9


@pytest.mark.parametrize("seed,span", [(0, 1.0), (1, 4.0), (2, 2.0)])
def test_coordinate_updates_never_lower_the_bound(seed, span):
    rng, net, visible = _random_problem(seed, span, n_nets=100)
    w, b, n_h = net.weights, net.biases, net.n_hidden
    mu = clamp_visible(rng.random((100, n_h)), visible)
    xi = rng.normal(size=(100, 12))
    prev = np.asarray(mean_field_bound(mu, xi, w, b, n_h))
    for _ in range(4):
        xi = optimal_xi(mu, xi, w, b)
        cur = np.asarray(mean_field_bound(mu, xi, w, b, n_h))
        assert np.all(cur >= prev - 1e-12)
        prev = cur
        for k in range(n_h):
            mu = mu.at[:, k].set(1 / (1 + np.exp(-mean_field_log_odds(mu, xi, w, b, k, "saul"))))
            cur = np.asarray(mean_field_bound(mu, xi, w, b, n_h))
            assert np.all(cur >= prev - 1e-12)
            prev = cur


@pytest.mark.parametrize("form", ["saul", "thesis"])
def test_fit_converges_to_a_stationary_point_below_the_exact_value(form):
    rng, net, visible = _random_problem(7, 1.0, n_nets=40)
    st_ = fit_mean_field(
        net.weights, net.biases, visible, rng.random((40, 6)), rng.random((40, 12)), form=form
    )
    exact = exact_log_marginal(net, visible)[:, 0]
    assert np.all(st_.bound <= exact + 1e-12)
    assert st_.sweeps < 500
    if form == "saul":  # fixed point of 2.18: the bound is stationary in every hidden mu
        h = 1e-6
        for k in range(6):
            up, dn = st_.mu.copy(), st_.mu.copy()
            up[:, k] += h
            dn[:, k] -= h
            grad = (
                mean_field_bound(up, st_.xi, net.weights, net.biases, 6)
                - mean_field_bound(dn, st_.xi, net.weights, net.biases, 6)
            ) / (2 * h)
            assert np.max(np.abs(grad)) < 1e-5
