"""The variational lower bound on ln p(t) (thesis eq. 6.14), for ANY values of the factors'
parameters (not only after their updates), so that it can be evaluated after every update.

    L = sum_n <ln p(t_n | x_n, W, beta, mu)>  - sum_n KL(q(x_n) || p(x_n))
        + <ln p(W | alpha)> + H[q_W] + <ln p(mu)> + H[q_mu]
        - sum_i KL(q(alpha_i) || p(alpha_i)) - KL(q(beta) || p(beta)).

The source term -KL(q(x_n) || p(x_n)) = <ln p(x_n)> + H[q(x_n)] is the closed form of
``source_posterior`` (the normaliser Z_n of the M^I-component mixture), contrary to §6.5.6.
Right after a q_x update the source part of L equals
sum_n [P/2 (<ln beta> - ln 2 pi) - <beta>/2 (t_n^T t_n - 2 t_n^T<mu> + <mu^T mu>) + ln Z_n].
"""

from __future__ import annotations

import numpy as np

from ...runtime.jax_runtime import jax, jnp
from .state import Hyper, VBICAState, column_square_norms, gamma_log_mean
from .updates import expected_squared_errors

LOG_2PI = float(np.log(2.0 * np.pi))


def gamma_kl(shape_q, rate_q, shape_p, rate_p):
    """KL(Gamma(shape_q, rate_q) || Gamma(shape_p, rate_p)), elementwise."""
    gammaln, digamma = jax.scipy.special.gammaln, jax.scipy.special.digamma
    return (
        (shape_q - shape_p) * digamma(shape_q)
        - gammaln(shape_q)
        + gammaln(shape_p)
        + shape_p * (jnp.log(rate_q) - jnp.log(rate_p))
        + shape_q * (rate_p - rate_q) / rate_q
    )


def expected_log_likelihood(
    t, x_mean, x_second, w_mean, w_cov, mu_mean, mu_var, beta_mean, log_beta_mean
):
    """sum_n <ln p(t_n | x_n, W, beta, mu)> with p from eq. 6.2 (corrected):
    NP/2 (<ln beta> - ln 2 pi) - <beta>/2 sum_n E_n. Point masses: w_cov = 0, mu_var = 0,
    log_beta_mean = ln beta."""
    errors = expected_squared_errors(t, x_mean, x_second, w_mean, w_cov, mu_mean, mu_var)
    return 0.5 * t.size * (log_beta_mean - LOG_2PI) - 0.5 * beta_mean * jnp.sum(errors)


def mixing_term(w_mean, w_cov, alpha_mean, log_alpha_mean):
    """<ln p(W | alpha)> + H[q_W] (6.9, 6.18):
    sum_i [P/2 (<ln alpha_i> - ln 2 pi) - <alpha_i>/2 <w_i^T w_i>] + P [I/2 (1 + ln 2 pi)
    + 1/2 ln|Sigma_w|]."""
    n_obs, n_src = w_mean.shape
    prior = jnp.sum(
        0.5 * n_obs * (log_alpha_mean - LOG_2PI)
        - 0.5 * alpha_mean * column_square_norms(w_mean, w_cov)
    )
    log_det = 2.0 * jnp.sum(jnp.log(jnp.diag(jnp.linalg.cholesky(w_cov))))
    return prior + n_obs * (0.5 * n_src * (1.0 + LOG_2PI) + 0.5 * log_det)


def mean_term(mu_mean, mu_var, mean_precision):
    """<ln p(mu)> + H[q_mu] (6.11, 6.17):
    P/2 (ln tau - ln 2 pi) - tau/2 <mu^T mu> + P/2 (1 + ln 2 pi + ln Sigma_mu)."""
    n_obs = mu_mean.shape[0]
    mu_sq = jnp.sum(mu_mean**2) + n_obs * mu_var
    return (
        0.5 * n_obs * (jnp.log(mean_precision) - LOG_2PI)
        - 0.5 * mean_precision * mu_sq
        + 0.5 * n_obs * (1.0 + LOG_2PI + jnp.log(mu_var))
    )


def bound_terms(state: VBICAState, t, hyper: Hyper) -> dict:
    """The terms of eq. 6.14, each a scalar."""
    alpha_log = gamma_log_mean(state.alpha_shape, state.alpha_rate)
    beta_log = gamma_log_mean(state.beta_shape, state.beta_rate)
    return {
        "likelihood": expected_log_likelihood(
            t,
            state.x_mean,
            state.x_second,
            state.w_mean,
            state.w_cov,
            state.mu_mean,
            state.mu_var,
            state.beta_mean,
            beta_log,
        ),  # fmt: skip
        "sources": -jnp.sum(state.x_kl),
        "mixing": mixing_term(state.w_mean, state.w_cov, state.alpha_mean, alpha_log),
        "mean": mean_term(state.mu_mean, state.mu_var, hyper.mean_precision),
        "alpha": -jnp.sum(
            gamma_kl(state.alpha_shape, state.alpha_rate, hyper.alpha_shape, hyper.alpha_rate)
        ),
        "beta": -gamma_kl(state.beta_shape, state.beta_rate, hyper.beta_shape, hyper.beta_rate),
    }


@jax.jit
def lower_bound(state: VBICAState, t, hyper: Hyper):
    """L of eq. 6.14 (the sum of ``bound_terms``)."""
    return sum(bound_terms(state, t, hyper).values())
