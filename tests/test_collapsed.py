"""The chaining target with the output layer integrated out (``models.collapsed``): its
likelihood against the N x N Gaussian marginal and against Monte Carlo over the output
weights of the full network, its evidence against the full target's, its symmetries."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from bnnsweep.models.collapsed import CollapsedModel
from bnnsweep.models.marginal import MarginalModel
from bnnsweep.models.network import Network
from bnnsweep.models.objective import PenalisedError
from bnnsweep.models.priors import GammaPrior, make_prior
from bnnsweep.runtime.jax_runtime import jax, jnp

HYPER = {
    "input_hidden": {"shape": 2.0, "rate": 2.0},
    "hidden_bias": {"shape": 2.0, "rate": 2.0},
    "hidden_output": {"shape": 2.0, "rate": 1.0},
    "output_bias": {"shape": 2.0, "rate": 1.0},
}


def problem(n=6, inputs=1, hidden=1, outputs=1, kind="grouped", seed=0, activation="tanh"):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, size=(n, inputs))
    t = np.tanh(x @ np.ones((inputs, outputs))) + 0.3 * rng.standard_normal((n, outputs))
    net = Network(inputs, hidden, outputs, activation)
    objective = PenalisedError(net, make_prior(net, kind, HYPER), x, t)
    return objective, GammaPrior(2.0, 0.5)


def thetas(model, n, seed):
    nc = model.noncentred()
    u = nc.sample(n, np.random.default_rng(seed))
    return np.asarray(jax.vmap(nc.weights)(jnp.asarray(u)))


def features(objective, theta, n_first):
    net = objective.network
    H, I = net.n_hidden, net.n_inputs
    w1, b1 = theta[: H * I].reshape(H, I), theta[H * I : n_first]
    a = objective.x @ w1.T + b1
    z = np.tanh(a) if net.activation_name == "tanh" else a
    return np.c_[z, np.ones(len(objective.x))]


@pytest.mark.parametrize("kind", ["grouped", "ard"])
def test_likelihood_is_the_gaussian_marginal_of_the_outputs(kind):
    objective, noise = problem(n=40, inputs=2, hidden=3, outputs=2, kind=kind)
    model = CollapsedModel(objective, noise)
    n1 = model.n_first
    for theta in thetas(model, 5, seed=1):
        av, ac, beta = np.exp(theta[n1:])
        psi = features(objective, theta, n1)
        prior_var = np.r_[np.full(3, 1 / av), 1 / ac]
        cov = np.eye(40) / beta + (psi * prior_var) @ psi.T
        direct = sum(
            multivariate_normal(np.zeros(40), cov).logpdf(objective.t[:, p]) for p in range(2)
        )
        assert -float(model.phi_one(jnp.asarray(theta))) == pytest.approx(direct, rel=1e-9)


def test_likelihood_integrates_the_full_networks_output_weights():
    """exp(-phi(theta)) = E over W2, b2 ~ N(0, A^-1) of the full network's p(D | w, beta),
    by Monte Carlo through the full network's forward pass (so the layouts agree)."""
    objective, noise = problem(n=4, inputs=2, hidden=2, outputs=2)
    model = CollapsedModel(objective, noise)
    net, n1 = objective.network, model.n_first
    rng = np.random.default_rng(3)
    for theta in thetas(model, 3, seed=2):
        av, ac, beta = np.exp(theta[n1:])
        S = 400_000
        out_sd = np.r_[np.full(4, av**-0.5), np.full(2, ac**-0.5)]  # W2 (2 x 2), b2 (2)
        w = np.empty((S, net.n_weights))
        w[:, :n1] = theta[:n1]
        w[:, n1:] = rng.standard_normal((S, 6)) * out_sd
        e_d = objective.data_error(w)
        n_t = objective.t.size
        log_lik = 0.5 * n_t * np.log(beta / (2 * np.pi)) - beta * e_d
        mc = np.logaddexp.reduce(log_lik) - np.log(S)
        se = (
            np.std(np.exp(log_lik - log_lik.max()))
            / np.sqrt(S)
            / np.mean(np.exp(log_lik - log_lik.max()))
        )
        assert abs(-float(model.phi_one(jnp.asarray(theta))) - mc) < 4 * se + 1e-3


