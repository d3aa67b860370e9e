"""Variational inference in one phase of a Boltzmann machine (thesis §4.4): the clamped phase
Q+(H | V) (4.7) or the joint phase Q-(H, V) (4.8), by mean field or by a mixture.

A phase clamps a set of units to the values of each pattern and approximates the
distribution of the rest. ``run_phase`` reduces the machine to its free units
(``models.boltzmann.clamp_machine``), runs annealed coordinate ascent, and returns the bound
on ln sum_free exp(-E/T) (the clamped part -E_c(v)/T added back) together with full-size
component means, so that 4.15/4.25 can be formed over all n units. Mean field is the
one-component mixture with flat smoothing, but is run by its own cheaper update.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...models.boltzmann import ClampedMachine, clamp_machine, expand_means
from .mean_field import MEAN_LIMIT, mean_field_anneal
from .mixture import MixtureState, init_mixture, mixture_anneal

Q_FAMILIES = ("mf", "mixture")


class PhaseResult(NamedTuple):
    """One phase for K machines and P patterns (P = 1 when nothing is clamped)."""

    bound: np.ndarray  # (K, P) lower bound on the phase's ln partition function
    means: np.ndarray  # (K, P, M, n) component means, clamped units at their values
    log_mixing: np.ndarray  # (K, P, M) ln Q(m) (zero for mean field, M = 1)
    free_state: MixtureState  # the free units' state, for warm starts
    sweeps: int


def phase_machine(weights, biases, clamped, values) -> ClampedMachine:
    """The free-unit machine of a phase; ``clamped`` empty gives the joint phase (P = 1)."""
    if clamped is None or np.size(clamped) == 0:
        return clamp_machine(weights, biases, np.zeros(0, int), np.zeros((1, 0)))
    return clamp_machine(weights, biases, clamped, values)


def initial_state(
    machine: ClampedMachine,
    components: int,
    start_means: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
    smoothing_spread: float = 1.0,
    mean_spread: float = 0.0,
) -> MixtureState:
    """A starting state over the free units: means from ``start_means`` ((K, P, f) or
    (K, P, M, f); zero when None) plus U(-mean_spread, mean_spread) noise, random smoothing
    when ``rng`` is given and components > 1."""
    k, p = machine.biases.shape[:2]
    f = machine.free.size
    shape = (k, p, components, f)
    if start_means is None:
        means = np.zeros(shape)
    else:
        start_means = np.asarray(start_means, float)
        if start_means.ndim == 3:
            start_means = start_means[:, :, None, :]
        means = np.array(np.broadcast_to(start_means, shape))
    if rng is not None and mean_spread > 0:
        means = means + rng.uniform(-mean_spread, mean_spread, size=shape)
    means = np.clip(means, -MEAN_LIMIT, MEAN_LIMIT)
    return init_mixture(means, rng if components > 1 else None, smoothing_spread)


def run_phase(
    weights,
    biases,
    clamped,
    values,
    state: MixtureState,
    q: str = "mf",
    temperatures=(1.0,),
    damping: float = 0.0,
    sweeps_per_temperature: int = 1,
    max_sweeps: int = 100,
    tol: float = 1e-4,
) -> PhaseResult:
    """Optimise the phase's Q from ``state`` (see ``initial_state``) and return its bound at
    the last temperature (eq. 4.13 for mean field, 4.17 with 4.21 for a mixture)."""
    if q not in Q_FAMILIES:
        raise ValueError(f"q must be one of {Q_FAMILIES}, got {q!r}")
    machine = phase_machine(weights, biases, clamped, values)
    n = np.shape(weights)[-1]
    t_last = float(list(temperatures)[-1])
    if machine.free.size == 0:
        k, p = machine.constant.shape
        bound = machine.constant / t_last
        means = expand_means(np.zeros((k, p, 1, 0)), machine, n)
        return PhaseResult(bound, means, np.zeros((k, p, 1)), state, 0)
    if q == "mf":
        if state.means.shape[-2] != 1:
            raise ValueError("mean field takes a one-component state")
        res = mean_field_anneal(
            machine.weights,
            machine.biases,
            state.means[..., 0, :],
            temperatures,
            damping,
            sweeps_per_temperature,
            max_sweeps,
            tol,
        )
        new_state = state._replace(means=res.means[..., None, :])
        bound, sweeps = res.bound, res.sweeps
    else:
        res = mixture_anneal(
            machine.weights,
            machine.biases,
            state,
            temperatures,
            damping,
            sweeps_per_temperature,
            max_sweeps,
            tol,
        )
        new_state, bound, sweeps = res.state, res.bound, res.sweeps
    means = expand_means(new_state.means, machine, n)
    return PhaseResult(
        machine.constant / t_last + bound, means, new_state.log_mixing, new_state, sweeps
    )


def phase_moments(result: PhaseResult) -> tuple[np.ndarray, np.ndarray]:
    """The phase's approximate <s_i> (K, P, n) and <s_i s_j> (K, P, n, n):
    sum_m Q(m) mu_mi and sum_m Q(m) mu_mi mu_mj (1 on the diagonal), as in 4.25-4.26."""
    mix = np.exp(result.log_mixing)
    mu = result.means
    means = np.einsum("kpm,kpmi->kpi", mix, mu)
    corr = np.einsum("kpm,kpmi,kpmj->kpij", mix, mu, mu)
    n = mu.shape[-1]
    corr[..., np.arange(n), np.arange(n)] = 1.0
    return means, corr
