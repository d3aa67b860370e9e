"""``gaussian_fits``: Laplace and minimum-KL Gaussian fits to the posterior of a two-weight
network (paper 002 sec. 2, fig. 1: "Laplace and minimum Kullback-Leibler Gaussian fits to the
posterior ... KL value 41 ... diagonal covariance matrix (KLD) ... 4.6 ... full covariance
matrix ... 3.9").

On a one-input regression split the network y = v g(u x) (the 1-1-1 erf network with zero
biases) has the posterior p(u, v | D) ∝ exp(-beta E_D - alpha / 2 (u^2 + v^2)) at fixed
``alpha`` and ``beta`` (``engines/variational/weight_plane.py``). Three Gaussians:

- Laplace: at the largest mode found by BFGS from the best grid point, covariance the inverse
  of the exact Hessian of -ln p;
- ``diagonal`` (KLD): the diagonal Gaussian maximising the bound L of paper 002 eq. 8, by
  L-BFGS from the Laplace mean and marginal s.d.s;
- ``full``: the unconstrained Gaussian maximising L, started from the diagonal fit (as
  ``vi_gauss`` starts its full fits).

Reported (``diag_*``): KL(Q || p) = ln Z - L(Q) of each (closed-form L, ln Z on a
``grid_points``^2 grid over [-``half_width``, ``half_width``]^2), the same KLs summed on the
grid (a check: they agree to the grid's resolution), and the grid's edge: the largest
ln p there below the mode (status not_converged above -``edge_margin``, the grid cuts the
posterior). Test predictions are the full-covariance ensemble's (mean, variance + 1/beta).
Traces: the grid's ln p (every ``plot_stride``-th point) and the three means and covariances,
for the figure ``gaussian_fits``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..engines.variational.weight_plane import (
    WeightPlanePosterior,
    embed,
    full_covariance,
    grid_kl,
    log_normaliser,
    two_weight_objective,
)
from ..method_base import FitResult, check_positive
from ..models.erf_expectations import output_moments
from ..models.vi_family import GaussianFamily
from . import Method, Work, register

FITS = ("laplace", "diagonal", "full")


@dataclass(frozen=True)
class GaussianFitsSettings:
    """Fixed hyperparameters (paper 002 before sec. 2.1): ``alpha`` the weight precision,
    ``beta`` the noise precision (1 / 0.1^2, the noise of ``two_weight_toy``)."""

    alpha: float = 1.0
    beta: float = 100.0
    half_width: float = 9.0
    grid_points: int = 801
    plot_stride: int = 2
    edge_margin: float = 30.0
    max_iter: int = 2000

    def validate(self) -> None:
        for key in ("alpha", "beta", "half_width", "plot_stride", "edge_margin", "max_iter"):
            check_positive(key, getattr(self, key))
        if self.grid_points < 11:
            raise ValueError(f"setting 'grid_points' must be >= 11, got {self.grid_points}")


def pack_full(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """The parameters of ``GaussianFamily('full', 2)`` for N(mean, cov): [m, L21, ln L11,
    ln L22] with cov = L L^T."""
    chol = np.linalg.cholesky(cov)
    return np.concatenate([mean, [chol[1, 0]], np.log(np.diag(chol))])


def fit(split: Split, settings: GaussianFitsSettings, rng: np.random.Generator,
        log=print) -> FitResult:  # fmt: skip
    if split.n_inputs != 1 or split.n_outputs != 1:
        raise ValueError(
            "gaussian_fits needs one input and one output (the network y = v g(u x)), got "
            f"{split.n_inputs} and {split.n_outputs}"
        )
    wall = time.perf_counter()
    objective = two_weight_objective(split.x_train, split.y_train)
    post = WeightPlanePosterior(objective, settings.alpha, settings.beta)
    axis, log_p = post.grid(settings.half_width, settings.grid_points)
    log_z = log_normaliser(axis, log_p)
    top = np.unravel_index(np.argmax(log_p), log_p.shape)
    mode, evals = post.mode(np.array([[axis[top[0]], axis[top[1]]]]))
    laplace_cov = np.linalg.inv(post.hessian(mode))
    diag, full = GaussianFamily("diag", 2), GaussianFamily("full", 2)
    theta_diag, _, n = post.minimum_kl(diag, diag.pack(mode, np.sqrt(np.diag(laplace_cov))),
                                       settings.max_iter)  # fmt: skip
    evals += n
    theta_full, _, n = post.minimum_kl(
        full, full.pack(theta_diag[:2], np.exp(theta_diag[2:])), settings.max_iter
    )
    evals += n
    fits = {
        "laplace": (full, pack_full(mode, laplace_cov)),
        "diagonal": (diag, theta_diag),
        "full": (full, theta_full),
    }
    values, means, covs = {}, [], []
    for name, (family, theta) in fits.items():
        mean, cov = theta[:2], full_covariance(family, theta)
        values[f"kl_{name}"] = log_z - post.bound(family, theta)[0]
        values[f"grid_kl_{name}"] = grid_kl(axis, log_p, mean, cov)
        means.append(mean)
        covs.append(cov)
    edge = np.concatenate([log_p[0], log_p[-1], log_p[:, 0], log_p[:, -1]])
    values["edge_log_density"] = float(np.max(edge) - np.max(log_p))
    values["log_normaliser"] = log_z
    log(", ".join(f"{k} = {v:.5g}" for k, v in values.items()))
    mean, cov = full.mean_cov(theta_full)
    first, second = output_moments(objective.network, embed(mean), _embed_cov(cov), split.x_test)
    noise = 1.0 / settings.beta
    stride = slice(None, None, settings.plot_stride)
    result = FitResult(
        pred_mean=first,
        pred_var=np.maximum(second - first * first, 0.0) + noise,
        diagnostics=values,
        n_grad_evals=int(evals),
        runtime_s=time.perf_counter() - wall,
    )
    result.coords["fit"] = np.array(FITS)
    result.traces.update(
        {
            "plane_axis": (("plane",), axis[stride]),
            "plane_log_posterior": (("plane", "plane_2"), log_p[stride, stride] - log_z),
            "fit_mean": (("fit", "weight_2d"), np.array(means)),
            "fit_covariance": (("fit", "weight_2d", "weight_2d_b"), np.array(covs)),
        }
    )
    if values["edge_log_density"] > -settings.edge_margin:
        result.flag(
            "not_converged",
            f"ln p at the grid's edge is {values['edge_log_density']:.1f} below the mode "
            f"(above -{settings.edge_margin}): widen half_width",
        )
    return result


def _embed_cov(cov: np.ndarray) -> np.ndarray:
    out = np.zeros((4, 4))
    out[np.ix_([0, 2], [0, 2])] = cov
    return out


def work(s: GaussianFitsSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """The grid (``grid_points``^2 network evaluations, as forward-pass equivalents in batches
    of one gradient call per training case) and two L-BFGS fits of at most ``max_iter``
    closed-form bound evaluations: seconds."""
    return Work(2 * s.max_iter + 1, batch=s.grid_points**2 // (2 * s.max_iter + 1) + 1,
                floats_held=3 * s.grid_points**2, call_s=2e-3)  # fmt: skip


register(
    Method(
        "gaussian_fits",
        GaussianFitsSettings,
        fit,
        (),
        "Laplace and minimum-KL (diagonal, full) Gaussian fits to the posterior of the two-"
        "weight network y = v g(u x), with their KL from the grid-normalised posterior "
        "(paper 002 fig. 1)",
        work=work,
        imports=("scipy.optimize", "scipy.special"),
    )
)
