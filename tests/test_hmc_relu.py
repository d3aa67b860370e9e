"""relu_hmc: the JAX potential of the ReLU classifier agrees with the numpy energy of the
reference module, and the method samples it on the compiled kernel."""

import numpy as np
import pytest

from bnnsweep.datasets.base import Split
from bnnsweep.methods import relu_reference as ref
from bnnsweep.runtime.jax_runtime import jax


def _split(task: str, seed: int = 0, n: int = 60, n_test: int = 20, n_in: int = 3) -> Split:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + n_test, n_in))
    f = np.sin(x[:, 0]) + 0.5 * x[:, 1]
    y = (f > 0).astype(float) if task == "binary" else np.digitize(f, [-0.5, 0.5]).astype(float)
    y = y[:, None]
    return Split(f"s{seed}", x[:n], y[:n], x[n:], y[n:], np.zeros(1), np.ones(1))


@pytest.mark.parametrize(
    "likelihood, task, layers", [("probit", "binary", 1), ("softmax", "multiclass", 2)]
)
def test_jax_potential_agrees_with_the_numpy_energy(likelihood, task, layers):
    split = _split(task)
    settings = ref.ReferenceHMCSettings(hidden=7, layers=layers, likelihood=likelihood)
    post = ref.ClassifierPosterior(split, settings)
    rng = np.random.default_rng(1)
    w = rng.normal(size=(5, post.arch.n_weights))
    u, g = post.energy(w)
    potential = ref.relu_potential(
        post.arch.shapes, likelihood, settings.prior_variance, split.x_train, split.y_train
    )
    u_j, g_j = jax.vmap(jax.value_and_grad(lambda w: potential(None, None, w)))(w)
    np.testing.assert_allclose(u_j, u, rtol=1e-10)
    np.testing.assert_allclose(g_j, g, rtol=1e-9, atol=1e-10 * np.abs(g).max())
    f = jax.vmap(lambda w: ref.relu_outputs(post.arch.shapes, split.x_test, w))(w)
    np.testing.assert_allclose(f, post.outputs(w, split.x_test), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_relu_hmc_samples_a_posterior_that_predicts(seed):
    split = _split("binary", seed=seed)
    settings = ref.ReferenceHMCSettings(
        hidden=5, likelihood="probit", chains=2, burn_in=100, samples=100, leapfrog=10,
        predictive_samples=200,
    )  # fmt: skip
    result = ref.fit_hmc(split, settings, np.random.default_rng(seed), log=lambda *_: None)
    assert result.status == "ok"
    assert 0.5 < result.diagnostics["acceptance_rate"] <= 1.0
    probs = result.class_probs
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    accuracy = np.mean(np.argmax(probs, axis=1) == split.y_test[:, 0])
    assert accuracy > 0.7
    assert result.traces["sample_energy"][1].shape == (100, 2)
    assert result.n_grad_evals == 2 * (1 + 200 * 10)
