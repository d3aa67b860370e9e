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

from ...runtime.jax_runtime import jax, jnp

expit = jax.nn.sigmoid
xlogy = jax.scipy.special.xlogy

XI_BISECTION_STEPS = 8
XI_NEWTON_STEPS = 6


def parent_blocks(layer_sizes, n_units: int) -> tuple[tuple[int, int, int, int], ...]:
    """The blocks (r0, r1, c0, c1) of the weight matrix that can be non-zero: the units
    r0..r1-1 have parents among c0..c1-1 only. For a layered net (``layer_sizes``, top
    first) one block per layer below the top, its rows that layer and its columns the
    layer above; ``None`` gives one dense block (0, N, 0, N).

    Every sum over parents below runs over these blocks only: a weight outside them is
    zero, so the terms left out are exact zeros (ln 1 up to rounding in ln(1 - mu + mu e^0)).
    Units in no block's rows have no parents (the top layer)."""
    if layer_sizes is None:
        return ((0, n_units, 0, n_units),)
    edges = np.cumsum((0, *layer_sizes))
    if edges[-1] != n_units:
        raise ValueError(f"layers {layer_sizes} do not have {n_units} units")
    return tuple(
        (int(edges[k]), int(edges[k + 1]), int(edges[k - 1]), int(edges[k]))
        for k in range(1, len(layer_sizes))
    )


def _parent_sum(fn, blocks, shape, dtype=float):
    """(..., N): sum over the parents j of row i of fn(r0, r1, c0, c1) (..., r1-r0, c1-c0)
    for every block; 0 for the rows of no block."""
    if len(blocks) == 1 and blocks[0][0] == 0 and blocks[0][1] == shape[-1]:
        return jnp.sum(fn(*blocks[0]), axis=-1)
    out = jnp.zeros(shape, dtype)
    for r0, r1, c0, c1 in blocks:
        out = out.at[..., r0:r1].set(jnp.sum(fn(r0, r1, c0, c1), axis=-1))
    return out


def log_expected_exp(
    mu: jnp.ndarray, weights: jnp.ndarray, biases: jnp.ndarray, t: jnp.ndarray, blocks=None
) -> jnp.ndarray:
    """ln <exp(t_i z_i)> under prod_j Bernoulli(mu_j) (A.5-A.7 with nothing left out), (B, N).

    = t_i w_i0 + sum_j ln(1 - mu_j + mu_j e^{t_i w_ij}), j over the parents (``blocks``,
    ``parent_blocks``; None: every unit).
    """
    blocks = parent_blocks(None, weights.shape[-1]) if blocks is None else blocks
    shape = jnp.broadcast_shapes(t.shape, weights.shape[:-1], (*mu.shape[:-1], 1))

    def terms(r0, r1, c0, c1):
        tw = t[..., r0:r1, None] * weights[..., r0:r1, c0:c1]
        return log_factor(mu[..., None, c0:c1], tw)

    return t * biases + _parent_sum(terms, blocks, shape)


def log_factor(mu, tw):
    """ln(1 - mu + mu e^{tw}), exact also where mu is 0 or 1 in floating point and |tw| is
    large (log1p(mu expm1(tw)) would give ln 0 for mu = 1, tw << 0)."""
    return jnp.logaddexp(jnp.log1p(-mu), jnp.log(mu) + tw)


def expected_field(mu: jnp.ndarray, weights: jnp.ndarray, biases: jnp.ndarray) -> jnp.ndarray:
    """<z_i> = sum_j w_ij <s_j> + w_i0, (B, N)."""
    return jnp.einsum("...ij,...j->...i", weights, mu) + biases


def softplus_upper_bound(mu, xi, weights, biases, blocks=None) -> jnp.ndarray:
    """xi_i <z_i> + ln <e^{-xi_i z_i} + e^{(1-xi_i) z_i}> >= <ln(1 + e^{z_i})> (eq. 2.12), (B, N)."""
    lo = log_expected_exp(mu, weights, biases, -xi, blocks)
    hi = log_expected_exp(mu, weights, biases, 1.0 - xi, blocks)
    return xi * expected_field(mu, weights, biases) + jnp.logaddexp(lo, hi)


def bernoulli_entropy(mu: jnp.ndarray) -> jnp.ndarray:
    """S(mu) = -mu ln mu - (1-mu) ln(1-mu), elementwise."""
    return -xlogy(mu, mu) - xlogy(1.0 - mu, 1.0 - mu)


def expected_log_joint_bound(mu, xi, weights, biases, blocks=None) -> jnp.ndarray:
    """Lambda(H, V) of eq. 2.13: sum_i <s_i><z_i> - sum_i [bound 2.12 on <ln(1+e^{z_i})>], (B,).

    <s_i z_i> = <s_i><z_i> because a unit is never its own parent and the factors of Q are
    independent.
    """
    z = expected_field(mu, weights, biases)
    return jnp.sum(mu * z - softplus_upper_bound(mu, xi, weights, biases, blocks), axis=-1)


