"""Gradient and exact Hessian of the negative log posterior against finite differences."""

import numpy as np
import pytest

from bnnsweep.models import (
    HYPERPRIOR_ROLES,
    PRIOR_KINDS,
    GammaPrior,
    Network,
    PenalisedError,
    make_prior,
)

HYPER = {role: {"shape": 1.5, "rate": 0.7} for role in HYPERPRIOR_ROLES}


def problem(activation, hidden, kind, n_out=2, seed=0):
    rng = np.random.default_rng(seed)
    net = Network(3, hidden, n_out, activation)
    prior = make_prior(net, kind, HYPER)
    x, t = rng.normal(size=(9, 3)), rng.normal(size=(9, n_out))
    objective = PenalisedError(net, prior, x, t)
    w = net.init_weights(rng, 3, scale=2.0)
    alpha = rng.uniform(0.3, 3.0, prior.n_groups)
    return objective, w, alpha, 2.5


@pytest.mark.parametrize("activation", ["erf", "tanh", "linear"])
@pytest.mark.parametrize("kind", PRIOR_KINDS)
@pytest.mark.parametrize("hidden", [0, 1, 4])
def test_gradient_and_hessian_match_finite_differences(activation, kind, hidden):
    objective, w, alpha, beta = problem(activation, hidden, kind)
    value, grad = objective.value_and_grad(w, alpha, beta)
    hess = objective.hessian(w, alpha, beta)
    np.testing.assert_allclose(value, objective.value(w, alpha, beta), rtol=1e-12)
    eps = 1e-5
    for i in range(w.shape[1]):
        e = np.zeros(w.shape[1])
        e[i] = eps
        g_fd = (objective.value(w + e, alpha, beta) - objective.value(w - e, alpha, beta)) / (
            2 * eps
        )
        h_fd = (
            objective.value_and_grad(w + e, alpha, beta)[1]
            - objective.value_and_grad(w - e, alpha, beta)[1]
        ) / (2 * eps)
        scale_g = np.abs(grad).max()
        scale_h = np.abs(hess).max()
        assert np.max(np.abs(grad[:, i] - g_fd)) <= 1e-6 * scale_g
        assert np.max(np.abs(hess[:, :, i] - h_fd)) <= 1e-6 * scale_h


def test_hessian_is_symmetric_and_batched_consistently():
    objective, w, alpha, beta = problem("tanh", 4, "ard")
    hess = objective.hessian(w, alpha, beta)
    np.testing.assert_allclose(hess, np.swapaxes(hess, 1, 2), atol=1e-12)
    single = objective.hessian(w[1:2], alpha, beta)
    np.testing.assert_allclose(hess[1], single[0], rtol=1e-13)


def test_erf_activation_is_scaled_cumulative_gaussian():
    from scipy.stats import norm

    net = Network(1, 1, 1, "erf")
    a = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(net.activation.value(a), 2 * norm.cdf(a) - 1, atol=1e-14)


def test_prior_groups():
    net = Network(3, 4, 2, "tanh")
    grouped = make_prior(net, "grouped", HYPER)
    assert grouped.group_names == ("input_hidden", "hidden_bias", "hidden_output", "output_bias")
    np.testing.assert_array_equal(grouped.group_sizes, [12, 4, 8, 2])
    ard = make_prior(net, "ard", HYPER)
    np.testing.assert_array_equal(ard.group_sizes, [4, 4, 4, 4, 8, 2])
    # ARD group i holds exactly the weights leaving input i
    w = np.zeros((1, net.n_weights))
    w[0, net.slices["W1"]] = np.tile([1.0, 2.0, 3.0], 4)
    np.testing.assert_allclose(ard.sum_squares(w)[0, :3], [4.0, 16.0, 36.0])
    assert make_prior(net, "single", HYPER).n_groups == 1
    with pytest.raises(ValueError, match="unknown prior 'nrdd'"):
        make_prior(net, "nrdd", HYPER)


def test_gamma_mean_s_conversion():
    g = GammaPrior.from_mean_s(400.0, 0.2)
    assert g.shape == pytest.approx(0.1)
    assert g.rate == pytest.approx(0.2 / 800.0)
    assert g.mean == pytest.approx(400.0)
    assert g.shape / g.rate**2 == pytest.approx(2 * 400.0**2 / 0.2)
    scaled = GammaPrior.from_spec({"mean": 1.0, "s": 0.2, "scale_with_hidden": True}, n_hidden=8)
    assert scaled.mean == pytest.approx(8.0)
