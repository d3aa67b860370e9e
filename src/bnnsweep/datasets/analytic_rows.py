"""Problems of task ``analytic`` whose numbers a method reads from one row of ``x_train``
(nothing to fit; ``y_train`` and ``y_test`` are empty), one split ``default`` each:

``adf_activation_grid`` (paper 004 fig. 1: "expected activations of a neuron with sign (left)
and rectified linear (right) non linearities. As the variance of the input decreases the
expected responses tend towards the activations they approximate")
    the input variances tau of method ``adf_activations``: the paper prints none, these span
    two decades down to 0.01.
``g2_range`` (thesis appendix C, fig. C.1: g(x)^2 ~ 1 - exp(-c x^2 / 2), c ~ 1.24; paper 000
eq. B.18)
    the half-width of the range the approximation is judged on and the printed c, for method
    ``g2_approximation``. The thesis prints no range: 5 covers every x where g(x)^2 differs
    from 1 by more than 1e-6.
"""

from __future__ import annotations

import numpy as np

from .generated import unstandardised_split
from .registry import register

INPUT_VARIANCES = [4.0, 1.0, 0.25, 0.01]
HALF_WIDTH, PRINTED_C = 5.0, 1.24
_LICENCE = "none needed: numbers chosen here or from the text"


def _one_row(values) -> dict:
    row = np.array([values], dtype=float)
    empty = np.zeros((1, 0))
    return {"default": unstandardised_split("default", row, empty, row, empty)}


def _metadata(source: str, preprocessing: str, paper: str) -> dict:
    return {"source": source, "licence": _LICENCE, "preprocessing": preprocessing,
            "task": "analytic", "error_measure": "none", "paper": paper}  # fmt: skip


@register(
    "adf_activation_grid",
    metadata=_metadata(
        "input variances chosen here (paper 004 fig. 1 prints none)",
        "none; one row of input variances (see datasets/analytic_rows.py)",
        "Ghosh, Delle Fave & Yedidia, ADF for Bayesian neural networks, fig. 1 (paper 004)",
    ),
    split_names=["default"],
)
def adf_activation_grid() -> dict:
    return _one_row(INPUT_VARIANCES)


@register(
    "g2_range",
    metadata=_metadata(
        "thesis appendix C (fig. C.1): c = 1.24 as printed; the range chosen here",
        "none; one row: half-width of the range, printed c",
        "Lawrence, PhD thesis, appendix C, fig. C.1 (paper 003)",
    ),
    split_names=["default"],
)
def g2_range() -> dict:
    return _one_row([HALF_WIDTH, PRINTED_C])
