"""Quasi-Newton minimisation of the penalised error with its analytic gradient."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

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
    from scipy.optimize import minimize

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
        w, value, n_newton, newton_ok = newton_refine(objective, w, alpha, beta, newton_polish)
        count[0] += n_newton
        if newton_ok:
            success, message = True, "Newton refinement reached the gradient tolerance"
    return Minimum(w, value, count[0], success, message)


def newton_refine(
    objective: PenalisedError, w: np.ndarray, alpha, beta, max_steps: int, gtol: float = 1e-6
) -> tuple[np.ndarray, float, int, bool]:
    """Levenberg-Marquardt damped Newton steps with the exact Hessian: solve
    (A + mu I) p = -g by Cholesky, accept a step only if M decreases, and shrink mu after a
    success / grow it after a failure. Converged when max |g| < gtol (1 + |M|)."""
    value, grad = (a[0] for a in objective.value_and_grad(w[None, :], alpha, beta))
    mu, n_evals, eye = 1e-3, 1, np.eye(w.size)
    for _ in range(max_steps):
        if np.max(np.abs(grad)) < gtol * (1.0 + abs(value)):
            return w, float(value), n_evals, True
        A = objective.hessian(w[None, :], alpha, beta)[0]
        scale = max(1.0, float(np.max(np.abs(np.diag(A)))))
        while mu < 1e12:
            try:
                chol = np.linalg.cholesky(A + mu * scale * eye)
            except np.linalg.LinAlgError:
                mu *= 10.0
                continue
            step = -np.linalg.solve(chol.T, np.linalg.solve(chol, grad))
            new_value, new_grad = (
                a[0] for a in objective.value_and_grad((w + step)[None, :], alpha, beta)
            )
            n_evals += 1
            if np.isfinite(new_value) and new_value <= value:
                w, value, grad = w + step, new_value, new_grad
                mu = max(mu / 10.0, 1e-12)
                break
            mu *= 10.0
        else:
            break
    converged = bool(np.max(np.abs(grad)) < gtol * (1.0 + abs(value)))
    return w, float(value), n_evals, converged
