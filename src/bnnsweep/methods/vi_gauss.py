"""``vi_gauss``: ensemble learning with a Gaussian q(w) and Gamma hyper-posteriors (paper 002;
paper 000 sec. 3 and appendix B; Hinton & van Camp for the diagonal case).

The lower bound on ln p(D) for q(w) q(alpha) q(beta) (paper 000 eq. B.1, thesis eq. 6.37),

  L = E ln p(D | w, beta) + E ln p(w | alpha) - KL(q(alpha) || p) - KL(q(beta) || p) + H[q(w)],

is maximised by alternating (i) L-BFGS over the parameters of q(w) (mean and a ``diag``,
``full`` or ``fa`` covariance; analytic gradients from ``models/erf_expectations.py``) at fixed
q(alpha), q(beta), and (ii) the closed-form Gamma updates of ``hyperposterior.py``. Each step
cannot lower L, so the recorded trace of L per outer iteration is non-decreasing. The bound is
exact for the erf unit g(a) = erf(a / sqrt 2) (and for ``linear``, which makes a hidden=0
network Bayesian linear regression); other activations are refused.

Predictions: mean <f(x)> and variance Var_q f(x) + E_q[1 / beta] in closed form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..engines.variational.hyperposterior import HyperPosterior
from ..engines.variational.nrd_structure import Candidate, remove_node
from ..method_base import FUNCTION_SAMPLES, FitResult, check_choice, check_positive
from ..model_settings import ModelSettings
from ..models.erf_expectations import SUPPORTED_ACTIVATIONS, expected_data_error, output_moments
from ..models.objective import PenalisedError
from ..models.vi_family import COVARIANCES, GaussianFamily
from . import SCIPY, Method, Work, register


@dataclass(frozen=True)
class VariationalSettings(ModelSettings):
    """Settings shared by the variational methods (defaults: thesis sec. 5.5.2)."""

    activation: str = "erf"
    g2: str = "exact"
    hyper: str = "gamma"
    restarts: int = 5
    outer_iter: int = 200
    max_iter: int = 500
    tol: float = 1e-10
    outer_tol: float = 1e-7
    alpha_init: float = 0.3
    beta_init: float = 200.0
    init_scale: float = 1.0
    init_sd: float = 0.01

    method_name = "vi_gauss"  # class attribute (not a setting): names the method in errors

    def covariance_kind(self) -> str:
        return "diag"

    def validate(self) -> None:
        """The bound is closed-form for the erf unit (and the identity); the paper's g^2
        approximation exists for a diagonal covariance only."""
        super().validate()
        if self.activation not in SUPPORTED_ACTIVATIONS:
            raise ValueError(
                f"method {self.method_name!r} needs activation 'erf' (the bound's expectations "
                f"are closed-form for g(a) = erf(a / sqrt 2)) or 'linear'; got {self.activation!r}"
            )
        check_choice("g2", self.g2, ("exact", "approx"))
        if self.g2 == "approx" and self.covariance_kind() != "diag":
            raise ValueError("setting 'g2: approx' (paper 000 eq. B.18) needs covariance 'diag'")
        check_choice("hyper", self.hyper, ("gamma", "fixed"))
        for key in ("restarts", "outer_iter", "max_iter"):
            check_positive(key, getattr(self, key))
        for key in ("tol", "outer_tol", "alpha_init", "beta_init", "init_scale", "init_sd"):
            check_positive(key, getattr(self, key))


@dataclass(frozen=True)
class VIGaussSettings(VariationalSettings):
    """Settings of the Gaussian variational method."""

    covariance: str = "diag"
    factors: int = 1
    structure: str = "fixed"
    init_from_diag: bool = True

    def covariance_kind(self) -> str:
        return self.covariance

    def validate(self) -> None:
        check_choice("covariance", self.covariance, COVARIANCES)
        super().validate()
        check_positive("factors", self.factors)
        check_choice("structure", self.structure, ("fixed", "nrd"))
        if self.structure == "nrd" and (
            self.prior != "nrd"
            or self.covariance != "diag"
            or self.hyper != "gamma"
            or self.hidden < 1
        ):
            raise ValueError(
                "setting 'structure: nrd' (thesis sec. 6.5.9) needs prior 'nrd', covariance "
                "'diag', hyper 'gamma' and hidden >= 1"
            )


@dataclass
class GaussianBound:
    """The lower bound as a function of the packed q(w) parameters at fixed q(alpha), q(beta)."""

    objective: PenalisedError
    family: GaussianFamily
    g2: str = "exact"

    def statistics(self, theta: np.ndarray):
        """(<E_D>, its gradients wrt mean and covariance, sum of <w_k^2>, mean, cov)."""
        mean, cov = self.family.mean_cov(theta)
        obj = self.objective
        e_d, g_mean, g_cov = expected_data_error(obj.network, mean, cov, obj.x, obj.t, self.g2)
        var = cov if cov.ndim == 1 else np.diag(cov)
        return e_d, g_mean, g_cov, mean * mean + var, mean, cov

    def value_and_grad(self, theta: np.ndarray, hyper: HyperPosterior) -> tuple[float, np.ndarray]:
        """L(theta) (every term, KL included) and dL/dtheta."""
        e_d, g_mean, g_cov, second, mean, cov = self.statistics(theta)
        entropy, g_entropy = self.family.entropy(theta)
        value = hyper.bound(e_d, second, entropy)
        alpha_w, beta = hyper.weight_precision(), hyper.beta_mean
        d_mean = -beta * g_mean - alpha_w * mean
        d_cov = -beta * g_cov
        if cov.ndim == 1:
            d_cov = d_cov - 0.5 * alpha_w
        else:
            d_cov[np.diag_indices_from(d_cov)] -= 0.5 * alpha_w
        return value, self.family.pullback(theta, d_mean, d_cov) + g_entropy

    def maximise(self, theta, hyper, max_iter: int, tol: float):
        """L-BFGS on -L over theta; returns (theta, bound, evaluations, message). The start is
        kept if the optimiser ends anywhere worse, so the bound cannot fall."""
        from scipy.optimize import minimize

        count = [0]

        def fun(th):
            count[0] += 1
            value, grad = self.value_and_grad(th, hyper)
            if not np.isfinite(value):
                return np.inf, np.zeros_like(th)
            return -value, -grad

        start = -fun(theta)[0]
        res = minimize(fun, theta, jac=True, method="L-BFGS-B",
                       options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-9, "maxcor": 30})  # fmt: skip
        if not np.isfinite(res.fun) or -res.fun < start:
            return theta, start, count[0], "optimiser did not improve the bound"
        return res.x, float(-res.fun), count[0], str(res.message)


@dataclass
class GaussianFit:
    theta: np.ndarray
    hyper: HyperPosterior
    bound: float
    trace: np.ndarray
    converged: bool
    n_evals: int
    problem: GaussianBound | None = None  # the (possibly reduced) problem the fit belongs to
    inputs: np.ndarray | None = None  # input columns it uses
    start_bound: float = float("nan")  # bound of the diagonal fit a full/fa fit started from


def bound_settled(trace: list[float], outer_tol: float) -> bool:
    """True when the last outer iteration changed the bound by less than outer_tol (1 + |L|)."""
    return len(trace) > 1 and abs(trace[-1] - trace[-2]) < outer_tol * (1.0 + abs(trace[-1]))


def fit_gaussian(bound: GaussianBound, theta: np.ndarray, hyper: HyperPosterior, outer_iter: int,
                 max_iter: int, tol: float, log=print, outer_tol: float | None = None,
                 ) -> GaussianFit:  # fmt: skip
    """Alternate the q(w) optimisation (L-BFGS, relative tolerance ``tol`` on the bound) with
    the Gamma updates until the bound changes by less than ``outer_tol`` (1 + |L|) (default
    ``tol``) in one outer iteration (paper 002 sec. 2.1; thesis sec. 5.4)."""
    outer_tol = tol if outer_tol is None else outer_tol
    trace, n_evals, converged = [], 0, False
    for it in range(outer_iter):
        theta, _, evals, message = bound.maximise(theta, hyper, max_iter, tol)
        n_evals += evals
        e_d, _, _, second, _, _ = bound.statistics(theta)
        hyper.update_alpha(second)
        hyper.update_beta(e_d)
        value = hyper.bound(e_d, second, bound.family.entropy(theta)[0])
        trace.append(value)
        log(f"  outer {it + 1}: bound={value:.6f} beta={hyper.beta_mean:.4g} ({message})")
        if hyper.fixed or bound_settled(trace, outer_tol):
            converged = True  # with fixed hyperparameters one q(w) optimisation is the fit
            break
    return GaussianFit(theta, hyper, trace[-1], np.array(trace), converged, n_evals)


def learn_structure(bound: GaussianBound, theta, hyper: HyperPosterior, settings, x: np.ndarray,
                    log=print) -> GaussianFit:  # fmt: skip
    """NRD structure learning (thesis sec. 6.5.9): after each outer iteration try to remove
    the hidden, then the input node of fewest effective parameters, keeping a removal only if
    the bound rises (``nrd_structure.py``)."""
    cand = Candidate(bound.objective, bound.family, theta, hyper, np.arange(x.shape[1]))

    def make(c):
        return GaussianBound(c.objective, c.family, bound.g2)

    trace, n_evals, converged = [], 0, False
    for _ in range(settings.outer_iter):
        step = fit_gaussian(make(cand), cand.theta, cand.hyper, 1, settings.max_iter,
                            settings.tol, log)  # fmt: skip
        cand.theta, value, n_evals = step.theta, step.bound, n_evals + step.n_evals
        removed = False
        for layer in ("hidden", "input"):
            smaller = remove_node(cand, layer, x, make)
            if smaller is not None and (new_value := smaller.bound(make(smaller))) > value:
                cand, value, removed = smaller, new_value, True
                net = cand.objective.network
                log(
                    f"  removed a {layer} node: {net.n_inputs}x{net.n_hidden}x{net.n_outputs}, bound={value:.6f}"
                )
        trace.append(value)
        if not removed and bound_settled(trace, settings.outer_tol):
            converged = True
            break
    return GaussianFit(cand.theta, cand.hyper, trace[-1], np.array(trace), converged, n_evals,
                       make(cand), cand.inputs)  # fmt: skip


def start_from_diagonal(objective, family: GaussianFamily, w0, hyper, settings, rng, log):
    """Fit a diagonal q(w) first and start the full/fa fit at it (L = diag(s); fa: d = s and
    factors 1e-3 s times standard normals, since U = 0 is a stationary point in U). Returns
    the starting parameters and the diagonal bound; ``hyper`` is updated in place."""
    W = family.n_weights
    diag = GaussianFamily("diag", W)
    found = fit_gaussian(GaussianBound(objective, diag, settings.g2), diag.pack(w0, settings.init_sd),
                         hyper, settings.outer_iter, settings.max_iter, settings.tol, log,
                         settings.outer_tol)  # fmt: skip
    mean, sd = found.theta[:W], np.exp(found.theta[W:])
    theta = family.pack(mean, sd)
    if family.kind == "fa":
        theta[2 * W :] = (1e-3 * sd[:, None] * rng.standard_normal((W, family.factors))).ravel()
    return theta, found.bound


def initial_hyper(settings, objective: PenalisedError, noise_prior) -> HyperPosterior:
    """q(alpha), q(beta) at alpha_init, beta_init (Gamma mode) or point masses there (fixed)."""
    prior, n = objective.prior, objective.n_targets
    if settings.hyper == "fixed":
        return HyperPosterior.point_mass(
            prior, noise_prior, n, settings.alpha_init, settings.beta_init
        )
    hyper = HyperPosterior.initial(prior, noise_prior, n)
    hyper.alpha_rate = hyper.alpha_shape / settings.alpha_init
    hyper.beta_rate = hyper.beta_shape / settings.beta_init
    return hyper


def predictive(objective: PenalisedError, family: GaussianFamily, theta, hyper, x, g2="exact"):
    """Mean <f(x)> and variance Var_q f(x) + E_q[1/beta], each (T, P)."""
    mean, cov = family.mean_cov(theta)
    first, second = output_moments(objective.network, mean, cov, x, g2=g2)
    return first, np.maximum(second - first * first, 0.0) + hyper.noise_variance_mean


def bound_result(best, fits, outer_iter: int, test, train) -> FitResult:
    """The FitResult of a variational fit: predictions (mean, variance) on test and train
    points, the bound as ``log_evidence`` of kind ``lower_bound``, and its status: not
    converged when the outer loop hit ``outer_iter``, diverged when the bound is not finite."""
    result = FitResult(
        pred_mean=test[0],
        pred_var=test[1],
        train_mean=train[0],
        train_var=train[1],
        log_evidence=float(best.bound),
        log_evidence_kind="lower_bound",
        n_grad_evals=int(sum(f.n_evals for f in fits)),
    )
    if not best.converged:
        result.flag("not_converged", f"the bound still changed after {outer_iter} outer iterations")
    if not np.isfinite(best.bound):
        result.flag("diverged", "the lower bound is not finite")
    return result


def fit(split: Split, settings: VIGaussSettings, rng: np.random.Generator, log=print) -> FitResult:
    objective, noise_prior = settings.build(split)
    net = objective.network
    family = GaussianFamily(settings.covariance, net.n_weights, settings.factors)
    bound = GaussianBound(objective, family, settings.g2)
    fits = []
    # every restart's start first, so that restart r starts where restart r of any other
    # covariance (and of laplace) does: the cell's stream is shared (sweep.Cell.rng)
    starts = net.init_weights(rng, settings.restarts, settings.init_scale)
    for r, w0 in enumerate(starts):
        log(f"restart {r + 1}/{settings.restarts}")
        hyper = initial_hyper(settings, objective, noise_prior)
        theta0, start_bound = family.pack(w0, settings.init_sd, rng, settings.init_sd), np.nan
        if settings.covariance != "diag" and settings.init_from_diag:
            theta0, start_bound = start_from_diagonal(
                objective, family, w0, hyper, settings, rng, log
            )
        if settings.structure == "nrd":
            found = learn_structure(bound, theta0, hyper, settings, split.x_train, log)
        else:
            found = fit_gaussian(bound, theta0, hyper, settings.outer_iter, settings.max_iter,
                                 settings.tol, log, settings.outer_tol)  # fmt: skip
            found.problem, found.inputs = bound, np.arange(split.n_inputs)
        found.start_bound = start_bound
        fits.append(found)
    bounds = np.array([f.bound for f in fits])
    best = fits[int(np.nanargmax(bounds))]
    objective, family, bound = best.problem.objective, best.problem.family, best.problem
    net = objective.network
    pred_mean, pred_var = predictive(
        objective, family, best.theta, best.hyper, split.x_test[:, best.inputs], settings.g2
    )
    train_mean, train_var = predictive(
        objective, family, best.theta, best.hyper, split.x_train[:, best.inputs], settings.g2
    )
    result = bound_result(best, fits, settings.outer_iter, (pred_mean, pred_var),
                          (train_mean, train_var))  # fmt: skip
    draws = family.sample(best.theta, FUNCTION_SAMPLES, rng)
    result.function_samples = net.forward(draws, split.x_test[:, best.inputs])
    longest = max(len(f.trace) for f in fits)
    padded = np.full((len(fits), longest), np.nan)
    for r, f in enumerate(fits):
        padded[r, : len(f.trace)] = f.trace
    result.coords["group"] = np.array(objective.prior.group_names)
    result.traces.update(
        {
            "bound": (("iteration",), best.trace),
            "restart_bound": (("restart", "restart_iteration"), padded),
            "alpha_mean": (("group",), best.hyper.alpha_mean),
            "retained_input": (("retained_input",), best.inputs),
            "restart_converged": (
                ("restart",),
                np.array([f.converged for f in fits], dtype=np.int8),
            ),
        }
    )
    mean, _ = family.mean_cov(best.theta)
    result.diagnostics.update(
        beta_mean=float(best.hyper.beta_mean),
        noise_variance_mean=float(best.hyper.noise_variance_mean),
        outer_iterations=len(best.trace),
        n_weights=net.n_weights,
        structure=f"{net.n_inputs}x{net.n_hidden}x{net.n_outputs}",
        retained_hidden=net.n_hidden,
        n_variational_params=family.n_params,
        diagonal_start_bound=float(best.start_bound),
        entropy=float(family.entropy(best.theta)[0]),
        expected_data_error=float(bound.statistics(best.theta)[0]),
        weight_norm=float(np.linalg.norm(mean)),
    )
    return result


VI_CALL_S = 2e-3
"""Fixed cost of one evaluation of the bound and its gradient: numpy arithmetic of the erf
expectations and the covariance pullback in Python, 0.4-1.2 ms measured on the default
sweep (toy N = 30, W = 10-16; sunspots N = 209, W = 113), doubled to bound it."""
FA_TYPICAL = 0.0065
"""Share of the bound a factor-analysis fit takes (one factor; priced per weight,
``covariance_batch``): 0.0076 on Boston housing with 128 training cases (H = 4, W = 61,
config/variational.yaml boston_ensemble, fit CPU 53.7 s; the plan said 9.6 s), 0.0055 on
the noisy sine (H = 3, 11.3 s); 2026-11-27, ``python benchmarks/plan_vs_measured.py CONFIG
--fit 1 --only LABEL``. This prices them at 0.86 and 1.18 times their fit CPU."""
FULL_TYPICAL = 0.015
"""Share of the bound a full-covariance fit takes: 3.3 and 4.3 times the diagonal share
(fit CPU 92.5 s on Boston housing with 128 training cases, H = 4, W = 61; 35.0 s on the
noisy sine, H = 3; 2026-11-27, ``python benchmarks/plan_vs_measured.py CONFIG --fit 1`` on
a config of those two cells): this prices them at 1.15 and 0.87 times their fit CPU."""
VI_GAUSS_TYPICAL = {"diag": 0.0045, "fa": FA_TYPICAL, "full": FULL_TYPICAL}
"""Share of the bound a vi_gauss fit takes (``Work.typical``), per covariance family; fa and
full: ``FA_TYPICAL``, ``FULL_TYPICAL`` (with the diagonal share, calibrated on diagonal
cells only, the plan priced a factor-analysis cell about 9 times low: issue 35).

