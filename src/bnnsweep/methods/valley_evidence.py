"""``valleys``: model evidence as a sum over the posterior's valleys (engines/evidence/valleys.py),
the reference the chaining estimates are checked against.

The same model as ``chaining`` (alpha and beta integrated out, Neal's hyperpriors of paper 001
sec. 5 by default): minima of E(w) = phi(w) + E_0(w) from many starts, merged modulo the
2^H H! sign-flip and permutation symmetry of the hidden units, each valley's mass by AIS
from its Laplace Gaussian, and ln p(D) >= ln sum_v |G v| Z_v, an estimate of ln p(D) when
the coverage check says the starts found the valleys that carry the mass. Predictions
average the network over the AIS particles, each weighted by its valley's share of the
evidence and its own importance weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..datasets.base import Split
from ..engines.evidence.valleys import ValleySettings, estimate
from ..method_base import FitResult, check_positive, evenly_spaced
from ..model_settings import ModelSettings
from ..models.marginal import MarginalModel
from ..models.priors import check_prior_supported
from . import JAX, Method, Work, register
from .chaining import neal_hyperpriors, neal_noise_hyperprior

_DEFAULTS = ValleySettings()


@dataclass(frozen=True)
class ValleyEvidenceSettings(ModelSettings):
    hyperpriors: dict = field(default_factory=neal_hyperpriors)
    noise_hyperprior: dict = field(default_factory=neal_noise_hyperprior)
    starts: int = _DEFAULTS.starts
    start_iter: int = _DEFAULTS.start_iter
    newton_iter: int = _DEFAULTS.newton_iter
    particles: int = _DEFAULTS.particles
    groups: int = _DEFAULTS.groups
    temperatures: int = _DEFAULTS.temperatures
    leapfrog: int = _DEFAULTS.leapfrog
    mass_window: float = _DEFAULTS.mass_window
    max_valleys: int = _DEFAULTS.max_valleys
    max_new_share: float = _DEFAULTS.max_new_share
    pilot_samples: int = _DEFAULTS.pilot_samples

    def validate(self) -> None:
        super().validate()
        check_prior_supported("valleys", self.prior)
        if self.hidden < 1:
            raise ValueError("setting 'hidden' must be >= 1 for valleys (the linear model has one)")
        for key in ("starts", "start_iter", "newton_iter", "particles", "groups",
                    "temperatures", "leapfrog", "mass_window", "max_valleys", "max_new_share"):  # fmt: skip
            check_positive(key, getattr(self, key))
        self.engine().validate()

    def engine(self) -> ValleySettings:
        return ValleySettings(
            starts=self.starts, start_iter=self.start_iter, newton_iter=self.newton_iter,
            particles=self.particles, groups=self.groups, temperatures=self.temperatures,
            leapfrog=self.leapfrog, mass_window=self.mass_window, max_valleys=self.max_valleys,
            max_new_share=self.max_new_share, pilot_samples=self.pilot_samples,
        )  # fmt: skip


def fit(split: Split, settings: ValleyEvidenceSettings, rng: np.random.Generator, log=print):
    objective, noise = settings.build(split)
    model = MarginalModel(objective, noise)
    found = estimate(model, settings.engine(), rng, log=log)
    d = found.diagnostics
    draws, weights = d["draws"], d["draw_weights"]
    if len(draws) == 0:
        nan = np.full((len(split.x_test), split.n_outputs), np.nan)
        result = FitResult(nan, nan, log_evidence_kind="chain", n_grad_evals=found.n_grad_evals)
        result.flag(found.status, found.reason)
        return result
    net = objective.network

    def predict(x):
        f = net.forward(draws, x)  # (N, T, P)
        mean = np.einsum("n,ntp->tp", weights, f)
        spread = np.einsum("n,ntp->tp", weights, (f - mean) ** 2)
        return mean, spread + float(weights @ model.noise_variance_mean(draws))

    mean, var = predict(split.x_test)
    train_mean, train_var = predict(split.x_train)
    pick = np.random.default_rng(0).choice(len(draws), size=len(draws), p=weights)
    result = FitResult(
        pred_mean=mean,
        pred_var=var,
        train_mean=train_mean,
        train_var=train_var,
        log_evidence=found.log_z,
        log_evidence_se=found.log_z_se,
        log_evidence_kind="chain",
        n_grad_evals=found.n_grad_evals,
        function_samples=net.forward(draws[pick[evenly_spaced(len(pick))]], split.x_test),
    )
    if found.status != "ok":
        result.flag(found.status, found.reason)
    log(
        f"valleys: ln p(D) = {found.log_z:.3f} +- {found.log_z_se:.3f} from "
        f"{d['n_ais_valleys']} valleys ({d['n_valleys']} found, {d['n_accepted_minima']} "
        f"minima of {settings.starts} starts; last {_DEFAULTS.coverage_fraction:.0%} of starts "
        f"found {d['n_new_valleys']} new, {d['new_valley_share']:.1%} of the mass)"
    )
    result.coords["valley"] = np.arange(d["n_ais_valleys"])
    for name in ("energy", "hits", "orbit", "laplace_log_mass", "log_mass", "log_mass_se",
                 "ess", "stayed"):  # fmt: skip
        result.traces[f"valley_{name}"] = (("valley",), np.asarray(d[f"valley_{name}"], float))
    result.diagnostics.update(
        {
            k: d[k]
            for k in (
                "n_valleys",
                "n_ais_valleys",
                "n_accepted_minima",
                "n_new_valleys",
                "new_valley_share",
                "n_merged_valleys",
                "group_order",
            )
        }  # fmt: skip
    )
    result.diagnostics["n_weights"] = net.n_weights
    return result


def work(s: ValleyEvidenceSettings, n_train: int, n_test: int, n_out: int, n_weights: int):
    """Cost model: the L-BFGS iterations of every start (each a gradient and a few line-search
    evaluations), the trust-region polish (a Hessian, W gradients' worth, per step; the
    polish usually stops after a tenth of its bound) and the AIS transitions of every valley
    with AIS, all over the training set."""
    lbfgs = s.starts * s.start_iter * 2
    polish = s.starts * s.newton_iter * 0.1 * n_weights
    ais = s.max_valleys * s.particles * s.temperatures * (s.leapfrog + 1) / s.particles
    held = s.max_valleys * s.particles * (n_weights + n_test * n_out)
    return Work(lbfgs + polish + ais, batch=s.particles, floats_held=held, typical=0.3)


register(
    Method(
        "valleys",
        ValleyEvidenceSettings,
        fit,
        ("hidden",),
        "Evidence as a sum over posterior valleys modulo hidden-unit symmetry, AIS per valley",
        work=work,
        imports=(*JAX, "scipy.special", "scipy.optimize"),
    )
)
