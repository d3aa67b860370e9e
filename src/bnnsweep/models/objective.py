"""The negative log posterior of the weights at fixed hyperparameters, with derivatives.

M(w) = beta E_D(w) + sum_k alpha_k E_Wk(w),   E_D = 1/2 sum_n ||y(x_n; w) - t_n||^2,
E_Wk = 1/2 w_k^T w_k                                 (thesis eq. 5.4-5.6, 5.18; Bishop 1995 ch. 10)

so that -ln p(w | D, alpha, beta) = M(w) + const. Value, gradient and the exact Hessian

A = beta (J^T J + sum_n sum_p r_np d^2 y_np / dw dw) + diag(alpha)

and its outer-product (Gauss-Newton) part beta J^T J + diag(alpha) (MacKay 1992; Bishop 1995
sec. 4.10.2) are vectorised over a leading batch of weight vectors (B, W).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .network import Network, augment
from .priors import WeightPrior


@dataclass
class PenalisedError:
    """M(w) for one dataset; ``alpha`` is (K,) or (B, K), ``beta`` scalar or (B,)."""

    network: Network
    prior: WeightPrior
    x: np.ndarray
    t: np.ndarray

    def __post_init__(self) -> None:
        if self.x.ndim != 2 or self.x.shape[1] != self.network.n_inputs:
            raise ValueError(f"inputs must have shape (N, {self.network.n_inputs})")
        if self.t.ndim != 2 or self.t.shape != (self.x.shape[0], self.network.n_outputs):
            raise ValueError(
                f"targets must have shape ({self.x.shape[0]}, {self.network.n_outputs})"
            )
        self.n_targets = self.t.size  # N * P noise terms
        self._x1 = augment(self.x)

    # ---- pieces -----------------------------------------------------------------------
    def data_error(self, w: np.ndarray) -> np.ndarray:
        """E_D(w), shape (B,)."""
        r = self.network.forward(w, self.x) - self.t
        return 0.5 * np.sum(r * r, axis=(1, 2))

    def _alpha_w(self, alpha, B):
        return np.broadcast_to(self.prior.per_weight(alpha), (B, self.network.n_weights))

    def value(self, w, alpha, beta) -> np.ndarray:
        w = np.atleast_2d(w)
        a = self._alpha_w(alpha, w.shape[0])
        return np.asarray(beta) * self.data_error(w) + 0.5 * np.sum(a * w * w, axis=1)

    def data_error_and_grad(self, w) -> tuple[np.ndarray, np.ndarray]:
        """E_D(w) (B,) and dE_D/dw (B, W) by back-propagation (thesis eq. 5.18).

        This is the hot path of HMC and chaining: biases ride in the matrix products on
        inputs with a column of ones, and g'(a) is written over the pre-activations.
        """
        w = np.atleast_2d(w)
        B = w.shape[0]
        net = self.network
        p = net.unpack(w)
        g = np.empty_like(w)
        s = net.slices
        if net.n_hidden == 0:
            r = np.matmul(self.x, p["Wd"].transpose(0, 2, 1))
            r += p["b2"][:, None, :]
            r -= self.t
            g[:, s["Wd"]] = np.matmul(r.transpose(0, 2, 1), self.x).reshape(B, -1)
        else:
            a, z = net.hidden_augmented(w, self._x1)
            r = np.matmul(z, p["W2"].transpose(0, 2, 1))
            r += p["b2"][:, None, :]
            r -= self.t
            delta = np.matmul(r, p["W2"])
            delta *= net.activation.first_derivative_overwrite(a, z)
            g1 = np.matmul(delta.transpose(0, 2, 1), self._x1)  # (B, H, I + 1)
            g[:, s["W1"]] = g1[..., :-1].reshape(B, -1)
            g[:, s["b1"]] = g1[..., -1]
            g[:, s["W2"]] = np.matmul(r.transpose(0, 2, 1), z).reshape(B, -1)
        g[:, s["b2"]] = r.sum(axis=1)
        return 0.5 * np.sum(r * r, axis=(1, 2)), g

    def value_and_grad(self, w, alpha, beta) -> tuple[np.ndarray, np.ndarray]:
        """M(w) (B,) and dM/dw (B, W)."""
        w = np.atleast_2d(w)
        B = w.shape[0]
        beta_b = np.broadcast_to(np.asarray(beta, dtype=float), (B,))
        a_w = self._alpha_w(alpha, B)
        e_d, g = self.data_error_and_grad(w)
        value = beta_b * e_d + 0.5 * np.sum(a_w * w * w, axis=1)
        grad = beta_b[:, None] * g + a_w * w
        return value, grad

    def outer_product_data_hessian(self, w: np.ndarray) -> np.ndarray:
        """J^T J = sum_n sum_p grad y_np grad y_np^T, the Gauss-Newton part of the Hessian of
        E_D (exact where the residuals vanish or the network is linear in w), (B, W, W)."""
        J = self.network.jacobian(np.atleast_2d(w), self.x)
        Jf = J.reshape(J.shape[0], -1, J.shape[-1])
        return np.matmul(Jf.transpose(0, 2, 1), Jf)

    def data_hessian(self, w: np.ndarray) -> np.ndarray:
        """Exact Hessian of E_D, shape (B, W, W)."""
        w = np.atleast_2d(w)
        net = self.network
        Hd = self.outer_product_data_hessian(w)
        if net.n_hidden == 0:
            return Hd
        I, H = net.n_inputs, net.n_hidden
        p = net.unpack(w)
        a, z = net.hidden(w, self.x)
        d1, d2 = net.activation.derivatives(a, z)
        r = np.einsum("bnh,bph->bnp", z, p["W2"]) + p["b2"][:, None, :] - self.t
        xt = np.concatenate([self.x, np.ones((self.x.shape[0], 1))], axis=1)  # [x, 1]
        s = net.slices
        # indices of u_j = (W1[j, :], b1[j]) and of W2[p, j]
        idx_u = np.concatenate(
            [
                np.arange(s["W1"].start, s["W1"].stop).reshape(H, I),
                np.arange(H)[:, None] + s["b1"].start,
            ],
            axis=1,
        )
        idx_v = np.arange(s["W2"].start, s["W2"].stop).reshape(net.n_outputs, H)
        # (u_j, u_j): sum_n g''(a_nj) (sum_p r_np v_pj) xt xt^T
        c = d2 * np.einsum("bnp,bph->bnh", r, p["W2"])
        uu = np.matmul((c.transpose(0, 2, 1)[..., None] * xt).transpose(0, 1, 3, 2), xt)
        Hd[:, idx_u[:, :, None], idx_u[:, None, :]] += uu
        # (u_j, v_pj): sum_n r_np g'(a_nj) xt
        uv = np.matmul(np.einsum("bnp,bnh->bhpn", r, d1), xt)  # (B, H, P, I+1)
        rows = idx_u[:, None, :]  # (H, 1, I+1)
        cols = idx_v.T[:, :, None]  # (H, P, 1)
        Hd[:, rows, cols] += uv
        Hd[:, cols, rows] += uv
        return Hd

    def _add_prior(self, w, data_part, alpha, beta) -> np.ndarray:
        A = np.asarray(beta, dtype=float).reshape(-1, 1, 1) * data_part
        idx = np.arange(self.network.n_weights)
        A[:, idx, idx] += self._alpha_w(alpha, w.shape[0])
        return A

    def hessian(self, w, alpha, beta) -> np.ndarray:
        """Exact Hessian A of M(w), shape (B, W, W)."""
        w = np.atleast_2d(w)
        return self._add_prior(w, self.data_hessian(w), alpha, beta)

    def gauss_newton_hessian(self, w, alpha, beta) -> np.ndarray:
        """Outer-product (Gauss-Newton) approximation beta J^T J + diag(alpha) to A, (B, W, W):
        positive definite for any w and alpha > 0."""
        w = np.atleast_2d(w)
        return self._add_prior(w, self.outer_product_data_hessian(w), alpha, beta)
