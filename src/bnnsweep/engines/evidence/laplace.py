"""The evidence procedure: MacKay's hyperparameter re-estimation and the Laplace log evidence.

References: paper 001 sec. 4 (eq. 10, 11), thesis sec. 5.3.2, Bishop (1995) sec. 10.4-10.6.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...models.objective import PenalisedError
from ...models.priors import GammaPrior

LOG_2PI = np.log(2.0 * np.pi)


@dataclass
class HessianFactor:
    """Cholesky factor of the Hessian A at a mode, or the reason it does not exist."""

    A: np.ndarray
    chol: np.ndarray | None
    min_eigenvalue: float

    @classmethod
    def of(cls, A: np.ndarray) -> HessianFactor:
        try:
            chol = np.linalg.cholesky(A)
            return cls(A, chol, float("nan"))
        except np.linalg.LinAlgError:
            return cls(A, None, float(np.linalg.eigvalsh(A)[0]))

    @property
    def positive_definite(self) -> bool:
        return self.chol is not None

    def logdet(self) -> float:
        return 2.0 * float(np.sum(np.log(np.diag(self.chol))))

    def inverse(self) -> np.ndarray:
        """A^{-1}; for an indefinite A, the inverse with eigenvalues floored at 1e-8 max|lambda|."""
        if self.chol is not None:
            inv_l = np.linalg.inv(self.chol)
            return inv_l.T @ inv_l
        lam, vec = np.linalg.eigh(self.A)
        lam = np.maximum(lam, 1e-8 * np.abs(lam).max())
        return (vec / lam) @ vec.T

    def sample(self, mean: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws from N(mean, A^{-1}) (A = L L^T: mean + L^{-T} z), shape (n, W); A must be
        positive definite."""
        import scipy.linalg

        z = rng.standard_normal((len(mean), n))
        return mean + scipy.linalg.solve_triangular(self.chol, z, lower=True, trans="T").T

    def quad_diag(self, G: np.ndarray) -> np.ndarray:
        """g^T A^{-1} g for each row g of G (..., W)."""
        flat = G.reshape(-1, G.shape[-1])
        if self.chol is not None:
            z = np.linalg.solve(self.chol, flat.T)
            return np.sum(z * z, axis=0).reshape(G.shape[:-1])
        return np.einsum("nw,wv,nv->n", flat, self.inverse(), flat).reshape(G.shape[:-1])


@dataclass
class DataCurvature:
    """Eigen-decomposition beta grad grad E_D = V diag(lam) V^T of the data term of the
    Hessian A at a mode, and the positive part A+ = V max(lam, 0) V^T + diag(alpha)."""

    lam: np.ndarray
    A_plus: np.ndarray

    @classmethod
    def of(cls, factor: HessianFactor, alpha_w: np.ndarray) -> DataCurvature:
        lam, vec = np.linalg.eigh(factor.A - np.diag(alpha_w))
        return cls(lam, (vec * np.maximum(lam, 0.0)) @ vec.T + np.diag(alpha_w))

    @property
    def n_negative(self) -> int:
        return int(np.sum(self.lam < 0))

    def clipped_logdet_shift(self, factor: HessianFactor) -> float:
        """-1/2 (ln|A+| - ln|A|): how much lower the Laplace log evidence would be with the
        negative data curvature clipped (NETLAB's evidence); 0 where there is none."""
        if self.n_negative == 0 or not factor.positive_definite:
            return 0.0 if self.n_negative == 0 else float("nan")
        return -0.5 * (float(np.linalg.slogdet(self.A_plus)[1]) - factor.logdet())


