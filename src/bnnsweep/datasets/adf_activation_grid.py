"""The input variances of paper 004 fig. 1 ("expected activations of a neuron with sign (left)
and rectified linear (right) non linearities. As the variance of the input decreases the
expected responses tend towards the activations they approximate"). The paper prints no
variances: these span two decades down to 0.01. Task ``analytic``: one row of variances
tau in ``x_train``, nothing to fit (method ``adf_activations``)."""

from __future__ import annotations

import numpy as np

from .generated import unstandardised_split
from .registry import register

INPUT_VARIANCES = [4.0, 1.0, 0.25, 0.01]


@register(
    "adf_activation_grid",
    metadata={
        "source": "input variances chosen here (paper 004 fig. 1 prints none)",
        "licence": "none needed: numbers chosen here",
        "preprocessing": "none; one row of input variances (see datasets/adf_activation_grid.py)",
        "task": "analytic",
        "error_measure": "none",
        "paper": "Ghosh, Delle Fave & Yedidia, ADF for Bayesian neural networks, fig. 1 (paper 004)",
    },
    split_names=["default"],
)
def adf_activation_grid() -> dict:
    row = np.array([INPUT_VARIANCES])
    empty = np.zeros((1, 0))
    return {"default": unstandardised_split("default", row, empty, row, empty)}
