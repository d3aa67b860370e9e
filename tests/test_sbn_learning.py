"""Learning SBN weights by gradient ascent on the bound (thesis §2.5.2) and the bars data."""

import numpy as np
import pytest

from bnnsweep.datasets.bars import bars_distribution, bars_entropy, bars_images
from bnnsweep.engines.sbn.learning import learn_by_mixture_bound, mixture_weight_gradient
from bnnsweep.engines.sbn.mixture_bound import init_mixture, mixture_bound
from bnnsweep.models.sigmoid_belief import (
    LayeredSBN,
    exact_log_marginal,
    parent_mask,
    random_layered_sbn,
)


def test_bars_distribution_has_30_images_and_entropy_3379():
    imgs, p = bars_distribution()
    assert imgs.shape == (30, 16)
    np.testing.assert_allclose(p.sum(), 1.0)
    assert abs(bars_entropy() - 3.379) < 5e-4


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bars_samples_follow_the_distribution(seed):
    imgs, p = bars_distribution()
    x = bars_images(np.random.default_rng(seed), 20000)
    codes = {tuple(r): k for k, r in enumerate(imgs)}
    freq = np.bincount([codes[tuple(r)] for r in x], minlength=30) / len(x)
    assert np.max(np.abs(freq - p)) < 5 * np.sqrt(p.max() / len(x))


@pytest.mark.parametrize("seed", [0, 1])
def test_weight_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    net = random_layered_sbn((2, 4, 6), 4, 2.0, rng)
    w, b = net.weights, net.biases
    v = (rng.random((4, 6)) < 0.5).astype(float)
    q, mu, xi, r, lam = init_mixture(v, 4, 6, 3, 12, rng)
    gw, gb = mixture_weight_gradient(q, mu, xi, w, b)
    h = 1e-6
    for i, j in zip(*np.nonzero(parent_mask((2, 4, 6))), strict=True):
        up, dn = w.copy(), w.copy()
        up[:, i, j] += h
        dn[:, i, j] -= h
        fd = (
            mixture_bound(q, mu, xi, r, lam, up, b, 6) - mixture_bound(q, mu, xi, r, lam, dn, b, 6)
        ) / (2 * h)
        np.testing.assert_allclose(fd, gw[:, i, j], atol=1e-6)
    for i in range(12):
        up, dn = b.copy(), b.copy()
        up[:, i] += h
        dn[:, i] -= h
        fd = (
            mixture_bound(q, mu, xi, r, lam, w, up, 6) - mixture_bound(q, mu, xi, r, lam, w, dn, 6)
        ) / (2 * h)
        np.testing.assert_allclose(fd, gb[:, i], atol=1e-6)


def test_learning_raises_the_exact_likelihood_on_a_tiny_task():
    # two visible units, always equal: a 1-2 net can learn it; exact ln P(V) must rise
    data = np.array([[0.0, 0.0], [1.0, 1.0]])

    def sample(rng, n):
        return data[rng.integers(0, 2, n)]

    rng = np.random.default_rng(0)
    res = learn_by_mixture_bound(
        (1, 2), sample, 1, rng, n_restarts=2, steps=100, batch=8, learning_rate=1.0, sweeps=10
    )
    before = LayeredSBN((1, 2), np.zeros((2, 3, 3)), np.zeros((2, 3)))
    after = LayeredSBN((1, 2), res.weights, res.biases)
    ll_before = exact_log_marginal(before, data).mean(-1)
    ll_after = exact_log_marginal(after, data).mean(-1)
    assert np.all(ll_after > ll_before + 0.2)
    assert np.all(res.bound_trace[-5:].mean(0) > res.bound_trace[:5].mean(0))
