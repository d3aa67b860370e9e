"""Forward propagation of means and variances through a ReLU network, and its reverse pass.

Paper 004 sec. 3 (eq. 7-9), after Hernandez-Lobato & Adams (2015) sec. 3.2. Layer l has a
weight matrix W_l of shape (D_l, D_{l-1} + 1) whose last column multiplies the bias unit
(mean 1, variance 0). Every weight is an independent Gaussian N(m, v). The input of unit i,
scaled by the fan-in D = D_{l-1} + 1 (the bias counted, as in PBP), is treated as Gaussian with

    mu_i  = sum_j m_ij E[z_j] / sqrt(D)
    tau_i = sum_j (m_ij^2 Var[z_j] + v_ij E[z_j^2]) / D        (= E[w^2]E[z^2] - m^2 E[z]^2)

ReLU units map (mu, tau) to the mean and variance of max(0, u) (eq. 8); the output layer is
linear, so the network output is N(nu, psi) with nu = mu_L, psi = tau_L.

Everything is batched: weights carry a leading replicate axis R (independent networks
advanced together) and inputs have shape (R, T, I) for T points per replicate. The reverse
pass returns d/dm and d/dv of any scalar function of (nu, psi) given d/dnu and d/dpsi,
summed over the T points (the ADF update uses T = 1). The leading replicate axis is optional:
the filter calls these on one replicate's weights (D_l, D_{l-1} + 1) and inputs (T, I) under
``jax.vmap``. Both are jitted jax.numpy functions, so eager calls run compiled too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ...runtime.jax_runtime import jax, jnp
from .relu_moments import relu_moments


@dataclass(frozen=True)
class Architecture:
    """Layer widths [I, H_1, ..., H_{L-1}, P]; weight shapes (R, D_l, D_{l-1} + 1)."""

    widths: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.widths) < 2 or any(int(w) < 1 for w in self.widths):
            raise ValueError(
                f"layer widths must be >= 1 with inputs and outputs, got {self.widths}"
            )

    @property
    def shapes(self) -> list[tuple[int, int]]:
        return [(out, inp + 1) for inp, out in zip(self.widths[:-1], self.widths[1:], strict=True)]

    @property
    def n_weights(self) -> int:
        return sum(o * i for o, i in self.shapes)

    def init_means(self, rngs: list[np.random.Generator], unit: bool = False) -> list[np.ndarray]:
        """Symmetry-breaking means m ~ N(0, 1/D) per replicate (HL&A 2015's code), or with
        ``unit`` N(0, 1), each from its own stream, so a replicate's numbers do not depend on
        its batch-mates.

        With eq. 7's 1/sqrt(D), N(0, 1/D) means make the means' network scale its inputs by
        about sqrt(|z|^2 / D) / sqrt(D) a layer, while the variance path, v E[z^2] / D with
        v ~ 1, keeps their scale: every hidden unit starts with mean inputs ~1/sqrt(D) of
        their standard deviation, nearly the same for every input (mnist_standin: the first
        hidden layer's means vary over the images by 0.02 around 0.21, the second's by 0.01),
        and a two-layer softmax net stays at chance for thousands of points. N(0, 1) means
        keep the means' scale through the layers."""
        per_rep = [
            [rng.standard_normal((o, i)) / (1.0 if unit else np.sqrt(i)) for o, i in self.shapes]
            for rng in rngs
        ]
        return [np.stack([rep[k] for rep in per_rep]) for k in range(len(self.shapes))]


def _apply(z, w):
    """sum_j z[t, j] w[o, j]: z (..., T, D), w (..., O, D) -> (..., T, O).

    For one point (T = 1, the filter) an elementwise product summed over j, whose summation
    order does not depend on how many replicates are batched (a batched matrix product's
    does, which would make a replicate's numbers depend on its batch-mates); matmul otherwise.
    """
    if z.shape[-2] == 1:
        return jnp.sum(z[..., :, None, :] * w[..., None, :, :], axis=-1)
    return z @ jnp.swapaxes(w, -1, -2)


def _add_pairs(x, y):
    return x[0] + y[0], x[1] + y[1]


def _unit_moments(zm1, zv1, second, m, v, exact_inputs: bool):
    """The unscaled sums of eq. 7, sum_j m_oj E[z_j] and
    sum_j (m_oj^2 Var[z_j] + v_oj E[z_j^2]) (..., T, O); with ``exact_inputs`` (Var[z] = 0)
    the first term of the second sum is left out.

    For one point (T = 1, the filter) both sums are one two-output reduction of elementwise
    products over j (one kernel, and its summation order does not depend on the batch size);
    matrix products otherwise.
    """
    if zm1.shape[-2] == 1:
        zm_j, zv_j, second_j = zm1[..., :, None, :], zv1[..., :, None, :], second[..., :, None, :]
        m_oj, v_oj = m[..., None, :, :], v[..., None, :, :]
        var_terms = second_j * v_oj if exact_inputs else zv_j * (m_oj * m_oj) + second_j * v_oj
        zero = jnp.zeros((), dtype=m.dtype)
        return jax.lax.reduce((zm_j * m_oj, var_terms), (zero, zero), _add_pairs, (zm_j.ndim - 1,))
    mu = _apply(zm1, m)
    if exact_inputs:
        return mu, _apply(second, v)
    return mu, _apply(zv1, m * m) + _apply(second, v)


def _add_triples(x, y):
    return x[0] + y[0], x[1] + y[1], x[2] + y[2]


def _back_moments(g_mu, g_tau, m, v):
    """The sums over a layer's outputs o of the reverse pass (eq. 7 differentiated),
    sum_o g_mu[t, o] m_oj, sum_o g_tau[t, o] v_oj and sum_o g_tau[t, o] (m_oj^2 + v_oj),
    g (..., T, O), m, v (..., O, D) -> three (..., T, D).

    For one point (T = 1, the filter) one three-output reduction over o of elementwise
    products, as in ``_unit_moments``: a single-output reduction of a product is rewritten by
    the compiler into a matrix-vector product (a YNNPACK kernel) or, when the replicate axis
    has size 1, into a tree of partial sums, so its summation order, and a replicate's
    numbers, depended on the batch size; a multi-output reduction is summed in order.
    Matrix products otherwise.
    """
    if g_mu.shape[-2] == 1:
        gm_o, gt_o = g_mu[..., :, :, None], g_tau[..., :, :, None]
        m_oj, v_oj = m[..., None, :, :], v[..., None, :, :]
        terms = (gm_o * m_oj, gt_o * v_oj, gt_o * (m_oj * m_oj + v_oj))
        zero = jnp.zeros((), dtype=m.dtype)
        return jax.lax.reduce(terms, (zero, zero, zero), _add_triples, (gm_o.ndim - 2,))
    return g_mu @ m, g_tau @ v, g_tau @ (m * m + v)


def _outer_products(pairs):
    """[sum_t g[t, o] z[t, j] for (g, z) in pairs], g (..., T, O), z (..., T, D) -> (..., O, D),
    as one matrix product blockdiag(g_1^T, ..., g_K^T) [z_1; ...; z_K] of shape (K O, D)
    (the off-diagonal blocks are exact zeros, so each entry is the plain sum over t whatever
    the batch size).

    For one point (T = 1, the filter) plain elementwise outer products, which the compiler
    fuses into the weight update (``updates.adf_update``): a matrix product there went to a
    YNNPACK kernel whose call cost more than the update itself.
    """
    if pairs[0][0].shape[-2] == 1:
        return [g[..., 0, :, None] * z[..., 0, None, :] for g, z in pairs]
    k = len(pairs)
    g_t = [jnp.swapaxes(g, -1, -2) for g, _ in pairs]
    zero = jnp.zeros_like(g_t[0])
    left = jnp.concatenate(
        [
            jnp.concatenate([g if i == j else zero for j in range(k)], axis=-1)
            for i, g in enumerate(g_t)
        ],
        axis=-2,
    )
    right = jnp.concatenate([z for _, z in pairs], axis=-2)
    out = left @ right
    n_out = g_t[0].shape[-2]
    return [out[..., i * n_out : (i + 1) * n_out, :] for i in range(k)]


def _with_bias(mean, var):
    ones = jnp.ones((*mean.shape[:-1], 1), dtype=mean.dtype)
    return jnp.concatenate([mean, ones], axis=-1), jnp.concatenate([var, 0.0 * ones], axis=-1)


@partial(jax.jit, static_argnames=("keep",))
def forward(means, variances, x, keep: bool = False):
    """Output moments (nu, psi), each (R, T, P), of inputs x (R, T, I) (paper 004 eq. 7-8).

    With ``keep`` also returns the per-layer quantities the reverse pass needs.
    """
    x = jnp.asarray(x, dtype=jnp.float64)
    zm, zv = x, jnp.zeros_like(x)
    cache = []
    n_layers = len(means)
    for layer, (m, v) in enumerate(zip(means, variances, strict=True)):
        zm1, zv1 = _with_bias(zm, zv)
        fan_in = m.shape[-1]
        second = zm1 * zm1 + zv1
        mu, tau = _unit_moments(zm1, zv1, second, m, v, exact_inputs=layer == 0)
        mu, tau = mu / np.sqrt(fan_in), tau / fan_in
        if layer == n_layers - 1:
            if keep:
                cache.append((zm1, zv1, second, None))
            return (mu, tau, cache) if keep else (mu, tau)
        zm, zv, *derivs = relu_moments(mu, tau)
        if keep:
            cache.append((zm1, zv1, second, derivs))
    raise AssertionError("unreachable")


def _materialised(x):
    """x itself, as a sum of x and zeros over a new axis of two (exact: only a -0 becomes +0),
    so that the compiled program computes it once into an array of its own.

    XLA's CPU fusion otherwise inlines the chain producing a per-unit quantity (the output
    gradients of a layer, computed from the relu moments and the likelihood) into every
    per-weight consumer, recomputing it once per weight of the unit's row (D times) in each of
    the weight updates' loops; a reduction is not inlined into its consumers
    (``jax.lax.optimization_barrier`` is removed by the compiler before fusion here).
    20 Boston splits batched: 54 -> 35 ms per epoch."""
    return jnp.sum(jnp.stack([x, jnp.zeros_like(x)]), axis=0)


@jax.jit
def backward(means, variances, cache, g_nu, g_psi):
    """Gradients (lists like ``means``) of a function of the output given its derivatives
    g_nu = d/dnu and g_psi = d/dpsi (R, T, P): reverse-mode differentiation of ``forward``
    (eq. 7-8 by the chain rule; paper 004 sec. 3's "backward pass of moments")."""
    g_mu, g_tau = g_nu, g_psi
    grads_m: list = [None] * len(means)
    grads_v: list = [None] * len(means)
    for layer in range(len(means) - 1, -1, -1):
        m, v = means[layer], variances[layer]
        g_mu, g_tau = _materialised(g_mu), _materialised(g_tau)
        zm1, zv1, second, _ = cache[layer]
        fan_in = m.shape[-1]
        sq = np.sqrt(fan_in)
        pairs = [(g_mu / sq, zm1), (g_tau / fan_in, second)]
        if layer > 0:  # the inputs of layer 0 have zv = 0
            pairs.append((2.0 * g_tau / fan_in, zv1))
        outer = _outer_products(pairs)
        grads_m[layer] = outer[0] if layer == 0 else outer[0] + m * outer[2]
        grads_v[layer] = outer[1]
        if layer == 0:
            break
        back_m, back_v, back_second = _back_moments(g_mu, g_tau, m, v)
        g_zm = back_m / sq + 2.0 * zm1 * (back_v / fan_in)
        g_zv = back_second / fan_in
        g_zm, g_zv = g_zm[..., :-1], g_zv[..., :-1]  # the bias unit is constant
        dm_dmu, dm_dtau, dv_dmu, dv_dtau = cache[layer - 1][3]
        g_mu = g_zm * dm_dmu + g_zv * dv_dmu
        g_tau = g_zm * dm_dtau + g_zv * dv_dtau
    return grads_m, grads_v
