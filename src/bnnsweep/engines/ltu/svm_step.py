"""The M-step of LTU learning: one soft-margin linear SVM per hidden and output unit (thesis
§3.5.2, §3.7), given the inferred hidden states.

Unit j's incoming weights solve min_w 1/2 |w|^2 + C sum_n xi_n subject to
y_n (w . z_n + w_0) >= 1 - xi_n, xi_n >= 0, with (z_n, y_n) = (x_n, h_nj) for a hidden unit
and (h_n, t_no) for an output unit: the L1-slack problem the thesis solves with Platt's SMO.
It is solved here by libsvm's SMO through ``sklearn.svm.SVC(kernel="linear")``, whose ``tol``
is the KKT tolerance of §3.7 and ``max_iter`` the iteration cap of §3.8 (1e5). LinearSVC
(liblinear) is not used: by default it solves the squared-hinge problem and penalises the
bias, a different optimisation problem. A unit whose targets are all one sign gets zero
weights and that sign as its bias (the SVM is undefined there; the unit is a constant).

Weight normalisation (§3.7): each hidden unit's incoming vector (weights and bias) is
rescaled to the Euclidean norm of its outgoing weights. A positive rescaling leaves the
unit's hyperplane, hence the network's mapping, unchanged; it balances the parent and child
terms of the E-step update (``inference.scaled_log_odds``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ...models.threshold_network import ThresholdNetwork


@dataclass(frozen=True)
class SVMFit:
    """Weights (D,) and bias of one unit; ``iterations`` SMO iterations (0 when the targets
    were one-signed); ``capped`` whether SMO stopped at ``max_iter``."""

    weights: np.ndarray
    bias: float
    iterations: int
    capped: bool


def fit_unit(z: np.ndarray, y: np.ndarray, penalty: float, tol: float, max_iter: int) -> SVMFit:
    """The soft-margin linear SVM of inputs ``z`` (N, D) and ±1 targets ``y`` (N,)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVC

    if np.all(y == y[0]):
        return SVMFit(np.zeros(z.shape[1]), float(y[0]), 0, False)
    svm = SVC(kernel="linear", C=penalty, tol=tol, max_iter=max_iter, shrinking=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm.fit(z, y)
    sign = 1.0 if svm.classes_[1] > 0 else -1.0  # decision > 0 means classes_[1]
    iterations = int(np.max(svm.n_iter_))
    return SVMFit(
        sign * svm.coef_[0].copy(),
        sign * float(svm.intercept_[0]),
        iterations,
        iterations >= max_iter,
    )


@dataclass(frozen=True)
class MStepResult:
    network: ThresholdNetwork
    iterations: np.ndarray  # (H + O,) SMO iterations per unit, hidden units first
    capped: int  # units whose SMO hit max_iter


def fit_weights(
    x: np.ndarray,
    h: np.ndarray,
    t: np.ndarray,
    penalty: float,
    tol: float,
    max_iter: int,
) -> MStepResult:
    """One SVM per hidden unit (inputs x, targets h[:, j]) and per output unit (inputs h,
    targets t[:, o]); returns the weight-normalised network."""
    hidden = [fit_unit(x, h[:, j], penalty, tol, max_iter) for j in range(h.shape[1])]
    output = [fit_unit(h, t[:, o], penalty, tol, max_iter) for o in range(t.shape[1])]
    fits = hidden + output
    net = ThresholdNetwork(
        w_in=np.array([f.weights for f in hidden]).reshape(h.shape[1], x.shape[1]),
        b_in=np.array([f.bias for f in hidden]),
        w_out=np.array([f.weights for f in output]).reshape(t.shape[1], h.shape[1]),
        b_out=np.array([f.bias for f in output]),
    )
    return MStepResult(
        normalise_weights(net),
        np.array([f.iterations for f in fits]),
        sum(f.capped for f in fits),
    )


def normalise_weights(net: ThresholdNetwork) -> ThresholdNetwork:
    """Rescale each hidden unit's (weights, bias) to the norm of its outgoing weights
    (module docstring); units with a zero incoming or outgoing vector are left alone."""
    incoming = np.sqrt(np.sum(net.w_in**2, axis=1) + net.b_in**2)
    outgoing = np.linalg.norm(net.w_out, axis=0)
    ok = (incoming > 0) & (outgoing > 0)
    scale = np.where(ok, outgoing / np.where(ok, incoming, 1.0), 1.0)
    return ThresholdNetwork(net.w_in * scale[:, None], net.b_in * scale, net.w_out, net.b_out)
