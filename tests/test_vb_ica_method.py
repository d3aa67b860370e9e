"""Method ``vb_ica`` (thesis §6.5) end to end: the datasets ``ica_toy``/``ica_images`` (task
``unsupervised``, the true mixing matrix in ``x_test``), fits on the toy whose bound never
falls and whose columns match the true ones, cells that write and merge, the shipped config,
and the three figures drawn from a merged file written as ``bnnsweep merge`` writes it."""

import numpy as np
import pytest
from merged_fixtures import ICA_QUICK
from merged_fixtures import ica_fit as fit

from bnnsweep import datasets
from bnnsweep.cells.reader import read_cell
from bnnsweep.datasets.ica_mixtures import true_images, truth
from bnnsweep.figures import FIGURES, draw
from bnnsweep.method_base import SettingsError
from bnnsweep.methods import get_method
from bnnsweep.methods.vb_ica import (
    bound_decreases,
    column_cosines,
    source_mixture,
    switched_off,
)
from bnnsweep.models.ica import image_source_mixture, toy_source_mixture
from bnnsweep.results import merge_cells
from bnnsweep.sweeps.config import ConfigError, expand, load

METHOD = get_method("vb_ica")
QUICK = ICA_QUICK


@pytest.fixture
def toy_fits(ica_toy_fits):
    """``merged_fixtures.ica_toy_fits``: three toy draws, I = 3."""
    return ica_toy_fits


# ---- data -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ica_toy", "ica_images"])
def test_datasets_carry_observations_and_the_true_mixing_matrix(name):
    meta = datasets.describe(name)
    assert meta["task"] == "unsupervised" and meta["n_sources_true"] == 2
    ds = datasets.load(name)
    for split_name, split in ds.splits.items():
        data = truth(name, split_name)
        assert split.y_train.shape == (split.x_train.shape[0], 0)
        np.testing.assert_array_equal(split.x_train, data.t)
        np.testing.assert_array_equal(split.x_test, data.mixing.T)  # row i: true column i
        signal = data.sources @ data.mixing.T
        assert np.var(data.t - signal) == pytest.approx(data.noise_variance, rel=0.15)
    again = datasets.load(name)  # fixed seeds
    np.testing.assert_array_equal(again.split("draw0").x_train, ds.split("draw0").x_train)
    assert not np.allclose(ds.split("draw0").x_train[:5], ds.split("draw1").x_train[:5])


def test_toy_and_image_draws_share_the_mixing_matrix_and_the_stated_noise():
    toy, images = truth("ica_toy", "draw1"), truth("ica_images", "draw1")
    np.testing.assert_array_equal(toy.mixing, images.mixing)
    assert toy.t.shape == (200, 3) and images.t.shape == (1000, 3)
    assert toy.noise_variance == 1e-4
    signal = images.sources @ images.mixing.T
    assert images.noise_variance == pytest.approx(0.078 * np.mean(signal.var(axis=0)))
    whole, positions = true_images("draw1")
    np.testing.assert_array_equal(whole.reshape(2, -1)[:, positions].T, images.sources)


# ---- settings -------------------------------------------------------------------------------


def test_source_densities_are_the_thesis_models():
    """M = 2: the toy's (variances 1, 50) and the images' (+-1, unit variance) densities;
    M = 1: N(0, 1) for both, which makes the model Bayesian PCA (tested against Bishop's VB
    PCA in tests/test_vb_ica.py::test_one_gaussian_component_fit_is_bayesian_pca)."""
    toy = source_mixture(METHOD.settings({"sources": 3}))
    for a, b in zip(toy.arrays(), toy_source_mixture(3).arrays(), strict=True):
        np.testing.assert_array_equal(a, b)
    images = source_mixture(METHOD.settings({"sources": 3, "source_density": "location_mixture"}))
    for a, b in zip(images.arrays(), image_source_mixture(3).arrays(), strict=True):
        np.testing.assert_array_equal(a, b)
    for density in ("scale_mixture", "location_mixture"):
        gauss = source_mixture(METHOD.settings({"source_components": 1, "source_density": density}))
        assert gauss.n_components == 1
        np.testing.assert_array_equal(gauss.means, 0.0)
        np.testing.assert_array_equal(gauss.variances, 1.0)