def well_determined(A_gamma: np.ndarray, prior, alpha: np.ndarray) -> np.ndarray:
    """gamma_k = W_k - alpha_k Tr_k(A^{-1}) (paper 001 eq. 10; Bishop 1995 sec. 10.4), with A
    the Hessian variant ``A_gamma`` (``ModeHessians.matrix``), clipped to [0, W_k].

    Today's default is A+ = V max(Lambda, 0) V^T + diag(alpha), the Hessian with the
    eigenvalues of the data term beta grad grad E_D = V Lambda V^T clipped at zero (as
    NETLAB's evidence procedure does); the outer-product beta J^T J + diag(alpha) is MacKay's
    (1992). With either and one alpha, gamma = sum_i lambda_i+ / (lambda_i+ + alpha), a count
    in [0, W]. With the exact A, a data eigenvalue near -alpha (possible at a mode of the
    penalised error, where only lambda_i + alpha > 0) gives gamma far below zero and sends
    alpha to zero on the next update.
    """
    diag_inv = np.diag(HessianFactor.of(A_gamma).inverse())
    trace_k = np.bincount(prior.group_index, weights=diag_inv, minlength=prior.n_groups)
    sizes = prior.group_sizes
    return np.clip(sizes - alpha * trace_k, 0.0, sizes)


HESSIANS = ("exact", "clipped", "gauss_newton")
"""The Hessian variants of the evidence framework: the exact A = grad grad M (paper 001 eq. 10,
11 as written), A+ with the negative data curvature clipped (NETLAB), and the outer product
beta J^T J + diag(alpha) (MacKay 1992)."""


@dataclass
class ModeHessians:
    """The Hessian variants of M at a mode: the exact A (its Cholesky factor), its data
    curvature decomposition (giving A+) and the Gauss-Newton matrix."""

    exact: HessianFactor
    curvature: DataCurvature
    gauss_newton: np.ndarray

    @classmethod
    def at(cls, objective: PenalisedError, w: np.ndarray, alpha: np.ndarray, beta: float):
        factor = HessianFactor.of(objective.hessian(w[None, :], alpha, beta)[0])
        curvature = DataCurvature.of(factor, objective.prior.per_weight(alpha))
        gn = objective.gauss_newton_hessian(w[None, :], alpha, beta)[0]
        return cls(factor, curvature, gn)

    def matrix(self, kind: str) -> np.ndarray:
        """The matrix of Hessian variant ``kind`` (one of ``HESSIANS``)."""
        return {"exact": self.exact.A, "clipped": self.curvature.A_plus,
                "gauss_newton": self.gauss_newton}[kind]  # fmt: skip

    def logdet(self, kind: str) -> float:
        """ln|A| of variant ``kind``; NaN where that matrix is not positive definite."""
        factor = self.exact if kind == "exact" else HessianFactor.of(self.matrix(kind))
        return factor.logdet() if factor.positive_definite else float("nan")


def reestimate(
    objective: PenalisedError,
    w: np.ndarray,
    gamma: np.ndarray,
    noise_prior: GammaPrior,
    use_hyperprior: bool,
) -> tuple[np.ndarray, float]:
    """New (alpha, beta) from the well-determined parameter counts gamma_k at mode ``w``.

    MacKay (paper 001 eq. 10): alpha_k = gamma_k / w_k^T w_k, 1/beta = 2 E_D / (N - gamma).
    With the Gamma hyperpriors included (``use_hyperprior``) these become the stationary
    point of ln p(D | alpha, beta) + ln p(alpha) p(beta) in (ln alpha, ln beta):
    alpha_k = (gamma_k + 2 a_k) / (w_k^T w_k + 2 b_k),
    beta = (N - gamma + 2 a_beta) / (2 E_D + 2 b_beta); both reduce to MacKay's as a, b -> 0.
    """
    prior = objective.prior
    ww = prior.sum_squares(w)[0]
    e_d = float(objective.data_error(w[None, :])[0])
    n = objective.n_targets
    g_total = float(gamma.sum())
    if use_hyperprior:
        alpha = (gamma + 2 * prior.shapes) / (ww + 2 * prior.rates)
        beta = (n - g_total + 2 * noise_prior.shape) / (2 * e_d + 2 * noise_prior.rate)
    else:
        tiny = np.finfo(float).tiny
        alpha = np.maximum(gamma, 1e-12) / np.maximum(ww, tiny)
        beta = max(n - g_total, 1e-12) / max(2 * e_d, tiny)
    return alpha, float(beta)


def symmetry_log_factor(n_hidden: int, odd_activation: bool) -> float:
    """ln(h! 2^h): the equivalent modes from hidden-unit interchange and sign flips
    (paper 001 eq. 11 as corrected in papers/README.md)."""
    from scipy.special import gammaln

    if n_hidden == 0 or not odd_activation:
        return 0.0
    return float(gammaln(n_hidden + 1) + n_hidden * np.log(2.0))


