"""The likelihoods of the ADF methods and what they model, without JAX: what a method's
settings are checked against (``methods/adf.py``), so that building a sweep's DAG or plan
does not load the compiled core (paper 004 sec. 4-6)."""

from __future__ import annotations

LIKELIHOODS = ("gaussian", "probit", "softmax", "poisson", "gaussian_rounded")
TASKS = {
    "gaussian": ("regression",),
    "probit": ("binary",),
    "softmax": ("multiclass", "binary"),
    "poisson": ("count",),
    "gaussian_rounded": ("count",),
}
"""``gaussian_rounded``: paper 004 sec. 6's baseline for counts, Gaussian regression (eq. 25)
on the standardised counts whose predictions are rounded to the nearest count."""


def filter_likelihood(likelihood: str) -> str:
    """The likelihood the filter runs: ``gaussian_rounded`` filters as ``gaussian``."""
    return "gaussian" if likelihood == "gaussian_rounded" else likelihood


SOFTMAX_APPROXIMATIONS = ("mc", "bound")
POISSON_APPROXIMATIONS = ("quadrature", "negative_binomial")
"""ln Z of a count (paper 004 eq. 20): Gauss-Hermite quadrature of the Poisson over the
Gaussian log-rate (``poisson_lognormal``), or the paper's negative binomial (eq. 21-22)."""
MEAN_INITS = ("fan_in", "unit")
"""Symmetry-breaking initial weight means: N(0, 1/D) as HL&A 2015's code (on top of the
1/sqrt(D) of eq. 7, so that the means' network shrinks its inputs by 1/sqrt(D) a layer), or
N(0, 1) (the means' network keeps its inputs' scale, as a net initialised for eq. 7's
scaling would)."""


def n_outputs(likelihood: str, n_classes: int, n_targets: int) -> int:
    """Network outputs: one per class for softmax, one for probit and Poisson."""
    if likelihood == "softmax":
        return n_classes
    if likelihood == "gaussian":
        return n_targets
    return 1
