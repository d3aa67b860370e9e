"""Mean field theory for a Boltzmann machine with ±1 units (thesis §4.4.1, eqs. 4.7-4.14).

Every function acts on a machine over its free units: weights (..., f, f) (symmetric, zero
diagonal) and biases (..., f), batch axes broadcasting; a clamped phase is first reduced with
``models.boltzmann.clamp_machine``. Q(s) = prod_i (1 + m_i s_i)/2 with means m in (-1, 1).

The bound (1.38 with the factorised Q of 4.8) on ln Z_T is

    L(m) = (1/2 m^T W m + b^T m)/T + sum_i H((1 + m_i)/2),                 (4.13/4.14)

the printed 4.13-4.14 lacks the sums over i, j and the 1/2 (with sum_ij over ordered pairs
and no 1/2 its stationary point would be tanh(2 W m)). Its stationary points are
m_k = tanh((sum_j w_kj m_j + b_k)/T) (4.10/4.11), verified in the tests. L is concave in each
m_k alone, so one exact coordinate update, or a damped step towards it, never lowers L.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .annealing import anneal

MEAN_LIMIT = 1.0 - 1e-12  # means are kept inside (-1, 1) so that logs stay finite


def binary_entropy(means: np.ndarray) -> np.ndarray:
    """H(Q(s_i)) = -sum_s (1 + m s)/2 ln((1 + m s)/2), elementwise (the S(Q) of 4.13)."""
    p = 0.5 * (1.0 + means)
    q = 0.5 * (1.0 - means)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -(np.where(p > 0, p * np.log(p), 0.0) + np.where(q > 0, q * np.log(q), 0.0))


def expected_log_potential(weights, biases, means) -> np.ndarray:
    """<-E>_Q = 1/2 m^T W m + b^T m under a factorised Q (W has a zero diagonal)."""
    return 0.5 * np.einsum("...i,...ij,...j->...", means, weights, means) + np.einsum(
        "...i,...i->...", means, biases
    )


def mean_field_bound(weights, biases, means, temperature: float = 1.0) -> np.ndarray:
    """Eq. 4.13 (or 4.14): L(m) <= ln Z_T for every m in [-1, 1]^f."""
    return expected_log_potential(weights, biases, means) / temperature + binary_entropy(means).sum(
        -1
    )


def mean_field_sweep(
    weights, biases, means, temperature: float = 1.0, damping: float = 0.0
) -> np.ndarray:
    """One asynchronous pass of eq. 4.10/4.11 over the units in order:
    m_k <- damping * m_k + (1 - damping) * tanh((sum_j w_kj m_j + b_k)/T)."""
    weights = np.asarray(weights, float)
    biases = np.asarray(biases, float)
    shape = np.broadcast_shapes(means.shape, biases.shape, weights.shape[:-1])
    m = np.array(np.broadcast_to(means, shape), dtype=float)
    for k in range(m.shape[-1]):
        field = (np.einsum("...j,...j->...", weights[..., k, :], m) + biases[..., k]) / temperature
        new = np.tanh(field)
        m[..., k] = np.clip(damping * m[..., k] + (1.0 - damping) * new, -MEAN_LIMIT, MEAN_LIMIT)
    return m


class MeanFieldResult(NamedTuple):
    means: np.ndarray  # (..., f)
    bound: np.ndarray  # (...,) L at T = temperatures[-1]
    sweeps: int  # passes at the final temperature


def mean_field_anneal(
    weights,
    biases,
    means,
    temperatures=(1.0,),
    damping: float = 0.0,
    sweeps_per_temperature: int = 1,
    max_sweeps: int = 100,
    tol: float = 1e-4,
) -> MeanFieldResult:
    """Deterministic annealing (§4.4.1): ``sweeps_per_temperature`` passes at each
    temperature but the last, then passes at the last until every batch member's bound
    changes by at most ``tol`` relative (the thesis' 0.01 %) or ``max_sweeps`` is reached."""
    m, bound, sweeps = anneal(
        lambda m, t: mean_field_sweep(weights, biases, m, t, damping),
        lambda m, t: mean_field_bound(weights, biases, m, t),
        np.asarray(means, float),
        temperatures,
        sweeps_per_temperature,
        max_sweeps,
        tol,
    )
    return MeanFieldResult(m, bound, sweeps)


def geometric_temperatures(start: float, stop: float, steps: int) -> np.ndarray:
    """``steps`` temperatures from ``start`` to ``stop`` in geometric progression (§4.5.1:
    60 -> 1 in 8 steps; the thesis does not give the spacing)."""
    return np.geomspace(start, stop, steps)
