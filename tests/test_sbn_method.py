"""The sbn_vi method (thesis ch. 2) through the registry, its datasets, config and figures."""

from pathlib import Path

import numpy as np
import pytest
from merged_fixtures import SBN_K as K
from merged_fixtures import sbn_fit as fit
from merged_fixtures import sbn_small_ensemble as small_ensemble

from bnnsweep import datasets
from bnnsweep.cells.reader import read_cell
from bnnsweep.datasets.bars import bars_distribution
from bnnsweep.datasets.sbn_ensembles import SPANS, span_split_name, split_span
from bnnsweep.figures import draw
from bnnsweep.methods import SettingsError, get_method
from bnnsweep.models.sigmoid_belief import (
    exact_log_marginal,
    n_parameters,
    pack_parameters,
    random_layered_sbn,
    unpack_parameters,
)
from bnnsweep.results import merge_cells
from bnnsweep.sweeps.config import expand, load

CONFIG = Path(__file__).resolve().parents[1] / "config" / "thesis_sbn.yaml"
METHOD = get_method("sbn_vi")
QUIET = {"log": lambda *a: None}


@pytest.fixture(scope="module")
def ensemble_fits():
    split = small_ensemble("span_2p0", K)
    return split, {
        ("mean_field", 1): fit(split, q_family="mean_field"),
        ("mixture", 1): fit(split, q_family="mixture", components=1),
        ("mixture", 2): fit(split, q_family="mixture", components=2),
        ("chain", 1): fit(split, q_family="chain", chain_max_iter=200),
    }


def test_every_bound_is_below_the_enumerated_log_marginal(ensemble_fits):
    split, fits = ensemble_fits
    rows = split.x_train
    net = unpack_parameters(rows[:, :44], (2, 4, 6))
    exact = exact_log_marginal(net, np.zeros(6))[:, 0]
    for key, result in fits.items():
        bound = result.traces["bound"][1]
        assert result.status == "ok", key
        np.testing.assert_allclose(result.traces["exact_loglik"][1], exact)
        assert np.all(bound <= exact + 1e-9), key
        np.testing.assert_allclose(
            result.traces["rel_error"][1], np.abs(exact - bound) / np.abs(exact)
        )
        assert result.log_evidence == pytest.approx(bound.sum())
        assert result.log_evidence_kind == "lower_bound"
        assert result.diagnostics["mean_rel_error"] == pytest.approx(
            result.traces["rel_error"][1].mean()
        )
        assert result.traces["bound"][0] == ("network",)


