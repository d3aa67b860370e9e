"""The ADF / EP updates of the Gaussian weight factors and the Gamma prior precision.

``adf_update`` is paper 004 eq. 6 (Minka 2001): m' = m + v dlnZ/dm,
v' = v - v^2 [(dlnZ/dm)^2 - 2 dlnZ/dv]. ``refine_prior`` is the EP refinement of the prior
factors N(w | 0, 1/lambda) with lambda ~ Gamma (HL&A 2015 sec. 3.3; paper 004 sec. 3),
done weight by weight, vectorised over replicates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .likelihoods import gamma_moment_match

MIN_VARIANCE = 1e-100
MAX_CAVITY_VARIANCE = 1e6


def adf_update(m, v, g_m, g_v, fixed_variance: bool = False):
    """New (m, v) of one weight array by eq. 6 and the mask of accepted elements.

    An element whose new variance is not positive, or whose new mean or variance is not
    finite, keeps its old (m, v) (the caller counts the rejections). With ``fixed_variance`` (EBP) only the mean
    moves and v stays as it is.
    """
    m_new = m + v * g_m
    if fixed_variance:
        ok = np.isfinite(m_new)
        return np.where(ok, m_new, m), v, ok
    v_new = v - v * v * (g_m * g_m - 2.0 * g_v)
    ok = np.isfinite(m_new) & np.isfinite(v_new) & (v_new > MIN_VARIANCE)
    return np.where(ok, m_new, m), np.where(ok, v_new, v), ok


@dataclass
class PriorSites:
    """EP approximations of the prior factors, one per weight, flat over layers (R, W):
    Gaussian site N(m_hat, v_hat) in w and a Gamma-like site lambda^(a_hat - 1) e^(-b_hat lambda)."""

    m_hat: np.ndarray
    v_hat: np.ndarray
    a_hat: np.ndarray
    b_hat: np.ndarray

    @classmethod
    def initial(cls, n_rep: int, n_weights: int, variance: float) -> PriorSites:
        """Sites that hold the prior's variance b/(a-1) and no information about lambda."""
        shape = (n_rep, n_weights)
        return cls(np.zeros(shape), np.full(shape, variance), np.ones(shape), np.zeros(shape))


def refine_prior(m, v, sites: PriorSites, a, b):
    """One sequential EP sweep over the prior factors (HL&A 2015 sec. 3.3).

    ``m``, ``v`` (R, W) flat weight moments, ``a``, ``b`` (R,) the Gamma of lambda; all are
    updated in place. For each weight: remove its site to get the cavity
    N(m_c, v_c) Gamma(a_c, b_c); match moments of N(w|0, 1/lambda) times the cavity, whose
    normaliser is approximated by N(m_c | 0, v_c + b_c/(a_c - 1)) (the same form as the noise
    factor, so ``gamma_moment_match`` and eq. 6 apply with y = 0); store the new site.
    Weights whose cavity is improper (v_c <= 0 or > 1e6, b_c <= 0, a_c <= 1) are skipped.
    Returns the number of skipped or rejected site updates.
    """
    skipped = 0
    zero = np.zeros((m.shape[0], 1))
    for j in range(m.shape[1]):
        mj, vj = m[:, j], v[:, j]
        prec_c = 1.0 / vj - 1.0 / sites.v_hat[:, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            v_c = 1.0 / prec_c
            m_c = v_c * (mj / vj - sites.m_hat[:, j] / sites.v_hat[:, j])
            a_c = a - sites.a_hat[:, j] + 1.0
            b_c = b - sites.b_hat[:, j]
            ok = (v_c > 0) & (v_c < MAX_CAVITY_VARIANCE) & (b_c > 0) & (a_c > 1)
            s = v_c + b_c / (a_c - 1.0)
            g_m = -m_c / s
            g_v = 0.5 * (m_c * m_c / s - 1.0) / s
            m_new = m_c + v_c * g_m
            v_new = v_c - v_c * v_c * (g_m * g_m - 2.0 * g_v)
            a_new, b_new = gamma_moment_match(zero, m_c[:, None], v_c[:, None], a_c, b_c)
            v_hat = 1.0 / (1.0 / v_new - 1.0 / v_c)
            m_hat = v_hat * (m_new / v_new - m_c / v_c)
        ok &= np.isfinite(m_new) & (v_new > MIN_VARIANCE) & np.isfinite(v_hat) & np.isfinite(m_hat)
        ok &= np.isfinite(a_new) & np.isfinite(b_new) & (a_new > 1) & (b_new > 0)
        skipped += int(ok.size - np.count_nonzero(ok))
        m[:, j] = np.where(ok, m_new, mj)
        v[:, j] = np.where(ok, v_new, vj)
        sites.m_hat[:, j] = np.where(ok, m_hat, sites.m_hat[:, j])
        sites.v_hat[:, j] = np.where(ok, v_hat, sites.v_hat[:, j])
        sites.a_hat[:, j] = np.where(ok, a_new - a_c + 1.0, sites.a_hat[:, j])
        sites.b_hat[:, j] = np.where(ok, b_new - b_c, sites.b_hat[:, j])
        a[:] = np.where(ok, a_new, a)
        b[:] = np.where(ok, b_new, b)
    return skipped
