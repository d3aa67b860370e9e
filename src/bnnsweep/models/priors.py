"""Gaussian weight priors over weight groups and their Gamma hyperpriors.

p(w | {alpha_k}) = prod_k (alpha_k / 2 pi)^(W_k / 2) exp(-alpha_k w_k^T w_k / 2)   (paper 001 eq. 7)

Group structures (DESIGN.md):
- ``single``:  one alpha for every weight (paper 000 sec. 4);
- ``grouped``: input->hidden, hidden biases, hidden->output, output biases (paper 001 sec. 3);
- ``ard``:     as ``grouped`` with the input->hidden weights split per input (MacKay's ARD);
- ``nrd``:     node relevance determination (thesis eq. 6.32): one hyperparameter per node
  (inputs, the input bias node, hidden units, the hidden bias node, outputs), the precision
  of a weight being the product of its two nodes' hyperparameters. Every node takes the
  ``weights`` role's hyperprior. Only the variational methods fit it.

Gamma hyperpriors are parameterised by (shape, rate); the papers' (mean omega, s) form of
paper 001 eq. 8 converts as shape = s / 2, rate = s / (2 omega) (papers/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .network import Network

PRIOR_KINDS = ("single", "grouped", "ard", "nrd")
VARIATIONAL_ONLY_PRIORS = ("nrd",)


def check_prior_supported(method: str, prior: str) -> None:
    """Refuse a prior that only the variational methods (vi_gauss, vi_mixture) implement."""
    if prior in VARIATIONAL_ONLY_PRIORS:
        raise ValueError(
            f"method {method!r} does not support prior {prior!r}: node relevance determination "
            "is implemented for the variational methods vi_gauss and vi_mixture only"
        )


@dataclass(frozen=True)
class GammaPrior:
    """Gamma(shape, rate) density on a precision: rate^a tau^(a-1) e^(-rate tau) / Gamma(a)."""

    shape: float
    rate: float

    def __post_init__(self) -> None:
        if not (self.shape > 0 and self.rate > 0 and np.isfinite(self.shape + self.rate)):
            raise ValueError(f"Gamma hyperprior needs shape > 0 and rate > 0, got {self}")

    @classmethod
    def from_mean_s(cls, mean: float, s: float) -> GammaPrior:
        """Paper 001 eq. 8: mean omega and variance 2 omega^2 / s."""
        return cls(shape=s / 2.0, rate=s / (2.0 * mean))

    @classmethod
    def from_spec(cls, spec: dict, n_hidden: int = 1) -> GammaPrior:
        """Build from ``{shape, rate}`` or ``{mean, s}``; ``scale_with_hidden`` multiplies the
        mean by H (paper 001 sec. 5: omega = h for the hidden->output precision)."""
        scale = n_hidden if spec.get("scale_with_hidden", False) and n_hidden > 0 else 1
        if "mean" in spec:
            return cls.from_mean_s(float(spec["mean"]) * scale, float(spec["s"]))
        return cls(shape=float(spec["shape"]), rate=float(spec["rate"]) / scale)

    @property
    def mean(self) -> float:
        return self.shape / self.rate

    def logpdf(self, tau):
        from scipy.special import gammaln

        tau = np.asarray(tau, dtype=float)
        return (
            self.shape * np.log(self.rate)
            - gammaln(self.shape)
            + (self.shape - 1.0) * np.log(tau)
            - self.rate * tau
        )


@dataclass(frozen=True)
class WeightPrior:
    """Assignment of every weight to a precision group, with one Gamma hyperprior per group."""

    kind: str
    group_names: tuple[str, ...]
    group_index: np.ndarray  # (W,) int, group of each weight
    hyperpriors: tuple[GammaPrior, ...]
    partner_index: np.ndarray | None = None  # (W,) second group of each weight (nrd)

    @property
    def n_groups(self) -> int:
        return len(self.group_names)

    @property
    def group_sizes(self) -> np.ndarray:
        return np.bincount(self.group_index, minlength=self.n_groups)

    @property
    def shapes(self) -> np.ndarray:
        return np.array([h.shape for h in self.hyperpriors])

    @property
    def rates(self) -> np.ndarray:
        return np.array([h.rate for h in self.hyperpriors])

    def indicator(self) -> np.ndarray:
        """One-hot matrix (W, K) of group membership."""
        return np.eye(self.n_groups)[self.group_index]

    def sum_squares(self, w: np.ndarray) -> np.ndarray:
        """w_k^T w_k for each group, shape (B, K)."""
        return (np.atleast_2d(w) ** 2) @ self.indicator()

    def per_weight(self, alpha: np.ndarray) -> np.ndarray:
        """Expand group precisions (B, K) or (K,) to per-weight precisions (B, W) or (W,);
        under ``nrd`` the product of the two nodes' precisions (thesis eq. 6.32)."""
        alpha = np.asarray(alpha)
        if self.partner_index is None:
            return alpha[..., self.group_index]
        return alpha[..., self.group_index] * alpha[..., self.partner_index]

    def log_hyperprior(self, alpha: np.ndarray) -> np.ndarray:
        """sum_k ln Gamma(alpha_k | shape_k, rate_k), over the last axis."""
        alpha = np.asarray(alpha, dtype=float)
        return sum(h.logpdf(alpha[..., k]) for k, h in enumerate(self.hyperpriors))


