"""The mixture-of-diagonal-Gaussians part of the variational bound (paper 000 sec. 3.3 and
appendices A-C; thesis sec. 5.4.3), for any component bound: a network's Gaussian bound
(``methods/vi_mixture.py``) or a Gaussian target's (``gaussian_target.py``, thesis fig. 5.6).

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

A component bound is any object with ``value_and_grad(theta, hyper) -> (L_m, dL_m/dtheta)`` over
theta = [means, ln sd] of one diagonal component; ``hyper`` is passed through untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


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
    (its KL terms counted once because sum Q = 1) (paper 000 eq. 29); ``gaussian`` is the
    component bound (module docstring)."""

    gaussian: Any

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


def initial_components(mean, log_sd, components: int, init_noise: float, rng,
                       noise_scale: str = "mean"):  # fmt: skip
    """M copies of one diagonal Gaussian (mean, ln sd), (M, 2W), with Gaussian noise on the
    means: mean (1 + init_noise z) (``noise_scale`` 'mean', thesis sec. 5.5.1: an s.d. of 1 %
    of the absolute value of the mean) or mean + init_noise sd z ('sd', for a start whose
    mean is exactly zero, where the relative noise would leave every copy on top of the
    others: the symmetric point the bound's gradient cannot leave)."""
    M, W = components, mean.shape[0]
    z = rng.standard_normal((M, W))
    if noise_scale == "mean":
        means = mean * (1.0 + init_noise * z)
    else:
        means = mean + init_noise * np.exp(log_sd) * z
    return np.concatenate([means, np.broadcast_to(log_sd, (M, W))], axis=1)


def initial_smoothing(comp, smoothing_scale: float):
    """r(w | m) centred on each component with ``smoothing_scale`` times its variances."""
    W = comp.shape[1] // 2
    return np.concatenate([comp[:, :W], comp[:, W:] + 0.5 * np.log(smoothing_scale)], axis=1)


def mixture_sweep(bound: MixtureBound, log_Q, comp, smooth, hyper, max_iter: int, tol: float,
                  update_mixing: bool):  # fmt: skip
    """One outer iteration of the thesis schedule over q(w) (sec. 5.5.1-5.5.2): optimise the
    smoothing functions (lambda at its optimum), then the components, then (``update_mixing``)
    Q(m) by its fixed point, kept only if the bound does not fall. Returns (log_Q, comp,
    smooth, evaluations)."""
    smooth, evals_smooth = bound.smoothing_step(log_Q, comp, smooth, max_iter, tol)
    comp, evals_comp = bound.component_step(log_Q, comp, smooth, hyper, max_iter, tol)
    if update_mixing:
        before = bound.value(log_Q, comp, smooth, hyper)
        new_log_Q = bound.mixing_step(log_Q, comp, smooth, hyper)
        if bound.value(new_log_Q, comp, smooth, hyper) >= before:
            log_Q = new_log_Q
    return log_Q, comp, smooth, evals_smooth + evals_comp
