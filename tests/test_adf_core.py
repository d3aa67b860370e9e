"""ADF machinery: ReLU moments, forward moments, the eq. 6 update, gradients of ln Z."""

import numpy as np
import pytest

from bnnsweep.engines.adf import likelihoods as lik
from bnnsweep.engines.adf.network import Architecture, backward, forward
from bnnsweep.engines.adf.relu_moments import (
    erfcx_nonnegative,
    inverse_mills,
    log_probit,
    mills_ratio_negative,
    normal_pdf,
    relu_moments,
)
from bnnsweep.engines.adf.updates import PriorSites, adf_update, refine_prior
from bnnsweep.runtime.jax_runtime import jnp


def _mc_check(samples, mean, var, k=4.0):
    """Sample mean and variance of ``samples`` (S, ...) against ``mean``/``var`` within k s.e."""
    n = samples.shape[0]
    centred = samples - samples.mean(axis=0)
    se_mean = samples.std(axis=0) / np.sqrt(n)
    m4 = np.mean(centred**4, axis=0)
    se_var = np.sqrt(np.maximum(m4 - samples.var(axis=0) ** 2, 0.0) / n)
    assert np.all(np.abs(samples.mean(axis=0) - mean) < k * se_mean + 1e-12)
    assert np.all(np.abs(samples.var(axis=0) - var) < k * se_var + 1e-12)


def test_relu_moments_match_monte_carlo():
    rng = np.random.default_rng(0)
    mu = np.array([-2.0, -0.5, 0.0, 0.3, 1.5, 4.0])
    tau = np.array([0.5, 2.0, 1.0, 0.1, 3.0, 0.7])
    mean, var, *_ = relu_moments(mu, tau)
    u = mu + np.sqrt(tau) * rng.standard_normal((200_000, mu.size))
    _mc_check(np.maximum(u, 0.0), mean, var)


