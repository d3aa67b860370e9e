"""Hidden-unit activation functions with their first and second derivatives.

``erf`` is the scaled cumulative Gaussian g(a) = erf(a / sqrt 2) = 2 Phi(a) - 1 used by the
variational papers (paper 002 eq. 2; paper 000 eq. 3 with the lost /2 restored); ``tanh``
is the unit of the sampling papers (paper 001 sec. 3); ``linear`` is the identity, used by
tests that need a conjugate model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SQRT2 = np.sqrt(2.0)
SQRT2_OVER_PI = np.sqrt(2.0 / np.pi)


@dataclass(frozen=True)
class Activation:
    """g, g' and g'' as functions of the pre-activation; ``odd`` marks g(-a) = -g(a)."""

    name: str
    value: Callable[[np.ndarray], np.ndarray]
    derivatives: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    odd: bool
    first_derivative: Callable[[np.ndarray, np.ndarray], np.ndarray]
    # g'(a) written over the array holding a (which is then lost): the back-propagation hot
    # path of HMC and chaining, where a fresh temporary per leapfrog step is measurable
    first_derivative_overwrite: Callable[[np.ndarray, np.ndarray], np.ndarray]


def _erf_value(a):
    from scipy.special import erf

    return erf(a / SQRT2)


def _erf_derivatives(a, g):
    d1 = SQRT2_OVER_PI * np.exp(-0.5 * a * a)
    return d1, -a * d1


def _tanh_derivatives(a, g):
    d1 = 1.0 - g * g
    return d1, -2.0 * g * d1


def _erf_first_derivative_overwrite(a, g):
    np.multiply(a, a, out=a)
    a *= -0.5
    np.exp(a, out=a)
    a *= SQRT2_OVER_PI
    return a


def _tanh_first_derivative_overwrite(a, g):
    np.multiply(g, g, out=a)
    np.subtract(1.0, a, out=a)
    return a


def _linear_first_derivative_overwrite(a, g):
    a.fill(1.0)
    return a


def _linear_derivatives(a, g):
    return np.ones_like(a), np.zeros_like(a)


ACTIVATIONS: dict[str, Activation] = {
    "erf": Activation(
        "erf",
        _erf_value,
        _erf_derivatives,
        True,
        lambda a, g: SQRT2_OVER_PI * np.exp(-0.5 * a * a),
        _erf_first_derivative_overwrite,
    ),
    "tanh": Activation(
        "tanh",
        np.tanh,
        _tanh_derivatives,
        True,
        lambda a, g: 1.0 - g * g,
        _tanh_first_derivative_overwrite,
    ),
    "linear": Activation(
        "linear",
        lambda a: a.copy(),
        _linear_derivatives,
        True,
        lambda a, g: np.ones_like(a),
        _linear_first_derivative_overwrite,
    ),
}


def get_activation(name: str) -> Activation:
    try:
        return ACTIVATIONS[name]
    except KeyError:
        valid = ", ".join(ACTIVATIONS)
        raise ValueError(f"unknown activation {name!r}; valid: {valid}") from None
