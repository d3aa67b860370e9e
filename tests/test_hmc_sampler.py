"""The compiled HMC kernel on targets with known moments; its invariance, reversibility and
bookkeeping; ESS and R-hat (arviz-stats) on processes with known values."""

import numpy as np
import pytest
from scipy import stats

from bnnsweep.engines.mcmc import hmc
from bnnsweep.engines.mcmc.diagnostics import effective_sample_size, split_rhat
from bnnsweep.engines.mcmc.hmc import sample
from bnnsweep.runtime.jax_runtime import jax, jnp

MEAN = np.array([1.0, -2.0])
COV = np.array([[1.0, 0.9], [0.9, 1.0]])
PREC = np.linalg.inv(COV)
SEEDS = (0, 1, 2)


def gaussian(params, theta, w):
    d = w - MEAN
    return 0.5 * d @ jnp.asarray(PREC) @ d


def skewed(params, theta, w):
    """U = w^4 / 4 + e^w / 2 in one dimension: a skewed, non-Gaussian target."""
    return jnp.sum(0.25 * w**4 + 0.5 * jnp.exp(w))


def skewed_draws(rng, n):
    """Exact draws from exp(-U) of ``skewed`` by inverting its CDF on a fine grid, and the
    exact E[w] and E[w^2]."""
    grid = np.linspace(-6.0, 6.0, 200_001)
    dens = np.exp(-(0.25 * grid**4 + 0.5 * np.exp(grid)))
    cdf = np.cumsum(dens)
    cdf /= cdf[-1]
    moments = [np.sum(grid**k * dens) / np.sum(dens) for k in (1, 2)]
    return np.interp(rng.uniform(size=n), cdf, grid), moments


@pytest.mark.parametrize("seed", SEEDS)
def test_hmc_recovers_correlated_gaussian_moments(seed):
    rng = np.random.default_rng(seed)
    chains = 8
    res = sample(
        gaussian, rng.normal(size=(chains, 2)) * 3, None, None, jax.random.key(seed),
        n_burn=300, n_samples=1500, n_leapfrog_burn=10, n_leapfrog=10, step_size=0.5,
    )  # fmt: skip
    s = res.samples.reshape(-1, 2)
    ess = min(effective_sample_size(res.samples[:, :, i].T) for i in range(2))
    assert ess > 1000
    se = np.sqrt(np.diag(COV) / ess)
    assert np.all(np.abs(s.mean(axis=0) - MEAN) < 4 * se)
    cov = np.cov(s.T)
    # standard error of a covariance entry ~ sqrt((s_ii s_jj + s_ij^2) / n), n the ESS of the
    # products (the trajectory is half a period of the wide direction: the mean is estimated
    # antithetically, far better than the second moments)
    d = res.samples - MEAN
    ess_cov = np.array([[effective_sample_size((d[..., i] * d[..., j]).T) for j in range(2)]
                        for i in range(2)])  # fmt: skip
    assert ess_cov.min() > 500
    se_cov = np.sqrt((np.outer(np.diag(COV), np.diag(COV)) + COV**2) / ess_cov)
    assert np.all(np.abs(cov - COV) < 4 * se_cov)
    assert 0.6 < res.accept_prob.mean() < 0.97
    assert res.divergent.sum() == 0
    assert split_rhat(res.samples[:, :, 0].T) < 1.05
    assert res.samples.shape == (1500, chains, 2) and res.energy.shape == (1500, chains)
    np.testing.assert_allclose(
        res.energy, 0.5 * np.einsum("sbi,ij,sbj->sb", res.samples - MEAN, PREC, res.samples - MEAN)
    )
    # one gradient at the start, then L per iteration and chain
    assert res.n_grad_evals == chains * (1 + 10 * 1800)


def test_adaptation_stops_before_samples_are_kept():
    res = sample(
        gaussian, np.zeros((4, 2)), None, None, jax.random.key(1),
        n_burn=50, n_samples=30, n_leapfrog_burn=5, n_leapfrog=5, step_size=0.01,
        target_accept=0.7,
    )  # fmt: skip
    # the step size moved away from its start during burn-in and is one frozen value per chain
    assert np.all(res.step_size > 0.05)
    assert res.step_size.shape == (4,)
    assert res.burn_accept.shape == (50, 4)
    fixed = sample(
        gaussian, np.zeros((4, 2)), None, None, jax.random.key(1),
        n_burn=50, n_samples=30, n_leapfrog_burn=5, n_leapfrog=5, step_size=0.01, adapt=False,
    )  # fmt: skip
    np.testing.assert_array_equal(fixed.step_size, 0.01)