def _role_blocks(network: Network) -> list[tuple[str, str, np.ndarray]]:
    """(group name, hyperprior role, weight indices) of the grouped structure."""
    s = network.slices
    if network.n_hidden == 0:
        return [
            ("input_output", "input_hidden", np.arange(s["Wd"].start, s["Wd"].stop)),
            ("output_bias", "output_bias", np.arange(s["b2"].start, s["b2"].stop)),
        ]
    return [
        ("input_hidden", "input_hidden", np.arange(s["W1"].start, s["W1"].stop)),
        ("hidden_bias", "hidden_bias", np.arange(s["b1"].start, s["b1"].stop)),
        ("hidden_output", "hidden_output", np.arange(s["W2"].start, s["W2"].stop)),
        ("output_bias", "output_bias", np.arange(s["b2"].start, s["b2"].stop)),
    ]


HYPERPRIOR_ROLES = ("weights", "input_hidden", "hidden_bias", "hidden_output", "output_bias")


def make_prior(network: Network, kind: str, hyperpriors: dict[str, dict]) -> WeightPrior:
    """The weight prior of a given kind; ``hyperpriors`` maps a role to a Gamma spec.

    Roles: ``weights`` (the ``single`` prior) and ``input_hidden``, ``hidden_bias``,
    ``hidden_output``, ``output_bias`` (``grouped`` and ``ard``; every ARD input group takes
    the ``input_hidden`` hyperprior).
    """
    if kind not in PRIOR_KINDS:
        raise ValueError(f"unknown prior {kind!r}; valid: {', '.join(PRIOR_KINDS)}")
    H = network.n_hidden

    def hyper(role: str) -> GammaPrior:
        if role not in hyperpriors:
            raise ValueError(f"prior {kind!r} needs a hyperprior for {role!r}")
        return GammaPrior.from_spec(hyperpriors[role], H)

    index = np.zeros(network.n_weights, dtype=int)
    if kind == "nrd":
        return nrd_prior(network, hyper("weights"))
    if kind == "single":
        return WeightPrior(kind, ("weights",), index, (hyper("weights"),))
    names, priors = [], []
    for name, role, idx in _role_blocks(network):
        if kind == "ard" and role == "input_hidden":
            # weights leaving input i: column i of W1 (H x I row-major) or of Wd (P x I)
            n_in = network.n_inputs
            for i in range(n_in):
                index[idx[i::n_in]] = len(names)
                names.append(f"{name}_{i}")
                priors.append(hyper(role))
            continue
        index[idx] = len(names)
        names.append(name)
        priors.append(hyper(role))
    return WeightPrior(kind, tuple(names), index, tuple(priors))


def nrd_prior(network: Network, hyperprior: GammaPrior) -> WeightPrior:
    """Node relevance determination (thesis eq. 6.32): nodes are the inputs, the input bias
    node, the hidden units, the hidden bias node and the outputs (without hidden layer: the
    inputs, the input bias node and the outputs); each weight joins its two nodes."""
    I, H, P = network.n_inputs, network.n_hidden, network.n_outputs
    s = network.slices
    names = [f"input_{i}" for i in range(I)] + ["input_bias"]
    inputs = np.arange(I + 1)
    if H > 0:
        hidden = np.arange(H + 1) + len(names)
        names += [f"hidden_{j}" for j in range(H)] + ["hidden_bias"]
    outputs = np.arange(P) + len(names)
    names += [f"output_{p}" for p in range(P)]
    first = np.zeros(network.n_weights, dtype=int)
    second = np.zeros(network.n_weights, dtype=int)
    if H == 0:
        first[s["Wd"]] = np.tile(inputs[:I], P)
        second[s["Wd"]] = np.repeat(outputs, I)
        first[s["b2"]], second[s["b2"]] = inputs[I], outputs
    else:
        first[s["W1"]] = np.tile(inputs[:I], H)  # W1 is H x I row-major
        second[s["W1"]] = np.repeat(hidden[:H], I)
        first[s["b1"]], second[s["b1"]] = inputs[I], hidden[:H]
        first[s["W2"]] = np.tile(hidden[:H], P)  # W2 is P x H row-major
        second[s["W2"]] = np.repeat(outputs, H)
        first[s["b2"]], second[s["b2"]] = hidden[H], outputs
    priors = (hyperprior,) * len(names)
    return WeightPrior("nrd", tuple(names), first, priors, partner_index=second)
