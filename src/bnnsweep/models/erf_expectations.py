"""Closed-form moments of the network output under a Gaussian q(w), with analytic gradients.

The network is f_p(x) = sum_i v_pi g(a_i) + b_p, a_i = u_i . [x, 1], with the erf unit
g(a) = erf(a / sqrt 2) = 2 Phi(a) - 1 (papers/README.md) or the identity (``linear``). For
q(w) = N(m, C) we need <f_p(x_n)> and <f_p(x_n)^2>, from which the expected data error
<E_D> = 1/2 sum_n sum_p (t^2 - 2 t <f> + <f^2>) (paper 000 eq. B.6, paper 002 eq. 10-11).

Three paths, chosen by the shape of the covariance:

- no hidden layer (H = 0): f is linear in w, <f^2> = <f>^2 + x~^T C x~;
- diagonal C (paper 000 B.16-B.18, Hinton & van Camp): <g(a)> = g(mu / sqrt(1 + S)) and
  <g(a)^2> = 1 - 8 T(h, 1 / sqrt(1 + 2 S)), h = mu / sqrt(1 + S), with Owen's T (exact, from
  E[Phi(a)^2] = Phi(h) - 2 T(h, 1/sqrt(1 + 2S))) or the paper's approximation
  g(x)^2 ~ 1 - exp(-c x^2 / 2), c = 1.24 (B.18); terms of different hidden units factorise;
- full C (paper 002 eq. 12-17, and ``fa`` through C = D + U U^T, eq. 18): every pair term
  <v_i v_j g(a_i) g(a_j)> has (v_i, v_j, a_i, a_j) jointly Gaussian. Stein's lemma removes
  the v's exactly (the closed-form counterpart of paper 002 eq. 13-16):

    <v_i v_j g(a) g(b)> = (m_i m_j + C_ij) D00 + (m_i c_ja + m_j c_ia) D10
                          + (m_i c_jb + m_j c_ib) D01 + c_ia c_ja D20
                          + (c_ia c_jb + c_ib c_ja) D11 + c_ib c_jb D02,

  with c_ia = Cov(v_i, a) and D_kl = E[g^(k)(a) g^(l)(b)] over the bivariate Gaussian of
  (a, b). D00 is a bivariate normal CDF (evaluated exactly through Owen's T), D_kl with
  k, l >= 1 are derivatives of the Gaussian density N(mu; 0, I + S), and D_k0 derivatives of
  N(mu_a; 0, 1 + S_aa) Phi(eta): no quadrature is needed anywhere. Gradients use
  dD_kl / dmu_a = D_(k+1)l and Price's theorem dD_kl / dS_ab = D_(k+1)(l+1),
  dD_kl / dS_aa = D_(k+2)l / 2, so D is needed up to total order four.

Gradients are returned with respect to the mean and to the covariance entries as read (a
full (W, W) array, not symmetrised, or the (W,) variances of a diagonal C).
"""

from __future__ import annotations

from math import comb

import numpy as np
from numpy.polynomial.hermite_e import hermeval

from .network import Network

SQRT_2PI = np.sqrt(2.0 * np.pi)
G2_APPROX_C = 1.24  # paper 000 B.18
SUPPORTED_ACTIVATIONS = ("erf", "linear")


def _phi(x):
    return np.exp(-0.5 * x * x) / SQRT_2PI


def _hermite(order: int, x):
    """Probabilists' Hermite polynomial He_order(x)."""
    return hermeval(x, [0.0] * order + [1.0])


def _cdf_derivative(order: int, x):
    """d^order Phi(x) / dx^order = (-1)^(order-1) He_(order-1)(x) phi(x), order >= 1."""
    return (-1.0) ** (order - 1) * _hermite(order - 1, x) * _phi(x)


def bivariate_normal_cdf(h, k, rho):
    """P(Z1 <= h, Z2 <= k) for standard normals with correlation rho, via Owen's T (Owen 1956):
    Phi2 = [Phi(h) + Phi(k)] / 2 - T(h, a_h) - T(k, a_k) - beta, a_h = (k - rho h) /
    (h sqrt(1 - rho^2)), beta = 1/2 when h and k have opposite signs. A zero argument is
    replaced by 1e-300 (Phi2 is continuous there)."""
    from scipy.special import ndtr, owens_t

    h, k, rho = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (h, k, rho)))
    root = np.sqrt(1.0 - rho * rho)
    h = np.where(h == 0.0, 1e-300, h)
    k = np.where(k == 0.0, 1e-300, k)
    beta = np.where((h < 0) != (k < 0), 0.5, 0.0)
    return (
        0.5 * (ndtr(h) + ndtr(k))
        - owens_t(h, (k - rho * h) / (h * root))
        - owens_t(k, (h - rho * k) / (k * root))
        - beta
    )


