"""``vi_mixture``: a mixture of M diagonal Gaussians for q(w) with Gamma hyper-posteriors
(paper 000 sec. 3.3 and appendices A-C; thesis sec. 5.4.3).

q(w) = sum_m Q(m) q(w | m); the bound L = sum_m Q(m) L_m + I* with the mutual-information
bound I* of Gaussian smoothing functions is ``engines/variational/mixture.py``.

The thesis schedule (sec. 5.4.3 and 5.5.2), the default: fit a one-component model (``vi_gauss``
diag) from ``restarts`` initialisations and keep the one of largest bound, copy it to M components with 1% multiplicative noise on the means, then repeat: optimise the
smoothing distributions, optimise the components, update Q(m) by its fixed point (setting
``mixing: update``; ``fixed`` keeps 1/M as paper 000 sec. 4 did), update q(alpha), q(beta).
Every step cannot lower the bound, which is recorded per outer iteration.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..engines.variational.hyperposterior import HyperPosterior
from ..engines.variational.mixture import (
    MixtureBound,
    initial_components,
    initial_smoothing,
    mixture_sweep,
    mutual_information_bound,
)
from ..method_base import FUNCTION_SAMPLES, FitResult, check_choice, check_positive
from ..models.vi_family import GaussianFamily
from . import SCIPY, Method, Work, register
from .laplace import mixture_moments
from .vi_gauss import (
    VI_CALL_S,
    GaussianBound,
    GaussianFit,
    VariationalSettings,
    bound_result,
    bound_settled,
    fit_gaussian,
    initial_hyper,
    predictive,
)


@dataclass(frozen=True)
class VIMixtureSettings(VariationalSettings):
    """Settings of the mixture variational method (thesis sec. 5.4.3); q(w|m) is diagonal."""

    outer_iter: int = 200
    components: int = 3
    mixing: str = "fixed"
    init_noise: float = 0.01
    smoothing_scale: float = 10.0
    start: str = "copies"
    start_iter: int = 100

    method_name = "vi_mixture"

    def validate(self) -> None:
        super().validate()
        check_choice("mixing", self.mixing, ("fixed", "update"))
        check_positive("components", self.components)
        check_positive("smoothing_scale", self.smoothing_scale)
        check_positive("init_noise", self.init_noise, allow_zero=True)
        check_choice("start", self.start, ("copies", "independent"))
        check_positive("start_iter", self.start_iter)


@dataclass
class MixtureFit:
    log_Q: np.ndarray
    comp: np.ndarray
    smooth: np.ndarray
    hyper: HyperPosterior
    bound: float
    trace: np.ndarray
    mi_trace: np.ndarray
    single_bound: float
    converged: bool
    n_evals: int


def mixture_statistics(gaussian: GaussianBound, log_Q, comp):
    """sum_m Q(m) <E_D>_m and sum_m Q(m) <w_k^2>_m for the hyper-posterior updates."""
    Q = np.exp(log_Q)
    stats = [gaussian.statistics(c) for c in comp]
    e_d = float(Q @ np.array([s[0] for s in stats]))
    second = Q @ np.stack([s[3] for s in stats])
    return e_d, second


def fit_single(bound: MixtureBound, settings: VIMixtureSettings, noise_prior, w0,
               log=print) -> GaussianFit:  # fmt: skip
    """The one-component (diagonal) fit from one initial weight vector: the mixture's start."""
    gaussian = bound.gaussian
    hyper = initial_hyper(settings, gaussian.objective, noise_prior)
    return fit_gaussian(gaussian, gaussian.family.pack(w0, settings.init_sd), hyper,
                        settings.outer_iter, settings.max_iter, settings.tol, log,
                        settings.outer_tol)  # fmt: skip


def independent_components(gaussian: GaussianBound, settings: VIMixtureSettings, hyper, M: int,
                           rng) -> tuple[np.ndarray, int]:  # fmt: skip
    """Paper 000 sec. 4.2's start (``start: independent``): each component from its own random
    weights (``init_scale``, s.d.s ``init_sd``), ``start_iter`` L-BFGS iterations of its own
    one-component bound at the hyper-posterior of the best one-component fit; returns the
    (M, 2W) components and the evaluations used."""
    net = gaussian.objective.network
    comp, n_evals = [], 0
    for _ in range(M):
        w0 = net.init_weights(rng, 1, settings.init_scale)[0]
        theta = gaussian.family.pack(w0, settings.init_sd)
        theta, _, evals, _ = gaussian.maximise(theta, hyper, settings.start_iter, settings.tol)
        comp.append(theta)
        n_evals += evals
    return np.stack(comp), n_evals


