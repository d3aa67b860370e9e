"""Markov-chain Q for sigmoid belief nets (thesis 2.38-2.50) and its App. B gradients."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnnsweep.engines.sbn.markov_chain import (
    chain_bound,
    chain_bound_gradients,
    chain_entropy,
    chain_expected_exp,
    chain_marginals,
    d_expected_exp_dmu,
    d_expected_exp_dt,
    d_expected_exp_dw,
    d_marginals_dmu,
    fit_markov_chain,
    tied_units,
)
from bnnsweep.engines.sbn.saul_bound import fit_mean_field, mean_field_bound
from bnnsweep.models.binary_states import all_states
from bnnsweep.models.sigmoid_belief import (
    exact_log_marginal,
    log_joint,
    parent_mask,
    random_layered_sbn,
)

LAYERS = (2, 4, 6)
TIED = tied_units(LAYERS)


def _chain_params(rng, b, visible):
    mu0 = np.concatenate([rng.uniform(0.02, 0.98, (b, 6)), np.broadcast_to(visible, (b, 6))], -1)
    mu1 = mu0.copy()
    mu1[:, :6] = np.where(TIED[:6], mu0[:, :6], rng.uniform(0.02, 0.98, (b, 6)))
    return mu0, mu1


def _chain_state_probs(mu0, mu1):
    """Q(H) of the chain over all 64 hidden states by direct products of 2.39."""
    s = all_states(6)
    logq = np.zeros((mu0.shape[0], 64))
    prev = np.ones(64)  # s_0 = 1
    for i in range(6):
        p = np.where(prev[None] == 1, mu1[:, i, None], mu0[:, i, None])
        logq += np.log(np.where(s[None, :, i] == 1, p, 1 - p))
        prev = s[:, i]
    return np.exp(logq), s


def test_tied_units_are_layer_starts_and_visible():
    np.testing.assert_array_equal(TIED, [1, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forward_quantities_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    net = random_layered_sbn(LAYERS, 8, 2.0, rng)
    v = (rng.random(6) < 0.5).astype(float)
    mu0, mu1 = _chain_params(rng, 8, v)
    xi = rng.normal(size=(8, 12))
    q, s = _chain_state_probs(mu0, mu1)
    full = np.concatenate([np.broadcast_to(s, (8, 64, 6)), np.broadcast_to(v, (8, 64, 6))], -1)
    np.testing.assert_allclose(chain_marginals(mu0, mu1)[:, 1:7, 1], q @ s, atol=1e-12)  # 2.43
    np.testing.assert_allclose(
        chain_entropy(mu0, mu1, 6), -np.sum(q * np.log(q), -1), atol=1e-12
    )  # 2.50
    z = np.einsum("bij,bsj->bsi", net.weights, full) + net.biases[:, None]
    for t in (-xi, 1 - xi):  # 2.48, 2.49
        e, _, _ = chain_expected_exp(mu0, mu1, net.weights, net.biases, t)
        np.testing.assert_allclose(
            e, np.einsum("bs,bsi->bi", q, np.exp(t[:, None] * z)), rtol=1e-12
        )
    # the bound is below the chain's own exact ELBO and below ln P(V)
    elbo = np.sum(q * (log_joint(net.weights, net.biases, full) - np.log(q)), -1)
    assert np.all(chain_bound(mu0, mu1, xi, net.weights, net.biases, 6) <= elbo + 1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), span=st.floats(0.1, 4.0))
def test_chain_bound_is_below_exact_log_marginal_for_arbitrary_parameters(seed, span):
    rng = np.random.default_rng(seed)
    net = random_layered_sbn(LAYERS, 20, span, rng)
    v = (rng.random(6) < 0.5).astype(float)
    mu0, mu1 = _chain_params(rng, 20, v)
    xi = rng.normal(0.5, 2.0, size=(20, 12))
    bound = chain_bound(mu0, mu1, xi, net.weights, net.biases, 6)
    assert np.all(bound <= exact_log_marginal(net, v)[:, 0] + 1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_equal_transitions_give_the_mean_field_bound(seed):
    rng = np.random.default_rng(seed)
    net = random_layered_sbn(LAYERS, 10, 2.0, rng)
    v = (rng.random(6) < 0.5).astype(float)
    mu0, _ = _chain_params(rng, 10, v)
    xi = rng.normal(size=(10, 12))
    np.testing.assert_allclose(
        chain_bound(mu0, mu0, xi, net.weights, net.biases, 6),
        mean_field_bound(mu0, xi, net.weights, net.biases, 6),
        atol=1e-12,
    )


def _fd(f, x, idx, h=1e-6):
    up, dn = x.copy(), x.copy()
    up[idx] += h
    dn[idx] -= h
    return (f(up) - f(dn)) / (2 * h)


@pytest.mark.parametrize("seed", [0, 1])
def test_appendix_b_derivatives_match_finite_differences(seed):
    rng = np.random.default_rng(seed)
    net = random_layered_sbn(LAYERS, 6, 2.0, rng)
    w, b = net.weights, net.biases
    v = (rng.random(6) < 0.5).astype(float)
    mu0, mu1 = _chain_params(rng, 6, v)
    xi = rng.normal(0.5, 0.5, size=(6, 12))
    mask = parent_mask(LAYERS)
    tol = 1e-6
    # B.3 / B.4: marginals
    dm0, dm1 = d_marginals_dmu(mu0, mu1)
    for j in range(6):
        np.testing.assert_allclose(
            _fd(lambda m: chain_marginals(m, mu1)[:, 1:, 1], mu0, (slice(None), j)),
            dm0[:, :, j],
            atol=tol,
        )
        np.testing.assert_allclose(
            _fd(lambda m: chain_marginals(mu0, m)[:, 1:, 1], mu1, (slice(None), j)),
            dm1[:, :, j],
            atol=tol,
        )
    for t in (-xi, 1 - xi):
        e, f, bw = chain_expected_exp(mu0, mu1, w, b, t)
        # B.1 / B.2 in t (dxi = -dt)
        dt = d_expected_exp_dt(w, b, t, f, bw)
        for i in range(12):
            num = _fd(lambda tt: chain_expected_exp(mu0, mu1, w, b, tt)[0], t, (slice(None), i))[
                :, i
            ]
            np.testing.assert_allclose(num, dt[:, i], atol=tol * np.max(np.abs(e)))
        # B.5
        d0, d1 = d_expected_exp_dmu(mu0, mu1, w, t, f, bw)
        for j in range(6):
            n0 = _fd(lambda m, t=t: chain_expected_exp(m, mu1, w, b, t)[0], mu0, (slice(None), j))
            n1 = _fd(lambda m, t=t: chain_expected_exp(mu0, m, w, b, t)[0], mu1, (slice(None), j))
            np.testing.assert_allclose(n0, d0[:, :, j], atol=tol * np.max(np.abs(e)))
            np.testing.assert_allclose(n1, d1[:, :, j], atol=tol * np.max(np.abs(e)))
        # B.6
        dw, db = d_expected_exp_dw(w, b, t, f, bw)
        for i, j in zip(*np.nonzero(mask), strict=True):
            num = _fd(
                lambda ww, t=t: chain_expected_exp(mu0, mu1, ww, b, t)[0], w, (slice(None), i, j)
            )[:, i]
            np.testing.assert_allclose(num, dw[:, i, j], atol=tol * np.max(np.abs(e)))
        for i in range(12):
            num = _fd(
                lambda bb, t=t: chain_expected_exp(mu0, mu1, w, bb, t)[0], b, (slice(None), i)
            )[:, i]
            np.testing.assert_allclose(num, db[:, i], atol=tol * np.max(np.abs(e)))
    # the assembled gradient of the bound
    g0, g1, gxi, gw, gb = chain_bound_gradients(mu0, mu1, xi, w, b, 6)

    def bound(m0=mu0, m1=mu1, x=xi, ww=w, bb=b):
        return chain_bound(m0, m1, x, ww, bb, 6)

    for j in range(6):
        np.testing.assert_allclose(
            _fd(lambda m: bound(m0=m), mu0, (slice(None), j)), g0[:, j], atol=tol
        )
        np.testing.assert_allclose(
            _fd(lambda m: bound(m1=m), mu1, (slice(None), j)), g1[:, j], atol=tol
        )
    for i in range(12):
        np.testing.assert_allclose(
            _fd(lambda x: bound(x=x), xi, (slice(None), i)), gxi[:, i], atol=tol
        )
        np.testing.assert_allclose(
            _fd(lambda x: bound(bb=x), b, (slice(None), i)), gb[:, i], atol=tol
        )
    for i, j in zip(*np.nonzero(mask), strict=True):
        np.testing.assert_allclose(
            _fd(lambda x: bound(ww=x), w, (slice(None), i, j)), gw[:, i, j], atol=tol
        )


def test_fit_from_mean_field_improves_and_stays_below_exact():
    rng = np.random.default_rng(4)
    net = random_layered_sbn(LAYERS, 20, 2.0, rng)
    v = np.zeros(6)
    exact = exact_log_marginal(net, v)[:, 0]
    mf = fit_mean_field(net.weights, net.biases, v, rng.random((20, 6)), rng.random((20, 12)))
    ch = fit_markov_chain(
        net.weights, net.biases, v, LAYERS, mf.mu[:, :6], mf.xi, chunk=20, max_iter=200
    )
    assert np.all(ch.bound <= exact + 1e-12)
    assert np.all(ch.bound >= mf.bound - 1e-9)
    assert np.mean(ch.bound - mf.bound) > 1e-4


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradients_stay_finite_where_a_mean_is_exactly_0_or_1(seed):
    # a logit beyond +-37 gives mu = 1.0 or 0.0 in floating point; the entropy slope
    # ln((1-mu)/mu) is then +-inf and, times a zero chain weight, was NaN (seen at span 4)
    rng = np.random.default_rng(seed)
    net = random_layered_sbn(LAYERS, 4, 4.0, rng)
    mu0 = np.concatenate([rng.random((4, 6)), np.zeros((4, 6))], -1)
    mu1 = mu0.copy()
    mu0[:, 2], mu1[:, 3], mu0[:, 4], mu1[:, 5] = 1.0, 1.0, 0.0, 0.0
    mu0[:, 0] = mu1[:, 0] = 1.0  # <s_1> = 1, so 1 - <s_1> weights the saturated mu_20 by 0
    xi = rng.random((4, 12))
    grads = chain_bound_gradients(mu0, mu1, xi, net.weights, net.biases, 6)
    assert all(np.all(np.isfinite(g)) for g in grads)
    # away from saturation the guard changes nothing: still the finite-difference derivative
    inner0, inner1 = np.clip(mu0, 0.05, 0.95), np.clip(mu1, 0.05, 0.95)
    inner0[:, 6:], inner1[:, 6:] = 0.0, 0.0
    g0, _, _, _, _ = chain_bound_gradients(inner0, inner1, xi, net.weights, net.biases, 6)
    h = 1e-6
    up, dn = inner0.copy(), inner0.copy()
    up[:, 3] += h
    dn[:, 3] -= h
    fd = (
        chain_bound(up, inner1, xi, net.weights, net.biases, 6)
        - chain_bound(dn, inner1, xi, net.weights, net.biases, 6)
    ) / (2 * h)
    np.testing.assert_allclose(fd, g0[:, 3], atol=1e-6)


def test_fit_at_span_4_gives_finite_bounds_below_exact():
    rng = np.random.default_rng(7)
    net = random_layered_sbn(LAYERS, 40, 4.0, rng)
    v = np.zeros(6)
    exact = exact_log_marginal(net, v)[:, 0]
    mf = fit_mean_field(net.weights, net.biases, v, rng.random((40, 6)), rng.random((40, 12)))
    ch = fit_markov_chain(
        net.weights, net.biases, v, LAYERS, mf.mu[:, :6], mf.xi, chunk=40, max_iter=300
    )
    assert np.all(np.isfinite(ch.bound))
    assert np.all(ch.bound <= exact + 1e-9)
    assert np.all(ch.bound >= mf.bound - 1e-9)
