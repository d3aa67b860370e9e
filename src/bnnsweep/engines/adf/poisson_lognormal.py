"""ln Z of a Poisson count whose log-rate is N(nu, psi), by quadrature (paper 004 eq. 20):

    Z = int Poi(y | e^t) N(t | nu, psi) dt.

Paper 004 replaces the Gaussian of the log-rate by a log-Gamma and gets the negative binomial
of eq. 21-22 (``likelihoods.poisson_nb_log_z``), an approximation made "for large 1/psi".
It fails where the filter starts: a network whose output is e^nu ~ 1 meeting counts in the
hundreds (nu = 0, psi = 0.2, y = 300: ln Z -519 against -85.7, d lnZ/d nu 249 against 28,
so that eq. 6 gives negative variances). Here the integral is done without it.

The integrand's log, l(t) = y t - e^t - ln y! - (t - nu)^2 / (2 psi) - ln(2 pi psi) / 2, is
concave with its mode at t* = nu + psi y - W, W = W0(psi e^(nu + psi y)) (Lambert's W), where
e^t* = W / psi and the curvature is -(1 + W) / psi. Gauss-Hermite quadrature centred at t*
with the Laplace scale s = sqrt(psi / (1 + W)) (t_k = t* + sqrt(2) s x_k) then integrates
what the Laplace approximation leaves, exp(r(d)) with d = t - t* and
r(d) = -(W / psi) (e^d - 1 - d - d^2 / 2) (zero for a Gaussian integrand):

    ln Z = y t* - W / psi - ln y! - (psi y - W)^2 / (2 psi) - ln(1 + W) / 2
           + ln sum_k w_k exp(r(d_k)) - ln(pi) / 2.

The derivatives are the moments of the normalised integrand (the tilted distribution),
d lnZ/d nu = E[t - nu] / psi and d lnZ/d psi = (E[(t - nu)^2] / psi^2 - 1 / psi) / 2, taken
about t* so that nothing cancels: with c = (t* - nu) / psi = y - W / psi,

    d lnZ/d nu  = c + E[d] / psi,
    d lnZ/d psi = (c^2 + 2 c E[d] / psi + (E[d^2] - s^2) / psi^2 - W / (psi (1 + W))) / 2.

Pure jax.numpy functions (float64), any leading shape.
"""

from __future__ import annotations

import math

import numpy as np

from ...runtime.jax_runtime import jax, jnp

QUADRATURE_NODES = 48
"""Gauss-Hermite nodes. Against adaptive quadrature (scipy.integrate.quad) over nu in
[-20, 20], psi in [1e-6, 50], y in [0, 1e5]: ln Z and both derivatives within a relative
1e-5 wherever psi <= 5; at psi = 50 and y = 0, where exp(-e^t) cuts the wide Gaussian off
sharply, within 3 % (24 nodes: 15 %). tests/test_adf_poisson.py checks psi <= 5."""

LAMBERT_W_STEPS = 8
"""Newton steps for W0: from the lower bounds below the iteration rises monotonically and
quadratically to W0; 8 steps agree with scipy.special.lambertw to 2e-15 over
ln x in [-600, 700] (and w + ln w = ln x to 3e-16 up to ln x = 5000)."""

LOG_ARG_FLOOR = -700.0  # below it W0(x) = x to rounding and e^x is subnormal
MIN_PSI = 1e-12  # ln(psi) + nu stays above LOG_ARG_FLOOR for any nu > -670

_NODES, _WEIGHTS = np.polynomial.hermite.hermgauss(QUADRATURE_NODES)
_LOG_WEIGHTS = np.log(_WEIGHTS)
_gammaln = jax.scipy.special.gammaln
_logsumexp = jax.scipy.special.logsumexp


def lambert_w_of_exp(log_x):
    """W0(e^log_x), the root w > 0 of w + ln w = log_x, without forming e^log_x.

    Newton's iteration w <- w (1 + log_x - ln w) / (1 + w) on h(w) = w + ln w - log_x, which
    is increasing and concave, so from a start below the root it rises to it without
    overshooting. Starts: ln x - ln ln x for x >= e (a lower bound of W0 there) and
    x / (1 + x) below (also a lower bound)."""
    log_x = jnp.maximum(log_x, LOG_ARG_FLOOR)
    large = log_x >= 1.0
    lx_large = jnp.where(large, log_x, 1.0)
    x_small = jnp.exp(jnp.minimum(log_x, 1.0))
    w = jnp.where(large, lx_large - jnp.log(lx_large), x_small / (1.0 + x_small))
    for _ in range(LAMBERT_W_STEPS):
        w = w * (1.0 + log_x - jnp.log(w)) / (1.0 + w)
    return w


def poisson_lognormal_log_z(nu, psi, y):
    """ln int Poi(y | e^t) N(t | nu, psi) dt and its derivatives with respect to nu and psi,
    elementwise (paper 004 eq. 20; the module docstring gives the formulas)."""
    psi = jnp.maximum(psi, MIN_PSI)
    w_mode = lambert_w_of_exp(jnp.log(psi) + nu + psi * y)
    rate = w_mode / psi  # e^t* at the mode
    c = y - rate  # (t* - nu) / psi
    t_mode = nu + psi * c
    s2 = psi / (1.0 + w_mode)
    d = math.sqrt(2.0) * jnp.sqrt(s2)[..., None] * _NODES  # (..., K)
    remainder = -rate[..., None] * (jnp.expm1(d) - d - 0.5 * d * d)
    log_terms = _LOG_WEIGHTS + remainder
    log_sum = _logsumexp(log_terms, axis=-1)
    p = jnp.exp(log_terms - log_sum[..., None])
    mean_d = jnp.sum(p * d, axis=-1)
    excess_d2 = 2.0 * s2 * jnp.sum(p * (_NODES * _NODES - 0.5), axis=-1)  # E[d^2] - s^2
    log_z = (
        y * t_mode
        - rate
        - _gammaln(y + 1.0)
        - 0.5 * psi * c * c
        - 0.5 * jnp.log1p(w_mode)
        + log_sum
        - 0.5 * math.log(math.pi)
    )
    g_nu = c + mean_d / psi
    g_psi = 0.5 * (
        c * c + 2.0 * c * mean_d / psi + excess_d2 / (psi * psi) - w_mode / (psi * (1.0 + w_mode))
    )
    return log_z, g_nu, g_psi