def _importance_log_z(log_lik):
    m = np.max(log_lik)
    w = np.exp(log_lik - m)
    return m + np.log(w.mean()), np.std(w) / np.sqrt(len(w)) / w.mean()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_evidence_equals_the_full_targets(seed):
    """The collapse changes the coordinates, not the integral: ln p(D) by importance
    sampling from each target's own prior (2 x 10^5 draws) agrees within 4 combined s.e."""
    objective, noise = problem(n=6, seed=seed)
    full, collapsed = MarginalModel(objective, noise), CollapsedModel(objective, noise)
    rng = np.random.default_rng(10 + seed)
    w, _ = full.sample_prior(200_000, rng)
    z_full, se_full = _importance_log_z(-full.phi(w)[0])
    nc = collapsed.noncentred()
    u = jnp.asarray(nc.sample(200_000, rng))
    ll = -np.asarray(jax.vmap(lambda v: collapsed.phi_one(nc.weights(v)))(u))
    z_col, se_col = _importance_log_z(ll)
    assert abs(z_full - z_col) < 4 * np.hypot(se_full, se_col)
    assert se_full < 0.05 and se_col < 0.05


def test_prior_density_is_normalised_gamma_and_normal():
    objective, noise = problem(n=6, inputs=2, hidden=2)
    model = CollapsedModel(objective, noise)
    nc = model.noncentred()
    from scipy.stats import gamma, norm

    u = nc.sample(4, np.random.default_rng(0))
    n1 = model.n_first
    g_v, g_c = model.output_groups
    shapes = [h.shape for h in objective.prior.hyperpriors]
    rates = [h.rate for h in objective.prior.hyperpriors]
    order = [k for k in range(4) if k not in (g_v, g_c)] + [g_v, g_c]
    a = np.r_[np.array(shapes)[order], noise.shape]
    b = np.r_[np.array(rates)[order], noise.rate]
    for row in u:
        eta = row[n1:]
        expect = norm.logpdf(row[:n1]).sum() + np.sum(
            gamma.logpdf(np.exp(eta), a, scale=1 / b) + eta
        )
        assert float(nc.log_prior(jnp.asarray(row))) == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("kind", ["grouped", "ard"])
def test_centred_prior_is_the_student_t_and_log_gamma_density(kind):
    """prior_energy_one(theta) = -ln pi(theta): each input-side group a multivariate t
    (alpha_k ~ Gamma(a, b) integrated out: 2a degrees of freedom, scale b / a), each of
    eta_v, eta_c, eta_beta the log of a Gamma variate (scipy)."""
    from scipy.stats import gamma, multivariate_t

    objective, noise = problem(n=6, inputs=2, hidden=2, kind=kind)
    model = CollapsedModel(objective, noise)
    n1, (g_v, g_c) = model.n_first, model.output_groups
    prior = objective.prior
    index = np.asarray(prior.group_index)[:n1]
    hyper = prior.hyperpriors
    a = np.r_[hyper[g_v].shape, hyper[g_c].shape, noise.shape]
    b = np.r_[hyper[g_v].rate, hyper[g_c].rate, noise.rate]
    theta, _ = model.sample_prior(5, np.random.default_rng(3))
    energy = jax.jit(model.prior_energy_one)
    for row in theta:
        expect = 0.0
        for k in np.unique(index):
            w = row[:n1][index == k]
            h = hyper[k]
            t = multivariate_t(np.zeros(len(w)), h.rate / h.shape * np.eye(len(w)), df=2 * h.shape)
            expect += t.logpdf(w)
        eta = row[n1:]
        expect += np.sum(gamma.logpdf(np.exp(eta), a, scale=1 / b) + eta)
        assert -float(energy(jnp.asarray(row))) == pytest.approx(expect, rel=1e-10)


def test_centred_prior_draws_have_the_hyperpriors_moments():
    """E[eta] = digamma(a) - ln b for eta_v, eta_c, eta_beta, and E[|w|^2] of the first layer
    over the draws' alpha matches 1 / alpha, over four seeds (10^5 draws, within 4 s.e.)."""
    from scipy.special import digamma

    objective, noise = problem(n=6, inputs=2, hidden=2)
    model = CollapsedModel(objective, noise)
    n1, (g_v, g_c) = model.n_first, model.output_groups
    hyper = objective.prior.hyperpriors
    a = np.r_[hyper[g_v].shape, hyper[g_c].shape, noise.shape]
    b = np.r_[hyper[g_v].rate, hyper[g_c].rate, noise.rate]
    for seed in range(4):
        theta, alpha = model.sample_prior(100_000, np.random.default_rng(seed))
        eta = theta[:, n1:]
        se = eta.std(axis=0) / np.sqrt(len(eta))
        assert np.all(np.abs(eta.mean(axis=0) - (digamma(a) - np.log(b))) < 4 * se)
        scaled = theta[:, 0] * np.sqrt(alpha[:, 0])  # W1[0, 0] * sqrt(its group's alpha)
        assert abs(np.mean(scaled**2) - 1.0) < 4 * np.std(scaled**2) / np.sqrt(len(scaled))


