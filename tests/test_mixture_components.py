"""The ``mixture_components`` table (issue 34): what a ``vi_mixture`` run's components do,
computed from a merged file whose numbers are known by construction."""

from __future__ import annotations

import numpy as np
import pytest

from bnnsweep.figures import draw
from bnnsweep.figures.mixture_components import function_spread, mixture_components


def write_runs(results, seeds, offset, diag_errors, mix_errors):
    """Tecator, H = 8: per seed a ``vi_gauss`` run predicting +-diag_error at two test points
    (targets 0) and a two-component ``vi_mixture`` run whose components predict
    +-mix_error +- offset (Q = 1/2 each, so their Q-weighted s.d. is ``offset``), with
    predictive variance 4 (s.d. 2), start bound -100, bound -100 + ln 2 - 0.1 and component
    bounds -100.2 and -100.3."""
    from bnnsweep.cells.writer import write_cell_atomic
    from bnnsweep.datasets.generated import unstandardised_split
    from bnnsweep.method_base import FitResult
    from bnnsweep.results import cell_content, merge_cells, write_netcdf_atomic
    from bnnsweep.sweeps.sweep import Cell

    split = unstandardised_split(
        "default", np.zeros((3, 1)), np.zeros(3), np.zeros((2, 1)), np.zeros(2)
    )
    paths = []
    for seed, d_err, m_err in zip(seeds, diag_errors, mix_errors, strict=True):
        diag = FitResult(pred_mean=np.array([[d_err], [-d_err]]), pred_var=np.full((2, 1), 4.0))
        centre = np.array([[m_err], [-m_err]])
        mix = FitResult(pred_mean=centre, pred_var=np.full((2, 1), 4.0),
                        log_evidence=-100.0 + np.log(2) - 0.1)  # fmt: skip
        mix.members["component"] = (
            np.stack([centre + offset, centre - offset]),
            np.full((2, 2, 1), 4.0),
        )
        mix.traces["mixing_weight"] = (("component",), np.array([0.5, 0.5]))
        mix.traces["component_bound"] = (("component",), np.array([-100.2, -100.3]))
        mix.diagnostics.update(
            mutual_information=np.log(2) - 0.1,
            log_components=np.log(2),
            single_component_bound=-100.0,
        )
        for label, result, axes in (
            ("vi_gauss", diag, (("hidden", 8),)),
            ("vi_mixture", mix, (("hidden", 8), ("components", 2))),
        ):
            cell = Cell("tec", "tecator", "default", label, label, seed, axes, {})
            path = results / "cells" / f"{label}-{seed}.nc"
            path.parent.mkdir(parents=True, exist_ok=True)
            write_cell_atomic(cell_content(result, split, cell), path)
            paths.append(path)
    merged = merge_cells(paths)
    write_netcdf_atomic(merged, results / "merged.nc")
    return results / "merged.nc"


def test_the_table_holds_the_numbers_the_runs_were_built_with(tmp_path):
    changes = np.array([-0.01, -0.03, -0.02])
    diag = np.array([0.5, 0.7, 0.6])
    path = write_runs(tmp_path, [0, 1, 2], 0.1, diag, diag + changes)
    from bnnsweep.figures import load_merged
    from bnnsweep.results import with_run_test_data

    table = mixture_components(with_run_test_data(load_merged(path)))
    (row,) = table.to_dict("records")
    assert (row["dataset"], row["hidden"], row["components"], row["n_runs"]) == ("tecator", 8, 2, 3)
    assert row["gain_mean"] == pytest.approx(np.log(2) - 0.1)
    assert row["mi_over_log_m_min"] == pytest.approx(1 - 0.1 / np.log(2))
    assert row["component_minus_start_min"] == pytest.approx(-0.3)
    assert row["component_minus_start_max"] == pytest.approx(-0.2)
    # the components' predictions are +-0.1 about the centre: s.d. 0.1 over a predictive s.d. 2
    assert row["spread_over_sd_min"] == pytest.approx(0.05)
    assert row["spread_over_sd_max"] == pytest.approx(0.05)
    assert row["error_metric"] == "test_rmse" and row["n_pairs"] == 3
    assert row["error_change_mean"] == pytest.approx(changes.mean())
    se = changes.std(ddof=1) / np.sqrt(3)
    assert row["error_change_se"] == pytest.approx(se)
    assert row["error_change_z"] == pytest.approx(changes.mean() / se)


def test_the_spread_grows_with_the_distance_of_the_components(tmp_path):
    """Twice the offset between the components' predictions, twice the spread."""
    from bnnsweep.figures import load_merged

    spreads = []
    for offset in (0.1, 0.2):
        path = write_runs(tmp_path / str(offset), [0], offset, [0.5], [0.5])
        ds = load_merged(path)
        run = int(np.flatnonzero(ds["method"].values == "vi_mixture")[0])
        spreads.append(function_spread(ds, run))
    assert spreads[1] == pytest.approx(2 * spreads[0])


def test_the_table_is_written_as_markdown_and_csv(tmp_path):
    path = write_runs(tmp_path, [0, 1], 0.1, [0.5, 0.6], [0.49, 0.58])
    md, csv = draw("mixture_components", path, tmp_path / "mixture_components")
    text = md.read_text()
    assert "| tecator | 8 | 2 | 2 |" in text and "0.0500" in text
    assert csv.suffix == ".csv"


def test_a_merged_file_without_mixtures_gives_one_row_saying_so(tmp_path):
    from test_figures import make_merged

    md, csv = draw("mixture_components", make_merged(), tmp_path / "t.md")
    assert "no vi_mixture runs" in md.read_text()
    assert csv.read_text().count("\n") == 2
