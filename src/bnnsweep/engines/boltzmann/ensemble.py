"""Inference accuracy over an ensemble of random machines (thesis §4.5.1, fig. 4.2).

The joint of each machine (nothing clamped) is approximated by mean field (M = 1) or a
mixture of M mean-field components, annealed through a temperature schedule, and compared
with enumeration: the pair differences 4.26, sum_m Q(m) <s_i>_m <s_j>_m - <s_i s_j>_F, their
sum of squares per machine, and the gap ln Z - L-.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ...models.boltzmann import exact_phase
from .phases import initial_state, phase_machine, phase_moments, run_phase


class JointAccuracy(NamedTuple):
    pair_errors: np.ndarray  # (K, n(n-1)/2) eq. 4.26 over i < j
    pair_sq_error: np.ndarray  # (K,) sum of squares of pair_errors
    mean_errors: np.ndarray  # (K, n) approximate minus exact <s_i>
    bound: np.ndarray  # (K,) L- <= ln Z
    log_partition: np.ndarray  # (K,) exact ln Z
    sweeps: int
    seconds: float  # CPU seconds of the variational part


def joint_accuracy(
    weights,
    biases,
    components: int = 1,
    temperatures=(1.0,),
    rng: np.random.Generator | None = None,
    damping: float = 0.0,
    sweeps_per_temperature: int = 1,
    max_sweeps: int = 200,
    tol: float = 1e-4,
    smoothing_spread: float = 1.0,
    q: str | None = None,
) -> JointAccuracy:
    """Approximate the joint of K machines (weights (K, n, n), biases (K, n)) with M =
    ``components`` and score it against enumeration (4.26). ``q`` is the family
    (``phases.Q_FAMILIES``); by default mean field for M = 1 and a mixture otherwise
    (``"mixture"`` with M = 1 runs the mixture updates on one component)."""
    start = time.process_time()
    machine = phase_machine(weights, biases, None, None)
    state = initial_state(machine, components, rng=rng, smoothing_spread=smoothing_spread)
    if q is None:
        q = "mf" if components == 1 else "mixture"
    res = run_phase(
        weights,
        biases,
        None,
        None,
        state,
        q,
        temperatures=temperatures,
        damping=damping,
        sweeps_per_temperature=sweeps_per_temperature,
        max_sweeps=max_sweeps,
        tol=tol,
    )
    means, corr = phase_moments(res)
    seconds = time.process_time() - start
    exact = exact_phase(weights, biases)
    n = np.shape(weights)[-1]
    iu = np.triu_indices(n, 1)
    errors = corr[:, 0][:, iu[0], iu[1]] - exact.correlations[:, 0][:, iu[0], iu[1]]
    return JointAccuracy(
        errors,
        (errors**2).sum(-1),
        means[:, 0] - exact.means[:, 0],
        res.bound[:, 0],
        exact.log_partition[:, 0],
        res.sweeps,
        seconds,
    )
