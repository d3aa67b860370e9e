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


def n_outputs(likelihood: str, n_classes: int, n_targets: int) -> int:
    """Network outputs: one per class for softmax, one for probit and Poisson."""
    if likelihood == "softmax":
        return n_classes
    if likelihood == "gaussian":
        return n_targets
    return 1
