"""Markov-chain Q-distribution for a layered sigmoid belief network (thesis §2.4.3, App. B).

Q(H|V) = Q_1(s_1) prod_i Q_i(s_i|s_{i-1}) (2.38) along the units in their top-first order,
with Q_i(s_i=1|s_{i-1}) = mu_{i s_{i-1}} (2.39) and transition matrices
A_i = [[1-mu_i0, 1-mu_i1], [mu_i0, mu_i1]] (2.40), columns indexed by s_{i-1}. The first
unit of every layer is decoupled from the layer above (mu_i0 = mu_i1), and the visible units
are fixed at their values (mu_i0 = mu_i1 = v_i), so <s_i s_j> = <s_i><s_j> for i, j in
different layers. The bias is unit 0 with s_0 = 1 (the chain's start A_0 = [0, 1]^T).

Arrays (batch axis B first): ``mu0``, ``mu1`` (B, N) = mu_i0, mu_i1 of every unit;
``xi`` (B, N); ``weights`` (B, N, N); ``biases`` (B, N). The optimiser works on logits
phi_ij (mu_ij = sigma(phi_ij), App. B.1), one logit for a tied unit, two otherwise.

Equations checked in code (tests/test_sbn_markov_chain.py): 2.42-2.43 and 2.48-2.50
against enumeration of the chain's 2^H states; the App. B derivatives (B.1-B.6) against
finite differences. Corrections to the printed App. B:

- B.5's "0 if j != i" is garbled: <e^{-xi_i z_i}> depends on mu_j for every unit j in the
  chain segments (layers) of i's parents, and not on unit i's own mu;
- B.6, second line: d<e^{(1-xi_i) z_i}>/dw_ij has the factor (1 - xi_i) e^{(1-xi_i) w_ij},
  not -xi_i e^{(1-xi_i) w_ij};
- B.3 / B.4 as printed are garbled; they read
  d<s_i>/dmu_j0 = [0 1] A_i ... A_{j+1} [[-1, 0], [1, 0]] q_{j-1} (q = the marginal 2-vector),
  and the same with [[0, -1], [0, 1]] for mu_j1, for j <= i in the same layer;
- 2.48 is printed twice (the second copy is the same equation).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.optimize import minimize

from ...models.sigmoid_belief import layer_of_unit
from ...runtime.jax_runtime import jax, jnp

expit = jax.nn.sigmoid
xlogy = jax.scipy.special.xlogy

_START = np.array([0.0, 1.0])  # A_0: the bias unit s_0 = 1


def tied_units(layer_sizes: tuple[int, ...]) -> np.ndarray:
    """Boolean (N,): units whose mu_i0 = mu_i1 (first of a layer; every visible unit)."""
    layer = layer_of_unit(layer_sizes)
    first = np.r_[True, layer[1:] != layer[:-1]]
    first[-layer_sizes[-1] :] = True
    return first


def transition_matrices(mu0, mu1):
    """A_i = [[1 - mu_i0, 1 - mu_i1], [mu_i0, mu_i1]] (eq. 2.40), (B, N, 2, 2)."""
    return jnp.stack([jnp.stack([1 - mu0, 1 - mu1], -1), jnp.stack([mu0, mu1], -1)], -2)


def _times_column(a, v):
    """A v for 2 x 2 matrices a (..., 2, 2) and 2-vectors v (..., 2), written out so that
    it compiles to elementwise arithmetic (a batched dot of 2 x 2 blocks does not)."""
    return jnp.stack(
        [a[..., 0, 0] * v[..., 0] + a[..., 0, 1] * v[..., 1],
         a[..., 1, 0] * v[..., 0] + a[..., 1, 1] * v[..., 1]],
        -1,
    )  # fmt: skip


def _row_times(v, a):
    """The row vector v A for 2-vectors v (..., 2) and 2 x 2 matrices a (..., 2, 2)."""
    return jnp.stack(
        [v[..., 0] * a[..., 0, 0] + v[..., 1] * a[..., 1, 0],
         v[..., 0] * a[..., 0, 1] + v[..., 1] * a[..., 1, 1]],
        -1,
    )  # fmt: skip


@jax.jit
def chain_marginals(mu0, mu1):
    """[Q(s_i=0), Q(s_i=1)] = A_i ... A_1 A_0 (eq. 2.42), (B, N+1, 2), row 0 the bias."""
    mu0, mu1 = jnp.asarray(mu0), jnp.asarray(mu1)
    a = transition_matrices(mu0, mu1)
    q = [jnp.broadcast_to(jnp.asarray(_START), (*mu0.shape[:-1], 2))]
    for i in range(mu0.shape[-1]):
        q.append(_times_column(a[..., i, :, :], q[-1]))
    return jnp.stack(q, -2)


@partial(jax.jit, static_argnames=("n_hidden",))
def chain_entropy(mu0, mu1, n_hidden: int):
    """S(Q) = sum_i [<s_{i-1}> S(mu_i1) + (1 - <s_{i-1}>) S(mu_i0)] over hidden units (2.50)."""
    mu0, mu1 = jnp.asarray(mu0), jnp.asarray(mu1)
    prev = chain_marginals(mu0, mu1)[..., :n_hidden, 1]  # <s_{i-1}>, <s_0> = 1
    return jnp.sum(
        prev * _entropy(mu1[..., :n_hidden]) + (1 - prev) * _entropy(mu0[..., :n_hidden]), -1
    )


def _entropy(mu):
    return -xlogy(mu, mu) - xlogy(1 - mu, 1 - mu)


_MU_FLOOR = np.finfo(float).tiny
_MU_CEIL = np.nextafter(1.0, 0.0)


def _entropy_slope(mu):
    """dS/dmu = ln((1 - mu)/mu), finite where mu is exactly 0 or 1 in floating point (a
    logit beyond +-37 under expit): evaluated at mu kept inside [tiny, 1 - 2^-53], about
    +-37 or +-708 there instead of +-inf, so that a zero weight (the chain's <s_{i-1}> or
    1 - <s_{i-1}> at 0) gives 0 and not 0 * inf = NaN, and the logit gradient
    dS/dmu * mu (1 - mu) stays 0 at saturation."""
    mu = jnp.clip(mu, _MU_FLOOR, _MU_CEIL)
    return jnp.log1p(-mu) - jnp.log(mu)


@jax.jit
def chain_expected_exp(mu0, mu1, weights, biases, t):
    """<exp(t_i z_i)> = [1 1] prod_{j=N..0} K_ij A_j with K_ij = diag(1, e^{t_i w_ij})
    (eqs. 2.44-2.49; t = -xi gives 2.48, t = 1 - xi gives 2.49), for every unit i.

    Returns E (B, N) and the forward / backward vectors (B, N_i, N+1, 2) that App. B's
    derivatives need: fwd[:, i, j] = K_ij A_j ... K_i0 A_0, bwd[:, i, j] = the row vector
    [1 1] K_iN A_N ... K_i,j+1 A_{j+1}, so that E_i = bwd[:, i, j] . fwd[:, i, j] for all j.
    """
    mu0, mu1, weights, biases, t = (jnp.asarray(x) for x in (mu0, mu1, weights, biases, t))
    n = mu0.shape[-1]
    a = transition_matrices(mu0, mu1)  # (B, N, 2, 2)
    kern = jnp.exp(t[..., :, None] * weights)  # (B, Ni, Nj): the (1,1) entry of K_ij
    k0 = jnp.exp(t * biases)
    fwd = [jnp.stack([jnp.zeros_like(k0), k0], -1)]
    for j in range(n):
        v = _times_column(a[..., None, j, :, :], fwd[-1])
        fwd.append(jnp.stack([v[..., 0], v[..., 1] * kern[..., j]], -1))
    bwd = [jnp.ones_like(fwd[0])]
    for j in range(n, 0, -1):
        g = bwd[-1]
        g = jnp.stack([g[..., 0], g[..., 1] * kern[..., j - 1]], -1)
        bwd.append(_row_times(g, a[..., None, j - 1, :, :]))
    fwd, bwd = jnp.stack(fwd, -2), jnp.stack(bwd[::-1], -2)
    return fwd[..., n, :].sum(-1), fwd, bwd


def d_expected_exp_dt(weights, biases, t, fwd, bwd):
    """d<exp(t_i z_i)>/dt_i (B.1, B.2 up to the sign of dt/dxi), (B, N)."""
    # unit j >= 1: bwd_j . diag(0, w e^{tw}) A_j fwd_{j-1} = bwd_j[1] w fwd_j[1], since
    # fwd_j[1] = e^{tw} (A_j fwd_{j-1})[1]
    terms = bwd[..., 1:, 1] * weights * fwd[..., 1:, 1]
    bias = bwd[..., 0, 1] * biases * fwd[..., 0, 1]
    return terms.sum(-1) + bias


def d_expected_exp_dmu(mu0, mu1, weights, t, fwd, bwd):
    """d<exp(t_i z_i)>/dmu_j0 and /dmu_j1 (B.5), each (B, N_i, N_j).

    dA_j/dmu_j0 = [[-1, 0], [1, 0]], dA_j/dmu_j1 = [[0, -1], [0, 1]]:
    bwd_j . K_ij dA_j fwd_{j-1} = (g_1 e^{t w_ij} - g_0) fwd_{j-1}[s_{j-1}].
    """
    kern = jnp.exp(t[..., :, None] * weights)
    lead = bwd[..., 1:, 1] * kern - bwd[..., 1:, 0]
    return lead * fwd[..., :-1, 0], lead * fwd[..., :-1, 1]


def d_expected_exp_dw(weights, biases, t, fwd, bwd):
    """d<exp(t_i z_i)>/dw_ij (B.6, with t_i e^{t_i w_ij}), (B, N_i, N_j), and d/dw_i0 (B, N)."""
    # bwd_j . diag(0, t e^{tw}) A_j fwd_{j-1} = bwd_j[1] t fwd_j[1]
    dw = bwd[..., 1:, 1] * t[..., :, None] * fwd[..., 1:, 1]
    db = bwd[..., 0, 1] * t * fwd[..., 0, 1]
    return dw, db


@jax.jit
def d_marginals_dmu(mu0, mu1):
    """d<s_i>/dmu_j0, d<s_i>/dmu_j1 (B.3, B.4), each (B, N_i, N_j); zero for j > i."""
    mu0, mu1 = jnp.asarray(mu0), jnp.asarray(mu1)
    n = mu0.shape[-1]
    a = transition_matrices(mu0, mu1)
    q = chain_marginals(mu0, mu1)
    # back[:, i, j] = [0 1] A_i ... A_{j+1} (zero for j > i), built for every i at once
    # from j = N-1 down: column j-1 is column j times A_j below the diagonal
    rows = np.arange(n)
    unit = jnp.asarray(np.stack([np.zeros(n), np.ones(n)], -1))  # [0 1] for every i
    cols = [None] * n
    cols[n - 1] = jnp.where((rows == n - 1)[:, None], unit, 0.0) * jnp.ones((*mu0.shape[:-1], 1, 1))
    for j in range(n - 1, 0, -1):
        carried = _row_times(cols[j], a[..., None, j, :, :])
        diagonal = (rows == j - 1)[:, None]
        cols[j - 1] = jnp.where((rows > j - 1)[:, None], carried, jnp.where(diagonal, unit, 0.0))
    back = jnp.stack(cols, -2)  # (B, Ni, Nj, 2)
    lead = back[..., 1] - back[..., 0]  # (B, Ni, Nj)
    return lead * q[..., None, :-1, 0], lead * q[..., None, :-1, 1]


@partial(jax.jit, static_argnames=("n_hidden",))
def chain_bound(mu0, mu1, xi, weights, biases, n_hidden: int):
    """L for the Markov-chain Q (2.13 with 2.43, 2.48-2.50): (B,).

    sum_i <s_i><z_i> - sum_i [xi_i <z_i> + ln(<e^{-xi_i z_i}> + <e^{(1-xi_i) z_i}>)] + S(Q).
    """
    mu0, mu1, xi, weights, biases = (jnp.asarray(x) for x in (mu0, mu1, xi, weights, biases))
    m = chain_marginals(mu0, mu1)[..., 1:, 1]
    z = jnp.einsum("...ij,...j->...i", weights, m) + biases
    e_lo, _, _ = chain_expected_exp(mu0, mu1, weights, biases, -xi)
    e_hi, _, _ = chain_expected_exp(mu0, mu1, weights, biases, 1 - xi)
    return jnp.sum(m * z - xi * z - jnp.log(e_lo + e_hi), -1) + chain_entropy(mu0, mu1, n_hidden)


@partial(jax.jit, static_argnames=("n_hidden",))
def chain_bound_gradients(mu0, mu1, xi, weights, biases, n_hidden: int):
    """dL/dmu_j0, dL/dmu_j1, dL/dxi_i, dL/dw_ij and dL/dw_i0, assembled from App. B."""
    mu0, mu1, xi, weights, biases = (jnp.asarray(x) for x in (mu0, mu1, xi, weights, biases))
    q = chain_marginals(mu0, mu1)
    m = q[..., 1:, 1]
    z = jnp.einsum("...ij,...j->...i", weights, m) + biases
    e_lo, f_lo, b_lo = chain_expected_exp(mu0, mu1, weights, biases, -xi)
    e_hi, f_hi, b_hi = chain_expected_exp(mu0, mu1, weights, biases, 1 - xi)
    inv = 1.0 / (e_lo + e_hi)  # -dL/dE_i
    # direct partials in the marginals m_k
    dl_dm = z + jnp.einsum("...i,...ik->...k", m - xi, weights)
    s0, s1 = _entropy(mu0), _entropy(mu1)
    # entropy 2.50 through <s_{i-1}>, i hidden, i-1 >= 1
    ds_dprev = (
        jnp.zeros_like(m).at[..., : n_hidden - 1].set(s1[..., 1:n_hidden] - s0[..., 1:n_hidden])
    )
    dl_dm = dl_dm + ds_dprev
    dm0, dm1 = d_marginals_dmu(mu0, mu1)
    g0 = jnp.einsum("...i,...ij->...j", dl_dm, dm0)
    g1 = jnp.einsum("...i,...ij->...j", dl_dm, dm1)
    prev = q[..., :-1, 1]
    h = slice(0, n_hidden)  # entropy 2.50 directly in mu (visible units: none)
    g0 = g0.at[..., h].add((1 - prev[..., h]) * _entropy_slope(mu0[..., h]))
    g1 = g1.at[..., h].add(prev[..., h] * _entropy_slope(mu1[..., h]))
    for t, f, b in ((-xi, f_lo, b_lo), (1 - xi, f_hi, b_hi)):
        d0, d1 = d_expected_exp_dmu(mu0, mu1, weights, t, f, b)
        g0 = g0 - jnp.einsum("...i,...ij->...j", inv, d0)
        g1 = g1 - jnp.einsum("...i,...ij->...j", inv, d1)
    gxi = -z + inv * (
        d_expected_exp_dt(weights, biases, -xi, f_lo, b_lo)
        + d_expected_exp_dt(weights, biases, 1 - xi, f_hi, b_hi)
    )
    dw_lo, db_lo = d_expected_exp_dw(weights, biases, -xi, f_lo, b_lo)
    dw_hi, db_hi = d_expected_exp_dw(weights, biases, 1 - xi, f_hi, b_hi)
    gw = (m - xi)[..., :, None] * m[..., None, :] - inv[..., None] * (dw_lo + dw_hi)
    gb = (m - xi) - inv * (db_lo + db_hi)
    return g0, g1, gxi, gw, gb


@dataclass(frozen=True)
class ChainState:
    """Markov-chain solution for a batch: mu_i0, mu_i1, xi (B, N) and the bound (B,)."""

    mu0: np.ndarray
    mu1: np.ndarray
    xi: np.ndarray
    bound: np.ndarray
    iterations: int


def _unpack(x, b, n_hidden, tied, visible):
    """Logits and xi from the flat optimiser vector; visible units fixed at their values."""
    n = len(tied)
    free = ~tied[:n_hidden]
    nf = int(free.sum())
    x = x.reshape(b, 2 * n_hidden - (n_hidden - nf) + n)
    phi0 = x[:, :n_hidden]
    phi1 = phi0.at[:, np.flatnonzero(free)].set(x[:, n_hidden : n_hidden + nf])
    xi = x[:, n_hidden + nf :]
    vis = jnp.broadcast_to(visible, (b, n - n_hidden))
    mu0 = jnp.concatenate([expit(phi0), vis], -1)
    mu1 = jnp.concatenate([expit(phi1), vis], -1)
    return mu0, mu1, xi, free


@partial(jax.jit, static_argnames=("b", "n_hidden", "tied"))
def _negative_bound_and_gradient(x, weights, biases, visible, b, n_hidden, tied):
    """The optimiser's objective: minus the summed chain bound of a chunk of networks and
    its gradient in the flat vector (logits phi_ij, App. B.1, and xi); ``tied`` a tuple."""
    tied = np.asarray(tied)
    mu0, mu1, xi, free = _unpack(x, b, n_hidden, tied, visible)
    value = chain_bound(mu0, mu1, xi, weights, biases, n_hidden)
    g0, g1, gxi, _, _ = chain_bound_gradients(mu0, mu1, xi, weights, biases, n_hidden)
    d0 = g0[:, :n_hidden] * mu0[:, :n_hidden] * (1 - mu0[:, :n_hidden])
    d1 = g1[:, :n_hidden] * mu1[:, :n_hidden] * (1 - mu1[:, :n_hidden])
    d0 = d0 + jnp.where(free, 0.0, d1)  # a tied unit's one logit drives both
    grad = jnp.concatenate([d0, d1[:, np.flatnonzero(free)], gxi], -1)
    return -value.sum(), -grad.ravel()


@partial(jax.jit, static_argnames=("b", "n_hidden", "tied"))
def _chunk_solution(x, weights, biases, visible, b, n_hidden, tied):
    """mu_i0, mu_i1, xi and the bound of a chunk at the optimiser's vector."""
    mu0, mu1, xi, _ = _unpack(x, b, n_hidden, np.asarray(tied), visible)
    return mu0, mu1, xi, chain_bound(mu0, mu1, xi, weights, biases, n_hidden)


