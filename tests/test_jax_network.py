"""The JAX regression network and penalised error agree with the numpy PenalisedError; the
JAX Gibbs conditionals of the hyperparameters have the conjugate Gamma moments."""

import numpy as np
import pytest

from bnnsweep.models import GammaPrior, Network, make_prior
from bnnsweep.models import jax_network as jn
from bnnsweep.models.objective import PenalisedError
from bnnsweep.runtime.jax_runtime import jax, jnp

HYPER = {
    "weights": {"shape": 2.0, "rate": 1.0},
    "input_hidden": {"shape": 3.0, "rate": 2.0},
    "hidden_bias": {"shape": 1.5, "rate": 0.5},
    "hidden_output": {"shape": 4.0, "rate": 1.0},
    "output_bias": {"shape": 0.5, "rate": 0.1},
}


def _objective(hidden, activation, prior, seed=0, n=37, n_in=3, n_out=2):
    rng = np.random.default_rng(seed)
    net = Network(n_in, hidden, n_out, activation)
    x = rng.normal(size=(n, n_in))
    t = rng.normal(size=(n, n_out))
    return PenalisedError(net, make_prior(net, prior, HYPER), x, t), rng


@pytest.mark.parametrize(
    "hidden, activation, prior, n_in, n_out",
    [(5, "tanh", "grouped", 3, 2), (4, "erf", "ard", 3, 2), (6, "linear", "single", 3, 2),
     (0, "linear", "grouped", 3, 2), (3, "tanh", "single", 3, 2),
     # more inputs or outputs than jax_network.FEW: the matmul form of both passes
     (7, "erf", "grouped", 6, 1), (4, "tanh", "ard", 5, 5), (0, "linear", "single", 6, 5)],
)  # fmt: skip
def test_value_and_gradient_agree_with_numpy(hidden, activation, prior, n_in, n_out):
    """The hand-written backward pass of data_error against numpy's analytic gradient (itself
    checked against finite differences in test_models), in both layer forms."""
    objective, rng = _objective(hidden, activation, prior, n_in=n_in, n_out=n_out)
    spec = jn.objective_spec(objective)
    net = objective.network
    w = net.init_weights(rng, 4, scale=2.0)
    alpha = rng.gamma(2.0, 1.0, size=(4, spec.n_groups))
    beta = rng.gamma(5.0, 10.0, size=4)
    value, grad = objective.value_and_grad(w, alpha, beta)
    x, t = jnp.asarray(objective.x), jnp.asarray(objective.t)

    def m(w, a, b):
        return jn.penalised_error(spec, x, t, w, a, b)

    v_j, g_j = jax.vmap(jax.value_and_grad(m))(w, alpha, beta)
    np.testing.assert_allclose(v_j, value, rtol=1e-12)
    np.testing.assert_allclose(g_j, grad, rtol=1e-12, atol=1e-12 * np.abs(grad).max())
    e_d = jax.vmap(lambda w: jn.data_error(spec, x, t, w))(w)
    np.testing.assert_allclose(e_d, objective.data_error(w), rtol=1e-12)
    y = jax.vmap(lambda w: jn.forward(spec, x, w))(w)
    np.testing.assert_allclose(y, net.forward(w, objective.x), rtol=1e-12, atol=1e-13)
    ss = jax.vmap(lambda w: jn.group_sum_squares(spec, w))(w)
    np.testing.assert_allclose(ss, objective.prior.sum_squares(w), rtol=1e-12)


def test_spec_refuses_node_relevance_priors_and_defaults_to_one_group():
    net = Network(2, 3, 1, "tanh")
    with pytest.raises(ValueError, match="conjugate"):
        jn.network_spec(net, make_prior(net, "nrd", HYPER))
    spec = jn.network_spec(net)
    assert spec.n_groups == 1 and spec.n_weights == net.n_weights


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gibbs_conditionals_have_conjugate_moments(seed):
    """alpha_k | w ~ Gamma(a_k + W_k/2, b_k + w_k^T w_k/2), beta | w ~ Gamma(a + NP/2, b + E_D):
    means and variances of 20000 draws at a fixed w against the closed forms."""
    objective, rng = _objective(4, "tanh", "grouped", seed=seed)
    spec = jn.objective_spec(objective)
    noise = GammaPrior(3.0, 0.5)
    w = objective.network.init_weights(rng, 1)[0]
    x, t = jnp.asarray(objective.x), jnp.asarray(objective.t)
    n = 20000
    keys = jax.random.split(jax.random.key(seed), n)
    alpha, beta = jax.vmap(lambda k: jn.gibbs_hyperparameters(k, spec, x, t, w, noise))(keys)
    prior = objective.prior
    shape = prior.shapes + 0.5 * prior.group_sizes
    rate = prior.rates + 0.5 * prior.sum_squares(w[None])[0]
    mean, sd = shape / rate, np.sqrt(shape) / rate
    assert np.all(np.abs(np.mean(alpha, axis=0) - mean) < 4 * sd / np.sqrt(n))
    assert np.all(np.abs(np.std(alpha, axis=0) / sd - 1) < 4 * np.sqrt(0.5 / n) * 3)
    b_shape = noise.shape + 0.5 * objective.n_targets
    b_rate = noise.rate + objective.data_error(w[None])[0]
    b_sd = np.sqrt(b_shape) / b_rate
    assert abs(np.mean(beta) - b_shape / b_rate) < 4 * b_sd / np.sqrt(n)
    assert abs(np.std(beta) / b_sd - 1) < 4 * np.sqrt(0.5 / n) * 3
