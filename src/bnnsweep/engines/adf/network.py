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
summed over the T points (the ADF update uses T = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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

    def init_means(self, rngs: list[np.random.Generator]) -> list[np.ndarray]:
        """Symmetry-breaking means m ~ N(0, 1/D) per replicate, each from its own stream
        (HL&A 2015 sec. 3.4), so a replicate's numbers do not depend on its batch-mates."""
        per_rep = [
            [rng.standard_normal((o, i)) / np.sqrt(i) for o, i in self.shapes] for rng in rngs
        ]
        return [np.stack([rep[k] for rep in per_rep]) for k in range(len(self.shapes))]


def _with_bias(mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ones = np.ones((*mean.shape[:-1], 1))
    return np.concatenate([mean, ones], axis=-1), np.concatenate([var, 0.0 * ones], axis=-1)


def forward(means, variances, x: np.ndarray, keep: bool = False):
    """Output moments (nu, psi), each (R, T, P), of inputs x (R, T, I) (paper 004 eq. 7-8).

    With ``keep`` also returns the per-layer quantities the reverse pass needs.
    """
    zm, zv = x, np.zeros_like(x)
    cache = []
    n_layers = len(means)
    for layer, (m, v) in enumerate(zip(means, variances, strict=True)):
        zm1, zv1 = _with_bias(zm, zv)
        fan_in = m.shape[-1]
        mt, m2t, vt = (np.swapaxes(a, -1, -2) for a in (m, m * m, v))
        second = zm1 * zm1 + zv1
        mu = (zm1 @ mt) / np.sqrt(fan_in)
        tau = (zv1 @ m2t + second @ vt) / fan_in
        if layer == n_layers - 1:
            if keep:
                cache.append((zm1, zv1, second, None))
            return (mu, tau, cache) if keep else (mu, tau)
        zm, zv, *derivs = relu_moments(mu, tau)
        if keep:
            cache.append((zm1, zv1, second, derivs))
    raise AssertionError("unreachable")


def backward(means, variances, cache, g_nu: np.ndarray, g_psi: np.ndarray):
    """Gradients (lists like ``means``) of a function of the output given its derivatives
    g_nu = d/dnu and g_psi = d/dpsi (R, T, P): reverse-mode differentiation of ``forward``."""
    g_mu, g_tau = g_nu, g_psi
    grads_m: list[np.ndarray] = [None] * len(means)  # type: ignore[list-item]
    grads_v: list[np.ndarray] = [None] * len(means)  # type: ignore[list-item]
    for layer in range(len(means) - 1, -1, -1):
        m, v = means[layer], variances[layer]
        zm1, zv1, second, _ = cache[layer]
        fan_in = m.shape[-1]
        sq = np.sqrt(fan_in)
        g_mu_t, g_tau_t = np.swapaxes(g_mu, -1, -2), np.swapaxes(g_tau, -1, -2)
        grads_m[layer] = (g_mu_t @ zm1) / sq + 2.0 * m * (g_tau_t @ zv1) / fan_in
        grads_v[layer] = (g_tau_t @ second) / fan_in
        if layer == 0:
            break
        g_zm = (g_mu @ m) / sq + 2.0 * zm1 * ((g_tau @ v) / fan_in)
        g_zv = (g_tau @ (m * m + v)) / fan_in
        g_zm, g_zv = g_zm[..., :-1], g_zv[..., :-1]  # the bias unit is constant
        dm_dmu, dm_dtau, dv_dmu, dv_dtau = cache[layer - 1][3]
        g_mu = g_zm * dm_dmu + g_zv * dv_dmu
        g_tau = g_zm * dm_dtau + g_zv * dv_dtau
    return grads_m, grads_v
