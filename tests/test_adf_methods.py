"""The pbp and ebp methods: registration, batching, determinism, every likelihood end to end."""

import numpy as np
import pytest

from bnnsweep.datasets.base import Split
from bnnsweep.engines.adf.replicates import ADF
from bnnsweep.methods import SettingsError, get_method
from bnnsweep.methods.adf import EBPSettings, PBPSettings, fit, fit_many
from bnnsweep.results import cell_dataset
from bnnsweep.runtime.jax_runtime import jax
from bnnsweep.sweeps.sweep import Cell


def _split(task: str, seed: int = 0, n: int = 60, n_test: int = 20, n_in: int = 3) -> Split:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + n_test, n_in))
    f = np.sin(x[:, 0]) + 0.5 * x[:, 1]
    if task == "regression":
        y = f + 0.1 * rng.normal(size=f.shape)
    elif task == "binary":
        y = (f > 0).astype(float)
    elif task == "multiclass":
        y = np.digitize(f, [-0.5, 0.5]).astype(float)
    else:
        y = rng.poisson(np.exp(0.5 * f + 1.0)).astype(float)
    y = y[:, None]
    one, zero = np.ones(1), np.zeros(1)
    return Split(f"s{seed}", x[:n], y[:n], x[n:], y[n:], zero, one)


LIKELIHOOD_TASKS = {"gaussian": "regression", "probit": "binary", "softmax": "multiclass",
                    "poisson": "count"}  # fmt: skip


def test_both_methods_registered_with_fit_many():
    for name in ("pbp", "ebp"):
        method = get_method(name)
        assert method.fit_many is fit_many and method.axes == ("hidden",)
        assert method.accepted_tasks(method.settings({"likelihood": "poisson"})) == ("count",)
    assert get_method("laplace").fit_many is None
    assert get_method("laplace").accepted_tasks(None) == ("regression",)


@pytest.mark.parametrize(
    "bad",
    [{"layers": 0}, {"layers": "50"}, {"layers": []}, {"layers": [5, 0]}, {"likelihood": "logit"}, {"noise_shape": 1.0},
     {"epochs": 0}, {"softmax_approximation": "exact"}, {"poisson_approximation": "exact"},
     {"mean_init": "he"}],
)  # fmt: skip
def test_settings_refuse_bad_values(bad):
    with pytest.raises(SettingsError):
        get_method("pbp").settings(bad)


def test_same_seed_gives_identical_numbers():
    split = _split("regression")
    settings = PBPSettings(hidden=8, epochs=3)
    runs = [fit(split, settings, np.random.default_rng(5), log=lambda *_: None) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].pred_mean, runs[1].pred_mean)
    np.testing.assert_array_equal(runs[0].pred_var, runs[1].pred_var)
    np.testing.assert_array_equal(
        runs[0].traces["epoch_test_error"][1], runs[1].traces["epoch_test_error"][1]
    )
    other = fit(split, settings, np.random.default_rng(6), log=lambda *_: None)
    assert not np.array_equal(other.pred_mean, runs[0].pred_mean)


def _numbers(result) -> dict:
    """Every number of a fit: its arrays, numeric diagnostics and traces."""
    out = {k: np.asarray(v) for k, v in vars(result).items() if isinstance(v, np.ndarray)}
    out.update(
        {f"diagnostic {k}": np.asarray(v) for k, v in result.diagnostics.items()
         if isinstance(v, (int, float, np.number))}
    )  # fmt: skip
    out.update({f"trace {k}": np.asarray(v[1]) for k, v in result.traces.items()})
    return out


@pytest.mark.parametrize(
    "settings_class,likelihood",
    [(PBPSettings, "gaussian"), (EBPSettings, "gaussian"), (PBPSettings, "softmax")],
)
def test_batched_replicates_equal_separate_runs_bitwise(settings_class, likelihood):
    """A replicate's numbers are bitwise those of its fit alone, whatever its batch-mates
    (own stream, own data size: the shorter replicates are padded) and the batch's size, so
    that a sweep may batch a dataset's splits and write the files a job per cell writes
    (filter.BITWISE_OPTIONS; with XLA's default emitter, ~1e-12 apart)."""
    task = LIKELIHOOD_TASKS[likelihood]
    splits = [_split(task, 0), _split(task, 1, n=45), _split(task, 2, n=60)]
    settings = settings_class(hidden=6, layers=[6, 4], epochs=2, likelihood=likelihood)
    quiet = {"log": lambda *_: None}
    seeds = (1, 2, 3)
    alone = [
        fit(split, settings, np.random.default_rng(seed), **quiet)
        for split, seed in zip(splits, seeds, strict=True)
    ]
    for size in (2, 3):
        batch = fit_many(
            splits[:size], settings, [np.random.default_rng(s) for s in seeds[:size]], **quiet
        )
        for k in range(size):
            want, got = _numbers(alone[k]), _numbers(batch[k])
            assert want.keys() == got.keys()
            differing = [
                name
                for name in want
                if not np.array_equal(want[name], got[name], equal_nan=want[name].dtype.kind == "f")
            ]
            assert not differing, (size, k, differing)
            assert batch[k].n_grad_evals == 2 * splits[k].x_train.shape[0]


