"""Bayesian independent component analysis (thesis §6.5, eqs. 6.1-6.12): the generative
model, its exact likelihood for known parameters, and the §6.5.5 data sets.

The model, for N data points t_n in R^P and I sources x_n in R^I:

- sources (6.1, 6.4): x_ni independent, each a mixture of M Gaussians,
  p(x_ni) = sum_m pi_im N(x_ni | m_im, s2_im). The thesis uses the same fixed components
  for every source; here each source may have its own (fixed) components, arrays (I, M);
- observations (6.2, corrected): p(t_n | x_n, W, beta, mu)
  = (beta / 2 pi)^(P/2) exp(-beta/2 ||t_n - W x_n - mu||^2). The extracted text lost the
  minus sign in the exponent and the power P/2 of the normaliser (the one-dimensional
  sqrt(beta / 2 pi) is a density only for P = 1);
- W is P x I; ARD prior (6.9) w_pi ~ N(0, 1/alpha_i) on the i-th COLUMN (the weights leaving
  source i), alpha_i ~ Gamma(a_alpha, b_alpha) (6.10), beta ~ Gamma(a_beta, b_beta) (6.6),
  mu_p ~ N(0, 1/tau) (6.11; tau is a precision, "inverse variance" in the text).

``marginal_log_likelihood`` is ln p(t | W, mu, beta) (6.5) by summing over the M^I component
combinations: given the components, t_n is Gaussian with mean W m_k + mu and covariance
W B_k W^T + I / beta. The engine's bound is tested against it.

Data (§6.5.5): ``toy_mixture_data`` (figs. 6.9-6.10) and ``image_mixing_data`` (figs.
6.11-6.14, with generated sub-Gaussian images in place of the Corel photographs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from .binary_states import all_states
from .priors import GammaPrior

LOG_2PI = np.log(2.0 * np.pi)
MAX_COMBINATIONS = 4096


def component_combinations(n_components: int, n_sources: int) -> np.ndarray:
    """The (M^I, I) integer array of every assignment of a component to each source; row k
    holds the base-M digits of k, source 0 first (for M = 2 the rows of ``all_states``)."""
    n_combos = n_components**n_sources
    if n_combos > MAX_COMBINATIONS:
        raise ValueError(
            f"{n_components}^{n_sources} = {n_combos} component combinations is too many "
            f"(limit {MAX_COMBINATIONS}); the mixture posterior grows as M^I (§6.5.6)"
        )
    if n_components == 2:
        return all_states(n_sources).astype(int)
    k = np.arange(n_combos)[:, None]
    return (k // n_components ** np.arange(n_sources)[None, :]) % n_components


@dataclass(frozen=True)
class SourceMixture:
    """Fixed mixture-of-Gaussians source densities (6.4), arrays (I, M): one row a source."""

    weights: np.ndarray
    means: np.ndarray
    variances: np.ndarray

    def __post_init__(self) -> None:
        w, m, v = (np.atleast_2d(np.asarray(a, dtype=float)) for a in self.arrays())
        if not (w.shape == m.shape == v.shape):
            raise ValueError(
                f"weights, means, variances differ in shape: {w.shape} {m.shape} {v.shape}"
            )
        if np.any(w <= 0) or not np.allclose(w.sum(axis=1), 1.0):
            raise ValueError("each source's component weights must be positive and sum to 1")
        if np.any(v <= 0):
            raise ValueError("component variances must be positive")
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "means", m)
        object.__setattr__(self, "variances", v)

    def arrays(self):
        return self.weights, self.means, self.variances

    @classmethod
    def shared(cls, n_sources: int, weights, means, variances) -> SourceMixture:
        """The same components for every source, as in the thesis."""
        rows = [
            np.tile(np.asarray(a, dtype=float), (n_sources, 1)) for a in (weights, means, variances)
        ]
        return cls(*rows)

    @property
    def n_sources(self) -> int:
        return self.weights.shape[0]

    @property
    def n_components(self) -> int:
        return self.weights.shape[1]

    def without(self, source: int) -> SourceMixture:
        """The mixture with one source removed (for source removal)."""
        keep = np.arange(self.n_sources) != source
        return SourceMixture(self.weights[keep], self.means[keep], self.variances[keep])

    def variance(self) -> np.ndarray:
        """Each source's variance, (I,)."""
        mean = np.sum(self.weights * self.means, axis=1)
        return np.sum(self.weights * (self.variances + self.means**2), axis=1) - mean**2

    def log_density(self, x: np.ndarray) -> np.ndarray:
        """ln p(x_ni) per source (6.4), (N, I) for x of shape (N, I)."""
        x = np.asarray(x, dtype=float)[..., None]
        comp = (
            np.log(self.weights)
            - 0.5 * (LOG_2PI + np.log(self.variances))
            - 0.5 * (x - self.means) ** 2 / self.variances
        )
        return logsumexp(comp, axis=-1)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n draws of the sources, (n, I)."""
        cum = np.cumsum(self.weights, axis=1)
        u = rng.random((n, self.n_sources))
        comp = np.minimum((u[:, :, None] > cum[None]).sum(axis=2), self.n_components - 1)
        rows = np.arange(self.n_sources)[None, :]
        return self.means[rows, comp] + np.sqrt(self.variances[rows, comp]) * rng.standard_normal(
            (n, self.n_sources)
        )

    def combination_tables(self):
        """(log pi_k, means m_k, variances diag B_k) for every combination k (D.6-D.8):
        shapes (K,), (K, I), (K, I) with K = M^I."""
        combos = component_combinations(self.n_components, self.n_sources)
        rows = np.arange(self.n_sources)[None, :]
        log_weight = np.log(self.weights[rows, combos]).sum(axis=1)
        return log_weight, self.means[rows, combos], self.variances[rows, combos]


@dataclass(frozen=True)
class ICAPrior:
    """Priors of the Bayesian ICA model (6.6-6.11) and the fixed source densities (6.4)."""

    sources: SourceMixture
    alpha: GammaPrior = field(default_factory=lambda: GammaPrior(1e-3, 1e-3))
    beta: GammaPrior = field(default_factory=lambda: GammaPrior(1e-3, 1e-3))
    mean_precision: float = 1e-3

    def __post_init__(self) -> None:
        if not self.mean_precision > 0:
            raise ValueError(
                f"mean_precision (tau, 6.11) must be positive, got {self.mean_precision}"
            )

    @property
    def n_sources(self) -> int:
        return self.sources.n_sources

    def without(self, source: int) -> ICAPrior:
        return ICAPrior(self.sources.without(source), self.alpha, self.beta, self.mean_precision)


def marginal_log_likelihood(t, mixing, mean, beta, sources: SourceMixture) -> float:
    """ln p(t | W, mu, beta) (6.5): sum_n ln sum_k pi_k N(t_n | W m_k + mu, W B_k W^T + I/beta),
    the sources integrated out exactly over the M^I component combinations."""
    t = np.atleast_2d(np.asarray(t, dtype=float))
    w = np.asarray(mixing, dtype=float)
    n_obs = t.shape[1]
    log_weight, comb_means, comb_vars = sources.combination_tables()
    terms = []
    for lw, mk, vk in zip(log_weight, comb_means, comb_vars, strict=True):
        cov = (w * vk) @ w.T + np.eye(n_obs) / beta
        chol = np.linalg.cholesky(cov)
        z = np.linalg.solve(chol, (t - w @ mk - mean).T)
        terms.append(
            lw - 0.5 * np.sum(z * z, axis=0) - np.sum(np.log(np.diag(chol))) - 0.5 * n_obs * LOG_2PI
        )
    return float(np.sum(logsumexp(np.array(terms), axis=0)))


# ---- data sets of §6.5.5 -------------------------------------------------------------------


@dataclass(frozen=True)
class MixedData:
    """Observations t = sources @ mixing^T + mean + noise, with the truth kept for scoring."""

    t: np.ndarray  # (N, P)
    sources: np.ndarray  # (N, I_true)
    mixing: np.ndarray  # (P, I_true)
    noise_variance: float


def toy_source_mixture(n_sources: int) -> SourceMixture:
    """§6.5.5 toy sources: two zero-mean components, variances 1 and 50, equal weights."""
    return SourceMixture.shared(n_sources, [0.5, 0.5], [0.0, 0.0], [1.0, 50.0])


def image_source_mixture(n_sources: int) -> SourceMixture:
    """§6.5.5 image model sources: two unit-variance components at -1 and +1, equal
    weights (a sub-Gaussian density for the sub-Gaussian images)."""
    return SourceMixture.shared(n_sources, [0.5, 0.5], [-1.0, 1.0], [1.0, 1.0])


def toy_mixture_data(
    rng: np.random.Generator,
    n_points: int = 200,
    n_observed: int = 3,
    n_true_sources: int = 2,
    noise_variance: float = 1e-4,
) -> MixedData:
    """The toy of figs. 6.9-6.10: two sources from ``toy_source_mixture``, W ~ N(0, 1)
    (P x 2), N = 200, Gaussian noise. The thesis states an "inverse variance of the noise"
    of 1e-4, which read literally is a noise variance of 1e4 that would drown the sources
    (variance 25.5); it is taken as the noise VARIANCE."""
    sources = toy_source_mixture(n_true_sources).sample(rng, n_points)
    mixing = rng.standard_normal((n_observed, n_true_sources))
    noise = np.sqrt(noise_variance) * rng.standard_normal((n_points, n_observed))
    return MixedData(sources @ mixing.T + noise, sources, mixing, float(noise_variance))


def sub_gaussian_images(rng: np.random.Generator, side: int = 64) -> np.ndarray:
    """Two generated grey-scale images (2, side, side), each with negative excess kurtosis:
    a sum of two oblique sinusoidal gratings, and a smoothed random field pushed through
    tanh (large patches of light and dark), both standardised to mean 0, variance 1."""
    u, v = np.meshgrid(np.linspace(0, 1, side), np.linspace(0, 1, side), indexing="ij")
    phase = rng.uniform(0, 2 * np.pi, 2)
    grating = np.sin(2 * np.pi * (3.0 * u + 1.0 * v) + phase[0]) + np.sin(
        2 * np.pi * (-1.0 * u + 4.0 * v) + phase[1]
    )
    field = rng.standard_normal((side, side))
    freq = np.fft.fftfreq(side)
    kernel = np.exp(-0.5 * (freq[:, None] ** 2 + freq[None, :] ** 2) / 0.04**2)
    smooth = np.real(np.fft.ifft2(np.fft.fft2(field) * kernel))
    patches = np.tanh(3.0 * smooth / smooth.std())
    images = np.stack([grating, patches])
    images = images - images.mean(axis=(1, 2), keepdims=True)
    return images / images.std(axis=(1, 2), keepdims=True)


def excess_kurtosis(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """E[(x - m)^4] / var^2 - 3 along ``axis`` (negative: sub-Gaussian)."""
    c = x - x.mean(axis=axis, keepdims=True)
    return np.mean(c**4, axis=axis) / np.mean(c**2, axis=axis) ** 2 - 3.0


def image_mixing_data(
    rng: np.random.Generator,
    mixing: np.ndarray | None = None,
    n_pixels: int = 1000,
    n_observed: int = 3,
    noise_fraction: float = 0.078,
    side: int = 64,
) -> MixedData:
    """The image experiment of figs. 6.11-6.14: 1000 pixels sub-sampled from two
    sub-Gaussian images, mixed by ``mixing`` (the toy's W ~ N(0, 1) if None), plus Gaussian
    noise whose variance is ``noise_fraction`` (7.8 %) of the mixed signal's mean variance."""
    images = sub_gaussian_images(rng, side).reshape(2, -1)
    pixels = rng.choice(images.shape[1], size=n_pixels, replace=False)
    sources = images[:, pixels].T
    if mixing is None:
        mixing = rng.standard_normal((n_observed, 2))
    signal = sources @ mixing.T
    noise_variance = noise_fraction * float(np.mean(signal.var(axis=0)))
    noise = np.sqrt(noise_variance) * rng.standard_normal(signal.shape)
    return MixedData(signal + noise, sources, np.asarray(mixing, dtype=float), noise_variance)
