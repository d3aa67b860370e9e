"""Every configuration of n binary units, the basis of exact enumeration (thesis §2.5, §4.5).

Sigmoid belief networks use {0, 1} units and Boltzmann machines ±1 units; both compute
exact marginals, correlations and ln P(V) by summing over all 2**n states of the free units,
which is practical up to n of about 20.
"""

from __future__ import annotations

import numpy as np

MAX_ENUMERATED_UNITS = 24


def all_states(n: int, values: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """The (2**n, n) array of all states; row k is the binary expansion of k, unit 0 first.

    ``values`` maps bit 0 and bit 1 to unit values: (0, 1) for belief networks, (-1, 1)
    for Boltzmann machines.
    """
    if not 0 <= n <= MAX_ENUMERATED_UNITS:
        raise ValueError(f"cannot enumerate {n} units (0..{MAX_ENUMERATED_UNITS})")
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    low, high = values
    return np.where(bits == 1, high, low).astype(float)
