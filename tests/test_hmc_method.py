"""The hmc method on a linear model with (nearly) fixed hyperparameters, where the weight
posterior is Gaussian and known in closed form."""

import numpy as np
import pytest
from test_laplace import linear_split

from bnnsweep.methods import get_method


@pytest.mark.parametrize(("step_scale", "thin"), [("none", 1), ("curvature", 2)])
def test_hmc_predictive_mean_matches_gaussian_posterior(step_scale, thin):
    """Also with each weight's step scaled (a mass matrix from alpha, beta and the data's
    Gauss-Newton diagonal) and thinned chains, whose every trajectory counts for the
    divergence check."""
    alpha, beta = 2.0, 10.0
    big = 1e7  # Gamma(big, big / value): a hyperprior pinned at value
    values = {
        "hidden": 0, "activation": "linear", "prior": "single",
        "hyperpriors": {"weights": {"shape": big, "rate": big / alpha}},
        "noise_hyperprior": {"shape": big, "rate": big / beta},
        "chains": 4, "burn_in": 100, "samples": 400, "leapfrog": 20, "burn_leapfrog": 20,
        "step_size": 0.05, "init": "prior", "predictive_samples": 1600,
        "step_scale": step_scale, "thin": thin,
    }  # fmt: skip
    split = linear_split(n=30)
    method = get_method("hmc")
    result = method.fit(
        split, method.settings(values), np.random.default_rng(0), log=lambda *_: None
    )
    phi = np.column_stack([split.x_train, np.ones(len(split.x_train))])
    cov = np.linalg.inv(alpha * np.eye(phi.shape[1]) + beta * phi.T @ phi)
    mean_w = beta * cov @ phi.T @ split.y_train[:, 0]
    phi_test = np.column_stack([split.x_test, np.ones(len(split.x_test))])
    exact_mean = phi_test @ mean_w
    exact_var = np.einsum("ti,ij,tj->t", phi_test, cov, phi_test) + 1 / beta
    ess = result.diagnostics["ess_data_error"]
    se = np.sqrt((exact_var - 1 / beta) / max(ess, 50))
    assert np.all(np.abs(result.pred_mean[:, 0] - exact_mean) < 5 * se)
    np.testing.assert_allclose(result.pred_var[:, 0], exact_var, rtol=0.25)
    assert result.status == "ok"
    assert 0.5 < result.diagnostics["acceptance_rate"] < 1.0
    assert abs(result.traces["sample_beta"][1].mean() / beta - 1) < 1e-2
    assert result.diagnostics["trajectories"] == 400 * thin * 4


def test_every_hyperparameter_is_checked_for_mixing():
    """A chain stuck at another alpha than the rest marks the fit, whichever hyperparameter
    it is; chains that agree do not (4 chains of 200 iid draws, several seeds)."""
    from bnnsweep.methods.hmc import RHAT_LIMIT, hyperparameter_rhats

    for seed in range(3):
        rng = np.random.default_rng(seed)
        betas = np.exp(rng.normal(2.0, 0.05, (200, 4)))
        alphas = np.exp(rng.normal(0.0, 0.1, (200, 4, 2)))
        rhat, rhat_alpha, slow = hyperparameter_rhats(
            betas, alphas, ("input_hidden", "hidden_output")
        )
        assert slow == [] and rhat < RHAT_LIMIT and max(rhat_alpha) < RHAT_LIMIT
        alphas[:, 0, 1] *= 2.0  # one chain's hidden-output alpha in another place
        rhat, rhat_alpha, slow = hyperparameter_rhats(
            betas, alphas, ("input_hidden", "hidden_output")
        )
        assert rhat < RHAT_LIMIT and rhat_alpha[0] < RHAT_LIMIT < rhat_alpha[1]
        assert len(slow) == 1 and slow[0].startswith("ln alpha_hidden_output ")


def test_cost_model_counts_the_thinned_out_trajectories():
    """Every trajectory after burn-in runs whether it is kept or not: thin 5 costs five times
    the sampling steps of thin 1 (Tecator's cells were planned at 0.43 of their CPU)."""
    from bnnsweep.methods.hmc import work

    method = get_method("hmc")
    base = {"burn_in": 100, "burn_leapfrog": 20, "samples": 200, "leapfrog": 20}
    one = work(method.settings(base), 100, 10, 1, 50).gradient_calls
    five = work(method.settings({**base, "thin": 5}), 100, 10, 1, 50).gradient_calls
    assert five - one == 200 * 4 * 20