@pytest.mark.parametrize("seed", SEEDS)
def test_persistence_and_gibbs_keep_the_target(seed):
    """A hierarchical target sampled by HMC on w with Gibbs on a precision: w | a ~ N(0, 1/a),
    a ~ Gamma(3, 3): marginally E[w^2] = E[1/a] = 3/2."""

    def potential(params, a, w):
        return 0.5 * a * jnp.sum(w * w)

    def gibbs(key, params, w, a):
        return jax.random.gamma(key, 3.0 + 0.5) / (3.0 + 0.5 * w[0] ** 2)

    res = sample(
        potential, np.zeros((16, 1)), np.ones(16), None, jax.random.key(seed),
        n_burn=200, n_samples=2000, n_leapfrog_burn=5, n_leapfrog=5, step_size=0.3,
        gibbs=gibbs, persistence=0.9,
    )  # fmt: skip
    w2 = res.samples[..., 0] ** 2
    ess = effective_sample_size(w2.T)
    assert abs(w2.mean() - 1.5) < 4 * w2.std() / np.sqrt(ess)
    assert res.thetas.shape == (2000, 16)
    # E[a] = 3 / 3 marginally
    assert abs(res.thetas.mean() - 1.0) < 4 * res.thetas.std() / np.sqrt(
        effective_sample_size(res.thetas.T)
    )
    # the Gibbs step costs one extra gradient per iteration
    assert res.n_grad_evals == 16 * (1 + 6 * 2200)


def _persistent_run(seed, n=4000):
    rng = np.random.default_rng(seed)
    w0, moments = skewed_draws(rng, n)
    res = sample(
        skewed, w0[:, None], None, None, jax.random.key(seed),
        n_burn=0, n_samples=30, n_leapfrog_burn=3, n_leapfrog=3, step_size=1.2,
        persistence=0.95, adapt=False,
    )  # fmt: skip
    return res, skewed_draws(rng, 100_000)[0], moments


@pytest.mark.parametrize("seed", SEEDS)
def test_kernel_leaves_the_target_invariant_with_persistence(seed):
    """Detailed balance with momentum negation: 4000 chains started from exact draws of a
    skewed target, run with persistent momenta (decay 0.95) and a step size that rejects
    often, stay distributed as the target (Kolmogorov-Smirnov after 30 iterations; first
    and second moments over all 30)."""
    res, ref, (m1, m2) = _persistent_run(seed)
    assert 0.2 < res.accept_prob.mean() < 0.8  # rejections happen
    x = res.samples[..., 0]
    assert stats.ks_2samp(x[-1], ref).pvalue > 1e-3
    assert abs(x.mean() - m1) < 0.03
    assert abs(np.mean(x**2) / m2 - 1) < 0.04


def test_momentum_negation_is_what_keeps_persistent_chains_exact(monkeypatch):
    """The invariance test above can fail: the same runs with a mutated kernel that keeps
    the momentum on rejection instead of negating it drift away from the target."""

    def mutated_transition(*args, **kwargs):
        new, info = original(*args, **kwargs)
        return new._replace(p=jnp.where(info.accepted, new.p, -new.p)), info

    original = hmc.transition
    monkeypatch.setattr(hmc, "transition", mutated_transition)
    hmc._programs.cache_clear()
    try:
        for seed in SEEDS:
            res, ref, (m1, m2) = _persistent_run(seed)
            x = res.samples[..., 0]
            assert stats.ks_2samp(x[-1], ref).pvalue < 1e-6
            assert abs(np.mean(x**2) / m2 - 1) > 0.1
    finally:
        hmc._programs.cache_clear()


def _hierarchical_mass_run(seed, n=4000):
    """``n`` chains started at exact draws of a ~ Gamma(3, 3), w | a ~ N(0, 1/a) (w marginally
    Student t, 6 degrees of freedom), run 30 iterations of Gibbs on a, persistent momenta
    (decay 0.95) and the mass M(a) = a, which changes with every Gibbs draw."""
    rng = np.random.default_rng(seed)
    a0 = rng.gamma(3.0, 1.0 / 3.0, n)
    w0 = rng.normal(size=n) / np.sqrt(a0)

    def potential(params, a, w):
        return 0.5 * a * jnp.sum(w * w)

    def gibbs(key, params, w, a):
        return jax.random.gamma(key, 3.0 + 0.5) / (3.0 + 0.5 * w[0] ** 2)

    return sample(
        potential, w0[:, None], a0, None, jax.random.key(seed),
        n_burn=0, n_samples=30, n_leapfrog_burn=3, n_leapfrog=3, step_size=0.9,
        gibbs=gibbs, persistence=0.95, adapt=False, mass=lambda params, a: jnp.full(1, a),
    )  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
