"""Variational inference and learning for Boltzmann machines with ±1 units (thesis ch. 4).

- ``mean_field``: the factorised bound 4.13-4.14 and the annealed, damped updates 4.10-4.11;
- ``mixture``: mixtures of mean-field distributions with smoothing R and multipliers lambda
  (4.16-4.24 and the fixed points 2.33-2.37 for ±1 units);
- ``phases``: one phase (clamped or joint) of a machine by either family;
- ``objective``: F = L+ - L- (4.12), its gradient (4.15, 4.25), Galland's error (4.27);
- ``learning``: gradient ascent on F with the joint started zero, conditional or previous;
- ``ensemble``: accuracy of the joint approximation over random machines (§4.5.1).

The model and its exact enumeration are in ``bnnsweep.models.boltzmann``.

Reconstructions of garbled equations (notes on the thesis) and what the tests found:

- energy 1/2 sum_{i!=j} w_ij s_i s_j + sum_i b_i s_i (4.1-4.2): right; with it the one-unit
  conditional is tanh of the field, 4.10 is the stationary point of 4.13 and d ln Z/dw_ij =
  <s_i s_j> (4.6), all by enumeration / finite differences;
- 4.13-4.14 need the sums and the 1/2: right (bound <= ln Z for any means; stationary at 4.10);
- 4.15, 4.21, 4.25, 4.26 are right as printed (4.15/4.25 are the derivative of F at fixed Q);
- 4.23: the reconstruction is right, E'(k,m) = field/T + 1/2 ln[R(+|m)/R(-|m)]
  - 1/2 sum_m' lambda_m' pi^k(m',m)[R(+|m') - R(-|m')]; it zeroes the bound's derivative,
  the printed form does not;
- 2.34 ("-" on the lambda term), 2.36 (alpha_k = Q(k)), 2.37 (lambda_m = Q(m)/sum_k Q(k)
  pi(m,k)) carried to ±1 units: right, each an exact coordinate maximiser;
- 4.27: right, F_obs = -sum_{i in O} ln Q-(s_i = v_i);
- 1.41-1.42 (not in the notes): the sign is wrong; F - ln P(V) = KL(Q- || P(H,V))
  - KL(Q+ || P(H|V)).
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
