"""ln Z of one observation under the Gaussian output approximation N(nu, psi), its
derivatives, and the predictive distributions (paper 004 eq. 9, 12-25).

Every ``log_z`` takes the output moments ``nu``, ``psi`` of shape (..., P) and targets ``y``
(..., P) and returns ``(ln Z (...), d lnZ/d nu (..., P), d lnZ/d psi (..., P))``; the leading
axes are replicates, or none inside the compiled filter. Targets: Gaussian real values; probit
and softmax the class index (0/1, or 0..C-1) in column 0; Poisson non-negative counts.
Pure jax.numpy functions (float64).
"""

from __future__ import annotations

import math

from ...runtime.jax_runtime import jax, jnp
from .poisson_lognormal import poisson_lognormal_log_z
from .relu_moments import inverse_mills, log_probit

LOG_2PI = math.log(2.0 * math.pi)

_logsumexp = jax.scipy.special.logsumexp
_gammaln = jax.scipy.special.gammaln
_digamma = jax.scipy.special.digamma


# ---- Gaussian with a Gamma noise precision (eq. 25; HL&A 2015 sec. 3.1) ------------------


def gaussian_log_z(nu, psi, y, noise_var):
    """ln N(y | nu, psi + noise_var), summed over outputs, and its derivatives (eq. 25).

    With gamma ~ Gamma(a, b) the Student-t marginal is replaced by the Gaussian with the same
    variance, noise_var = b / (a - 1) (HL&A 2015 eq. 13). ``noise_var`` has the leading shape.
    """
    s = psi + jnp.asarray(noise_var)[..., None]
    diff = y - nu
    log_z = jnp.sum(-0.5 * (LOG_2PI + jnp.log(s) + diff * diff / s), axis=-1)
    g_nu = diff / s
    g_psi = 0.5 * (diff * diff / s - 1.0) / s
    return log_z, g_nu, g_psi


def gamma_moment_match(y, nu, psi, a, b):
    """Moment-matched Gamma(a', b') of the precision gamma in
    N(y | nu, psi + 1/gamma) Gamma(gamma | a, b) (HL&A 2015 eq. 14-15).

    With Z_k = N(y | nu, psi + b/(a + k - 1)) standing for the normaliser with shape a + k:
    E[gamma] = (a/b) Z_1/Z_0, E[gamma^2] = a(a+1)/b^2 Z_2/Z_0, hence
    a' = 1 / ((a+1)/a Z_0 Z_2 / Z_1^2 - 1) and b' = 1 / ((a+1)/b Z_2/Z_1 - (a/b) Z_1/Z_0).
    Shapes: y, nu, psi (..., P) summed over P; a, b (...).
    """
    diff2 = (y - nu)[..., None, :] ** 2
    shape = a[..., None] + jnp.arange(3.0)  # a + k for k = 0, 1, 2, in one array
    s = psi[..., None, :] + (b[..., None] / (shape - 1.0))[..., None]
    log_zk = jnp.sum(-0.5 * (LOG_2PI + jnp.log(s) + diff2 / s), axis=-1)
    l0, l1, l2 = log_zk[..., 0], log_zk[..., 1], log_zk[..., 2]
    a_new = 1.0 / (jnp.exp(l2 - 2.0 * l1 + l0) * (a + 1.0) / a - 1.0)
    b_new = 1.0 / (jnp.exp(l2 - l1) * (a + 1.0) / b - jnp.exp(l1 - l0) * a / b)
    return a_new, b_new


# ---- probit (eq. 23-24) -------------------------------------------------------------------


def probit_log_z(nu, psi, y):
    """ln Phi(t nu / sqrt(1 + psi)) with t = +-1 from the 0/1 label (paper 004 eq. 24)."""
    t = 2.0 * y[..., :1] - 1.0
    scale = jnp.sqrt(1.0 + psi)
    a = t * nu / scale
    ratio = inverse_mills(a)
    g_nu = ratio * t / scale
    g_psi = -0.5 * ratio * a / (1.0 + psi)
    return log_probit(a)[..., 0], g_nu, g_psi


