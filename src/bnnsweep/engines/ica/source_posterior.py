"""q(x_n), the variational posterior of one data point's sources: a mixture of M^I Gaussians
(thesis appendix D, eqs. D.1-D.16).

Every q_x the updates produce has the form of a tilted prior,

    q(x_n) = exp(-1/2 x_n^T Lam x_n + h_n^T x_n) p(x_n) / Z_n,                       (D.5)

with Lam = <beta><W^T W> shared by all points and h_n = <beta><W>^T (t_n - <mu>) (D.4,
corrected: the text has x_n^T <W> (t_n - <mu>)^T, a misplaced transpose). The pair
(Lam, h_n) is therefore the parameter of q_x used here, and any positive semi-definite Lam
and any h_n give a valid q_x. Expanding p(x_n) = prod_i sum_m (6.4) into M^I products (D.6)
gives one Gaussian per combination k of components (D.7-D.12):

    D_k = (Lam + B_k^-1)^-1                                                          (D.10)
    f_nk = D_k (h_n + B_k^-1 m_k)                                                     (D.11)
    pi~_nk = pi_k |D_k|^1/2 |B_k|^-1/2 exp(-1/2 m_k^T B_k^-1 m_k + 1/2 f_nk^T D_k^-1 f_nk)  (D.13)
    Z_n = sum_k pi~_nk                                                                (D.14)

D.13 is exactly the integral of exp(-1/2 x^T Lam x + h^T x) pi_k N(x | m_k, B_k), so Z_n is
the normaliser of (D.5) (checked against quadrature in the tests). The moments are D.15-D.16.

The bound needs E_q[ln p(x_n) - ln q(x_n)], which for a mixture posterior the thesis
(§6.5.6) thought uncomputable. It is not: from (D.5),
ln q - ln p = -1/2 x^T Lam x + h^T x - ln Z_n, so

    KL(q(x_n) || p(x_n)) = -1/2 Tr(Lam <x_n x_n^T>) + h_n^T <x_n> - ln Z_n,

a closed form over the M^I components, for ANY tilt, optimal or not. (It also equals
KL(r_n || pi) + sum_k r_nk KL(N(f_nk, D_k) || N(m_k, B_k)): the component given x has the
same law under q as under p, since the tilt depends on x alone; this form is the one
computed, being free of cancellation at small noise.)
"""

from __future__ import annotations

from typing import NamedTuple

from ...runtime.jax_runtime import jax, jnp


class CombinationTables(NamedTuple):
    """The M^I component combinations of the source prior (D.6-D.8)."""

    log_weight: jax.Array  # (K,) ln pi_k = sum_i ln pi_{i, k_i}
    means: jax.Array  # (K, I) m_k
    precisions: jax.Array  # (K, I) diag B_k^-1


class SourceMoments(NamedTuple):
    mean: jax.Array  # (N, I) <x_n>
    second: jax.Array  # (N, I, I) <x_n x_n^T>
    log_normaliser: jax.Array  # (N,) ln Z_n
    kl: jax.Array  # (N,) KL(q(x_n) || p(x_n))


def combination_tables(sources) -> CombinationTables:
    """Tables for a ``models.ica.SourceMixture``."""
    log_weight, means, variances = sources.combination_tables()
    return CombinationTables(
        jnp.asarray(log_weight), jnp.asarray(means), 1.0 / jnp.asarray(variances)
    )


def cholesky_solve(chol, rhs):
    """x with (L L^T) x = rhs by forward and back substitution, unrolled over the I sources
    and broadcast over leading axes: chol (..., I, I) lower triangular, rhs (..., I).
    (XLA's batched triangular solve is very slow on CPU for thousands of right-hand sides.)"""
    n = chol.shape[-1]
    y = []
    for i in range(n):
        acc = rhs[..., i]
        for j in range(i):
            acc = acc - chol[..., i, j] * y[j]
        y.append(acc / chol[..., i, i])
    x = [None] * n
    for i in reversed(range(n)):
        acc = y[i]
        for j in range(i + 1, n):
            acc = acc - chol[..., j, i] * x[j]
        x[i] = acc / chol[..., i, i]
    return jnp.stack(x, axis=-1)