def fit_mixture(bound: MixtureBound, settings: VIMixtureSettings, single: GaussianFit, rng,
                log=print) -> MixtureFit:  # fmt: skip
    """The thesis schedule from a fitted one-component model ``single`` (left unchanged)."""
    gaussian = bound.gaussian
    M = settings.components
    hyper = copy.deepcopy(single.hyper)
    W = gaussian.family.n_weights
    n_evals, trace, mi_trace, converged = 0, [], [], False
    if settings.start == "independent" and M > 1:
        comp, n_evals = independent_components(gaussian, settings, hyper, M, rng)
    else:
        comp = initial_components(single.theta[:W], single.theta[W:], M, settings.init_noise, rng)
    smooth = initial_smoothing(comp, settings.smoothing_scale)
    log_Q = np.full(M, -np.log(M))
    if M == 1:  # the mutual information of one component is zero: the bound is vi_gauss diag
        return MixtureFit(log_Q, single.theta[None, :], smooth, hyper, single.bound, single.trace,
                          np.zeros_like(single.trace), single.bound, single.converged, n_evals)  # fmt: skip
    for it in range(settings.outer_iter):
        log_Q, comp, smooth, evals = mixture_sweep(bound, log_Q, comp, smooth, hyper,
                                                   settings.max_iter, settings.tol,
                                                   settings.mixing == "update")  # fmt: skip
        n_evals += evals
        e_d, second = mixture_statistics(gaussian, log_Q, comp)
        hyper.update_alpha(second)
        hyper.update_beta(e_d)
        value = bound.value(log_Q, comp, smooth, hyper)
        trace.append(value)
        mi_trace.append(mutual_information_bound(log_Q, comp, smooth)[0])
        log(f"  mixture outer {it + 1}: bound={value:.6f} I*={mi_trace[-1]:.4f}")
        if bound_settled(trace, settings.outer_tol):
            converged = True
            break
    return MixtureFit(log_Q, comp, smooth, hyper, trace[-1], np.array(trace), np.array(mi_trace),
                      single.bound, converged, n_evals)  # fmt: skip


def fit(
    split: Split, settings: VIMixtureSettings, rng: np.random.Generator, log=print
) -> FitResult:
    objective, noise_prior = settings.build(split)
    net = objective.network
    family = GaussianFamily("diag", net.n_weights)
    bound = MixtureBound(GaussianBound(objective, family, settings.g2))
    singles = []
    for r in range(settings.restarts):
        log(f"one-component restart {r + 1}/{settings.restarts}")
        w0 = net.init_weights(rng, 1, settings.init_scale)[0]
        singles.append(fit_single(bound, settings, noise_prior, w0, log))
    single_bounds = np.array([f.bound for f in singles])
    start = singles[int(np.nanargmax(single_bounds))]
    best = fit_mixture(bound, settings, start, rng, log)
    fits = [*singles, best]
    Q = np.exp(best.log_Q)
    component_bounds, _ = bound.components(best.comp, best.hyper)

    def component_predictions(x):
        preds = [predictive(objective, family, c, best.hyper, x, settings.g2) for c in best.comp]
        return np.stack([p[0] for p in preds]), np.stack([p[1] for p in preds])

    test_means, test_vars = component_predictions(split.x_test)
    train_means, train_vars = component_predictions(split.x_train)
    pred_mean, pred_var = mixture_moments(Q, test_means, test_vars)
    train_mean, train_var = mixture_moments(Q, train_means, train_vars)
    result = bound_result(best, fits, settings.outer_iter, (pred_mean, pred_var),
                          (train_mean, train_var))  # fmt: skip
    result.members["component"] = (test_means, test_vars)
    picked = rng.choice(len(Q), size=FUNCTION_SAMPLES, p=Q / Q.sum())
    draws = np.concatenate([family.sample(best.comp[m], 1, rng) for m in picked])
    result.function_samples = net.forward(draws, split.x_test)
    result.coords["group"] = np.array(objective.prior.group_names)
    mi = float(best.mi_trace[-1])
    result.traces.update(
        {
            "bound": (("iteration",), best.trace),
            "mutual_information_bound": (("iteration",), best.mi_trace),
            "mixing_weight": (("component",), Q),
            "component_bound": (("component",), component_bounds),
            "restart_single_bound": (("restart",), single_bounds),
            "alpha_mean": (("group",), best.hyper.alpha_mean),
        }
    )
    result.diagnostics.update(
        mutual_information=mi,
        mutual_information_limit=float(-np.sum(Q * best.log_Q)),
        log_components=float(np.log(settings.components)),
        single_component_bound=float(best.single_bound),
        best_component_bound=float(np.max(component_bounds)),
        beta_mean=float(best.hyper.beta_mean),
        noise_variance_mean=float(best.hyper.noise_variance_mean),
        outer_iterations=len(best.trace),
        n_weights=net.n_weights,
    )
    return result


VI_MIXTURE_TYPICAL = 0.033
"""Share of the bound a vi_mixture fit takes (``Work.typical``): 0.0068-0.0123 per cell on the
default sweep's toy and sunspots cells (M = 5), 0.0081 of their summed bounds (2026-11-25);
on 2026-11-27 the fit CPU of those cells was 54-79 s (toy) and 105 s (sunspots), 0.022-0.037
of their bounds (``python benchmarks/plan_vs_measured.py config/config.yaml results`` after
the default sweep): 0.033 prices them at 0.6-0.9 and 1.5 times that."""


def work(s: VIMixtureSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: the one-component restarts as ``vi_gauss`` diag, then every outer iteration
    runs the smoothing and the component L-BFGS to ``max_iter`` evaluations over all M
    components at once (``batch``); a bound far above a fit's evaluations, like vi_gauss's."""
    singles = s.restarts * s.outer_iter * s.max_iter
    mixture = s.outer_iter * 2 * s.max_iter
    held = s.components * n_weights * 4
    return Work(
        singles + mixture,
        batch=4 * s.components,
        floats_held=held,
        call_s=VI_CALL_S,
        typical=VI_MIXTURE_TYPICAL,
    )


register(
    Method(
        "vi_mixture",
        VIMixtureSettings,
        fit,
        ("hidden", "components"),
        "variational mixture of diagonal Gaussians with the mutual-information bound and Gamma "
        "hyper-posteriors; lower bound on ln p(D) (paper 000 sec. 3.3, thesis sec. 5.4.3)",
        work=work,
        imports=SCIPY,
    )
)
