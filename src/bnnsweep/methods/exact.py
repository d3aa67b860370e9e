"""Exact Bayesian linear regression: the network without hidden layer (``hidden = 0``) is the
linear model y = Phi w + noise with Phi = [x, 1], w ~ N(0, I / alpha) (prior ``single``) and
noise precision beta, with Gamma hyperpriors on alpha and beta.

Everything is computed in the eigenbasis of Phi^T Phi = U diag(s) U^T, where the posterior
precision A = beta Phi^T Phi + alpha I is diagonal, lambda_d = beta s_d + alpha:

- ln p(D | alpha, beta) per output: (D/2) ln alpha + (N/2) ln beta - E(m) - 1/2 ln |A|
  - (N/2) ln 2 pi, with E(m) = beta/2 t^T t - beta^2/2 sum_d r_d^2 / lambda_d and
  r = U^T Phi^T t (Bishop 2006 eqs. 3.86, 3.84; MacKay 1992 "Bayesian interpolation" eq. 2.19);
- ln p(D) integrates alpha and beta over their Gamma hyperpriors by a Riemann sum on a grid in
  (ln alpha, ln beta), refined until the grid covers the hyperposterior mass (its edges are
  at least ``EDGE_NATS`` below the maximum) -- the quantity every other method estimates,
  so its ``log_evidence_kind`` is ``exact`` (up to quadrature error, far below 1e-3 nats);
- the predictive distribution is the hyperposterior mixture, over the same grid, of the
  Gaussian posterior predictives N(phi^T m, 1/beta + phi^T A^-1 phi) (Bishop eqs. 3.58-3.59),
  reported by its mean and variance: no plug-in of point estimates of alpha and beta.

``models/conjugate.py`` holds the independent function-space reference (N x N covariance)
that tests compare this method with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..method_base import FUNCTION_SAMPLES, FitResult
from ..model_settings import ModelSettings
from ..models.priors import GammaPrior
from . import Method, Work, register

COARSE_RANGE = (-100.0, 100.0)  # first grid in ln alpha and ln beta, step 0.5
COARSE_POINTS = 401
MASS_NATS = 40.0  # the next grid spans where the log integrand is within this of its maximum
EDGE_NATS = 20.0  # accepted grid: every edge this far below the maximum (as conjugate.py)
KEEP_NATS = 30.0  # grid points within this of the maximum enter the predictive mixture
MAX_PASSES = 8


@dataclass(frozen=True)
class ExactSettings(ModelSettings):
    """The linear model of ModelSettings (no hidden layer, one alpha); ``grid`` points per
    axis of the quadrature grid in (ln alpha, ln beta)."""

    hidden: int = 0
    activation: str = "linear"
    prior: str = "single"
    grid: int = 201

    def validate(self) -> None:
        super().validate()
        if self.hidden != 0:
            raise ValueError(
                f"setting 'hidden' must be 0 (method 'exact' is the linear model), got {self.hidden}"
            )
        if self.activation != "linear":
            raise ValueError(
                f"setting 'activation' must be 'linear' (no hidden layer), got {self.activation!r}"
            )
        if self.prior != "single":
            raise ValueError(
                "setting 'prior' must be 'single': the quadrature integrates one alpha and one "
                f"beta, got {self.prior!r}"
            )
        if self.grid < 21:
            raise ValueError(f"setting 'grid' must be at least 21 points per axis, got {self.grid}")


@dataclass(frozen=True)
class LinearStatistics:
    """Sufficient statistics of the linear model in the eigenbasis of Phi^T Phi."""

    s: np.ndarray  # (D,) eigenvalues of Phi^T Phi
    basis: np.ndarray  # (D, D) eigenvectors U
    r: np.ndarray  # (D, P) U^T Phi^T t
    tt: np.ndarray  # (P,) t^T t per output
    n: int

    @classmethod
    def of(cls, x: np.ndarray, t: np.ndarray) -> LinearStatistics:
        phi = features(x)
        s, basis = np.linalg.eigh(phi.T @ phi)
        return cls(np.maximum(s, 0.0), basis, basis.T @ phi.T @ t, np.sum(t**2, axis=0), len(t))


def features(x: np.ndarray) -> np.ndarray:
    """Phi = [x, 1]: the inputs and the bias."""
    return np.column_stack([x, np.ones(len(x))])


def log_likelihood(stats: LinearStatistics, log_alpha, log_beta) -> np.ndarray:
    """ln p(D | alpha, beta) summed over outputs (Bishop eq. 3.86 in the eigenbasis, see the
    module docstring), broadcast over arrays ``log_alpha`` and ``log_beta``."""
    la, lb = np.broadcast_arrays(np.asarray(log_alpha, float), np.asarray(log_beta, float))
    alpha, beta = np.exp(la)[..., None], np.exp(lb)[..., None]
    lam = beta * stats.s + alpha  # (..., D)
    fit = np.sum(np.sum(stats.r**2, axis=1) / lam, axis=-1)  # sum_p r_p^T diag(1/lam) r_p
    n_out, dim = len(stats.tt), len(stats.s)
    energy = 0.5 * np.exp(lb) * np.sum(stats.tt) - 0.5 * np.exp(2 * lb) * fit
    log_det = np.sum(np.log(lam), axis=-1)
    return (
        n_out
        * (0.5 * dim * la + 0.5 * stats.n * lb - 0.5 * log_det - 0.5 * stats.n * np.log(2 * np.pi))
        - energy
    )


def log_integrand(stats, alpha_prior: GammaPrior, noise_prior: GammaPrior, la, lb):
    """ln [p(D | alpha, beta) p(alpha) p(beta) alpha beta]: the integrand over (ln alpha,
    ln beta)."""
    return (
        log_likelihood(stats, la, lb)
        + alpha_prior.logpdf(np.exp(la))
        + la
        + noise_prior.logpdf(np.exp(lb))
        + lb
    )


@dataclass(frozen=True)
class Grid:
    log_alpha: np.ndarray  # (A,)
    log_beta: np.ndarray  # (B,)
    values: np.ndarray  # (A, B) log integrand

    @property
    def log_evidence(self) -> float:
        """Riemann sum of the integrand (the rule of conjugate.linear_log_evidence_integrated)."""
        from scipy.special import logsumexp

        step_a = self.log_alpha[1] - self.log_alpha[0]
        step_b = self.log_beta[1] - self.log_beta[0]
        return float(logsumexp(self.values) + np.log(step_a) + np.log(step_b))

    def edge_gap(self) -> float:
        """Nats between the maximum and the largest value on the grid's border."""
        v = self.values
        return float(v.max() - max(v[0].max(), v[-1].max(), v[:, 0].max(), v[:, -1].max()))


