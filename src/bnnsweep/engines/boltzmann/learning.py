"""Learning a Boltzmann machine by gradient ascent on F = L+ - L- (thesis §4.4, §4.5.2).

Each iteration runs the clamped phase (units ``plus_clamped`` set to the data) and the joint
phase (units ``minus_clamped`` set to their data, none for density learning), forms F
(4.12) and its gradient (4.15 / 4.25), and takes one step ``learning_rate`` x the gradient
summed over patterns (the thesis' digits rate 0.1/N is a rate on this sum). The joint phase
starts from

- ``zero``: means 0 (Galland's setting);
- ``conditional``: the clamped phase's result of the same pattern, hidden units at <s>+ and
  clamped-then-free units (the outputs) at their targets (§4.5.2, fig. 4.4b); needs a joint
  that clamps something (one joint per pattern);
- ``previous``: the joint phase's state at the previous iteration (warm start, figs. 4.5, 4.8).

The clamped phase (``plus_init``) starts from zero, from its own previous state, or from the
joint: its free (hidden) units at their expectations under this iteration's joint,
<s_i>- = sum_m Q(m) mu_mi (the digits experiment, §4.5.2: "the conditional approximation
parameters <s_H>+ were then initialised with the expected states under the joint"); the
joint phase then runs first.

F > 0 marks an inconsistent joint (fig. 4.1) and is counted per iteration.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ...models.boltzmann import exact_log_likelihood, free_and_clamped
from .objective import (
    approximate_log_likelihood,
    inconsistent_joint,
    output_cross_entropy,
    variational_gradient,
)
from .phases import PhaseResult, initial_state, phase_machine, phase_moments, run_phase

JOINT_INITS = ("zero", "conditional", "previous")
PLUS_INITS = ("zero", "previous", "joint")


class LearningHistory(NamedTuple):
    """Per-iteration records (leading axis: iteration, then K machines)."""

    weights: np.ndarray  # (K, n, n) final
    biases: np.ndarray  # (K, n) final
    objective: np.ndarray  # (I, K) F summed over patterns, before the step
    inconsistent: np.ndarray  # (I, K) number of patterns with F > 0
    exact_log_likelihood: np.ndarray  # (I, K), nan unless exact=True
    output_error: np.ndarray  # (I, K) eq. 4.27 on the output units (nan without outputs)
    max_output_gap: np.ndarray  # (I, K) max |<s_O>- - target| (nan without outputs)
    converged_at: np.ndarray  # (K,) first iteration with gap < stop_within, -1 if never
    weight_path: np.ndarray  # (I + 1, K, n, n) if keep_path else empty
    bias_path: np.ndarray  # (I + 1, K, n) if keep_path else empty
    seconds: float
    # (I, K, P-, M, n) the joint's component means at each iteration (fig. 4.6's mean-field
    # parameters) if keep_path, else empty; P- = 1 when the joint clamps nothing
    joint_means_path: np.ndarray = np.zeros((0, 0, 0, 0, 0))
    # (I, K, P-, M) the joint's ln Q(m) at each iteration if keep_path, else empty
    joint_log_mixing_path: np.ndarray = np.zeros((0, 0, 0, 0))


def _columns(plus_clamped, units) -> list[int]:
    return [int(np.nonzero(plus_clamped == u)[0][0]) for u in units]


def fit_boltzmann(
    weights,
    biases,
    mask,
    data,
    plus_clamped,
    minus_clamped=None,
    *,
    q_plus: str = "mf",
    q_minus: str = "mf",
    components: int = 1,
    joint_init: str = "previous",
    plus_init: str = "zero",
    temperatures=(1.0,),
    joint_temperatures=None,
    damping: float = 0.0,
    sweeps_per_temperature: int = 1,
    max_sweeps: int = 20,
    tol: float = 1e-4,
    learning_rate: float = 0.1,
    iterations: int = 100,
    rng: np.random.Generator | None = None,
    smoothing_spread: float = 1.0,
    exact: bool = False,
    stop_within: float | None = None,
    keep_path: bool = False,
) -> LearningHistory:
    """Gradient ascent on F for K machines at once (weights (K, n, n), biases (K, n)).

    ``plus_init`` starts the clamped phase from zero at every iteration, from its previous
    state or from the joint's expectations (module docstring). ``data`` (P,
    len(plus_clamped)) are the values of the clamped units; ``minus_clamped`` (a subset of
    ``plus_clamped``: the inputs of a supervised task) are clamped in the joint too;
    the others in ``plus_clamped`` are outputs, scored by 4.27 and by ``stop_within`` (stop
    when every output mean is within it of its target, Galland's 0.2). ``components`` is M
    of the joint's mixture (``q_minus="mixture"``); the clamped phase uses one component
    unless ``q_plus="mixture"``. ``temperatures`` is the annealing schedule of the clamped
    phase and, unless ``joint_temperatures`` is given, of the joint (annealing from a high T
    washes out a ``conditional`` or ``previous`` start, so those usually take (1.0,)); both end
    at T = 1. ``exact=True`` also records the exact log-likelihood.
    """
    if joint_init not in JOINT_INITS:
        raise ValueError(f"joint_init must be one of {JOINT_INITS}, got {joint_init!r}")
    if plus_init not in PLUS_INITS:
        raise ValueError(f"plus_init must be one of {PLUS_INITS}, got {plus_init!r}")
    start = time.process_time()
    w = np.array(weights, float)
    b = np.array(biases, float)
    mask = np.asarray(mask, bool)
    data = np.asarray(data, float)
    plus_clamped = np.asarray(plus_clamped, int)
    minus_clamped = np.zeros(0, int) if minus_clamped is None else np.asarray(minus_clamped, int)
    k, n = b.shape
    p = data.shape[0]
    minus_values = data[:, _columns(plus_clamped, minus_clamped)] if minus_clamped.size else None
    outputs = np.setdiff1d(plus_clamped, minus_clamped)  # free in the joint
    targets = data[:, _columns(plus_clamped, outputs)]
    if joint_init == "conditional" and minus_clamped.size == 0:
        raise ValueError("joint_init='conditional' needs a joint clamped per pattern")
    if joint_init == "conditional" and plus_init == "joint":
        raise ValueError("joint_init 'conditional' and plus_init 'joint' each need the other first")
    m_plus = components if q_plus == "mixture" else 1
    m_minus = components if q_minus == "mixture" else 1
    free_minus, _ = free_and_clamped(n, minus_clamped)
    plus_free, _ = free_and_clamped(n, plus_clamped)
    p_minus = p if minus_clamped.size else 1

    plus_machine = phase_machine(w, b, plus_clamped, data)
    minus_machine = phase_machine(w, b, minus_clamped, minus_values)
    plus_state = initial_state(plus_machine, m_plus, rng=rng, smoothing_spread=smoothing_spread)
    minus_state = initial_state(minus_machine, m_minus, rng=rng, smoothing_spread=smoothing_spread)

    rec = {key: np.full((iterations, k), np.nan) for key in ("f", "inc", "ll", "err", "gap")}
    converged = np.full(k, -1)
    w_path, b_path, joint_path, mixing_path = [w.copy()], [b.copy()], [], []
    settings = dict(
        temperatures=temperatures,
        damping=damping,
        sweeps_per_temperature=sweeps_per_temperature,
        max_sweeps=max_sweeps,
        tol=tol,
    )
    done_at = iterations

    def clamped_phase(joint: PhaseResult | None) -> PhaseResult:
        state = plus_state
        if plus_init == "zero":
            state = initial_state(plus_machine, m_plus, rng=rng, smoothing_spread=smoothing_spread)
        elif plus_init == "joint":  # the free units' joint expectations <s_i>-, every pattern
            joint_means, _ = phase_moments(joint)  # (K, P-, n)
            start = np.broadcast_to(joint_means[..., plus_free], (k, p, plus_free.size))
            state = initial_state(
                plus_machine, m_plus, start_means=start, rng=rng, smoothing_spread=smoothing_spread
            )
        return run_phase(w, b, plus_clamped, data, state, q_plus, **settings)

    def joint_phase(plus: PhaseResult | None) -> PhaseResult:
        state = minus_state
        if joint_init == "zero":
            state = initial_state(
                minus_machine, m_minus, rng=rng, smoothing_spread=smoothing_spread
            )
        elif joint_init == "conditional":
            plus_means, _ = phase_moments(plus)  # (K, P, n) with targets on the outputs
            state = initial_state(
                minus_machine,
                m_minus,
                start_means=plus_means[..., free_minus],
                rng=rng,
                smoothing_spread=smoothing_spread,
            )
        minus_settings = dict(settings)
        if joint_temperatures is not None:
            minus_settings["temperatures"] = joint_temperatures
        return run_phase(w, b, minus_clamped, minus_values, state, q_minus, **minus_settings)

    for it in range(iterations):
        if plus_init == "joint":  # the joint first: the clamped phase starts from it
            minus = joint_phase(None)
            plus = clamped_phase(minus)
        else:
            plus = clamped_phase(None)
            minus = joint_phase(plus)
        plus_state, minus_state = plus.free_state, minus.free_state
        if keep_path:
            joint_path.append(minus.means.copy())
            mixing_path.append(minus.log_mixing.copy())
        per_pattern = approximate_log_likelihood(plus, minus)
        rec["f"][it] = per_pattern.sum(1)
        rec["inc"][it] = inconsistent_joint(per_pattern).sum(1)
        if outputs.size:
            out_means = phase_moments(minus)[0][..., outputs]
            if p_minus == 1:
                out_means = np.broadcast_to(out_means, (k, p, outputs.size))
            rec["err"][it] = output_cross_entropy(out_means, targets)
            gap = np.abs(out_means - targets).max(axis=(-1, -2))
            rec["gap"][it] = gap
            if stop_within is not None:
                newly = (gap < stop_within) & (converged < 0)
                converged[newly] = it
        if exact:
            ex = exact_log_likelihood(w, b, plus_clamped, data, minus_clamped, mask)
            rec["ll"][it] = ex.log_likelihood
        if stop_within is not None and np.all(converged >= 0):
            done_at = it + 1
            break
        grad_w, grad_b = variational_gradient(plus, minus, mask)
        active = (converged < 0) if stop_within is not None else np.ones(k, bool)
        w = w + learning_rate * grad_w * active[:, None, None]
        b = b + learning_rate * grad_b * active[:, None]
        plus_machine = phase_machine(w, b, plus_clamped, data)
        minus_machine = phase_machine(w, b, minus_clamped, minus_values)
        if keep_path:
            w_path.append(w.copy())
            b_path.append(b.copy())
    return LearningHistory(
        w,
        b,
        rec["f"][:done_at],
        rec["inc"][:done_at],
        rec["ll"][:done_at],
        rec["err"][:done_at],
        rec["gap"][:done_at],
        converged,
        np.array(w_path) if keep_path else np.zeros((0, k, n, n)),
        np.array(b_path) if keep_path else np.zeros((0, k, n)),
        time.process_time() - start,
        np.array(joint_path) if keep_path else np.zeros((0, k, p_minus, m_minus, n)),
        np.array(mixing_path) if keep_path else np.zeros((0, k, p_minus, m_minus)),
    )


def fit_boltzmann_exact(
    weights,
    biases,
    mask,
    data,
    plus_clamped,
    minus_clamped=None,
    *,
    learning_rate: float = 0.1,
    iterations: int = 100,
    keep_path: bool = False,
) -> LearningHistory:
    """The reference: gradient ascent on the exact log-likelihood (4.5-4.6, by enumeration),
    with the same step rule as ``fit_boltzmann``; ``objective`` holds the exact value."""
    start = time.process_time()
    w = np.array(weights, float)
    b = np.array(biases, float)
    mask = np.asarray(mask, bool)
    k, n = b.shape
    ll = np.full((iterations, k), np.nan)
    w_path, b_path = [w.copy()], [b.copy()]
    for it in range(iterations):
        ex = exact_log_likelihood(w, b, plus_clamped, data, minus_clamped, mask)
        ll[it] = ex.log_likelihood
        w = w + learning_rate * ex.weight_gradient
        b = b + learning_rate * ex.bias_gradient
        if keep_path:
            w_path.append(w.copy())
            b_path.append(b.copy())
    nan = np.full((iterations, k), np.nan)
    return LearningHistory(
        w,
        b,
        ll,
        np.zeros((iterations, k)),
        ll,
        nan,
        nan,
        np.full(k, -1),
        np.array(w_path) if keep_path else np.zeros((0, k, n, n)),
        np.array(b_path) if keep_path else np.zeros((0, k, n)),
        time.process_time() - start,
    )
