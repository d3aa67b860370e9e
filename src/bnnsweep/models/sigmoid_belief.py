"""Layered sigmoid belief networks with {0, 1} units (thesis ch. 2, eqs. 2.1-2.7).

A network is a stack of layers, the top layer (roots) first and the visible layer last;
every unit of a layer has every unit of the layer above as a parent. Units are numbered
layer by layer from the top, so the hidden units are ``0 .. n_hidden-1`` and the visible
units the last ``n_visible``. Weights are stored dense, ``weights[..., i, j] = w_ij`` from
parent j to child i (zero unless j is in the layer directly above i), so a network is
strictly lower triangular in this numbering, and biases ``biases[..., i] = w_i0``.

Every array carries a leading batch axis (K networks, or K networks x P patterns once
flattened): the experiments of §2.5 run thousands of small networks at once.

Exact quantities by enumeration of the hidden states (``models.binary_states.all_states``):
ln P(V) (2.6-2.7), the posterior P(H|V), and the mutual information I(m, H) of a mixture of
factorised distributions (2.21), the references for the variational bounds of
``engines.sbn``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .binary_states import all_states

MAX_EXACT_HIDDEN = 20


@dataclass(frozen=True)
class LayeredSBN:
    """K layered sigmoid belief networks of one architecture.

    ``layer_sizes`` lists the layers top (roots) first, visible layer last;
    ``weights`` is (K, N, N) with w_ij at [k, i, j]; ``biases`` is (K, N).
    """

    layer_sizes: tuple[int, ...]
    weights: np.ndarray
    biases: np.ndarray

    def __post_init__(self):
        n = sum(self.layer_sizes)
        if self.weights.shape[-2:] != (n, n) or self.biases.shape[-1] != n:
            raise ValueError(f"weights {self.weights.shape} / biases {self.biases.shape} vs N={n}")
        if np.any(self.weights[..., ~parent_mask(self.layer_sizes)] != 0):
            raise ValueError("weights outside the layered connectivity must be zero")

    @property
    def n_units(self) -> int:
        return sum(self.layer_sizes)

    @property
    def n_visible(self) -> int:
        return self.layer_sizes[-1]

    @property
    def n_hidden(self) -> int:
        return self.n_units - self.n_visible

    @property
    def n_networks(self) -> int:
        return self.weights.shape[0]


def layer_of_unit(layer_sizes: tuple[int, ...]) -> np.ndarray:
    """The layer index (0 = top) of each unit in the top-first numbering."""
    return np.repeat(np.arange(len(layer_sizes)), layer_sizes)


def parent_mask(layer_sizes: tuple[int, ...]) -> np.ndarray:
    """(N, N) boolean, [i, j] true when j is in the layer directly above i (a parent)."""
    layer = layer_of_unit(layer_sizes)
    return layer[None, :] == layer[:, None] - 1


def random_layered_sbn(
    layer_sizes: tuple[int, ...], n_networks: int, span: float, rng: np.random.Generator
) -> LayeredSBN:
    """K nets with every weight and bias drawn from U(-span, span) (§2.5.1, 2-4-6 nets)."""
    n = sum(layer_sizes)
    mask = parent_mask(layer_sizes)
    weights = rng.uniform(-span, span, size=(n_networks, n, n)) * mask
    biases = rng.uniform(-span, span, size=(n_networks, n))
    return LayeredSBN(tuple(layer_sizes), weights, biases)


def softplus(x: np.ndarray) -> np.ndarray:
    """ln(1 + e^x), stable for large |x|."""
    return np.logaddexp(0.0, x)


def log_joint(weights: np.ndarray, biases: np.ndarray, states: np.ndarray) -> np.ndarray:
    """ln P(S) = sum_i [s_i z_i - ln(1 + e^{z_i})], z_i = sum_j w_ij s_j + w_i0 (eqs. 2.4-2.5).

    ``weights`` (B, N, N), ``biases`` (B, N), ``states`` (B, S, N) or (S, N) shared by the
    batch; returns (B, S).
    """
    if states.ndim == 2:
        z = np.einsum("bij,sj->bsi", weights, states)
    else:
        z = np.einsum("bij,bsj->bsi", weights, states)
    z = z + biases[:, None, :]
    s = np.broadcast_to(states, z.shape)
    return np.sum(s * z - softplus(z), axis=-1)


def sample(net: LayeredSBN, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """Ancestral samples of every unit, (K, n_samples, N), P(s_i=1|pa) = sigma(z_i) (2.3)."""
    k, n = net.n_networks, net.n_units
    s = np.zeros((k, n_samples, n))
    for i in range(n):  # top-first numbering is a topological order
        z = np.einsum("bj,bsj->bs", net.weights[:, i, :], s) + net.biases[:, i, None]
        s[:, :, i] = rng.random((k, n_samples)) < 1.0 / (1.0 + np.exp(-z))
    return s


def _joint_over_hidden(net: LayeredSBN, visible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ln P(H, V) for every hidden state: (K, P, 2**H) and the (2**H, H) states.

    ``visible`` is (D,), (P, D) shared by all nets, or (K, P, D).
    """
    if net.n_hidden > MAX_EXACT_HIDDEN:
        raise ValueError(f"{net.n_hidden} hidden units: too many to enumerate")
    v = np.asarray(visible, dtype=float)
    if v.ndim == 1:
        v = v[None, :]
    if v.ndim == 2:
        v = np.broadcast_to(v, (net.n_networks, *v.shape))
    k, p, _ = v.shape
    hidden = all_states(net.n_hidden)
    h = len(hidden)
    states = np.concatenate(
        [
            np.broadcast_to(hidden[None, None], (k, p, h, net.n_hidden)),
            np.broadcast_to(v[:, :, None, :], (k, p, h, net.n_visible)),
        ],
        axis=-1,
    ).reshape(k, p * h, net.n_units)
    return log_joint(net.weights, net.biases, states).reshape(k, p, h), hidden


