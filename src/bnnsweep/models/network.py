"""The one-hidden-layer regression network y(x; w) and its weight layout.

y_p(x) = sum_j W2[p, j] g(W1[j] . x + b1[j]) + b2[p]   (paper 001 sec. 3, thesis eq. 5.2)

With ``hidden = 0`` the hidden layer is removed and y = Wd x + b2, a linear model whose
posterior is Gaussian (used to check the evidence code against closed forms).

The weight vector is flat, ordered [W1 (H x I, row-major), b1 (H), W2 (P x H), b2 (P)]
(or [Wd (P x I), b2 (P)] when H = 0). All functions accept a leading batch of weight
vectors, shape (B, W), so several restarts or chains are evaluated at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .activations import Activation, get_activation


def augment(x: np.ndarray) -> np.ndarray:
    """Inputs (N, I) with a column of ones appended, (N, I + 1)."""
    return np.concatenate([x, np.ones((x.shape[0], 1))], axis=1)


@dataclass(frozen=True)
class Network:
    """Architecture I -> H -> P with activation g on the hidden layer."""

    n_inputs: int
    n_hidden: int
    n_outputs: int
    activation_name: str = "tanh"
    activation: Activation = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for key in ("n_inputs", "n_hidden", "n_outputs"):
            value = getattr(self, key)
            if not isinstance(value, int | np.integer) or value < 0:
                raise ValueError(f"{key} must be a non-negative integer, got {value!r}")
        if self.n_inputs == 0 or self.n_outputs == 0:
            raise ValueError("a network needs at least one input and one output")
        object.__setattr__(self, "activation", get_activation(self.activation_name))

    # ---- layout -----------------------------------------------------------------------
    @property
    def slices(self) -> dict[str, slice]:
        """Slices of the flat weight vector for each weight block."""
        I, H, P = self.n_inputs, self.n_hidden, self.n_outputs
        if H == 0:
            return {"Wd": slice(0, P * I), "b2": slice(P * I, P * I + P)}
        sizes = [("W1", H * I), ("b1", H), ("W2", P * H), ("b2", P)]
        out, start = {}, 0
        for name, size in sizes:
            out[name] = slice(start, start + size)
            start += size
        return out

    @property
    def n_weights(self) -> int:
        return max(s.stop for s in self.slices.values())

    def unpack(self, w: np.ndarray) -> dict[str, np.ndarray]:
        """Views of a (B, W) batch as W1 (B,H,I), b1 (B,H), W2 (B,P,H), b2 (B,P) (or Wd)."""
        I, H, P = self.n_inputs, self.n_hidden, self.n_outputs
        B = w.shape[0]
        s = self.slices
        if H == 0:
            return {"Wd": w[:, s["Wd"]].reshape(B, P, I), "b2": w[:, s["b2"]]}
        return {
            "W1": w[:, s["W1"]].reshape(B, H, I),
            "b1": w[:, s["b1"]],
            "W2": w[:, s["W2"]].reshape(B, P, H),
            "b2": w[:, s["b2"]],
        }

    def init_weights(self, rng: np.random.Generator, n: int, scale: float = 1.0) -> np.ndarray:
        """n random weight vectors: fan-in scaled Gaussians (biases included), shape (n, W).

        Drawn one vector after another, so the first k of n are the k a call with n = k
        draws: restart r of one method starts where restart r of another does when both draw
        their starts first from the cell's shared stream (``sweep.Cell.rng``)."""
        w = np.empty((n, self.n_weights))
        for r in range(n):
            w[r] = self._one_start(rng, scale)
        return w

    def _one_start(self, rng: np.random.Generator, scale: float) -> np.ndarray:
        I, H = self.n_inputs, self.n_hidden
        w = np.empty(self.n_weights)
        s = self.slices
        if H == 0:
            w[s["Wd"]] = rng.normal(0.0, scale / np.sqrt(I + 1), s["Wd"].stop)
            w[s["b2"]] = 0.0
            return w
        w[s["W1"]] = rng.normal(0.0, scale / np.sqrt(I + 1), H * I)
        w[s["b1"]] = rng.normal(0.0, scale / np.sqrt(I + 1), H)
        w[s["W2"]] = rng.normal(0.0, scale / np.sqrt(H + 1), s["W2"].stop - s["W2"].start)
        w[s["b2"]] = 0.0
        return w

    # ---- forward pass -----------------------------------------------------------------
    def hidden(self, w: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pre-activations a (B,N,H) and activations z = g(a) (B,N,H)."""
        return self.hidden_augmented(w, augment(x))

    def hidden_augmented(self, w: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As ``hidden`` for inputs with a column of ones appended (``augment(x)``): the bias
        rides in the matrix product, saving a pass over the (B, N, H) array."""
        p = self.unpack(w)
        w1b = np.concatenate([p["W1"], p["b1"][..., None]], axis=2)  # (B, H, I + 1)
        a = np.matmul(x1, w1b.transpose(0, 2, 1))
        return a, self.activation.value(a)

    def forward(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Network outputs y, shape (B, N, P), for weights (B, W) and inputs (N, I)."""
        w = np.atleast_2d(w)
        p = self.unpack(w)
        if self.n_hidden == 0:
            return np.matmul(x, p["Wd"].transpose(0, 2, 1)) + p["b2"][:, None, :]
        _, z = self.hidden(w, x)
        return np.matmul(z, p["W2"].transpose(0, 2, 1)) + p["b2"][:, None, :]

    def jacobian(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """dy_p(x_n)/dw, shape (B, N, P, W)."""
        w = np.atleast_2d(w)
        B, N, P, I, H = w.shape[0], x.shape[0], self.n_outputs, self.n_inputs, self.n_hidden
        J = np.zeros((B, N, P, self.n_weights))
        s = self.slices
        eye = np.eye(P)
        J[..., s["b2"]] = eye
        if H == 0:
            J[..., s["Wd"]] = np.einsum("pq,ni->npqi", eye, x).reshape(N, P, P * I)
            return J
        p = self.unpack(w)
        a, z = self.hidden(w, x)
        d1, _ = self.activation.derivatives(a, z)
        back = np.einsum("bph,bnh->bnph", p["W2"], d1)  # v_pj g'(a_nj)
        J[..., s["W1"]] = np.einsum("bnph,ni->bnphi", back, x).reshape(B, N, P, H * I)
        J[..., s["b1"]] = back
        J[..., s["W2"]] = np.einsum("pq,bnh->bnpqh", eye, z).reshape(B, N, P, P * H)
        return J
