"""``posterior_slices``: the true log posterior of the weights beside its Laplace and
variational-mixture approximations along lines in weight space (thesis sec. 5.5.1, figs.
5.4-5.5).

The thesis's toy protocol, at fixed hyperparameters throughout: the evidence procedure
(``laplace``'s ``evidence_procedure`` from alpha_g = 0.1, beta = 50, ``cycles`` = 10 rounds of
at most 500 weight iterations and a hyperparameter update: "this process was repeated ten
times"; with ``restarts`` > 1 the mode of largest evidence) gives w*, alpha, beta and the exact
Hessian A of

    M(w) = beta E_D(w) + sum_k alpha_k E_Wk(w),   ln p(w | D, alpha, beta) = -M(w) + const;

a diagonal Gaussian starts at w* with variances ``init_var`` and is trained for ``vi_iter``
L-BFGS iterations at those alpha, beta (point-mass hyper-posteriors); a mixture of
``components`` copies of it (``init_noise``: 1 % of |mean|) is trained by ``sweeps`` rounds of
``sweep_iter`` iterations of the smoothing functions, then of the components, then the
fixed-point update of Q(m) (``engines.variational.mixture.mixture_sweep``).

Fig. 5.4 (traces ``laplace_slice_*``): along each eigenvector u_i of the Laplace covariance
A^-1 (largest variance lambda_i first), w = w* + t u_i for t in ``extent`` sqrt(lambda_i)
[-1, 1]: the true -(M(w) - M(w*)) and the Laplace approximation -t^2 / (2 lambda_i), both 0 at
the mode. Fig. 5.5 (``mixture_slice_*``): along the line through the means of each pair (i, j)
of components, w = m_i + s (m_j - m_i) for s in [-0.5, 1.5]: ln q(w) of the mixture and the
true -M(w) + c, with the one constant c that makes the two maxima over all lines equal (the
true posterior's normaliser is unknown). Diagnostics: the mutual-information lower bound I*
the mixture is trained with, its ceiling -sum Q ln Q (thesis: "an upper bound, calculated
using the minimum overlap assumption"; printed 1.5229 and 1.5614), and I(m; w) itself by
Monte Carlo, which lies between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

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
from ..method_base import FitResult, check_positive
from ..models.vi_family import GaussianFamily
from . import SCIPY, Method, Work, register
from .laplace import LaplaceSettings, evidence_procedure, mixture_moments
from .vi_gauss import VI_CALL_S, GaussianBound, predictive


@dataclass(frozen=True)
class PosteriorSlicesSettings(LaplaceSettings):
    """The evidence procedure's settings (``LaplaceSettings``; thesis sec. 5.5.1: five
    hidden units, grouped prior, alpha 0.1, beta 50, one start, ten cycles) and those of the
    fixed-hyperparameter diagonal and mixture fits and of the slices."""

    hidden: int = 5
    activation: str = "erf"
    restarts: int = 1
    cycles: int = 10
    alpha_init: float = 0.1
    beta_init: float = 50.0
    vi_iter: int = 500
    init_var: float = 1e-6
    components: int = 5
    sweeps: int = 10
    sweep_iter: int = 50
    init_noise: float = 0.01
    smoothing_scale: float = 10.0
    points: int = 61
    extent: float = 3.0
    mi_samples: int = 4000

    method_name = "posterior_slices"

    def validate(self) -> None:
        super().validate()
        if self.activation != "erf":
            raise ValueError(
                "method 'posterior_slices' needs activation 'erf' (the variational bound's "
                f"expectations are those of erf units), got {self.activation!r}"
            )
        for key in ("vi_iter", "init_var", "components", "sweeps", "sweep_iter",
                    "smoothing_scale", "points", "extent", "mi_samples"):  # fmt: skip
            check_positive(key, getattr(self, key))
        check_positive("init_noise", self.init_noise, allow_zero=True)


def laplace_slices(objective, w, alpha, beta, A, points: int, extent: float):
    """Along each eigenvector of A^-1, largest variance first: (variances (W,), offsets t
    (W, points), true -(M(w + t u) - M(w)) (W, points), Laplace -t^2 / (2 variance)); NaN
    rows for directions of negative curvature."""
    eigenvalues, vectors = np.linalg.eigh(A)  # ascending curvature: descending variance
    # a direction of negative curvature (a mode that is not a minimum) has no variance: NaN
    variances = np.where(eigenvalues > 0, 1.0 / np.where(eigenvalues > 0, eigenvalues, 1.0), np.nan)
    t = np.linspace(-extent, extent, points)[None, :] * np.sqrt(variances)[:, None]
    base = objective.value(w, alpha, beta)[0]
    true = np.stack(
        [
            base - objective.value(w[None, :] + t[i][:, None] * vectors[:, i], alpha, beta)
            for i in range(len(variances))
        ]
    )
    return variances, t, true, -0.5 * t * t / variances[:, None]


def mixture_log_density(w: np.ndarray, log_Q: np.ndarray, comp: np.ndarray) -> np.ndarray:
    """ln sum_m Q(m) N(w; wbar_m, diag s_m^2) at the rows of ``w`` (B, W)."""
    from scipy.special import logsumexp

    W = comp.shape[1] // 2
    wbar, log_sd = comp[:, :W], comp[:, W:]
    z = (w[:, None, :] - wbar[None]) / np.exp(log_sd)[None]
    per = -0.5 * np.sum(z * z, axis=2) - np.sum(log_sd, axis=1)[None] - 0.5 * W * np.log(2 * np.pi)
    return logsumexp(per + log_Q[None, :], axis=1)


def mixture_slices(objective, alpha, beta, log_Q, comp, points: int):
    """Along the line through each pair of component means: (pairs (P, 2), positions s
    (points,), ln q (P, points), the true -M + c (P, points))."""
    W = comp.shape[1] // 2
    pairs = np.array(list(combinations(range(comp.shape[0]), 2)), dtype=int).reshape(-1, 2)
    s = np.linspace(-0.5, 1.5, points)
    approx, true = [], []
    for i, j in pairs:
        line = comp[i, :W][None, :] + s[:, None] * (comp[j, :W] - comp[i, :W])[None, :]
        approx.append(mixture_log_density(line, log_Q, comp))
        true.append(-objective.value(line, alpha, beta))
    approx, true = np.array(approx).reshape(-1, points), np.array(true).reshape(-1, points)
    if len(pairs):
        true = true + (approx.max() - true.max())
    return pairs, s, approx, true


def mutual_information(log_Q: np.ndarray, comp: np.ndarray, n: int, rng) -> tuple[float, float]:
    """I(m; w) = sum_m Q(m) E_{q(w|m)}[ln q(w|m) - ln q(w)] by Monte Carlo, ``n`` draws per
    component: (estimate, standard error)."""
    W = comp.shape[1] // 2
    Q = np.exp(log_Q)
    terms = []
    for m in range(comp.shape[0]):
        draws = comp[m, :W] + np.exp(comp[m, W:]) * rng.standard_normal((n, W))
        own = mixture_log_density(draws, np.array([0.0]), comp[m : m + 1])
        terms.append(own - mixture_log_density(draws, log_Q, comp))
    terms = np.array(terms)  # (M, n)
    value = float(Q @ terms.mean(axis=1))
    se = float(np.sqrt(Q**2 @ (terms.var(axis=1, ddof=1) / n)))
    return value, se


def fit(split: Split, settings: PosteriorSlicesSettings, rng: np.random.Generator,
        log=print) -> FitResult:  # fmt: skip
    s = settings
    objective, noise_prior = s.build(split)
    net = objective.network
    modes = []
    for r, w0 in enumerate(net.init_weights(rng, s.restarts, s.init_scale)):
        log(f"evidence procedure, restart {r + 1}/{s.restarts}")
        modes.append(evidence_procedure(objective, noise_prior, w0, s, log))
    usable = [m for m in modes if m.factor.positive_definite and np.isfinite(m.log_evidence)]
    result_status = None
    if not usable:
        usable, result_status = modes, "the Hessian is not positive definite at any mode"
    mode = max(usable, key=lambda m: m.log_evidence if np.isfinite(m.log_evidence) else -np.inf)
    alpha, beta = mode.alpha, float(mode.beta)
    A = objective.hessian(mode.w[None, :], alpha, beta)[0]

    family = GaussianFamily("diag", net.n_weights)
    gaussian = GaussianBound(objective, family)
    hyper = HyperPosterior.point_mass(
        objective.prior, noise_prior, objective.n_targets, alpha, beta
    )
    theta, diag_bound, n_evals, _ = gaussian.maximise(
        family.pack(mode.w, np.sqrt(s.init_var)), hyper, s.vi_iter, s.tol
    )
    W = net.n_weights
    bound = MixtureBound(gaussian)
    comp = initial_components(theta[:W], theta[W:], s.components, s.init_noise, rng)
    smooth = initial_smoothing(comp, s.smoothing_scale)
    log_Q = np.full(s.components, -np.log(s.components))
    trace = []
    for sweep in range(s.sweeps):
        log_Q, comp, smooth, evals = mixture_sweep(
            bound, log_Q, comp, smooth, hyper, s.sweep_iter, s.tol, s.components > 1
        )
        n_evals += evals
        trace.append(bound.value(log_Q, comp, smooth, hyper))
        log(f"  mixture sweep {sweep + 1}: bound={trace[-1]:.6f}")
    mi_bound = mutual_information_bound(log_Q, comp, smooth)[0]
    mi, mi_se = mutual_information(log_Q, comp, s.mi_samples, rng)

    variances, offsets, lap_true, lap_approx = laplace_slices(
        objective, mode.w, alpha, beta, A, s.points, s.extent
    )
    pairs, position, mix_approx, mix_true = mixture_slices(
        objective, alpha, beta, log_Q, comp, s.points
    )
    Q = np.exp(log_Q)

    def predictions(x):
        parts = [predictive(objective, family, c, hyper, x) for c in comp]
        return mixture_moments(Q, np.stack([p[0] for p in parts]), np.stack([p[1] for p in parts]))

    result = FitResult(
        *predictions(split.x_test),
        *predictions(split.x_train),
        log_evidence=float(trace[-1]) if trace else float(diag_bound),
        log_evidence_kind="lower_bound",
        n_grad_evals=int(sum(m.n_evals for m in modes) + n_evals),
    )
    if result_status:
        result.flag("not_converged", result_status)
    result.coords["slice_pair_member"] = np.array(["first", "second"])
    result.traces.update(
        {
            "laplace_slice_variance": (("slice_direction",), variances),
            "laplace_slice_offset": (("slice_direction", "slice_point"), offsets),
            "laplace_slice_true": (("slice_direction", "slice_point"), lap_true),
            "laplace_slice_approx": (("slice_direction", "slice_point"), lap_approx),
            "mixture_slice_pair": (("slice_pair", "slice_pair_member"), pairs),
            "mixture_slice_position": (("slice_point",), position),
            "mixture_slice_true": (("slice_pair", "slice_point"), mix_true),
            "mixture_slice_approx": (("slice_pair", "slice_point"), mix_approx),
            "mixing_weight": (("component",), Q),
            "bound": (("iteration",), np.array(trace)),
        }
    )
    result.diagnostics.update(
        mutual_information_bound=float(mi_bound),
        mutual_information_limit=float(-np.sum(Q * log_Q)),
        mutual_information_mc=mi,
        mutual_information_mc_se=mi_se,
        diagonal_bound=float(diag_bound),
        laplace_log_evidence=float(mode.log_evidence),
        beta_mean=beta,
        n_weights=W,
    )
    return result


POSTERIOR_SLICES_TYPICAL = 0.8
"""Share of the bound a fit takes (``Work.typical``): the defaults on toy_sine_gap, seed 0,
17 s of fit CPU against a bound of 22 s (2026-11-27, loaded machine)."""


def work(s: PosteriorSlicesSettings, n_train: int, n_test: int, n_out: int,
         n_weights: int) -> Work:  # fmt: skip
    """Cost model: the evidence procedure's restarts (cycles of ``max_iter`` weight
    iterations), the diagonal fit, ``sweeps`` of two mixture steps of ``sweep_iter``, and the
    slices' and Monte Carlo's network passes."""
    evidence = s.restarts * (s.cycles + 1) * s.max_iter
    variational = s.vi_iter + s.sweeps * 2 * s.sweep_iter * s.components
    passes = (n_weights + s.components**2) * s.points / 50 + s.components * s.mi_samples / 1e3
    return Work(
        evidence + variational + passes,
        hessians=s.restarts * (s.cycles + 1) + 1,
        floats_held=(n_weights + s.components**2) * s.points * 4,
        call_s=VI_CALL_S,
        typical=POSTERIOR_SLICES_TYPICAL,
    )


register(
    Method(
        "posterior_slices",
        PosteriorSlicesSettings,
        fit,
        ("hidden",),
        "the true log posterior beside its Laplace and variational-mixture approximations "
        "along eigenvectors and between component means (thesis figs. 5.4-5.5)",
        work=work,
        imports=SCIPY,
    )
)
