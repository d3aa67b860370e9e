"""Mixture of mean-field distributions for a sigmoid belief network (thesis §2.4.2).

Q_mix(H) = sum_m Q(m) prod_i Q(h_i|m) (2.19). The bound 2.25 adds to the mixture of
mean-field bounds the lower bound 2.24 on the mutual information I(m, H), built from
factorised smoothing distributions R(h_i|m) > 0 (not normalised) and multipliers
lambda_m > 0 via -ln x >= -lambda x + ln lambda + 1 (2.23).

Arrays: ``q`` (B, M) = Q(m); ``mu`` (B, M, N) = Q(s_i=1|m) for every unit (visible units
clamped); ``xi`` (B, M, N); ``r`` (B, M, H, 2) = R(h_i=0|m), R(h_i=1|m) over the H hidden
units; ``lam`` (B, M); ``weights`` (B, N, N); ``biases`` (B, N).

Equations checked in code (tests/test_sbn_mixture.py):

- 2.24 <= I(m, H) (2.21, by enumeration) for arbitrary positive R and lambda: right;
- 2.29 / 2.31 as printed keep only lambda_m and drop the overlap factor. The derivative of
  2.25 in Q(s_k=1|m), divided by Q(m), is
      E'' = E' + ln[R(1|m)/R(0|m)] - sum_m' lambda_m' pi^k(m', m) [R(1|m') - R(0|m')],
  the notes' reconstruction: right (pi^k is 2.27 without unit k's factor). The update is
  an exact coordinate maximiser, as the bound is linear in Q(s_k=1|m) apart from the
  mean-field part;
- 2.34: the lambda term enters -E_m with a MINUS sign,
      -E_m = L_mft(m) + sum_H Q(H|m) ln R(H|m) - sum_k lambda_k pi(k, m) + ln lambda_m:
  right (the printed "+" is wrong), and with it 2.35 Q(m) = softmax(-E_m) maximises 2.33;
- 2.36: alpha_k must be Q(k):
      R(h_j|m) = Q(m) Q(h_j|m) / (lambda_m sum_k Q(k) pi^j(m, k) Q(h_j|k)): right;
- 2.37: lambda_m = Q(m) / sum_k Q(k) pi(m, k) (the printed 1/lambda_m = sum_k pi(m,k)/Q(m)
  drops Q(k)): the reconstruction is right.

R(.|m) for one unit and lambda_m can be rescaled by c and 1/c without changing the bound;
each R update is followed by that rescaling to R(0|m) + R(1|m) = 1, to keep numbers sane.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ...runtime.jax_runtime import jax, jnp
from .saul_bound import (
    clamp_visible,
    for_each_hidden_unit,
    iterate_to_convergence,
    mean_field_bound,
    mean_field_log_odds,
    optimal_xi,
    parent_blocks,
)

expit = jax.nn.sigmoid
xlogy = jax.scipy.special.xlogy
logsumexp = jax.scipy.special.logsumexp


def log_overlaps(mu_hidden: jnp.ndarray, r: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """ln pi_{R,Q}(m, m') = sum_i ln sum_{h_i} R(h_i|m) Q(h_i|m') (eq. 2.27).

    Returns ln pi (B, M, M) and the per-unit log factors (B, M, M, H), [b, m, m', i].
    """
    factors = jnp.log(
        r[:, :, None, :, 0] * (1.0 - mu_hidden[:, None, :, :])
        + r[:, :, None, :, 1] * mu_hidden[:, None, :, :]
    )
    return factors.sum(-1), factors


def expected_log_smoothing(mu_hidden: jnp.ndarray, r: jnp.ndarray) -> jnp.ndarray:
    """sum_H Q(H|m) ln R(H|m) = sum_i sum_{h_i} Q(h_i|m) ln R(h_i|m) (eq. 2.28), (B, M)."""
    return jnp.sum(xlogy(1.0 - mu_hidden, r[..., 0]) + xlogy(mu_hidden, r[..., 1]), axis=-1)


@jax.jit
def mutual_information_bound(q, mu_hidden, r, lam) -> jnp.ndarray:
    """The lower bound 2.24 on I(m, H), (B,).

    sum_m Q(m) sum_H Q(H|m) ln R(H|m) - sum_m Q(m) ln Q(m)
      - sum_m lambda_m sum_m' Q(m') pi(m, m') + sum_m Q(m) ln lambda_m + 1.
    """
    log_pi, _ = log_overlaps(mu_hidden, r)
    return (
        jnp.sum(q * expected_log_smoothing(mu_hidden, r), -1)
        - jnp.sum(xlogy(q, q), -1)
        - jnp.einsum("bm,bmk,bk->b", lam, jnp.exp(log_pi), q)
        + jnp.sum(xlogy(q, lam), -1)
        + 1.0
    )


def component_bounds(mu, xi, weights, biases, n_hidden: int, blocks=None) -> jnp.ndarray:
    """L[Q_mft(H|m)] of every component (eq. 2.15 per component), (B, M)."""
    return mean_field_bound(mu, xi, weights[:, None], biases[:, None], n_hidden, blocks)


@partial(jax.jit, static_argnames=("n_hidden", "blocks"))
def mixture_bound(q, mu, xi, r, lam, weights, biases, n_hidden: int, blocks=None) -> jnp.ndarray:
    """L_lambda[Q_mix] = sum_m Q(m) L[Q_mft(H|m)] + I-bound (eqs. 2.20, 2.25), (B,);
    ``blocks``: ``saul_bound.parent_blocks`` (None: dense)."""
    return jnp.sum(
        q * component_bounds(mu, xi, weights, biases, n_hidden, blocks), -1
    ) + mutual_information_bound(q, mu[..., :n_hidden], r, lam)


def component_log_odds(
    q, mu, xi, r, lam, weights, biases, k: int, form: str = "saul", block=None
) -> jnp.ndarray:
    """E''(k, m) of eq. 2.31 (corrected, see module docstring), (B, M)."""
    n_hidden = r.shape[-2]
    e1 = mean_field_log_odds(mu, xi, weights[:, None], biases[:, None], k, form, block)
    log_pi, factors = log_overlaps(mu[..., :n_hidden], r)
    pi_k = jnp.exp(log_pi - factors[..., k])  # (B, m', m)
    r_diff = r[:, :, k, 1] - r[:, :, k, 0]  # (B, m')
    coupling = jnp.einsum("bn,bnm,bn->bm", lam, pi_k, r_diff)
    return e1 + jnp.log(r[:, :, k, 1] / r[:, :, k, 0]) - coupling


@partial(jax.jit, static_argnames=("form", "block"))
def update_component_means(
    q, mu, xi, r, lam, weights, biases, k: int, form: str = "saul", block=None
) -> jnp.ndarray:
    """Q(s_k=1|m) = sigma(E''(k, m)) for every component m at once (eqs. 2.30, 2.32)."""
    return mu.at[..., k].set(
        expit(component_log_odds(q, mu, xi, r, lam, weights, biases, k, form, block))
    )


def mixing_log_weights(mu, xi, r, lam, weights, biases, n_hidden: int, blocks=None):
    """-E_m of eq. 2.34 (lambda term with a minus sign), (B, M)."""
    log_pi, _ = log_overlaps(mu[..., :n_hidden], r)
    return (
        component_bounds(mu, xi, weights, biases, n_hidden, blocks)
        + expected_log_smoothing(mu[..., :n_hidden], r)
        - jnp.einsum("bk,bkm->bm", lam, jnp.exp(log_pi))
        + jnp.log(lam)
    )


@partial(jax.jit, static_argnames=("n_hidden", "blocks"))
def update_mixing(mu, xi, r, lam, weights, biases, n_hidden: int, blocks=None) -> jnp.ndarray:
    """Q(m) = exp(-E_m) / sum_k exp(-E_k) (eq. 2.35)."""
    neg_e = mixing_log_weights(mu, xi, r, lam, weights, biases, n_hidden, blocks)
    return jnp.exp(neg_e - logsumexp(neg_e, axis=-1, keepdims=True))


@jax.jit
def update_smoothing(q, mu_hidden, r, lam, j: int) -> tuple[jnp.ndarray, jnp.ndarray]:
    """R(h_j|m) from eq. 2.36 (alpha_k = Q(k)), then R(.|m) for unit j rescaled to sum 1
    with lambda_m rescaled the other way (the bound is unchanged by that); new (r, lam)."""
    log_pi, factors = log_overlaps(mu_hidden, r)
    pi_j = jnp.exp(log_pi - factors[..., j])  # (B, m, k)
    q_h = jnp.stack([1.0 - mu_hidden[..., j], mu_hidden[..., j]], axis=-1)  # (B, M, 2)
    denom = lam[..., None] * jnp.einsum("bk,bmk,bkh->bmh", q, pi_j, q_h)
    numer = q[..., None] * q_h
    # Q(h_j|m) = 0 (a saturated mean): the optimum is R -> 0. R is kept at least
    # exp(-700/H) times its larger entry, so that every overlap pi (a product of H factors,
    # each >= the smaller normalised entry) stays above exp(-700) and lambda finite
    safe = numer > 0
    direct = numer / jnp.where(safe, denom, 1.0)
    # a mean within ~1e-300 of 0 or 1 can underflow the denominator to 0 (numer / 0 = inf,
    # then inf / inf = NaN below): there the same ratio in logarithms
    log_denom = jnp.log(lam)[..., None] + logsumexp(
        jnp.log(q)[:, None, :, None] + jnp.log(pi_j)[..., None] + jnp.log(q_h)[:, None, :, :],
        axis=2,
    )
    in_logs = jnp.exp(jnp.log(q)[..., None] + jnp.log(q_h) - log_denom)
    new = jnp.where(safe, jnp.where(jnp.isfinite(direct), direct, in_logs), 0.0)
    top = jnp.max(new, axis=-1, keepdims=True)
    new = jnp.where(top > 0, jnp.maximum(new, jnp.exp(-700.0 / mu_hidden.shape[-1]) * top), 1.0)
    scale = new.sum(-1)
    return r.at[:, :, j, :].set(new / scale[..., None]), lam * scale


@jax.jit
def update_multipliers(q, mu_hidden, r) -> jnp.ndarray:
    """lambda_m = Q(m) / sum_k Q(k) pi(m, k) (eq. 2.37, corrected)."""
    log_pi, _ = log_overlaps(mu_hidden, r)
    return q / jnp.einsum("bmk,bk->bm", jnp.exp(log_pi), q)


@dataclass(frozen=True)
class MixtureState:
    """Mixture solution for a batch: Q(m), mu, xi, R, lambda and the bound 2.25 (B,)."""

    q: jnp.ndarray
    mu: jnp.ndarray
    xi: jnp.ndarray
    r: jnp.ndarray
    lam: jnp.ndarray
    bound: jnp.ndarray
    sweeps: int


def mixture_sweep(
    q, mu, xi, r, lam, weights, biases, n_hidden: int, form: str = "saul", blocks=None
):
    """One round of coordinate updates, each of which never lowers 2.25 (form "saul"):
    xi (1-D searches), each unit's Q(s_k|m), lambda, each unit's R, lambda, Q(m), lambda."""
    blocks = parent_blocks(None, mu.shape[-1]) if blocks is None else blocks
    xi = optimal_xi(mu, xi, weights[:, None], biases[:, None], blocks)
    mu = for_each_hidden_unit(
        lambda k, block, mu: update_component_means(
            q, mu, xi, r, lam, weights, biases, k, form, block
        ),
        mu,
        n_hidden,
        blocks,
    )
    lam = update_multipliers(q, mu[..., :n_hidden], r)
    r, lam = jax.lax.fori_loop(
        0, n_hidden, lambda j, c: update_smoothing(q, mu[..., :n_hidden], c[0], c[1], j), (r, lam)
    )
    lam = update_multipliers(q, mu[..., :n_hidden], r)
    q = update_mixing(mu, xi, r, lam, weights, biases, n_hidden, blocks)
    lam = update_multipliers(q, mu[..., :n_hidden], r)
    return q, mu, xi, r, lam


def init_mixture(
    visible, n_batch: int, n_hidden: int, n_components: int, n_units: int, rng: np.random.Generator
):
    """mu and xi ~ U(0, 1) (as in §2.5.2), Q(m) = 1/M, R = 1/2, lambda at its optimum 2.37.

    ``visible`` is (D,) or (B, D); returns (q, mu, xi, r, lam) as jax arrays.
    """
    visible = jnp.asarray(visible, dtype=float)
    if visible.ndim == 2:
        visible = visible[:, None, :]
    mu = clamp_visible(jnp.asarray(rng.random((n_batch, n_components, n_hidden))), visible)
    xi = jnp.asarray(rng.random((n_batch, n_components, n_units)))
    q = jnp.full((n_batch, n_components), 1.0 / n_components)
    r = jnp.full((n_batch, n_components, n_hidden, 2), 0.5)
    lam = update_multipliers(q, mu[..., :n_hidden], r)
    return q, mu, xi, r, lam


@partial(jax.jit, static_argnames=("n_hidden", "max_sweeps", "form", "blocks"))
def _fit_mixture(weights, biases, state, n_hidden, max_sweeps, tol, form, blocks):
    def sweep(state):
        return mixture_sweep(*state, weights, biases, n_hidden, form, blocks)

    def bound_of(state):
        return mixture_bound(*state, weights, biases, n_hidden, blocks)

    return iterate_to_convergence(sweep, bound_of, state, max_sweeps, tol)


def fit_mixture(
    weights,
    biases,
    visible,
    n_components: int,
    rng: np.random.Generator,
    max_sweeps: int = 500,
    tol: float = 1e-10,
    form: str = "saul",
    init=None,
    layer_sizes: tuple[int, ...] | None = None,
) -> MixtureState:
    """Iterate ``mixture_sweep`` from ``init`` (q, mu, xi, r, lam) or a random start
    (``init_mixture``) until no bound in the batch gains more than tol (relative).

    ``weights`` (B, N, N), ``biases`` (B, N), ``visible`` (D,) or (B, D); ``layer_sizes``
    (top first) of a layered net: sums over parents skip the weights that are zero by the
    architecture (``saul_bound.parent_blocks``); None: dense.
    """
    weights = jnp.asarray(weights, dtype=float)
    n_batch, n_units = weights.shape[0], weights.shape[-1]
    n_hidden = n_units - np.shape(visible)[-1]
    if init is None:
        init = init_mixture(visible, n_batch, n_hidden, n_components, n_units, rng)
    state, bound, n = _fit_mixture(
        weights,
        jnp.asarray(biases, float),
        tuple(jnp.asarray(a, float) for a in init),
        n_hidden,
        max_sweeps,
        tol,
        form,
        parent_blocks(layer_sizes, n_units),
    )
    q, mu, xi, r, lam = (np.asarray(a) for a in state)
    return MixtureState(q, mu, xi, r, lam, np.asarray(bound), int(n))
