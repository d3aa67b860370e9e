"""The re-evaluation of laplace's evidence-only settings from a merged file's per-mode traces
against fits with those settings, and the occam_hill note on framework variants."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest
from test_laplace_variants import toy_split

from bnnsweep.figures.laplace_elements import element_effects, variant_frame
from bnnsweep.figures.occam_hill import occam_hill
from bnnsweep.methods import get_method
from bnnsweep.results import cell_dataset, merge_cells, write_netcdf_atomic
from bnnsweep.sweeps.sweep import Cell

BASE = {"activation": "tanh", "restarts": 3, "cycles": 6, "max_iter": 150, "newton_steps": 15}
PAPER = {"evidence": "paper", "gamma_hessian": "exact", "modes": "all"}
SEEDS = (0, 1)
HIDDEN = (2, 3)


def _fit(values, seed):
    method = get_method("laplace")
    settings = method.settings(values)
    split = toy_split(7, 0.1, n=25)
    return (
        method.fit(split, settings, np.random.default_rng(seed), lambda *_: None),
        split,
        settings,
    )


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("elements")
    paths = []
    for label, extra in (("laplace", {}), ("laplace_paper", PAPER)):
        for hidden in HIDDEN:
            for seed in SEEDS:
                values = {**BASE, **extra, "hidden": hidden}
                result, split, settings = _fit(values, seed)
                cell = Cell("t", "synthetic", "default", label, "laplace", seed,
                            (("hidden", hidden),), values)  # fmt: skip
                path = tmp / f"{label}_{hidden}_{seed}.nc"
                write_netcdf_atomic(cell_dataset(result, split, cell, asdict(settings)), path)
                paths.append(path)
    return merge_cells(paths)


@pytest.mark.parametrize(
    "setting", [{"hessian": "clipped"}, {"hessian": "gauss_newton"}, {"symmetry": "none"},
                {"modes": "all"}],
)  # fmt: skip
def test_reevaluated_variant_equals_a_fit_with_that_setting(merged, setting):
    frame = variant_frame(merged)
    ((key, value),) = setting.items()
    hidden, seed = HIDDEN[-1], SEEDS[-1]
    row = frame[(frame["variant"] == f"laplace | {key}={value}")
                & (frame["hidden"] == hidden) & (frame["seed"] == seed)]  # fmt: skip
    direct, _, _ = _fit({**BASE, **setting, "hidden": hidden}, seed)
    assert len(row) == 1
    assert row["log_evidence"].iloc[0] == pytest.approx(direct.log_evidence, abs=1e-6)
    # somewhere in the file the setting moves the evidence (clipping only where a mode has
    # negative data curvature; 'all' only where a restart repeats a mode)
    moved = frame[frame["variant"] == f"laplace | {key}={value}"].set_index(["seed", "hidden"])
    base = frame[frame["variant"] == "laplace"].set_index(["seed", "hidden"])
    gap = np.abs(moved["log_evidence"] - base.loc[moved.index, "log_evidence"])
    if setting == {"hessian": "clipped"}:
        # the same wherever no counted mode has negative data curvature
        runs = merged["method"].values.astype(str) == "laplace"
        negative = (merged["mode_negative_curvature"].values[runs] > 0).any(axis=1)
        keys = list(zip(merged["seed"].values[runs], merged["hidden"].values[runs], strict=True))
        for k, neg in zip(keys, negative, strict=True):
            assert (gap.loc[k] > 0) if neg else gap.loc[k] == pytest.approx(0, abs=1e-9)
    elif key != "modes":
        assert gap.max() > 1e-3


def test_paired_differences_from_the_reference(merged):
    frame = variant_frame(merged)
    effects = element_effects(merged)
    ref = effects[effects["variant"] == "laplace"]
    np.testing.assert_allclose(ref["minus_laplace"], 0.0, atol=1e-12)
    paper = frame[frame["variant"] == "laplace_paper"].set_index(["seed", "hidden"])
    base = frame[frame["variant"] == "laplace"].set_index(["seed", "hidden"])
    for hidden in HIDDEN:
        diffs = [paper.loc[(s, hidden), "log_evidence"] - base.loc[(s, hidden), "log_evidence"]
                 for s in SEEDS]  # fmt: skip
        row = effects[(effects["variant"] == "laplace_paper") & (effects["hidden"] == hidden)]
        assert row["minus_laplace"].iloc[0] == pytest.approx(np.mean(diffs))
        assert row["minus_laplace_se"].iloc[0] == pytest.approx(
            np.std(diffs, ddof=1) / np.sqrt(len(diffs))
        )
    # laplace_paper's own modes are summed over all, so it has no 'modes=all' re-evaluation
    assert "laplace_paper | modes=all" not in set(frame["variant"])


def test_occam_hill_names_each_labels_framework(merged):
    fig = occam_hill(merged)
    texts = "\n".join(t.get_text() for t in fig.texts)
    assert "laplace: ln|A|: exact, gamma: clipped, Gamma hyperpriors" in texts
    assert "laplace_paper: ln|A|: exact, gamma: exact, hyperpriors neglected" in texts
    assert "every mode found" in texts
    assert "laplace | symmetry=none" in texts
    assert "[today's default]" in texts
    assert (
        "laplace_paper: ln|A|: exact, gamma: exact, hyperpriors neglected, + ln h! 2^h, "
        "every mode found  [paper 001 sec. 4 as written]" in texts
    )
