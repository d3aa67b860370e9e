"""vi_mixture: the mutual-information bound is a lower bound on I(m; w) and never exceeds
-sum Q ln Q <= ln M, its gradients agree with central differences, and the mixture bound
improves on the one-component bound by at most ln M without falling below it."""

import numpy as np
import pytest
from scipy.special import logsumexp
from test_erf_expectations import central_diff
from test_vi_gauss import toy_split

from bnnsweep.engines.variational.hyperposterior import HyperPosterior
from bnnsweep.method_base import build_settings
from bnnsweep.methods.vi_gauss import GaussianBound
from bnnsweep.methods.vi_mixture import (
    MixtureBound,
    VIMixtureSettings,
    fit,
    independent_components,
    mutual_information_bound,
)
from bnnsweep.models.vi_family import GaussianFamily

QUIET = {"log": lambda *_: None}


def settings(**values):
    return build_settings(VIMixtureSettings, values, "method 'vi_mixture'")


def random_mixture(rng, M=3, W=4, spread=1.5):
    comp = np.concatenate(
        [rng.normal(0, spread, (M, W)), np.log(rng.uniform(0.3, 1.0, (M, W)))], axis=1
    )
    smooth = np.concatenate(
        [comp[:, :W] + rng.normal(0, 0.2, (M, W)), np.log(rng.uniform(0.8, 2.0, (M, W)))], axis=1
    )
    log_Q = np.log(rng.dirichlet(np.ones(M) * 3))
    return log_Q, comp, smooth


def test_mutual_information_bound_lies_below_the_monte_carlo_mutual_information():
    rng = np.random.default_rng(0)
    log_Q, comp, smooth = random_mixture(rng, M=3, W=2, spread=1.0)
    value = mutual_information_bound(log_Q, comp, smooth)[0]
    W = 2
    means, sds = comp[:, :W], np.exp(comp[:, W:])
    n = 400_000
    labels = rng.choice(3, size=n, p=np.exp(log_Q))
    w = means[labels] + sds[labels] * rng.standard_normal((n, W))
    log_q = -0.5 * np.sum(
        ((w[:, None, :] - means) / sds) ** 2 + 2 * np.log(sds), axis=2
    )  # (n, M) up to a constant
    log_mix = logsumexp(log_q + log_Q, axis=1)
    draws = log_q[np.arange(n), labels] - log_mix
    se = draws.std() / np.sqrt(n)
    assert value <= draws.mean() + 4 * se
    assert draws.mean() <= -np.sum(np.exp(log_Q) * log_Q) + 4 * se  # I <= H(Q) (A.13)


@pytest.mark.parametrize("M", [1, 2, 4])
def test_mutual_information_bound_never_exceeds_the_entropy_of_the_mixing_weights(M):
    rng = np.random.default_rng(M)
    for spread in (0.1, 1.0, 30.0):
        log_Q, comp, smooth = random_mixture(rng, M=M, spread=spread)
        value = mutual_information_bound(log_Q, comp, smooth)[0]
        assert value <= -np.sum(np.exp(log_Q) * log_Q) + 1e-12 <= np.log(M) + 1e-12
    # far-apart narrow components with fitted smoothing reach almost ln M
    comp = np.concatenate(
        [np.arange(M)[:, None] * 100.0 * np.ones((M, 3)), np.full((M, 3), -3.0)], axis=1
    )
    smooth = np.concatenate([comp[:, :3], np.full((M, 3), 1.0)], axis=1)
    value = mutual_information_bound(np.full(M, -np.log(M)), comp, smooth)[0]
    assert value > np.log(M) - 0.01


def test_mutual_information_bound_gradients():
    rng = np.random.default_rng(5)
    log_Q, comp, smooth = random_mixture(rng)
    _, g_comp, g_smooth, _ = mutual_information_bound(log_Q, comp, smooth)
    f_comp = central_diff(
        lambda c: mutual_information_bound(log_Q, c.reshape(comp.shape), smooth)[0], comp.ravel()
    )
    f_smooth = central_diff(
        lambda s: mutual_information_bound(log_Q, comp, s.reshape(smooth.shape))[0], smooth.ravel()
    )
    assert np.linalg.norm(f_comp - g_comp.ravel()) < 1e-6 * np.linalg.norm(g_comp)
    assert np.linalg.norm(f_smooth - g_smooth.ravel()) < 1e-6 * np.linalg.norm(g_smooth)


