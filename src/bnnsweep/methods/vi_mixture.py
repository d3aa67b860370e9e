"""``vi_mixture``: a mixture of M diagonal Gaussians for q(w) with Gamma hyper-posteriors
(paper 000 sec. 3.3 and appendices A-C; thesis sec. 5.4.3).

q(w) = sum_m Q(m) q(w | m). The entropy of the mixture is
H[q] = sum_m Q(m) H[q(w|m)] + I(m; w) (paper 000 eq. 23), and the mutual information is bounded
below with unnormalised Gaussian smoothing functions r(w | m) = exp(-1/2 (w - rbar_m)^T
Sigma_r,m^-1 (w - rbar_m)) (diagonal) and parameters lambda_m (eq. 25-26, A.3-A.10):

  I >= sum_m Q(m) <ln r_m>_m - sum_m Q(m) ln Q(m) - sum_{m,m'} Q(m) lambda_m' <r_m'>_m
       + sum_m Q(m) ln lambda_m + 1,

with <ln r_m>_m = -1/2 [tr(Sigma_q,m Sigma_r,m^-1) + Delta(m)] (A.8) and
<r_m'>_m = |I + Sigma_q,m Sigma_r,m'^-1|^-1/2 exp(-Delta(m, m') / 2) (A.5-A.7). The optimal
lambda_m = Q(m) / sum_m' Q(m') <r_m>_m' is substituted in closed form, which leaves

  I* = sum_m Q(m) [<ln r_m>_m - ln sum_m' Q(m') <r_m>_m'],

evaluated in the log domain. It never exceeds -sum Q ln Q <= ln M (A.13).

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

    method_name = "vi_mixture"

    def validate(self) -> None:
        super().validate()
        check_choice("mixing", self.mixing, ("fixed", "update"))
        check_positive("components", self.components)
        check_positive("smoothing_scale", self.smoothing_scale)
        check_positive("init_noise", self.init_noise, allow_zero=True)


def mutual_information_bound(log_Q, comp, smooth):
    """I* (module docstring) and its gradients with respect to the component parameters
    ``comp`` (M, 2W) = [means, ln sd] and the smoothing parameters ``smooth`` (M, 2W) =
    [rbar, ln sd_r] (paper 000 eq. 26 with lambda at its optimum; derivatives as appendix C)."""
    M, two_w = comp.shape
    W = two_w // 2
    Q = np.exp(log_Q)
    wbar, s2 = comp[:, :W], np.exp(2.0 * comp[:, W:])
    rbar, r2 = smooth[:, :W], np.exp(2.0 * smooth[:, W:])
    own = wbar - rbar
    t1 = -0.5 * np.sum((s2 + own * own) / r2, axis=1)  # <ln r_m>_m, (M,)
    d = wbar[:, None, :] - rbar[None, :, :]  # (a, b, W): component a against smoothing b
    tot = s2[:, None, :] + r2[None, :, :]
    log_R = -0.5 * np.sum(np.log(tot) - np.log(r2)[None] + d * d / tot, axis=2)  # ln <r_b>_a
    scores = log_Q[:, None] + log_R
    # ln sum_a Q(a) <r_b>_a, once: numpy's ufunc reduction (a few us on M x M) in place of
    # scipy.special's logsumexp and softmax (about 130 us a call in array-API dispatch, a
    # quarter of a vi_mixture fit, which evaluates this bound some 10^5 times)
    log_norm = np.logaddexp.reduce(scores, axis=0)
    value = float(np.sum(Q * (t1 - log_norm)))
    G = -Q[None, :] * np.exp(scores - log_norm)  # dI*/d ln R[a, b]
    g_wbar = -Q[:, None] * own / r2 - np.sum(G[..., None] * d / tot, axis=1)
    g_s2 = -0.5 * Q[:, None] / r2 - 0.5 * np.sum(
        G[..., None] * (1.0 / tot - d * d / tot**2), axis=1
    )
    g_rbar = Q[:, None] * own / r2 + np.sum(G[..., None] * d / tot, axis=0)
    g_r2 = 0.5 * Q[:, None] * (s2 + own * own) / r2**2 - 0.5 * np.sum(
        G[..., None] * (1.0 / tot - 1.0 / r2[None] - d * d / tot**2), axis=0
    )
    g_comp = np.concatenate([g_wbar, 2.0 * s2 * g_s2], axis=1)
    g_smooth = np.concatenate([g_rbar, 2.0 * r2 * g_r2], axis=1)
    extras = {"t1": t1, "log_R": log_R, "log_lambda": log_Q - log_norm}
    return value, g_comp, g_smooth, extras


@dataclass
class MixtureBound:
    """L = sum_m Q(m) L_m + I*, with L_m the single diagonal-Gaussian bound of component m
    (its KL terms counted once because sum Q = 1) (paper 000 eq. 29)."""

    gaussian: GaussianBound

    def components(self, comp, hyper):
        values, grads = zip(*(self.gaussian.value_and_grad(c, hyper) for c in comp), strict=True)
        return np.array(values), np.stack(grads)

    def value(self, log_Q, comp, smooth, hyper) -> float:
        values, _ = self.components(comp, hyper)
        return float(np.exp(log_Q) @ values + mutual_information_bound(log_Q, comp, smooth)[0])

    def _maximise(self, fun, x0, shape, max_iter, tol):
        from scipy.optimize import minimize

        count = [0]

        def neg(flat):
            count[0] += 1
            value, grad = fun(flat.reshape(shape))
            if not np.isfinite(value):
                return np.inf, np.zeros_like(flat)
            return -value, -grad.ravel()

        start = -neg(x0.ravel())[0]
        res = minimize(neg, x0.ravel(), jac=True, method="L-BFGS-B",
                       options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-9, "maxcor": 30})  # fmt: skip
        if not np.isfinite(res.fun) or -res.fun < start:
            return x0, count[0]
        return res.x.reshape(shape), count[0]

    def smoothing_step(self, log_Q, comp, smooth, max_iter, tol):
        """Optimise r(w | m) with lambda at its optimum: only I* depends on them."""

        def fun(sm):
            value, _, g_smooth, _ = mutual_information_bound(log_Q, comp, sm)
            return value, g_smooth

        return self._maximise(fun, smooth, smooth.shape, max_iter, tol)

    def component_step(self, log_Q, comp, smooth, hyper, max_iter, tol):
        Q = np.exp(log_Q)

        def fun(cm):
            values, grads = self.components(cm, hyper)
            mi, g_comp, _, _ = mutual_information_bound(log_Q, cm, smooth)
            return Q @ values + mi, Q[:, None] * grads + g_comp

        return self._maximise(fun, comp, comp.shape, max_iter, tol)

    def mixing_step(self, log_Q, comp, smooth, hyper):
        """Q(m) proportional to exp(A_m), A_m = L_m + <ln r_m>_m + ln lambda_m -
        sum_m' lambda_m' <r_m'>_m: the exact maximiser over Q at the current lambda."""
        from scipy.special import logsumexp

        values, _ = self.components(comp, hyper)
        _, _, _, ex = mutual_information_bound(log_Q, comp, smooth)
        overlap = np.exp(logsumexp(ex["log_lambda"][None, :] + ex["log_R"], axis=1))
        A = values + ex["t1"] + ex["log_lambda"] - overlap
        return A - logsumexp(A)


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


