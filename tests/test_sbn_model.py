"""Layered sigmoid belief networks: joint, sampling and exact enumeration (thesis 2.1-2.7)."""

import numpy as np
import pytest

from bnnsweep.models.binary_states import all_states
from bnnsweep.models.sigmoid_belief import (
    LayeredSBN,
    exact_log_marginal,
    exact_log_marginal_patterns,
    exact_mutual_information,
    exact_posterior,
    log_joint,
    parent_mask,
    random_layered_sbn,
    sample,
)


def test_random_246_nets_have_44_parameters_within_span():
    net = random_layered_sbn((2, 4, 6), 50, 1.5, np.random.default_rng(0))
    mask = parent_mask((2, 4, 6))
    assert mask.sum() + 12 == 44
    assert np.all(net.weights[:, ~mask] == 0)
    assert np.all(np.abs(net.weights) <= 1.5) and np.all(np.abs(net.biases) <= 1.5)
    assert net.n_hidden == 6 and net.n_visible == 6


def test_weights_outside_the_layers_are_refused():
    w = np.zeros((1, 3, 3))
    w[0, 0, 2] = 1.0  # a bottom unit as parent of a top unit
    with pytest.raises(ValueError, match="layered"):
        LayeredSBN((1, 1, 1), w, np.zeros((1, 3)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_joint_sums_to_one_and_marginal_matches(seed):
    net = random_layered_sbn((2, 3, 3), 4, 2.0, np.random.default_rng(seed))
    states = all_states(8)
    p = np.exp(log_joint(net.weights, net.biases, states))
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-12)
    # P(V) for every visible pattern equals the sum of the joint over hidden states
    vis = all_states(3)
    lpv = exact_log_marginal(net, vis)  # (K, 8)
    by_pattern = np.zeros((4, 8))
    idx = states[:, 5:] @ (2 ** np.arange(3))
    for s, k in enumerate(idx.astype(int)):
        by_pattern[:, k] += p[:, s]
    np.testing.assert_allclose(np.exp(lpv), by_pattern, atol=1e-12)
    post, hidden = exact_posterior(net, vis)
    np.testing.assert_allclose(post.sum(-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_ancestral_samples_follow_the_marginal(seed):
    rng = np.random.default_rng(seed)
    net = random_layered_sbn((1, 2, 2), 2, 2.0, rng)
    s = sample(net, 40000, rng)
    vis = all_states(2)
    pv = np.exp(exact_log_marginal(net, vis))  # (2, 4)
    codes = (s[:, :, 3:] @ np.array([1, 2])).astype(int)
    freq = np.stack([np.bincount(c, minlength=4) / c.size for c in codes])
    assert np.max(np.abs(freq - pv)) < 5 * np.sqrt(0.25 / 40000)


def test_mutual_information_limits():
    rng = np.random.default_rng(0)
    mu = rng.random((5, 1, 4))
    np.testing.assert_allclose(exact_mutual_information(np.ones((5, 1)), mu), 0.0, atol=1e-12)
    # disjoint point masses: I = entropy of Q(m)
    q = rng.dirichlet(np.ones(3), size=5)
    mu = np.array([[0, 0, 1], [1, 0, 0], [1, 1, 1]], float)[None].repeat(5, 0)
    np.testing.assert_allclose(
        exact_mutual_information(q, mu), -np.sum(q * np.log(q), -1), atol=1e-12
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_marginal_of_shared_patterns_equals_the_enumeration(seed):
    """exact_log_marginal_patterns (visible fields shared by the patterns) against the
    plain enumeration of ln P(H, V), for a 1-3-5 and a 2-2-3-4 net."""
    rng = np.random.default_rng(seed)
    for sizes in ((1, 3, 5), (2, 2, 3, 4)):
        net = random_layered_sbn(sizes, 3, 2.0, rng)
        patterns = (rng.random((7, sizes[-1])) < 0.5).astype(float)
        np.testing.assert_allclose(
            exact_log_marginal_patterns(net, patterns),
            exact_log_marginal(net, patterns),
            rtol=1e-12,
        )
