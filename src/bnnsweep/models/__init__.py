"""The network function, weight groups, priors and hyperpriors shared by every method."""

from .activations import ACTIVATIONS, get_activation
from .network import Network
from .objective import PenalisedError
from .priors import HYPERPRIOR_ROLES, PRIOR_KINDS, GammaPrior, WeightPrior, make_prior

__all__ = [
    "ACTIVATIONS",
    "HYPERPRIOR_ROLES",
    "PRIOR_KINDS",
    "GammaPrior",
    "Network",
    "PenalisedError",
    "WeightPrior",
    "get_activation",
    "make_prior",
]