def evaluate(stats, alpha_prior, noise_prior, a_range, b_range, points: int) -> Grid:
    la = np.linspace(*a_range, points)
    lb = np.linspace(*b_range, points)
    values = log_integrand(stats, alpha_prior, noise_prior, la[:, None], lb[None, :])
    return Grid(la, lb, values)


def _mass_box(grid: Grid) -> tuple[tuple[float, float], tuple[float, float]]:
    """The ranges, padded, where the log integrand is within MASS_NATS of its maximum."""
    rows, cols = np.nonzero(grid.values > grid.values.max() - MASS_NATS)

    def span(axis, idx):
        lo, hi = axis[idx.min()], axis[idx.max()]
        step = axis[1] - axis[0]
        pad = max(2 * step, 0.1 * (hi - lo))
        return float(lo - pad), float(hi + pad)

    return span(grid.log_alpha, rows), span(grid.log_beta, cols)


def integrate(stats, alpha_prior, noise_prior, points: int) -> tuple[Grid, int]:
    """A grid covering the hyperposterior: start on COARSE_RANGE, then zoom to where the mass
    is until the edges are EDGE_NATS below the maximum and the box stops moving; returns the
    grid and the number of passes."""
    grid = evaluate(stats, alpha_prior, noise_prior, COARSE_RANGE, COARSE_RANGE, COARSE_POINTS)
    for passes in range(1, MAX_PASSES + 1):
        a_range, b_range = _mass_box(grid)
        new = evaluate(stats, alpha_prior, noise_prior, a_range, b_range, points)
        settled = abs(new.log_evidence - grid.log_evidence) < 1e-6 if passes > 1 else False
        grid = new
        if settled and grid.edge_gap() >= EDGE_NATS:
            break
    return grid, passes


