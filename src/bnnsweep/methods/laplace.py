"""``laplace``: the evidence procedure with Occam-hill model evidence (paper 001 sec. 4,
thesis sec. 5.3.2).

Per restart: find the MAP weights by quasi-Newton at fixed (alpha, beta), re-estimate the
hyperparameters from the well-determined counts gamma_k, alternate until converged, then
evaluate the log evidence of the mode (paper 001 eq. 11 with ln h! + h ln 2). Distinct modes
are combined by log-sum-exp, as the paper sums the evidences of the distinct solutions found.
Predictions linearise the network at the mode: mean y(x; w*), variance 1/beta + g^T A^{-1} g
with the exact Hessian A.

The elements of the evidence framework are settings (defaults: today's procedure):
``hessian`` the A in -1/2 ln|A| of eq. 11 (``exact``, ``clipped``: negative data curvature
clipped at zero, ``gauss_newton``: beta J^T J + diag(alpha), MacKay 1992);
``gamma_hessian`` the A in gamma_k = W_k - alpha_k Tr_k(A^{-1}) of eq. 10, used in the
re-estimation and the evidence's width terms (default ``clipped``); ``evidence`` the
hyperpriors (``full``: Gamma hyperpriors in re-estimation and evidence; ``paper``: neglected,
flat in ln alpha, ln beta, footnote 1 and eq. 11); ``symmetry`` whether ln h! 2^h is added
(``factor``) or not (``none``); ``modes`` which converged restarts are summed (``distinct``:
one per symmetry class; ``all``: every restart, as the paper assumes each was found once).
A mode whose exact Hessian is not positive definite (not a minimum) is never counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..engines.evidence.laplace import (
    HESSIANS,
    HessianFactor,
    ModeHessians,
    distinct_modes,
    hyper_width_terms,
    log_evidence_fixed_hyper,
    reestimate,
    symmetry_log_factor,
    well_determined,
)
from ..engines.optimise import minimise_weights
from ..method_base import FUNCTION_SAMPLES, FitResult, check_choice, check_positive
from ..model_settings import ModelSettings
from ..models.objective import PenalisedError
from ..models.priors import check_prior_supported
from . import SCIPY, Method, Work, register


@dataclass(frozen=True)
class LaplaceSettings(ModelSettings):
    """Settings of the evidence procedure (defaults: thesis sec. 5.5.2)."""

    restarts: int = 10
    cycles: int = 30
    max_iter: int = 500
    tol: float = 1e-7
    hyper_tol: float = 1e-4
    alpha_init: float = 0.3
    beta_init: float = 200.0
    init_scale: float = 1.0
    evidence: str = "full"
    prediction: str = "best"
    mode_rtol: float = 1e-3
    newton_steps: int = 100
    hessian: str = "exact"
    gamma_hessian: str = "clipped"
    symmetry: str = "factor"
    modes: str = "distinct"

    def validate(self) -> None:
        super().validate()
        check_prior_supported("laplace", self.prior)
        for key in ("restarts", "cycles", "max_iter"):
            check_positive(key, getattr(self, key))
        for key in ("tol", "hyper_tol", "alpha_init", "beta_init", "init_scale", "mode_rtol"):
            check_positive(key, getattr(self, key))
        check_choice("evidence", self.evidence, ("full", "paper"))
        check_choice("prediction", self.prediction, ("best", "mixture"))
        check_choice("hessian", self.hessian, HESSIANS)
        check_choice("gamma_hessian", self.gamma_hessian, HESSIANS)
        check_choice("symmetry", self.symmetry, ("factor", "none"))
        check_choice("modes", self.modes, ("distinct", "all"))


@dataclass
class Mode:
    """One converged restart: weights, hyperparameters, Hessian and evidence."""

    w: np.ndarray
    alpha: np.ndarray
    beta: float
    gamma: np.ndarray
    factor: HessianFactor
    log_evidence: float
    converged: bool
    cycles: int
    n_evals: int
    n_negative_curvature: int = 0
    clipped_logdet_shift: float = 0.0
    logdets: dict[str, float] | None = None


def curvature_at(
    objective: PenalisedError, w: np.ndarray, alpha: np.ndarray, beta: float, gamma_hessian: str
) -> tuple[ModeHessians, np.ndarray]:
    """The Hessian variants at weights ``w`` and gamma from the ``gamma_hessian`` variant."""
    hessians = ModeHessians.at(objective, w, alpha, beta)
    gamma = well_determined(hessians.matrix(gamma_hessian), objective.prior, alpha)
    return hessians, gamma


def evidence_procedure(
    objective: PenalisedError, noise_prior, w0: np.ndarray, s: LaplaceSettings, log
) -> Mode:
    """Alternate MAP weights and hyperparameter re-estimation from one start (thesis 5.3.2)."""
    K = objective.prior.n_groups
    alpha, beta = np.full(K, s.alpha_init), float(s.beta_init)
    w, n_evals, converged, cycle = w0, 0, False, 0
    use_hyperprior = s.evidence == "full"
    for cycle in range(1, s.cycles + 1):
        found = minimise_weights(
            objective, w, alpha, beta, s.max_iter, s.tol, newton_polish=s.newton_steps
        )
        w, n_evals = found.w, n_evals + found.n_evals
        _, gamma = curvature_at(objective, w, alpha, beta, s.gamma_hessian)
        new_alpha, new_beta = reestimate(objective, w, gamma, noise_prior, use_hyperprior)
        change = max(
            float(np.max(np.abs(np.log(new_alpha / alpha)))), abs(float(np.log(new_beta / beta)))
        )
        alpha, beta = new_alpha, new_beta
        log(
            f"  cycle {cycle}: M={found.value:.6g} gamma={gamma.sum():.3f} beta={beta:.4g} d={change:.2e}"
        )
        if change < s.hyper_tol:
            converged = True
            break
    # the evidence is evaluated at the mode of the final hyperparameters
    found = minimise_weights(
        objective, w, alpha, beta, s.max_iter, s.tol, newton_polish=s.newton_steps
    )
    w, n_evals = found.w, n_evals + found.n_evals
    hessians, gamma = curvature_at(objective, w, alpha, beta, s.gamma_hessian)
    factor, curvature = hessians.exact, hessians.curvature
    logdets = {kind: hessians.logdet(kind) for kind in HESSIANS}
    if factor.positive_definite:
        net = objective.network
        symmetry = symmetry_log_factor(net.n_hidden, net.activation.odd)
        log_ev = (
            log_evidence_fixed_hyper(objective, w, logdets[s.hessian], alpha, beta)
            + (symmetry if s.symmetry == "factor" else 0.0)
            + hyper_width_terms(objective, alpha, beta, gamma, noise_prior, s.evidence)
        )
    else:
        log_ev = float("nan")
    return Mode(w, alpha, beta, gamma, factor, float(log_ev), converged, cycle, n_evals,
                curvature.n_negative, curvature.clipped_logdet_shift(factor), logdets)  # fmt: skip


def predict(objective: PenalisedError, mode: Mode, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Linearised predictive mean y(x; w*) and variance 1/beta + g^T A^{-1} g, shape (T, P)."""
    net = objective.network
    mean = net.forward(mode.w[None, :], x)[0]
    G = net.jacobian(mode.w[None, :], x)[0]  # (T, P, W)
    return mean, 1.0 / mode.beta + mode.factor.quad_diag(G)


