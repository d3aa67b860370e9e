"""``relu_map``: the point-estimate (standard backpropagation) baseline of paper 004 Fig. 2.

The same ReLU network as PBP/EBP with a single weight vector: the MAP estimate under the
N(0, prior_variance) prior, found by L-BFGS on the negative log posterior. The moment network
with all weight variances 0 is the ordinary network, and its reverse pass with psi = 0 gives
the ordinary gradient, so the ADF code is reused: ln Z of the probit or softmax-bound
likelihood at psi = 0 is the exact log-likelihood ln Phi(t f) or y.f - lse(f).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import softmax

from ...datasets.base import Split
from ..base import FitResult, check_choice, check_positive
from . import likelihoods as lik
from .fit import n_classes_of
from .network import Architecture, backward, forward

LIKELIHOODS = ("probit", "softmax")


@dataclass(frozen=True)
class PointSettings:
    hidden: int = 10
    layers: int = 1
    activation: str = "relu"
    likelihood: str = "softmax"
    prior_variance: float = 100.0
    max_iter: int = 5000

    def validate(self) -> None:
        for key in ("hidden", "layers", "prior_variance", "max_iter"):
            check_positive(key, getattr(self, key))
        check_choice("activation", self.activation, ("relu",))
        check_choice("likelihood", self.likelihood, LIKELIHOODS)


def accepted_tasks(settings: PointSettings) -> tuple[str, ...]:
    return lik.TASKS[settings.likelihood]


def _log_lik(name, nu, y):
    zero = np.zeros_like(nu)
    if name == "probit":
        return lik.probit_log_z(nu, zero, y)
    return lik.softmax_bound_log_z(nu, zero, y)


def class_probabilities(name, nu):
    if name == "probit":
        return lik.probit_probs(nu, np.zeros_like(nu))
    return softmax(nu, axis=-1)


def fit(split: Split, settings: PointSettings, rng: np.random.Generator, log=print) -> FitResult:
    """MAP weights by L-BFGS; predictions are the network's class probabilities."""
    n_classes = n_classes_of([split])
    n_out = lik.n_outputs(settings.likelihood, n_classes, 1)
    arch = Architecture((split.n_inputs, *[settings.hidden] * settings.layers, n_out))
    shapes = [(1, *s) for s in arch.shapes]
    sizes = [int(np.prod(s)) for s in shapes]
    zeros = [np.zeros(s) for s in shapes]
    x, y = split.x_train[None], split.y_train

    def unpack(w):
        return [
            p.reshape(s) for p, s in zip(np.split(w, np.cumsum(sizes)[:-1]), shapes, strict=True)
        ]

    def objective(w):
        means = unpack(w)
        nu, _, cache = forward(means, zeros, x, keep=True)
        log_z, g_nu, _ = _log_lik(settings.likelihood, nu[0], y)
        grads, _ = backward(means, zeros, cache, g_nu[None], np.zeros_like(g_nu)[None])
        flat = np.concatenate([g.ravel() for g in grads])
        value = -np.sum(log_z) + 0.5 * w @ w / settings.prior_variance
        return value, -flat + w / settings.prior_variance

    w0 = np.concatenate([m.ravel() for m in arch.init_means([rng])])
    found = minimize(
        objective, w0, jac=True, method="L-BFGS-B", options={"maxiter": settings.max_iter}
    )
    means = unpack(found.x)

    def predict(inputs, targets):
        nu, _ = forward(means, zeros, inputs[None])
        probs = class_probabilities(settings.likelihood, nu[0])
        labels = targets[:, 0].astype(int)
        return probs, np.log(np.maximum(probs[np.arange(len(labels)), labels], 1e-300))

    probs, logpred = predict(split.x_test, split.y_test)
    _, train_logpred = predict(split.x_train, split.y_train)
    label = np.argmax(probs, axis=1)[:, None].astype(float)
    result = FitResult(
        pred_mean=label, pred_var=np.full_like(label, np.nan), likelihood=settings.likelihood,
        class_probs=probs, test_logpred=logpred, train_logpred=train_logpred,
        n_grad_evals=int(found.nfev),
    )  # fmt: skip
    result.diagnostics.update(n_weights=arch.n_weights, map_objective=float(found.fun))
    if not found.success:
        result.flag("not_converged", f"L-BFGS: {found.message}")
    return result
