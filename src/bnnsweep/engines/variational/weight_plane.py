"""Gaussian fits to the posterior of a network with two free weights (paper 002 sec. 2 and
fig. 1): Laplace's method beside the minimum-KL Gaussians of ensemble learning, each judged
by its KL divergence from the true posterior, which in two dimensions can be normalised on a
grid.

The network is y(x) = v g(u x), g(a) = erf(a / sqrt 2): the 1-1-1 network of
``models/network.py`` with both biases held at zero, so that w = (u, v) are the weights W1 and
W2 of its flat layout. With a fixed weight precision alpha and noise precision beta
(paper 002 eq. 5, before the hyperparameters are adapted in its sec. 2.1),

  ln p~(w) = -beta E_D(w) - alpha / 2 w^T w,    p(w | D) = p~(w) / Z~,

and for a Gaussian Q = N(m, C) the bound of eq. 8,

  L(Q) = -beta <E_D>_Q - alpha / 2 (m^T m + tr C) + H[Q],

is closed-form (``models/erf_expectations.py``: the biases enter with mean and variance 0).
Then KL(Q || p) = ln Z~ - L(Q) exactly, for any Gaussian Q: the minimum-KL fits maximise L
over a diagonal or full covariance (``models/vi_family.py``), and the Laplace Gaussian sits at
the mode with the inverse of the exact Hessian of -ln p~. ln Z~ is a sum over a grid
(``log_normaliser``); ``grid_kl`` computes KL(Q || p) directly on the grid as a check.

Every network with an odd g has the two images (u, v) and (-u, -v) of each weight vector, so
the posterior has two modes: a Gaussian on one of two separated modes pays ln 2 of its KL for
the other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...models.erf_expectations import expected_data_error
from ...models.network import Network
from ...models.objective import PenalisedError
from ...models.priors import make_prior
from ...models.vi_family import LOG_2PI, GaussianFamily

FREE = np.array([0, 2])
"""The free weights' places in the 1-1-1 network's flat vector [W1, b1, W2, b2]."""


def two_weight_objective(x: np.ndarray, t: np.ndarray) -> PenalisedError:
    """E_D of the 1-1-1 erf network on one-input data (its prior term is not used here)."""
    net = Network(1, 1, 1, "erf")
    prior = make_prior(net, "single", {"weights": {"shape": 1.0, "rate": 1.0}})
    return PenalisedError(net, prior, np.asarray(x, float), np.asarray(t, float))


def embed(w: np.ndarray) -> np.ndarray:
    """(..., 2) free weights -> (..., 4) flat vectors with zero biases."""
    out = np.zeros(w.shape[:-1] + (4,))
    out[..., FREE] = w
    return out


@dataclass(frozen=True)
class WeightPlanePosterior:
    """p(w | D) ∝ exp(-beta E_D(w) - alpha / 2 w^T w) over w = (u, v)."""

    objective: PenalisedError
    alpha: float
    beta: float

    def log_joint(self, w: np.ndarray) -> np.ndarray:
        """ln p~(w) at (B, 2) weight vectors, (B,)."""
        w = np.atleast_2d(w)
        e_d = self.objective.data_error(embed(w))
        return -self.beta * e_d - 0.5 * self.alpha * np.sum(w * w, axis=1)

    def neg_log_joint_and_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        e_d, g = self.objective.data_error_and_grad(embed(np.atleast_2d(w)))
        value = self.beta * e_d[0] + 0.5 * self.alpha * w @ w
        return float(value), self.beta * g[0, FREE] + self.alpha * w

    def hessian(self, w: np.ndarray) -> np.ndarray:
        """Exact Hessian of -ln p~ at w, (2, 2)."""
        data = self.objective.data_hessian(embed(np.atleast_2d(w)))[0][np.ix_(FREE, FREE)]
        return self.beta * data + self.alpha * np.eye(2)

    # ---- Gaussian fits ------------------------------------------------------------------
    def bound(self, family: GaussianFamily, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """L(Q) of paper 002 eq. 8 (normalising constants of p~ left out) and dL/dtheta."""
        mean, cov = family.mean_cov(theta)
        mean4 = embed(mean)
        if cov.ndim == 1:
            cov4 = embed(cov)
        else:
            cov4 = np.zeros((4, 4))
            cov4[np.ix_(FREE, FREE)] = cov
        obj = self.objective
        e_d, g_mean, g_cov = expected_data_error(obj.network, mean4, cov4, obj.x, obj.t)
        g_mean = g_mean[FREE]
        g_cov = g_cov[FREE] if cov.ndim == 1 else g_cov[np.ix_(FREE, FREE)]
        trace = np.sum(cov) if cov.ndim == 1 else np.trace(cov)
        entropy, g_entropy = family.entropy(theta)
        value = -self.beta * e_d - 0.5 * self.alpha * (mean @ mean + trace) + entropy
        d_cov = -self.beta * g_cov - 0.5 * self.alpha * (1.0 if cov.ndim == 1 else np.eye(2))
        grad = family.pullback(theta, -self.beta * g_mean - self.alpha * mean, d_cov)
        return float(value), grad + g_entropy

    def minimum_kl(self, family: GaussianFamily, theta: np.ndarray, max_iter: int = 2000):
        """The Gaussian of ``family`` maximising L(Q) by L-BFGS from ``theta``; returns
        (theta, L, evaluations)."""
        from scipy.optimize import minimize

        count = [0]

        def fun(th):
            count[0] += 1
            value, grad = self.bound(family, th)
            return -value, -grad

        res = minimize(fun, theta, jac=True, method="L-BFGS-B",
                       options={"maxiter": max_iter, "ftol": 1e-14, "gtol": 1e-10})  # fmt: skip
        return res.x, float(-res.fun), count[0]

    def mode(self, starts: np.ndarray) -> tuple[np.ndarray, int]:
        """The largest of the modes found by BFGS from each of ``starts`` (S, 2); returns
        (mode, evaluations)."""
        from scipy.optimize import minimize

        best, evals = None, 0
        for w0 in starts:
            res = minimize(self.neg_log_joint_and_grad, w0, jac=True, method="BFGS",
                           options={"gtol": 1e-10})  # fmt: skip
            evals += res.nfev
            if best is None or res.fun < best.fun:
                best = res
        return best.x, evals

    # ---- the grid -------------------------------------------------------------------------
    def grid(self, half_width: float, points: int) -> tuple[np.ndarray, np.ndarray]:
        """The axis (points,) of a square grid on [-half_width, half_width]^2 and ln p~ on it,
        (points, points), indexed [u, v]."""
        axis = np.linspace(-half_width, half_width, points)
        u, v = np.meshgrid(axis, axis, indexing="ij")
        w = np.stack([u.ravel(), v.ravel()], axis=1)
        rows = [self.log_joint(w[i : i + 65536]) for i in range(0, len(w), 65536)]
        return axis, np.concatenate(rows).reshape(points, points)


def log_normaliser(axis: np.ndarray, log_p: np.ndarray) -> float:
    """ln of the integral of exp(log_p) over the grid (the sum times the cell area)."""
    step = axis[1] - axis[0]
    top = np.max(log_p)
    return float(top + np.log(np.sum(np.exp(log_p - top)) * step * step))


def gaussian_log_density(points: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """ln N(points; mean, cov) at (..., 2) points."""
    diff = points - mean
    solved = np.linalg.solve(cov, diff.reshape(-1, 2).T).T.reshape(diff.shape)
    return -0.5 * (np.sum(diff * solved, axis=-1) + np.linalg.slogdet(cov)[1] + 2 * LOG_2PI)


def grid_kl(axis: np.ndarray, log_p: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> float:
    """KL(N(mean, cov) || p) summed on the grid of ``log_p`` = ln p~ (normalised here)."""
    u, v = np.meshgrid(axis, axis, indexing="ij")
    log_q = gaussian_log_density(np.stack([u, v], axis=-1), mean, cov)
    step = axis[1] - axis[0]
    q = np.exp(log_q)
    return float(np.sum(q * (log_q - log_p + log_normaliser(axis, log_p))) * step * step)


def full_covariance(family: GaussianFamily, theta: np.ndarray) -> np.ndarray:
    """The (2, 2) covariance of a fitted Q of any family."""
    _, cov = family.mean_cov(theta)
    return np.diag(cov) if cov.ndim == 1 else cov
