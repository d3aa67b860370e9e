"""``adf_activations``: the expected activations of a sign and of a rectified linear unit under
a Gaussian input, as ADF propagates them (paper 004 sec. 3 and fig. 1).

For each input variance tau of the split's row (dataset ``adf_activation_grid``) and ``points``
means mu on [-``mu_range``, ``mu_range``]: E[z] and Var[z] of z = sign(u) (``engines/adf/
sign_moments.py``) and of z = max(0, u) (eq. 8, ``engines/adf/relu_moments.py``),
u ~ N(mu, tau). A Monte Carlo check runs beside them: at every ``mc_every``-th mean,
``mc_draws`` draws of u give the sample mean of z, and ``mc_max_abs_z_*`` is the largest
|sample mean - E[z]| in units of its standard error (sqrt(Var[z] / draws)) over the
``mc_points_*`` means where both signs of u are drawn often enough for the sample mean to be
Gaussian (``MIN_EVENTS``): about 3 or less when the closed forms are right.

``limit_gap_*``: at the smallest tau, the largest |E[z] - a(mu)| over the means with
|mu| >= 3 sqrt(tau), how far the expected response is from the activation it smooths ("as the
variance of the input decreases the expected responses tend towards the activations they
approximate").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..method_base import FitResult, check_positive
from . import Method, Work, register

UNITS = ("sign", "relu")
MIN_EVENTS = 100
"""Expected draws on the rarer side of 0 for a Monte Carlo point to be checked."""
MAX_VARIANCES = 8
"""The input variances the cost model prices (the dataset's row has 4)."""


@dataclass(frozen=True)
class ActivationSettings:
    mu_range: float = 3.0
    points: int = 241
    mc_every: int = 10
    mc_draws: int = 20000

    def validate(self) -> None:
        for key in ("mu_range", "points", "mc_every", "mc_draws"):
            check_positive(key, getattr(self, key))
        if self.points < 3:
            raise ValueError(f"setting 'points' must be >= 3, got {self.points}")


def activation(unit: str, u: np.ndarray) -> np.ndarray:
    """The unit's output: sign(u) or max(0, u)."""
    return np.sign(u) if unit == "sign" else np.maximum(u, 0.0)


def unit_moments(unit: str, mu: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E[z], Var[z]) of the unit under N(mu, tau), from the ADF engine's closed forms."""
    from ..engines.adf.relu_moments import relu_moments
    from ..engines.adf.sign_moments import sign_moments
    from ..runtime.jax_runtime import jnp

    moments = sign_moments if unit == "sign" else relu_moments
    mean, var = moments(jnp.asarray(mu, dtype=float), jnp.asarray(tau, dtype=float))[:2]
    return np.asarray(mean), np.asarray(var)


def monte_carlo_z(unit: str, mu, tau, mean, var, draws: int, rng):
    """The sample mean of z over ``draws`` draws of u and its z-score
    (sample mean - E[z]) / sqrt(Var[z] / draws), per point;
    NaN where fewer than ``MIN_EVENTS`` draws are expected on one side of 0 (there the sample
    mean is a count of rare events, not Gaussian, and its z says nothing)."""
    from scipy.special import ndtr

    u = mu[:, None] + np.sqrt(tau)[:, None] * rng.standard_normal((mu.size, draws))
    sample = activation(unit, u).mean(axis=1)
    se = np.sqrt(np.maximum(var, 1e-300) / draws)
    rare_side = ndtr(-np.abs(mu) / np.sqrt(tau)) * draws
    return sample, np.where(rare_side >= MIN_EVENTS, (sample - mean) / se, np.nan)


def fit(split: Split, settings: ActivationSettings, rng: np.random.Generator,
        log=print) -> FitResult:  # fmt: skip
    taus = np.asarray(split.x_train[0], dtype=float)
    if taus.size == 0 or np.any(~np.isfinite(taus)) or np.any(taus <= 0):
        raise ValueError(
            f"adf_activations reads positive input variances from the split's row, got {taus}"
        )
    wall = time.perf_counter()
    mu = np.linspace(-settings.mu_range, settings.mu_range, settings.points)
    grid_mu, grid_tau = np.meshgrid(mu, taus)  # (tau, mu)
    checked = np.arange(0, settings.points, settings.mc_every)
    traces, values = {}, {}
    for unit in UNITS:
        mean, var = unit_moments(unit, grid_mu, grid_tau)
        sub_mu, sub_tau = grid_mu[:, checked].ravel(), grid_tau[:, checked].ravel()
        sample, z = monte_carlo_z(unit, sub_mu, sub_tau, mean[:, checked].ravel(),
                          var[:, checked].ravel(), settings.mc_draws, rng)  # fmt: skip
        smallest = int(np.argmin(taus))
        far = np.abs(mu) >= 3.0 * np.sqrt(taus[smallest])
        gap = np.abs(mean[smallest] - activation(unit, mu))[far]
        values[f"mc_max_abs_z_{unit}"] = float(np.nanmax(np.abs(z)))
        values[f"mc_points_{unit}"] = int(np.sum(np.isfinite(z)))
        values[f"limit_gap_{unit}"] = float(np.max(gap)) if gap.size else float("nan")
        traces[f"{unit}_mean"] = (("input_variance", "input_mean"), mean)
        traces[f"{unit}_sd"] = (("input_variance", "input_mean"), np.sqrt(var))
        traces[f"{unit}_mc_z"] = (("input_variance", "checked_mean"), z.reshape(taus.size, -1))
        traces[f"{unit}_mc_mean"] = (
            ("input_variance", "checked_mean"),
            sample.reshape(taus.size, -1),
        )
    traces["input_mean_value"] = (("input_mean",), mu)
    traces["input_variance_value"] = (("input_variance",), taus)
    traces["checked_mean_value"] = (("checked_mean",), mu[checked])
    log(", ".join(f"{k} = {v:.4g}" for k, v in values.items()))
    return analytic_result(split, traces, values, wall)


def analytic_result(split: Split, traces: dict, values: dict, wall: float) -> FitResult:
    """The result of an analytic cell: no predictions (likelihood ``none``), its traces and
    diagnostics, timed from ``wall`` (``time.perf_counter()`` at the start)."""
    empty = np.zeros((split.x_test.shape[0], 0))
    return FitResult(empty, empty, likelihood="none", traces=traces, diagnostics=values,
                     runtime_s=time.perf_counter() - wall)  # fmt: skip


def work(s: ActivationSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Closed forms on a grid of ``points`` means (one compiled call per unit) and the Monte
    Carlo check's draws (``points / mc_every`` means x ``mc_draws`` per variance and unit,
    numpy, up to ``MAX_VARIANCES`` variances held at once): well under a second for the
    defaults."""
    return Work(4, floats_held=(s.points // s.mc_every + 1) * s.mc_draws * MAX_VARIANCES,
                call_s=0.5)  # fmt: skip


register(
    Method(
        "adf_activations",
        ActivationSettings,
        fit,
        (),
        "expected activations of sign and rectified linear units under Gaussian inputs, the "
        "ADF moments beside Monte Carlo (paper 004 fig. 1)",
        tasks=lambda settings: ("analytic",),
        work=work,
        imports=("jax", "scipy.special"),
    )
)