def test_pbp_learns_a_regression_and_ebp_keeps_unit_variances():
    split = _split("regression", n=150)
    quiet = {"log": lambda *_: None}
    for seed in (0, 1, 2):
        pbp = fit(split, PBPSettings(hidden=10, epochs=15), np.random.default_rng(seed), **quiet)
        rmse = np.sqrt(np.mean((pbp.pred_mean - split.y_test) ** 2))
        assert rmse < 0.5 * np.std(split.y_test), seed
        assert pbp.diagnostics["prior_shape"] > 6.0  # EP refinement moved the Gamma of lambda
        assert pbp.traces["epoch_test_error"][0] == ("epoch",)
    settings = EBPSettings(hidden=10, epochs=3)
    run = ADF([split], settings, [np.random.default_rng(0)], fixed_variance=True, **quiet)
    (ebp,) = run.run()
    assert np.all(np.isfinite(ebp.pred_mean)) and np.isnan(ebp.diagnostics["prior_shape"])
    assert all(np.all(np.asarray(v) == 1.0) for v in run.state.variances)


def _assert_healthy(result, method, likelihood):
    """``ok``; except PBP with the Monte Carlo softmax, whose noisy gradients propose a few
    negative variances: on these 60 points and 3 epochs 2 rejections in 180 point visits
    already pass the 1% limit of ``flag_unstable`` (6 to 7 of seeds 0-9 are flagged, before
    and after the prior-refinement fix of issue 17), so that run may be ``not_converged``
    for its rejections, and only for them."""
    if method == "pbp" and likelihood == "softmax" and result.status == "not_converged":
        assert "weight updates rejected" in result.status_message
        assert result.diagnostics["rejected_weight_update_share"] < 0.1
    else:
        assert result.status == "ok", result.status_message


@pytest.mark.parametrize("likelihood", ["gaussian", "probit", "softmax", "poisson"])
@pytest.mark.parametrize("method", ["pbp", "ebp"])
def test_every_likelihood_fits_and_is_scored(method, likelihood):
    split = _split(LIKELIHOOD_TASKS[likelihood])
    m = get_method(method)
    settings = m.settings({"hidden": 8, "epochs": 3, "likelihood": likelihood, "mc_samples": 5})
    for seed in (1, 2):  # the stochastic checks below hold for every seed, not just seed 0
        other = m.fit(split, settings, np.random.default_rng(seed), log=lambda *_: None)
        _assert_healthy(other, method, likelihood)
        assert np.all(np.isfinite(other.pred_mean))
        if likelihood in ("probit", "softmax"):
            assert np.mean(other.pred_mean[:, 0] != split.y_test[:, 0]) < 0.5
    result = m.fit(split, settings, np.random.default_rng(0), log=lambda *_: None)
    _assert_healthy(result, method, likelihood)
    cell = Cell("t", "synthetic", "0", method, method, 0, (("hidden", 8),), {"hidden": 8})
    ds = cell_dataset(result, split, cell)
    assert np.isfinite(ds["test_loglik"].item()) and np.isfinite(ds["train_loglik"].item())
    if likelihood in ("probit", "softmax"):
        assert 0.0 <= ds["test_error_rate"].item() < 0.5
        probs = ds["class_probs"].values
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-12)
    elif likelihood == "poisson":
        assert ds["test_mad"].item() >= 0 and np.all(result.pred_mean >= 0)
        assert np.all(result.pred_mean == np.floor(result.pred_mean))
    else:
        assert "test_error_rate" not in ds and np.isfinite(ds["test_rmse"].item())


def test_softmax_log_bound_and_mc_both_learn():
    split = _split("multiclass", n=120)
    for approx in ("bound", "mc"):
        s = PBPSettings(hidden=10, epochs=6, likelihood="softmax", softmax_approximation=approx)
        for seed in (1, 2, 3):
            r = fit(split, s, np.random.default_rng(seed), log=lambda *_: None)
            errors = r.traces["epoch_test_error"][1]
            assert errors[-1] < 0.35, (approx, seed, errors)


