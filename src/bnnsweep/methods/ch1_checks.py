"""Exact checks of thesis ch. 1 (``models.thesis_ch1``) on the problems of dataset
``thesis_ch1`` (task ``analytic``), one split per problem, recognised by the split's name:

- ``burglary``: ``p_b_given_a_two_node`` (eq. 1.5), ``p_b_given_a_two_node_alt`` (with
  P(A | B = no) = 1e-5), ``p_b_given_a`` (eq. 1.7), ``p_c_given_a``, ``p_b_given_a_c``;
- ``kl_asymmetry``: ``s2_forward_kl`` (minimises KL(N1 || N2), fig. 1.9 a) and
  ``s2_reverse_kl`` (KL(N2 || N1), fig. 1.9 b);
- ``quartic_a``/``quartic_b``: ``laplace_mode``, ``laplace_variance`` (fig. 1.12),
  ``vg_mean``, ``vg_variance``, ``vg_kl`` (the minimum-KL(q || p) Gaussian, fig. 1.13).

Every number is a diagnostic (``diag_<name>``); nothing is predicted (likelihood ``none``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..method_base import FitResult
from ..models import thesis_ch1 as ch1
from . import Method, Work, register


@dataclass(frozen=True)
class Ch1Settings:
    """No settings: each problem's numbers come from its split."""

    def validate(self) -> None:
        return None


def burglary(row: np.ndarray) -> dict[str, float]:
    prior_b, prior_c, nn, yn, ny, yy, alt = row
    three = ch1.posteriors_explaining_away(prior_b, prior_c, np.array([[nn, ny], [yn, yy]]))
    return {
        "p_b_given_a_two_node": ch1.posterior_two_node(prior_b, yn, nn),
        "p_b_given_a_two_node_alt": ch1.posterior_two_node(prior_b, yn, alt),
        **three,
    }


def kl_asymmetry(row: np.ndarray) -> dict[str, float]:
    forward, reverse = ch1.optimal_spherical_variances(ch1.correlated_covariance(row[:2], row[2]))
    return {"s2_forward_kl": forward, "s2_reverse_kl": reverse}


def quartic(row: np.ndarray) -> dict[str, float]:
    mode, variance = ch1.laplace_quartic(row)
    mean, vg_variance, kl = ch1.variational_gaussian_quartic(row)
    return {
        "laplace_mode": mode,
        "laplace_variance": variance,
        "vg_mean": mean,
        "vg_variance": vg_variance,
        "vg_kl": kl,
    }


PROBLEMS = {
    "burglary": burglary,
    "kl_asymmetry": kl_asymmetry,
    "quartic_a": quartic,
    "quartic_b": quartic,
}


def fit(split: Split, settings: Ch1Settings, rng: np.random.Generator, log=print) -> FitResult:
    if split.name not in PROBLEMS:
        raise ValueError(
            f"ch1_checks knows the problems {', '.join(PROBLEMS)}; split {split.name!r} is none"
        )
    wall = time.perf_counter()
    values = {k: float(v) for k, v in PROBLEMS[split.name](split.x_train[0]).items()}
    log(f"{split.name}: " + ", ".join(f"{k} = {v:.6g}" for k, v in values.items()))
    empty = np.zeros((split.x_test.shape[0], 0))
    return FitResult(
        pred_mean=empty,
        pred_var=empty,
        likelihood="none",
        diagnostics=values,
        runtime_s=time.perf_counter() - wall,
    )


def work(s: Ch1Settings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """A few hundred scalar optimisations and one quadrature: well under a second (fit CPU
    0.00, 0.00, 0.46 and 0.53 s for the four splits of the default sweep, 2026-11-27,
    ``python benchmarks/plan_vs_measured.py config/config.yaml results``)."""
    return Work(250, call_s=1e-3)


register(
    Method(
        "ch1_checks",
        Ch1Settings,
        fit,
        (),
        "exact checks of thesis ch. 1: burglary-net posteriors by enumeration, KL-optimal "
        "spherical variances, Laplace and variational Gaussians to quartic densities",
        tasks=lambda settings: ("analytic",),
        work=work,
        imports=("scipy.integrate", "scipy.optimize"),
    )
)