@partial(jax.jit, static_argnames=("n_hidden", "blocks"))
def mean_field_bound(mu, xi, weights, biases, n_hidden: int, blocks=None) -> jnp.ndarray:
    """L[Q_mft] = Lambda(H, V) + sum_{i hidden} S(mu_i) (eq. 2.15), (B,)."""
    return expected_log_joint_bound(mu, xi, weights, biases, blocks) + jnp.sum(
        bernoulli_entropy(mu[..., :n_hidden]), axis=-1
    )


def _xi_problem(mu, weights, biases, blocks=None):
    """The 1-D problems of App. A for fixed means: a function xi -> (T, T', T'') per unit,
    T(xi) = -xi<z> - ln(E^- + E^+), with <z>, ln mu_j, ln(1 - mu_j) and the logits computed
    once for every evaluation of the search.

    T' = -<z> + (mean of z tilted by e^{-xi z}(1 + e^z)) and T'' = -(its variance) <= 0;
    under each of the two tilts e^{-xi z}, e^{(1-xi) z} the units stay independent.
    """
    z = expected_field(mu, weights, biases)
    m = mu[..., None, :]
    blocks = parent_blocks(None, weights.shape[-1]) if blocks is None else blocks
    shape = jnp.broadcast_shapes(weights.shape[:-1], (*mu.shape[:-1], 1))
    log_m, log_1m = jnp.log(m), jnp.log1p(-m)  # log_factor's two logarithms
    logit_m = log_m - log_1m

    def tilt(t):
        def tilted(r0, r1, c0, c1):  # <s_j> under the tilt e^{t z_i}, and t w_ij
            w = weights[..., r0:r1, c0:c1]
            tw = t[..., r0:r1, None] * w
            return w, tw, expit(logit_m[..., c0:c1] + tw)

        def log_terms(*block):  # log_factor(m, tw)
            _, tw, _ = tilted(*block)
            c0, c1 = block[2], block[3]
            return jnp.logaddexp(log_1m[..., c0:c1], log_m[..., c0:c1] + tw)

        def mean_terms(*block):
            w, _, rho = tilted(*block)
            return w * rho

        def var_terms(*block):
            w, _, rho = tilted(*block)
            return w**2 * rho * (1.0 - rho)

        full = jnp.broadcast_shapes(shape, t.shape)
        log_e = t * biases + _parent_sum(log_terms, blocks, full)
        mean = biases + _parent_sum(mean_terms, blocks, full)
        var = _parent_sum(var_terms, blocks, full)
        return log_e, mean, var

    def evaluate(xi):
        lo, m_lo, v_lo = tilt(-xi)
        hi, m_hi, v_hi = tilt(1.0 - xi)
        norm = jnp.logaddexp(lo, hi)
        p_lo, p_hi = jnp.exp(lo - norm), jnp.exp(hi - norm)
        slope = -z + p_lo * m_lo + p_hi * m_hi
        curvature = -(p_lo * v_lo + p_hi * v_hi + p_lo * p_hi * (m_lo - m_hi) ** 2)
        return -xi * z - norm, slope, curvature

    return evaluate


def _xi_objective_slope_curvature(mu, xi, weights, biases, blocks=None):
    """T(xi) = -xi<z> - ln(E^- + E^+) per unit (App. A's 1-D problem), T' and T''."""
    return _xi_problem(mu, weights, biases, blocks)(xi)


@partial(jax.jit, static_argnames=("blocks",))
def optimal_xi(mu, xi, weights, biases, blocks=None) -> jnp.ndarray:
    """Maximise the bound over every xi_i by a 1-D search (App. A; Saul et al. 1996).

    -xi<z> - ln(E^- + E^+) is concave in xi (a log-sum-exp of linear functions, negated)
    with its maximum in [0, 1] (the tilted mean of z crosses <z> there): bisection to a
    bracket of width 2^-8, then Newton steps kept inside the bracket; the old xi is kept where
    it was already better (never a step down).
    """
    problem = _xi_problem(mu, weights, biases, blocks)
    t_old, _, _ = problem(xi)

    def bisect(_, bracket):
        lo_x, hi_x = bracket
        mid = 0.5 * (lo_x + hi_x)
        _, slope, _ = problem(mid)
        return jnp.where(slope > 0, mid, lo_x), jnp.where(slope > 0, hi_x, mid)

    def newton(_, carry):
        x, lo_x, hi_x = carry
        _, slope, curv = problem(x)
        lo_x = jnp.where(slope > 0, x, lo_x)
        hi_x = jnp.where(slope > 0, hi_x, x)
        step = x - slope / jnp.minimum(curv, -1e-300)
        inside = (step >= lo_x) & (step <= hi_x)
        return jnp.where(inside, step, 0.5 * (lo_x + hi_x)), lo_x, hi_x

    lo_x, hi_x = jax.lax.fori_loop(
        0, XI_BISECTION_STEPS, bisect, (jnp.zeros_like(xi), jnp.ones_like(xi))
    )
    new, _, _ = jax.lax.fori_loop(0, XI_NEWTON_STEPS, newton, (0.5 * (lo_x + hi_x), lo_x, hi_x))
    t_new, _, _ = problem(new)
    return jnp.where(t_new >= t_old, new, xi)


