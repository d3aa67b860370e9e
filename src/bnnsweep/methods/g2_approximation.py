"""``g2_approximation``: thesis appendix C, fig. C.1 ("the quality of the approximation to
g(x)^2 ... f(x) = 1 - exp(-c x^2 / 2) where c ~ 1.24 ... the error is shown magnified a
hundredfold"), the approximation the variational methods use with ``g2: approx`` (paper 000
eq. B.18; ``models/erf_expectations.py``, ``G2_APPROX_C``).

On x in [-h, h] (h and the printed c from the split's row, dataset ``g2_range``), on
``points`` evenly spaced points: g(x)^2 = erf(x / sqrt 2)^2, f(x) at the printed c and their
difference. Reported (``diag_*``): the largest |f - g^2| at the printed c, and the c that
minimises the largest error (``c_minimax``) and the squared error (``c_least_squares``) on
the grid, by bounded scalar minimisation: how the printed 1.24 comes about.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..method_base import FitResult, check_positive
from . import Method, Work, register
from .adf_activations import analytic_result

C_BRACKET = (0.5, 2.0)
"""The interval searched for the best c."""


@dataclass(frozen=True)
class G2Settings:
    points: int = 2001

    def validate(self) -> None:
        check_positive("points", self.points)


def squared_erf_unit(x: np.ndarray) -> np.ndarray:
    """g(x)^2 with g(x) = erf(x / sqrt 2)."""
    from scipy.special import erf

    return erf(x / math.sqrt(2.0)) ** 2


def approximation(x: np.ndarray, c: float) -> np.ndarray:
    """f(x) = 1 - exp(-c x^2 / 2) (paper 000 eq. B.18)."""
    return 1.0 - np.exp(-0.5 * c * x * x)


def best_c(x: np.ndarray, target: np.ndarray, loss) -> float:
    """The c in ``C_BRACKET`` minimising ``loss(f(x; c) - target)``."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda c: loss(approximation(x, c) - target), bounds=C_BRACKET,
                          method="bounded", options={"xatol": 1e-10})  # fmt: skip
    return float(res.x)


def fit(split: Split, settings: G2Settings, rng: np.random.Generator, log=print) -> FitResult:
    row = np.asarray(split.x_train[0], dtype=float)
    if row.size != 2 or not np.all(np.isfinite(row)) or np.any(row <= 0):
        raise ValueError(
            f"g2_approximation reads (half-width, printed c) > 0 from the split's row, got {row}"
        )
    wall = time.perf_counter()
    half_width, printed_c = row
    x = np.linspace(-half_width, half_width, settings.points)
    g2 = squared_erf_unit(x)
    f = approximation(x, printed_c)
    values = {
        "max_error_printed_c": float(np.max(np.abs(f - g2))),
        "c_minimax": best_c(x, g2, lambda e: np.max(np.abs(e))),
        "c_least_squares": best_c(x, g2, lambda e: np.sum(e * e)),
        "printed_c": float(printed_c),
    }
    log(", ".join(f"{k} = {v:.6g}" for k, v in values.items()))
    traces = {"g2_x": x, "g2_exact": g2, "g2_approximation": f}
    return analytic_result(split, {k: (("g2_point",), v) for k, v in traces.items()}, values, wall)


def work(s: G2Settings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Two bounded scalar minimisations of a few dozen evaluations over ``points`` values:
    milliseconds."""
    return Work(100, floats_held=4 * s.points, call_s=1e-3)


register(
    Method(
        "g2_approximation",
        G2Settings,
        fit,
        (),
        "the approximation g(x)^2 ~ 1 - exp(-c x^2 / 2) of the squared erf unit beside the "
        "exact curve, with the c that minimises its error (thesis fig. C.1)",
        tasks=lambda settings: ("analytic",),
        work=work,
        imports=("scipy.optimize", "scipy.special"),
    )
)