def mixture_moments(weights, means, variances):
    """Mean and variance of a mixture with the given weights over its first axis."""
    weights = weights.reshape(-1, *([1] * (means.ndim - 1)))
    mean = np.sum(weights * means, axis=0)
    second = np.sum(weights * (variances + means**2), axis=0)
    return mean, np.maximum(second - mean**2, 0.0)


def fit(split: Split, settings: LaplaceSettings, rng: np.random.Generator, log=print) -> FitResult:
    from scipy.special import logsumexp

    objective, noise_prior = settings.build(split)
    net = objective.network
    starts = net.init_weights(rng, settings.restarts, settings.init_scale)
    modes = []
    for r, w0 in enumerate(starts):
        log(f"restart {r + 1}/{settings.restarts}")
        modes.append(evidence_procedure(objective, noise_prior, w0, settings, log))

    pd = np.array([m.factor.positive_definite for m in modes])
    if settings.modes == "distinct":
        distinct = distinct_modes(objective, [m.w for m in modes], settings.mode_rtol) & pd
    else:
        distinct = pd.copy()
    log_ev = np.array([m.log_evidence for m in modes])
    preds = [predict(objective, m, split.x_test) for m in modes]
    train = [predict(objective, m, split.x_train) for m in modes]
    member_mean = np.stack([p[0] for p in preds])
    member_var = np.stack([p[1] for p in preds])

    result = FitResult(
        pred_mean=np.full_like(member_mean[0], np.nan),
        pred_var=np.full_like(member_var[0], np.nan),
        log_evidence_kind="laplace",
        n_grad_evals=int(sum(m.n_evals for m in modes)),
    )
    if not pd.any():
        result.flag("not_converged", "the Hessian is not positive definite at any mode")
        result.pred_mean, result.pred_var = member_mean[0], member_var[0]
        result.train_mean, result.train_var = train[0]
    else:
        if not pd.all():
            bad = ", ".join(str(i) for i in np.flatnonzero(~pd))
            result.flag(
                "not_converged", f"Hessian not positive definite at restart(s) {bad}; excluded"
            )
        result.log_evidence = float(logsumexp(log_ev[distinct]))
        best = int(np.nanargmax(np.where(pd, log_ev, -np.inf)))
        draws = modes[best].factor.sample(modes[best].w, FUNCTION_SAMPLES, rng)
        result.function_samples = net.forward(draws, split.x_test)
        if settings.prediction == "best":
            result.pred_mean, result.pred_var = member_mean[best], member_var[best]
            result.train_mean, result.train_var = train[best]
        else:
            weights = np.exp(log_ev[distinct] - result.log_evidence)
            result.pred_mean, result.pred_var = mixture_moments(
                weights, member_mean[distinct], member_var[distinct]
            )
            result.train_mean, result.train_var = mixture_moments(
                weights,
                np.stack([t[0] for t in train])[distinct],
                np.stack([t[1] for t in train])[distinct],
            )
    if not all(m.converged for m in modes):
        n_bad = sum(not m.converged for m in modes)
        result.flag(
            "ok", f"{n_bad} restart(s) reached the cycle limit before the hyperparameters settled"
        )

    group_names = np.array(objective.prior.group_names)
    result.members["mode"] = (member_mean, member_var)
    result.coords["group"] = group_names
    result.traces.update(
        {
            "mode_log_evidence": (("mode",), log_ev),
            "mode_distinct": (("mode",), distinct.astype(np.int8)),
            "mode_positive_definite": (("mode",), pd.astype(np.int8)),
            "mode_converged": (("mode",), np.array([m.converged for m in modes], dtype=np.int8)),
            "mode_cycles": (("mode",), np.array([m.cycles for m in modes])),
            "mode_alpha": (("mode", "group"), np.stack([m.alpha for m in modes])),
            "mode_beta": (("mode",), np.array([m.beta for m in modes])),
            "mode_gamma": (("mode",), np.array([m.gamma.sum() for m in modes])),
            "mode_negative_curvature": (
                ("mode",),
                np.array([m.n_negative_curvature for m in modes]),
            ),
            "mode_clipped_logdet_shift": (
                ("mode",),
                np.array([m.clipped_logdet_shift for m in modes]),
            ),
            **{
                f"mode_logdet_{kind}": (("mode",), np.array([m.logdets[kind] for m in modes]))
                for kind in HESSIANS
            },
            "mode_penalised_error": (
                ("mode",),
                np.array([objective.value(m.w[None, :], m.alpha, m.beta)[0] for m in modes]),
            ),
        }
    )
    result.diagnostics.update(
        n_modes_distinct=int(distinct.sum()),
        n_modes_positive_definite=int(pd.sum()),
        symmetry_log_factor=symmetry_log_factor(net.n_hidden, net.activation.odd),
        n_weights=net.n_weights,
    )
    return result


