"""Gamma hyper-posteriors: the closed-form updates maximise the bound (no perturbation of
q(alpha), q(beta) raises it), the Gamma KL is right, and the NRD prior joins each weight to
its two nodes."""

import numpy as np
import pytest
from scipy import integrate, stats

from bnnsweep.engines.variational.hyperposterior import (
    HyperPosterior,
    gamma_kl,
    mixture_second_moment,
)
from bnnsweep.models import GammaPrior, Network, make_prior

HYPER = {r: {"shape": 1.5, "rate": 0.7} for r in ("weights", "input_hidden", "hidden_bias",
         "hidden_output", "output_bias")}  # fmt: skip


def test_gamma_kl_matches_numerical_integration():
    q, p = stats.gamma(2.5, scale=1 / 1.7), stats.gamma(0.8, scale=1 / 0.3)
    numeric = integrate.quad(lambda x: q.pdf(x) * (q.logpdf(x) - p.logpdf(x)), 0, np.inf)[0]
    assert gamma_kl(2.5, 1.7, 0.8, 0.3) == pytest.approx(numeric, rel=1e-8)


@pytest.mark.parametrize("kind", ["single", "grouped", "ard", "nrd"])
def test_updates_maximise_the_bound(kind):
    rng = np.random.default_rng(0)
    net = Network(3, 4, 2, "erf")
    prior = make_prior(net, kind, HYPER)
    noise = GammaPrior(2.0, 0.5)
    # a mixture of two diagonal components, Q = (0.3, 0.7)
    means, variances = rng.normal(size=(2, net.n_weights)), rng.uniform(0.1, 1, (2, net.n_weights))
    second = mixture_second_moment([0.3, 0.7], means, variances)
    e_d = 7.3
    post = HyperPosterior.initial(prior, noise, 20)
    post.update_alpha(second)
    post.update_beta(e_d)
    best = post.bound(e_d, second, 0.0)
    for _ in range(20):
        other = HyperPosterior(prior, noise, 20, post.alpha_shape * rng.uniform(0.9, 1.1, prior.n_groups),
                               post.alpha_rate * rng.uniform(0.9, 1.1, prior.n_groups),
                               post.beta_shape * rng.uniform(0.9, 1.1), post.beta_rate * rng.uniform(0.9, 1.1))  # fmt: skip
        assert other.bound(e_d, second, 0.0) < best


def test_weight_term_matches_monte_carlo_under_nrd():
    """E_q ln p(w | alpha) with <alpha_a alpha_b> = <alpha_a><alpha_b> and
    <ln alpha_a alpha_b> = <ln alpha_a> + <ln alpha_b> (factorised q, thesis eq. 6.40)."""
    rng = np.random.default_rng(1)
    net = Network(2, 2, 1, "erf")
    prior = make_prior(net, "nrd", HYPER)
    post = HyperPosterior(prior, GammaPrior(1.0, 1.0), 5, rng.uniform(2, 4, prior.n_groups),
                          rng.uniform(1, 2, prior.n_groups), 3.0, 1.0)  # fmt: skip
    second = rng.uniform(0.1, 1.0, net.n_weights)
    alpha = rng.gamma(post.alpha_shape, 1 / post.alpha_rate, size=(400_000, prior.n_groups))
    prec = prior.per_weight(alpha)
    draws = np.sum(0.5 * np.log(prec / (2 * np.pi)) - 0.5 * prec * second, axis=1)
    se = draws.std() / np.sqrt(draws.size)
    assert abs(draws.mean() - post.weight_term(second)) < 4 * se


def test_nrd_structure_joins_each_weight_to_its_two_nodes():
    net = Network(3, 2, 1, "erf")
    prior = make_prior(net, "nrd", HYPER)
    names = prior.group_names
    assert names == ("input_0", "input_1", "input_2", "input_bias", "hidden_0", "hidden_1",
                     "hidden_bias", "output_0")  # fmt: skip
    s = net.slices
    w1 = [
        (names[a], names[b])
        for a, b in zip(prior.group_index[s["W1"]], prior.partner_index[s["W1"]], strict=True)
    ]
    assert w1[1] == ("input_1", "hidden_0") and w1[3] == ("input_0", "hidden_1")  # W1 is H x I
    assert names[prior.group_index[s["b2"]][0]] == "hidden_bias"
    alpha = np.arange(1.0, 9.0)
    assert prior.per_weight(alpha)[s["W2"]][1] == alpha[5] * alpha[7]
    # thesis eq. 6.46: a hidden node touches I + 1 input-side weights and one output weight
    post = HyperPosterior.initial(prior, GammaPrior(1.0, 1.0), 4)
    assert post.counts[names.index("hidden_0")] == 3 + 1 + 1
