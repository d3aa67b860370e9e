"""LTU learning (thesis §3.6-3.8): alternate the annealed E-step (``inference``) and the SVM
M-step (``svm_step``) ``outer`` times, keeping the network of least training error.

Outer iteration k (1-based) solves the SVMs to KKT tolerance 10^-(k-1) for k <= ``loosen``
(§3.7: 1 in the first iteration, i.e. no margin maximisation to speak of) and ``kkt_tol``
afterwards. Each E-step starts from the current network's forward pass (§3.7). Learning stops
early when the network classifies every training pattern (§3.7 'Convergence'); otherwise the
network of least training error among the initial one and every M-step's is returned
(the first of equals).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...models.threshold_network import ThresholdNetwork, forward, training_errors
from .inference import infer_hidden
from .svm_step import fit_weights, normalise_weights


@dataclass(frozen=True)
class LearningSchedule:
    """Settings of the alternation (defaults: the thesis's §3.8)."""

    penalty: float = 1.0
    outer: int = 7
    kkt_tol: float = 1e-4
    loosen: int = 4
    svm_max_iter: int = 100_000
    temperatures: np.ndarray | tuple = ()
    zero_passes: int = 70
    rule: str = "exact"  # E-step T = 0 update: exact limit or the thesis's printed 3.23

    def kkt_tolerance(self, k: int) -> float:
        """The SVM tolerance of outer iteration k (1-based)."""
        return 10.0 ** (-(k - 1)) if k <= self.loosen else self.kkt_tol


@dataclass(frozen=True)
class LearningResult:
    network: ThresholdNetwork  # the network of least training error
    train_errors: np.ndarray  # (outer + 1,) after init and each M-step (-1: not run)
    best_iteration: int  # 0: the initial network
    zero_passes: np.ndarray  # (outer,) T = 0 passes of each E-step (-1: not run)
    unsettled: int  # E-steps whose T = 0 passes did not settle
    smo_iterations: np.ndarray  # (outer,) largest SMO iteration count of each M-step
    smo_total: int  # SMO iterations of every SVM of every M-step
    smo_capped: int  # SVMs that stopped at svm_max_iter


def random_network(
    n_inputs: int, n_hidden: int, n_outputs: int, rng: np.random.Generator
) -> ThresholdNetwork:
    """Weights and biases N(0, 1) (inputs scaled to about [-1, 1]), weight-normalised: each
    initialisation (seed) places the hidden hyperplanes differently."""
    return normalise_weights(
        ThresholdNetwork(
            w_in=rng.normal(size=(n_hidden, n_inputs)),
            b_in=rng.normal(size=n_hidden),
            w_out=rng.normal(size=(n_outputs, n_hidden)),
            b_out=rng.normal(size=n_outputs),
        )
    )


def learn(
    x: np.ndarray,
    t: np.ndarray,
    start: ThresholdNetwork,
    schedule: LearningSchedule,
    rng: np.random.Generator,
) -> LearningResult:
    """Learn from inputs ``x`` (N, I) and ±1 targets ``t`` (N, O) from network ``start``."""
    net = start
    errors = np.full(schedule.outer + 1, -1)
    passes = np.full(schedule.outer, -1)
    smo = np.full(schedule.outer, -1)
    errors[0] = training_errors(net, x, t)
    best, best_error, best_k = net, errors[0], 0
    unsettled = capped = total = 0
    for k in range(1, schedule.outer + 1):
        if best_error == 0:
            break
        h_start, _ = forward(net, x)
        estep = infer_hidden(
            net,
            x,
            t,
            h_start,
            rng,
            np.asarray(schedule.temperatures),
            schedule.zero_passes,
            schedule.rule,
        )
        passes[k - 1] = estep.zero_passes
        unsettled += not estep.settled
        mstep = fit_weights(
            x, estep.hidden, t, schedule.penalty, schedule.kkt_tolerance(k), schedule.svm_max_iter
        )
        smo[k - 1] = int(np.max(mstep.iterations))
        capped += mstep.capped
        total += int(np.sum(mstep.iterations))
        net = mstep.network
        errors[k] = training_errors(net, x, t)
        if errors[k] < best_error:
            best, best_error, best_k = net, errors[k], k
    return LearningResult(best, errors, best_k, passes, unsettled, smo, total, capped)