# ---- univariate expectations E[g^(k)(a)], a ~ N(mu, S) ---------------------------------------
def unit_expectations(activation: str, mu, S, order: int) -> list[np.ndarray]:
    """[E g(a), E g'(a), ..., E g^(order)(a)] for a ~ N(mu, S) (paper 000 B.15-B.16:
    E g(a) = g(mu / sqrt(1 + S)); E g^(k) = d^k/dmu^k of it)."""
    from scipy.special import ndtr

    if activation == "linear":
        out = [np.asarray(mu, dtype=float), np.ones_like(mu)]
        return (out + [np.zeros_like(mu)] * order)[: order + 1]
    V = 1.0 + S
    h = mu / np.sqrt(V)
    out = [2.0 * ndtr(h) - 1.0]
    for k in range(1, order + 1):
        out.append(2.0 * V ** (-0.5 * k) * _cdf_derivative(k, h))
    return out


def unit_square_expectation(activation: str, mu, S, g2: str = "exact"):
    """E[g(a)^2] for a ~ N(mu, S) and its derivatives with respect to mu and S.

    ``exact``: 1 - 8 T(h, kappa), h = mu / sqrt(1 + S), kappa = 1 / sqrt(1 + 2 S) (from
    E[Phi(a)^2] = Phi(h) - 2 T(h, kappa)); ``approx``: paper 000 eq. B.18,
    1 - exp(-c mu^2 / (2 (1 + c S))) / sqrt(1 + c S), c = 1.24."""
    from scipy.special import ndtr, owens_t

    if activation == "linear":
        return mu * mu + S, 2.0 * mu, np.ones_like(mu)
    if g2 == "approx":
        c = G2_APPROX_C
        r = 1.0 + c * S
        e = np.exp(-0.5 * c * mu * mu / r) / np.sqrt(r)
        return 1.0 - e, e * c * mu / r, e * (0.5 * c / r - 0.5 * c * c * mu * mu / (r * r))
    sq = np.sqrt(1.0 + S)
    h = mu / sq
    kappa = 1.0 / np.sqrt(1.0 + 2.0 * S)
    T_h = -_phi(h) * (ndtr(kappa * h) - 0.5)
    T_k = np.exp(-0.5 * h * h * (1.0 + kappa * kappa)) / (2.0 * np.pi * (1.0 + kappa * kappa))
    value = 1.0 - 8.0 * owens_t(h, kappa)
    d_mu = -8.0 * T_h / sq
    d_S = -8.0 * (T_h * (-0.5 * h / (1.0 + S)) + T_k * (-(kappa**3)))
    return value, d_mu, d_S