def log_evidence_fixed_hyper(
    objective: PenalisedError, w: np.ndarray, logdet: float, alpha: np.ndarray, beta: float
) -> float:
    """Laplace ln p(D | alpha, beta) of one mode, without the symmetry factor:

    -M(w) - 1/2 ln|A| + sum_k W_k/2 ln alpha_k + N/2 ln beta - N/2 ln 2 pi,
    with ``logdet`` = ln|A| of the chosen Hessian variant (``ModeHessians.logdet``).
    Exact when the network is linear in w (the posterior is then Gaussian).
    """
    sizes = objective.prior.group_sizes
    n = objective.n_targets
    m = float(objective.value(w[None, :], alpha, beta)[0])
    return (
        -m
        - 0.5 * logdet
        + 0.5 * float(np.sum(sizes * np.log(alpha)))
        + 0.5 * n * np.log(beta)
        - 0.5 * n * LOG_2PI
    )


def hyper_width_terms(
    objective: PenalisedError,
    alpha: np.ndarray,
    beta: float,
    gamma: np.ndarray,
    noise_prior: GammaPrior,
    variant: str,
) -> float:
    """The integral over the hyperparameters in the Gaussian approximation in ln alpha, ln beta.

    ``paper``: flat priors on ln alpha_k, ln beta, widths sigma^2 = 2/gamma_k and 2/(N-gamma):
    + sum_k 1/2 ln(2/gamma_k) + 1/2 ln(2/(N-gamma))             (paper 001 eq. 11)
    ``full``: the Gamma hyperprior densities at the optimum (as densities of ln alpha, i.e.
    ln p(alpha) + ln alpha) and the normalised Gaussian widths sigma^2 = 2/(gamma_k + 2 a_k),
    2/(N - gamma + 2 a_beta), so that the result estimates ln p(D) with the hyperpriors
    integrated out, the same quantity as the chaining and variational methods.
    """
    prior = objective.prior
    n = objective.n_targets
    g_total = float(gamma.sum())
    if variant == "paper":
        g = np.maximum(gamma, 1e-12)
        return float(0.5 * np.sum(np.log(2.0 / g)) + 0.5 * np.log(2.0 / max(n - g_total, 1e-12)))
    var_alpha = 2.0 / (gamma + 2 * prior.shapes)
    var_beta = 2.0 / (n - g_total + 2 * noise_prior.shape)
    terms = prior.log_hyperprior(alpha) + float(np.sum(np.log(alpha)))
    terms += float(np.sum(0.5 * (LOG_2PI + np.log(var_alpha))))
    terms += float(noise_prior.logpdf(beta)) + np.log(beta) + 0.5 * (LOG_2PI + np.log(var_beta))
    return float(terms)


def canonical_weights(objective: PenalisedError, w: np.ndarray) -> np.ndarray:
    """A representative of w's symmetry class: each hidden unit's sign flipped so that its
    bias is non-negative (odd activations), then hidden units sorted by that bias."""
    net = objective.network
    if net.n_hidden == 0:
        return w.copy()
    p = net.unpack(w[None, :])
    W1, b1, W2, b2 = p["W1"][0], p["b1"][0], p["W2"][0], p["b2"][0]
    if net.activation.odd:
        sign = np.where(b1 < 0, -1.0, 1.0)
        W1, b1, W2 = W1 * sign[:, None], b1 * sign, W2 * sign[None, :]
    order = np.lexsort(np.column_stack([W1, b1]).T[::-1])
    return np.concatenate([W1[order].ravel(), b1[order], W2[:, order].ravel(), b2])


def distinct_modes(objective: PenalisedError, modes: list[np.ndarray], rtol: float) -> np.ndarray:
    """Boolean mask: True for the first occurrence of each mode up to the network symmetries."""
    canon = [canonical_weights(objective, w) for w in modes]
    keep = np.ones(len(modes), dtype=bool)
    for i in range(len(modes)):
        for j in range(i):
            if keep[j] and np.linalg.norm(canon[i] - canon[j]) <= rtol * (
                1.0 + np.linalg.norm(canon[j])
            ):
                keep[i] = False
                break
    return keep
