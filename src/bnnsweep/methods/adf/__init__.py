"""Assumed density filtering for ReLU networks: PBP and EBP (paper 004; HL&A 2015).

Modules: ``relu_moments`` (eq. 8, stable tails), ``network`` (forward moments eq. 7 and the
reverse pass), ``likelihoods`` (ln Z and gradients, eq. 12-25), ``updates`` (eq. 6 and the
EP prior refinement), ``settings``, ``fit`` (the batched filter, ``fit`` and ``fit_many``).
"""

from ...engines.adf.likelihoods import TASKS
from . import point_estimate
from .fit import fit, fit_many
from .settings import ADFSettings, EBPSettings, PBPSettings


def accepted_tasks(settings: ADFSettings) -> tuple[str, ...]:
    """Dataset tasks the chosen likelihood can model (the config check uses this)."""
    return TASKS[settings.likelihood]


__all__ = [
    "ADFSettings",
    "EBPSettings",
    "PBPSettings",
    "accepted_tasks",
    "fit",
    "fit_many",
    "point_estimate",
]
