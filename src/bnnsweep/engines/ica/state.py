"""The factors of q(x, W, mu, alpha, beta) (thesis eq. 6.13, forms 6.16-6.20) held as one
state of arrays, and the hyperparameters of the priors (6.6-6.11) as arrays for jit."""

from __future__ import annotations

from typing import NamedTuple

from ...runtime.jax_runtime import jax, jnp
from .source_posterior import CombinationTables, source_posterior


class Hyper(NamedTuple):
    """Prior constants: Gamma(a, b) on each alpha_i (6.10) and on beta (6.6), precision tau of
    the Gaussian prior on mu (6.11)."""

    alpha_shape: jax.Array
    alpha_rate: jax.Array
    beta_shape: jax.Array
    beta_rate: jax.Array
    mean_precision: jax.Array

    @classmethod
    def from_prior(cls, prior) -> Hyper:
        """From a ``models.ica.ICAPrior``."""
        return cls(*(jnp.asarray(float(v)) for v in (
            prior.alpha.shape, prior.alpha.rate, prior.beta.shape, prior.beta.rate,
            prior.mean_precision)))  # fmt: skip


class VBICAState(NamedTuple):
    """q_x (6.16) by its tilt (Lam, h_n) with the moments derived from it; q_W (6.18): rows
    w_p ~ N(w_mean[p], w_cov); q_mu (6.17): N(mu_mean, mu_var I); q_alpha (6.19):
    Gamma(alpha_shape, alpha_rate[i]); q_beta (6.20): Gamma(beta_shape, beta_rate)."""

    x_tilt_precision: jax.Array  # (I, I)
    x_tilt_linear: jax.Array  # (N, I)
    x_mean: jax.Array  # (N, I)
    x_second: jax.Array  # (N, I, I)
    x_kl: jax.Array  # (N,)
    w_mean: jax.Array  # (P, I)
    w_cov: jax.Array  # (I, I)
    mu_mean: jax.Array  # (P,)
    mu_var: jax.Array  # ()
    alpha_shape: jax.Array  # ()
    alpha_rate: jax.Array  # (I,)
    beta_shape: jax.Array  # ()
    beta_rate: jax.Array  # ()

    @property
    def alpha_mean(self):
        return self.alpha_shape / self.alpha_rate

    @property
    def beta_mean(self):
        return self.beta_shape / self.beta_rate


def with_source_tilt(state: VBICAState, tilt_precision, tilt_linear, tables: CombinationTables):
    """The state with q_x replaced by the tilt (Lam, h_n) and its moments (D.12-D.16)."""
    mom = source_posterior(tilt_precision, tilt_linear, tables)
    return state._replace(
        x_tilt_precision=tilt_precision,
        x_tilt_linear=tilt_linear,
        x_mean=mom.mean,
        x_second=mom.second,
        x_kl=mom.kl,
    )


def gamma_log_mean(shape, rate):
    """<ln tau> under Gamma(shape, rate)."""
    return jax.scipy.special.digamma(shape) - jnp.log(rate)


def mixing_gram(w_mean, w_cov):
    """<W^T W> = <W>^T <W> + P Sigma_w for independent rows sharing Sigma_w (6.18)."""
    return w_mean.T @ w_mean + w_mean.shape[0] * w_cov


def column_square_norms(w_mean, w_cov):
    """<w_i^T w_i> for each column i of W, (I,) (in 6.26)."""
    return jnp.sum(w_mean**2, axis=0) + w_mean.shape[0] * jnp.diag(w_cov)
