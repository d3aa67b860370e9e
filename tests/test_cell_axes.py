"""A cell carries the sweep axes of its own method only (issue 35 item 7: every cell held
``q_family``, ``joint_init``, ``penalty``, ``sources``, ``schedule`` = none / -1 whatever its
method); the merge still gives one Dataset across methods, an outer join in which a run
holds an axis's 'not applicable' value where its method does not have it, and
``open_results().frame`` shows those as missing values."""

import numpy as np
import pandas as pd
import pytest

from bnnsweep.cells.reader import read_any
from bnnsweep.cells.writer import write_cell_atomic
from bnnsweep.datasets.generated import unstandardised_split
from bnnsweep.method_base import FitResult
from bnnsweep.results import cell_content, hypercube, merge_cells, results_frame
from bnnsweep.sweeps.axes import AXES
from bnnsweep.sweeps.sweep import Cell

RNG = np.random.default_rng(0)
SPLIT = unstandardised_split(
    "default",
    RNG.normal(size=(6, 1)),
    RNG.normal(size=6),
    RNG.normal(size=(4, 1)),
    RNG.normal(size=4),
)
# (method, axes): a method with hidden units, a mixture with its components, a Boltzmann
# machine's family and start
METHODS = {
    "map": (("hidden", 2),),
    "vi_mixture": (("hidden", 2), ("components", 3)),
    "bm": (("q_family", "mixture"), ("joint_init", "zero")),
}


@pytest.fixture(scope="module")
def cell_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("axes")
    paths = {}
    for method, axes in METHODS.items():
        result = FitResult(pred_mean=np.zeros((4, 1)), pred_var=np.ones((4, 1)))
        cell = Cell("e", "d", "default", method, method, 0, axes, dict(axes))
        paths[method] = write_cell_atomic(cell_content(result, SPLIT, cell), tmp / f"{method}.nc")
    return paths


def test_a_cell_carries_only_its_methods_axes(cell_files):
    for method, axes in METHODS.items():
        variables, coord_names, _ = read_any(cell_files[method])
        carried = {name for name in AXES if name in variables}
        assert carried == {name for name, _ in axes}, method
        assert carried <= coord_names
        for name, value in axes:
            assert np.asarray(variables[name][1]).item() == value, (method, name)


def test_the_merge_is_an_outer_join_of_the_methods_axes(cell_files):
    merged = merge_cells(cell_files.values())
    carried = {"hidden", "components", "q_family", "joint_init"}
    assert {name for name in AXES if name in merged.coords} == carried
    runs = {str(m): i for i, m in enumerate(merged["method"].values)}
    for method, axes in METHODS.items():
        given = dict(axes)
        for name in carried:
            value = merged[name].values[runs[method]]
            assert value == given.get(name, AXES[name].not_applicable), (method, name)
    for name in carried:  # integer axes stay integers (pivotable, no float NaN)
        kind = merged[name].dtype.kind
        assert kind == ("i" if AXES[name].type is int else "O"), (name, kind)
    cube = hypercube(merged)
    assert (
        cube["test_rmse"]
        .sel({"method": "vi_mixture", "hidden": 2, "components": 3})
        .notnull()
        .any()
    )
    frame = results_frame(merged)
    bm = frame[frame["method"] == "bm"].iloc[0]
    assert bm["hidden"] is pd.NA and bm["q_family"] == "mixture"
    mixture = frame[frame["method"] == "vi_mixture"].iloc[0]
    assert mixture["components"] == 3 and mixture["joint_init"] is pd.NA
    assert "schedule" not in frame and "penalty" not in frame
