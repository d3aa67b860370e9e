"""Boltzmann machines with ±1 units and their exact enumeration (thesis ch. 4, eqs. 4.1-4.6).

Energy convention (settled here, checked by the tests)::

    P(s) = exp(-E(s)/T) / Z_T,   -E(s) = 1/2 sum_{i != j} w_ij s_i s_j + sum_i b_i s_i

with s_i in {-1, +1}, W symmetric with a zero diagonal and b the biases (the thesis' w_i0
with s_0 = 1). The thesis prints 4.1-4.2 as exp(sum_i E_i) with
E_i = (sum_j w_ij s_j + w_i0) s_i, which counts every pair twice; with that literal form
mean field would read <s> = tanh(2 sum_j w_ij <s_j> + b). With the 1/2 above the
conditional of one unit is P(s_k | rest) ∝ exp(s_k (sum_j w_kj s_j + b_k)/T), so mean field
reads <s_k> = tanh((sum_j w_kj <s_j> + b_k)/T) (4.10-4.11) and the gradient of ln Z with
respect to the shared parameter w_ij = w_ji is <s_i s_j> (4.6): both are verified by
enumeration and finite differences in ``tests/test_boltzmann_exact.py``.

Arrays: a batch of K machines has ``weights`` (K, n, n) and ``biases`` (K, n); any leading
batch shape broadcasts. A *phase* clamps a set of units (``clamped``, an index array) to
values (P, c) (one row per pattern) and sums over the other ("free") units.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .binary_states import all_states

SPIN_VALUES = (-1.0, 1.0)


# --------------------------------------------------------------------------- structure
def fully_connected_mask(n: int) -> np.ndarray:
    """(n, n) boolean mask of a fully connected machine: every pair, no self-connections."""
    return ~np.eye(n, dtype=bool)


def layered_mask(layer_sizes: list[int] | tuple[int, ...]) -> np.ndarray:
    """Mask of a layered machine: full connections between adjacent layers only (fig. 4.3).

    Units are numbered layer by layer in the order given.
    """
    n = int(sum(layer_sizes))
    mask = np.zeros((n, n), dtype=bool)
    starts = np.concatenate([[0], np.cumsum(layer_sizes)])
    for a in range(len(layer_sizes) - 1):
        lo, mid, hi = starts[a], starts[a + 1], starts[a + 2]
        mask[lo:mid, mid:hi] = True
        mask[mid:hi, lo:mid] = True
    return mask


def grid_neighbourhood_mask(rows: int, cols: int, hidden: int = 0) -> np.ndarray:
    """Mask of the digits machine (§4.5.2): a rows x cols grid of visible units each linked
    to its (up to) 8 neighbours, plus ``hidden`` units linked to every unit.

    Grid unit (r, c) is index r * cols + c; hidden units follow the grid.
    """
    n_grid = rows * cols
    n = n_grid + hidden
    mask = np.zeros((n, n), dtype=bool)
    r, c = np.divmod(np.arange(n_grid), cols)
    close = (np.abs(r[:, None] - r[None, :]) <= 1) & (np.abs(c[:, None] - c[None, :]) <= 1)
    mask[:n_grid, :n_grid] = close
    mask[n_grid:, :] = True
    mask[:, n_grid:] = True
    np.fill_diagonal(mask, False)
    return mask


def symmetric_weights(raw: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A valid weight matrix from any (..., n, n) array: the upper triangle (i < j) mirrored,
    zero off the connectivity ``mask`` and on the diagonal."""
    mask = np.asarray(mask, dtype=bool)
    upper = np.triu(np.ones(mask.shape, dtype=bool), k=1) & mask
    w = np.where(upper, raw, 0.0)
    return w + np.swapaxes(w, -1, -2)