def fit_mixture(bound: MixtureBound, settings: VIMixtureSettings, single: GaussianFit, rng,
                log=print) -> MixtureFit:  # fmt: skip
    """The thesis schedule from a fitted one-component model ``single`` (left unchanged)."""
    gaussian = bound.gaussian
    M = settings.components
    hyper = copy.deepcopy(single.hyper)
    W = gaussian.family.n_weights
    mean, log_sd = single.theta[:W], single.theta[W:]
    noise = 1.0 + settings.init_noise * rng.standard_normal((M, W))
    comp = np.concatenate([mean * noise, np.broadcast_to(log_sd, (M, W))], axis=1)
    smooth = np.concatenate(
        [comp[:, :W], np.broadcast_to(log_sd + 0.5 * np.log(settings.smoothing_scale), (M, W))],
        axis=1,
    )
    log_Q = np.full(M, -np.log(M))
    n_evals, trace, mi_trace, converged = 0, [], [], False
    if M == 1:  # the mutual information of one component is zero: the bound is vi_gauss diag
        return MixtureFit(log_Q, single.theta[None, :], smooth, hyper, single.bound, single.trace,
                          np.zeros_like(single.trace), single.bound, single.converged, n_evals)  # fmt: skip
    for it in range(settings.outer_iter):
        smooth, evals = bound.smoothing_step(log_Q, comp, smooth, settings.max_iter, settings.tol)
        n_evals += evals
        comp, evals = bound.component_step(
            log_Q, comp, smooth, hyper, settings.max_iter, settings.tol
        )
        n_evals += evals
        if settings.mixing == "update":
            before = bound.value(log_Q, comp, smooth, hyper)
            new_log_Q = bound.mixing_step(log_Q, comp, smooth, hyper)
            if bound.value(new_log_Q, comp, smooth, hyper) >= before:
                log_Q = new_log_Q
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


VI_MIXTURE_TYPICAL = 0.01
"""Share of the bound a vi_mixture fit takes (``Work.typical``): 0.0068-0.0123 per cell on the
default sweep's toy and sunspots cells (M = 5), 0.0081 of their summed bounds (2026-11-25),
rounded up."""


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
