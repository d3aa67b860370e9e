"""Variational Bayesian ICA (thesis §6.5, app. D): mixture-of-Gaussian sources, ARD on the
columns of the mixing matrix, fitted by ``engines.ica.fit_vb_ica`` to ``unsupervised`` data
(rows of ``x_train`` are the observations t_n; see ``datasets.ica_mixtures``).

Settings: ``sources`` I (sweep axis ``sources``); the fixed source density, each source an
equal-weight mixture of ``source_components`` M Gaussians, either ``scale_mixture`` (zero
means, variances geometrically spaced from 1 to ``widest_variance``: the toy's 1 and 50 for
M = 2) or ``location_mixture`` (unit variances, means evenly spaced on [-1, 1]: the image
model's +-1 for M = 2); with M = 1 both are N(0, 1) and the model is Bayesian PCA. The
schedule is §6.5.5's: ``outer`` rounds of at most ``inner`` sweeps mu -> x -> W (stopped when
a sweep gains less than ``tolerance`` relative), then alpha and beta. ``collapsed`` adds the
engine's collapsed W step at the start of each round (not in the thesis; without it the
sweeps stall at the toy's small noise). ``remove_sources`` removes the source of largest
<alpha> while the bound of the smaller model is higher (off by default: §6.5.6 thought the
bound could not be computed).

No predictions: ``pred_mean``/``pred_var`` have shape (T, 0) at the split's T test rows (the
true columns), likelihood ``none``. Recorded: ``log_evidence`` = the final bound (kind ``lower_bound``); traces ``bound`` over
``iteration`` (after every update, of the model returned), ``log10_alpha`` over ``source``
(the I-source fit, before any removal), ``log10_alpha_round`` over (``round``, ``source``),
``source_kept`` over ``source``, ``mixing_mean`` <W> over (``observed``, ``source``) (NaN
columns for removed sources), ``source_mean`` <x_n> over (``point``, ``source``) and, when the
split carries the true mixing matrix in ``x_test`` (rows = true columns), ``cosine`` over
``true_source``: |cos| between each true column and the best-matching fitted column.
Diagnostics: ``sources_switched_off`` (sources whose <alpha> exceeds the smallest <alpha> by
more than ``switch_off_ratio``), ``log10_alpha_ceiling`` (log10 (a + P/2)/b, the largest
<alpha> the update can give, where a switched-off source ends), ``sources_removed``, ``noise_variance`` (1/<beta>),
``bound_decrease_max`` and ``bound_violations``. The bound must never fall by more than
``monotone_tol`` * max(1, |L|) (round-off); if it does the run's status is ``diverged``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..method_base import FitResult, check_choice, check_positive
from . import Method, Work, register

SOURCE_DENSITIES = ("scale_mixture", "location_mixture")


@dataclass(frozen=True)
class VBICASettings:
    sources: int = 3
    source_components: int = 2
    source_density: str = "scale_mixture"
    widest_variance: float = 50.0
    outer: int = 50
    inner: int = 100
    tolerance: float = 1e-10
    collapsed: bool = False
    remove_sources: bool = False
    switch_off_ratio: float = 100.0
    monotone_tol: float = 1e-9

    def validate(self) -> None:
        for key in ("sources", "source_components", "outer", "inner"):
            check_positive(key, getattr(self, key))
        check_choice("source_density", self.source_density, SOURCE_DENSITIES)
        check_positive("tolerance", self.tolerance, allow_zero=True)
        check_positive("monotone_tol", self.monotone_tol, allow_zero=True)
        if self.widest_variance < 1.0:
            raise ValueError(f"setting 'widest_variance' must be >= 1, got {self.widest_variance}")
        if self.switch_off_ratio <= 1.0:
            raise ValueError(f"setting 'switch_off_ratio' must be > 1, got {self.switch_off_ratio}")
        if self.source_components**self.sources > 4096:
            raise ValueError(
                f"source_components ** sources = {self.source_components**self.sources} "
                "component combinations; the mixture posterior q(x_n) has M^I (limit 4096)"
            )


def source_mixture(settings: VBICASettings):
    """The fixed source density of every source (6.4), as a ``models.ica.SourceMixture``."""
    from ..models.ica import SourceMixture

    m = settings.source_components
    weights = np.full(m, 1.0 / m)
    if settings.source_density == "scale_mixture":
        means = np.zeros(m)
        variances = np.geomspace(1.0, settings.widest_variance, m) if m > 1 else np.ones(1)
    else:
        means = np.linspace(-1.0, 1.0, m) if m > 1 else np.zeros(1)
        variances = np.ones(m)
    return SourceMixture.shared(settings.sources, weights, means, variances)


def column_cosines(fitted: np.ndarray, true: np.ndarray) -> np.ndarray:
    """|cos| between each true column (P, I_true) and its best-matching fitted column
    (P, I); columns that are NaN (removed sources) or zero never match."""
    a = fitted / np.linalg.norm(fitted, axis=0)
    b = true / np.linalg.norm(true, axis=0)
    return np.nanmax(np.abs(np.nan_to_num(a.T, nan=0.0) @ b), axis=0)


def switched_off(log10_alpha: np.ndarray, ratio: float) -> np.ndarray:
    """Sources whose <alpha> exceeds the smallest <alpha> by more than ``ratio``."""
    return log10_alpha - np.nanmin(log10_alpha) > np.log10(ratio)


def alpha_ceiling(prior, n_observed: int) -> float:
    """log10 of the largest <alpha_i> the update (6.25-6.26) can give, (a + P/2) / b, reached
    as <w_i^T w_i> -> 0: where a switched-off source's alpha ends, set by the hyperprior."""
    return float(np.log10((prior.alpha.shape + 0.5 * n_observed) / prior.alpha.rate))


