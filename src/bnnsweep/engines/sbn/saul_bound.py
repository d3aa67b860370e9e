"""Saul et al.'s bound on <ln(1 + e^z)> and the mean-field bound it gives (thesis §2.4.1).

Arrays: ``mu`` (B, N) holds <s_j> for every unit (visible units at their observed 0/1
values), ``xi`` (B, N) the variational parameters of 2.12, ``weights`` (B, N, N) with
w_ij at [b, i, j], ``biases`` (B, N). The hidden units are the first ``n_hidden``.

Checked in code (tests/test_sbn_mean_field.py):

- 2.12 holds term-wise against the enumerated <ln(1 + e^{z_i})> for any xi;
- 2.11 as printed has <s_j> inside the exponent; it must be s_j (the expectation is
  outside the logarithm), which is what 2.12-2.13 bound;
- 2.17 / A.8: phi_k enters E' with a MINUS sign, and the s_k-dependent part of A.3/A.4 is
  ln(Phi_i + e^{w_ik} Phi'_i) - ln(Phi_i + Phi'_i) (the notes' reconstruction: right). Taken
  literally, that update ("thesis" form below) maximises, in mu_k, a per-unit bound that is
  TIGHTER than 2.15 (Jensen on the conditional-on-s_k form), so it need not raise 2.15 itself
  and, measured, sometimes lowers it slightly;
- the update of Saul et al. ("saul" form, the default) replaces -ln<...>, which is convex
  in mu_k, by its tangent at the current mu_k: a minorise-maximise step, so it never lowers
  2.15. Both forms share the fixed points' structure mu_k = sigma(E'_k) (2.16-2.18).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ...jax_runtime import jax, jnp

expit = jax.nn.sigmoid
xlogy = jax.scipy.special.xlogy

XI_BISECTION_STEPS = 8
XI_NEWTON_STEPS = 6


def log_expected_exp(
    mu: jnp.ndarray, weights: jnp.ndarray, biases: jnp.ndarray, t: jnp.ndarray
) -> jnp.ndarray:
    """ln <exp(t_i z_i)> under prod_j Bernoulli(mu_j) (A.5-A.7 with nothing left out), (B, N).

    = t_i w_i0 + sum_j ln(1 - mu_j + mu_j e^{t_i w_ij}).
    """
    return t * biases + jnp.sum(log_factor(mu[..., None, :], t[..., :, None] * weights), axis=-1)


def log_factor(mu, tw):
    """ln(1 - mu + mu e^{tw}), exact also where mu is 0 or 1 in floating point and |tw| is
    large (log1p(mu expm1(tw)) would give ln 0 for mu = 1, tw << 0)."""
    return jnp.logaddexp(jnp.log1p(-mu), jnp.log(mu) + tw)


def expected_field(mu: jnp.ndarray, weights: jnp.ndarray, biases: jnp.ndarray) -> jnp.ndarray:
    """<z_i> = sum_j w_ij <s_j> + w_i0, (B, N)."""
    return jnp.einsum("...ij,...j->...i", weights, mu) + biases


def softplus_upper_bound(mu, xi, weights, biases) -> jnp.ndarray:
    """xi_i <z_i> + ln <e^{-xi_i z_i} + e^{(1-xi_i) z_i}> >= <ln(1 + e^{z_i})> (eq. 2.12), (B, N)."""
    lo = log_expected_exp(mu, weights, biases, -xi)
    hi = log_expected_exp(mu, weights, biases, 1.0 - xi)
    return xi * expected_field(mu, weights, biases) + jnp.logaddexp(lo, hi)


def bernoulli_entropy(mu: jnp.ndarray) -> jnp.ndarray:
    """S(mu) = -mu ln mu - (1-mu) ln(1-mu), elementwise."""
    return -xlogy(mu, mu) - xlogy(1.0 - mu, 1.0 - mu)


def expected_log_joint_bound(mu, xi, weights, biases) -> jnp.ndarray:
    """Lambda(H, V) of eq. 2.13: sum_i <s_i><z_i> - sum_i [bound 2.12 on <ln(1+e^{z_i})>], (B,).

    <s_i z_i> = <s_i><z_i> because a unit is never its own parent and the factors of Q are
    independent.
    """
    z = expected_field(mu, weights, biases)
    return jnp.sum(mu * z - softplus_upper_bound(mu, xi, weights, biases), axis=-1)


@partial(jax.jit, static_argnames=("n_hidden",))
def mean_field_bound(mu, xi, weights, biases, n_hidden: int) -> jnp.ndarray:
    """L[Q_mft] = Lambda(H, V) + sum_{i hidden} S(mu_i) (eq. 2.15), (B,)."""
    return expected_log_joint_bound(mu, xi, weights, biases) + jnp.sum(
        bernoulli_entropy(mu[..., :n_hidden]), axis=-1
    )


def _xi_objective_slope_curvature(mu, xi, weights, biases):
    """T(xi) = -xi<z> - ln(E^- + E^+) per unit (App. A's 1-D problem), T' and T''.

    T' = -<z> + (mean of z tilted by e^{-xi z}(1 + e^z)) and T'' = -(its variance) <= 0;
    under each of the two tilts e^{-xi z}, e^{(1-xi) z} the units stay independent.
    """
    z = expected_field(mu, weights, biases)
    m = mu[..., None, :]

    logit_m = jnp.log(m) - jnp.log1p(-m)

    def tilt(t):
        tw = t[..., :, None] * weights
        rho = expit(logit_m + tw)  # <s_j> under the tilt e^{t z_i}
        log_e = t * biases + jnp.sum(log_factor(m, tw), axis=-1)
        mean = biases + jnp.sum(weights * rho, axis=-1)
        var = jnp.sum(weights**2 * rho * (1.0 - rho), axis=-1)
        return log_e, mean, var

    lo, m_lo, v_lo = tilt(-xi)
    hi, m_hi, v_hi = tilt(1.0 - xi)
    norm = jnp.logaddexp(lo, hi)
    p_lo, p_hi = jnp.exp(lo - norm), jnp.exp(hi - norm)
    slope = -z + p_lo * m_lo + p_hi * m_hi
    curvature = -(p_lo * v_lo + p_hi * v_hi + p_lo * p_hi * (m_lo - m_hi) ** 2)
    return -xi * z - norm, slope, curvature


@jax.jit
def optimal_xi(mu, xi, weights, biases) -> jnp.ndarray:
    """Maximise the bound over every xi_i by a 1-D search (App. A; Saul et al. 1996).

    -xi<z> - ln(E^- + E^+) is concave in xi (a log-sum-exp of linear functions, negated)
    with its maximum in [0, 1] (the tilted mean of z crosses <z> there): bisection to a
    bracket of width 2^-8, then Newton steps kept inside the bracket; the old xi is kept where
    it was already better (never a step down).
    """
    t_old, _, _ = _xi_objective_slope_curvature(mu, xi, weights, biases)

    def bisect(_, bracket):
        lo_x, hi_x = bracket
        mid = 0.5 * (lo_x + hi_x)
        _, slope, _ = _xi_objective_slope_curvature(mu, mid, weights, biases)
        return jnp.where(slope > 0, mid, lo_x), jnp.where(slope > 0, hi_x, mid)

    def newton(_, carry):
        x, lo_x, hi_x = carry
        _, slope, curv = _xi_objective_slope_curvature(mu, x, weights, biases)
        lo_x = jnp.where(slope > 0, x, lo_x)
        hi_x = jnp.where(slope > 0, hi_x, x)
        step = x - slope / jnp.minimum(curv, -1e-300)
        inside = (step >= lo_x) & (step <= hi_x)
        return jnp.where(inside, step, 0.5 * (lo_x + hi_x)), lo_x, hi_x

    lo_x, hi_x = jax.lax.fori_loop(
        0, XI_BISECTION_STEPS, bisect, (jnp.zeros_like(xi), jnp.ones_like(xi))
    )
    new, _, _ = jax.lax.fori_loop(0, XI_NEWTON_STEPS, newton, (0.5 * (lo_x + hi_x), lo_x, hi_x))
    t_new, _, _ = _xi_objective_slope_curvature(mu, new, weights, biases)
    return jnp.where(t_new >= t_old, new, xi)


@partial(jax.jit, static_argnames=("form",))
def mean_field_log_odds(mu, xi, weights, biases, k: int, form: str = "saul") -> jnp.ndarray:
    """E'(k) of eqs. 2.16-2.18: the log-odds of the new Q(s_k = 1), (B,).

    E'_k = w_k0 + sum_j w_kj<s_j> + sum_i w_ik<s_i> + phi_k with, over the children i of k,
      "saul":   phi_k = -sum_i [xi_i w_ik + d/dmu_k ln(E_i^- + E_i^+)]  (tangent, MM step);
      "thesis": phi_k = -sum_i [ln(Phi_i + e^{w_ik} Phi'_i) - ln(Phi_i + Phi'_i)]  (A.3-A.8,
                sign corrected), Phi_i, Phi'_i = E_i^-, E_i^+ without unit k's factor.
    """
    w_k = weights[..., :, k]  # (B, N): w_ik for every child i
    own = biases[..., k] + jnp.einsum("...j,...j->...", weights[..., k, :], mu)
    from_children = jnp.einsum("...i,...i->...", w_k, mu)
    lo = log_expected_exp(mu, weights, biases, -xi)
    hi = log_expected_exp(mu, weights, biases, 1.0 - xi)
    mk = mu[..., k, None]
    tw_lo, tw_hi = -xi * w_k, (1.0 - xi) * w_k
    log_d_lo, log_d_hi = log_factor(mk, tw_lo), log_factor(mk, tw_hi)  # unit k's factors
    if form == "saul":
        norm = jnp.logaddexp(lo, hi)
        grad = jnp.exp(lo - log_d_lo - norm) * jnp.expm1(tw_lo) + jnp.exp(
            hi - log_d_hi - norm
        ) * jnp.expm1(tw_hi)
        phi = -jnp.sum(xi * w_k + grad, axis=-1)
    elif form == "thesis":
        phi_lo, phi_hi = lo - log_d_lo, hi - log_d_hi
        phi = -jnp.sum(jnp.logaddexp(phi_lo, w_k + phi_hi) - jnp.logaddexp(phi_lo, phi_hi), axis=-1)
    else:
        raise ValueError(f"unknown update form {form!r}")
    return own + from_children + phi


def mean_field_sweep(mu, xi, weights, biases, n_hidden: int, form: str = "saul"):
    """One pass of xi (1-D search) then every hidden mu_k in turn (eq. 2.18); new (mu, xi)."""
    xi = optimal_xi(mu, xi, weights, biases)

    def unit(k, mu):
        return mu.at[..., k].set(expit(mean_field_log_odds(mu, xi, weights, biases, k, form)))

    return jax.lax.fori_loop(0, n_hidden, unit, mu), xi


@dataclass(frozen=True)
class MeanFieldState:
    """Mean-field solution for a batch: mu, xi (B, N), the bound 2.15 (B,), sweeps run."""

    mu: np.ndarray
    xi: np.ndarray
    bound: np.ndarray
    sweeps: int


def clamp_visible(mu_hidden, visible):
    """The full (..., N) mean vector: hidden means then the observed visible values."""
    visible = jnp.asarray(visible, dtype=float)
    return jnp.concatenate(
        [mu_hidden, jnp.broadcast_to(visible, (*mu_hidden.shape[:-1], visible.shape[-1]))], axis=-1
    )


def iterate_to_convergence(sweep, bound_of, state, max_sweeps: int, tol: float):
    """Apply ``sweep`` (state -> state) until no bound in the batch moves by more than tol
    (relative to max(1, |bound|)) or ``max_sweeps`` is reached; (state, bound, sweeps)."""

    def cond(carry):
        _, _, change, n = carry
        return (n < max_sweeps) & (change > tol)

    def body(carry):
        state, bound, _, n = carry
        state = sweep(state)
        new = bound_of(state)
        change = jnp.max(jnp.abs(new - bound) / jnp.maximum(1.0, jnp.abs(new)))
        return state, new, change, n + 1

    bound = bound_of(state)
    state, bound, _, n = jax.lax.while_loop(cond, body, (state, bound, jnp.inf, 0))
    return state, bound, n


@partial(jax.jit, static_argnames=("n_hidden", "max_sweeps", "form"))
def _fit_mean_field(weights, biases, mu, xi, n_hidden, max_sweeps, tol, form):
    def sweep(state):
        return mean_field_sweep(*state, weights, biases, n_hidden, form)

    def bound_of(state):
        return mean_field_bound(*state, weights, biases, n_hidden)

    return iterate_to_convergence(sweep, bound_of, (mu, xi), max_sweeps, tol)


def fit_mean_field(
    weights,
    biases,
    visible,
    mu_hidden0,
    xi0,
    max_sweeps: int = 500,
    tol: float = 1e-10,
    form: str = "saul",
) -> MeanFieldState:
    """Alternate xi searches and mu updates (eqs. 2.16-2.18, App. A) for a batch of (network,
    pattern) pairs: ``weights`` (B, N, N), ``biases`` (B, N), ``visible`` (B, D) or (D,),
    ``mu_hidden0`` (B, H), ``xi0`` (B, N); stops when no bound gains more than tol."""
    n_hidden = mu_hidden0.shape[-1]
    mu = clamp_visible(jnp.asarray(mu_hidden0, dtype=float), visible)
    (mu, xi), bound, n = _fit_mean_field(
        jnp.asarray(weights, float),
        jnp.asarray(biases, float),
        mu,
        jnp.asarray(xi0, float),
        n_hidden,
        max_sweeps,
        tol,
        form,
    )
    return MeanFieldState(np.asarray(mu), np.asarray(xi), np.asarray(bound), int(n))