def random_machines(
    rng: np.random.Generator,
    count: int,
    mask: np.ndarray,
    low: float = -1.0,
    high: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` machines with every weight on the mask and every bias drawn U(low, high)
    (§4.5.1: U(-1, 1)). Returns weights (K, n, n) and biases (K, n)."""
    n = mask.shape[0]
    raw = rng.uniform(low, high, size=(count, n, n))
    return symmetric_weights(raw, mask), rng.uniform(low, high, size=(count, n))


def weights_to_vector(weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The free parameters w_ij, i < j on the mask, as (..., n_pairs)."""
    iu = np.nonzero(np.triu(mask, k=1))
    return weights[..., iu[0], iu[1]]


def vector_to_weights(vector: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Inverse of ``weights_to_vector``."""
    n = mask.shape[0]
    iu = np.nonzero(np.triu(mask, k=1))
    w = np.zeros(vector.shape[:-1] + (n, n))
    w[..., iu[0], iu[1]] = vector
    return w + np.swapaxes(w, -1, -2)


# --------------------------------------------------------------------------- energy
def log_potential(states: np.ndarray, weights: np.ndarray, biases: np.ndarray) -> np.ndarray:
    """-E(s) = 1/2 s^T W s + b^T s (eq. 4.1 with the pair counted once, see module docstring).

    ``states`` (..., S, n) broadcast against weights (..., n, n) and biases (..., n);
    returns (..., S).
    """
    pair = 0.5 * np.einsum("...si,...ij,...sj->...s", states, weights, states)
    return pair + np.einsum("...si,...i->...s", states, biases)


def free_and_clamped(n: int, clamped) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays (free, clamped) of a phase that clamps the units ``clamped``."""
    clamped = np.asarray(clamped if clamped is not None else [], dtype=int).reshape(-1)
    free = np.setdiff1d(np.arange(n), clamped)
    return free, clamped


class ClampedMachine(NamedTuple):
    """The machine over the free units of a phase (eq. 4.1 with the clamped units fixed):
    -E(h, v) = 1/2 h^T W_ff h + (b_f + W_fc v)^T h + const(v)."""

    weights: np.ndarray  # (K, 1, f, f)
    biases: np.ndarray  # (K, P, f)
    constant: np.ndarray  # (K, P): 1/2 v^T W_cc v + b_c^T v
    free: np.ndarray  # (f,) indices into the n units
    clamped: np.ndarray  # (c,)
    values: np.ndarray  # (P, c) clamped values


def clamp_machine(weights, biases, clamped, values) -> ClampedMachine:
    """Condition K machines (weights (K, n, n), biases (K, n)) on P patterns of the clamped
    units (values (P, c), shared by the machines). With nothing clamped P is the number of
    rows of ``values`` (use shape (1, 0) for the joint phase)."""
    weights = np.asarray(weights, float)
    biases = np.asarray(biases, float)
    n = weights.shape[-1]
    free, clamped = free_and_clamped(n, clamped)
    values = np.asarray(values, float)
    if values.ndim == 1:
        values = values[None, :]
    w_ff = weights[..., free[:, None], free[None, :]]
    w_fc = weights[..., free[:, None], clamped[None, :]]
    w_cc = weights[..., clamped[:, None], clamped[None, :]]
    b_f = biases[..., None, free] + np.einsum("kfc,pc->kpf", w_fc, values)
    const = 0.5 * np.einsum("pc,kcd,pd->kp", values, w_cc, values)
    const = const + np.einsum("pc,kc->kp", values, biases[..., clamped])
    return ClampedMachine(w_ff[:, None], b_f, const, free, clamped, values)


def expand_means(free_means: np.ndarray, machine: ClampedMachine, n: int) -> np.ndarray:
    """Full-size (..., n) means from the free units' means (K, P, ..., f): clamped units take
    their clamped values. Extra axes between P and f (mixture components) are kept."""
    shape = free_means.shape[:-1] + (n,)
    full = np.zeros(shape)
    full[..., machine.free] = free_means
    extra = free_means.ndim - 3  # axes after (K, P)
    vals = machine.values.reshape(machine.values.shape[:-1] + (1,) * extra + (-1,))
    full[..., machine.clamped] = np.broadcast_to(vals, shape[:-1] + (machine.clamped.size,))
    return full


# --------------------------------------------------------------------------- exact
class ExactMoments(NamedTuple):
    """Exact results of a phase: ln of its partition function and the moments of all n
    units (clamped ones at their values)."""

    log_partition: np.ndarray  # (K, P): ln sum_h exp(-E(h, v)/T)
    means: np.ndarray  # (K, P, n)
    correlations: np.ndarray  # (K, P, n, n), ones on the diagonal


def phase_states(n: int, clamped, values) -> np.ndarray:
    """(P, 2**f, n) every state of the free units with the clamped ones set per pattern."""
    free, clamped = free_and_clamped(n, clamped)
    values = np.asarray(values, float)
    if values.ndim == 1:
        values = values[None, :]
    sub = all_states(free.size, SPIN_VALUES)
    states = np.zeros((values.shape[0], sub.shape[0], n))
    states[:, :, free] = sub[None]
    states[:, :, clamped] = values[:, None, :]
    return states


def exact_phase(weights, biases, clamped=None, values=None, temperature: float = 1.0):
    """Exact ln Z, <s_i> and <s_i s_j> of a phase by enumerating the free units (eqs. 4.3,
    4.6). ``clamped=None`` is the free (joint) phase: the result has P = 1."""
    from scipy.special import logsumexp

    weights = np.asarray(weights, float)
    biases = np.asarray(biases, float)
    n = weights.shape[-1]
    if clamped is None or np.size(clamped) == 0:
        clamped, values = np.zeros(0, int), np.zeros((1, 0))
    states = phase_states(n, clamped, values)  # (P, S, n)
    logp = log_potential(states[None], weights[:, None], biases[:, None]) / temperature
    log_z = logsumexp(logp, axis=-1)
    prob = np.exp(logp - log_z[..., None])
    means = np.einsum("kps,psi->kpi", prob, states)
    corr = np.einsum("kps,psi,psj->kpij", prob, states, states)
    return ExactMoments(log_z, means, corr)


def exact_log_partition(weights, biases, temperature: float = 1.0) -> np.ndarray:
    """ln Z_T of each machine, eq. 4.3, (K,)."""
    return exact_phase(weights, biases, temperature=temperature).log_partition[:, 0]


class ExactLikelihood(NamedTuple):
    """Exact sum over patterns of ln P(clamped_plus | clamped_minus) and its gradient (eq. 4.6)."""

    log_likelihood: np.ndarray  # (K,)
    per_pattern: np.ndarray  # (K, P)
    weight_gradient: np.ndarray  # (K, n, n), symmetric, d/dw_ij of the shared w_ij = w_ji
    bias_gradient: np.ndarray  # (K, n)


def exact_log_likelihood(
    weights, biases, plus_clamped, data, minus_clamped=None, mask=None
) -> ExactLikelihood:
    """Exact log-likelihood of the data and its gradient (eqs. 4.5-4.6).

    ``data`` (P, len(plus_clamped)) holds the values of the units ``plus_clamped`` (visible
    units, or inputs and outputs). ``minus_clamped`` (a subset of ``plus_clamped``, default
    none) are the units the model conditions on: None gives ln P(V) (4.5); the inputs give
    the supervised ln P(O | I). The gradient is sum_n <s_i s_j>_C - <s_i s_j>_F per pattern
    (4.6), zeroed off the ``mask``.
    """
    plus_clamped = np.asarray(plus_clamped, int)
    data = np.asarray(data, float)
    plus = exact_phase(weights, biases, plus_clamped, data)
    if minus_clamped is None or np.size(minus_clamped) == 0:
        minus = exact_phase(weights, biases)
    else:
        minus_clamped = np.asarray(minus_clamped, int)
        cols = [int(np.nonzero(plus_clamped == u)[0][0]) for u in minus_clamped]
        minus = exact_phase(weights, biases, minus_clamped, data[:, cols])
    per_pattern = plus.log_partition - minus.log_partition
    p = data.shape[0]
    grad_w = plus.correlations.sum(1) - minus.correlations.sum(1) * (p / minus.means.shape[1])
    grad_b = plus.means.sum(1) - minus.means.sum(1) * (p / minus.means.shape[1])
    n = np.shape(weights)[-1]
    if mask is None:
        mask = fully_connected_mask(n)
    grad_w = np.where(mask, grad_w, 0.0)
    return ExactLikelihood(per_pattern.sum(1), per_pattern, grad_w, grad_b)


def empirical_kl(weights, biases, visible, data) -> np.ndarray:
    """KL(data || model) = sum_v p_data(v) ln(p_data(v) / P(v)) over the visible units
    (fig. 4.5a), (K,)."""
    data = np.asarray(data, float)
    uniq, counts = np.unique(data, axis=0, return_counts=True)
    p_data = counts / counts.sum()
    ll = exact_log_likelihood(weights, biases, visible, uniq).per_pattern  # (K, U)
    return np.sum(p_data * (np.log(p_data) - ll), axis=-1)
