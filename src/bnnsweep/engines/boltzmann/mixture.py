"""Mixtures of mean-field distributions for a Boltzmann machine (thesis §4.4.2, eqs. 4.16-4.25,
with the fixed points of §2.4.2, eqs. 2.33-2.37, carried over to ±1 units).

Q_mix(s) = sum_m Q(m) prod_i Q(s_i | m),  Q(s_i | m) = (1 + mu_mi s_i)/2            (4.16)

on the free units of a machine (weights (..., f, f), biases (..., f)); batch axes lead and
broadcast, the component axis M sits just before the unit axis. The smoothing functions are
factorised, R(s | m) = prod_i R(s_i | m), with R(s_i | m) > 0 for s_i = -1 and +1 (they need
not be normalised; ``log_smoothing[..., m, i, 0]`` is ln R(s_i = -1 | m), ``[..., 1]`` is
ln R(s_i = +1 | m)). With pi(a, b) = sum_s R(s | a) Q(s | b) = prod_i sum_{s_i} R(s_i|a)Q(s_i|b)
(2.27) the bound on ln Z_T (4.17 with 4.21) is

    L = sum_m Q(m) [L_mf(mu_m) + sum_i sum_s Q(s_i|m) ln R(s_i|m)] - sum_m Q(m) ln Q(m)
        - sum_a lambda_a sum_b Q(b) pi(a, b) + sum_m Q(m) ln lambda_m + 1,

a lower bound for ANY means, mixing, smoothing and lambda > 0 (4.20 applied to 4.19).

Coordinate maximisers, each exact given the rest (so none lowers L):

- means (4.22-4.24), the corrected 4.23 (the printed one has ln(R+/R-) without the 1/2,
  lambda_m alone instead of the pi-weighted sum over m', and R+ + R- instead of R+ - R-)::

    E'(k, m) = (sum_j w_kj mu_mj + b_k)/T + 1/2 ln[R(+1|m)/R(-1|m)]
               - 1/2 sum_a lambda_a pi^k(a, m) [R(+1|a) - R(-1|a)],  mu_mk = tanh E'(k, m)

  with pi^k the product 2.27 without unit k; units in turn, all components at once;
- mixing (2.33-2.35, with the "-" on the lambda term): Q(m) ∝ exp(-E_m),
  -E_m = L_mf(mu_m) + sum_i <ln R(s_i|m)>_m - sum_a lambda_a pi(a, m) + ln lambda_m;
- smoothing (2.36 with alpha_k = Q(k)), units in turn, components at once:
  R(s_j | m) = Q(m) Q(s_j|m) / (lambda_m sum_k Q(k) pi^j(m, k) Q(s_j|k));
- lambda (2.37 corrected): lambda_m = Q(m) / sum_k Q(k) pi(m, k).

Each is checked in ``tests/test_boltzmann_variational.py`` against the bound (no update
lowers it; the means update is a stationary point of L found by finite differences).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .annealing import anneal
from .mean_field import MEAN_LIMIT, mean_field_bound

LOG_FLOOR = -700.0  # ln Q(m) is floored here so that ln R stays finite


def logsumexp(x: np.ndarray, axis=None, keepdims: bool = False) -> np.ndarray:
    """ln sum exp over ``axis`` (an int or a tuple), stable; a lean stand-in for scipy's,
    which dominates the run time on these small axes."""
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def _logaddexp_states(x: np.ndarray) -> np.ndarray:
    """ln(exp x[..., 0] + exp x[..., 1]): the sum over s_i in {-1, +1}."""
    return np.logaddexp(x[..., 0], x[..., 1])


class MixtureState(NamedTuple):
    means: np.ndarray  # (..., M, f) mu_mi
    log_mixing: np.ndarray  # (..., M) ln Q(m)
    log_smoothing: np.ndarray  # (..., M, f, 2) ln R(s_i = -1 | m), ln R(s_i = +1 | m)
    log_lambda: np.ndarray  # (..., M) ln lambda_m


def log_component_marginals(means: np.ndarray) -> np.ndarray:
    """(..., M, f, 2): ln Q(s_i = -1 | m), ln Q(s_i = +1 | m)."""
    with np.errstate(divide="ignore"):
        return np.log(np.stack([0.5 * (1.0 - means), 0.5 * (1.0 + means)], axis=-1))


def log_overlap_factors(log_smoothing, log_marginals) -> np.ndarray:
    """(..., M_R, M_Q, f): ln sum_{s_i} R(s_i | a) Q(s_i | b), the factors of pi(a, b) (2.27)."""
    return _logaddexp_states(log_smoothing[..., :, None, :, :] + log_marginals[..., None, :, :, :])


def log_overlaps(state: MixtureState) -> np.ndarray:
    """(..., M, M): ln pi_{R,Q}(a, b) = ln sum_s R(s | a) Q(s | b) (2.27)."""
    logq = log_component_marginals(state.means)
    return log_overlap_factors(state.log_smoothing, logq).sum(-1)


def expected_log_smoothing(state: MixtureState) -> np.ndarray:
    """(..., M): sum_s Q(s | m) ln R(s | m) (2.28)."""
    q = np.stack([0.5 * (1.0 - state.means), 0.5 * (1.0 + state.means)], axis=-1)
    return np.sum(q * state.log_smoothing, axis=(-1, -2))


def _component_mean_field(weights, biases, means, temperature):
    return mean_field_bound(weights[..., None, :, :], biases[..., None, :], means, temperature)


def mutual_information_bound(state: MixtureState) -> np.ndarray:
    """Eq. 4.21: the lower bound I_lambda(m, S) <= I(m, S) on the mutual information."""
    mix = np.exp(state.log_mixing)
    log_pi = log_overlaps(state)
    lam_term = np.exp(
        logsumexp(
            state.log_lambda[..., :, None] + state.log_mixing[..., None, :] + log_pi, axis=(-1, -2)
        )
    )
    entropy = -np.sum(np.where(mix > 0, mix * state.log_mixing, 0.0), axis=-1)
    return (
        np.sum(mix * expected_log_smoothing(state), -1)
        + entropy
        - lam_term
        + np.sum(mix * state.log_lambda, -1)
        + 1.0
    )


def mixture_bound(weights, biases, state: MixtureState, temperature: float = 1.0) -> np.ndarray:
    """Eq. 4.17 with 4.21: L(Q_mix) <= ln Z_T for any state."""
    mix = np.exp(state.log_mixing)
    mf = _component_mean_field(weights, biases, state.means, temperature)
    return np.sum(mix * mf, -1) + mutual_information_bound(state)


def update_lambda(state: MixtureState) -> MixtureState:
    """Eq. 2.37 (corrected): lambda_m = Q(m) / sum_k Q(k) pi(m, k)."""
    log_pi = log_overlaps(state)
    log_lam = state.log_mixing - logsumexp(state.log_mixing[..., None, :] + log_pi, axis=-1)
    return state._replace(log_lambda=log_lam)


def update_mixing(weights, biases, state: MixtureState, temperature: float = 1.0) -> MixtureState:
    """Eqs. 2.34-2.35: Q(m) = softmax(-E_m) with the lambda term entering with a minus sign."""
    mf = _component_mean_field(weights, biases, state.means, temperature)
    log_pi = log_overlaps(state)
    lam_term = np.exp(logsumexp(state.log_lambda[..., :, None] + log_pi, axis=-2))  # over a
    neg_e = mf + expected_log_smoothing(state) - lam_term + state.log_lambda
    log_mix = neg_e - logsumexp(neg_e, axis=-1, keepdims=True)
    return state._replace(log_mixing=np.maximum(log_mix, LOG_FLOOR))


def update_means(
    weights, biases, state: MixtureState, temperature: float = 1.0, damping: float = 0.0
) -> MixtureState:
    """Eqs. 4.22-4.24 with the corrected 4.23, one pass over the units (all components at
    once), each step optionally damped towards the previous value."""
    weights = np.asarray(weights, float)
    biases = np.asarray(biases, float)
    log_r = state.log_smoothing
    shape = np.broadcast_shapes(
        state.means.shape, biases.shape[:-1] + (1, biases.shape[-1]), log_r.shape[:-1]
    )
    mu = np.array(np.broadcast_to(state.means, shape), dtype=float)
    logq = log_component_marginals(mu)
    logt = log_overlap_factors(log_r, logq)  # (..., a, b, f)
    total = logt.sum(-1)
    log_lam = state.log_lambda[..., :, None]
    for k in range(mu.shape[-1]):
        field = np.einsum("...mj,...j->...m", mu, weights[..., k, :]) + biases[..., None, k]
        log_pik = total - logt[..., k]  # (..., a, b)
        plus = logsumexp(log_lam + log_pik + log_r[..., :, None, k, 1], axis=-2)
        minus = logsumexp(log_lam + log_pik + log_r[..., :, None, k, 0], axis=-2)
        e_prime = (
            field / temperature
            + 0.5 * (log_r[..., k, 1] - log_r[..., k, 0])
            - 0.5 * (np.exp(plus) - np.exp(minus))
        )
        new = damping * mu[..., k] + (1.0 - damping) * np.tanh(e_prime)
        mu[..., k] = np.clip(new, -MEAN_LIMIT, MEAN_LIMIT)
        logq[..., k, :] = log_component_marginals(mu[..., k])
        logt[..., k] = _logaddexp_states(log_r[..., :, None, k, :] + logq[..., None, :, k, :])
        total = logt.sum(-1)
    return state._replace(means=mu)


def update_smoothing(state: MixtureState) -> MixtureState:
    """Eq. 2.36 (alpha_k = Q(k)), one pass over the units, all components at once:
    R(s_j|m) = Q(m) Q(s_j|m) / (lambda_m sum_k Q(k) pi^j(m, k) Q(s_j|k))."""
    logq = log_component_marginals(state.means)
    log_r = np.array(
        np.broadcast_to(
            state.log_smoothing, np.broadcast_shapes(state.log_smoothing.shape, logq.shape)
        ),
        dtype=float,
    )
    logt = log_overlap_factors(log_r, logq)
    total = logt.sum(-1)
    log_mix = np.maximum(state.log_mixing, LOG_FLOOR)
    for j in range(logq.shape[-2]):
        log_pij = total - logt[..., j]  # (..., m, k)
        # (..., m, s): ln sum_k Q(k) pi^j(m, k) Q(s_j | k)
        log_den = logsumexp(
            log_mix[..., None, :, None] + log_pij[..., :, :, None] + logq[..., None, :, j, :],
            axis=-2,
        )
        new = log_mix[..., :, None] + logq[..., :, j, :] - state.log_lambda[..., :, None] - log_den
        log_r[..., j, :] = np.maximum(new, LOG_FLOOR)
        logt[..., j] = _logaddexp_states(log_r[..., :, None, j, :] + logq[..., None, :, j, :])
        total = logt.sum(-1)
    return state._replace(log_smoothing=log_r)


def mixture_sweep(
    weights, biases, state: MixtureState, temperature: float = 1.0, damping: float = 0.0
) -> MixtureState:
    """One round of coordinate updates: means, lambda, mixing, smoothing, lambda."""
    state = update_means(weights, biases, state, temperature, damping)
    state = update_lambda(state)
    state = update_mixing(weights, biases, state, temperature)
    state = update_smoothing(state)
    return update_lambda(state)


def init_mixture(
    means: np.ndarray,
    rng: np.random.Generator | None = None,
    smoothing_spread: float = 1.0,
    log_mixing: np.ndarray | None = None,
) -> MixtureState:
    """A state from component means (..., M, f): equal mixing (unless given), smoothing
    ln R drawn U(-spread, spread) (all zero without ``rng``, which keeps identical components
    identical) and lambda at its optimum 2.37."""
    means = np.clip(np.asarray(means, float), -MEAN_LIMIT, MEAN_LIMIT)
    m = means.shape[-2]
    if log_mixing is None:
        log_mixing = np.full(means.shape[:-1], -np.log(m))
    if rng is None:
        log_r = np.zeros(means.shape + (2,))
    else:
        log_r = rng.uniform(-smoothing_spread, smoothing_spread, size=means.shape + (2,))
    state = MixtureState(means, np.asarray(log_mixing, float), log_r, np.zeros(means.shape[:-1]))
    return update_lambda(state)


class MixtureResult(NamedTuple):
    state: MixtureState
    bound: np.ndarray  # (...,) at the final temperature
    sweeps: int


def mixture_anneal(
    weights,
    biases,
    state: MixtureState,
    temperatures=(1.0,),
    damping: float = 0.0,
    sweeps_per_temperature: int = 1,
    max_sweeps: int = 100,
    tol: float = 1e-4,
) -> MixtureResult:
    """Annealed coordinate ascent of the mixture bound (``annealing.anneal``)."""
    state, bound, sweeps = anneal(
        lambda s, t: mixture_sweep(weights, biases, s, t, damping),
        lambda s, t: mixture_bound(weights, biases, s, t),
        state,
        temperatures,
        sweeps_per_temperature,
        max_sweeps,
        tol,
    )
    return MixtureResult(state, bound, sweeps)


def mixture_means(state: MixtureState) -> np.ndarray:
    """<s_i> = sum_m Q(m) mu_mi, (..., f)."""
    return np.einsum("...m,...mi->...i", np.exp(state.log_mixing), state.means)


def mixture_correlations(state: MixtureState) -> np.ndarray:
    """<s_i s_j> = sum_m Q(m) mu_mi mu_mj off the diagonal, 1 on it (4.26), (..., f, f)."""
    mu = state.means
    corr = np.einsum("...m,...mi,...mj->...ij", np.exp(state.log_mixing), mu, mu)
    f = mu.shape[-1]
    corr[..., np.arange(f), np.arange(f)] = 1.0
    return corr