def test_mass_that_moves_with_gibbs_keeps_the_target_with_persistence(seed):
    """A diagonal mass M(theta) redrawn with the hyperparameters, with partial momentum
    refresh: the kept momentum is carried as M^-1/2 p, so the joint stays exact (chains
    started from exact draws stay distributed as the target: KS on w and on a)."""
    res = _hierarchical_mass_run(seed)
    assert 0.5 < res.accept_prob.mean() < 0.99
    w, a = res.samples[-1, :, 0], res.thetas[-1]
    assert stats.kstest(w, stats.t(6).cdf).pvalue > 1e-3
    assert stats.kstest(a, stats.gamma(3.0, scale=1.0 / 3.0).cdf).pvalue > 1e-3


def test_carrying_the_momentum_unwhitened_breaks_the_target(monkeypatch):
    """The test above can fail: a kernel that keeps p itself across a change of M (p then
    has covariance M(theta_old), not M(theta_new)) drifts away from the target."""

    def mutated_transition(key, state, params, step, consts, **kwargs):
        mass, gibbs = kwargs["mass"], kwargs["gibbs"]
        theta = gibbs(jax.random.split(key, 4)[0], params, state.w, state.theta)
        # undo the rescaling the kernel will make, so that p passes through unchanged
        ratio = jnp.sqrt(mass(params, theta) / mass(params, state.theta))
        return original(key, state._replace(p=state.p / ratio), params, step, consts, **kwargs)

    original = hmc.transition
    monkeypatch.setattr(hmc, "transition", mutated_transition)
    hmc._programs.cache_clear()
    try:
        for seed in SEEDS:
            res = _hierarchical_mass_run(seed)
            w = res.samples[-1, :, 0]
            assert stats.kstest(w, stats.t(6).cdf).pvalue < 1e-6
    finally:
        hmc._programs.cache_clear()


def test_leapfrog_is_reversible_and_volume_preserving():
    """L steps forward, momentum negated, L steps forward again: back at the start."""

    def value_and_grad(w):
        return jax.value_and_grad(lambda v: skewed(None, None, v) + 0.5 * jnp.sum(v * v))(w)

    w = jnp.array([0.3, -1.1, 2.0])
    p = jnp.array([1.0, 0.2, -0.5])
    _, g = value_and_grad(w)
    w1, p1, _, g1 = hmc.leapfrog(value_and_grad, w, p, g, 0.05, 40)
    w2, p2, _, _ = hmc.leapfrog(value_and_grad, w1, -p1, g1, 0.05, 40)
    np.testing.assert_allclose(w2, w, atol=1e-12)
    np.testing.assert_allclose(-p2, p, atol=1e-12)
    # unit Jacobian: det d(w1, p1)/d(w, p) = 1
    jac = jax.jacfwd(
        lambda z: jnp.concatenate(
            hmc.leapfrog(value_and_grad, z[:3], z[3:], value_and_grad(z[:3])[1], 0.05, 40)[:2]
        )
    )(jnp.concatenate([w, p]))
    assert abs(np.linalg.det(np.asarray(jac)) - 1.0) < 1e-9


@pytest.mark.parametrize("seed", SEEDS)
def test_per_chain_params_and_burn_in_schedule(seed):
    """Each chain samples its own N(0, 1/lambda_b); during burn-in ``burn_params`` moves the
    target's centre from 5 back to 0, which must leave no trace in the kept samples."""
    lam = np.array([0.25, 1.0, 4.0, 16.0])

    def potential(params, theta, w):
        return 0.5 * params["lam"] * jnp.sum((w - params["centre"]) ** 2)

    def burn_params(it, params):
        return {"lam": params["lam"], "centre": 5.0 * jnp.maximum(0.0, 1.0 - it / 100.0)}

    params = {"lam": lam, "centre": np.zeros(4)}
    res = sample(
        potential, np.full((4, 3), 5.0), None, params, jax.random.key(seed),
        n_burn=200, n_samples=2000, n_leapfrog_burn=8, n_leapfrog=8, step_size=0.2,
        burn_params=burn_params,
    )  # fmt: skip
    # the three coordinates of a chain are independent draws: pool them as three "chains"
    per_chain = [res.samples[:, b, :].T for b in range(4)]
    ess_w = np.array([effective_sample_size(w) for w in per_chain])
    # HMC with a fixed path length can be antithetic for w (ESS > n) but not for w^2, so the
    # second moment needs its own ESS; its relative standard error is sqrt(2 / ESS(w^2))
    ess_w2 = np.array([effective_sample_size(w**2) for w in per_chain])
    second_moment = np.mean(res.samples**2, axis=(0, 2))
    assert np.all(np.abs(second_moment * lam - 1.0) < 4 * np.sqrt(2.0 / ess_w2))
    assert np.all(np.abs(res.samples.mean(axis=(0, 2))) < 4 / np.sqrt(lam * ess_w))
    # step sizes follow the per-chain scale 1/sqrt(lambda)
    assert np.all(np.diff(res.step_size) < 0)
    np.testing.assert_allclose(res.energy, 0.5 * lam * np.sum(res.samples**2, axis=2))
    # a recomputed gradient per burn-in iteration, one more before the first kept one
    assert res.n_grad_evals == 4 * (1 + 200 * 9 + 1 + 2000 * 8)


