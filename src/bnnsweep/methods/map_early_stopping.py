"""``map``: penalised least squares with early stopping, the papers' non-Bayesian baseline
(paper 000 sec. 4.2: a validation set of 22 of the 221 training points, training stopped at
the validation minimum, the best of ten networks kept).

Minimises E_D(w) + weight_decay/2 |w|^2 by quasi-Newton on the training part; the weights
at the iteration of least validation error are kept; of several restarts the one with the
least validation error wins. The predictive variance is the validation mean squared error
(a noise estimate; the method has no weight uncertainty).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..engines.optimise import minimise_weights
from ..method_base import FitResult, check_positive
from ..model_settings import ModelSettings
from ..models.objective import PenalisedError
from ..models.priors import check_prior_supported
from . import Method, Work, register


@dataclass(frozen=True)
class MapSettings(ModelSettings):
    restarts: int = 10
    validation_fraction: float = 0.1
    weight_decay: float = 1e-3
    max_iter: int = 2000
    tol: float = 1e-9
    init_scale: float = 1.0

    def validate(self) -> None:
        super().validate()
        check_prior_supported("map", self.prior)
        for key in ("restarts", "max_iter", "tol", "init_scale"):
            check_positive(key, getattr(self, key))
        check_positive("weight_decay", self.weight_decay, allow_zero=True)
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(
                f"setting 'validation_fraction' must lie in (0, 1), got {self.validation_fraction}"
            )


def fit(split: Split, settings: MapSettings, rng: np.random.Generator, log=print) -> FitResult:
    full, _ = settings.build(split)
    n = split.x_train.shape[0]
    n_val = max(1, int(round(settings.validation_fraction * n)))
    if n - n_val < 1:
        raise ValueError(
            f"validation_fraction {settings.validation_fraction} leaves no training points"
        )
    perm = rng.permutation(n)
    val, tr = perm[:n_val], perm[n_val:]
    objective = PenalisedError(full.network, full.prior, split.x_train[tr], split.y_train[tr])
    net = objective.network
    alpha = np.full(objective.prior.n_groups, settings.weight_decay)

    def val_error(w):
        r = net.forward(w[None, :], split.x_train[val])[0] - split.y_train[val]
        return float(np.mean(r * r))

    best_runs, curves, n_evals = [], [], 0
    for r, w0 in enumerate(net.init_weights(rng, settings.restarts, settings.init_scale)):
        state = {"w": w0.copy(), "err": val_error(w0), "curve": [val_error(w0)]}

        def watch(wk, state=state):
            err = val_error(wk)
            state["curve"].append(err)
            if err < state["err"]:
                state["w"], state["err"] = wk.copy(), err

        found = minimise_weights(objective, w0, alpha, 1.0, settings.max_iter, settings.tol, watch)
        n_evals += found.n_evals
        stop = int(np.argmin(state["curve"]))
        log(
            f"restart {r + 1}/{settings.restarts}: validation MSE {state['err']:.5g} at iteration {stop}"
        )
        best_runs.append(state)
        curves.append(state["curve"])

    val_mse = np.array([s["err"] for s in best_runs])
    best = int(np.argmin(val_mse))
    w = best_runs[best]["w"]
    resid = net.forward(w[None, :], split.x_train[val])[0] - split.y_train[val]
    noise_var = np.mean(resid * resid, axis=0)  # per output
    mean = net.forward(w[None, :], split.x_test)[0]
    train_mean = net.forward(w[None, :], split.x_train)[0]
    length = max(len(c) for c in curves)
    curve_arr = np.full((len(curves), length), np.nan)
    for i, c in enumerate(curves):
        curve_arr[i, : len(c)] = c
    result = FitResult(
        pred_mean=mean,
        pred_var=np.broadcast_to(noise_var, mean.shape).copy(),
        train_mean=train_mean,
        train_var=np.broadcast_to(noise_var, train_mean.shape).copy(),
        n_grad_evals=n_evals,
    )
    result.traces.update(
        {
            "restart_validation_mse": (("restart",), val_mse),
            "validation_mse": (("restart", "iteration"), curve_arr),
            "restart_stop_iteration": (
                ("restart",),
                np.array([int(np.argmin(c)) for c in curves]),
            ),
        }
    )
    result.diagnostics.update(best_restart=best, n_validation=n_val, n_weights=net.n_weights)
    return result


def work(s: MapSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: every restart runs to ``max_iter`` gradient calls."""
    return Work(s.restarts * s.max_iter)


register(
    Method(
        "map",
        MapSettings,
        fit,
        ("hidden",),
        "penalised least squares with early stopping on a validation fraction, restarts",
        work=work,
    )
)
