"""A Gaussian target p(w) = N(0, Sigma) for the mixture bound (thesis sec. 5.5.1, fig. 5.6):
where the mixture of diagonal Gaussians has a known answer.

For one diagonal component q_m = N(mu, diag s^2) the bound is L_m = <ln p(w)>_m + H[q_m]
= -KL(q_m || p), with

  <ln p(w)>_m = -1/2 [mu^T Lambda mu + sum_i Lambda_ii s_i^2] - 1/2 ln det(2 pi Sigma),

Lambda = Sigma^-1. Its maximiser is mu = 0, s_i^2 = 1 / Lambda_ii, where
KL = 1/2 ln(prod_i Lambda_ii det Sigma) (the mean-field answer, thesis sec. 1.8; 1.6194 nats for
eigenvalues 1 and 0.01 at 45 degrees). A mixture's true KL(q || p) = -<ln p>_q - H[q] needs its
entropy, which ``mixture_kl`` integrates by Gauss-Hermite quadrature under each component
(exact to rounding for the smooth 2-D integrands here); ``minimum_mixture_kl`` minimises it
directly over the means, s.d.s and weights: the reference the mutual-information bound's fit
is judged against (the bound can only lie above it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOG_2PI = np.log(2.0 * np.pi)


@dataclass(frozen=True)
class GaussianTargetBound:
    """L_m = -KL(q_m || N(0, cov)) of one diagonal component theta = [mu, ln s] (the component
    bound of ``mixture.MixtureBound``; ``hyper`` is unused)."""

    cov: np.ndarray

    @property
    def precision(self) -> np.ndarray:
        return np.linalg.inv(self.cov)

    @property
    def n_weights(self) -> int:
        return self.cov.shape[0]

    def value_and_grad(self, theta: np.ndarray, hyper=None) -> tuple[float, np.ndarray]:
        W = self.n_weights
        lam = self.precision
        mu, log_s = theta[:W], theta[W:]
        var = np.exp(2.0 * log_s)
        logdet = np.linalg.slogdet(2.0 * np.pi * self.cov)[1]
        expected_log_p = -0.5 * (mu @ lam @ mu + np.diag(lam) @ var) - 0.5 * logdet
        entropy = np.sum(log_s) + 0.5 * W * (1.0 + LOG_2PI)
        grad = np.concatenate([-lam @ mu, 1.0 - np.diag(lam) * var])
        return float(expected_log_p + entropy), grad

    def optimal_diagonal(self) -> tuple[np.ndarray, float]:
        """The best single diagonal Gaussian, theta = [0, -1/2 ln Lambda_ii], and its KL."""
        lam_diag = np.diag(self.precision)
        kl = 0.5 * (np.sum(np.log(lam_diag)) + np.linalg.slogdet(self.cov)[1])
        return np.concatenate([np.zeros(self.n_weights), -0.5 * np.log(lam_diag)]), float(kl)


def _log_mixture_density(points, log_Q, comp):
    """ln q(w) of the diagonal mixture at ``points`` (..., W)."""
    W = comp.shape[1] // 2
    mu, log_s = comp[:, :W], comp[:, W:]
    z = (points[..., None, :] - mu) / np.exp(log_s)
    log_comp = -0.5 * np.sum(z * z + 2.0 * log_s + LOG_2PI, axis=-1)
    return np.logaddexp.reduce(log_comp + log_Q, axis=-1)


def mixture_kl(log_Q, comp, cov, nodes: int = 40) -> float:
    """KL(q || N(0, cov)) of the diagonal mixture q (W = 2), the expectation under each component
    by a ``nodes`` x ``nodes`` Gauss-Hermite rule."""
    from numpy.polynomial.hermite_e import hermegauss

    W = comp.shape[1] // 2
    if W != 2:
        raise ValueError(f"mixture_kl integrates in two dimensions, got {W}")
    x, weights = hermegauss(nodes)
    weights = np.outer(weights, weights) / weights.sum() ** 2
    lam = np.linalg.inv(cov)
    logdet = np.linalg.slogdet(2.0 * np.pi * cov)[1]
    total = 0.0
    for log_q_m, c in zip(log_Q, comp, strict=True):
        s = np.exp(c[W:])
        grid = np.stack(np.meshgrid(c[0] + s[0] * x, c[1] + s[1] * x, indexing="ij"), axis=-1)
        log_p = -0.5 * np.einsum("...i,ij,...j->...", grid, lam, grid) - 0.5 * logdet
        total += np.exp(log_q_m) * np.sum(
            weights * (_log_mixture_density(grid, log_Q, comp) - log_p)
        )
    return float(total)


def _unpack(x, components, W):
    comp = x[: components * 2 * W].reshape(components, 2 * W)
    logits = np.concatenate([[0.0], x[components * 2 * W :]])
    return logits - np.logaddexp.reduce(logits), comp


def minimum_mixture_kl(cov, components: int, rng, starts: int = 4, spread: float = 0.3,
                       nodes: int = 40):  # fmt: skip
    """min over M-component diagonal mixtures of the quadrature KL(q || N(0, cov)), by BFGS
    (numerical gradients) from ``starts`` random starts: means N(0, spread^2), s.d.s those of
    the best single diagonal, equal weights. Returns (KL, log_Q, comp) of the best start."""
    from scipy.optimize import minimize

    W = cov.shape[0]
    _, log_s = np.split(GaussianTargetBound(cov).optimal_diagonal()[0], 2)

    def objective(x):
        log_Q, comp = _unpack(x, components, W)
        return mixture_kl(log_Q, comp, cov, nodes)

    best = None
    for _ in range(starts):
        comp = np.concatenate(
            [spread * rng.standard_normal((components, W)), np.tile(log_s, (components, 1))], axis=1
        )
        x0 = np.concatenate([comp.ravel(), np.zeros(components - 1)])
        res = minimize(objective, x0, method="BFGS", options={"gtol": 1e-7})
        if best is None or res.fun < best.fun:
            best = res
    log_Q, comp = _unpack(best.x, components, W)
    return float(best.fun), log_Q, comp
