"""run_stack.stack_runs against xr.concat (results.concat_runs), which it replaces in merges
where it can: identical Datasets, type for type, or None where it leaves the case to xarray."""

from __future__ import annotations

import numpy as np
import pytest

from bnnsweep.cells.run_stack import stack_runs
from bnnsweep.results import _run_dataset, _run_variables, concat_runs, merge_cells


def cell(dataset="a", n_test=3, method="m", seed=0, extra=None, groups=None):
    """A cell as ``cells.reader.read_any`` gives it: variables, coordinate names, attributes."""
    rng = np.random.default_rng(seed)
    variables = {
        "pred_mean": (("test_point", "output"), rng.normal(size=(n_test, 1)), {"units": "y"}),
        "x_test": (("test_point", "input"), rng.normal(size=(n_test, 2)), {}),
        "trace": (("iteration",), rng.normal(size=4 + seed), {}),
        "n_train": ((), np.array(10 + seed), {}),
        "status": ((), np.array("ok"), {}),
        "experiment": ((), np.array("e"), {}),
        "dataset": ((), np.array(dataset), {}),
        "split": ((), np.array("default"), {}),
        "method": ((), np.array(method), {}),
        "seed": ((), np.array(seed), {}),
    }
    if groups is not None:
        variables["group"] = (("group",), np.array(groups), {})
        variables["per_group"] = (("group",), np.ones(len(groups)), {})
    variables.update(extra or {})
    coords = {"experiment", "dataset", "split", "method", "seed"} | (
        {"group"} if groups is not None else set()
    )
    attrs = {"title": f"bnnsweep cell e/{dataset}/{method}/{seed}", "method_name": method}
    return variables, coords, attrs


def runs_of(cells):
    return [_run_variables(c, ["x_test"], f"c{k}.nc", 0) for k, c in enumerate(cells)]


def assert_as_concat(cells):
    runs = runs_of(cells)
    stacked = stack_runs(runs)
    assert stacked is not None
    reference = concat_runs([_run_dataset(*run) for run in runs])
    assert stacked.identical(reference)
    for name, var in reference.variables.items():
        assert stacked[name].dtype == var.dtype, name
        assert stacked[name].dims == var.dims, name
    assert set(stacked.coords) == set(reference.coords)
    return stacked


def test_runs_of_equal_shapes_stack_as_concat():
    stacked = assert_as_concat([cell(seed=0), cell(seed=0, method="n")])
    assert stacked.sizes["run"] == 2


def test_ragged_traces_and_test_sets_are_padded_with_nan_as_concat_pads_them():
    stacked = assert_as_concat([cell("a", 3, seed=0), cell("b", 5, seed=2)])
    assert np.isnan(stacked["pred_mean"].values[0, 3:]).all()
    assert np.isnan(stacked["trace"].values[0, 4:]).all()


def test_a_variable_some_runs_lack_is_promoted_as_xarray_promotes_it():
    extra = {
        "diag_count": ((), np.array(7), {}),
        "diag_note": ((), np.array("x"), {}),
        "diag_value": ((), np.array(0.5, dtype=np.float32), {}),
    }
    stacked = assert_as_concat([cell(seed=0, extra=extra), cell(seed=1)])
    assert stacked["diag_count"].dtype == np.float64  # int with a missing value
    assert stacked["diag_note"].dtype == object
    assert stacked["diag_value"].dtype == np.float32


def test_equal_labels_other_than_integers_are_kept():
    assert_as_concat([cell(seed=0, groups=["w1", "b1"]), cell(seed=1, groups=["w1", "b1"])])


@pytest.mark.parametrize(
    "cells",
    [
        # labels that an outer join would merge
        [cell(seed=0, groups=["w1", "b1"]), cell(seed=1, groups=["all"])],
        # a boolean that would need a missing value (xarray makes it an object array)
        [cell(seed=0, extra={"diag_flag": ((), np.array(True), {})}), cell(seed=1)],
        # a variable whose type differs between runs
        [cell(seed=0, extra={"v": ((), np.array(1), {})}), cell(extra={"v": ((), np.array(1.5), {})})],
        # or its attributes
        [cell(seed=0, extra={"v": ((), np.array(1.0), {"units": "s"})}), cell(seed=1, extra={"v": ((), np.array(1.0), {})})],
    ],
    ids=["labels", "boolean-fill", "types", "attributes"],
)  # fmt: skip
def test_cases_it_does_not_handle_are_left_to_xarray(cells):
    runs = runs_of(cells)
    assert stack_runs(runs) is None
    concat_runs([_run_dataset(*run) for run in runs])  # which takes them


def test_merges_of_every_fast_method_are_those_of_concat(tmp_path, method_cells, monkeypatch):
    """Real cells: the cells of every fast method, over two seeds each (equal shapes per
    method, other variables and traces between methods), merged with the numpy stacking
    and with xr.concat alone: identical files' content."""
    import dataclasses

    from bnnsweep.cells import run_stack
    from bnnsweep.cells.writer import write_cell_atomic

    paths = []
    for method, content in method_cells.items():
        for seed in (0, 1):
            title = f"{content.attrs['title']}_{seed}"
            copy = dataclasses.replace(content, attrs={**content.attrs, "title": title})
            paths.append(write_cell_atomic(copy, tmp_path / f"{method}_{seed}.nc"))
    by_method = {m: [p for p in paths if p.name.startswith(f"{m}_")] for m in method_cells}
    answers = []

    def spy(runs):
        answers.append(stack_runs(runs))
        return answers[-1]

    monkeypatch.setattr(run_stack, "stack_runs", spy)
    stacked = {m: merge_cells(p) for m, p in by_method.items()}
    stacked["all"] = merge_cells(paths)
    assert sum(a is not None for a in answers) >= len(by_method)  # each method's own merge
    monkeypatch.setattr(run_stack, "stack_runs", lambda runs: None)
    for name, merged in stacked.items():
        reference = merge_cells(paths if name == "all" else by_method[name])
        assert merged.identical(reference), name
        for var, values in reference.variables.items():
            assert merged[var].dtype == values.dtype, (name, var)