def test_relu_moment_derivatives_match_finite_differences():
    mu = np.array([-3.0, -0.7, 0.0, 0.4, 2.5])
    tau = np.array([0.3, 1.7, 1.0, 0.2, 2.0])
    _, _, dm_dmu, dm_dtau, dv_dmu, dv_dtau = relu_moments(mu, tau)
    h = 1e-6
    for deriv_mean, deriv_var, dmu, dtau in ((dm_dmu, dv_dmu, h, 0), (dm_dtau, dv_dtau, 0, h)):
        plus = relu_moments(mu + dmu, tau + dtau)
        minus = relu_moments(mu - dmu, tau - dtau)
        np.testing.assert_allclose(deriv_mean, (plus[0] - minus[0]) / (2 * h), rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(deriv_var, (plus[1] - minus[1]) / (2 * h), rtol=1e-5, atol=1e-8)


def test_erfcx_matches_scipy_to_a_few_ulp_on_every_branch():
    """Cephes' rational erfcx on [0, 1), [1, 8), [8, inf), including 26.55-26.64 where
    e^{x^2} erfc(x) (jax's erfcx) loses erfc to underflow before its asymptotic branch."""
    from scipy.special import erfcx

    x = np.concatenate([np.linspace(0.0, 30.0, 30001), np.linspace(26.5, 26.7, 201),
                        np.geomspace(1e-10, 1e300, 6001)])  # fmt: skip
    np.testing.assert_allclose(erfcx_nonnegative(x), erfcx(x), rtol=1e-14, atol=0)
    np.testing.assert_array_equal(erfcx_nonnegative(np.array([np.inf])), [0.0])


def test_stable_tails_at_mean_over_sd_minus_40():
    # Mills ratio and inverse Mills ratio against their asymptotic series at a = -40
    A = 40.0
    series_r = 1 / A - 1 / A**3 + 3 / A**5 - 15 / A**7 + 105 / A**9
    np.testing.assert_allclose(mills_ratio_negative(np.array(-A)), series_r, rtol=1e-12)
    np.testing.assert_allclose(inverse_mills(np.array(-A)), 1 / series_r, rtol=1e-12)
    series_log_phi = -0.5 * A**2 - np.log(A * np.sqrt(2 * np.pi)) + np.log(A * series_r)
    np.testing.assert_allclose(log_probit(np.array(-A)), series_log_phi, rtol=1e-12)
    # ReLU moments: finite and non-negative with finite derivatives, at any scale
    for sd in (1e-3, 1.0, 1e3):
        out = relu_moments(np.array([-A * sd]), np.array([sd * sd]))
        assert all(np.all(np.isfinite(o)) for o in out)
        assert out[0][0] >= 0 and out[1][0] >= 0
    # where the density is still representable the stable form matches the asymptotic series
    A = 30.0
    mean, var, *_ = relu_moments(np.array([-A]), np.array([1.0]))
    phi = normal_pdf(A)
    np.testing.assert_allclose(
        mean, phi * (1 / A**2 - 3 / A**4 + 15 / A**6 - 105 / A**8), rtol=1e-7
    )
    np.testing.assert_allclose(var, phi * (2 / A**3 - 12 / A**5 + 90 / A**7), rtol=1e-6)


def _sample_network(arch, means, variances, x, rng, n):
    """Outputs of n networks with weights drawn from the factorised Gaussians, (n, T, P)."""
    z = np.broadcast_to(x, (n, *x.shape))
    for k, (m, v) in enumerate(zip(means, variances, strict=True)):
        w = m[0] + np.sqrt(v[0]) * rng.standard_normal((n, *m.shape[1:]))
        z1 = np.concatenate([z, np.ones((*z.shape[:-1], 1))], axis=-1)
        u = z1 @ np.swapaxes(w, -1, -2) / np.sqrt(m.shape[-1])
        z = u if k == len(means) - 1 else np.maximum(u, 0.0)
    return z


@pytest.mark.parametrize("widths", [(3, 6), (3, 6, 2)])
def test_forward_moments_match_monte_carlo(widths):
    """A ReLU layer, and the output of a one-hidden-layer net, where eq. 7-8 are exact."""
    rng = np.random.default_rng(1)
    arch = Architecture(widths)
    means = [rng.normal(0, 0.8, (1, o, i)) for o, i in arch.shapes]
    variances = [rng.uniform(0.05, 0.6, (1, o, i)) for o, i in arch.shapes]
    x = rng.normal(size=(4, widths[0]))
    if len(widths) == 2:  # the ReLU of the layer's pre-activations
        mu, tau = forward(means, variances, x[None])
        mean, var, *_ = relu_moments(mu[0], tau[0])
        samples = np.maximum(_sample_network(arch, means, variances, x, rng, 100_000), 0.0)
    else:
        nu, psi = forward(means, variances, x[None])
        mean, var = nu[0], psi[0]
        samples = _sample_network(arch, means, variances, x, rng, 100_000)
    _mc_check(samples, mean, var)


def test_adf_update_on_one_gaussian_factor_is_the_exact_posterior():
    """y = c w + noise, w ~ N(m, v): eq. 6 through the moment network gives the posterior."""
    m0, v0, x, y, noise = 0.3, 0.8, 1.7, 2.1, 0.25
    c = x / np.sqrt(2.0)  # fan-in 2 (input and bias)
    means = [np.array([[[m0, 0.0]]])]
    variances = [np.array([[[v0, 0.0]]])]  # the bias weight is fixed at 0
    nu, psi, cache = forward(means, variances, np.array([[[x]]]), keep=True)
    _, g_nu, g_psi = lik.gaussian_log_z(nu[:, 0], psi[:, 0], np.array([[y]]), np.array([noise]))
    gm, gv = backward(means, variances, cache, g_nu[:, None], g_psi[:, None])
    m1, v1, _ = adf_update(means[0], variances[0], gm[0], gv[0])
    post_var = 1.0 / (1.0 / v0 + c * c / noise)
    post_mean = post_var * (m0 / v0 + c * y / noise)
    np.testing.assert_allclose(m1[0, 0, 0], post_mean, rtol=1e-12)
    np.testing.assert_allclose(v1[0, 0, 0], post_var, rtol=1e-12)


def test_adf_update_rejects_non_positive_variances():
    m, v = np.array([1.0, 1.0]), np.array([1.0, 1.0])
    g_m, g_v = np.array([0.1, 3.0]), np.array([0.0, 0.0])  # second: v' = 1 - 9 < 0
    m1, v1, ok = adf_update(m, v, g_m, g_v)
    assert ok.tolist() == [True, False]
    assert m1[1] == 1.0 and v1[1] == 1.0 and v1[0] == pytest.approx(0.99)


def _likelihood_cases(rng):
    eps = rng.standard_normal((2, 7, 3))
    return {
        "gaussian": (1, lambda nu, psi, y: lik.gaussian_log_z(nu, psi, y, np.array([0.3, 0.5])),
                     rng.normal(size=(2, 1))),
        "probit": (1, lik.probit_log_z, np.array([[1.0], [0.0]])),
        "softmax_bound": (3, lik.softmax_bound_log_z, np.array([[2.0], [0.0]])),
        "softmax_mc": (3, lambda nu, psi, y: lik.softmax_mc_log_z(nu, psi, y, eps),
                       np.array([[1.0], [2.0]])),
        "poisson": (1, lik.poisson_nb_log_z, np.array([[3.0], [0.0]])),
        "poisson_quadrature": (1, lik.poisson_quadrature_log_z, np.array([[3.0], [12.0]])),
    }  # fmt: skip


LIKELIHOOD_CASES = ["gaussian", "probit", "softmax_bound", "softmax_mc", "poisson",
                    "poisson_quadrature"]  # fmt: skip


def _gradient_case(name):
    """A two-hidden-layer net, two replicates, one point each, and its reverse-pass gradients."""
    rng = np.random.default_rng(2)
    n_out, log_z_fn, y = _likelihood_cases(rng)[name]
    arch = Architecture((3, 5, 4, n_out))
    means = [rng.normal(0, 0.7, (2, o, i)) for o, i in arch.shapes]
    variances = [rng.uniform(0.05, 0.5, (2, o, i)) for o, i in arch.shapes]
    x = rng.normal(size=(2, 1, 3))

    def log_z(ms, vs):
        nu, psi = forward(ms, vs, x)
        return log_z_fn(nu[:, 0], psi[:, 0], y)[0]

    nu, psi, cache = forward(means, variances, x, keep=True)
    _, g_nu, g_psi = log_z_fn(nu[:, 0], psi[:, 0], y)
    gm, gv = backward(means, variances, cache, g_nu[:, None], g_psi[:, None])
    return rng, log_z, means, variances, gm, gv


def _bumped(params, k, idx, step):
    """A fresh copy of params with one element moved (never mutated after it is passed to
    JAX, which may read numpy buffers without copying them)."""
    out = [np.array(p, copy=True) for p in params]
    out[k][(slice(None), *idx)] += step
    return out


@pytest.mark.parametrize("name", LIKELIHOOD_CASES)
def test_gradients_of_log_z_match_finite_differences(name):
    """d lnZ / d(m, v) of every weight of a two-hidden-layer net, by the reverse pass."""
    rng, log_z, means, variances, gm, gv = _gradient_case(name)
    h = 1e-6
    for k in range(len(means)):
        for is_mean, params, grads in ((True, means, gm), (False, variances, gv)):
            for _ in range(6):
                idx = tuple(rng.integers(0, n) for n in params[k].shape[1:])
                up, down = _bumped(params, k, idx, h), _bumped(params, k, idx, -h)
                if is_mean:
                    numeric = (log_z(up, variances) - log_z(down, variances)) / (2 * h)
                else:
                    numeric = (log_z(means, up) - log_z(means, down)) / (2 * h)
                np.testing.assert_allclose(
                    grads[k][(slice(None), *idx)], numeric, rtol=1e-5, atol=1e-8
                )


@pytest.mark.parametrize("name", LIKELIHOOD_CASES)
def test_reverse_pass_equals_jax_autodiff(name):
    """The analytic reverse pass the filter uses against jax.grad of ln Z(forward(m, v))."""
    from bnnsweep.runtime.jax_runtime import jax, jnp

    _, log_z, means, variances, gm, gv = _gradient_case(name)
    auto_m, auto_v = jax.grad(lambda ms, vs: jnp.sum(log_z(ms, vs)), argnums=(0, 1))(
        [jnp.asarray(m) for m in means], [jnp.asarray(v) for v in variances]
    )
    for analytic, auto in zip([*gm, *gv], [*auto_m, *auto_v], strict=True):
        np.testing.assert_allclose(analytic, auto, rtol=1e-9, atol=1e-12)


def test_noise_gamma_moment_matching_against_quadrature():
    """HL&A eq. 14-15: the moment-matched Gamma's mean and variance against the exact tilted
    moments of N(y | nu, psi + 1/gamma) Gamma(gamma | a, b) by quadrature (the update replaces
    each Student-t normaliser by a Gaussian, accurate to about 1% at shape 8)."""
    from scipy import integrate, stats

    a, b, y, nu, psi = 8.0, 3.0, 1.2, 0.1, 0.6

    def tilted(g, power):
        return (
            g**power
            * stats.norm.pdf(y, nu, np.sqrt(psi + 1 / g))
            * stats.gamma.pdf(g, a, scale=1 / b)
        )

    z0 = integrate.quad(tilted, 0, np.inf, args=(0,))[0]
    e1 = integrate.quad(tilted, 0, np.inf, args=(1,))[0] / z0
    e2 = integrate.quad(tilted, 0, np.inf, args=(2,))[0] / z0
    a_new, b_new = lik.gamma_moment_match(
        np.array([[y]]), np.array([[nu]]), np.array([[psi]]), np.array([a]), np.array([b])
    )
    np.testing.assert_allclose(a_new[0] / b_new[0], e1, rtol=1e-2)
    np.testing.assert_allclose(a_new[0] / b_new[0] ** 2, e2 - e1**2, rtol=5e-2)


def _authors_refine_prior(m, v, sites, a, b):
    """The EP sweep over the prior factors as the authors' C code does it (HIPS
    Probabilistic-Backpropagation, c/PBP_net/network.c, ``refine_prior``), transcribed in its
    natural parameters: a proper cavity's update is taken whatever Gamma it gives. Returns
    (m, v, a, b, smallest a met during the sweep)."""
    m, v = m.copy(), v.copy()
    mh_nat, vh_nat = sites[0] / sites[1], 1.0 / sites[1]
    ah_nat, bh_nat = sites[2] - 1.0, -sites[3]
    smallest_a = a
    for i in range(len(m)):
        vc_nat, mc_nat = 1.0 / v[i] - vh_nat[i], m[i] / v[i] - mh_nat[i]
        vc, mc = 1.0 / vc_nat, mc_nat / vc_nat
        ac, bc = a - ah_nat[i], b + bh_nat[i]
        if not (vc > 0 and bc > 0 and ac > 1 and vc < 1e6):
            continue
        s0, s1, s2 = vc + bc / (ac - 1), vc + bc / ac, vc + bc / (ac + 1)
        lz0, lz1, lz2 = (-0.5 * np.log(s) - 0.5 * mc * mc / s for s in (s0, s1, s2))
        dm, dv = -mc / s0, -0.5 / s0 + 0.5 * mc * mc / s0**2
        m_new, v_new = mc + vc * dm, vc - vc * vc * (dm * dm - 2 * dv)
        a_new = 1.0 / (np.exp(lz2 - 2 * lz1 + lz0) * (ac + 1) / ac - 1.0)
        b_new = 1.0 / (np.exp(lz2 - lz1) * (ac + 1) / bc - np.exp(lz1 - lz0) * ac / bc)
        mh_nat[i], vh_nat[i] = m_new / v_new - mc_nat, 1.0 / v_new - vc_nat
        ah_nat[i], bh_nat[i] = a_new - ac, bc - b_new
        m[i], v[i], a, b = m_new, v_new, a_new, b_new
        smallest_a = min(smallest_a, a)
    return m, v, a, b, smallest_a


@pytest.mark.parametrize("seed", range(6))
def test_prior_refinement_follows_the_authors_code_through_an_improper_gamma(seed):
    """Weights of very different sizes drive the Gamma of lambda below a = 1 part-way through
    the sweep (seeds 0, 3 and 4; the others stay proper). The authors' code keeps that
    update and then skips every improper cavity; ours did the opposite, refused it and
    refined on, and five-layer networks lost their prior (issue 17)."""
    rng = np.random.default_rng(seed)
    n = 300
    m = rng.normal(0.0, 1.0, n) * np.exp(rng.normal(0.0, 1.5, n))
    v = rng.uniform(0.01, 0.5, n)
    sites = (np.zeros(n), np.full(n, 1.2), np.ones(n), np.zeros(n))
    m_c, v_c, a_c, b_c, smallest_a = _authors_refine_prior(m, v, sites, 6.0, 6.0)
    assert (smallest_a < 1.0) == (seed in (0, 3, 4))
    out_m, out_v, _, a, b, _ = refine_prior(
        jnp.asarray(m), jnp.asarray(v), PriorSites(*map(jnp.asarray, sites)),
        jnp.asarray(6.0), jnp.asarray(6.0),
    )  # fmt: skip
    np.testing.assert_allclose(np.asarray(out_m), m_c, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(out_v), v_c, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose([float(a), float(b)], [a_c, b_c], rtol=1e-10)