def probit_probs(nu, psi):
    """Class probabilities [1 - p, p] with p = Phi(nu / sqrt(1 + psi)), shape (..., 2)
    (paper 004 eq. 23)."""
    a = nu[..., 0] / jnp.sqrt(1.0 + psi[..., 0])
    return jnp.stack([jnp.exp(log_probit(-a)), jnp.exp(log_probit(a))], axis=-1)


# ---- softmax (eq. 10-18) ------------------------------------------------------------------


def one_hot(y, n_classes):
    """Indicator rows of the class index in column 0 of y (..., 1) -> (..., C)."""
    return jax.nn.one_hot(y[..., 0].astype(jnp.int32), n_classes, dtype=jnp.float64)


def softmax_bound_log_z(nu, psi, y):
    """The log bound ln Z >= y.nu - lse(nu + psi/2) and its gradients (paper 004 eq. 14-15):
    d/dnu = y - t, d/dpsi = -t/2 with ln t = (nu + psi/2) - lse(nu + psi/2)."""
    onehot = one_hot(y, nu.shape[-1])
    shifted = nu + 0.5 * psi
    lse = _logsumexp(shifted, axis=-1, keepdims=True)
    t = jnp.exp(shifted - lse)
    return jnp.sum(onehot * nu, axis=-1) - lse[..., 0], onehot - t, -0.5 * t


def softmax_mc_log_z(nu, psi, y, eps):
    """Reparameterised Monte Carlo estimate of ln Z and its gradients (paper 004 eq. 16-18).

    z_s = nu + sqrt(psi) eps_s (eq. 17), eps (..., S, C). ln Z ~ ln (1/S) sum_s p(y | z_s) and
    grad ln Z ~ sum_s p(y | z_s) grad ln p(y | z_s) / sum_s p(y | z_s) (eq. 18), with
    d ln p/dz = y - softmax(z) and dz/dpsi = eps / (2 sqrt psi).
    """
    onehot = one_hot(y, nu.shape[-1])[..., None, :]
    sd = jnp.sqrt(jnp.maximum(psi, 1e-300))[..., None, :]
    z = nu[..., None, :] + sd * eps
    log_soft = z - _logsumexp(z, axis=-1, keepdims=True)
    log_p = jnp.sum(onehot * log_soft, axis=-1)  # (..., S)
    log_z = _logsumexp(log_p, axis=-1) - math.log(eps.shape[-2])
    weights = jnp.exp(log_p - _logsumexp(log_p, axis=-1, keepdims=True))[..., None]
    dlogp_dz = onehot - jnp.exp(log_soft)
    g_nu = jnp.sum(weights * dlogp_dz, axis=-2)
    g_psi = jnp.sum(weights * dlogp_dz * eps, axis=-2) / (2.0 * sd[..., 0, :])
    return log_z, g_nu, g_psi


def softmax_mc_probs(nu, psi, key, n_samples: int):
    """Predictive class probabilities (1/S) sum_s softmax(nu + sqrt(psi) eps_s)
    (paper 004 supplement eq. 6), nu/psi (..., C), eps drawn from the jax ``key``."""
    eps = jax.random.normal(key, (n_samples, *nu.shape), dtype=jnp.float64)
    z = nu + jnp.sqrt(psi) * eps
    return jnp.mean(jnp.exp(z - _logsumexp(z, axis=-1, keepdims=True)), axis=0)


# ---- Poisson with the negative-binomial approximation (eq. 19-22) -------------------------

MIN_PSI_NB = 1e-8


