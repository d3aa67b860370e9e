"""``cell_reader.read_cell`` gives exactly what ``xr.open_dataset(...).load()`` gives, for cells
of every kind of variable the methods write and for files it does not decode itself."""

import numpy as np
import pytest
import xarray as xr

from bnnsweep.cell_reader import read_cell
from bnnsweep.results import merge_cells, write_netcdf_atomic


def opened(path) -> xr.Dataset:
    with xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()


def assert_same(a: xr.Dataset, b: xr.Dataset) -> None:
    assert a.identical(b)
    assert list(a.variables) == list(b.variables)
    for name, var in b.variables.items():
        assert a[name].dtype == var.dtype, name
    assert set(a.coords) == set(b.coords)
    assert {k: type(v) for k, v in a.attrs.items()} == {k: type(v) for k, v in b.attrs.items()}


def every_encoding() -> xr.Dataset:
    """One variable of each kind a cell holds: floats with NaN, integers, an int8 trace, a
    boolean and a string diagnostic, string and integer dimension coordinates, scalar sweep
    coordinates, a dimension without labels."""
    return xr.Dataset(
        {
            "pred_mean": (("test_point", "output"), np.array([[1.5], [np.nan]]), {"units": "1"}),
            "n_train": ((), np.int64(30), {"long_name": "number of training cases"}),
            "restart_converged": (("restart",), np.array([1, 0, 1], dtype=np.int8)),
            "diag_flag": ((), True),
            "diag_structure": ((), "1x3x1"),
            "alpha_mean": (("group",), np.array([0.1, np.nan, 3.0])),
            "retained": (("kept",), np.array(["a", "bcd"], dtype=object)),
            "runtime_s": ((), 1.25, {"long_name": "wall time of the fit", "units": "s"}),
        },
        coords={
            "group": ["input-hidden", "hidden bias", "hidden-output"],
            "epoch": ("epoch", np.arange(1, 4)),
            "experiment": "toy",
            "seed": np.int64(3),
        },
        attrs={"title": "bnnsweep cell x", "seed": np.int64(3), "fit_cpu_s": 0.5},
    )


def test_every_encoding_a_cell_uses_reads_as_xarray_reads_it(tmp_path):
    path = write_netcdf_atomic(every_encoding(), tmp_path / "cell.nc")
    assert_same(read_cell(path), opened(path))


@pytest.mark.parametrize(
    "variable",
    [
        xr.Variable(("t",), np.array([1, -1], dtype=np.int64), encoding={"_FillValue": -1}),
        xr.Variable(("t",), np.array([1.0, 2.0]), {"units": "days since 2000-01-01"}),
        xr.Variable(("t",), np.array([1.0, 2.0]), {"units": "seconds"}),
        xr.Variable(("t",), np.array([1.0, 2.0]), encoding={"scale_factor": 0.5}),
        xr.Variable(("t",), np.array([1.0, 9.0]), encoding={"_FillValue": 9.0}),
    ],
    ids=["int-fill", "times", "timedeltas", "scaled", "other-fill"],
)
def test_files_it_does_not_decode_fall_back_to_xarray(tmp_path, variable):
    ds = every_encoding().assign(odd=variable)
    path = tmp_path / "odd.nc"
    ds.to_netcdf(path, engine="netcdf4")
    assert_same(read_cell(path), opened(path))


def test_cells_of_every_fast_method_read_and_merge_as_written(tmp_path):
    """Cells of map, laplace, exact, the variational methods and pbp (traces along restart,
    group, component and epoch dimensions, string and boolean diagnostics): each reads as
    xarray reads it, and each run of the merged file holds its cell's values."""
    from bnnsweep.runner import fit_cell, write_result
    from bnnsweep.sweep import Cell

    small = {
        "map": {"hidden": 2, "restarts": 1, "max_iter": 20},
        "laplace": {"hidden": 2, "restarts": 1, "max_iter": 20, "cycles": 2},
        "exact": {"hidden": 0},
        "vi_gauss": {"hidden": 2, "restarts": 2, "outer_iter": 2, "max_iter": 10},
        "vi_mixture": {
            "hidden": 2,
            "restarts": 1,
            "outer_iter": 2,
            "max_iter": 10,
            "components": 2,
        },
        "pbp": {"hidden": 3, "epochs": 2},
    }
    paths = []
    for method, settings in small.items():
        axes = (("hidden", settings["hidden"]),)
        if method == "vi_mixture":
            axes += (("components", 2),)
        cell = Cell("m", "toy_sine", "default", method, method, 0, axes, settings)
        paths.append(write_result(fit_cell(cell, log=lambda m: None), tmp_path / f"{method}.nc"))
    cells = {}
    for path in paths:
        cells[str(path)] = opened(path)
        assert_same(read_cell(path), cells[str(path)])
    merged = merge_cells(paths)
    assert list(merged.cell_file.values) == sorted(
        c.attrs["title"].removeprefix("bnnsweep cell ") for c in cells.values()
    )
    for run, path in enumerate(sorted(cells)):
        cell = cells[path]
        for name, var in cell.data_vars.items():
            if name in ("x_test", "y_test"):
                continue
            got = merged[name].isel(run=run).values
            got = got[tuple(slice(0, n) for n in var.shape)]
            if var.dtype.kind in "fc":
                np.testing.assert_array_equal(got.astype(float), var.values, err_msg=name)
            else:
                assert (got == var.values).all(), name