def _toy_bound(rng):
    s = settings(hidden=2, components=3)
    objective, noise = s.build(toy_split(n=8))
    family = GaussianFamily("diag", objective.network.n_weights)
    hyper = HyperPosterior.initial(objective.prior, noise, objective.n_targets)
    bound = MixtureBound(GaussianBound(objective, family))
    W = family.n_weights
    log_Q, comp, smooth = random_mixture(rng, M=3, W=W, spread=0.8)
    return bound, hyper, log_Q, comp, smooth


def test_whole_mixture_bound_gradient_and_mixing_fixed_point():
    rng = np.random.default_rng(6)
    bound, hyper, log_Q, comp, smooth = _toy_bound(rng)
    Q = np.exp(log_Q)
    values, grads = bound.components(comp, hyper)
    grad = Q[:, None] * grads + mutual_information_bound(log_Q, comp, smooth)[1]
    numeric = central_diff(
        lambda c: bound.value(log_Q, c.reshape(comp.shape), smooth, hyper), comp.ravel()
    )
    assert np.linalg.norm(numeric - grad.ravel()) < 1e-6 * np.linalg.norm(grad)
    # the Q(m) fixed point raises the bound, and no perturbation of it does better
    before = bound.value(log_Q, comp, smooth, hyper)
    new = bound.mixing_step(log_Q, comp, smooth, hyper)
    after = bound.value(new, comp, smooth, hyper)
    assert after >= before
    assert abs(np.exp(logsumexp(new)) - 1) < 1e-12


@pytest.mark.parametrize("mixing", ["fixed", "update"])
def test_mixture_bound_against_the_one_component_bound(mixing):
    """L(M) >= L(1) - tolerance and L(M) <= L(1) + ln M (same initial one-component fit)."""
    M = 3
    s = settings(hidden=3, components=M, mixing=mixing, outer_iter=30, max_iter=200)
    result = fit(toy_split(), s, np.random.default_rng(0), **QUIET)
    single = result.diagnostics["single_component_bound"]
    one = fit(toy_split(), settings(hidden=3, components=1, outer_iter=30, max_iter=200),
              np.random.default_rng(0), **QUIET)  # fmt: skip
    assert one.log_evidence == pytest.approx(single)
    assert single - 1e-6 * abs(single) <= result.log_evidence <= single + np.log(M)
    trace = result.traces["bound"][1]
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    d = result.diagnostics
    assert d["mutual_information"] <= d["mutual_information_limit"] + 1e-12 <= np.log(M) + 1e-12
    # L = sum_m Q(m) L_m + I* with I* <= ln M, so no component's own bound lies ln M below L
    assert result.log_evidence <= d["best_component_bound"] + np.log(M) + 1e-9
    means, variances = result.members["component"]
    assert means.shape == (M, 6, 1) and np.all(variances > 0)
    assert result.log_evidence_kind == "lower_bound"
    assert abs(result.traces["mixing_weight"][1].sum() - 1) < 1e-12


def test_independent_start_begins_from_distinct_components():
    """start: independent (paper 000 sec. 4.2): every component from its own random weights and
    start_iter L-BFGS iterations of its own bound, so the components begin far apart (copies of
    one fit differ by 1 % of the mean), each above its random start; the fit's bound never falls
    and stays within ln M of its best component."""
    M = 3
    s = settings(hidden=3, components=M, start="independent", start_iter=50, outer_iter=3,
                 max_iter=50)  # fmt: skip
    objective, noise = s.build(toy_split())
    family = GaussianFamily("diag", objective.network.n_weights)
    gaussian = GaussianBound(objective, family)
    hyper = HyperPosterior.initial(objective.prior, noise, objective.n_targets)
    comp, evals = independent_components(gaussian, s, hyper, M, np.random.default_rng(3))
    W = family.n_weights
    starts = objective.network.init_weights(np.random.default_rng(3), M, s.init_scale)
    assert evals > M
    for c, w0 in zip(comp, starts, strict=True):
        start_bound = gaussian.value_and_grad(family.pack(w0, s.init_sd), hyper)[0]
        assert gaussian.value_and_grad(c, hyper)[0] > start_bound
    gaps = [np.linalg.norm(comp[a, :W] - comp[b, :W]) for a in range(M) for b in range(a)]
    assert min(gaps) > 0.1 * np.mean(np.linalg.norm(comp[:, :W], axis=1))
    result = fit(toy_split(), s, np.random.default_rng(1), **QUIET)
    trace = result.traces["bound"][1]
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    d = result.diagnostics
    assert result.log_evidence <= d["best_component_bound"] + np.log(M) + 1e-9
