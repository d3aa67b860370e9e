"""Evidence estimators from samples along a schedule lambda_0 = 0 < ... < lambda_K = 1 of
p_lambda(w) propto exp(-lambda phi(w) - E_0(w)), with Z(0) = 1:

- ``ratio`` (paper 001 eq. 4-5): ln Z = sum_i ln E_{lambda_{i-1}}[exp(-(lambda_i -
  lambda_{i-1}) phi)], each expectation a Monte Carlo mean over samples of link i-1; its
  standard error from the importance weights' effective sample size, inflated by the
  chain's autocorrelation;
- ``ti`` (thermodynamic integration): ln Z = -int_0^1 E_lambda[phi] d lambda by the
  trapezoid rule on the schedule;
- ``ais`` (Neal 2001): importance weights accumulated by particles moved through the
  schedule; ln Z = ln mean exp(ln w).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ..mcmc.diagnostics import effective_sample_size


def log_mean_exp(x: np.ndarray) -> float:
    x = np.ravel(x)
    return float(logsumexp(x) - np.log(x.size))


def ratio_link(phi_prev: np.ndarray, d_lambda: float) -> tuple[float, float, float]:
    """ln r, its standard error and the importance-weight ESS for one link, from phi at the
    samples of the previous distribution, shape (C, S) (chains x samples)."""
    x = -d_lambda * np.atleast_2d(phi_prev)
    ln_r = log_mean_exp(x)
    weights = np.exp(x - x.max())
    n = weights.size
    ess_w = weights.sum() ** 2 / np.sum(weights**2)
    # relative variance of the mean weight: (n / ESS_w - 1) / n_eff, with n_eff the
    # autocorrelation-corrected sample size of the weights trace
    n_eff = effective_sample_size(weights) if weights.shape[-1] >= 4 else n
    n_eff = n if not np.isfinite(n_eff) else max(min(n_eff, n), 1.0)
    rel_var = max(n / ess_w - 1.0, 0.0) / n_eff
    return ln_r, float(np.sqrt(rel_var)), float(ess_w)


def thermodynamic(lambdas: np.ndarray, phi_by_link: list[np.ndarray]) -> tuple[float, float]:
    """-int_0^1 E_lambda[phi] d lambda by the trapezoid rule, and the Monte Carlo s.e."""
    means, ses = [], []
    for phi in phi_by_link:
        phi = np.atleast_2d(phi)
        means.append(phi.mean())
        n_eff = effective_sample_size(phi)
        n_eff = phi.size if not np.isfinite(n_eff) else max(n_eff, 1.0)
        ses.append(phi.std() / np.sqrt(n_eff))
    d = np.diff(lambdas)
    weights = np.zeros(len(lambdas))
    weights[:-1] += 0.5 * d
    weights[1:] += 0.5 * d
    value = -float(np.dot(weights, means))
    se = float(np.sqrt(np.sum((weights * np.array(ses)) ** 2)))
    return value, se


def ais_estimate(log_weights: np.ndarray) -> tuple[float, float, float]:
    """ln mean exp(log_weights), its delta-method standard error, and the effective sample
    size (sum w)^2 / sum w^2 of the importance weights. When one particle carries nearly all
    the weight (ESS near 1) the standard error is meaningless (it tends to 1 whatever the
    true error) and the estimate is biased low: AIS needs more intermediate distributions."""
    lw = np.ravel(log_weights)
    value = log_mean_exp(lw)
    w = np.exp(lw - lw.max())
    se = float(np.std(w, ddof=1) / (np.sqrt(w.size) * w.mean())) if w.size > 1 else float("nan")
    return value, se, float(w.sum() ** 2 / np.sum(w**2))
