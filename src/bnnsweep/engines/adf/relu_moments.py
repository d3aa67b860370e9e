"""Moments of a rectified Gaussian and of the probit link, computed stably in the tails.

For u ~ N(mu, tau) and z = max(0, u) (paper 004 eq. 8 and its supplement eq. 2-5), with
s = sqrt(tau), a = mu / s, phi and Phi the standard normal density and distribution:

    E[z]   = mu Phi(a) + s phi(a)
    E[z^2] = (mu^2 + tau) Phi(a) + mu s phi(a)

Written as written, these lose all precision for a << 0 (both terms vanish and their
difference is what is wanted) and the variance E[z^2] - E[z]^2 cancels for a >> 0. Here
both signs use forms without cancellation: for a < 0 the Mills ratio
r(a) = Phi(a) / phi(a) = sqrt(pi/2) erfcx(-a / sqrt 2) is factored out,

    E[z] = s phi(a) (1 + a r),   Var[z] = tau phi(a) [(a^2 + 1) r + a - phi(a) (1 + a r)^2],

and for a >= 0 the variance is written with Q = Phi(-a):
Var[z] = tau [1 - Q + a^2 Q (1 - Q) - a phi(a) (1 - 2 Q) - phi(a)^2].

Pure jax.numpy functions (float64), usable inside compiled code and on any array shape.
"""

from __future__ import annotations

import math

from ...jax_runtime import jax, jnp

SQRT_HALF_PI = math.sqrt(math.pi / 2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
TINY_VARIANCE = 1e-300

_erfcx = jax.scipy.special.erfcx


def normal_pdf(a):
    """Standard normal density phi(a)."""
    return INV_SQRT_2PI * jnp.exp(-0.5 * a * a)


def mills_ratio_negative(a):
    """Phi(a) / phi(a) for a <= 0, via the scaled complementary error function (no underflow)."""
    return SQRT_HALF_PI * _erfcx(-a / math.sqrt(2.0))


def inverse_mills(a):
    """phi(a) / Phi(a), the derivative of ln Phi(a), finite for every a (paper 004 eq. 24).

    One erfcx serves both signs: r = Phi(-|a|) / phi(a), so the ratio is 1 / r for a < 0 and
    phi(a) / (1 - phi(a) r) for a >= 0."""
    r = mills_ratio_negative(-jnp.abs(a))
    pdf = normal_pdf(a)
    return jnp.where(a < 0.0, 1.0 / r, pdf / (1.0 - pdf * r))


def log_probit(a):
    """ln Phi(a), accurate for very negative a."""
    return jax.scipy.special.log_ndtr(a)


def relu_moments(mu, tau):
    """Mean and variance of max(0, u), u ~ N(mu, tau), and their derivatives (paper 004 eq. 8).

    Returns ``(mean, var, dmean_dmu, dmean_dtau, dvar_dmu, dvar_dtau)``. The derivatives follow
    from d E[f(u)]/d mu = E[f'(u)] and d E[f(u)]/d tau = E[f''(u)] / 2:
    dE[z]/dmu = Phi(a), dE[z]/dtau = phi(a) / (2 s), dE[z^2]/dmu = 2 E[z], dE[z^2]/dtau = Phi(a),
    so dVar/dmu = 2 E[z] (1 - Phi(a)) and dVar/dtau = Phi(a) - E[z] phi(a) / s.
    """
    tau = jnp.maximum(tau, TINY_VARIANCE)
    s = jnp.sqrt(tau)
    a = mu / s
    pdf = normal_pdf(a)
    neg = a < 0.0
    # one erfcx for both signs: r = Phi(-|a|) / phi(a), the Mills ratio at -|a|
    r = mills_ratio_negative(-jnp.abs(a))
    # a < 0: factor out phi(a) with the Mills ratio r = Phi(a)/phi(a)
    a_neg = jnp.minimum(a, 0.0)
    one_plus_ar = 1.0 + a_neg * r
    mean_neg = s * pdf * one_plus_ar
    var_neg = tau * pdf * ((a_neg * a_neg + 1.0) * r + a_neg - pdf * one_plus_ar**2)
    # a >= 0: Q = Phi(-a) = phi(a) r is small, no cancellation against the leading 1
    a_pos = jnp.maximum(a, 0.0)
    q = pdf * r
    mean_pos = mu * (1.0 - q) + s * pdf
    var_pos = tau * (
        1.0 - q + a_pos * a_pos * q * (1.0 - q) - a_pos * pdf * (1.0 - 2.0 * q) - pdf**2
    )
    cdf = jnp.where(neg, q, 1.0 - q)
    mean = jnp.where(neg, mean_neg, mean_pos)
    var = jnp.maximum(jnp.where(neg, var_neg, var_pos), 0.0)
    dmean_dmu = cdf
    dmean_dtau = 0.5 * pdf / s
    dvar_dmu = 2.0 * mean * (1.0 - cdf)
    dvar_dtau = cdf - mean * pdf / s
    return mean, var, dmean_dmu, dmean_dtau, dvar_dmu, dvar_dtau
