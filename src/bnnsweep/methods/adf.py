"""``pbp`` and ``ebp``: assumed density filtering over the weights of a ReLU network
(paper 004; Hernandez-Lobato & Adams 2015), several replicates advanced as one batch.

This module holds the settings, the fit wrapper and the cost model; the batched run and its
results are :mod:`bnnsweep.engines.adf.replicates`, the filter itself (the compiled scan over
points, eq. 6-25) :mod:`bnnsweep.engines.adf.filter`. Each epoch visits
every training point once in a fresh random order drawn from the replicate's generator.

Replicates (data splits or seeds) share the architecture; each draws from its own random
stream, so its numbers do not depend on which replicates it is batched with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..engines.adf import choices
from ..method_base import FitResult, check_choice, check_positive
from . import JAX, Method, Work, register

# ---- settings (paper 004 sec. 3-6) ----------------------------------------------------------


@dataclass(frozen=True)
class ADFSettings:
    """Shared by PBP and EBP.

    The ADF model is not the erf/tanh network of :class:`ModelSettings`: ReLU hidden layers,
    any number of them, one shared prior precision lambda for every weight (paper 004 eq. 3)
    and a choice of likelihood, so these settings stand on their own.

    ``layers`` is either the number of hidden layers, each of ``hidden`` units (the sweep
    axis), or an explicit list of hidden-layer widths (e.g. [50, 50]); the list form fixes
    the architecture whatever ``hidden`` says, so prefer the integer form in sweeps. Hidden
    units are ReLU (``activation`` accepts only ``relu``).

    ``poisson_approximation``: ln Z of a count by quadrature of paper 004 eq. 20
    (``quadrature``) or by the paper's negative binomial, eq. 21-22 (``negative_binomial``),
    which is far off when a count lies far from e^nu (``engines.adf.poisson_lognormal``).
    ``mean_init``: initial weight means N(0, 1/D) as HL&A's code (``fan_in``) or N(0, 1)
    (``unit``), which deeper softmax networks need (``network.Architecture.init_means``).
    """

    hidden: int = 50
    layers: int | list = 1
    activation: str = "relu"
    likelihood: str = "gaussian"
    epochs: int = 40
    noise_shape: float = 6.0
    noise_rate: float = 6.0
    softmax_approximation: str = "mc"
    poisson_approximation: str = "quadrature"
    mean_init: str = "fan_in"
    mc_samples: int = 10
    predictive_samples: int = 100
    trace_test: bool = True

    def validate(self) -> None:
        check_positive("hidden", self.hidden)
        if isinstance(self.layers, list | tuple):
            if not self.layers or not all(
                isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in self.layers
            ):
                raise ValueError(
                    f"setting 'layers' must be a positive integer or a non-empty list of them, got {self.layers!r}"
                )
        elif isinstance(self.layers, bool) or not isinstance(self.layers, int) or self.layers < 1:
            raise ValueError(
                f"setting 'layers' must be a positive integer or a non-empty list of them, got {self.layers!r}"
            )
        check_choice("activation", self.activation, ("relu",))
        check_choice("likelihood", self.likelihood, choices.LIKELIHOODS)
        check_choice(
            "softmax_approximation", self.softmax_approximation, choices.SOFTMAX_APPROXIMATIONS
        )
        check_choice(
            "poisson_approximation", self.poisson_approximation, choices.POISSON_APPROXIMATIONS
        )
        check_choice("mean_init", self.mean_init, choices.MEAN_INITS)
        for key in ("epochs", "noise_shape", "noise_rate", "mc_samples", "predictive_samples"):
            check_positive(key, getattr(self, key))
        if self.noise_shape <= 1:
            raise ValueError(
                f"setting 'noise_shape' must be > 1 (the noise variance b/(a-1) must exist), got {self.noise_shape}"
            )

    @property
    def hidden_widths(self) -> list[int]:
        if isinstance(self.layers, list | tuple):
            return list(self.layers)
        return [self.hidden] * self.layers


@dataclass(frozen=True)
class PBPSettings(ADFSettings):
    """PBP: Gaussian weights N(m, v) with both moments updated; lambda ~ Gamma(prior_shape,
    prior_rate) refined by EP after every epoch (HL&A 2015 use shape = rate = 6)."""

    prior_shape: float = 6.0
    prior_rate: float = 6.0

    def validate(self) -> None:
        super().validate()
        check_positive("prior_rate", self.prior_rate)
        if self.prior_shape <= 1:
            raise ValueError(f"setting 'prior_shape' must be > 1, got {self.prior_shape}")


@dataclass(frozen=True)
class EBPSettings(ADFSettings):
    """EBP: weight variances fixed at 1, means only; the prior precision is fixed at the small
    value ``prior_precision`` (paper 004 sec. 3)."""

    prior_precision: float = 1e-3

    def validate(self) -> None:
        super().validate()
        check_positive("prior_precision", self.prior_precision)


def accepted_tasks(settings: ADFSettings) -> tuple[str, ...]:
    """Dataset tasks the chosen likelihood can model (the config check uses this)."""
    return choices.TASKS[settings.likelihood]


def fit_many(splits, settings: ADFSettings, rngs, log=print) -> list[FitResult]:
    """Fit R replicates (splits, each with its own generator) as one vectorised batch
    (``engines.adf.replicates.ADF``, imported here: checking settings needs no JAX)."""
    from ..engines.adf.replicates import ADF

    ebp = isinstance(settings, EBPSettings)
    return ADF(list(splits), settings, list(rngs), log, fixed_variance=ebp).run()


def fit(split: Split, settings: ADFSettings, rng: np.random.Generator, log=print) -> FitResult:
    """Fit one split: ``fit_many`` with a batch of one."""
    return fit_many([split], settings, [rng], log)[0]


def work(s: ADFSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: one forward and one backward pass of the moments per training point and
    epoch (twice the work of a plain network), a test pass per epoch when traced; each pass
    touches one data point (``points=1``), at the fixed cost of one step of the compiled
    per-point scan."""
    passes = s.epochs * (2 * n_train + (n_test if s.trace_test else 0))
    return Work(passes, floats_held=4 * n_weights + n_test * n_out * 4, points=1)


register(
    Method(
        "pbp",
        PBPSettings,
        fit,
        ("hidden",),
        "probabilistic backpropagation: ADF over Gaussian weights of a ReLU net, EP-refined prior (paper 004)",
        fit_many=fit_many,
        tasks=accepted_tasks,
        work=work,
        imports=JAX,
    )
)
register(
    Method(
        "ebp",
        EBPSettings,
        fit,
        ("hidden",),
        "expectation backpropagation: ADF over weight means, variances fixed at 1 (paper 004)",
        fit_many=fit_many,
        tasks=accepted_tasks,
        work=work,
        imports=JAX,
    )
)


__all__ = [
    "ADFSettings",
    "EBPSettings",
    "PBPSettings",
    "accepted_tasks",
    "fit",
    "fit_many",
    "work",
]
