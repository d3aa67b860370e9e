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

from ...runtime.jax_runtime import jax, jnp

SQRT_HALF_PI = math.sqrt(math.pi / 2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
TINY_VARIANCE = 1e-300
ASYMPTOTIC_ERFCX = 1e6  # beyond it erfcx's two-term series; below it R/S (whose x^6 overflows)

# Cephes' rational approximations of erfc (ndtr.c; Moshier 1984-2000, as in XLA's erfc):
# erf(x) = x T(x^2) / U(x^2) for x < 1, erfc(x) = e^{-x^2} P(x) / Q(x) for 1 <= x < 8 and
# e^{-x^2} R(x) / S(x) beyond; U, Q, S have a leading coefficient 1, left out here.
_ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
          7.00332514112805075473e3, 5.55923013010394962768e4)  # fmt: skip
_ERF_U = (3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4)  # fmt: skip
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)  # fmt: skip
_ERFC_Q = (1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2)  # fmt: skip
_ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
           6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)  # fmt: skip
_ERFC_S = (2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
           1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)  # fmt: skip


def _polynomial(x, coefficients, monic: bool = False):
    """Horner's rule, highest power first; ``monic`` adds a leading coefficient 1."""
    value = x + coefficients[0] if monic else jnp.full_like(x, coefficients[0])
    for c in coefficients[1:]:
        value = value * x + c
    return value


def erfcx_nonnegative(x):
    """The scaled complementary error function e^{x^2} erfc(x) for x >= 0, directly from
    Cephes' rational approximations: P(x)/Q(x) on [1, 8), R(x)/S(x) beyond (no exponential,
    no overflow), e^{x^2} (1 - x T(x^2)/U(x^2)) below 1. One exponential and three rational
    functions of elementwise work (and a two-term asymptotic series beyond 1e6, where R/S would
    overflow, e.g. for the point estimates' zero variances), where jax's erfcx (e^{x^2} times XLA's erfc, itself
    e^{-x^2} P/Q, and an asymptotic series for large x) costs several kernels."""
    small = x < 1.0
    xs = jnp.where(small, x, 0.0)
    z = xs * xs
    below_one = jnp.exp(z) * (1.0 - xs * _polynomial(z, _ERF_T) / _polynomial(z, _ERF_U, True))
    xm = jnp.minimum(x, 8.0)  # every branch sees an argument where it is finite
    middle = _polynomial(xm, _ERFC_P) / _polynomial(xm, _ERFC_Q, True)
    xt = jnp.clip(x, 8.0, ASYMPTOTIC_ERFCX)
    tail = _polynomial(xt, _ERFC_R) / _polynomial(xt, _ERFC_S, True)
    xl = jnp.maximum(x, ASYMPTOTIC_ERFCX)  # (1 - 1/(2 x^2)) / (sqrt(pi) x), error 3/(4 x^4)
    far = (1.0 - 0.5 / (xl * xl)) / (math.sqrt(math.pi) * xl)
    return jnp.where(
        small, below_one, jnp.where(x < 8.0, middle, jnp.where(x < ASYMPTOTIC_ERFCX, tail, far))
    )


def normal_pdf(a):
    """Standard normal density phi(a)."""
    return INV_SQRT_2PI * jnp.exp(-0.5 * a * a)


def mills_ratio_negative(a):
    """Phi(a) / phi(a) for a <= 0, via the scaled complementary error function (no underflow)."""
    return SQRT_HALF_PI * erfcx_nonnegative(-a / math.sqrt(2.0))


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
