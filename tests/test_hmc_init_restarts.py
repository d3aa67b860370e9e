"""``hmc``'s ``init_restarts``: each chain starts at the least M(w) of its own short MAP fits,
and one restart leaves the random stream (and so every earlier result) as it was."""

from __future__ import annotations

import numpy as np
import pytest

from bnnsweep import datasets
from bnnsweep.methods import get_method


class Started(Exception):
    """Raised by the stand-in sampler with the chains' starting weights."""


def starts_and_fits(monkeypatch, restarts: int, seed: int = 0):
    """The chains' starting weights and, per minimisation, (its start, its minimum), from a
    fit on toy_sine stopped where sampling would begin."""
    from bnnsweep.engines import optimise
    from bnnsweep.engines.mcmc import hmc as sampler

    fits = []
    real = optimise.minimise_weights

    def recording(objective, w0, *args, **kwargs):
        found = real(objective, w0, *args, **kwargs)
        fits.append((np.array(w0), found))
        return found

    def stop(potential, w0, *args, **kwargs):
        raise Started(np.array(w0))

    monkeypatch.setattr(optimise, "minimise_weights", recording)
    monkeypatch.setattr(sampler, "sample", stop)
    method = get_method("hmc")
    settings = method.settings(
        {"hidden": 3, "chains": 3, "init_iter": 30, "init_restarts": restarts}
    )
    split = datasets.load("toy_sine").split("default")
    with pytest.raises(Started) as started:
        method.fit(split, settings, np.random.default_rng(seed), log=lambda *_: None)
    return started.value.args[0], fits


@pytest.mark.parametrize("seed", [0, 1])
def test_each_chain_starts_at_the_best_of_its_restarts(monkeypatch, seed):
    w0, fits = starts_and_fits(monkeypatch, restarts=4, seed=seed)
    assert len(fits) == 3 * 4
    for c in range(3):
        mine = [found for _, found in fits[4 * c : 4 * c + 4]]
        best = min(mine, key=lambda f: f.value)
        assert np.array_equal(w0[c], best.w)
        assert len({tuple(np.round(start, 12)) for start, _ in fits[4 * c : 4 * c + 4]}) == 4
    one, fits_one = starts_and_fits(monkeypatch, restarts=1, seed=seed)
    # one restart: the chains' first starts are those of R = 4 (the extra draws come after)
    assert [tuple(s) for s, _ in fits_one] == [tuple(fits[4 * c][0]) for c in range(3)]


def test_init_restarts_must_be_positive():
    with pytest.raises(ValueError, match="init_restarts"):
        get_method("hmc").settings({"init_restarts": 0})
