"""Networks of linear threshold units (LTU) as the zero-temperature limit of a sigmoid belief
network with ±1 units (thesis ch. 3, eqs. 3.1-3.6).

One layer of H hidden units between real inputs x (I of them, observed) and O output units
(observed at training time). With a_j = w_j . x + w_j0 and b_o = v_o . h + v_o0, at
temperature T every unit is a ±1 sigmoid belief unit, P(s = 1 | pa) = sigma(a / T) (3.2), so
P(s | pa) = sigma(s a / T) and the joint of the hidden states h and outputs t is

    ln P(h, t | x; T) = sum_j ln sigma(h_j a_j / T) + sum_o ln sigma(t_o b_o(h) / T).

As T -> 0, T ln sigma(z / T) -> -max(0, -z), so T ln P(h, t | x; T) tends to the
zero-temperature energy

    F(h) = -sum_j max(0, -h_j a_j) - sum_o max(0, -t_o b_o(h))  <= 0,

which is 0 exactly when every unit agrees with the sign of its input (the network computes
t from x with hidden states h, eq. 3.1): then P(t | x) = 1 and the bound 3.26 is exact.

Arrays: ``x`` (N, I), hidden states ``h`` (N, H), outputs ``t`` (N, O), all ±1 except x.
The sign of 0 is taken as +1 throughout (``hard_sign``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ThresholdNetwork:
    """Weights of an I-H-O network: ``w_in`` (H, I), ``b_in`` (H,), ``w_out`` (O, H),
    ``b_out`` (O,)."""

    w_in: np.ndarray
    b_in: np.ndarray
    w_out: np.ndarray
    b_out: np.ndarray

    def __post_init__(self):
        h, _ = self.w_in.shape
        o, h_out = self.w_out.shape
        if self.b_in.shape != (h,) or h_out != h or self.b_out.shape != (o,):
            raise ValueError(
                f"inconsistent shapes w_in {self.w_in.shape}, b_in {self.b_in.shape}, "
                f"w_out {self.w_out.shape}, b_out {self.b_out.shape}"
            )

    @property
    def n_hidden(self) -> int:
        return self.w_in.shape[0]

    @property
    def n_inputs(self) -> int:
        return self.w_in.shape[1]

    @property
    def n_outputs(self) -> int:
        return self.w_out.shape[0]


def hard_sign(z: np.ndarray) -> np.ndarray:
    """sign(z) with sign(0) = +1, as float ±1."""
    return np.where(z >= 0, 1.0, -1.0)


def hidden_input(net: ThresholdNetwork, x: np.ndarray) -> np.ndarray:
    """a_j = w_j . x + w_j0 for every pattern: (N, H)."""
    return x @ net.w_in.T + net.b_in


def output_input(net: ThresholdNetwork, h: np.ndarray) -> np.ndarray:
    """b_o = v_o . h + v_o0 for hidden states ``h`` (N, H): (N, O)."""
    return h @ net.w_out.T + net.b_out


def forward(net: ThresholdNetwork, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The deterministic pass of eq. 3.1: hidden states (N, H) and outputs (N, O)."""
    h = hard_sign(hidden_input(net, x))
    return h, hard_sign(output_input(net, h))


def training_errors(net: ThresholdNetwork, x: np.ndarray, t: np.ndarray) -> int:
    """Patterns whose forward-pass output differs from ``t`` in any output unit."""
    _, out = forward(net, x)
    return int(np.sum(np.any(out != t, axis=1)))


def log_sigmoid(z: np.ndarray) -> np.ndarray:
    """ln sigma(z) = -ln(1 + e^{-z}), stable for large |z|."""
    return -np.logaddexp(0.0, -z)


def log_joint(
    net: ThresholdNetwork, x: np.ndarray, h: np.ndarray, t: np.ndarray, temperature: float
) -> np.ndarray:
    """ln P(h, t | x; T) of the ±1 sigmoid belief network at temperature T > 0 (module
    docstring). ``h`` is (N, H) or (S, N, H) for S candidate states per pattern; returns
    (N,) or (S, N)."""
    a = hidden_input(net, x)
    b = output_input(net, h)
    return np.sum(log_sigmoid(h * a / temperature), axis=-1) + np.sum(
        log_sigmoid(t * b / temperature), axis=-1
    )


def zero_temperature_energy(
    net: ThresholdNetwork, x: np.ndarray, h: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """F(h) = lim_{T->0} T ln P(h, t | x; T) per pattern (module docstring): (N,) or (S, N)."""
    a = hidden_input(net, x)
    b = output_input(net, h)
    return -np.sum(np.maximum(0.0, -h * a), axis=-1) - np.sum(np.maximum(0.0, -t * b), axis=-1)
