"""Variational inference and learning in sigmoid belief networks (thesis ch. 2).

- ``saul_bound``: Saul et al.'s bound 2.12 and mean field (2.13-2.18, App. A);
- ``mixture_bound``: mixtures of mean-field distributions (2.19-2.37);
- ``markov_chain``: the Markov-chain Q-distribution (2.38-2.50) with the App. B gradients;
- ``learning``: gradient ascent on the bound in the network weights (§2.5.2).

Every function is batched over a leading axis (networks, or networks x patterns). The
network itself (layers, sampling, exact enumeration) is ``bnnsweep.models.sigmoid_belief``.
"""

from .learning import (
    LearningResult,
    init_weights,
    learn_by_mixture_bound,
    learning_step,
    mixture_weight_gradient,
)
from .markov_chain import ChainState, chain_bound, chain_bound_gradients, fit_markov_chain
from .mixture_bound import MixtureState, fit_mixture, mixture_bound, mutual_information_bound
from .saul_bound import MeanFieldState, fit_mean_field, mean_field_bound, softplus_upper_bound

__all__ = [
    "ChainState",
    "LearningResult",
    "MeanFieldState",
    "MixtureState",
    "chain_bound",
    "chain_bound_gradients",
    "fit_markov_chain",
    "fit_mean_field",
    "fit_mixture",
    "init_weights",
    "learn_by_mixture_bound",
    "learning_step",
    "mean_field_bound",
    "mixture_bound",
    "mixture_weight_gradient",
    "mutual_information_bound",
    "softplus_upper_bound",
]
