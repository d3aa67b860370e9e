"""The network function, weight groups, priors and hyperpriors shared by every method.

The names below are loaded from their modules on first use (PEP 562), so that importing one
model module (``models.binary_states`` for a dataset's metadata) does not also import
``activations`` and with it scipy.special.
"""

import importlib

_HOME = {
    "ACTIVATIONS": "activations",
    "get_activation": "activations",
    "Network": "network",
    "PenalisedError": "objective",
    "HYPERPRIOR_ROLES": "priors",
    "PRIOR_KINDS": "priors",
    "GammaPrior": "priors",
    "WeightPrior": "priors",
    "make_prior": "priors",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
