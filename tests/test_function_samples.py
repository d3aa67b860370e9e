"""Posterior function draws recorded by the methods (thesis fig. 5.3's thin lines)."""

import numpy as np
import pytest
import xarray as xr

from bnnsweep.engines.evidence.laplace import HessianFactor
from bnnsweep.runner import fit_cell_to_file
from bnnsweep.sweeps.sweep import Cell


def test_hessian_factor_draws_have_covariance_a_inverse():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(4, 4))
    A = m @ m.T + 4 * np.eye(4)
    mean = rng.normal(size=4)
    draws = HessianFactor.of(A).sample(mean, 200_000, rng)
    cov = np.linalg.inv(A)
    se = np.sqrt((cov**2 + np.outer(np.diag(cov), np.diag(cov))) / len(draws))
    assert np.all(np.abs(np.cov(draws.T) - cov) < 4 * se)
    assert np.all(np.abs(draws.mean(0) - mean) < 4 * np.sqrt(np.diag(cov) / len(draws)))


TINY = {
    "laplace": {"restarts": 2, "cycles": 2},
    "vi_gauss": {"restarts": 1, "outer_iter": 3, "max_iter": 20},
    "vi_mixture": {"components": 2, "outer_iter": 3, "max_iter": 20},
    "hmc": {"chains": 2, "burn_in": 10, "samples": 20, "leapfrog": 10, "burn_leapfrog": 10},
}


@pytest.mark.parametrize("method", sorted(TINY))
def test_function_samples_are_written_in_original_units(method, tmp_path):
    settings = {"activation": "erf", "hidden": 2, **TINY[method]}
    cell = Cell("t", "toy_sine", "default", method, method, 0, (("hidden", 2),), settings)
    path = fit_cell_to_file(cell, tmp_path / "cell.nc", log=lambda *_: None)
    with xr.open_dataset(path) as ds:
        samples = ds["pred_function_samples"]
        assert samples.dims == ("function_sample", "test_point", "output")
        assert samples.sizes["function_sample"] == 10
        assert np.all(np.isfinite(samples.values))
        # draws scatter around the predictive mean, on its scale (original units)
        spread = np.abs(samples.mean("function_sample") - ds.pred_mean).max().item()
        assert spread < 3 * np.sqrt(ds.pred_var.max().item())


@pytest.mark.parametrize("kind", ["diag", "full", "fa"])
def test_variational_draws_have_the_family_covariance(kind):
    from bnnsweep.models.vi_family import GaussianFamily

    rng = np.random.default_rng(1)
    family = GaussianFamily(kind, 3, 2)
    theta = rng.normal(scale=0.5, size=family.n_params)
    mean, cov = family.mean_cov(theta)
    cov = np.diag(cov) if cov.ndim == 1 else cov
    draws = family.sample(theta, 200_000, rng)
    se = np.sqrt((cov**2 + np.outer(np.diag(cov), np.diag(cov))) / len(draws))
    assert np.all(np.abs(np.cov(draws.T) - cov) < 4 * se)
    assert np.all(np.abs(draws.mean(0) - mean) < 4 * np.sqrt(np.diag(cov) / len(draws)))