def test_relu_map_point_estimate_separates_the_toy_classes():
    from bnnsweep import datasets

    split = datasets.load("toy_two_class").split("default")
    m = get_method("relu_map")
    result = m.fit(split, m.settings({"hidden": 10}), np.random.default_rng(0), log=print)
    assert np.mean(np.exp(result.train_logpred)) > 0.95
    corner = np.argmin(np.sum((split.x_test - [6.0, -6.0]) ** 2, axis=1))
    assert result.class_probs.shape == (split.x_test.shape[0], 2)
    assert np.isfinite(result.class_probs[corner]).all()


@pytest.mark.parametrize("likelihood", ["probit", "softmax"])
def test_reference_classifier_energy_gradient_matches_finite_differences(likelihood):
    from bnnsweep.methods.relu_reference import ClassifierPosterior, PointSettings

    split = _split("binary", n=15)
    post = ClassifierPosterior(split, PointSettings(hidden=4, layers=2, likelihood=likelihood))
    rng = np.random.default_rng(3)
    w = rng.normal(size=(2, post.arch.n_weights))
    u, grad = post.energy(w)
    h = 1e-6
    for j in rng.choice(post.arch.n_weights, 8, replace=False):
        step = np.zeros_like(w)
        step[:, j] = h
        numeric = (post.energy(w + step)[0] - post.energy(w - step)[0]) / (2 * h)
        np.testing.assert_allclose(grad[:, j], numeric, rtol=1e-5, atol=1e-7)


def test_rejected_updates_are_counted_and_reported():
    """Noisy Monte Carlo gradients under a vague prior propose negative variances: they are
    rejected, counted in the diagnostics and named in the status message, never applied; at
    several rejections per point visit the run is ``not_converged`` (methods/adf.py
    ``flag_unstable``)."""
    from bnnsweep import datasets

    split = datasets.load("toy_two_class").split("default")
    settings = PBPSettings(
        hidden=10,
        epochs=30,
        likelihood="softmax",
        mc_samples=2,
        prior_shape=1e4,
        prior_rate=999900.0,
    )
    for seed in (0, 1, 2):
        result = fit(split, settings, np.random.default_rng(seed), log=lambda *_: None)
        rejected = result.diagnostics["rejected_weight_updates"]
        assert rejected > 0 and f"rejected_weight_updates {rejected}" in result.status_message
        assert result.diagnostics["rejected_weight_update_share"] > 1.0
        assert result.status == "not_converged" and "weight updates rejected" in (
            result.status_message
        )
        assert np.all(np.isfinite(result.class_probs))


def test_five_layer_pbp_keeps_its_prior_and_fits():
    """Paper 004 suppl. Table 3 runs PBP with five hidden layers of 50 units (yacht: RMSE
    1.92 +- 0.23). While the prior refinement refused updates that made the Gamma of lambda
    improper, its variance ran away and these runs exploded or collapsed (yacht splits 0-2:
    RMSE 15.4, 12.8 and 1.3e7); as in the authors' code, every split now trains."""
    from bnnsweep import datasets

    data = datasets.load("yacht")
    settings = PBPSettings(hidden=50, layers=5, epochs=40)
    for split in ("0", "1", "2"):
        result = fit(data.split(split), settings, np.random.default_rng(0), log=lambda *_: None)
        assert result.status == "ok", result.status_message
        assert result.diagnostics["rejected_weight_update_share"] < 0.01
        assert result.diagnostics["train_rmse_ratio"] < 0.5
        assert float(np.isfinite(result.pred_mean).all())


@pytest.mark.parametrize("settings", [PBPSettings(hidden=5, epochs=1), EBPSettings(hidden=5)])
def test_first_epoch_sees_the_types_of_every_later_one(settings):
    """The initial filter state has the shapes, dtypes and (strong) weak-types of the state an
    epoch returns, so the epoch program compiles once: a weakly typed initial leaf (jnp.full
    of a Python float) made the first epoch a program of its own, 0.7 s of compilation per
    job on the UCI sets."""

    def avals(state):
        return [(a.shape, a.dtype, a.weak_type) for a in jax.tree.leaves(state)]

    splits = [_split("regression", seed=s) for s in (0, 1)]
    rngs = [np.random.default_rng(s) for s in (0, 1)]
    ebp = isinstance(settings, EBPSettings)
    run = ADF(splits, settings, rngs, log=lambda *_: None, fixed_variance=ebp)
    before = avals(run.state)
    run.epoch()
    assert avals(run.state) == before