@pytest.mark.parametrize(
    "values, message",
    [
        ({"sources": 0}, "'sources' must be > 0"),
        ({"source_density": "laplace"}, "must be one of scale_mixture, location_mixture"),
        ({"source_components": 5, "sources": 6}, "limit 4096"),
        ({"switch_off_ratio": 1.0}, "switch_off_ratio"),
        ({"colapsed": True}, "did you mean 'collapsed'"),
    ],
)
def test_bad_settings_are_named(values, message):
    with pytest.raises(SettingsError, match=message):
        METHOD.settings(values)


def test_helpers_match_their_definitions():
    w_true = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    fitted = np.array([[0.0, -2.0, np.nan], [3.0, 0.0, np.nan], [0.0, 0.1, np.nan]])
    np.testing.assert_allclose(column_cosines(fitted, w_true), [2 / np.sqrt(4.01), 1.0])
    assert switched_off(np.array([0.1, 0.3, 2.2]), 100.0).tolist() == [False, False, True]
    assert switched_off(np.array([0.1, 0.3, 2.0]), 100.0).tolist() == [False, False, False]
    drops = bound_decreases(np.array([-10.0, -9.0, -9.5, -9.5 - 1e-12]), 1e-9)
    np.testing.assert_allclose(drops, [0.0, 0.5, 0.0])


# ---- fits -----------------------------------------------------------------------------------


def test_toy_fits_never_lower_the_bound_and_find_the_true_columns(toy_fits):
    """Figs. 6.9-6.10 over three draws (and seeds): the bound after every update is >= the
    one before (to round-off), the two true mixing columns are matched with |cos| > 0.95,
    and the third source is switched off (<alpha> over 100 times the smallest)."""
    for _split, result in toy_fits.values():
        assert result.status == "ok", result.status_message
        trace = result.traces["bound"][1]
        assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
        assert trace[-1] > trace[0] + 10.0
        assert result.log_evidence == trace[-1] and result.log_evidence_kind == "lower_bound"
        assert np.all(result.traces["cosine"][1] > 0.95)
        assert result.diagnostics["sources_switched_off"] == 1
        # the switched-off alpha nears the ceiling (a + P/2)/b of its update (a = b = 1e-3)
        assert result.diagnostics["log10_alpha_ceiling"] == pytest.approx(np.log10(1.501 / 1e-3))
        top = np.max(result.traces["log10_alpha"][1])
        assert np.log10(1501) - 0.2 < top <= np.log10(1501) + 1e-12
        assert result.diagnostics["bound_violations"] == 0
        w = result.traces["mixing_mean"][1]
        assert w.shape == (3, 3) and result.traces["cosine"][0] == ("true_source",)
        assert result.traces["source_mean"][1].shape == (200, 3)


def test_a_falling_bound_is_flagged(monkeypatch):
    """The method's own check: a trace that falls beyond round-off makes the run
    'diverged' (the engine is made to report such a trace)."""
    from bnnsweep.engines import ica as engine

    real = engine.fit_vb_ica

    def falling(*args, **kwargs):
        result = real(*args, **kwargs)
        result.bound_trace[-2] = result.bound_trace[-1] + 1.0
        return result

    monkeypatch.setattr(engine, "fit_vb_ica", falling)
    _, result = fit("ica_toy", "draw0", sources=3, outer=2, inner=5)
    assert result.status == "diverged" and "bound fell" in result.status_message
    assert result.diagnostics["bound_decrease_max"] == pytest.approx(1.0)


def test_removal_keeps_two_sources_and_records_the_three_source_alphas():
    _, result = fit("ica_toy", "draw0", sources=3, outer=10, inner=50, remove_sources=True)
    assert result.status == "ok"
    assert result.diagnostics["sources_removed"] == 1
    kept = result.traces["source_kept"][1]
    assert kept.sum() == 2
    log_alpha = result.traces["log10_alpha"][1]
    assert np.all(np.isfinite(log_alpha)) and kept[np.argmax(log_alpha)] == 0
    assert np.all(np.isnan(result.traces["mixing_mean"][1][:, kept == 0]))