def test_symmetry_group_in_theta_leaves_the_posterior_and_folds():
    """Every signed permutation of the units' (W1[j], b1[j]) leaves phi and the prior
    unchanged, and canonical maps every image to one point."""
    objective, noise = problem(n=20, inputs=2, hidden=3, outputs=2)
    model = CollapsedModel(objective, noise)
    sym = model.symmetry
    assert sym.order == 2**3 * 6 and len(sym.elements()) == sym.order
    theta, _ = model.sample_prior(1, np.random.default_rng(2))
    theta = theta[0]
    images = np.stack([sign * theta[index] for index, sign in sym.elements()])
    assert len(np.unique(images.round(12), axis=0)) == sym.order
    energy = jax.jit(jax.vmap(lambda v: model.phi_one(v) + model.prior_energy_one(v)))
    e = np.asarray(energy(jnp.asarray(images)))
    np.testing.assert_allclose(e, e[0], rtol=1e-12)
    folded = np.asarray(jax.jit(jax.vmap(sym.canonical))(jnp.asarray(images)))
    np.testing.assert_array_equal(folded, np.broadcast_to(folded[0], folded.shape))
    index, sign = sym.signed_permutation(theta)
    np.testing.assert_array_equal(sign * theta[index], folded[0])


def test_symmetries_leave_the_likelihood_and_fold_to_one_point():
    objective, noise = problem(n=20, inputs=2, hidden=3, outputs=2)
    model = CollapsedModel(objective, noise)
    nc = model.noncentred()
    u = nc.sample(1, np.random.default_rng(5))[0]
    H, I = 3, 2
    w1, b1, rest = u[: H * I].reshape(H, I), u[H * I : H * I + H], u[H * I + H :]
    perm, sign = np.array([2, 0, 1]), np.array([-1.0, 1.0, -1.0])
    image = np.r_[(w1 * sign[:, None])[perm].ravel(), (b1 * sign)[perm], rest]

    def phi(v):
        return float(model.phi_one(nc.weights(jnp.asarray(v))))

    assert phi(image) == pytest.approx(phi(u), rel=1e-12)
    fold = jax.jit(nc.canonical)
    np.testing.assert_allclose(np.asarray(fold(image)), np.asarray(fold(u)), rtol=1e-14)
    folded = np.asarray(fold(u))
    assert np.all(folded[: H * I].reshape(H, I)[:, 0] >= 0)
    assert phi(folded) == pytest.approx(phi(u), rel=1e-12)


def test_single_prior_is_refused():
    net = Network(1, 2, 1)
    prior = make_prior(net, "single", {"weights": {"shape": 1.0, "rate": 1.0}})
    x = np.zeros((3, 1))
    with pytest.raises(ValueError, match="groups of their own"):
        CollapsedModel(PenalisedError(net, prior, x, x), GammaPrior(1.0, 1.0))