LAPLACE_TYPICAL = 0.12
"""Share of the bound a laplace fit takes (``Work.typical``): each optimisation stops at its
tolerance long before ``max_iter``. 0.02-0.36 per cell on the default sweep's robot-arm,
toy and sunspots cells, 0.096 of their summed bounds (2026-11-25), rounded up."""
LAPLACE_CALL_S = 2e-4
"""Fixed cost of one gradient call of the evidence procedure (scipy's L-BFGS-B and the
numpy network in Python). With ``jobsize.CALL_S`` (20 us) and one pass per call the plan
was 0.09 of the measured fit CPU on the default sweep's toy cells and 0.40 on its robot-arm
cells; 200 us and ``LAPLACE_PASSES`` give 0.77 and 1.07 (2026-11-27, fit CPU time of every
cell, ``python benchmarks/plan_vs_measured.py config/config.yaml results`` after the
default sweep)."""
LAPLACE_PASSES = 4
"""Forward-pass equivalents of one call (``Work.batch``; the cost grows with N x W about four
times as fast as one pass: 0.47 ms a call at H = 8, 2.1 ms at H = 24 on the robot arm)."""


def work(s: LaplaceSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: every cycle of every restart runs to ``max_iter`` gradient calls, with a
    Hessian per cycle and Newton step, and holds the Jacobian and a Hessian."""
    hessians = s.restarts * (s.cycles + s.newton_steps)
    jacobian = n_train * n_out * n_weights + n_weights * n_weights
    return Work(
        s.restarts * s.cycles * s.max_iter,
        batch=LAPLACE_PASSES,
        hessians=hessians,
        floats_held=jacobian,
        call_s=LAPLACE_CALL_S,
        typical=LAPLACE_TYPICAL,
    )


register(
    Method(
        "laplace",
        LaplaceSettings,
        fit,
        ("hidden",),
        "evidence procedure: MAP + MacKay re-estimation, Laplace log evidence (paper 001 sec. 4)",
        work=work,
        imports=SCIPY,
    )
)
