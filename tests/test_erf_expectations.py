"""Closed-form expectations of the erf network under Gaussian q(w): Monte Carlo agreement
within 4 standard errors (1e6 draws) and analytic gradients against central differences."""

import numpy as np
import pytest
from scipy.special import erf
from scipy.stats import multivariate_normal

from bnnsweep.models.erf_expectations import (
    bivariate_normal_cdf,
    expected_data_error,
    output_moments,
    pair_expectations,
    unit_expectations,
    unit_square_expectation,
)
from bnnsweep.models.network import Network
from bnnsweep.models.vi_family import GaussianFamily

N_MC = 1_000_000
K_SE = 4.0


def g(a):
    return erf(a / np.sqrt(2.0))


def g1(a):
    return np.sqrt(2.0 / np.pi) * np.exp(-0.5 * a * a)


def g2(a):
    return -a * g1(a)


def assert_mc(samples, value, what):
    """|mean(samples) - value| <= 4 standard errors, elementwise over trailing axes."""
    se = samples.std(axis=0) / np.sqrt(samples.shape[0])
    z = np.abs(samples.mean(axis=0) - value) / np.maximum(se, 1e-300)
    assert np.all(z < K_SE), f"{what}: {np.max(z):.2f} standard errors"


def rel_err(a, b):
    return np.linalg.norm(np.ravel(a) - np.ravel(b)) / max(np.linalg.norm(np.ravel(b)), 1e-300)


def central_diff(f, x, step=1e-5):
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = step
        out[k] = (f(x + e) - f(x - e)) / (2 * step)
    return out


def test_bivariate_normal_cdf_matches_scipy():
    rng = np.random.default_rng(1)
    h, k = rng.normal(0, 1.5, (2, 20))
    rho = rng.uniform(-0.95, 0.95, 20)
    h[:3] = 0.0  # the boundary cases of Owen's formula
    k[1] = 0.0
    k[2] = -0.4
    ref = [
        multivariate_normal([0, 0], [[1, r], [r, 1]]).cdf([a, b])
        for a, b, r in zip(h, k, rho, strict=True)
    ]
    np.testing.assert_allclose(bivariate_normal_cdf(h, k, rho), ref, atol=1e-7)


def test_unit_expectations_monte_carlo():
    rng = np.random.default_rng(2)
    mu, S = 0.7, 1.3
    a = rng.normal(mu, np.sqrt(S), N_MC)
    E = unit_expectations("erf", mu, S, 2)
    for k, fn in enumerate((g, g1, g2)):
        assert_mc(fn(a), E[k], f"E g^({k})")
    exact, _, _ = unit_square_expectation("erf", mu, S, "exact")
    assert_mc(g(a) ** 2, exact, "E g^2 (Owen's T)")
    approx, _, _ = unit_square_expectation("erf", mu, S, "approx")
    assert abs(approx - exact) < 0.02  # the paper's approximation is close, not exact


@pytest.mark.parametrize("g2_kind", ["exact", "approx"])
def test_unit_square_gradients(g2_kind):
    for mu0, S0 in ((0.7, 1.3), (-1.9, 0.05), (0.0, 4.0)):
        mu, S = float(mu0), float(S0)
        _, d_mu, d_S = unit_square_expectation("erf", mu, S, g2_kind)
        f_mu = central_diff(
            lambda v, S=S: unit_square_expectation("erf", v[0], S, g2_kind)[0], np.array([mu])
        )
        f_S = central_diff(
            lambda v, mu=mu: unit_square_expectation("erf", mu, v[0], g2_kind)[0], np.array([S])
        )
        assert rel_err(f_mu, d_mu) < 1e-6 and rel_err(f_S, d_S) < 1e-6


PAIR = dict(mu_a=0.3, mu_b=-0.7, S_aa=0.8, S_ab=0.3, S_bb=1.5)


def test_pair_expectations_monte_carlo():
    rng = np.random.default_rng(3)
    p = PAIR
    cov = [[p["S_aa"], p["S_ab"]], [p["S_ab"], p["S_bb"]]]
    z = rng.multivariate_normal([p["mu_a"], p["mu_b"]], cov, size=N_MC)
    D = pair_expectations("erf", **p, order=2)
    fns = (g, g1, g2)
    for (k, l), value in D.items():
        assert_mc(fns[k](z[:, 0]) * fns[l](z[:, 1]), value, f"D{k}{l}")
    # a = b: the singular covariance of a hidden unit with itself
    a = rng.normal(0.4, np.sqrt(0.9), N_MC)
    D = pair_expectations("erf", 0.4, 0.4, 0.9, 0.9, 0.9, order=2)
    assert abs(D[(0, 0)] - unit_square_expectation("erf", 0.4, 0.9)[0]) < 1e-12
    for (k, l), value in D.items():
        assert_mc(fns[k](a) * fns[l](a), value, f"D{k}{l} (a = b)")