def test_one_component_mixture_is_mean_field_and_two_components_and_chain_help(ensemble_fits):
    _, fits = ensemble_fits
    mf = fits[("mean_field", 1)].traces["bound"][1]
    np.testing.assert_allclose(fits[("mixture", 1)].traces["bound"][1], mf, atol=1e-8)
    # the chain starts from this very mean-field solution and never ends below it
    chain = fits[("chain", 1)]
    assert np.all(chain.traces["bound"][1] >= mf - 1e-9)
    assert chain.diagnostics["mean_field_mean_rel_error"] == pytest.approx(
        fits[("mean_field", 1)].diagnostics["mean_rel_error"]
    )
    mix2 = fits[("mixture", 2)].diagnostics["mean_rel_error"]
    assert mix2 < 0.9 * fits[("mean_field", 1)].diagnostics["mean_rel_error"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_component_mixture_equals_mean_field_for_other_streams(seed):
    split = small_ensemble("span_1p0", K)
    mf = fit(split, seed, q_family="mean_field").traces["bound"][1]
    m1 = fit(split, seed, q_family="mixture", components=1).traces["bound"][1]
    np.testing.assert_allclose(m1, mf, atol=1e-8)


def test_settings_are_checked():
    with pytest.raises(SettingsError, match="q_family"):
        METHOD.settings({"q_family": "bethe"})
    with pytest.raises(SettingsError, match="needs q_family 'mixture'"):
        METHOD.settings({"q_family": "chain", "components": 3})
    with pytest.raises(SettingsError, match="layers"):
        METHOD.settings({"layers": "2-x-6"})
    with pytest.raises(ValueError, match="161 parameters"):
        fit(small_ensemble("span_1p0", 3), layers="1-8-16")
    assert METHOD.accepted_tasks(METHOD.settings({})) == ("network_ensemble", "binary_density")


@pytest.fixture
def inference_merged(sbn_inference_merged):
    """``merged_fixtures.sbn_inference_merged``: (merged path, cell paths)."""
    return sbn_inference_merged


def test_cells_write_and_merge_with_their_traces(inference_merged):
    path, cells = inference_merged
    one = read_cell(cells[0])
    assert one["bound"].dims == ("network",) and one.sizes["network"] == K
    assert "test_rmse" not in one
    merged = merge_cells(cells)
    assert merged["rel_error"].dims == ("run", "network")
    assert set(merged["q_family"].values) == {"mean_field", "mixture", "chain"}
    assert set(merged["components"].values) == {-1, 2}
    assert set(merged["log_evidence_kind"].values) == {"lower_bound"}
    np.testing.assert_allclose(merged["log_evidence"].values, merged["bound"].sum("network").values)


@pytest.mark.parametrize(
    "kind", ["sbn_error_histograms", "sbn_error_vs_components", "sbn_error_vs_span"]
)
def test_inference_figures_draw_from_a_merged_file(kind, inference_merged, tmp_path):
    path, _ = inference_merged
    written = draw(kind, path, tmp_path / f"{kind}.png")
    assert written[0].stat().st_size > 10_000


def test_error_vs_components_sets_the_published_drop_beside_ours(inference_merged):
    from bnnsweep.figures import load_merged
    from bnnsweep.figures.sbn_figures import sbn_error_vs_components

    fig = sbn_error_vs_components(load_merged(inference_merged[0]))
    title = fig.axes[0].get_title()
    assert "published: 27 % at M = 5" in title and "drop from mean field at M = 2" in title


@pytest.fixture
def bars_merged(sbn_bars_merged):
    """``merged_fixtures.sbn_bars_merged``: (merged path, split, fit results)."""
    return sbn_bars_merged


def test_learning_records_exact_per_pattern_loglik_of_the_learned_nets(bars_merged):
    _, split, results = bars_merged
    for result in results:
        train = result.traces["train_loglik_pattern"][1]
        test = result.traces["test_loglik_pattern"][1]
        assert train.shape == (2, 10) and test.shape == (2, 8)
        assert np.all(train < 0) and np.all(test < 0)
        # 16 pixels: ln P(v) >= -16 ln 2 is not guaranteed, but a near-uniform start is
        # close to it, and learning for 2 epochs must not make it worse than 2x that
        assert np.all(train > -32 * np.log(2))
        assert result.traces["train_loglik_epoch"][1].shape == (2, 2)
        assert result.diagnostics["train_loglik_per_pattern"] == pytest.approx(train.mean())
        assert result.diagnostics["presentations"] == 2 * 2 * 5
        assert result.log_evidence_kind == "none"
    with pytest.raises(ValueError, match="network ensembles"):
        fit(split, q_family="chain", layers="1-8-16")


def test_bars_figure_draws_the_ideal_line(bars_merged, tmp_path):
    from bnnsweep.figures import load_merged
    from bnnsweep.figures.sbn_figures import sbn_bars_loglik

    path, _, _ = bars_merged
    assert draw("sbn_bars_loglik", path, tmp_path / "bars.png")[0].stat().st_size > 10_000
    ax = sbn_bars_loglik(load_merged(path)).axes[0]
    ideal = [ln for ln in ax.get_lines() if "ideal" in str(ln.get_label())]
    assert len(ideal) == 1 and ideal[0].get_ydata()[0] == pytest.approx(-3.3791, abs=1e-4)


def test_ensemble_dataset_is_deterministic_and_as_described():
    first = datasets.load("sbn_random_246")
    again = datasets.load("sbn_random_246")
    assert list(first.splits) == [span_split_name(w) for w in SPANS] + ["span_1p0_k5000"]
    for name, split in first.splits.items():
        np.testing.assert_array_equal(split.x_train, again.split(name).x_train)
        w = split_span(name)
        assert split.x_train.shape == (5000 if name.endswith("k5000") else 1000, 44 + 6)
        assert split.y_train.shape == (split.x_train.shape[0], 0) and split.x_test.shape[0] == 0
        params = split.x_train[:, :44]
        assert np.all(np.abs(params) <= w) and np.abs(params).max() > 0.95 * w
        np.testing.assert_array_equal(split.x_train[:, 44:], 0.0)
    assert split_span("span_2p5") == 2.5
    # the 5000-net split is not the 1000-net one extended
    assert not np.array_equal(
        first.split("span_1p0").x_train, first.split("span_1p0_k5000").x_train[:1000]
    )
    meta = datasets.describe("sbn_random_246")
    assert meta["task"] == "network_ensemble" and meta["layer_sizes"] == [2, 4, 6]


def test_parameter_rows_round_trip():
    net = random_layered_sbn((2, 4, 6), 5, 1.5, np.random.default_rng(0))
    rows = pack_parameters(net)
    assert rows.shape == (5, n_parameters((2, 4, 6))) == (5, 44)
    back = unpack_parameters(rows, (2, 4, 6))
    np.testing.assert_array_equal(back.weights, net.weights)
    np.testing.assert_array_equal(back.biases, net.biases)


def test_bars_dataset_is_deterministic_and_holds_bars_images():
    split = datasets.load("bars_4x4").split("default")
    np.testing.assert_array_equal(split.x_test, datasets.load("bars_4x4").split("default").x_test)
    images = {tuple(r) for r in bars_distribution()[0]}
    for x in (split.x_train, split.x_test):
        assert {tuple(r) for r in x} <= images
    assert split.x_train.shape == (200, 16) and split.x_test.shape == (1000, 16)
    meta = datasets.describe("bars_4x4")
    assert meta["task"] == "binary_density"
    assert meta["entropy_nats"] == pytest.approx(3.379, abs=5e-4)


def test_config_validates_with_the_thesis_cells():
    cells = expand(load(CONFIG))
    by = {}
    for c in cells:
        by.setdefault(c.experiment, []).append(c)
    assert len(by["sbn_inference"]) == 6 and len(by["sbn_span"]) == 24
    assert len(by["sbn_bars"]) == 5
    assert {c.split for c in by["sbn_inference"]} == {"span_1p0_k5000"}
    components = sorted(dict(c.axes).get("components", 1) for c in by["sbn_bars"])
    assert components == [1, 2, 3, 4, 5]
