"""Evidence estimators from samples along a schedule lambda_0 = 0 < ... < lambda_K = 1 of
p_lambda(w) propto exp(-lambda phi(w) - E_0(w)), with Z(0) = 1:

- ``ratio`` (paper 001 eq. 4-5): ln Z = sum_i ln E_{lambda_{i-1}}[exp(-(lambda_i -
  lambda_{i-1}) phi)], each expectation a Monte Carlo mean over the samples of link i-1;
- ``ti`` (thermodynamic integration): ln Z = -int_0^1 E_lambda[phi] d lambda by the
  trapezoid rule on the schedule;
- ``ais`` (Neal 2001): importance weights accumulated by particles moved through the
  schedule; ln Z = ln mean exp(ln w);
- ``bdmc`` (bidirectional Monte Carlo, Grosse, Ghahramani & Adams 2015): forward AIS from the
  reference, a stochastic lower bound, and reverse AIS from posterior draws, a stochastic
  upper bound; ln Z is taken as the middle of the two.

Standard errors. Samples come in R independent replicates (chains per link started
independently, or groups of AIS particles). The reported standard error is the jackknife
over replicates of the pooled estimate (leave one replicate out, var = (R - 1)/R sum_r
(theta_(-r) - theta_bar)^2): it sees everything that differs between independent runs of
the same computation (a chain stuck in another basin, heavy-tailed importance weights), which
a within-chain error cannot. The within-chain error (importance-weight ESS inflated by the
trace's autocorrelation) is kept beside it as a diagnostic. With one replicate only the
within-chain error exists and is returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..mcmc.diagnostics import effective_sample_size


def log_mean_exp(x: np.ndarray, axis=None) -> np.ndarray | float:
    """ln mean exp(x) over ``axis`` (all of x by default)."""
    from scipy.special import logsumexp

    x = np.asarray(x, dtype=float)
    n = x.size if axis is None else np.prod([x.shape[a] for a in np.atleast_1d(axis)])
    out = logsumexp(x, axis=axis) - np.log(n)
    return float(out) if axis is None else out


def jackknife_se(values_without: np.ndarray) -> float:
    """Jackknife standard error from the R leave-one-replicate-out estimates theta_(-r):
    sqrt((R - 1)/R sum_r (theta_(-r) - mean)^2) (Efron & Stein 1981). NaN when R < 2."""
    v = np.asarray(values_without, dtype=float)
    if v.size < 2:
        return float("nan")
    if not np.all(np.isfinite(v)):
        return float("inf")
    return float(np.sqrt((v.size - 1) / v.size * np.sum((v - v.mean()) ** 2)))


def _leave_one_out(x: np.ndarray) -> np.ndarray:
    """For an array (..., R, S), the R arrays (..., (R - 1) * S) with replicate r left out,
    stacked on a leading axis."""
    R = x.shape[-2]
    keep = ~np.eye(R, dtype=bool)
    return np.stack([x[..., keep[r], :].reshape(*x.shape[:-2], -1) for r in range(R)])


@dataclass(frozen=True)
class LinkRatios:
    """The ratio estimator over a schedule (paper 001 eq. 4-5)."""

    ln_ratio: np.ndarray  # (K,) ln r_i, pooled over replicates
    ln_ratio_se: np.ndarray  # (K,) within-chain standard error of each ln r_i
    weight_ess: np.ndarray  # (K,) importance-weight ESS (sum w)^2 / sum w^2 of each link
    log_z: float  # sum_i ln r_i
    log_z_se: float  # jackknife over replicates (within-chain when R = 1)
    log_z_se_within: float  # sqrt(sum_i se_i^2)


def _within_link_se(x: np.ndarray) -> tuple[float, float]:
    """Within-chain s.e. of ln mean exp(x) for x (R, S) and the weights' ESS: the relative
    variance of the mean weight (n / ESS_w - 1) / n_eff, n_eff the autocorrelation-corrected
    number of draws of the weights' trace."""
    weights = np.exp(x - x.max())
    n = weights.size
    ess_w = weights.sum() ** 2 / np.sum(weights**2)
    n_eff = effective_sample_size(weights) if weights.shape[-1] >= 4 else n
    n_eff = n if not np.isfinite(n_eff) else max(min(n_eff, n), 1.0)
    rel_var = max(n / ess_w - 1.0, 0.0) / n_eff
    return float(np.sqrt(rel_var)), float(ess_w)


