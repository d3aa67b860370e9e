"""Scores of predictions against targets, from arrays only.

A leaf module (numpy and nothing of bnnsweep), so that methods, the result writer and the
figures share one definition of every metric without importing each other.
"""

from __future__ import annotations

import numpy as np


def gaussian_loglik(y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> float:
    """Mean over targets of ln N(y | mean, var)."""
    var = np.maximum(var, np.finfo(float).tiny)
    return float(np.mean(-0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var)))


def unstandardise(
    mean: np.ndarray, var: np.ndarray, y_mean, y_scale
) -> tuple[np.ndarray, np.ndarray]:
    """Predictive mean and variance of standardised targets in original units."""
    return mean * y_scale + y_mean, var * y_scale**2


def regression_metrics(y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> dict[str, float]:
    """test_rmse, test_mse, test_nmse and test_loglik of predictions in original units.
    test_nmse (MSE over the variance of the test targets) is NaN, undefined, when the test
    targets do not vary (a constant target, or a single test point)."""
    mse = float(np.mean((y - mean) ** 2))
    spread = float(np.mean(np.var(y, axis=0)))
    return {
        "test_rmse": float(np.sqrt(mse)),
        "test_mse": mse,
        "test_nmse": mse / spread if spread > 0 else float("nan"),
        "test_loglik": gaussian_loglik(y, mean, var),
    }


def _mean_or_nan(values) -> float:
    return float(np.mean(values)) if values is not None else np.nan


def discrete_metrics(
    y: np.ndarray,
    class_probs: np.ndarray | None,
    pred_mean: np.ndarray | None,
    test_logpred: np.ndarray | None,
    train_logpred: np.ndarray | None,
) -> dict[str, float]:
    """Metrics of class and count predictions (ADF methods, paper 004 sec. 4-6).

    With ``class_probs`` (probit/softmax): ``test_error_rate`` (argmax against the label in
    column 0 of ``y``); otherwise (poisson) ``test_mad`` and ``test_rmse`` of the point
    prediction ``pred_mean`` (the predictive mode). ``test_loglik`` and ``train_loglik``
    are the means of the per-point log predictive probabilities or masses.
    """
    metrics = {
        "test_loglik": _mean_or_nan(test_logpred),
        "train_loglik": _mean_or_nan(train_logpred),
    }
    if class_probs is not None:
        labels = y[:, 0].astype(int)
        metrics["test_error_rate"] = float(np.mean(np.argmax(class_probs, axis=1) != labels))
    else:
        error = pred_mean - y
        metrics["test_mad"] = float(np.mean(np.abs(error)))
        metrics["test_rmse"] = float(np.sqrt(np.mean(error**2)))
    return metrics
