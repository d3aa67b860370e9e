"""Gaussian variational families q(w) = N(m, C) over the flat weight vector, packed as one
unconstrained parameter vector for a quasi-Newton optimiser.

- ``diag``: C = diag(s^2) (Hinton & van Camp; paper 000 sec. 3), parameters (m, ln s);
- ``full``: C = L L^T with L lower triangular (paper 002 sec. 2), parameters (m, the strict
  lower triangle of L, ln diag L);
- ``fa``:   C = diag(d^2) + U U^T with U of shape (W, s) (paper 002 eq. 18), parameters
  (m, ln d, U).

Each family gives the covariance in the form the expectations read (variances for ``diag``,
a matrix otherwise), its entropy H[q] = 1/2 ln det C + W/2 (1 + ln 2 pi) with gradient, and the
chain rule from gradients with respect to (m, C) to the packed parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COVARIANCES = ("diag", "full", "fa")
LOG_2PI = np.log(2.0 * np.pi)


@dataclass(frozen=True)
class GaussianFamily:
    kind: str
    n_weights: int
    factors: int = 1

    def __post_init__(self) -> None:
        if self.kind not in COVARIANCES:
            raise ValueError(f"covariance must be one of {COVARIANCES}, got {self.kind!r}")
        if self.kind == "fa" and self.factors < 1:
            raise ValueError(f"the fa covariance needs factors >= 1, got {self.factors}")

    # ---- layout -----------------------------------------------------------------------
    @property
    def _tril(self):
        return np.tril_indices(self.n_weights, -1)

    @property
    def n_params(self) -> int:
        W = self.n_weights
        extra = {"diag": W, "full": W + W * (W - 1) // 2, "fa": W + W * self.factors}
        return W + extra[self.kind]

    def pack(self, mean: np.ndarray, sd: np.ndarray, rng: np.random.Generator | None = None,
             factor_scale: float = 0.0) -> np.ndarray:  # fmt: skip
        """Parameters of q with the given mean and (independent) standard deviations; the fa
        factors start at ``factor_scale`` times standard normal draws (zero without rng)."""
        W = self.n_weights
        log_sd = np.log(np.broadcast_to(np.asarray(sd, dtype=float), (W,)))
        if self.kind == "diag":
            return np.concatenate([mean, log_sd])
        if self.kind == "full":
            return np.concatenate([mean, np.zeros(W * (W - 1) // 2), log_sd])
        U = np.zeros((W, self.factors))
        if rng is not None and factor_scale > 0:
            U = factor_scale * rng.standard_normal((W, self.factors))
        return np.concatenate([mean, log_sd, U.ravel()])

    def _split(self, theta):
        W = self.n_weights
        return theta[:W], theta[W:]

    def _chol(self, rest):
        W = self.n_weights
        L = np.zeros((W, W))
        L[self._tril] = rest[: W * (W - 1) // 2]
        L[np.arange(W), np.arange(W)] = np.exp(rest[W * (W - 1) // 2 :])
        return L

    def _fa(self, rest):
        W = self.n_weights
        return np.exp(rest[:W]), rest[W:].reshape(W, self.factors)

    # ---- moments ----------------------------------------------------------------------
    def mean_cov(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(m, C): C is (W,) variances for ``diag``, a (W, W) matrix otherwise."""
        m, rest = self._split(theta)
        if self.kind == "diag":
            return m, np.exp(2.0 * rest)
        if self.kind == "full":
            L = self._chol(rest)
            return m, L @ L.T
        d, U = self._fa(rest)
        return m, np.diag(d * d) + U @ U.T

    def sample(self, theta: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws w ~ q(w) = N(m, C), shape (n, W): m + sd z (diag), m + L z (full),
        m + d z + U z' (fa)."""
        m, rest = self._split(theta)
        z = rng.standard_normal((n, self.n_weights))
        if self.kind == "diag":
            return m + np.exp(rest) * z
        if self.kind == "full":
            return m + z @ self._chol(rest).T
        d, U = self._fa(rest)
        return m + d * z + rng.standard_normal((n, self.factors)) @ U.T

    def variances(self, theta: np.ndarray) -> np.ndarray:
        """diag C, shape (W,)."""
        m, rest = self._split(theta)
        if self.kind == "diag":
            return np.exp(2.0 * rest)
        if self.kind == "full":
            L = self._chol(rest)
            return np.sum(L * L, axis=1)
        d, U = self._fa(rest)
        return d * d + np.sum(U * U, axis=1)

    def pullback(self, theta: np.ndarray, g_mean: np.ndarray, g_cov: np.ndarray) -> np.ndarray:
        """Gradient with respect to theta from gradients with respect to m and C (C as read:
        (W,) for ``diag``, an unsymmetrised (W, W) array otherwise)."""
        m, rest = self._split(theta)
        if self.kind == "diag":
            return np.concatenate([g_mean, 2.0 * np.exp(2.0 * rest) * g_cov])
        G = g_cov + g_cov.T  # dC = dL L^T + L dL^T  ->  dF/dL = (G + G^T) L
        if self.kind == "full":
            L = self._chol(rest)
            gL = G @ L
            diag = np.diag(gL) * np.diag(L)
            return np.concatenate([g_mean, gL[self._tril], diag])
        d, U = self._fa(rest)
        g_logd = 2.0 * d * d * np.diag(g_cov)
        return np.concatenate([g_mean, g_logd, (G @ U).ravel()])

    def entropy(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """H[q] = 1/2 ln det C + W/2 (1 + ln 2 pi) (paper 002 sec. 2) and its gradient."""
        W = self.n_weights
        m, rest = self._split(theta)
        const = 0.5 * W * (1.0 + LOG_2PI)
        grad = np.zeros_like(theta)
        if self.kind == "diag":
            grad[W:] = 1.0
            return float(np.sum(rest) + const), grad
        if self.kind == "full":
            grad[W + W * (W - 1) // 2 :] = 1.0
            return float(np.sum(rest[W * (W - 1) // 2 :]) + const), grad
        d, U = self._fa(rest)
        # det(D^2 + U U^T) = det(D^2) det(I + U^T D^-2 U) (matrix determinant lemma)
        Ud = U / (d * d)[:, None]
        K = np.eye(self.factors) + U.T @ Ud
        chol = np.linalg.cholesky(K)
        value = np.sum(np.log(d)) + np.sum(np.log(np.diag(chol))) + const
        Kinv = np.linalg.inv(K)
        # d/dU 1/2 ln det C = C^-1 U = D^-2 U K^-1;  d/d ln d_k = d_k^2 (C^-1)_kk
        grad_U = Ud @ Kinv
        cinv_diag = 1.0 / (d * d) - np.einsum("ks,st,kt->k", Ud, Kinv, Ud)
        grad[W : 2 * W] = d * d * cinv_diag
        grad[2 * W :] = grad_U.ravel()
        return float(value), grad