def ratio_estimate(lambdas: np.ndarray, phi: np.ndarray) -> LinkRatios:
    """ln Z by the product of ratios from phi at the samples of every distribution,
    ``phi`` (K + 1, R, S): link i's ratio uses the samples at lambda_{i-1}."""
    lambdas = np.asarray(lambdas, dtype=float)
    phi = np.asarray(phi, dtype=float)
    d = np.diff(lambdas)[:, None, None]
    x = -d * phi[:-1]  # (K, R, S)
    K = x.shape[0]
    ln_r = np.array([log_mean_exp(x[i]) for i in range(K)])
    se_ess = np.array([_within_link_se(x[i]) for i in range(K)])
    within = float(np.sqrt(np.sum(se_ess[:, 0] ** 2)))
    if x.shape[1] >= 2:
        loo = _leave_one_out(x)  # (R, K, (R - 1) S)
        se = jackknife_se(log_mean_exp(loo, axis=2).sum(axis=1))
    else:
        se = within
    return LinkRatios(ln_r, se_ess[:, 0], se_ess[:, 1], float(ln_r.sum()), se, within)


def _trapezoid_weights(lambdas: np.ndarray) -> np.ndarray:
    d = np.diff(lambdas)
    weights = np.zeros(len(lambdas))
    weights[:-1] += 0.5 * d
    weights[1:] += 0.5 * d
    return weights


def thermodynamic(lambdas: np.ndarray, phi: np.ndarray) -> tuple[float, float, float]:
    """-int_0^1 E_lambda[phi] d lambda by the trapezoid rule from ``phi`` (K + 1, R, S): the
    value, its jackknife s.e. over replicates and its within-chain s.e. (each mean's s.e.
    from the trace's ESS)."""
    phi = np.asarray(phi, dtype=float)
    weights = _trapezoid_weights(np.asarray(lambdas, dtype=float))
    value = -float(np.dot(weights, phi.mean(axis=(1, 2))))
    ses = []
    for p in phi:
        n_eff = effective_sample_size(p)
        n_eff = p.size if not np.isfinite(n_eff) else max(n_eff, 1.0)
        ses.append(p.std() / np.sqrt(n_eff))
    within = float(np.sqrt(np.sum((weights * np.array(ses)) ** 2)))
    if phi.shape[1] >= 2:
        loo = _leave_one_out(phi)  # (R, K + 1, (R - 1) S)
        se = jackknife_se(-(loo.mean(axis=2) @ weights))
    else:
        se = within
    return value, se, within


def ais_estimate(log_weights: np.ndarray, replicates: int = 1) -> tuple[float, float, float]:
    """ln mean exp(log_weights), its standard error, and the effective sample size
    (sum w)^2 / sum w^2 of the importance weights.

    With ``replicates`` >= 2 the particles are cut into that many equal groups (independent
    runs of AIS) and the s.e. is the jackknife over groups; with one, the delta-method s.e.
    of the mean weight, which heavy-tailed weights make far too small. When one particle
    carries nearly all the weight (ESS near 1) the estimate is biased low: AIS needs more
    intermediate distributions."""
    lw = np.ravel(np.asarray(log_weights, dtype=float))
    value = log_mean_exp(lw)
    w = np.exp(lw - lw.max())
    ess = float(w.sum() ** 2 / np.sum(w**2))
    R = min(replicates, lw.size)
    if R >= 2:
        groups = lw[: lw.size - lw.size % R].reshape(R, -1)
        se = jackknife_se(log_mean_exp(_leave_one_out(groups), axis=1))
    elif w.size > 1:
        se = float(np.std(w, ddof=1) / (np.sqrt(w.size) * w.mean()))
    else:
        se = float("nan")
    return value, se, ess


def bdmc_estimate(
    forward: float, forward_se: float, reverse: float, reverse_se: float
) -> tuple[float, float]:
    """ln Z from bidirectional Monte Carlo (Grosse, Ghahramani & Adams 2015, sec. 4): forward
    AIS bounds ln Z from below in expectation (Jensen), reverse AIS from exact posterior draws
    from above, so ln Z lies in the bracket between their expectations. The estimate is the
    middle of the bracket, (forward + reverse) / 2, and its standard error combines half the
    bracket's width with the two estimates' own s.e.,
    sqrt(((reverse - forward) / 2)^2 + (se_f^2 + se_r^2) / 4): one s.e. either side reaches
    both bounds, so the error covers a truth anywhere between them, not only the noise of
    the two runs. A reversed bracket (reverse below forward) is noise; its width still counts.
    """
    middle = 0.5 * (forward + reverse)
    half_gap = 0.5 * (reverse - forward)
    se = float(np.sqrt(half_gap**2 + 0.25 * (forward_se**2 + reverse_se**2)))
    return float(middle), se
