"""Learning the weights of a sigmoid belief network by gradient ascent on the variational
bound (thesis §2.4.1 end, §2.5.2): for each pattern optimise Q (mean field or a mixture),
then step the weights along the bound's gradient, averaged over the patterns.

The gradient of 2.15 in the weights (with <s_i z_i> = <s_i><z_i>):
  dL/dw_ij = (<s_i> - xi_i) <s_j> - [p_i^- (-xi_i) rho_ij^- + p_i^+ (1 - xi_i) rho_ij^+],
  dL/dw_i0 = (<s_i> - xi_i)      - [p_i^- (-xi_i)          + p_i^+ (1 - xi_i)],
with p^-, p^+ = E^-, E^+ / (E^- + E^+) and rho_ij = <s_j> under the tilt e^{t z_i}
= mu_j e^{t w_ij} / (1 - mu_j + mu_j e^{t w_ij}), t = -xi_i or 1 - xi_i. The mixture
bound 2.25 depends on the weights only through its components: sum_m Q(m) dL_m/dw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...models.sigmoid_belief import parent_mask
from ...runtime.jax_runtime import jax, jnp
from .mixture_bound import fit_mixture
from .saul_bound import log_expected_exp


@jax.jit
def mean_field_weight_gradient(mu, xi, weights, biases):
    """d(2.15)/dw_ij and d(2.15)/dw_i0 for every batch entry: (..., N, N), (..., N)."""
    lo = log_expected_exp(mu, weights, biases, -xi)
    hi = log_expected_exp(mu, weights, biases, 1.0 - xi)
    norm = jnp.logaddexp(lo, hi)
    p_lo, p_hi = jnp.exp(lo - norm), jnp.exp(hi - norm)

    logit_mu = (jnp.log(mu) - jnp.log1p(-mu))[..., None, :]

    def tilted(t):  # mu_j e^{tw} / (1 - mu_j + mu_j e^{tw}), finite at mu_j in {0, 1}
        return jax.nn.sigmoid(logit_mu + t[..., :, None] * weights)

    own = (mu - xi)[..., :, None] * mu[..., None, :]
    gw = (
        own
        - (p_lo * -xi)[..., None] * tilted(-xi)
        - (p_hi * (1.0 - xi))[..., None] * tilted(1.0 - xi)
    )
    gb = (mu - xi) - p_lo * -xi - p_hi * (1.0 - xi)
    return gw, gb


def mixture_weight_gradient(q, mu, xi, weights, biases):
    """d(2.25)/dw = sum_m Q(m) dL[Q_mft(.|m)]/dw; q (B, M), mu, xi (B, M, N) -> (B, N, N), (B, N)."""
    gw, gb = mean_field_weight_gradient(mu, xi, weights[:, None], biases[:, None])
    return jnp.einsum("bm,bmij->bij", q, gw), jnp.einsum("bm,bmi->bi", q, gb)


@dataclass(frozen=True)
class LearningResult:
    """Learned nets (R restarts): weights (R, N, N), biases (R, N); mean bound per pattern
    at every step (steps, R)."""

    weights: np.ndarray
    biases: np.ndarray
    bound_trace: np.ndarray


def init_weights(
    layer_sizes: tuple[int, ...], n_nets: int, init_span: float, rng: np.random.Generator
):
    """Starting nets for learning: every layered weight and bias ~ U(-init_span, init_span);
    (R, N, N), (R, N) as jax arrays."""
    n = sum(layer_sizes)
    mask = jnp.asarray(parent_mask(tuple(layer_sizes)))
    weights = jnp.asarray(rng.uniform(-init_span, init_span, (n_nets, n, n))) * mask
    biases = jnp.asarray(rng.uniform(-init_span, init_span, (n_nets, n)))
    return weights, biases


def learning_step(
    layer_sizes: tuple[int, ...],
    weights,
    biases,
    patterns: np.ndarray,
    n_components: int,
    rng: np.random.Generator,
    learning_rate: float,
    sweeps: int,
    tol: float = 1e-8,
):
    """One step of gradient ascent on the mixture bound for R nets at once: fit Q for each
    net's ``patterns`` (R, P, D) from mu, xi ~ U(0, 1) (§2.5.2) with at most ``sweeps``
    sweeps, then move every layered weight and bias by ``learning_rate`` times the bound's
    gradient averaged over the P patterns. Returns (weights, biases, bound (R, P))."""
    n_nets, n_patterns = patterns.shape[:2]
    n = weights.shape[-1]
    w_rep = jnp.repeat(weights, n_patterns, axis=0)
    b_rep = jnp.repeat(biases, n_patterns, axis=0)
    v = np.asarray(patterns, float).reshape(n_nets * n_patterns, -1)
    fit = fit_mixture(
        w_rep,
        b_rep,
        v,
        n_components,
        rng,
        max_sweeps=sweeps,
        tol=tol,
        layer_sizes=tuple(layer_sizes),
    )
    gw, gb = mixture_weight_gradient(fit.q, fit.mu, fit.xi, w_rep, b_rep)
    layered = jnp.asarray(parent_mask(tuple(layer_sizes)))
    weights = jnp.where(
        layered, weights + learning_rate * gw.reshape(n_nets, n_patterns, n, n).mean(1), 0.0
    )
    biases = biases + learning_rate * gb.reshape(n_nets, n_patterns, n).mean(1)
    return weights, biases, fit.bound.reshape(n_nets, n_patterns)


def learn_by_mixture_bound(
    layer_sizes: tuple[int, ...],
    sample_patterns: Callable[[np.random.Generator, int], np.ndarray],
    n_components: int,
    rng: np.random.Generator,
    n_restarts: int = 1,
    steps: int = 500,
    batch: int = 30,
    learning_rate: float = 0.1,
    sweeps: int = 30,
    init_span: float = 0.1,
) -> LearningResult:
    """Gradient ascent on the mixture bound (M = 1: mean field) for ``n_restarts`` nets at
    once: each step draws ``batch`` fresh patterns per net and takes a ``learning_step``."""
    weights, biases = init_weights(layer_sizes, n_restarts, init_span, rng)
    trace = []
    for _ in range(steps):
        v = np.stack([sample_patterns(rng, batch) for _ in range(n_restarts)])
        weights, biases, bound = learning_step(
            layer_sizes, weights, biases, v, n_components, rng, learning_rate, sweeps
        )
        trace.append(bound.mean(1))
    return LearningResult(np.asarray(weights), np.asarray(biases), np.asarray(trace))
