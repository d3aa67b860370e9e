"""Variational inference and learning for Boltzmann machines with ±1 units (thesis ch. 4).

- ``mean_field``: the factorised bound 4.13-4.14 and the annealed, damped updates 4.10-4.11;
- ``mixture``: mixtures of mean-field distributions with smoothing R and multipliers lambda
  (4.16-4.24 and the fixed points 2.33-2.37 for ±1 units);
- ``phases``: one phase (clamped or joint) of a machine by either family;
- ``objective``: F = L+ - L- (4.12), its gradient (4.15, 4.25), Galland's error (4.27);
- ``learning``: gradient ascent on F with the joint started zero, conditional or previous;
- ``ensemble``: accuracy of the joint approximation over random machines (§4.5.1).

The model and its exact enumeration are in ``bnnsweep.models.boltzmann``.
"""

from .ensemble import JointAccuracy, joint_accuracy
from .learning import JOINT_INITS, LearningHistory, fit_boltzmann, fit_boltzmann_exact
from .mean_field import (
    MeanFieldResult,
    geometric_temperatures,
    mean_field_anneal,
    mean_field_bound,
    mean_field_sweep,
)
from .mixture import (
    MixtureResult,
    MixtureState,
    init_mixture,
    mixture_anneal,
    mixture_bound,
    mixture_correlations,
    mixture_means,
    mixture_sweep,
    mutual_information_bound,
    update_lambda,
    update_means,
    update_mixing,
    update_smoothing,
)
from .objective import (
    approximate_log_likelihood,
    inconsistent_joint,
    output_cross_entropy,
    variational_gradient,
)
from .phases import Q_FAMILIES, PhaseResult, initial_state, phase_moments, run_phase

__all__ = [
    "JOINT_INITS",
    "JointAccuracy",
    "Q_FAMILIES",
    "LearningHistory",
    "MeanFieldResult",
    "MixtureResult",
    "MixtureState",
    "PhaseResult",
    "approximate_log_likelihood",
    "fit_boltzmann",
    "fit_boltzmann_exact",
    "geometric_temperatures",
    "inconsistent_joint",
    "init_mixture",
    "joint_accuracy",
    "initial_state",
    "mean_field_anneal",
    "mean_field_bound",
    "mean_field_sweep",
    "mixture_anneal",
    "mixture_bound",
    "mixture_correlations",
    "mixture_means",
    "mixture_sweep",
    "mutual_information_bound",
    "output_cross_entropy",
    "phase_moments",
    "run_phase",
    "update_lambda",
    "update_means",
    "update_mixing",
    "update_smoothing",
    "variational_gradient",
]