def fit_markov_chain(
    weights,
    biases,
    visible,
    layer_sizes: tuple[int, ...],
    mu_hidden0,
    xi0,
    mu_hidden1=None,
    chunk: int = 250,
    max_iter: int = 1000,
    gtol: float = 1e-9,
    ftol: float = 1e-13,
) -> ChainState:
    """Maximise the chain bound by L-BFGS-B (the thesis used SCG) in the logits and xi,
    from mu_i0 = ``mu_hidden0``, mu_i1 = ``mu_hidden1`` (default the same: a mean-field start,
    as §2.5.1 did); networks are optimised ``chunk`` at a time as one separable problem."""
    weights, biases = np.asarray(weights, float), np.asarray(biases, float)
    n_batch = weights.shape[0]
    n_hidden = np.shape(mu_hidden0)[-1]
    tied = tied_units(tuple(layer_sizes))
    visible = np.asarray(visible, float)
    mu_hidden0 = np.clip(np.asarray(mu_hidden0, float), 1e-10, 1 - 1e-10)
    mu_hidden1 = (
        mu_hidden0
        if mu_hidden1 is None
        else np.clip(np.asarray(mu_hidden1, float), 1e-10, 1 - 1e-10)
    )
    free = ~tied[:n_hidden]
    logit = lambda p: np.log(p) - np.log1p(-p)  # noqa: E731
    x0_all = np.concatenate(
        [logit(mu_hidden0), logit(mu_hidden1)[:, free], np.asarray(xi0, float)], -1
    )
    out_mu0, out_mu1, out_xi, out_bound = [], [], [], []
    iters = 0
    for start in range(0, n_batch, chunk):
        sl = slice(start, min(start + chunk, n_batch))
        w, bb = weights[sl], biases[sl]
        vis = visible[sl] if visible.ndim == 2 else visible
        b = w.shape[0]

        args = (jnp.asarray(w), jnp.asarray(bb), jnp.asarray(vis, float))
        static = {"b": b, "n_hidden": n_hidden, "tied": tuple(bool(t) for t in tied)}

        def objective(x, args=args, static=static):
            value, grad = _negative_bound_and_gradient(jnp.asarray(x), *args, **static)
            return float(value), np.asarray(grad)

        res = minimize(
            objective,
            x0_all[sl].ravel(),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "gtol": gtol, "ftol": ftol, "maxcor": 20},
        )
        iters = max(iters, res.nit)
        mu0, mu1, xi, bound = _chunk_solution(jnp.asarray(res.x), *args, **static)
        out_mu0.append(np.asarray(mu0))
        out_mu1.append(np.asarray(mu1))
        out_xi.append(np.asarray(xi))
        out_bound.append(np.asarray(bound))
    return ChainState(
        np.concatenate(out_mu0),
        np.concatenate(out_mu1),
        np.concatenate(out_xi),
        np.concatenate(out_bound),
        iters,
    )
