"""Two hidden layers with the softmax likelihood: the initial weight means decide whether the
filter learns (``mean_init``; ``network.Architecture.init_means``)."""

import numpy as np
import pytest

from bnnsweep.datasets.base import Split
from bnnsweep.engines.adf.network import Architecture, forward
from bnnsweep.methods.adf import EBPSettings, PBPSettings, fit

N_IN = 40


def _three_classes(seed: int = 0, n: int = 300, n_test: int = 300) -> Split:
    """40 Gaussian inputs, the class the argmax of three random projections (chance 2/3)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + n_test, N_IN))
    y = np.argmax(x @ rng.normal(size=(N_IN, 3)), axis=1).astype(float)[:, None]
    return Split("three", x[:n], y[:n], x[n:], y[n:], np.zeros(1), np.ones(1))


def _input_signal(unit: bool) -> list[float]:
    """Per hidden layer at initialisation: the spread over inputs of a unit's input mean mu,
    over the unit's own input s.d. sqrt(tau), averaged over units (how much of the input the
    means' network passes on)."""
    arch = Architecture((N_IN, 50, 50, 3))
    means = arch.init_means([np.random.default_rng(0)], unit=unit)
    variances = [np.full_like(m, 1.2) for m in means]  # PBP's prior variance b/(a-1)
    x = _three_classes().x_train[None]
    _, _, cache = forward(means, variances, x, keep=True)
    signal = []
    for (zm1, zv1, second, _), m, v in zip(cache[1:], means[1:], variances[1:], strict=True):
        mu = np.asarray(zm1[0] @ m[0].T) / np.sqrt(m.shape[-1])  # the next layer's mu
        tau = np.asarray(zv1[0] @ (m[0] ** 2).T + second[0] @ v[0].T) / m.shape[-1]
        signal.append(float(np.mean(mu.std(axis=0) / np.sqrt(tau.mean(axis=0)))))
    return signal


def test_fan_in_means_pass_the_inputs_on_at_a_hundredth_of_the_noise():
    """The cause: N(0, 1/D) means under eq. 7's 1/sqrt(D) leave the inputs of the second
    hidden and the output layer varying over the data by 0.014 and 0.006 of their own s.d.
    (N(0, 1) means: 0.39 and 0.18); each layer divides the means' signal by ~sqrt(D)."""
    fan_in, unit = _input_signal(unit=False), _input_signal(unit=True)
    assert all(s < 0.03 for s in fan_in), fan_in
    assert all(s > 0.1 for s in unit), unit


@pytest.mark.parametrize("settings_class", [PBPSettings, EBPSettings])
def test_two_hidden_layers_learn_three_classes_from_unit_means(settings_class):
    """Two layers of 50 units, 300 points, 3 epochs: with N(0, 1) means the test error is
    0.15-0.21 (one layer: 0.13-0.22), with HL&A's N(0, 1/D) it stays at chance
    (0.64-0.68), for PBP and EBP alike and for every seed."""
    split = _three_classes()
    for seed in (1, 2, 3):
        errors = {}
        for init in ("unit", "fan_in"):
            settings = settings_class(
                hidden=50, layers=2, epochs=3, likelihood="softmax", mean_init=init
            )
            result = fit(split, settings, np.random.default_rng(seed), log=lambda *_: None)
            assert result.status == "ok", result.status_message
            errors[init] = result.traces["epoch_test_error"][1][-1]
        assert errors["unit"] < 0.3 and errors["fan_in"] > 0.55, (seed, errors)
