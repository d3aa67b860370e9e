"""Paper 000's evidence committees (table kind ``evidence_committee`` and its claims): the
committee of a laplace run's k modes of largest log evidence, by hand on known predictions."""

from __future__ import annotations

import numpy as np
import pytest

from bnnsweep.claims.table import claims_frame

# four modes of one run: log evidence, positive-definite Hessian, prediction at the two test
# points (targets 0, 0). The mode of largest evidence has an indefinite Hessian: never counted.
MODES = [(-10.0, 0, 9.0), (-20.0, 1, 1.0), (-30.0, 1, 2.0), (-40.0, 1, 4.0)]


def write_laplace_runs(results, experiment, dataset, shifts=(0.0, 0.5)):
    """One laplace cell per shift: its modes predict (v + shift, -(v + shift))."""
    from bnnsweep.cells.writer import write_cell_atomic
    from bnnsweep.datasets.generated import unstandardised_split
    from bnnsweep.method_base import FitResult
    from bnnsweep.results import cell_content, merge_cells, write_netcdf_atomic
    from bnnsweep.sweeps.sweep import Cell

    paths = []
    for i, shift in enumerate(shifts):
        split = unstandardised_split(
            str(i), np.zeros((3, 1)), np.zeros(3), np.zeros((2, 1)), np.zeros(2)
        )
        values = np.array([v + shift for _, _, v in MODES])
        means = np.stack([np.array([[v], [-v]]) for v in values])
        result = FitResult(pred_mean=means[1], pred_var=np.ones((2, 1)))
        result.members["mode"] = (means, np.ones_like(means))
        result.traces["mode_log_evidence"] = (("mode",), np.array([e for e, _, _ in MODES]))
        result.traces["mode_positive_definite"] = (
            ("mode",),
            np.array([p for _, p, _ in MODES], dtype=np.int8),
        )
        cell = Cell(experiment, dataset, str(i), "laplace", "laplace", 0, (("hidden", 3),), {})
        path = results / experiment / "cells" / f"{i}.nc"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_cell_atomic(cell_content(result, split, cell), path)
        paths.append(path)
    write_netcdf_atomic(merge_cells(paths), results / experiment / "merged.nc")
    return results / experiment / "merged.nc"


def expected_rmse(size, shift):
    """RMSE of the mean of the ``size`` best positive-definite modes (targets 0)."""
    chosen = [v + shift for e, p, v in sorted(MODES, reverse=True) if p][:size]
    return abs(float(np.mean(chosen)))


@pytest.mark.parametrize("size", [1, 3, 10])
def test_committee_of_the_modes_of_largest_evidence(tmp_path, size):
    from bnnsweep.figures import load_merged
    from bnnsweep.figures.evidence_committee import committee_runs
    from bnnsweep.results import with_run_test_data

    path = write_laplace_runs(tmp_path, "tecator", "tecator")
    runs = committee_runs(with_run_test_data(load_merged(path)), size)
    assert runs["committee_members"].tolist() == [min(size, 3)] * 2
    want = [expected_rmse(size, s) for s in (0.0, 0.5)]
    assert runs["test_rmse"].to_numpy() == pytest.approx(want)
    if size == 1:  # the best network is the run's own prediction
        assert runs["test_rmse"].to_numpy() == pytest.approx(load_merged(path)["test_rmse"].values)


def test_table_and_claims_rows(tmp_path):
    from bnnsweep.figures import FIGURES, draw

    results = tmp_path / "results"
    path = write_laplace_runs(results, "tecator", "tecator")
    table_md, _ = draw("evidence_committee", path, tmp_path / "committee")
    text = table_md.read_text()
    assert "0.57 (paper 000 Table 2 (evidence committee (10)" in text
    assert FIGURES["evidence_committee"][1] == ".md"
    configs = tmp_path / "config"
    configs.mkdir()
    (configs / "t.yaml").write_text(
        "experiments:\n  tecator:\n    datasets: [tecator]\n"
        "    methods:\n      laplace: {hidden: 3}\n"
    )
    frame = claims_frame(results, configs)
    rows = frame[
        frame["quantity"].str.contains("evidence committee of 3 (laplace) on tecator", regex=False)
    ]
    assert len(rows) == 1 and rows.iloc[0]["setting"] == "hidden=3"
    want = np.mean([expected_rmse(3, s) for s in (0.0, 0.5)])
    assert rows.iloc[0]["ours_mean"] == pytest.approx(want)
    assert rows.iloc[0]["published_value"] == 0.57
