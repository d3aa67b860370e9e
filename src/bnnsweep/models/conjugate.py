"""Closed-form evidence of the Bayesian linear model, the reference for every estimator.

For y = Phi w + noise with w_j ~ N(0, 1/alpha_j) and noise precision beta, each output's
targets are Gaussian: t ~ N(0, I/beta + Phi diag(1/alpha) Phi^T) (Bishop 2006, eq. 3.86).
With Gamma hyperpriors on a single alpha and on beta, ln p(D) = ln int int p(D | alpha,
beta) p(alpha) p(beta) d alpha d beta is computed by quadrature on a grid in (ln alpha,
ln beta).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from .objective import PenalisedError
from .priors import GammaPrior


def linear_log_evidence(objective: PenalisedError, alpha: np.ndarray, beta: float) -> float:
    """ln p(D | alpha, beta) for a network without hidden layer (``hidden = 0``)."""
    net = objective.network
    if net.n_hidden != 0:
        raise ValueError("the closed form needs a network without hidden layer (hidden = 0)")
    x, t = objective.x, objective.t
    n, n_in = x.shape
    a = objective.prior.per_weight(np.asarray(alpha, dtype=float))
    layout = net.slices
    phi = np.column_stack([x, np.ones(n)])
    total = 0.0
    for p in range(t.shape[1]):
        start = layout["Wd"].start + p * n_in
        idx = np.r_[np.arange(start, start + n_in), layout["b2"].start + p]
        cov = np.eye(n) / beta + (phi / a[idx]) @ phi.T
        chol = np.linalg.cholesky(cov)
        z = np.linalg.solve(chol, t[:, p])
        total += -0.5 * z @ z - np.sum(np.log(np.diag(chol))) - 0.5 * n * np.log(2 * np.pi)
    return float(total)


def linear_log_evidence_integrated(
    objective: PenalisedError,
    noise_prior: GammaPrior,
    log_alpha_range=(-10.0, 10.0),
    log_beta_range=(-8.0, 12.0),
    n_grid: int = 201,
) -> float:
    """ln p(D) with a single alpha and beta integrated over their Gamma hyperpriors, by the
    Riemann sum on a uniform grid in (ln alpha, ln beta) (the integrand is
    smooth and negligible at the grid's edges, which the caller should check)."""
    if objective.prior.n_groups != 1:
        raise ValueError("the quadrature reference integrates a single alpha (prior 'single')")
    alpha_prior = objective.prior.hyperpriors[0]
    la = np.linspace(*log_alpha_range, n_grid)[:, None]
    lb = np.linspace(*log_beta_range, n_grid)[None, :]
    # one alpha: cov = I / beta + K / alpha with K = Phi Phi^T = V diag(s) V^T, so that
    # ln N(t | 0, cov) = -1/2 sum_i [ln(2 pi d_i) + z_i^2 / d_i], d_i = 1/beta + s_i/alpha
    x, t = objective.x, objective.t
    phi = np.column_stack([x, np.ones(x.shape[0])])
    s_eig, vec = np.linalg.eigh(phi @ phi.T)
    s_eig = np.maximum(s_eig, 0.0)
    z2 = np.sum((vec.T @ t) ** 2, axis=1)  # summed over outputs (same kernel for each)
    n_out = t.shape[1]
    d = np.exp(-lb)[..., None] + s_eig / np.exp(la)[..., None]
    log_lik = -0.5 * np.sum(n_out * np.log(2 * np.pi * d) + z2 / d, axis=-1)
    grid = log_lik + alpha_prior.logpdf(np.exp(la)) + la + noise_prior.logpdf(np.exp(lb)) + lb
    edge = max(grid[0].max(), grid[-1].max(), grid[:, 0].max(), grid[:, -1].max())
    if edge > grid.max() - 20:
        raise ValueError("the quadrature grid cuts off integrand mass; widen the ranges")
    step = (log_alpha_range[1] - log_alpha_range[0]) / (n_grid - 1)
    step_b = (log_beta_range[1] - log_beta_range[0]) / (n_grid - 1)
    return float(logsumexp(grid) + np.log(step) + np.log(step_b))
