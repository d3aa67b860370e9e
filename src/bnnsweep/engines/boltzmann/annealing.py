"""Deterministic annealing of a variational state (thesis §4.4.1), for any family.

``sweeps_per_temperature`` coordinate sweeps at each temperature but the last, then sweeps
at the last until every batch member's bound changes by at most ``tol`` relative (the
thesis' 0.01 %) or ``max_sweeps`` is reached. ``sweep(state, T)`` and ``bound(state, T)``
are the family's own (mean field, mixtures).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def anneal(
    sweep: Callable,
    bound: Callable,
    state,
    temperatures: Sequence[float],
    sweeps_per_temperature: int,
    max_sweeps: int,
    tol: float,
):
    """(state, bound at the last temperature, sweeps made there)."""
    temperatures = [float(t) for t in temperatures]
    for t in temperatures[:-1]:
        for _ in range(sweeps_per_temperature):
            state = sweep(state, t)
    t = temperatures[-1]
    value = bound(state, t)
    sweeps = 0
    while sweeps < max_sweeps:
        state = sweep(state, t)
        sweeps += 1
        new = bound(state, t)
        done = np.all(np.abs(new - value) <= tol * np.maximum(np.abs(new), 1e-12))
        value = new
        if done:
            break
    return state, value, sweeps
