"""Paper 004 sec. 3, fig. 1: the sign unit's moments under a Gaussian input (the EBP unit)
against Monte Carlo over several seeds, their derivatives against finite differences, the
tails without cancellation, and method ``adf_activations``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

from bnnsweep import datasets
from bnnsweep.engines.adf.sign_moments import sign_moments
from bnnsweep.methods.adf_activations import ActivationSettings, fit
from bnnsweep.runtime.jax_runtime import jnp

MU = np.array([-2.0, -0.7, -0.1, 0.0, 0.3, 1.1, 2.5])
TAU = np.array([0.5, 2.0, 0.04, 1.0, 0.2, 3.0, 1.5])


def moments(mu, tau):
    return [np.asarray(m) for m in sign_moments(jnp.asarray(mu), jnp.asarray(tau))]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_mean_and_variance_match_monte_carlo(seed):
    """Sample mean and variance of sign(u) from 200000 draws within 4.5 standard errors (the
    variance's s.e. from the fourth central moment)."""
    rng = np.random.default_rng(seed)
    n = 200_000
    z = np.sign(MU[:, None] + np.sqrt(TAU)[:, None] * rng.standard_normal((MU.size, n)))
    mean, var = moments(MU, TAU)[:2]
    assert np.all(np.abs(z.mean(axis=1) - mean) <= 4.5 * np.sqrt(var / n))
    sample_var = z.var(axis=1)
    fourth = np.mean((z - z.mean(axis=1, keepdims=True)) ** 4, axis=1)
    assert np.all(np.abs(sample_var - var) <= 4.5 * np.sqrt((fourth - var**2) / n) + 1e-12)


def test_derivatives_match_finite_differences():
    _, _, dm_mu, dm_tau, dv_mu, dv_tau = moments(MU, TAU)
    h = 1e-6
    for d_mu, d_tau, index in ((dm_mu, dm_tau, 0), (dv_mu, dv_tau, 1)):
        up_mu, down_mu = moments(MU + h, TAU)[index], moments(MU - h, TAU)[index]
        up_tau, down_tau = moments(MU, TAU + h)[index], moments(MU, TAU - h)[index]
        np.testing.assert_allclose(d_mu, (up_mu - down_mu) / (2 * h), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(d_tau, (up_tau - down_tau) / (2 * h), rtol=1e-6, atol=1e-8)


def test_tails_keep_their_precision():
    """Var = 4 Phi(a) Phi(-a) to relative 1e-10 where 1 - E[z]^2 would cancel to 0."""
    a = np.array([-30.0, -12.0, -6.0, 6.0, 12.0, 30.0])
    mean, var = moments(a, np.ones_like(a))[:2]
    exact = 4.0 * ndtr(a) * ndtr(-a)
    np.testing.assert_allclose(var, exact, rtol=1e-10)
    assert np.all(var > 0)
    np.testing.assert_allclose(mean, np.sign(a) * (1 - 2 * ndtr(-np.abs(a))), rtol=1e-14)


def test_small_input_variance_gives_the_sign_itself():
    mean, var = moments(np.array([-0.5, 0.5]), np.array([1e-8, 1e-8]))[:2]
    np.testing.assert_array_equal(mean, [-1.0, 1.0])
    np.testing.assert_array_equal(var, [0.0, 0.0])


def test_method_checks_both_units_against_monte_carlo():
    """Over seeds, every checked point's z-score of the sample mean is below 4.5 (60 points
    a unit), and at input variance 0.01 the expected responses are within 0.003 of the
    activations 3 s.d. from the kink."""
    split = datasets.load("adf_activation_grid").split("default")
    for seed in range(3):
        result = fit(split, ActivationSettings(), np.random.default_rng(seed), log=lambda *a: None)
        d = result.diagnostics
        assert d["mc_points_sign"] == d["mc_points_relu"] == 60
        assert d["mc_max_abs_z_sign"] < 4.5 and d["mc_max_abs_z_relu"] < 4.5
        assert d["limit_gap_sign"] < 3e-3 and d["limit_gap_relu"] < 1e-4
