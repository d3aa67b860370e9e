"""Exact enumeration for Boltzmann machines (models.boltzmann) against brute force and
sampling-free identities: the energy convention, ln Z, moments, clamping, the log-likelihood
and its gradient (eqs. 4.1-4.6)."""

import itertools

import numpy as np
import pytest

from bnnsweep.models import boltzmann as bm


def _machines(seed, k=3, n=5, mask=None):
    rng = np.random.default_rng(seed)
    mask = bm.fully_connected_mask(n) if mask is None else mask
    return bm.random_machines(rng, k, mask, -1.5, 1.5) + (mask,)


def _brute_log_z(w, b, t=1.0):
    n = b.size
    vals = []
    for s in itertools.product((-1.0, 1.0), repeat=n):
        s = np.array(s)
        e = sum(w[i, j] * s[i] * s[j] for i in range(n) for j in range(i + 1, n)) + b @ s
        vals.append(e / t)
    return np.log(np.sum(np.exp(vals)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_partition_matches_a_plain_loop_over_states(seed):
    w, b, _ = _machines(seed)
    for t in (1.0, 2.5):
        got = bm.exact_log_partition(w, b, t)
        want = [_brute_log_z(w[k], b[k], t) for k in range(3)]
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_weights_are_symmetric_with_zero_diagonal_and_masked():
    mask = bm.layered_mask([2, 3, 2])
    w, _ = bm.random_machines(np.random.default_rng(0), 4, mask)
    np.testing.assert_array_equal(w, np.swapaxes(w, 1, 2))
    assert np.all(np.diagonal(w, axis1=1, axis2=2) == 0)
    assert np.all(w[:, ~mask] == 0)
    assert np.all(w[:, mask] != 0)
    # layered: 2x3 + 3x2 links, none inside a layer, none between layers 1 and 3
    assert np.triu(mask, 1).sum() == 12 and not mask[0, 1] and not mask[0, 5]
    v = bm.weights_to_vector(w, mask)
    np.testing.assert_array_equal(bm.vector_to_weights(v, mask), w)


def test_grid_neighbourhood_mask():
    mask = bm.grid_neighbourhood_mask(4, 4, hidden=2)
    assert mask.shape == (18, 18) and np.array_equal(mask, mask.T) and not mask.diagonal().any()
    # interior grid unit (1, 1) = 5: 8 neighbours + 2 hidden; corner 0: 3 + 2; hidden: all 17
    assert mask[5].sum() == 10 and mask[0].sum() == 5 and mask[16].sum() == 17
    assert not mask[0, 2]


def test_single_unit_conditional_is_tanh_of_the_field():
    """The energy convention: P(s_k=+1|rest)/P(s_k=-1|rest) = exp(2 (W s + b)_k), so that
    mean field reads tanh(W m + b) (4.10)."""
    w, b, _ = _machines(3, k=2, n=4)
    states = bm.all_states(4, bm.SPIN_VALUES)
    logp = bm.log_potential(states[None], w, b)  # (K, S)
    for k in range(4):
        flipped = states.copy()
        flipped[:, k] *= -1
        logp_f = bm.log_potential(flipped[None], w, b)
        field = np.einsum("kj,sj->ks", w[:, k, :], states) + b[:, None, k]
        # log ratio of the state to its k-flip is 2 s_k field_k
        np.testing.assert_allclose(logp - logp_f, 2 * states[None, :, k] * field, atol=1e-12)


@pytest.mark.parametrize("seed", [4, 5])
def test_log_partition_gradient_is_correlations(seed):
    """d ln Z / d w_ij (shared w_ij = w_ji) = <s_i s_j>, d ln Z / d b_i = <s_i> (4.6)."""
    w, b, mask = _machines(seed, k=2, n=5)
    ex = bm.exact_phase(w, b)
    vec = bm.weights_to_vector(w, mask)
    eps = 1e-6
    iu = np.nonzero(np.triu(mask, 1))
    for p in range(vec.shape[1]):
        d = np.zeros_like(vec)
        d[:, p] = eps
        up = bm.exact_log_partition(bm.vector_to_weights(vec + d, mask), b)
        dn = bm.exact_log_partition(bm.vector_to_weights(vec - d, mask), b)
        fd = (up - dn) / (2 * eps)
        np.testing.assert_allclose(fd, ex.correlations[:, 0, iu[0][p], iu[1][p]], atol=1e-7)
    for i in range(5):
        d = np.zeros_like(b)
        d[:, i] = eps
        fd = (bm.exact_log_partition(w, b + d) - bm.exact_log_partition(w, b - d)) / (2 * eps)
        np.testing.assert_allclose(fd, ex.means[:, 0, i], atol=1e-7)


def test_clamped_phase_is_the_conditional_of_the_joint():
    w, b, _ = _machines(6, k=2, n=5)
    clamped = np.array([1, 3])
    values = np.array([[1.0, -1.0], [-1.0, -1.0], [1.0, 1.0]])
    cond = bm.exact_phase(w, b, clamped, values)
    states = bm.all_states(5, bm.SPIN_VALUES)
    logp = bm.log_potential(states[None], w, b)
    for p, v in enumerate(values):
        sel = np.all(states[:, clamped] == v, axis=1)
        lz_v = np.log(np.exp(logp[:, sel]).sum(1))
        np.testing.assert_allclose(cond.log_partition[:, p], lz_v, rtol=1e-12)
        pr = np.exp(logp[:, sel] - lz_v[:, None])
        np.testing.assert_allclose(cond.means[:, p], pr @ states[sel], atol=1e-12)
        corr = np.einsum("ks,si,sj->kij", pr, states[sel], states[sel])
        np.testing.assert_allclose(cond.correlations[:, p], corr, atol=1e-12)


def test_clamped_machine_reproduces_the_full_energy():
    w, b, _ = _machines(7, k=3, n=6)
    clamped = np.array([0, 4, 5])
    values = np.array([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]])
    mach = bm.clamp_machine(w, b, clamped, values)
    sub = bm.all_states(3, bm.SPIN_VALUES)
    full = bm.phase_states(6, clamped, values)  # (P, S, n)
    want = bm.log_potential(full[None], w[:, None], b[:, None])  # (K, P, S)
    got = bm.log_potential(sub[None, None], mach.weights, mach.biases) + mach.constant[..., None]
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("supervised", [False, True])
def test_log_likelihood_gradient_matches_finite_differences(supervised):
    """ln P(V) with hidden units (4.5), or ln P(O | I); gradient 4.6 by central differences."""
    mask = bm.layered_mask([2, 2, 2]) | bm.layered_mask([4, 2])
    np.fill_diagonal(mask, False)
    w, b, _ = _machines(8, k=2, n=6, mask=mask)
    rng = np.random.default_rng(9)
    plus = np.array([0, 1, 4, 5])
    data = rng.choice([-1.0, 1.0], size=(5, 4))
    minus = np.array([0, 1]) if supervised else None
    res = bm.exact_log_likelihood(w, b, plus, data, minus, mask)
    vec = bm.weights_to_vector(w, mask)
    iu = np.nonzero(np.triu(mask, 1))
    eps = 1e-6
    for p in range(vec.shape[1]):
        d = np.zeros_like(vec)
        d[:, p] = eps
        up = bm.exact_log_likelihood(bm.vector_to_weights(vec + d, mask), b, plus, data, minus)
        dn = bm.exact_log_likelihood(bm.vector_to_weights(vec - d, mask), b, plus, data, minus)
        fd = (up.log_likelihood - dn.log_likelihood) / (2 * eps)
        np.testing.assert_allclose(fd, res.weight_gradient[:, iu[0][p], iu[1][p]], atol=1e-6)
    for i in range(6):
        d = np.zeros_like(b)
        d[:, i] = eps
        up = bm.exact_log_likelihood(w, b + d, plus, data, minus).log_likelihood
        dn = bm.exact_log_likelihood(w, b - d, plus, data, minus).log_likelihood
        np.testing.assert_allclose((up - dn) / (2 * eps), res.bias_gradient[:, i], atol=1e-6)
    assert np.all(res.weight_gradient[:, ~mask] == 0)
    # a probability: ln P <= 0, and for the supervised case the outputs' P sums to one
    assert np.all(res.per_pattern < 0)
    if supervised:
        outs = np.array(list(itertools.product((-1.0, 1.0), repeat=2)))
        tot = 0.0
        for o in outs:
            d1 = np.concatenate([data[:1, :2], o[None]], axis=1)
            tot = tot + np.exp(bm.exact_log_likelihood(w, b, plus, d1, minus).per_pattern[:, 0])
        np.testing.assert_allclose(tot, 1.0, rtol=1e-12)


def test_empirical_kl_against_direct_sum():
    w, b, _ = _machines(10, k=2, n=2)
    data = np.array([[1.0, 1.0], [1.0, 1.0], [-1.0, -1.0]])
    states = bm.all_states(2, bm.SPIN_VALUES)
    logp = bm.log_potential(states[None], w, b)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    # p_data: (1,1) 2/3 (state index 3), (-1,-1) 1/3 (index 0)
    want = 2 / 3 * (np.log(2 / 3) - logp[:, 3]) + 1 / 3 * (np.log(1 / 3) - logp[:, 0])
    got = bm.empirical_kl(w, b, [0, 1], data)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.all(got > 0)
