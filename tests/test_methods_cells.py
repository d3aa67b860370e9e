"""Every registered method fits a tiny cell and writes a valid NetCDF file with the contract
variables; the chaining and hmc cells carry their traces."""

import numpy as np
import pytest
import xarray as xr

from bnnsweep.methods import REGISTRY
from bnnsweep.results import merge_cells
from bnnsweep.runner import fit_cell_to_file
from bnnsweep.sweeps.sweep import Cell

TINY = {
    "laplace": {"restarts": 2, "cycles": 2},
    "map": {"restarts": 2, "max_iter": 50},
    "hmc": {"chains": 2, "burn_in": 10, "samples": 20, "leapfrog": 10, "burn_leapfrog": 10},
    "chaining": {"schedule": "geometric5", "burn_in": 10, "burn_leapfrog": 10, "samples": 20,
                 "leapfrog": 10, "ais_particles": 8, "ais_leapfrog": 5, "ais_substeps": 20,
                 "hyperpriors": {r: {"shape": 1.0, "rate": 1.0} for r in
                                 ("input_hidden", "hidden_bias", "hidden_output", "output_bias")},
                 "noise_hyperprior": {"shape": 2.0, "rate": 0.1},
                 "valley_tempering": {"rungs": 6, "replicates": 2, "burn_in": 20,
                                      "samples": 20, "adapt_rounds": 1, "fold_draws": 500,
                                      "search": {"starts": 4, "start_iter": 100,
                                                 "newton_iter": 20, "pilot_samples": 10}},
                 "valley_smc": {"particles": 16, "runs": 2, "moves": 2, "leapfrog": 5,
                                "refits": 1, "fold_draws": 500,
                                "search": {"starts": 4, "start_iter": 100, "newton_iter": 20,
                                           "pilot_samples": 10}}},
    "pbp": {"epochs": 2, "activation": "relu"},
    "ebp": {"epochs": 2, "activation": "relu"},
    "vi_gauss": {"restarts": 1, "outer_iter": 3, "max_iter": 20},
    "vi_mixture": {"components": 2, "outer_iter": 3, "max_iter": 20},
    "relu_map": {"activation": "relu", "likelihood": "probit", "max_iter": 50},
    "relu_hmc": {"activation": "relu", "chains": 2, "burn_in": 10, "samples": 10, "leapfrog": 5},
    "exact": {"hidden": 0, "activation": "linear", "prior": "single"},
    "ltu": {"activation": "sign", "hidden": 3, "outer": 2, "anneal_rate": 0.5},
    "posterior_slices": {"restarts": 1, "cycles": 2, "max_iter": 50, "vi_iter": 10,
                         "sweeps": 1, "sweep_iter": 5, "components": 2, "points": 5,
                         "mi_samples": 50},
}  # fmt: skip
DATASET = {
    "relu_map": "toy_two_class",
    "relu_hmc": "toy_two_class",
    "ltu": "pima_ripley",
}  # classifiers need class labels


# regression methods without a network (no sweep axis): the settings of a tiny cell
NO_AXES = {"least_squares": {"degree": 2}, "gaussian_fits": {"grid_points": 201}}

# methods of the thesis's other models (no network, no test predictions: likelihood
# "none"): (dataset, split, axes, settings) of a tiny cell
OTHER_MODELS = {
    "vb_ica": ("ica_toy", "draw0", (("sources", 2),), {"outer": 2, "inner": 5}),
    "ch1_checks": ("thesis_ch1", "burglary", (), {}),
    "adf_activations": ("adf_activation_grid", "default", (), {"mc_draws": 1000}),
    "g2_approximation": ("g2_range", "default", (), {}),
    "vi_mixture_target": (
        "thesis_ch1",
        "kl_asymmetry",
        (("components", 2),),
        {"outer_iter": 5, "reference_starts": 1},
    ),
    "sbn_vi": (
        "sbn_random_246",
        "span_0p5",
        (("q_family", "mixture"), ("components", 2)),
        {"max_sweeps": 5},
    ),
    "bm_vi": (
        "bm_two_point",
        "default",
        (("q_family", "mixture"), ("components", 2), ("joint_init", "previous")),
        {"iterations": 3, "runs": 2},
    ),
}
CONTRACT = ("pred_mean", "pred_var", "test_rmse", "test_loglik", "train_loglik",
            "log_evidence", "log_evidence_kind", "status", "runtime_s", "n_grad_evals")  # fmt: skip
