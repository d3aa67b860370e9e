"""Learning in networks of linear threshold units (thesis ch. 3): the zero-temperature limit
of a ±1 sigmoid belief network (``models.threshold_network``).

- ``inference``: the annealed E-step, per-pattern hidden states (§3.3-3.4, §3.7);
- ``svm_step``: the M-step, one soft-margin linear SVM per unit, weight normalisation (§3.5.2);
- ``learning``: the alternation with loosened KKT tolerances and the best network kept (§3.6-3.8).
"""

from .inference import (
    UPDATE_RULES,
    EStepResult,
    annealing_temperatures,
    infer_hidden,
    printed_log_odds,
    scaled_log_odds,
)
from .learning import LearningResult, LearningSchedule, learn, random_network
from .svm_step import MStepResult, fit_unit, fit_weights, normalise_weights

__all__ = [
    "UPDATE_RULES",
    "EStepResult",
    "LearningResult",
    "LearningSchedule",
    "MStepResult",
    "annealing_temperatures",
    "fit_unit",
    "fit_weights",
    "infer_hidden",
    "learn",
    "normalise_weights",
    "printed_log_odds",
    "random_network",
    "scaled_log_odds",
]