def component_gaussians(tilt_precision, tilt_linear, tables: CombinationTables):
    """(D_k, f_nk, ln pi~_nk - c_n, c_n) of eqs. D.10, D.11, D.13: shapes (K, I, I),
    (N, K, I), (N, K), (N,).

    At small noise Lam is of order <beta> and h_n of order <beta> |t|, so f_nk^T D_k^-1 f_nk
    in D.13 is huge and nearly the same for every k; computed naively its rounding error
    (and that of D_k h_n) is of order one nat. Here f_nk = u_nk + D_k B_k^-1 m_k with
    u_nk = D_k h_n from a Cholesky solve, and the k-independent part c_n = 1/2 h_n^T u_n0,
    u_n0 = (Lam + Pbar)^-1 h_n (Pbar the mean of the B_k^-1), is split off exactly:
    h^T D_k h = h^T u_n0 + u_nk^T (Pbar - B_k^-1) u_n0."""
    n_sources = tilt_precision.shape[0]
    prec = tilt_precision[None] + jax.vmap(jnp.diag)(tables.precisions)  # D_k^-1
    chol = jnp.linalg.cholesky(prec)
    cov = jnp.swapaxes(cholesky_solve(chol, jnp.eye(n_sources)[:, None, :]), 0, 1)  # D.10
    cov = 0.5 * (cov + jnp.swapaxes(cov, 1, 2))
    prior_pull = tables.precisions * tables.means  # b_k = B_k^-1 m_k, (K, I)
    u = cholesky_solve(chol, tilt_linear[:, None, :])  # D_k h_n, (N, K, I)
    pulled = cholesky_solve(chol, prior_pull)  # D_k b_k, (K, I)
    f = u + pulled[None]  # D.11
    mean_prec = jnp.mean(tables.precisions, axis=0)
    chol0 = jnp.linalg.cholesky(tilt_precision + jnp.diag(mean_prec))
    u0 = cholesky_solve(chol0, tilt_linear)  # (N, I)
    shift = 0.5 * jnp.sum(tilt_linear * u0, axis=1)  # c_n
    log_det_cov = -2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=1, axis2=2)), axis=1)
    quad = (
        0.5 * jnp.einsum("nki,ki,ni->nk", u, mean_prec[None] - tables.precisions, u0)
        + jnp.einsum("ki,nki->nk", prior_pull, u)
        + 0.5 * jnp.sum(prior_pull * pulled, axis=1)[None]
    )  # 1/2 g^T D_k g - c_n with g = h_n + b_k
    log_tilde = (
        tables.log_weight
        + 0.5 * log_det_cov
        + 0.5 * jnp.sum(jnp.log(tables.precisions), axis=1)
        - 0.5 * jnp.sum(prior_pull * tables.means, axis=1)
    )[None] + quad  # D.13 less c_n
    return cov, f, log_tilde, shift


@jax.jit
def source_posterior(tilt_precision, tilt_linear, tables: CombinationTables) -> SourceMoments:
    """Moments (D.15, D.16), ln Z_n (D.14) and KL(q || p) of q(x_n) for the tilt (Lam, h_n).

    The KL is evaluated as KL(r_n || pi) + sum_k r_nk KL(N(f_nk, D_k) || N(m_k, B_k)),
    r_nk = pi~_nk / Z_n, which equals -1/2 Tr(Lam <x x^T>) + h^T <x> - ln Z_n exactly (use
    Lam f_nk = h_n + B_k^-1 (m_k - f_nk) and ln Z_n = ln pi~_nk - ln r_nk) but without
    its cancellation between terms of order <beta> |t|^2 when the noise is small."""
    cov, f, log_tilde, shift = component_gaussians(tilt_precision, tilt_linear, tables)
    log_z_shifted = jax.scipy.special.logsumexp(log_tilde, axis=1)
    log_resp = log_tilde - log_z_shifted[:, None]
    log_z = log_z_shifted + shift
    resp = jnp.exp(log_resp)  # pi~_nk / Z_n
    mean = jnp.einsum("nk,nki->ni", resp, f)  # D.15
    second = jnp.einsum("nk,kij->nij", resp, cov) + jnp.einsum(
        "nk,nki,nkj->nij", resp, f, f
    )  # D.16
    n_sources = tilt_precision.shape[0]
    prec_diag_cov = jnp.einsum("ki,kii->k", tables.precisions, cov)  # Tr(B_k^-1 D_k)
    log_det = jnp.linalg.slogdet(cov)[1] + jnp.sum(jnp.log(tables.precisions), axis=1)
    gauss_kl = 0.5 * (prec_diag_cov - n_sources - log_det)[None] + 0.5 * jnp.sum(
        tables.precisions * (f - tables.means) ** 2, axis=2
    )
    kl = jnp.sum(resp * (log_resp - tables.log_weight + gauss_kl), axis=1)
    return SourceMoments(mean, second, log_z, kl)