OTHER_CONTRACT = ("log_evidence", "log_evidence_kind", "status", "runtime_s")


def tiny_cell(method: str) -> Cell:
    if method in OTHER_MODELS:
        dataset, split, axes, settings = OTHER_MODELS[method]
        return Cell("t", dataset, split, method, method, 0, axes, {**settings, **dict(axes)})
    if method in NO_AXES:
        return Cell("t", "toy_sine", "default", method, method, 0, (), NO_AXES[method])
    assert method in TINY, f"add a tiny setting for {method}"
    hidden = TINY[method].get("hidden", 2)
    axes = [("hidden", hidden)] + ([("schedule", "geometric5")] if method == "chaining" else [])
    settings = {"activation": "erf", **TINY[method], **dict(axes)}
    dataset = DATASET.get(method, "toy_sine")
    return Cell("t", dataset, "default", method, method, 0, tuple(axes), settings)


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_method_cell_round_trip(method, tmp_path):
    cell = tiny_cell(method)
    path = fit_cell_to_file(cell, tmp_path / "cell.nc", log=lambda *_: None)
    with xr.open_dataset(path) as ds:
        if method in OTHER_MODELS:
            for name in OTHER_CONTRACT:
                assert name in ds, name
            assert ds.status.item() != "diverged"
    if method not in OTHER_MODELS:
        check_network_cell(method, path)
    merged = merge_cells([path])
    assert merged.sizes["run"] == 1


def check_network_cell(method: str, path) -> None:
    """The contract of a network method's cell: predictions, metrics and its diagnostics."""
    with xr.open_dataset(path) as ds:
        for name in CONTRACT:
            if name == "test_rmse" and method in DATASET:
                name = "test_error_rate"  # the classification contract name
            assert name in ds, name
        assert np.all(np.isfinite(ds.pred_mean.values))
        # closed forms: no gradients
        assert ds.n_grad_evals.item() > 0 or method in ("exact", "least_squares")
        if method == "chaining":  # the default: SMC from the valleys' reference
            assert ds.log_evidence_kind.item() == "chain"
            assert ds.link_lambda[0] == 0 and ds.link_lambda[-1] == 1
            assert np.isfinite(ds.log_evidence_se.item()) and ds.smc_run_log_evidence.size == 2
            assert ds.status.item() != "diverged"
        if method == "hmc":
            assert ds.sample_beta.shape == (20, 2)


def test_chaining_refuses_a_nearly_improper_hyperprior():
    """The thesis's a = 3e-4 hyperprior puts most prior mass on alpha = 0 in floating point:
    the lambda = 0 reference cannot be drawn, so the settings are refused with the role named."""
    from bnnsweep.method_base import SettingsError
    from bnnsweep.methods import get_method

    settings = {k: v for k, v in TINY["chaining"].items() if k != "hyperpriors"}
    settings["hyperpriors"] = {"input_hidden": {"shape": 3e-4, "rate": 1e-3}}
    with pytest.raises(SettingsError, match="'input_hidden' has shape 0.0003"):
        get_method("chaining").settings(settings)


def test_map_validation_sets_cover_the_data_in_folds_or_hold_out_a_fraction():
    """Issue 17: a fair early-stopping baseline on small data (k-fold), the paper's holdout
    on larger data."""
    from bnnsweep.methods import get_method
    from bnnsweep.methods.map_early_stopping import validation_sets

    method = get_method("map")
    settings = method.settings({})
    folds = validation_sets(30, settings, np.random.default_rng(0))
    assert settings.scheme(30) == "kfold" and len(folds) == 5
    assert sorted(np.concatenate(folds).tolist()) == list(range(30))
    assert settings.scheme(221) == "holdout"
    (held,) = validation_sets(221, settings, np.random.default_rng(0))
    assert len(held) == 22
    holdout = method.settings({"validation": "holdout"})
    assert holdout.scheme(30) == "holdout" and holdout.restarts_per_fit(30) == 10
    assert settings.restarts_per_fit(30) == 2
