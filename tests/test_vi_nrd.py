"""NRD structure learning (thesis sec. 6.5.9): removing a node maps weights and node
hyperparameters consistently, and on data with irrelevant inputs the learned structure drops
them while the recorded bound never decreases."""

import numpy as np
import pytest

from bnnsweep.datasets.base import Split
from bnnsweep.engines.variational.nrd_structure import reduce_network
from bnnsweep.method_base import SettingsError, build_settings
from bnnsweep.methods.vi_gauss import VIGaussSettings, fit
from bnnsweep.models import GammaPrior, Network
from bnnsweep.models.priors import nrd_prior


@pytest.mark.parametrize("layer", ["hidden", "input"])
def test_reduced_network_equals_the_network_with_the_node_cut(layer):
    rng = np.random.default_rng(0)
    net = Network(3, 4, 2, "erf")
    w = net.init_weights(rng, 1)[0]
    x = rng.normal(size=(7, 3))
    keep_in, keep_h = np.ones(3, bool), np.ones(4, bool)
    cut = w.copy()
    s = net.slices
    if layer == "hidden":
        keep_h[2] = False
        cut[s["W2"]] = (cut[s["W2"]].reshape(2, 4) * keep_h).ravel()  # unit 2 cut from outputs
    else:
        keep_in[1] = False
        cut[s["W1"]] = (cut[s["W1"]].reshape(4, 3) * keep_in).ravel()
    red = reduce_network(net, keep_in, keep_h)
    np.testing.assert_allclose(
        red.network.forward(w[red.weights], x[:, red.inputs]), net.forward(cut, x), atol=1e-12
    )
    # node hyperparameters follow their weights
    hp = GammaPrior(1.0, 1.0)
    alpha = rng.uniform(0.5, 2.0, nrd_prior(net, hp).n_groups)
    np.testing.assert_allclose(
        nrd_prior(red.network, hp).per_weight(alpha[red.groups]),
        nrd_prior(net, hp).per_weight(alpha)[red.weights],
    )


def test_structure_learning_drops_irrelevant_inputs_and_never_lowers_the_bound():
    rng = np.random.default_rng(3)
    n = 60
    x = np.column_stack([rng.uniform(0, 1, n), rng.normal(size=n), rng.normal(size=n)])
    t = (0.4 * np.sin(2 * np.pi * x[:, 0]) + 0.05 * rng.normal(size=n))[:, None]
    t = (t - t.mean()) / t.std()
    split = Split("d", x, t, x[:10], t[:10], np.zeros(1), np.ones(1))
    values = {"hidden": 5, "prior": "nrd", "restarts": 1, "outer_iter": 40}
    quiet = {"log": lambda *_: None}
    fixed = fit(
        split, build_settings(VIGaussSettings, values, "m"), np.random.default_rng(0), **quiet
    )
    learned = fit(split, build_settings(VIGaussSettings, {**values, "structure": "nrd"}, "m"),
                  np.random.default_rng(0), **quiet)  # fmt: skip
    trace = learned.traces["bound"][1]
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    assert list(learned.traces["retained_input"][1]) == [0]
    assert learned.diagnostics["retained_hidden"] < 5
    assert learned.diagnostics["structure"].startswith("1x")
    assert learned.log_evidence > fixed.log_evidence
    assert learned.pred_mean.shape == (10, 1) and np.all(np.isfinite(learned.pred_mean))


def test_structure_learning_needs_the_nrd_prior_and_a_diagonal_covariance():
    for values in (
        {"structure": "nrd"},
        {"structure": "nrd", "prior": "nrd", "covariance": "full"},
    ):
        with pytest.raises(SettingsError, match="structure: nrd"):
            build_settings(VIGaussSettings, values, "method 'vi_gauss'")