def exact_log_marginal(net: LayeredSBN, visible: np.ndarray) -> np.ndarray:
    """ln P(V) = ln sum_H P(H, V) by enumeration (eq. 2.6); (K, P) for P visible patterns.

    Sum over the last axis for the log likelihood of a data set (eq. 2.7).
    """
    from scipy.special import logsumexp

    lj, _ = _joint_over_hidden(net, visible)
    return logsumexp(lj, axis=-1)


def exact_log_marginal_patterns(net: LayeredSBN, patterns: np.ndarray) -> np.ndarray:
    """ln P(v) of every pattern (P, D) under each net, (K, P): the same sum as
    ``exact_log_marginal`` (eq. 2.6), arranged for many patterns shared by the nets.

    The visible units' parents are all hidden (the layer above), so their fields z_i(H) do
    not depend on the pattern: ln P(H, v) = ln P(H) + sum_i [v_i z_i(H) - ln(1 + e^{z_i(H)})]
    over the visible units, a (P, D) x (D, 2^H) product per net.
    """
    from scipy.special import logsumexp

    if net.n_hidden > MAX_EXACT_HIDDEN:
        raise ValueError(f"{net.n_hidden} hidden units: too many to enumerate")
    h = net.n_hidden
    hidden = all_states(h)
    log_p_hidden = log_joint(net.weights[:, :h, :h], net.biases[:, :h], hidden)  # (K, S)
    z_visible = np.einsum("bij,sj->bsi", net.weights[:, h:, :h], hidden) + net.biases[:, None, h:]
    base = log_p_hidden - softplus(z_visible).sum(-1)
    v = np.asarray(patterns, dtype=float)
    return logsumexp(base[:, None, :] + np.einsum("pd,bsd->bps", v, z_visible), axis=-1)


def exact_posterior(net: LayeredSBN, visible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(H|V) over all hidden states, (K, P, 2**H), with the (2**H, H) states themselves."""
    from scipy.special import logsumexp

    lj, hidden = _joint_over_hidden(net, visible)
    return np.exp(lj - logsumexp(lj, axis=-1, keepdims=True)), hidden


def exact_posterior_means(net: LayeredSBN, visible: np.ndarray) -> np.ndarray:
    """<h_i> under the exact posterior, (K, P, H)."""
    post, hidden = exact_posterior(net, visible)
    return post @ hidden


def factorised_state_probs(mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """prod_i mu_i^{h_i}(1-mu_i)^{1-h_i} over all states: (..., 2**H) and the states."""
    from scipy.special import xlogy

    states = all_states(mu.shape[-1])
    logp = xlogy(states, mu[..., None, :]) + xlogy(1 - states, 1 - mu[..., None, :])
    return np.exp(logp.sum(-1)), states


def exact_mutual_information(mix_weights: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """I(m, H) of Q_mix(H) = sum_m Q(m) prod_i Q(h_i|m) by enumeration (eq. 2.21).

    ``mix_weights`` (B, M) = Q(m), ``mu`` (B, M, H) = Q(h_i=1|m); returns (B,).
    """
    from scipy.special import xlogy

    q_h_m, _ = factorised_state_probs(mu)  # (B, M, S)
    q_mix = np.einsum("bm,bms->bs", mix_weights, q_h_m)
    per_state = xlogy(q_h_m, q_h_m) - xlogy(q_h_m, q_mix[:, None, :])
    return np.einsum("bm,bms->b", mix_weights, per_state)


def exact_expected_softplus(mu: np.ndarray, weights: np.ndarray, biases: np.ndarray) -> np.ndarray:
    """<ln(1 + e^{z_i})> under prod_j Bernoulli(mu_j), by enumeration; (B, N).

    ``mu`` (B, N) holds every unit's mean (visible units at their values, 0/1).
    The reference for Saul et al.'s bound 2.12.
    """
    q, states = factorised_state_probs(mu)  # (B, S), (S, N)
    z = np.einsum("bij,sj->bsi", weights, states) + biases[:, None, :]
    return np.einsum("bs,bsi->bi", q, softplus(z))


def n_parameters(layer_sizes: tuple[int, ...]) -> int:
    """Weights between adjacent layers plus one bias per unit (44 for a 2-4-6 net)."""
    return int(parent_mask(tuple(layer_sizes)).sum()) + sum(layer_sizes)


def pack_parameters(net: LayeredSBN) -> np.ndarray:
    """One row per network: its layered weights w_ij (row-major over ``parent_mask``, i.e.
    child i, then parent j) then its biases w_i0; (K, ``n_parameters``)."""
    mask = parent_mask(net.layer_sizes)
    return np.concatenate([net.weights[:, mask], net.biases], axis=-1)


def unpack_parameters(rows: np.ndarray, layer_sizes: tuple[int, ...]) -> LayeredSBN:
    """The networks of ``pack_parameters`` rows (K, ``n_parameters``)."""
    layer_sizes = tuple(int(n) for n in layer_sizes)
    rows = np.asarray(rows, dtype=float)
    if rows.ndim != 2 or rows.shape[1] != n_parameters(layer_sizes):
        raise ValueError(
            f"rows of shape {rows.shape} are not the {n_parameters(layer_sizes)} parameters "
            f"of {'-'.join(map(str, layer_sizes))} networks"
        )
    mask = parent_mask(layer_sizes)
    n = sum(layer_sizes)
    weights = np.zeros((rows.shape[0], n, n))
    weights[:, mask] = rows[:, : mask.sum()]
    return LayeredSBN(layer_sizes, weights, rows[:, mask.sum() :].copy())