def negative_binomial_logpmf(y, nu, psi):
    """ln NB(y | mean e^nu, scale psi) = ln Gamma(y + 1/psi) - ln Gamma(y + 1) - ln Gamma(1/psi)
    + y ln(psi mu / (1 + psi mu)) - (1/psi) ln(1 + psi mu), mu = e^nu (paper 004 eq. 22, whose
    printed 'nu e^psi' should read 'psi e^nu')."""
    psi = jnp.maximum(psi, MIN_PSI_NB)
    r = 1.0 / psi
    log1p_pm = jnp.logaddexp(0.0, jnp.log(psi) + nu)  # ln(1 + psi mu)
    return (
        _gammaln(y + r)
        - _gammaln(y + 1.0)
        - _gammaln(r)
        + y * (jnp.log(psi) + nu - log1p_pm)
        - r * log1p_pm
    )


def poisson_nb_log_z(nu, psi, y):
    """ln Z of the Poisson likelihood with log-rate N(nu, psi), approximated by the negative
    binomial of eq. 21-22, and its derivatives:
    d/dnu = (y - mu)/(1 + psi mu),
    d/dpsi = [ln(1 + psi mu) - (digamma(y + 1/psi) - digamma(1/psi))]/psi^2 + (y - mu)/(psi (1 + psi mu)).
    """
    psi = jnp.maximum(psi, MIN_PSI_NB)
    mu = jnp.exp(nu)
    one_pm = 1.0 + psi * mu
    log1p_pm = jnp.logaddexp(0.0, jnp.log(psi) + nu)
    g_nu = (y - mu) / one_pm
    g_psi = (log1p_pm - (_digamma(y + 1.0 / psi) - _digamma(1.0 / psi))) / psi**2 + (y - mu) / (
        psi * one_pm
    )
    return jnp.sum(negative_binomial_logpmf(y, nu, psi), axis=-1), g_nu, g_psi


def poisson_quadrature_log_z(nu, psi, y):
    """ln Z of the Poisson likelihood with log-rate N(nu, psi), summed over outputs, and its
    derivatives, by quadrature of eq. 20 itself (``poisson_lognormal``)."""
    log_z, g_nu, g_psi = poisson_lognormal_log_z(nu, psi, y)
    return jnp.sum(log_z, axis=-1), g_nu, g_psi


def negative_binomial_mode(nu, psi):
    """Mode of NB(e^nu, psi): floor((1 - psi) e^nu) when psi < 1, else 0 (paper 004 sec. 4)."""
    return jnp.where(psi < 1.0, jnp.floor((1.0 - psi) * jnp.exp(nu)), 0.0)


# ---- the Gaussian-rounded baseline for counts (paper 004 sec. 6) ---------------------------


def rounded_gaussian_logpmf(y, mean, var):
    """ln P(Y = y) for the count Y = max(0, round(G)), G ~ N(mean, var): the predictive of
    Gaussian regression whose predictions are rounded (paper 004 sec. 6's baseline), a
    distribution over counts to set beside the negative binomial. P(Y = 0) = Phi((0.5 - mean)
    / sd), P(Y = k) = Phi((k + 0.5 - mean) / sd) - Phi((k - 0.5 - mean) / sd); the difference is
    taken in the tail where both terms are small, so that it keeps its digits far from the
    mean. For var >> 1 it is the Gaussian density at y to O(1 / var)."""
    sd = jnp.sqrt(var)
    upper = (y + 0.5 - mean) / sd
    lower = jnp.where(y <= 0, -jnp.inf, (y - 0.5 - mean) / sd)
    flip = lower > 0  # both in the upper tail: P = Phi(-lower) - Phi(-upper)
    hi = jnp.where(flip, -lower, upper)
    lo = jnp.where(flip, -upper, lower)
    log_hi = log_probit(hi)
    return log_hi + jnp.log1p(-jnp.exp(log_probit(lo) - log_hi))


def rounded_count(mean):
    """The count a rounded Gaussian predicts: the nearest non-negative whole number."""
    return jnp.maximum(jnp.round(mean), 0.0)
