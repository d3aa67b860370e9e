"""Variational Bayesian ICA with mixture-of-Gaussian sources and ARD on the mixing matrix
(thesis §6.5, appendix D): q(x_n) as a tilted prior (``source_posterior``), the coordinate
updates (``updates``), the lower bound for any parameter values (``bound``), and the fit
with a monotone-bound check and bound-driven source removal (``fit``)."""

from .bound import bound_terms, expected_log_likelihood, lower_bound
from .fit import BoundDecreased, VBICAResult, fit_vb_ica, initial_state, prune_source
from .source_posterior import CombinationTables, SourceMoments, combination_tables, source_posterior
from .state import Hyper, VBICAState, with_source_tilt
from .updates import (
    expected_squared_errors,
    optimal_source_tilt,
    update_alpha,
    update_beta,
    update_mean,
    update_mixing,
    update_sources,
)

__all__ = [
    "BoundDecreased",
    "CombinationTables",
    "Hyper",
    "SourceMoments",
    "VBICAResult",
    "VBICAState",
    "bound_terms",
    "combination_tables",
    "expected_log_likelihood",
    "expected_squared_errors",
    "fit_vb_ica",
    "initial_state",
    "lower_bound",
    "optimal_source_tilt",
    "prune_source",
    "source_posterior",
    "update_alpha",
    "update_beta",
    "update_mean",
    "update_mixing",
    "update_sources",
    "with_source_tilt",
]