# ---- cells, merge, figures ------------------------------------------------------------------


@pytest.fixture
def merged_path(ica_merged):
    """``merged_fixtures.ica_merged``'s merged file."""
    return ica_merged[0]


def test_cells_merge_ragged_along_source(ica_merged, toy_fits):
    path, cells = ica_merged
    one = read_cell(cells[0])
    np.testing.assert_array_equal(one["bound"].values, toy_fits[0][1].traces["bound"][1])
    assert "test_rmse" not in one
    merged = merge_cells(cells)
    assert merged["log10_alpha"].dims == ("run", "source") and merged.sizes["source"] == 3
    two = int(np.flatnonzero(merged["sources"].values == 2)[0])
    assert np.isnan(merged["log10_alpha"].values[two, 2])
    assert merged["mixing_mean"].dims == ("run", "observed", "source")
    assert set(merged["log_evidence_kind"].values) == {"lower_bound"}


@pytest.mark.parametrize(
    "kind", ["ica_alpha", "ica_alpha_rounds", "ica_bound_trace", "ica_sources"]
)
def test_each_figure_draws_from_a_merged_file(kind, merged_path, tmp_path):
    assert kind in FIGURES
    (written,) = draw(kind, merged_path, tmp_path / kind)
    data = written.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_alpha_figure_states_published_and_measured_values(merged_path):
    from bnnsweep.figures import load_merged
    from bnnsweep.figures.ica import ica_alpha

    fig = ica_alpha(load_merged(merged_path))
    texts = [" ".join(ax.get_title(loc="left").split()) for ax in fig.axes]
    assert any("about 3 orders of magnitude" in t and "ours (" in t for t in texts)
    assert any("phantom source is NOT switched off" in t for t in texts)
    assert any("switched off (ratio > 100) in 3/3 runs" in t for t in texts)


def test_alpha_rounds_figure_draws_fig_6_10_with_published_and_measured(merged_path):
    from bnnsweep.figures import load_merged
    from bnnsweep.figures.ica import ica_alpha_rounds

    merged = load_merged(merged_path)
    fig = ica_alpha_rounds(merged)
    texts = [" ".join(ax.get_title(loc="left").split()) for ax in fig.axes]
    assert any("fig. 6.10" in t and "ours (" in t and "last round" in t for t in texts)
    # one line per fitted source and run: the I = 3 panel of the toy draws 3 per run
    toy3 = next(
        ax for ax, t in zip(fig.axes, texts, strict=False) if "ica_toy" in t and "I = 3" in t
    )
    n_runs = int(((merged["dataset"] == "ica_toy") & (merged["sources"] == 3)
                  & (merged["method"] == "vb_ica")).sum())  # fmt: skip
    assert len(toy3.get_lines()) == 3 * n_runs


def test_first_separated_round():
    from bnnsweep.figures.ica import first_separated_round

    # rises of the largest over the next: 0.1, 1.3, 2.3, 2.9 orders
    rounds = np.array([[0.0, 0.1, 0.0], [0.0, 1.5, 0.2], [0.1, 2.6, 0.3], [0.1, 3.2, 0.3]])
    assert first_separated_round(rounds) == 2.0
    assert first_separated_round(rounds, orders=2.8) == 3.0
    assert np.isnan(first_separated_round(rounds, orders=5.0))


# ---- config ---------------------------------------------------------------------------------


def test_shipped_config_is_valid_and_sweeps_sources():
    cells = expand(load("config/thesis_ica.yaml"))
    toy = [c for c in cells if c.dataset == "ica_toy" and c.method == "vb_ica"]
    assert sorted({dict(c.axes)["sources"] for c in toy}) == [2, 3]
    assert {c.dataset for c in cells} == {"ica_toy", "ica_images"}


def test_config_refuses_vb_ica_on_regression_data():
    config = {
        "experiments": {"e": {"datasets": ["toy_sine"], "methods": {"vb_ica": {"sources": 2}}}}
    }
    from bnnsweep.sweeps.config import validate

    with pytest.raises(ConfigError, match="fits unsupervised data"):
        expand(validate(config))
