"""Variational Bayesian ICA with mixture-of-Gaussian sources and ARD on the mixing matrix
(thesis §6.5, appendix D): q(x_n) as a tilted prior (``source_posterior``), the coordinate
updates (``updates``), the lower bound for any parameter values (``bound``), and the fit
with a monotone-bound check and bound-driven source removal (``fit``).

Equations garbled in the extracted text, and the reading-notes' reconstructions, as checked
by tests/test_vb_ica.py:

- 6.2 (notes: missing "-" and the power P/2): RIGHT. With (beta/2pi)^(P/2)
  exp(-beta/2 ||t - Wx - mu||^2) the bound's source part equals ln p(t | W, mu, beta)
  computed by enumeration with scipy's multivariate normal.
- 6.21 (notes: missing <beta>): RIGHT, and its mu_p is the mean <mu_p>. The update is the
  exact optimum (zero gradient, perturbations lower L) and matches VB PCA (Bishop 1999).
- 6.28-6.29 (notes' reading, with "+" before Tr(<W^T W><x x^T>)): RIGHT; E_n agrees with a
  Monte Carlo average under q, and the beta update is the exact optimum.
- D.4 (notes: misplaced transpose): RIGHT; it reads x_n^T <W>^T (t_n - <mu>). With it q(x)
  is the exact optimum and, for known W, mu, beta, the exact posterior.
- D.13-D.14 as printed: right (ln Z_n and D.15-D.16 against quadrature).
- §6.5.6 "the bound cannot be computed": WRONG, as the notes say. KL(q(x_n) || p(x_n)) has the
  closed form -1/2 Tr(Lam <xx^T>) + h^T <x> - ln Z_n for every q_x of the tilted form, so L
  is computed after every update (not only after q_x's), and after a q_x update its source
  part is sum_n [P/2 (<ln beta> - ln 2 pi) - <beta>/2 (t^T t - 2 t^T <mu> + <mu^T mu>) +
  ln Z_n] (checked against the exact likelihood).
- 6.23's superscript (n) on m_mu is spurious; 6.22, 6.24-6.27 are right as printed, with w_i
  in 6.26 the i-th COLUMN of W (the weights of source i).
"""

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