# ---- pair expectations D_kl = E[g^(k)(a) g^(l)(b)] ------------------------------------------
def pair_expectations(activation: str, mu_a, mu_b, S_aa, S_ab, S_bb, order: int = 4) -> dict:
    """D[(k, l)] = E[g^(k)(a) g^(l)(b)] for (a, b) ~ N((mu_a, mu_b), [[S_aa, S_ab], [S_ab, S_bb]]),
    every k + l <= order (order <= 4). S may be singular (a = b): only I + S must be positive
    definite. Paper 002 eq. 17 reduces D00 to a one-dimensional integral; here it is the
    bivariate normal CDF: D00 = 4 Phi2(h_a, h_b; rho) - 2 Phi(h_a) - 2 Phi(h_b) + 1."""
    from scipy.special import ndtr

    if activation == "linear":
        zero = np.zeros(np.broadcast(mu_a, mu_b, S_ab).shape)
        D = {(k, l): zero for k in range(order + 1) for l in range(order + 1 - k)}
        D[(0, 0)] = mu_a * mu_b + S_ab
        D[(1, 0)], D[(0, 1)], D[(1, 1)] = mu_b + zero, mu_a + zero, zero + 1.0
        return D
    Va, Vb = 1.0 + S_aa, 1.0 + S_bb
    det = Va * Vb - S_ab * S_ab
    D = {}
    ha, hb = mu_a / np.sqrt(Va), mu_b / np.sqrt(Vb)
    rho = S_ab / np.sqrt(Va * Vb)
    D[(0, 0)] = 4.0 * bivariate_normal_cdf(ha, hb, rho) - 2.0 * ndtr(ha) - 2.0 * ndtr(hb) + 1.0
    # D_k0 = 2 d^(k-1)/dmu_a^(k-1) [n_a(mu_a) (2 Phi(eta) - 1)], eta linear in the means
    for first, (mu_x, mu_y, Vx) in enumerate(((mu_a, mu_b, Va), (mu_b, mu_a, Vb))):
        root = np.sqrt(Vx * det)
        eta = (Vx * mu_y - S_ab * mu_x) / root
        slope = -S_ab / root
        z = mu_x / np.sqrt(Vx)
        n_x = _phi(z) / np.sqrt(Vx)
        n_der = [(-1.0) ** s * Vx ** (-0.5 * s) * _hermite(s, z) * n_x for s in range(order)]
        phi_eta = _phi(eta)
        psi = [2.0 * ndtr(eta) - 1.0] + [
            2.0 * slope**r * (-1.0) ** (r - 1) * _hermite(r - 1, eta) * phi_eta
            for r in range(1, order)
        ]
        for k in range(1, order + 1):
            q = k - 1
            total = sum(comb(q, r) * n_der[q - r] * psi[r] for r in range(q + 1))
            D[(k, 0) if first == 0 else (0, k)] = 2.0 * total
    # D_kl (k, l >= 1) = 4 d^(k-1)_a d^(l-1)_b N(mu; 0, Q), Q = I + S, P = Q^-1
    Paa, Pbb, Pab = Vb / det, Va / det, -S_ab / det
    ya, yb = Paa * mu_a + Pab * mu_b, Pab * mu_a + Pbb * mu_b
    dens = np.exp(-0.5 * (mu_a * ya + mu_b * yb)) / (2.0 * np.pi * np.sqrt(det))
    ders = {
        (0, 0): 1.0,
        (1, 0): -ya,
        (0, 1): -yb,
        (2, 0): ya * ya - Paa,
        (1, 1): ya * yb - Pab,
        (0, 2): yb * yb - Pbb,
    }
    for (p, q), poly in ders.items():
        if p + q + 2 <= order:
            D[(p + 1, q + 1)] = 4.0 * poly * dens
    return D


# ---- the network output moments --------------------------------------------------------------
def _layout(network: Network):
    s = network.slices
    H, I, P = network.n_hidden, network.n_inputs, network.n_outputs
    idx_u = np.concatenate(
        [
            np.arange(s["W1"].start, s["W1"].stop).reshape(H, I),
            np.arange(H)[:, None] + s["b1"].start,
        ],
        axis=1,
    )
    idx_v = np.arange(s["W2"].start, s["W2"].stop).reshape(P, H)
    idx_b = np.arange(s["b2"].start, s["b2"].stop)
    return idx_u, idx_v, idx_b


def _augment(x):
    return np.concatenate([x, np.ones((x.shape[0], 1))], axis=1)


def check_activation(network: Network) -> None:
    if network.n_hidden > 0 and network.activation_name not in SUPPORTED_ACTIVATIONS:
        raise ValueError(
            f"closed-form expectations exist for activations {SUPPORTED_ACTIVATIONS}, "
            f"not {network.activation_name!r}"
        )


def output_moments(network: Network, mean, cov, x, cotangents=None, g2: str = "exact"):
    """<f_p(x_n)> and <f_p(x_n)^2>, each (N, P), under q(w) = N(mean, cov).

    ``cov`` is (W,) variances (diagonal q) or a (W, W) matrix. With ``cotangents`` =
    (d_first, d_second), each (N, P), also returns the gradient of
    sum(d_first * <f>) + sum(d_second * <f^2>) with respect to ``mean`` and ``cov``:
    (first, second, grad_mean, grad_cov)."""
    check_activation(network)
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    xt = _augment(np.asarray(x, dtype=float))
    if network.n_hidden == 0:
        return _linear_moments(network, mean, cov, xt, cotangents)
    if cov.ndim == 1:
        return _diag_moments(network, mean, cov, xt, cotangents, g2)
    if g2 != "exact":
        raise ValueError("the g^2 approximation applies to a diagonal covariance only")
    return _full_moments(network, mean, cov, xt, cotangents)