diag, with ``DIAG_PASSES``: fitted to the fit CPU of three diagonal cells (2026-11-27): the
noisy sine (N = 30, W = 10-16: 3.4-6.7 s), Boston housing with 128 training cases and
paper 002's broad hyperpriors (N = 128, W = 61: 29.5 s) and sunspots (N = 209, W = 113:
46.0 s), priced at 1.1, 0.8 and 1.4 times that. With 4 passes and a share of 0.004 (fitted
to the toy cells alone, 2026-11-25) the plan was 0.6-1.2 of the toy cells' CPU, 0.16 of
Boston's and 0.13 of sunspots'. Measured with ``python benchmarks/plan_vs_measured.py
config/config.yaml results`` after the default sweep and ``... config/variational.yaml
--fit 1 --only vi_diag``."""
CALIBRATED_OUTER_ITER = 200
"""``outer_iter`` of the cells ``VI_GAUSS_TYPICAL`` was measured on (the default)."""
TYPICAL_OUTER = 25
"""Outer iterations a fit typically makes before its bound settles (9-17 on the noisy sine,
47 on Boston housing with paper 002's broad hyperpriors, 2026-11-27): the shares above are
per ``CALIBRATED_OUTER_ITER`` and scale to other ``outer_iter`` through it
(``typical_share``)."""
DIAG_PASSES = 110
"""Forward-pass equivalents priced per evaluation of a diagonal fit: an empirical factor
(with ``VI_GAUSS_TYPICAL['diag']``; not a count of passes) for fits whose evaluations grow
with N x W, fitted to the cells above."""


def covariance_batch(s: VariationalSettings, n_weights: int) -> int:
    """Forward-pass equivalents of one evaluation: a diagonal covariance ``DIAG_PASSES``, a
    full or factor-analysis one a pass per weight (N x W^2: the expectations read C as a
    W x W matrix for both, models/vi_family.py; priced at one pass per factor, a
    factor-analysis cell of W = 61 came out about 9 times low)."""
    if s.covariance_kind() in ("full", "fa"):
        return 4 + n_weights
    return DIAG_PASSES


def typical_share(s: VariationalSettings) -> float:
    """The share of the bound a fit takes (``Work.typical``): ``VI_GAUSS_TYPICAL`` of its
    covariance family, measured at ``CALIBRATED_OUTER_ITER`` outer iterations, as a share
    per outer iteration made (``TYPICAL_OUTER`` of them), times the outer iterations this
    fit makes: at most ``TYPICAL_OUTER``, except in NRD structure learning, which runs every
    one of its ``outer_iter`` unless no node is removed and the bound settles. With the
    share unscaled, an NRD cell of ``outer_iter: 20`` (config/variational.yaml, sunspots,
    H = 8) was priced at 6.3 s for 37.7 s of fit CPU (2026-11-27, ``python
    benchmarks/plan_vs_measured.py config/variational.yaml --fit 2 --only vi_nrd``)."""
    per_outer = VI_GAUSS_TYPICAL[s.covariance_kind()] * CALIBRATED_OUTER_ITER / TYPICAL_OUTER
    nrd = getattr(s, "structure", "none") == "nrd"
    outer = s.outer_iter if nrd else min(s.outer_iter, TYPICAL_OUTER)
    return min(1.0, per_outer * outer / s.outer_iter)


def work(s: VIGaussSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: every outer iteration of every restart runs its L-BFGS to ``max_iter``
    evaluations (twice where a full or factor-analysis fit starts from a diagonal one); a
    bound about a hundred times the evaluations a fit makes (L-BFGS stops at ``tol``), by a
    factor that depends on the covariance family and the outer iterations
    (``typical_share``)."""
    calls = s.restarts * s.outer_iter * s.max_iter
    if s.covariance != "diag" and s.init_from_diag:
        calls *= 2
    held = n_weights * n_weights if s.covariance == "full" else n_weights * (s.factors + 2)
    return Work(
        calls,
        batch=covariance_batch(s, n_weights),
        floats_held=held,
        call_s=VI_CALL_S,
        typical=typical_share(s),
    )


register(
    Method(
        "vi_gauss",
        VIGaussSettings,
        fit,
        ("hidden",),
        "variational Gaussian q(w) (diag, full or factor-analysis covariance) with Gamma "
        "hyper-posteriors; lower bound on ln p(D) (papers 000, 002)",
        work=work,
        imports=SCIPY,
    )
)
