"""``map``: penalised least squares with early stopping, the papers' non-Bayesian baseline
(paper 000 sec. 4.2: a validation set of 22 of the 221 training points, training stopped at
the validation minimum, the best of ten networks kept).

Minimises E_D(w) + weight_decay/2 |w|^2 by quasi-Newton on the training part; the weights
at the iteration of least validation error are kept; of several restarts the one with the
least validation error wins.

``validation``:

- ``holdout``: the paper's protocol, one validation set of ``validation_fraction`` of the
  training points; the predictive variance is that set's mean squared error.
- ``kfold``: ``folds``-fold cross-validation. Each fold's network is early-stopped on its
  held-out fold, and the folds' networks predict as a committee (their mean). The
  predictive variance is the pooled held-out mean squared error plus the committee's
  spread. Every training point is used for fitting and for validation, so a 30-point toy
  is not judged by a 3-point validation set. Each fold runs ``kfold_restarts`` restarts
  (default 2: 5 folds x 2 = 10 networks, as many as the holdout's 10 restarts). On toy_sine,
  H = 5, seeds 0-2: test RMSE 0.119, 0.094, 0.030 (holdout) against 0.034, 0.040, 0.060
  (kfold), test log-likelihood -2.4, -0.36, -14.2 against 1.7, 1.9, 1.5, at the same CPU
  time (1.5-2.3 s a fit).
- ``auto`` (default): ``kfold`` below ``kfold_below`` training points, ``holdout`` from there on
  (the paper's 221-point sunspots keep the paper's protocol).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..engines.optimise import minimise_weights
from ..method_base import FitResult, check_choice, check_positive
from ..model_settings import ModelSettings
from ..models.objective import PenalisedError
from ..models.priors import check_prior_supported
from . import SCIPY, Method, Work, register


@dataclass(frozen=True)
class MapSettings(ModelSettings):
    restarts: int = 10
    validation: str = "auto"
    validation_fraction: float = 0.1
    folds: int = 5
    kfold_restarts: int = 2
    kfold_below: int = 100
    weight_decay: float = 1e-3
    max_iter: int = 2000
    tol: float = 1e-9
    init_scale: float = 1.0

    def validate(self) -> None:
        super().validate()
        check_prior_supported("map", self.prior)
        check_choice("validation", self.validation, ("auto", "holdout", "kfold"))
        for key in ("restarts", "kfold_restarts", "max_iter", "tol", "init_scale", "kfold_below"):
            check_positive(key, getattr(self, key))
        check_positive("weight_decay", self.weight_decay, allow_zero=True)
        if self.folds < 2:
            raise ValueError(f"setting 'folds' must be >= 2, got {self.folds}")
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(
                f"setting 'validation_fraction' must lie in (0, 1), got {self.validation_fraction}"
            )

    def scheme(self, n_train: int) -> str:
        """``holdout`` or ``kfold``, as ``validation`` resolves for ``n_train`` points."""
        if self.validation != "auto":
            return self.validation
        return "kfold" if n_train < self.kfold_below else "holdout"

    def restarts_per_fit(self, n_train: int) -> int:
        """Restarts of each early-stopped fit: ``restarts`` on the one holdout split,
        ``kfold_restarts`` per fold (5 x 2 = 10 networks, the holdout's 10 restarts)."""
        return self.kfold_restarts if self.scheme(n_train) == "kfold" else self.restarts


def validation_sets(n: int, settings: MapSettings, rng) -> list[np.ndarray]:
    """Held-out index sets: one of ``validation_fraction`` of n (holdout), or ``folds``
    disjoint folds covering all n points (kfold), from one random permutation."""
    perm = rng.permutation(n)
    if settings.scheme(n) == "holdout":
        n_val = max(1, int(round(settings.validation_fraction * n)))
        if n - n_val < 1:
            raise ValueError(
                f"validation_fraction {settings.validation_fraction} leaves no training points"
            )
        return [perm[:n_val]]
    if n < settings.folds:
        raise ValueError(f"{settings.folds} folds need at least as many training points, got {n}")
    return [np.sort(f) for f in np.array_split(perm, settings.folds)]


def early_stopped(full: PenalisedError, split: Split, val: np.ndarray, starts, settings, log):
    """The restarts on the points outside ``val``, each stopped at its least error on ``val``;
    returns (weights of the best restart, per-restart least validation MSE, curves, gradient
    evaluations)."""
    tr = np.setdiff1d(np.arange(split.x_train.shape[0]), val)
    objective = PenalisedError(full.network, full.prior, split.x_train[tr], split.y_train[tr])
    net = objective.network
    alpha = np.full(objective.prior.n_groups, settings.weight_decay)

    def val_error(w):
        r = net.forward(w[None, :], split.x_train[val])[0] - split.y_train[val]
        return float(np.mean(r * r))

    runs, n_evals = [], 0
    for r, w0 in enumerate(starts):
        state = {"w": w0.copy(), "err": val_error(w0), "curve": [val_error(w0)]}

        def watch(wk, state=state):
            err = val_error(wk)
            state["curve"].append(err)
            if err < state["err"]:
                state["w"], state["err"] = wk.copy(), err

        found = minimise_weights(objective, w0, alpha, 1.0, settings.max_iter, settings.tol, watch)
        n_evals += found.n_evals
        log(f"restart {r + 1}/{len(starts)}: validation MSE {state['err']:.5g} at iteration "
            f"{int(np.argmin(state['curve']))}")  # fmt: skip
        runs.append(state)
    val_mse = np.array([s["err"] for s in runs])
    return runs[int(np.argmin(val_mse))]["w"], val_mse, [s["curve"] for s in runs], n_evals


def _padded(curves: list[list[float]]) -> np.ndarray:
    out = np.full((len(curves), max(len(c) for c in curves)), np.nan)
    for i, c in enumerate(curves):
        out[i, : len(c)] = c
    return out


def fit(split: Split, settings: MapSettings, rng: np.random.Generator, log=print) -> FitResult:
    full, _ = settings.build(split)
    net = full.network
    # the starts first, from the cell's shared stream (sweep.Cell.rng): paired with the
    # other methods' restarts
    starts = net.init_weights(
        rng, settings.restarts_per_fit(split.x_train.shape[0]), settings.init_scale
    )
    held_out = validation_sets(split.x_train.shape[0], settings, rng)
    weights, val_mse, curves, residuals, n_evals = [], [], [], [], 0
    for k, val in enumerate(held_out):
        if len(held_out) > 1:
            log(f"fold {k + 1}/{len(held_out)} ({len(val)} held-out points)")
        w, mse, fold_curves, evals = early_stopped(full, split, val, starts, settings, log)
        weights.append(w)
        val_mse.append(mse)
        curves.append(_padded(fold_curves))
        residuals.append(net.forward(w[None, :], split.x_train[val])[0] - split.y_train[val])
        n_evals += evals
    members = np.stack(weights)
    resid = np.concatenate(residuals)
    noise_var = np.mean(resid * resid, axis=0)  # pooled held-out MSE, per output
    test = net.forward(members, split.x_test)
    train = net.forward(members, split.x_train)
    mean, train_mean = test.mean(axis=0), train.mean(axis=0)
    result = FitResult(
        pred_mean=mean,
        pred_var=noise_var + test.var(axis=0),
        train_mean=train_mean,
        train_var=noise_var + train.var(axis=0),
        n_grad_evals=n_evals,
    )
    val_mse = np.stack(val_mse)  # (fold, restart)
    length = max(c.shape[1] for c in curves)
    curve_arr = np.stack([np.pad(c, ((0, 0), (0, length - c.shape[1])), constant_values=np.nan)
                          for c in curves])  # fmt: skip
    result.traces.update(
        {
            "restart_validation_mse": (("fold", "restart"), val_mse),
            "validation_mse": (("fold", "restart", "iteration"), curve_arr),
            "restart_stop_iteration": (
                ("fold", "restart"),
                np.nanargmin(np.where(np.isnan(curve_arr), np.inf, curve_arr), axis=2),
            ),
        }
    )
    result.diagnostics.update(
        validation=settings.scheme(split.x_train.shape[0]),
        folds=len(held_out),
        best_restart=int(np.argmin(val_mse.mean(axis=0))),
        n_validation=int(sum(len(v) for v in held_out)),
        n_weights=net.n_weights,
    )
    return result


MAP_CALL_S = 1.5e-4
"""Fixed cost of one call (the gradient and the validation error, in Python) and
``MAP_PASSES`` forward-pass equivalents per call: with ``jobsize.CALL_S`` and one pass the
plan was 0.24-0.26 of the measured fit CPU on the default sweep's toy and robot-arm cells;
with these 1.56 (toy, 4 cells), 0.81 (robot arm, H = 1-16) and 1.26 (sunspots) of it, a cell
at H = 1 or 2 far above (it stops early) (2026-11-27, fit CPU time, ``python
benchmarks/plan_vs_measured.py config/config.yaml results`` after the default sweep)."""
MAP_PASSES = 2


def work(s: MapSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: every restart of every fold runs to ``max_iter`` gradient calls."""
    folds = s.folds if s.scheme(n_train) == "kfold" else 1
    return Work(
        folds * s.restarts_per_fit(n_train) * s.max_iter, batch=MAP_PASSES, call_s=MAP_CALL_S
    )


register(
    Method(
        "map",
        MapSettings,
        fit,
        ("hidden",),
        "penalised least squares with early stopping on a validation fraction or by k-fold "
        "cross-validation (a committee of the folds' networks), restarts",
        work=work,
        imports=SCIPY,
    )
)