def expected_data_error(network: Network, mean, cov, x, t, g2: str = "exact"):
    """<E_D> = 1/2 sum_n sum_p <(t_np - f_p(x_n))^2> (paper 000 eq. B.6) with its gradient
    with respect to the mean and the covariance: (value, grad_mean, grad_cov)."""
    t = np.asarray(t, dtype=float)
    first, second, g_mean, g_cov = output_moments(
        network, mean, cov, x, cotangents=(-t, np.full_like(t, 0.5)), g2=g2
    )
    value = 0.5 * np.sum(t * t) - np.sum(t * first) + 0.5 * np.sum(second)
    return float(value), g_mean, g_cov


def _linear_moments(network, mean, cov, xt, cotangents):
    """H = 0: f_p = theta_p . x~ with theta_p = (Wd[p], b2[p])."""
    s = network.slices
    I, P = network.n_inputs, network.n_outputs
    idx = np.concatenate(
        [
            np.arange(s["Wd"].start, s["Wd"].stop).reshape(P, I),
            np.arange(P)[:, None] + s["b2"].start,
        ],
        axis=1,
    )  # (P, I+1)
    first = xt @ mean[idx].T  # (N, P)
    if cov.ndim == 1:
        var = (xt * xt) @ cov[idx].T
    else:
        block = cov[idx[:, :, None], idx[:, None, :]]  # (P, I+1, I+1)
        var = np.einsum("nk,pkl,nl->np", xt, block, xt)
    second = first * first + var
    if cotangents is None:
        return first, second
    d_first, d_second = cotangents
    g_mean = np.zeros_like(mean)
    g_cov = np.zeros_like(cov)
    g_mean[idx] = (d_first + 2.0 * first * d_second).T @ xt
    if cov.ndim == 1:
        g_cov[idx] = d_second.T @ (xt * xt)
    else:
        g_cov[idx[:, :, None], idx[:, None, :]] = np.einsum("np,nk,nl->pkl", d_second, xt, xt)
    return first, second, g_mean, g_cov


def _diag_moments(network, mean, var, xt, cotangents, g2):
    """Diagonal q (paper 000 B.16-B.18): units are independent, so
    Var f_p = sum_i [(m_pi^2 + s_pi^2) <g_i^2> - m_pi^2 <g_i>^2] + s_bp^2."""
    act = network.activation_name
    idx_u, idx_v, idx_b = _layout(network)
    mu = xt @ mean[idx_u].T  # (N, H)
    S = (xt * xt) @ var[idx_u].T
    E0, E1, E2 = unit_expectations(act, mu, S, 2)
    E_S = 0.5 * E2  # dE0/dS by Price's theorem
    G2, G2_mu, G2_S = unit_square_expectation(act, mu, S, g2)
    mv, sv = mean[idx_v], var[idx_v]  # (P, H)
    mb, sb = mean[idx_b], var[idx_b]
    first = E0 @ mv.T + mb
    varf = G2 @ (mv * mv + sv).T - (E0 * E0) @ (mv * mv).T + sb
    second = varf + first * first
    if cotangents is None:
        return first, second
    d_first, d_second = cotangents
    d_mean_tot = d_first + 2.0 * first * d_second  # (N, P)
    g_mean = np.zeros_like(mean)
    g_var = np.zeros_like(var)
    g_mean[idx_v] = d_mean_tot.T @ E0 + 2.0 * mv * (d_second.T @ (G2 - E0 * E0))
    g_var[idx_v] = d_second.T @ G2
    g_mean[idx_b] = d_mean_tot.sum(axis=0)
    g_var[idx_b] = d_second.sum(axis=0)
    dE0 = d_mean_tot @ mv - 2.0 * E0 * (d_second @ (mv * mv))
    dG2 = d_second @ (mv * mv + sv)
    d_mu = dE0 * E1 + dG2 * G2_mu
    d_S = dE0 * E_S + dG2 * G2_S
    g_mean[idx_u] = d_mu.T @ xt
    g_var[idx_u] = d_S.T @ (xt * xt)
    return first, second, g_mean, g_var