def test_chunked_logging_and_thinning_change_no_number():
    kwargs = dict(
        n_burn=37, n_samples=23, n_leapfrog_burn=4, n_leapfrog=6, step_size=0.3,
        persistence=0.5,
    )  # fmt: skip
    lines = []
    quiet = sample(gaussian, np.ones((3, 2)), None, None, jax.random.key(7), thin=3, **kwargs)
    logged = sample(
        gaussian, np.ones((3, 2)), None, None, jax.random.key(7), thin=3, log=lines.append,
        **kwargs,
    )  # fmt: skip
    assert len(lines) >= 10 and lines[-1].startswith("  hmc iteration 106/106")
    for name in ("samples", "energy", "accept_prob", "burn_accept", "step_size"):
        np.testing.assert_array_equal(getattr(quiet, name), getattr(logged, name))
    # thinning keeps every third iteration of the unthinned run
    full = sample(gaussian, np.ones((3, 2)), None, None, jax.random.key(7), thin=1,
                  **{**kwargs, "n_samples": 69})  # fmt: skip
    np.testing.assert_array_equal(quiet.samples, full.samples[2::3])
    np.testing.assert_array_equal(quiet.energy_error, full.energy_error[2::3])


def test_chains_in_groups_change_no_number_beyond_rounding():
    """7 chains with per-chain params, per-chain theta and burn-in params, run 3 at a time
    (groups of 3, 3 and 1 padded to 3) and all at once: the same draws, step sizes and
    counts."""

    def potential(params, theta, w):
        return 0.5 * params * theta * jnp.sum(w * w)

    def burn_params(it, params):
        return params * jnp.minimum(1.0, (it + 1.0) / 10.0)

    lam = np.linspace(0.2, 1.0, 7)
    runs = [
        sample(
            potential,
            np.ones((7, 2)),
            np.linspace(1.0, 2.0, 7),
            lam,
            jax.random.key(3),
            n_burn=20,
            n_samples=30,
            n_leapfrog_burn=3,
            n_leapfrog=5,
            step_size=0.3,
            burn_params=burn_params,
            group=group,
        )  # fmt: skip
        for group in (None, 3)
    ]
    for name in ("samples", "energy", "burn_accept", "step_size"):
        np.testing.assert_allclose(getattr(runs[1], name), getattr(runs[0], name), rtol=1e-9)
    np.testing.assert_array_equal(runs[1].accepted, runs[0].accepted)
    assert runs[1].n_grad_evals == runs[0].n_grad_evals
    # the default sizes groups by what a chain's gradient makes: small targets, one group
    assert hmc.chains_per_group(potential, jnp.asarray(lam), jnp.ones(7), jnp.ones((7, 2)), 0) > 7


def test_divergent_trajectories_are_rejected_and_counted():
    """A step size far beyond the stability limit of a stiff Gaussian: every trajectory
    explodes, is rejected and counted; the chains stay where they started."""

    def stiff(params, theta, w):
        return 0.5 * 1e6 * jnp.sum(w * w)

    w0 = np.full((2, 3), 1e-3)
    res = sample(
        stiff, w0, None, None, jax.random.key(0),
        n_burn=5, n_samples=10, n_leapfrog_burn=50, n_leapfrog=50, step_size=1.0, adapt=False,
    )  # fmt: skip
    np.testing.assert_array_equal(res.divergent, [10, 10])
    np.testing.assert_array_equal(res.divergent_burn, [5, 5])
    assert not res.accepted.any() and np.all(res.accept_prob == 0)
    np.testing.assert_array_equal(res.samples, np.broadcast_to(w0, res.samples.shape))
    assert np.all(np.isinf(res.energy_error) | (res.energy_error > 1000))


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
    assert abs(effective_sample_size(iid, method="tail") / 20000 - 1) < 0.25
    assert split_rhat(iid) < 1.01
    shifted = iid + np.array([[0.0], [0.0], [0.0], [3.0]])
    assert split_rhat(shifted) > 1.2
    # rank-normalised: a scale difference between chains is caught (folded R-hat)
    scaled = iid * np.array([[1.0], [1.0], [1.0], [4.0]])
    assert split_rhat(scaled) > 1.05
    assert np.isnan(effective_sample_size(iid[:, :3]))
    assert effective_sample_size(np.ones((2, 10))) == 20.0
