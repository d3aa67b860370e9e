"""Free-form Gamma hyper-posteriors q(alpha_g), q(beta) of the variational methods and their
terms of the lower bound on ln p(D).

With q(w, alpha, beta) = q(w) q(alpha) q(beta) the optimal q(alpha_g), q(beta) are Gamma
(paper 000 eq. 34-38, thesis eq. 5.36-5.47, with the corrections of papers/README.md):

  a_g' = a_g + W_g / 2,  b_g' = b_g + 1/2 sum_m Q(m) sum_{k in g} <w_k^2>_m,
  a_beta' = a_beta + N P / 2,  b_beta' = b_beta + sum_m Q(m) <E_D>_m,

where <w_k^2>_m = C_m,kk + wbar_m,k^2 (000 B.5 corrected) and Q(m) are the mixture weights
(a single Gaussian has Q = 1). Under ``nrd`` a weight's precision is the product of its two
nodes' hyperparameters (thesis eq. 6.32); with q factorised over nodes (eq. 6.40) each node's
update (eq. 6.44-6.49) is

  a_g' = a_g + n_g / 2,  b_g' = b_g + 1/2 sum_{k touches g} <alpha_other(k)> <w_k^2>,

which depends on the other nodes, so nodes are updated one at a time (each an exact
coordinate step, so the bound cannot fall) for a few sweeps.

The bound terms that involve the hyperparameters (paper 000 eq. B.1-B.3):

  E ln p(D | w, beta) = N P / 2 (<ln beta> - ln 2 pi) - <beta> <E_D>,
  E ln p(w | alpha)   = sum_k 1/2 (<ln alpha_(k)> - ln 2 pi) - 1/2 <alpha_(k)> <w_k^2>,
  E ln p(alpha) + H[q(alpha)] = -KL(q(alpha) || p(alpha)), likewise for beta,

with <ln tau> = psi(a) - ln b (B.2) and the Gamma KL divergence from B.2-B.3. ``fixed``
hyper-posteriors are point masses at given values: the KL terms vanish and updates do nothing
(the bound is then on ln p(D | alpha, beta)).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...models.priors import GammaPrior, WeightPrior

LOG_2PI = np.log(2.0 * np.pi)


def gamma_kl(shape_q, rate_q, shape_p, rate_p):
    """KL(Gamma(shape_q, rate_q) || Gamma(shape_p, rate_p)), elementwise (from paper 000
    eq. B.2-B.3: minus the entropy of q minus E_q ln p)."""
    from scipy.special import digamma, gammaln

    return (
        (shape_q - shape_p) * digamma(shape_q)
        - gammaln(shape_q)
        + gammaln(shape_p)
        + shape_p * (np.log(rate_q) - np.log(rate_p))
        + shape_q * (rate_p - rate_q) / rate_q
    )


def mixture_second_moment(weights, means, variances) -> np.ndarray:
    """sum_m Q(m) (C_m,kk + wbar_m,k^2), shape (W,), for means/variances (M, W) or (W,)."""
    means, variances = np.atleast_2d(means), np.atleast_2d(variances)
    weights = np.broadcast_to(np.asarray(weights, dtype=float), (means.shape[0],))
    return weights @ (variances + means * means)


@dataclass
class HyperPosterior:
    """q(alpha) over the prior's groups (nodes under ``nrd``) and q(beta)."""

    prior: WeightPrior
    noise_prior: GammaPrior
    n_targets: int
    alpha_shape: np.ndarray
    alpha_rate: np.ndarray
    beta_shape: float
    beta_rate: float
    fixed: bool = False
    node_sweeps: int = 20
    counts: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        K = self.prior.n_groups
        counts = np.bincount(self.prior.group_index, minlength=K)
        if self.prior.partner_index is not None:
            counts = counts + np.bincount(self.prior.partner_index, minlength=K)
        self.counts = counts  # weights touching each group

    # ---- construction -----------------------------------------------------------------
    @classmethod
    def initial(cls, prior: WeightPrior, noise_prior: GammaPrior, n_targets: int, **kw):
        """q(alpha_g), q(beta) with the hyperprior means and the posterior shapes (paper 002
        sec. 2.1: start from the mean of the hyperprior distributions)."""
        post = cls(prior, noise_prior, n_targets, prior.shapes.copy(), prior.rates.copy(),
                   noise_prior.shape, noise_prior.rate, **kw)  # fmt: skip
        shape = prior.shapes + 0.5 * post.counts
        post.alpha_rate = shape / (prior.shapes / prior.rates)
        post.alpha_shape = shape
        post.beta_shape = noise_prior.shape + 0.5 * n_targets
        post.beta_rate = post.beta_shape / noise_prior.mean
        return post

    @classmethod
    def point_mass(cls, prior: WeightPrior, noise_prior: GammaPrior, n_targets: int,
                   alpha, beta: float):  # fmt: skip
        """Fixed hyperparameters alpha (K,), beta: the bound is on ln p(D | alpha, beta)."""
        alpha = np.broadcast_to(np.asarray(alpha, dtype=float), (prior.n_groups,)).copy()
        return cls(prior, noise_prior, n_targets, alpha, np.ones_like(alpha), float(beta), 1.0,
                   fixed=True)  # fmt: skip

    # ---- expectations -----------------------------------------------------------------
    @property
    def alpha_mean(self) -> np.ndarray:
        return self.alpha_shape if self.fixed else self.alpha_shape / self.alpha_rate

    @property
    def alpha_log_mean(self) -> np.ndarray:
        from scipy.special import digamma

        if self.fixed:
            return np.log(self.alpha_shape)
        return digamma(self.alpha_shape) - np.log(self.alpha_rate)

    @property
    def beta_mean(self) -> float:
        return self.beta_shape if self.fixed else self.beta_shape / self.beta_rate

    @property
    def beta_log_mean(self) -> float:
        from scipy.special import digamma

        if self.fixed:
            return float(np.log(self.beta_shape))
        return float(digamma(self.beta_shape) - np.log(self.beta_rate))

    @property
    def noise_variance_mean(self) -> float:
        """E_q[1 / beta] = b / (a - 1)."""
        if self.fixed:
            return 1.0 / self.beta_shape
        return self.beta_rate / (self.beta_shape - 1.0)

    def weight_precision(self) -> np.ndarray:
        """<alpha_(k)> per weight, shape (W,) (a product of node means under ``nrd``)."""
        return self.prior.per_weight(self.alpha_mean)

    def weight_log_precision(self) -> np.ndarray:
        log_mean = self.alpha_log_mean
        out = log_mean[self.prior.group_index]
        if self.prior.partner_index is not None:
            out = out + log_mean[self.prior.partner_index]
        return out

    # ---- updates ----------------------------------------------------------------------
    def update_alpha(self, second_moment: np.ndarray) -> None:
        """Optimal q(alpha) given sum_m Q(m) <w_k^2>_m (shape (W,))."""
        if self.fixed:
            return
        prior = self.prior
        self.alpha_shape = prior.shapes + 0.5 * self.counts
        first, second = prior.group_index, prior.partner_index
        if second is None:
            half_ss = 0.5 * np.bincount(first, weights=second_moment, minlength=prior.n_groups)
            self.alpha_rate = prior.rates + half_ss
            return
        for _ in range(self.node_sweeps):
            for g in range(prior.n_groups):
                mean = self.alpha_shape / self.alpha_rate
                as_first, as_second = first == g, second == g
                total = np.sum(second_moment[as_first] * mean[second[as_first]]) + np.sum(
                    second_moment[as_second] * mean[first[as_second]]
                )
                self.alpha_rate[g] = prior.rates[g] + 0.5 * total

    def update_beta(self, expected_error: float) -> None:
        """Optimal q(beta) given sum_m Q(m) <E_D>_m."""
        if self.fixed:
            return
        self.beta_shape = self.noise_prior.shape + 0.5 * self.n_targets
        self.beta_rate = self.noise_prior.rate + expected_error

    # ---- bound terms ------------------------------------------------------------------
    def data_term(self, expected_error: float) -> float:
        """E_q ln p(D | w, beta)."""
        return (
            0.5 * self.n_targets * (self.beta_log_mean - LOG_2PI) - self.beta_mean * expected_error
        )

    def weight_term(self, second_moment: np.ndarray) -> float:
        """E_q ln p(w | alpha)."""
        return float(
            np.sum(0.5 * (self.weight_log_precision() - LOG_2PI))
            - 0.5 * np.sum(self.weight_precision() * second_moment)
        )

    def kl(self) -> float:
        """KL(q(alpha) || p(alpha)) + KL(q(beta) || p(beta)) (zero for point masses)."""
        if self.fixed:
            return 0.0
        prior = self.prior
        return float(
            np.sum(gamma_kl(self.alpha_shape, self.alpha_rate, prior.shapes, prior.rates))
            + gamma_kl(
                self.beta_shape, self.beta_rate, self.noise_prior.shape, self.noise_prior.rate
            )
        )

    def bound(self, expected_error: float, second_moment: np.ndarray, entropy: float) -> float:
        """The whole lower bound given the q(w) statistics and its entropy term."""
        return (
            self.data_term(expected_error) + self.weight_term(second_moment) - self.kl() + entropy
        )
