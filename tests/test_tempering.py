"""Parallel tempering (engines.evidence.tempering): the tempered distributions every rung
samples, the ladder placement, the round-trip count and the status diagnostics. Its ln Z
against known answers is in test_evidence_known_answers."""

import numpy as np
import pytest

from bnnsweep.engines.evidence import tempering
from bnnsweep.engines.evidence.known_answers import LinearGaussianTarget, problem


def _small_regression(d=3, n=12, alpha=1.0, beta=4.0):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((n, d))
    return LinearGaussianTarget(
        x, x @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n), alpha, beta
    )


def _exact_mean_phi(target, lam):
    """E_lambda[phi] of the tempered Gaussian posterior: precision A = alpha I + lambda beta
    X^T X, mean A^-1 lambda beta X^T t; E[phi] = beta/2 (|t - X mu|^2 + tr(X A^-1 X^T)) + c."""
    x, t, a, b = target.x, target.t, target.alpha, target.beta
    prec = a * np.eye(x.shape[1]) + lam * b * x.T @ x
    cov = np.linalg.inv(prec)
    mu = cov @ (lam * b * x.T @ t)
    c = -0.5 * len(t) * np.log(b / (2 * np.pi))
    return 0.5 * b * (np.sum((t - x @ mu) ** 2) + np.trace(x @ cov @ x.T)) + c


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_rung_samples_its_tempered_distribution(seed):
    """Swaps and HMC leave every p_lambda invariant: the mean of phi at each rung matches
    the Gaussian closed form: every rung within 4.5 s.e. and the mean squared z-score below
    3 (1 expected; s.e. from the spread over 16 replicate ladders, so z is Student-t with
    15 degrees of freedom)."""
    target = _small_regression()
    settings = tempering.TemperingSettings(
        rungs=8, replicates=16, burn_in=300, samples=600, leapfrog=8, step_size=0.2
    )
    run = tempering.run_tempering(target, settings, np.random.default_rng([50, seed]))
    per_replicate = run.phi.mean(axis=2)  # (L, R)
    mean = per_replicate.mean(axis=1)
    se = per_replicate.std(axis=1, ddof=1) / np.sqrt(per_replicate.shape[1])
    exact = np.array([_exact_mean_phi(target, lam) for lam in run.ladder])
    z = (mean - exact) / se
    assert np.all(np.abs(z) < 4.5) and np.mean(z**2) < 3.0, z
    assert run.swap_accept.min() > 0.05
    assert run.posterior_samples.shape == (600, 16, 3)


def test_ladder_is_placed_for_equal_rejection():
    """Without the floor, a ladder whose pairs reject unevenly is moved so that each new
    interval carries the same barrier; with it, half the rungs keep the initial spacing."""
    old = tempering.initial_ladder(6, 1.0)  # 0, .2, .4, .6, .8, 1
    rejection = np.array([0.0, 0.0, 0.0, 0.0, 1.0])  # all the barrier in (0.8, 1)
    new = tempering.replace_ladder(old, rejection, power=1.0, floor=0.0)
    assert new[0] == 0.0 and new[-1] == 1.0 and np.all(np.diff(new) > 0)
    assert np.all(new[1:-1] > 0.79)  # the inner rungs move into the barrier
    kept = tempering.replace_ladder(old, rejection, power=1.0, floor=1.0)
    np.testing.assert_allclose(kept, old, atol=1e-12)
    half = tempering.replace_ladder(old, rejection, power=1.0, floor=0.5)
    assert np.sum(half < 0.8) >= 2 and np.sum((half > 0.8) & (half < 1)) >= 2


def test_round_trips_count_bottom_top_bottom():
    """Two rungs, two labels swapping every iteration: label 0's rung path 0, 1, 0, 1, 0
    holds two round trips, label 1's path 1, 0, 1, 0, 1 one (its first visit to rung 0 is
    the second iteration); a ladder that stops swapping adds none."""
    swapping = np.array([[0, 1], [1, 0], [0, 1], [1, 0], [0, 1]])[:, None, :]
    assert tempering.round_trips(swapping).tolist() == [3]
    still = np.tile(np.array([0, 1]), (5, 1, 1))
    assert tempering.round_trips(still).tolist() == [0]


def test_too_few_rungs_is_flagged_not_converged():
    """Three rungs across the linear regression's 75-nat information gain cannot swap: the
    estimate says so instead of reporting a number as ok."""
    target = problem("linear_gaussian").target
    settings = tempering.TemperingSettings(
        rungs=3, replicates=2, burn_in=50, samples=100, leapfrog=5, step_size=0.05
    )
    est = tempering.estimate(target, settings, np.random.default_rng(0))
    assert est.status == "not_converged"
    assert "swap acceptance" in est.reason and "round trips" in est.reason


def test_cost_counts_every_batched_gradient():
    s = tempering.TemperingSettings(rungs=10, replicates=3, burn_in=100, samples=200, leapfrog=7)
    grads, batch = tempering.cost(s)
    assert grads == 300 * 3 * (9 * 8 + 10) and batch == 30


@pytest.mark.parametrize(
    "bad", [{"rungs": 2}, {"replicates": 1}, {"samples": 0}, {"step_size": 0.0}]
)
def test_settings_refuse_bad_values(bad):
    with pytest.raises(ValueError):
        tempering.TemperingSettings(**bad).validate()
