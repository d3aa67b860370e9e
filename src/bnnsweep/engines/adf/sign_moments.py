"""Moments of a sign unit under a Gaussian input (paper 004 sec. 3, "discontinuous activations
such as sign(u) pose no additional complications as long as the Gaussian convolution of the
discontinuous pieces is computable"; fig. 1, left; the units of EBP, Soudry et al. 2014).

For u ~ N(mu, tau) and z = sign(u), with s = sqrt(tau), a = mu / s and Phi the standard normal
distribution,

    E[z]   = P(u > 0) - P(u < 0) = 2 Phi(a) - 1 = erf(a / sqrt 2),
    E[z^2] = 1,   Var[z] = 1 - E[z]^2 = 4 Phi(a) Phi(-a).

Written as 1 - E[z]^2 the variance cancels for |a| >> 1; here both moments use
Q = Phi(-|a|) = phi(a) r (the Mills ratio of ``relu_moments``), E[z] = sign(a) (1 - 2 Q) and
Var[z] = 4 Q (1 - Q), exact to rounding in the tails. Derivatives: dE[z]/dmu = 2 phi(a) / s,
dE[z]/dtau = -a phi(a) / tau, dVar/d. = -2 E[z] dE[z]/d. As tau -> 0, E[z] -> sign(mu): the
expected activation tends to the activation it smooths (fig. 1's caption).

Pure jax.numpy functions (float64), the interface of ``relu_moments``.
"""

from __future__ import annotations

from ...runtime.jax_runtime import jnp
from .relu_moments import TINY_VARIANCE, mills_ratio_negative, normal_pdf


def sign_moments(mu, tau):
    """Mean and variance of sign(u), u ~ N(mu, tau), and their derivatives.

    Returns ``(mean, var, dmean_dmu, dmean_dtau, dvar_dmu, dvar_dtau)``."""
    tau = jnp.maximum(tau, TINY_VARIANCE)
    s = jnp.sqrt(tau)
    a = mu / s
    pdf = normal_pdf(a)
    q = pdf * mills_ratio_negative(-jnp.abs(a))  # Phi(-|a|)
    mean = jnp.sign(a) * (1.0 - 2.0 * q)
    var = 4.0 * q * (1.0 - q)
    dmean_dmu = 2.0 * pdf / s
    dmean_dtau = -a * pdf / tau
    return mean, var, dmean_dmu, dmean_dtau, -2.0 * mean * dmean_dmu, -2.0 * mean * dmean_dtau
