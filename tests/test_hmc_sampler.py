"""HMC on targets with known moments; ESS and R-hat on known processes."""

import numpy as np

from bnnsweep.engines.mcmc.diagnostics import effective_sample_size, split_rhat
from bnnsweep.engines.mcmc.hmc import sample

MEAN = np.array([1.0, -2.0])
COV = np.array([[1.0, 0.9], [0.9, 1.0]])
PREC = np.linalg.inv(COV)


def gaussian_energy(w, theta):
    d = w - MEAN
    g = d @ PREC
    return 0.5 * np.sum(g * d, axis=1), g


def test_hmc_recovers_correlated_gaussian_moments():
    rng = np.random.default_rng(0)
    chains = 8
    res = sample(
        gaussian_energy,
        rng.normal(size=(chains, 2)) * 3,
        None,
        rng,
        n_burn=300,
        n_samples=1500,
        n_leapfrog_burn=10,
        n_leapfrog=10,
        step_size=0.5,
    )
    s = res.samples.reshape(-1, 2)
    ess = min(effective_sample_size(res.samples[:, :, i].T) for i in range(2))
    assert ess > 1000
    se = np.sqrt(np.diag(COV) / ess)
    assert np.all(np.abs(s.mean(axis=0) - MEAN) < 4 * se)
    cov = np.cov(s.T)
    # standard error of a covariance entry ~ sqrt((s_ii s_jj + s_ij^2) / n)
    se_cov = np.sqrt((np.outer(np.diag(COV), np.diag(COV)) + COV**2) / ess)
    assert np.all(np.abs(cov - COV) < 4 * se_cov)
    assert 0.6 < res.accept_prob.mean() < 0.97
    assert res.divergent.sum() == 0
    assert split_rhat(res.samples[:, :, 0].T) < 1.05


def test_adaptation_stops_before_samples_are_kept():
    rng = np.random.default_rng(1)
    res = sample(
        gaussian_energy,
        np.zeros((4, 2)),
        None,
        rng,
        n_burn=50,
        n_samples=30,
        n_leapfrog_burn=5,
        n_leapfrog=5,
        step_size=0.01,
        target_accept=0.7,
    )
    # the step size moved away from its start during burn-in and is one frozen value per chain
    assert np.all(res.step_size > 0.05)
    assert res.step_size.shape == (4,)


def test_persistence_and_gibbs_keep_the_target():
    """A hierarchical target sampled by HMC on w with Gibbs on a precision: w | a ~ N(0, 1/a),
    a ~ Gamma(3, 3): marginally E[w^2] = E[1/a] = 3/2."""
    rng = np.random.default_rng(2)

    def energy(w, a):
        return 0.5 * a * np.sum(w * w, axis=1), a[:, None] * w

    def gibbs(w, a, rng):
        return rng.gamma(3.0 + 0.5, 1.0 / (3.0 + 0.5 * w[:, 0] ** 2))

    res = sample(
        energy,
        np.zeros((16, 1)),
        np.ones(16),
        rng,
        n_burn=200,
        n_samples=2000,
        n_leapfrog_burn=5,
        n_leapfrog=5,
        step_size=0.3,
        gibbs=gibbs,
        persistence=0.9,
    )
    w2 = res.samples[..., 0] ** 2
    ess = effective_sample_size(w2.T)
    assert abs(w2.mean() - 1.5) < 4 * w2.std() / np.sqrt(ess)


def test_effective_sample_size_of_ar1():
    rng = np.random.default_rng(3)
    phi, n = 0.8, 20000
    x = np.zeros((4, n))
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + rng.normal(size=4)
    expected = 4 * n * (1 - phi) / (1 + phi)
    assert abs(effective_sample_size(x) / expected - 1) < 0.15
    iid = rng.normal(size=(4, 5000))
    assert abs(effective_sample_size(iid) / 20000 - 1) < 0.15
    assert split_rhat(iid) < 1.01
    shifted = iid + np.array([[0.0], [0.0], [0.0], [3.0]])
    assert split_rhat(shifted) > 1.2