def _full_moments(network, mean, cov, xt, cotangents):
    """Full covariance: Stein's lemma over the v's, pair expectations D_kl over the a's."""
    act = network.activation_name
    idx_u, idx_v, idx_b = _layout(network)
    H = network.n_hidden
    order = 4 if cotangents is not None else 2
    mu = xt @ mean[idx_u].T  # (N, H)
    Suu = cov[idx_u[:, :, None, None], idx_u[None, None, :, :]]  # (H, I+1, H, I+1)
    K = xt.shape[1]
    left = (xt @ Suu.transpose(1, 0, 2, 3).reshape(K, -1)).reshape(-1, H, H, K)
    S = np.matmul(left, xt[:, None, :, None])[..., 0]  # Cov(a_i, a_j) at x_n, (N, H, H)
    Svu = cov[idx_v[:, :, None, None], idx_u[None, None, :, :]]  # (P, H, H, I+1)
    c = (xt @ Svu.reshape(-1, K).T).reshape(-1, *Svu.shape[:3])  # Cov(v_pi, a_nk)
    Sbu = cov[idx_b[:, None, None], idx_u[None, :, :]]  # (P, H, I+1)
    cb = (xt @ Sbu.reshape(-1, K).T).reshape(-1, *Sbu.shape[:2])  # Cov(b_p, a_nk)
    Cvv = cov[idx_v[:, :, None], idx_v[:, None, :]]  # (P, H, H)
    Cvb = cov[idx_v, idx_b[:, None]]  # (P, H)
    Cbb = cov[idx_b, idx_b]
    mv, mb = mean[idx_v], mean[idx_b]

    diag_S = np.einsum("nii->ni", S)
    E = unit_expectations(act, mu, diag_S, order)  # list of (N, H)
    cdiag = np.einsum("npii->npi", c)  # Cov(v_pi, a_ni)
    D = pair_expectations(
        act, mu[:, :, None], mu[:, None, :], diag_S[:, :, None], S, diag_S[:, None, :], order
    )  # (N, H, H)
    D = {key: np.broadcast_to(val, S.shape)[:, None] for key, val in D.items()}  # (N,1,H,H)

    # pair terms: slots a = unit i, b = unit j
    m_i, m_j = mv[None, :, :, None], mv[None, :, None, :]
    c_ia = cdiag[:, :, :, None]  # Cov(v_i, a_i)
    c_ib = c  # Cov(v_i, a_j)
    c_ja = c.transpose(0, 1, 3, 2)  # Cov(v_j, a_i)
    c_jb = cdiag[:, :, None, :]
    coef = {
        (0, 0): m_i * m_j + Cvv[None],
        (1, 0): m_i * c_ja + m_j * c_ia,
        (0, 1): m_i * c_jb + m_j * c_ib,
        (2, 0): c_ia * c_ja,
        (1, 1): c_ia * c_jb + c_ib * c_ja,
        (0, 2): c_ib * c_jb,
    }
    pair = sum(coef[key] * D[key] for key in coef)  # (N, P, H, H)
    cross = (
        (mv * mb[:, None] + Cvb)[None] * E[0][:, None]
        + (mv[None] * cb + mb[None, :, None] * cdiag) * E[1][:, None]
        + cdiag * cb * E[2][:, None]
    )  # E[v_pi b_p g(a_i)], (N, P, H)
    first = np.einsum("ph,nh->np", mv, E[0]) + np.sum(cdiag * E[1][:, None], axis=2) + mb
    second = pair.sum(axis=(2, 3)) + 2.0 * cross.sum(axis=2) + mb * mb + Cbb
    if cotangents is None:
        return first, second

    d_first, d_second = cotangents
    w = d_second[:, :, None, None]  # on every pair term
    wc = 2.0 * d_second[:, :, None]  # on every bias cross term
    wf = d_first[:, :, None]  # on the first moment
    g_mean = np.zeros_like(mean)
    g_cov = np.zeros_like(cov)
    # explicit dependence of the pair terms
    d_mi = w * (m_j * D[(0, 0)] + c_ja * D[(1, 0)] + c_jb * D[(0, 1)])
    d_mj = w * (m_i * D[(0, 0)] + c_ia * D[(1, 0)] + c_ib * D[(0, 1)])
    d_cia = w * (m_j * D[(1, 0)] + c_ja * D[(2, 0)] + c_jb * D[(1, 1)])
    d_cib = w * (m_j * D[(0, 1)] + c_ja * D[(1, 1)] + c_jb * D[(0, 2)])
    d_cja = w * (m_i * D[(1, 0)] + c_ia * D[(2, 0)] + c_ib * D[(1, 1)])
    d_cjb = w * (m_i * D[(0, 1)] + c_ia * D[(1, 1)] + c_ib * D[(0, 2)])
    d_mv = d_mi.sum(axis=(0, 3)) + d_mj.sum(axis=(0, 2))
    d_Cvv = np.sum(w * D[(0, 0)], axis=0)
    d_c = d_cib + d_cja.transpose(0, 1, 3, 2)
    d_cdiag = d_cia.sum(axis=3) + d_cjb.sum(axis=2)
    # dependence through D on the means and covariances of (a_i, a_j)
    d_mua = sum(coef[(k, l)] * D[(k + 1, l)] for (k, l) in coef) * w
    d_mub = sum(coef[(k, l)] * D[(k, l + 1)] for (k, l) in coef) * w
    d_Saa = sum(coef[(k, l)] * D[(k + 2, l)] for (k, l) in coef) * (0.5 * w)
    d_Sab = sum(coef[(k, l)] * D[(k + 1, l + 1)] for (k, l) in coef) * w
    d_Sbb = sum(coef[(k, l)] * D[(k, l + 2)] for (k, l) in coef) * (0.5 * w)
    d_mu = d_mua.sum(axis=(1, 3)) + d_mub.sum(axis=(1, 2))
    d_S = d_Sab.sum(axis=1)
    d_Sdiag = d_Saa.sum(axis=(1, 3)) + d_Sbb.sum(axis=(1, 2))
    # bias cross terms E[v_i b g(a_i)] and b^2
    d_mv += np.sum(wc * (mb[None, :, None] * E[0][:, None] + cb * E[1][:, None]), axis=0)
    d_mb = np.sum(wc * (mv[None] * E[0][:, None] + cdiag * E[1][:, None]), axis=(0, 2))
    d_mb += 2.0 * mb * d_second.sum(axis=0)
    d_Cvb = np.sum(wc * E[0][:, None], axis=0)
    d_cb = wc * (mv[None] * E[1][:, None] + cdiag * E[2][:, None])
    d_cdiag += wc * (mb[None, :, None] * E[1][:, None] + cb * E[2][:, None])
    cross_coef = [
        (mv * mb[:, None] + Cvb)[None],
        mv[None] * cb + mb[None, :, None] * cdiag,
        cdiag * cb,
    ]
    d_E = [np.sum(wc * cc, axis=1) for cc in cross_coef]  # (N, H) on E0, E1, E2
    # first moment: sum_i (m_pi E0_i + c_pii E1_i) + b_p
    d_mv += np.einsum("np,nh->ph", d_first, E[0])
    d_cdiag += wf * E[1][:, None]
    d_mb += d_first.sum(axis=0)
    d_E[0] = d_E[0] + d_first @ mv
    d_E[1] = d_E[1] + np.sum(wf * cdiag, axis=1)
    for k, dk in enumerate(d_E):  # dE_k/dmu = E_(k+1), dE_k/dS = E_(k+2) / 2
        d_mu += dk * E[k + 1]
        d_Sdiag += 0.5 * dk * E[k + 2]
    # chain to the mean and covariance entries
    d_S[:, np.arange(H), np.arange(H)] += d_Sdiag
    d_c[:, :, np.arange(H), np.arange(H)] += d_cdiag
    g_mean[idx_u] = d_mu.T @ xt
    g_mean[idx_v] = d_mv
    g_mean[idx_b] = d_mb
    outer = (xt[:, :, None] * xt[:, None, :]).reshape(-1, K * K)
    g_uu = (d_S.reshape(-1, H * H).T @ outer).reshape(H, H, K, K).transpose(0, 2, 1, 3)
    g_cov[idx_u[:, :, None, None], idx_u[None, None, :, :]] += g_uu
    n_pts = xt.shape[0]
    g_cov[idx_v[:, :, None, None], idx_u[None, None, :, :]] += (
        d_c.reshape(n_pts, -1).T @ xt
    ).reshape(*d_c.shape[1:], K)
    g_cov[idx_b[:, None, None], idx_u[None, :, :]] += (d_cb.reshape(n_pts, -1).T @ xt).reshape(
        *d_cb.shape[1:], K
    )
    g_cov[idx_v[:, :, None], idx_v[:, None, :]] += d_Cvv
    g_cov[idx_v, idx_b[:, None]] += d_Cvb
    g_cov[idx_b, idx_b] += d_second.sum(axis=0)
    return first, second, g_mean, g_cov
