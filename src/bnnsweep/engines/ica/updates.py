"""The coordinate updates of q(x), q(W), q(mu), q(alpha), q(beta) (thesis eqs. 6.15-6.29
and D.4, D.10-D.11): each returns the state with one factor set to exp<ln p(t, theta)>
over the others, the exact maximiser of the bound over that factor.

Corrections to the extracted text (checked in tests/test_vb_ica*.py):
- 6.21 lost the factor <beta>: m_w^(p) = Sigma_w <beta> sum_n <x_n> (t_np - <mu_p>)
  (and the text's mu_p is the mean <mu_p>);
- 6.28-6.29: a "+" between <mu^T mu> and Tr(<W^T W><x x^T>) is missing; the bracket is
  E_n = <||t_n - W x_n - mu||^2> (``expected_squared_errors``);
- D.4: x_n^T <W>^T (t_n - <mu>), not x_n^T <W> (t_n - <mu>)^T.
"""

from __future__ import annotations

from ...runtime.jax_runtime import jax, jnp
from .source_posterior import CombinationTables
from .state import Hyper, VBICAState, column_square_norms, mixing_gram, with_source_tilt


def expected_squared_errors(t, x_mean, x_second, w_mean, w_cov, mu_mean, mu_var):
    """E_n = <||t_n - W x_n - mu||^2>, (N,) (the bracket of 6.28-6.29, corrected):
    t^T t + <mu^T mu> + Tr(<W^T W><x x^T>) + 2<mu>^T<W><x> - 2 t^T<W><x> - 2 t^T<mu>."""
    wx = x_mean @ w_mean.T  # <W><x_n>, (N, P)
    mu_sq = jnp.sum(mu_mean**2) + mu_mean.shape[0] * mu_var
    gram = mixing_gram(w_mean, w_cov)
    return (
        jnp.sum(t * t, axis=1)
        + mu_sq
        + jnp.einsum("ij,nij->n", gram, x_second)
        + 2.0 * wx @ mu_mean
        - 2.0 * jnp.sum(t * wx, axis=1)
        - 2.0 * t @ mu_mean
    )


def optimal_source_tilt(state: VBICAState, t):
    """Lam = <beta><W^T W> and h_n = <beta><W>^T (t_n - <mu>) (D.4 corrected, D.10-D.11)."""
    beta = state.beta_mean
    tilt_precision = beta * mixing_gram(state.w_mean, state.w_cov)
    tilt_linear = beta * (t - state.mu_mean) @ state.w_mean
    return tilt_precision, tilt_linear


@jax.jit
def update_sources(state: VBICAState, t, tables: CombinationTables) -> VBICAState:
    """q(x_n) from D.12-D.16 for every data point at once."""
    return with_source_tilt(state, *optimal_source_tilt(state, t), tables)


@jax.jit
def update_mixing(state: VBICAState, t) -> VBICAState:
    """q(W): Sigma_w = (diag<alpha> + <beta> sum_n <x x^T>)^-1 (6.22),
    m_w^(p) = Sigma_w <beta> sum_n <x_n> (t_np - <mu_p>) (6.21 with <beta> restored)."""
    beta = state.beta_mean
    prec = jnp.diag(state.alpha_mean) + beta * jnp.sum(state.x_second, axis=0)
    w_cov = jnp.linalg.inv(prec)
    w_cov = 0.5 * (w_cov + w_cov.T)
    w_mean = beta * (t - state.mu_mean).T @ state.x_mean @ w_cov  # rows m_w^(p)
    return state._replace(w_mean=w_mean, w_cov=w_cov)


@jax.jit
def update_mean(state: VBICAState, t, hyper: Hyper) -> VBICAState:
    """q(mu): Sigma_mu = (tau + N<beta>)^-1 (6.24),
    m_mu = Sigma_mu <beta> sum_n (t_n - <W><x_n>) (6.23)."""
    beta = state.beta_mean
    mu_var = 1.0 / (hyper.mean_precision + t.shape[0] * beta)
    mu_mean = mu_var * beta * jnp.sum(t - state.x_mean @ state.w_mean.T, axis=0)
    return state._replace(mu_mean=mu_mean, mu_var=mu_var)


@jax.jit
def update_alpha(state: VBICAState, hyper: Hyper) -> VBICAState:
    """q(alpha_i): shape a_alpha + P/2 (6.25), rate b_alpha + <w_i^T w_i>/2 (6.26), w_i the
    i-th column of W."""
    n_obs = state.w_mean.shape[0]
    return state._replace(
        alpha_shape=hyper.alpha_shape + 0.5 * n_obs,
        alpha_rate=hyper.alpha_rate + 0.5 * column_square_norms(state.w_mean, state.w_cov),
    )


@jax.jit
def update_beta(state: VBICAState, t, hyper: Hyper) -> VBICAState:
    """q(beta): shape a_beta + NP/2 (6.27), rate b_beta + 1/2 sum_n E_n (6.28-6.29)."""
    errors = expected_squared_errors(
        t, state.x_mean, state.x_second, state.w_mean, state.w_cov, state.mu_mean, state.mu_var
    )
    return state._replace(
        beta_shape=hyper.beta_shape + 0.5 * t.size,
        beta_rate=hyper.beta_rate + 0.5 * jnp.sum(errors),
    )