@partial(jax.jit, static_argnames=("form", "block"))
def mean_field_log_odds(
    mu, xi, weights, biases, k: int, form: str = "saul", block=None
) -> jnp.ndarray:
    """E'(k) of eqs. 2.16-2.18: the log-odds of the new Q(s_k = 1), (B,).

    E'_k = w_k0 + sum_j w_kj<s_j> + sum_i w_ik<s_i> + phi_k with, over the children i of k,
      "saul":   phi_k = -sum_i [xi_i w_ik + d/dmu_k ln(E_i^- + E_i^+)]  (tangent, MM step);
      "thesis": phi_k = -sum_i [ln(Phi_i + e^{w_ik} Phi'_i) - ln(Phi_i + Phi'_i)]  (A.3-A.8,
                sign corrected), Phi_i, Phi'_i = E_i^-, E_i^+ without unit k's factor.

    ``block`` (r0, r1, c0, c1) of ``parent_blocks``, with k among c0..c1-1: the children
    of k are among r0..r1-1 and their parents among c0..c1-1 (None: every unit).
    """
    r0, r1, c0, c1 = (0, mu.shape[-1], 0, mu.shape[-1]) if block is None else block
    w_k = weights[..., r0:r1, k]  # w_ik for every child i
    own = biases[..., k] + jnp.einsum("...j,...j->...", weights[..., k, :], mu)
    from_children = jnp.einsum("...i,...i->...", w_k, mu[..., r0:r1])
    sub_w = weights[..., r0:r1, :]
    sub_b, xi = biases[..., r0:r1], xi[..., r0:r1]
    lo = log_expected_exp(mu, sub_w, sub_b, -xi, ((0, r1 - r0, c0, c1),))
    hi = log_expected_exp(mu, sub_w, sub_b, 1.0 - xi, ((0, r1 - r0, c0, c1),))
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


def for_each_hidden_unit(update, state, n_hidden: int, blocks):
    """Apply ``update(k, block, state)`` to every hidden unit k = 0 .. n_hidden-1 in turn,
    with the ``parent_blocks`` block whose columns hold k (a unit in none has no children:
    block None there would mean every unit, so such units are refused)."""
    covered = 0
    for r0, r1, c0, c1 in sorted(blocks, key=lambda b: b[2]):
        if c0 != covered:
            raise ValueError(f"hidden units {covered}..{c0 - 1} have no children")
        if c0 >= n_hidden:
            break
        block = (r0, r1, c0, c1)
        state = jax.lax.fori_loop(
            c0, min(c1, n_hidden), lambda k, s, block=block: update(k, block, s), state
        )
        covered = c1
    if covered < n_hidden:
        raise ValueError(f"hidden units {covered}..{n_hidden - 1} have no children")
    return state


def mean_field_sweep(mu, xi, weights, biases, n_hidden: int, form: str = "saul", blocks=None):
    """One pass of xi (1-D search) then every hidden mu_k in turn (eq. 2.18); new (mu, xi)."""
    blocks = parent_blocks(None, mu.shape[-1]) if blocks is None else blocks
    xi = optimal_xi(mu, xi, weights, biases, blocks)

    def unit(k, block, mu):
        return mu.at[..., k].set(
            expit(mean_field_log_odds(mu, xi, weights, biases, k, form, block))
        )

    return for_each_hidden_unit(unit, mu, n_hidden, blocks), xi


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


@partial(jax.jit, static_argnames=("n_hidden", "max_sweeps", "form", "blocks"))
def _fit_mean_field(weights, biases, mu, xi, n_hidden, max_sweeps, tol, form, blocks):
    def sweep(state):
        return mean_field_sweep(*state, weights, biases, n_hidden, form, blocks)

    def bound_of(state):
        return mean_field_bound(*state, weights, biases, n_hidden, blocks)

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
    layer_sizes: tuple[int, ...] | None = None,
) -> MeanFieldState:
    """Alternate xi searches and mu updates (eqs. 2.16-2.18, App. A) for a batch of (network,
    pattern) pairs: ``weights`` (B, N, N), ``biases`` (B, N), ``visible`` (B, D) or (D,),
    ``mu_hidden0`` (B, H), ``xi0`` (B, N); stops when no bound gains more than tol.
    ``layer_sizes`` (top first) of a layered net: the sums over parents skip the weights
    that are zero by the architecture (``parent_blocks``); None: dense."""
    n_hidden = mu_hidden0.shape[-1]
    blocks = parent_blocks(layer_sizes, np.shape(weights)[-1])
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
        blocks,
    )
    return MeanFieldState(np.asarray(mu), np.asarray(xi), np.asarray(bound), int(n))
