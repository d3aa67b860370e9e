"""Effective sample size and potential scale reduction of MCMC traces.

ESS uses the autocorrelation estimated by FFT and summed with Geyer's initial positive
sequence (pairs of lags while their sum stays positive); R-hat is the split-chain version
(Gelman et al., Bayesian Data Analysis, 3rd ed., sec. 11.4-11.5).
"""

from __future__ import annotations

import numpy as np


def autocorrelation(x: np.ndarray) -> np.ndarray:
    """Autocorrelation of each row of x (C, S) along the last axis."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    centred = x - x.mean(axis=-1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(centred, size, axis=-1)
    acov = np.fft.irfft(f * np.conj(f), size, axis=-1)[..., :n] / n
    var = acov[..., :1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(var > 0, acov / np.where(var > 0, var, 1.0), 0.0)


def effective_sample_size(trace: np.ndarray) -> float:
    """ESS of a scalar trace of shape (S,) or (C, S) (chains pooled)."""
    x = np.atleast_2d(np.asarray(trace, dtype=float))
    C, S = x.shape
    if S < 4 or not np.all(np.isfinite(x)):
        return float("nan")
    if np.allclose(x.var(axis=1), 0.0):
        return float(C * S)
    rho = autocorrelation(x).mean(axis=0)
    total = 0.0
    for k in range(0, S - 1, 2):
        pair = rho[k] + rho[k + 1]
        if pair <= 0:
            break
        total += pair
    tau = max(-1.0 + 2.0 * total, 1.0 / (C * S))
    return float(min(C * S / tau, C * S))


def split_rhat(trace: np.ndarray) -> float:
    """Split R-hat of a (C, S) trace; NaN with fewer than 4 samples per chain."""
    x = np.atleast_2d(np.asarray(trace, dtype=float))
    C, S = x.shape
    half = S // 2
    if half < 2 or not np.all(np.isfinite(x)):
        return float("nan")
    halves = np.concatenate([x[:, :half], x[:, half : 2 * half]], axis=0)
    n = half
    within = halves.var(axis=1, ddof=1).mean()
    between = n * halves.mean(axis=1).var(ddof=1)
    if within <= 0:
        return float("nan")
    var_plus = (n - 1) / n * within + between / n
    return float(np.sqrt(var_plus / within))
