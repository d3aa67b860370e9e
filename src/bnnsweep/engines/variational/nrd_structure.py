"""Structure learning with the node relevance determination prior (thesis sec. 6.5.9).

An EM-like alternation: the variational fit at fixed structure is the E-step; the M-step tries
to remove a node. After each outer iteration the hidden node with the fewest effective
parameters is removed if the lower bound of the smaller network (q(w) restricted to the kept
weights, q(alpha), q(beta) re-updated) is larger; otherwise the node is kept. The same is then
tried for the input nodes. Only removals that raise the bound are kept, so the recorded bound
never decreases.

Effective parameters: thesis eq. 6.53 is garbled in the extracted text (it divides prior
precisions by posterior variances); we use the usual well-determined count of each node's
weights, gamma_node = sum_k (1 - <alpha_(k)> s_k^2) (MacKay 1992), which is 0 for weights
whose posterior is their prior and 1 for weights the data determine.

Needs a diagonal q(w) (a sub-block of a Cholesky factor is not the factor of the sub-block).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...models.network import Network
from ...models.objective import PenalisedError
from ...models.priors import nrd_prior
from ...models.vi_family import GaussianFamily
from .hyperposterior import HyperPosterior


@dataclass
class Reduction:
    """A smaller network and where its weights and node hyperparameters sit in the old one."""

    network: Network
    weights: np.ndarray  # (W',) indices into the old weight vector
    groups: np.ndarray  # (K',) indices into the old nrd groups
    inputs: np.ndarray  # (I',) kept input columns of the old network


def reduce_network(network: Network, keep_inputs: np.ndarray, keep_hidden: np.ndarray) -> Reduction:
    """Keep the inputs and hidden units flagged True (boolean masks of length I and H)."""
    I, H, P = network.n_inputs, network.n_hidden, network.n_outputs
    ki, kh = np.flatnonzero(keep_inputs), np.flatnonzero(keep_hidden)
    s = network.slices
    W1 = np.arange(s["W1"].start, s["W1"].stop).reshape(H, I)
    W2 = np.arange(s["W2"].start, s["W2"].stop).reshape(P, H)
    b1 = np.arange(s["b1"].start, s["b1"].stop)
    b2 = np.arange(s["b2"].start, s["b2"].stop)
    weights = np.concatenate([W1[np.ix_(kh, ki)].ravel(), b1[kh], W2[:, kh].ravel(), b2])
    # nrd groups: inputs (I), input bias, hidden (H), hidden bias, outputs (P)
    groups = np.concatenate([ki, [I], I + 1 + kh, [I + 1 + H], I + H + 2 + np.arange(P)])
    new = Network(len(ki), len(kh), P, network.activation_name)
    return Reduction(new, weights, groups.astype(int), ki)


def effective_parameters(hyper: HyperPosterior, variances: np.ndarray) -> np.ndarray:
    """gamma per nrd node: sum over the weights touching it of 1 - <alpha_(k)> s_k^2."""
    prior = hyper.prior
    well = 1.0 - hyper.weight_precision() * variances
    K = prior.n_groups
    return np.bincount(prior.group_index, weights=well, minlength=K) + np.bincount(
        prior.partner_index, weights=well, minlength=K
    )


@dataclass
class Candidate:
    """A (possibly reduced) problem with its q(w) parameters and hyper-posteriors."""

    objective: PenalisedError
    family: GaussianFamily
    theta: np.ndarray
    hyper: HyperPosterior
    inputs: np.ndarray  # original input columns used

    def bound(self, gaussian) -> float:
        e_d, _, _, second, _, _ = gaussian.statistics(self.theta)
        return self.hyper.bound(e_d, second, self.family.entropy(self.theta)[0])


def remove_node(cand: Candidate, layer: str, x: np.ndarray, make_bound) -> Candidate | None:
    """The candidate without the ``layer`` ('hidden' or 'input') node of fewest effective
    parameters, with q(alpha), q(beta) re-updated; None when only one such node is left."""
    net = cand.objective.network
    I, H = net.n_inputs, net.n_hidden
    count = H if layer == "hidden" else I
    if count <= 1:
        return None
    variances = cand.family.variances(cand.theta)
    gamma = effective_parameters(cand.hyper, variances)
    offset = I + 1 if layer == "hidden" else 0
    drop = int(np.argmin(gamma[offset : offset + count]))
    keep_in, keep_h = np.ones(I, bool), np.ones(H, bool)
    (keep_h if layer == "hidden" else keep_in)[drop] = False
    red = reduce_network(net, keep_in, keep_h)
    hp = cand.hyper.prior.hyperpriors[0]
    prior = nrd_prior(red.network, hp)
    inputs = cand.inputs[red.inputs]
    objective = PenalisedError(red.network, prior, x[:, inputs], cand.objective.t)
    family = GaussianFamily("diag", red.network.n_weights)
    W = net.n_weights
    theta = np.concatenate([cand.theta[:W][red.weights], cand.theta[W:][red.weights]])
    old = cand.hyper
    hyper = HyperPosterior(prior, old.noise_prior, old.n_targets, old.alpha_shape[red.groups].copy(),
                           old.alpha_rate[red.groups].copy(), old.beta_shape, old.beta_rate,
                           node_sweeps=old.node_sweeps)  # fmt: skip
    new = Candidate(objective, family, theta, hyper, inputs)
    e_d, _, _, second, _, _ = make_bound(new).statistics(theta)
    hyper.update_alpha(second)
    hyper.update_beta(e_d)
    return new