def fit(split: Split, settings: ExactSettings, rng: np.random.Generator, log=print) -> FitResult:
    from scipy.special import logsumexp

    objective, noise_prior = settings.build(split)
    alpha_prior = objective.prior.hyperpriors[0]
    stats = LinearStatistics.of(split.x_train, split.y_train)
    grid, passes = integrate(stats, alpha_prior, noise_prior, settings.grid)
    log(f"quadrature: {passes} passes, log evidence {grid.log_evidence:.6f}")

    keep = grid.values > grid.values.max() - KEEP_NATS
    ia, ib = np.nonzero(keep)
    alpha, beta = np.exp(grid.log_alpha[ia]), np.exp(grid.log_beta[ib])
    weights = np.exp(grid.values[keep] - logsumexp(grid.values[keep]))
    lam = beta[:, None] * stats.s + alpha[:, None]  # (K, D)
    coef = beta[:, None, None] * stats.r / lam[:, :, None]  # posterior mean in the eigenbasis

    # mixture moments in closed form (law of total variance): with g = U^T phi and c_k the
    # posterior mean of grid point k, E[mean] = g^T sum_k w_k c_k, E[mean^2] = g^T M g with
    # M = sum_k w_k c_k c_k^T, E[var] = sum_d g_d^2 sum_k w_k / lambda_kd + sum_k w_k / beta_k
    mean_coef = np.einsum("k,kdp->dp", weights, coef)
    second_coef = np.einsum("k,kdp,kep->pde", weights, coef, coef)
    inv_lam, noise_var = weights @ (1.0 / lam), weights @ (1.0 / beta)

    def predictive(x):
        g = features(x) @ stats.basis  # (T, D)
        mean = g @ mean_coef
        spread = np.einsum("td,pde,te->tp", g, second_coef, g) - mean**2
        var = ((g**2) @ inv_lam + noise_var)[:, None] + np.maximum(spread, 0.0)
        return mean, var

    result = FitResult(*predictive(split.x_test), log_evidence_kind="exact")
    result.train_mean, result.train_var = predictive(split.x_train)
    result.log_evidence = grid.log_evidence
    result.log_evidence_se = 0.0

    # posterior function draws: (alpha, beta) from the grid's weights, then w ~ N(m, A^-1)
    pick = rng.choice(len(weights), size=FUNCTION_SAMPLES, p=weights)
    z = rng.standard_normal((FUNCTION_SAMPLES, *stats.r.shape))
    w_basis = coef[pick] + z / np.sqrt(lam[pick])[:, :, None]
    result.function_samples = np.einsum(
        "td,sdp->stp", features(split.x_test) @ stats.basis, w_basis
    )

    best = np.unravel_index(np.argmax(grid.values), grid.values.shape)
    result.diagnostics.update(
        alpha_mode=float(np.exp(grid.log_alpha[best[0]])),
        beta_mode=float(np.exp(grid.log_beta[best[1]])),
        log_alpha_mean=float(weights @ np.log(alpha)),
        log_beta_mean=float(weights @ np.log(beta)),
        grid_passes=passes,
        grid_edge_gap=grid.edge_gap(),
    )
    if grid.edge_gap() < EDGE_NATS:
        result.flag(
            "not_converged",
            f"quadrature grid edge only {grid.edge_gap():.1f} nats below the maximum",
        )
    return result


def work(s: ExactSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: one pass over the data, holding the design matrix."""
    return Work(1, floats_held=n_train * n_weights)


register(
    Method(
        "exact",
        ExactSettings,
        fit,
        ("hidden",),
        "Bayesian linear regression (hidden = 0): closed-form evidence with alpha and beta "
        "integrated over their Gamma hyperpriors by quadrature, hyperposterior-mixture predictive",
        work=work,
        imports=("scipy.special",),
    )
)