def bound_decreases(trace: np.ndarray, tol: float) -> np.ndarray:
    """Per update, how far the bound fell beyond ``tol`` * max(1, |L|) (0 where it did not)."""
    drop = trace[:-1] - trace[1:]
    allowed = tol * np.maximum(1.0, np.abs(trace[:-1]))
    return np.where(drop > allowed, drop, 0.0)


def fit(split: Split, settings: VBICASettings, rng: np.random.Generator, log=print) -> FitResult:
    from ..engines.ica import fit_vb_ica
    from ..models.ica import ICAPrior

    wall = time.perf_counter()
    t = split.x_train
    n_src = settings.sources
    prior = ICAPrior(source_mixture(settings))
    engine = fit_vb_ica(
        t,
        prior,
        n_outer=settings.outer,
        max_inner=settings.inner,
        inner_tol=settings.tolerance,
        monotone_tol=settings.monotone_tol,
        on_decrease="record",
        remove_sources=settings.remove_sources,
        rng=rng,
        collapsed_mixing=settings.collapsed,
    )
    kept = np.zeros(n_src, dtype=bool)
    kept[engine.kept_sources] = True
    first_alphas = engine.removals[0]["alphas"] if engine.removals else engine.alpha_mean
    log10_alpha = np.log10(np.asarray(first_alphas, dtype=float))
    w = np.full((t.shape[1], n_src), np.nan)
    w[:, kept] = engine.w_mean
    x = np.full((t.shape[0], n_src), np.nan)
    x[:, kept] = engine.x_mean
    alpha_rounds = np.full((engine.alpha_trace.shape[0], n_src), np.nan)
    alpha_rounds[:, kept] = np.log10(engine.alpha_trace)
    if engine.removals:  # the I-source fit's rounds are not kept by the engine: its final row
        alpha_rounds = np.vstack([log10_alpha[None], alpha_rounds])

    trace = engine.bound_trace
    drops = bound_decreases(trace, settings.monotone_tol)
    off = switched_off(log10_alpha, settings.switch_off_ratio)
    traces = {
        "bound": (("iteration",), trace),
        "log10_alpha": (("source",), log10_alpha),
        "log10_alpha_round": (("round", "source"), alpha_rounds),
        "source_kept": (("source",), kept.astype(float)),
        "mixing_mean": (("observed", "source"), w),
        "source_mean": (("point", "source"), x),
    }
    if split.x_test.shape[0] > 0:
        traces["cosine"] = (("true_source",), column_cosines(w, split.x_test.T))
    no_outputs = np.zeros((split.x_test.shape[0], 0))  # (T, 0): nothing is predicted
    result = FitResult(
        pred_mean=no_outputs,
        pred_var=no_outputs,
        likelihood="none",
        log_evidence=float(engine.bound),
        log_evidence_kind="lower_bound",
        traces=traces,
        diagnostics={
            "sources_switched_off": int(off.sum()),
            "switch_off_ratio": float(settings.switch_off_ratio),
            "log10_alpha_ceiling": alpha_ceiling(prior, t.shape[1]),
            "sources_removed": int(n_src - kept.sum()),
            "noise_variance": float(1.0 / engine.beta_mean),
            "bound_decrease_max": float(drops.max(initial=0.0)),
            "bound_violations": len(engine.violations),
            "updates": len(trace) - 1,
        },
        n_grad_evals=len(trace) - 1,
        runtime_s=time.perf_counter() - wall,
    )
    if engine.violations or np.any(drops > 0) or not np.all(np.isfinite(trace)):
        worst = max([d for *_, d in engine.violations] + [float(drops.max(initial=0.0))])
        result.flag("diverged", f"the bound fell by {worst:.3g} during the fit (a bug)")
    log(
        f"vb_ica I={n_src}: bound {engine.bound:.6f} after {len(trace) - 1} updates; "
        f"log10 alpha {np.round(log10_alpha, 2).tolist()}; {int(off.sum())} switched off, "
        f"{n_src - int(kept.sum())} removed"
    )
    return result


def accepted_tasks(settings: VBICASettings) -> tuple[str, ...]:
    return ("unsupervised",)


def work(s: VBICASettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: every round runs at most 3 * ``inner`` + 2 updates (plus about 60
    evaluations of the collapsed bound and its gradient), each over N points and the M^I
    component combinations; with removal up to I fits. Measured about 1e-4 s per update at
    N = 200, I = 3, M = 2."""
    combos = s.source_components**s.sources
    updates = s.outer * (3 * s.inner + 2 + (60 if s.collapsed else 0))
    fits = s.sources if s.remove_sources else 1
    per_update = 2e-4 + 2e-8 * n_train * combos * (s.sources + 1) ** 2
    held = n_train * combos * (s.sources + 2) + n_train * s.sources**2
    return Work(updates * fits, floats_held=held, call_s=per_update)


register(
    Method(
        "vb_ica",
        VBICASettings,
        fit,
        ("sources",),
        "variational Bayesian ICA: mixture-of-Gaussian sources, ARD on the mixing columns, "
        "lower bound on ln p(T) (thesis sec. 6.5, app. D)",
        tasks=accepted_tasks,
        work=work,
        imports=("scipy.optimize",),
    )
)
