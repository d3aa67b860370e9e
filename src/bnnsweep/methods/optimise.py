"""Quasi-Newton minimisation of the penalised error with its analytic gradient."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from ..models.objective import PenalisedError


@dataclass
class Minimum:
    """Result of one minimisation: weights, value, evaluations, and whether it converged."""

    w: np.ndarray
    value: float
    n_evals: int
    converged: bool
    message: str


def minimise_weights(
    objective: PenalisedError,
    w0: np.ndarray,
    alpha: np.ndarray,
    beta: float,
    max_iter: int,
    tol: float,
    callback: Callable[[np.ndarray], None] | None = None,
    newton_polish: int = 0,
) -> Minimum:
    """Minimise M(w) at fixed (alpha, beta) by L-BFGS from ``w0`` (one weight vector).

    Stops when the relative change of M falls below ``tol`` or after ``max_iter`` iterations
    (thesis sec. 5.5.2 used 1e-7 and 500). With ``newton_polish > 0`` the L-BFGS answer is
    refined by up to that many trust-region Newton steps with the exact Hessian, so that the
    Laplace approximation is built at a stationary point rather than where L-BFGS gave up.
    """
    count = [0]

    def fun(w):
        count[0] += 1
        value, grad = objective.value_and_grad(w[None, :], alpha, beta)
        if not np.isfinite(value[0]):
            return np.inf, np.zeros_like(w)
        return float(value[0]), grad[0]

    res = minimize(
        fun,
        np.asarray(w0, dtype=float),
        jac=True,
        method="L-BFGS-B",
        callback=callback,
        options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-6, "maxcor": 20},
    )
    w, value, success, message = res.x, float(res.fun), bool(res.success), str(res.message)
    if newton_polish > 0 and np.isfinite(value):
        polished = minimize(
            fun,
            w,
            jac=True,
            hess=lambda v: objective.hessian(v[None, :], alpha, beta)[0],
            method="trust-exact",
            options={"maxiter": newton_polish, "gtol": 1e-6},
        )
        if np.isfinite(polished.fun) and polished.fun <= value:
            w, value = polished.x, float(polished.fun)
            success, message = bool(polished.success), str(polished.message)
    return Minimum(w, value, count[0], success, message)
