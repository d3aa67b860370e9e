"""Inference methods: one module each, one registry.

A method is registered with its settings class (defaults + validation), the sweep axes it
uses, and ``fit(split, settings, rng, log) -> FitResult``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..method_base import FitResult, SettingsError, build_settings, suggest
from . import (
    adf,
    chaining,
    exact,
    hmc,
    laplace,
    map_early_stopping,
    relu_reference,
    vi_gauss,
    vi_mixture,
)


@dataclass(frozen=True)
class Method:
    name: str
    settings_class: type
    fit: Callable
    axes: tuple[str, ...]
    description: str
    # fit_many(splits, settings, rngs, log) -> list[FitResult]: several cells as one batch
    fit_many: Callable | None = None
    # tasks(settings) -> dataset tasks the method can fit (default: regression only)
    tasks: Callable | None = None

    def accepted_tasks(self, settings) -> tuple[str, ...]:
        return tuple(self.tasks(settings)) if self.tasks else ("regression",)

    def settings(self, values: dict):
        return build_settings(self.settings_class, values, where=f"method {self.name!r}")

    def defaults(self) -> dict:
        return dataclasses.asdict(self.settings_class())


REGISTRY: dict[str, Method] = {}


def register(method: Method) -> None:
    REGISTRY[method.name] = method


def get_method(name: str) -> Method:
    try:
        return REGISTRY[name]
    except KeyError:
        raise SettingsError(
            f"unknown method {name!r}{suggest(name, REGISTRY)}; valid methods: {', '.join(sorted(REGISTRY))}"
        ) from None


register(
    Method(
        "laplace",
        laplace.LaplaceSettings,
        laplace.fit,
        ("hidden",),
        "evidence procedure: MAP + MacKay re-estimation, Laplace log evidence (paper 001 sec. 4)",
    )
)
register(
    Method(
        "map",
        map_early_stopping.MapSettings,
        map_early_stopping.fit,
        ("hidden",),
        "penalised least squares with early stopping on a validation fraction, restarts",
    )
)

register(
    Method(
        "chaining",
        chaining.ChainingSettings,
        chaining.fit,
        ("hidden", "schedule"),
        "Monte Carlo chaining of evidence ratios along a lambda schedule, with TI and AIS (paper 001)",
    )
)

register(
    Method(
        "hmc",
        hmc.HMCSettings,
        hmc.fit,
        ("hidden",),
        "hybrid Monte Carlo over the weights, Gibbs updates of alpha and beta, several chains batched",
    )
)

register(
    Method(
        "pbp",
        adf.PBPSettings,
        adf.fit,
        ("hidden",),
        "probabilistic backpropagation: ADF over Gaussian weights of a ReLU net, EP-refined prior (paper 004)",
        fit_many=adf.fit_many,
        tasks=adf.accepted_tasks,
    )
)
register(
    Method(
        "ebp",
        adf.EBPSettings,
        adf.fit,
        ("hidden",),
        "expectation backpropagation: ADF over weight means, variances fixed at 1 (paper 004)",
        fit_many=adf.fit_many,
        tasks=adf.accepted_tasks,
    )
)

register(
    Method(
        "vi_gauss",
        vi_gauss.VIGaussSettings,
        vi_gauss.fit,
        ("hidden",),
        "variational Gaussian q(w) (diag, full or factor-analysis covariance) with Gamma "
        "hyper-posteriors; lower bound on ln p(D) (papers 000, 002)",
    )
)
register(
    Method(
        "vi_mixture",
        vi_mixture.VIMixtureSettings,
        vi_mixture.fit,
        ("hidden", "components"),
        "variational mixture of diagonal Gaussians with the mutual-information bound and Gamma "
        "hyper-posteriors; lower bound on ln p(D) (paper 000 sec. 3.3, thesis sec. 5.4.3)",
    )
)

register(
    Method(
        "relu_map",
        relu_reference.PointSettings,
        relu_reference.fit,
        ("hidden",),
        "point estimate (MAP by L-BFGS) of the ADF methods' ReLU classifier: paper 004 Fig. 2's backpropagation baseline",
        tasks=relu_reference.accepted_tasks,
    )
)
register(
    Method(
        "relu_hmc",
        relu_reference.ReferenceHMCSettings,
        relu_reference.fit_hmc,
        ("hidden",),
        "hybrid Monte Carlo reference posterior of the ADF methods' ReLU classifier (paper 004 Fig. 2's ground truth)",
        tasks=relu_reference.accepted_tasks,
    )
)

register(
    Method(
        "exact",
        exact.ExactSettings,
        exact.fit,
        ("hidden",),
        "Bayesian linear regression (hidden = 0): closed-form evidence with alpha and beta "
        "integrated over their Gamma hyperpriors by quadrature, hyperposterior-mixture predictive",
    )
)

__all__ = ["REGISTRY", "FitResult", "Method", "SettingsError", "get_method", "register"]