def test_full_weights_are_draws_of_the_output_layers_conditional():
    """W2, b2 drawn given theta: their mean over draws is the ridge solution
    (A + beta Psi^T Psi)^-1 beta Psi^T t and their covariance (A + beta Psi^T Psi)^-1."""
    objective, noise = problem(n=30, inputs=2, hidden=2, outputs=2)
    model = CollapsedModel(objective, noise)
    n1, net = model.n_first, objective.network
    theta = thetas(model, 1, seed=4)[0]
    keys = jax.random.split(jax.random.PRNGKey(0), 20_000)
    w = np.asarray(jax.vmap(model.full_weights, in_axes=(None, 0))(jnp.asarray(theta), keys))
    np.testing.assert_array_equal(w[:, :n1], np.broadcast_to(theta[:n1], (len(w), n1)))
    av, ac, beta = np.exp(theta[n1:])
    psi = features(objective, theta, n1)
    m = np.diag(np.r_[av, av, ac]) + beta * psi.T @ psi
    cov = np.linalg.inv(m)
    mean = cov @ (beta * psi.T @ objective.t)  # (H+1, P)
    s = net.slices
    for p in range(2):
        out = np.c_[w[:, s["W2"]].reshape(-1, 2, 2)[:, p], w[:, s["b2"]][:, p]]
        se = np.sqrt(np.diag(cov) / len(w))
        assert np.all(np.abs(out.mean(0) - mean[:, p]) < 5 * se)
        np.testing.assert_allclose(np.cov(out.T), cov, rtol=0.06, atol=0.03 * np.abs(cov).max())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nested_sampling_on_the_collapsed_target_finds_the_full_evidence(seed):
    """``nested`` with ``coordinates: collapsed`` against importance sampling of the full
    target (10^6 prior draws) on a one-unit network: within 3 reported s.e."""
    from bnnsweep.engines.evidence import nested

    objective, noise = problem(n=6, seed=seed)
    full = MarginalModel(objective, noise)
    w, _ = full.sample_prior(1_000_000, np.random.default_rng(20 + seed))
    truth, truth_se = _importance_log_z(-full.phi(w)[0])
    settings = nested.NestedSettings(live=100, replicates=2, inner_steps=3, coordinates="collapsed")
    out = nested.estimate(full, settings, np.random.default_rng(seed))
    assert abs(out.log_z - truth) < 3 * np.hypot(out.log_z_se, truth_se)
    draws = out.diagnostics["draws"]
    assert draws.shape[1] == objective.network.n_weights and np.all(np.isfinite(draws))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_valley_tempering_on_the_collapsed_target_finds_the_full_evidence(seed):
    """``valley_tempering`` on the collapsed target (chaining's ``target: collapsed``)
    against importance sampling of the full target (10^6 prior draws) on a two-unit network:
    within 3 reported s.e., and its ladders make round trips."""
    from bnnsweep.engines.evidence import valley_tempering as vt

    objective, noise = problem(n=8, hidden=2, seed=seed)
    full = MarginalModel(objective, noise)
    w, _ = full.sample_prior(1_000_000, np.random.default_rng(30 + seed))
    truth, truth_se = _importance_log_z(-full.phi(w)[0])
    settings = vt.ValleyTemperingSettings(
        rungs=8, replicates=4, burn_in=200, samples=300, search={"starts": 16}
    )
    out = vt.estimate(CollapsedModel(objective, noise), settings, np.random.default_rng(seed))
    assert abs(out.log_z - truth) < 3 * np.hypot(out.log_z_se, truth_se)
    assert np.min(out.diagnostics["round_trips"]) >= 1


def test_chaining_target_collapsed_is_refused_where_it_does_not_apply():
    from bnnsweep.method_base import SettingsError
    from bnnsweep.methods import get_method

    chaining = get_method("chaining")
    with pytest.raises(SettingsError, match="valley_tempering, valley_smc only, not 'nested'"):
        chaining.settings({"target": "collapsed", "estimator": "nested"})
    with pytest.raises(SettingsError, match="target 'collapsed'.*prior 'single'"):
        chaining.settings({"target": "collapsed", "prior": "single"})
    with pytest.raises(SettingsError, match="hidden = 0"):
        chaining.settings({"target": "collapsed", "hidden": 0})
    chaining.settings({"target": "collapsed"})  # grouped prior, valley_tempering: accepted


def test_collapsed_states_map_to_full_weight_draws():
    """chaining's ``_full_weights``: the first layer kept, W2 and b2 drawn per state from
    their conditional (two draws of one state differ), shapes (..., W)."""
    from bnnsweep.methods.chaining import _full_weights

    objective, noise = problem(n=20, inputs=2, hidden=3, outputs=2)
    model = CollapsedModel(objective, noise)
    theta, _ = model.sample_prior(6, np.random.default_rng(0))
    states = np.stack([theta, theta])  # (2, 6, D)
    w = _full_weights(model, states, np.random.default_rng(1))
    assert w.shape == (2, 6, objective.network.n_weights)
    np.testing.assert_array_equal(w[..., : model.n_first], states[..., : model.n_first])
    assert np.all(np.isfinite(w)) and not np.allclose(w[0], w[1])


def test_likelihood_is_finite_where_the_gram_matrix_rounds_indefinite():
    """alpha_v near 0 with saturated units (their columns equal to the bias column): B's
    entries reach 1e40 and without the jitter its Cholesky factor failed (phi = inf); the
    likelihood is finite and far below that of a moderate theta."""
    objective, noise = problem(n=40, inputs=2, hidden=4, outputs=2)
    model = CollapsedModel(objective, noise)
    n1 = model.n_first
    theta = np.zeros(n1 + 3)
    theta[8:n1] = -80.0  # b1: every unit saturated at tanh = -1
    theta[n1:] = [-90.0, -4.0, 3.0]  # ln alpha_v, ln alpha_c, ln beta
    moderate = np.r_[np.full(n1, 0.5), 0.0, 0.0, 3.0]
    phi = jax.jit(model.phi_one)
    assert np.isfinite(float(phi(jnp.asarray(theta))))
    assert float(phi(jnp.asarray(theta))) > float(phi(jnp.asarray(moderate)))