def test_pair_expectation_derivatives():
    """dD_kl/dmu_a = D_(k+1)l and Price's theorem dD_kl/dS_ab = D_(k+1)(l+1), up to order 4."""
    D = pair_expectations("erf", **PAIR, order=4)
    step = 1e-5

    def shifted(key, sign):
        q = dict(PAIR)
        q[key] += sign * step
        return pair_expectations("erf", **q, order=4)

    fd = {
        key: {kl: (shifted(key, 1)[kl] - shifted(key, -1)[kl]) / (2 * step) for kl in D}
        for key in PAIR
    }
    for k, l in D:
        if k + l > 2:
            continue
        assert abs(fd["mu_a"][(k, l)] - D[(k + 1, l)]) < 1e-6 * max(1, abs(D[(k + 1, l)]))
        assert abs(fd["mu_b"][(k, l)] - D[(k, l + 1)]) < 1e-6 * max(1, abs(D[(k, l + 1)]))
        assert abs(fd["S_ab"][(k, l)] - D[(k + 1, l + 1)]) < 1e-6
        assert abs(fd["S_aa"][(k, l)] - 0.5 * D[(k + 2, l)]) < 1e-6
        assert abs(fd["S_bb"][(k, l)] - 0.5 * D[(k, l + 2)]) < 1e-6


# ---- whole-network moments -------------------------------------------------------------------
def _problem(n_hidden=3, activation="erf", seed=4):
    rng = np.random.default_rng(seed)
    net = Network(2, n_hidden, 2, activation)
    x = rng.normal(size=(4, 2))
    t = rng.normal(size=(4, 2))
    return rng, net, x, t


def _theta(family, rng, scale=0.4):
    theta = rng.normal(0.0, 0.8, family.n_params)
    W = family.n_weights
    if family.kind == "diag":
        theta[W:] = np.log(rng.uniform(0.2, 0.9, W))
    elif family.kind == "full":
        n_off = W * (W - 1) // 2
        theta[W : W + n_off] = rng.normal(0, scale / np.sqrt(W), n_off)
        theta[W + n_off :] = np.log(rng.uniform(0.2, 0.7, W))
    else:
        theta[W : 2 * W] = np.log(rng.uniform(0.2, 0.7, W))
        theta[2 * W :] = rng.normal(0, scale, W * family.factors)
    return theta


def _mc_outputs(net, mean, cov, x, rng, n=N_MC, chunk=250_000):
    outs = []
    for _ in range(0, n, chunk):
        z = rng.standard_normal((chunk, mean.size))
        w = mean + (z * np.sqrt(cov) if cov.ndim == 1 else z @ np.linalg.cholesky(cov).T)
        outs.append(net.forward(w, x))
    return np.concatenate(outs)  # (n, N, P)


CASES = [("diag", 3, "erf"), ("full", 3, "erf"), ("fa", 3, "erf"), ("full", 0, "erf"),
         ("diag", 0, "erf"), ("full", 2, "linear"), ("diag", 2, "linear")]  # fmt: skip


@pytest.mark.parametrize(("kind", "hidden", "activation"), CASES)
def test_output_moments_monte_carlo(kind, hidden, activation):
    rng, net, x, t = _problem(hidden, activation)
    family = GaussianFamily(kind, net.n_weights, factors=2)
    mean, cov = family.mean_cov(_theta(family, rng))
    first, second = output_moments(net, mean, cov, x)
    f = _mc_outputs(net, mean, cov, x, rng)
    assert_mc(f, first, "<f>")
    assert_mc(f * f, second, "<f^2>")
    e_d = 0.5 * np.sum((f - t) ** 2, axis=(1, 2))
    assert_mc(e_d, expected_data_error(net, mean, cov, x, t)[0], "<E_D>")


def test_full_path_on_a_diagonal_covariance_equals_the_diag_path():
    rng, net, x, t = _problem()
    family = GaussianFamily("diag", net.n_weights)
    mean, var = family.mean_cov(_theta(family, rng))
    v_diag, gm_diag, gc_diag = expected_data_error(net, mean, var, x, t)
    v_full, gm_full, gc_full = expected_data_error(net, mean, np.diag(var), x, t)
    assert abs(v_diag - v_full) < 1e-10 * abs(v_diag)
    assert rel_err(gm_full, gm_diag) < 1e-10
    assert rel_err(np.diag(gc_full), gc_diag) < 1e-10


@pytest.mark.parametrize(
    ("kind", "hidden", "activation", "g2_kind"),
    [(k, h, a, "exact") for k, h, a in CASES] + [("diag", 3, "erf", "approx")],
)
def test_expected_error_and_entropy_gradients(kind, hidden, activation, g2_kind):
    """Gradient of <E_D> and of H[q] with respect to the packed family parameters."""
    rng, net, x, t = _problem(hidden, activation, seed=5)
    family = GaussianFamily(kind, net.n_weights, factors=2)
    theta = _theta(family, rng)

    def value(th):
        mean, cov = family.mean_cov(th)
        return expected_data_error(net, mean, cov, x, t, g2_kind)[0]

    mean, cov = family.mean_cov(theta)
    _, g_mean, g_cov = expected_data_error(net, mean, cov, x, t, g2_kind)
    grad = family.pullback(theta, g_mean, g_cov)
    assert rel_err(central_diff(value, theta), grad) < 1e-6
    _, g_ent = family.entropy(theta)
    assert rel_err(central_diff(lambda th: family.entropy(th)[0], theta), g_ent) < 1e-6


@pytest.mark.parametrize("kind", ["full", "fa"])
def test_entropy_matches_log_determinant(kind):
    rng = np.random.default_rng(6)
    family = GaussianFamily(kind, 7, factors=2)
    theta = _theta(family, rng)
    _, cov = family.mean_cov(theta)
    expected = 0.5 * np.linalg.slogdet(cov)[1] + 3.5 * (1 + np.log(2 * np.pi))
    assert abs(family.entropy(theta)[0] - expected) < 1e-10
    assert np.allclose(family.variances(theta), np.diag(cov))
