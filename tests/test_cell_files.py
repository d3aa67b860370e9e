"""Cell files written and read without xarray are the files and Datasets xarray gives.

``cells.writer.write_cell_atomic`` writes what ``xr.Dataset.to_netcdf`` writes (variable by
variable: type, dimensions, attributes, compression, values), and ``cells.reader.read_cell``
reads what ``xr.open_dataset(...).load()`` reads, for cells of every kind of variable the
methods write and for files it does not decode itself."""

import netCDF4
import numpy as np
import pytest
import xarray as xr

from bnnsweep.cells.reader import read_cell
from bnnsweep.cells.writer import CellContent, variable, write_cell_atomic
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


def every_encoding() -> CellContent:
    """One variable of each kind a cell holds: floats with NaN, integers, an int8 trace, a
    boolean and a string diagnostic, string and integer dimension coordinates, scalar sweep
    coordinates, a dimension without labels."""
    return CellContent(
        {
            "pred_mean": variable([[1.5], [np.nan]], ("test_point", "output"), {"units": "1"}),
            "n_train": variable(np.int64(30), (), {"long_name": "number of training cases"}),
            "restart_converged": variable(np.array([1, 0, 1], dtype=np.int8), ("restart",)),
            "diag_flag": variable(True),
            "diag_structure": variable("1x3x1"),
            "alpha_mean": variable([0.1, np.nan, 3.0], ("group",)),
            "retained": variable(np.array(["a", "bcd"], dtype=object), ("kept",)),
            "runtime_s": variable(1.25, (), {"long_name": "wall time of the fit", "units": "s"}),
        },
        {
            "experiment": variable("toy"),
            "seed": variable(np.int64(3)),
            "group": variable(["input-hidden", "hidden bias", "hidden-output"], ("group",)),
            "epoch": variable(np.arange(1, 4), ("epoch",)),
        },
        {"title": "bnnsweep cell x", "seed": 3, "fit_cpu_s": 0.5, "Conventions": "CF-1.8"},
    )


def netcdf_layout(path) -> dict:
    """Everything netCDF4 sees in a file: dimensions, global attributes, and per variable
    its type, dimensions, attributes, filters, chunking and values."""
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        out = {"dims": {d: len(v) for d, v in nc.dimensions.items()}}
        out["attrs"] = {k: repr(nc.getncattr(k)) for k in nc.ncattrs()}
        for name, var in nc.variables.items():
            values = var[...]
            out[name] = (
                str(var.dtype),
                var.dimensions,
                {k: repr(var.getncattr(k)) for k in var.ncattrs()},
                var.filters(),
                var.chunking(),
                repr(np.asarray(values, dtype=object).tolist()),
            )
        out["order"] = list(nc.variables)
    return out


def test_every_encoding_a_cell_uses_is_written_and_read_as_xarray_does(tmp_path):
    content = every_encoding()
    ours = write_cell_atomic(content, tmp_path / "ours.nc")
    theirs = write_netcdf_atomic(content.to_dataset(), tmp_path / "xarray.nc")
    assert netcdf_layout(ours) == netcdf_layout(theirs)
    assert_same(read_cell(ours), opened(theirs))
    assert opened(ours).identical(content.to_dataset())


def test_cells_of_every_fast_method_are_written_as_xarray_writes_them(tmp_path, method_cells):
    for method, content in method_cells.items():
        ours = write_cell_atomic(content, tmp_path / f"{method}_ours.nc")
        theirs = write_netcdf_atomic(content.to_dataset(), tmp_path / f"{method}_xarray.nc")
        assert netcdf_layout(ours) == netcdf_layout(theirs), method


@pytest.mark.parametrize(
    "odd",
    [
        xr.Variable(("t",), np.array([1, -1], dtype=np.int64), encoding={"_FillValue": -1}),
        xr.Variable(("t",), np.array([1.0, 2.0]), {"units": "days since 2000-01-01"}),
        xr.Variable(("t",), np.array([1.0, 2.0]), {"units": "seconds"}),
        xr.Variable(("t",), np.array([1.0, 2.0]), encoding={"scale_factor": 0.5}),
        xr.Variable(("t",), np.array([1.0, 9.0]), encoding={"_FillValue": 9.0}),
    ],
    ids=["int-fill", "times", "timedeltas", "scaled", "other-fill"],
)
def test_files_it_does_not_decode_fall_back_to_xarray(tmp_path, odd):
    ds = every_encoding().to_dataset().assign(odd=odd)
    path = tmp_path / "odd.nc"
    ds.to_netcdf(path, engine="netcdf4")
    assert_same(read_cell(path), opened(path))


def test_cells_of_every_fast_method_read_and_merge_as_written(tmp_path, method_cells):
    """Each cell file reads as xarray reads it, and each run of the merged file holds its
    cell's values."""
    paths = [write_cell_atomic(c, tmp_path / f"{m}.nc") for m, c in method_cells.items()]
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


def test_merged_runs_come_in_natural_order(tmp_path, method_cells):
    """h2 before h12, split-2 before split-10: numbers in file names sort as numbers."""
    from bnnsweep.results import natural_order

    names = ["h12_split-2", "h1_split-10", "h2_split-10", "h1_split-2"]
    assert sorted(names, key=natural_order) == [
        "h1_split-2",
        "h1_split-10",
        "h2_split-10",
        "h12_split-2",
    ]
    content = method_cells["map"]
    paths = []
    for h in (12, 2, 1):
        named = CellContent(content.data_vars, content.coords, dict(content.attrs))
        named.attrs["title"] = f"bnnsweep cell h{h}"
        paths.append(write_cell_atomic(named, tmp_path / f"h{h}.nc"))
    assert list(merge_cells(paths).cell_file.values) == ["h1", "h2", "h12"]


def test_a_fit_ends_with_a_summary_line(tmp_path):
    """``bnnsweep fit`` prints the status, the evidence and the test metrics of the cell it
    wrote (to the terminal, and to its log file when it has one)."""
    import subprocess
    import sys

    out, log = tmp_path / "cell.nc", tmp_path / "fit.log"
    args = ["fit", "--dataset", "toy_sine", "--method", "laplace", "--hidden", "2"]
    args += ["--set", "restarts=1", "--set", "max_iter=50", "--output", str(out), "--log", str(log)]
    proc = subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.strip().splitlines()
    assert line.startswith("adhoc/cells/toy_sine/laplace/h2_split-default_seed-0: status ok")
    assert "ln p(D) " in line and "(laplace)" in line and "test_rmse" in line
    assert line.endswith(f"-> {out}")
    assert log.read_text().strip().splitlines()[-1] == line


def test_open_results_gives_every_experiment_sorted_without_warnings(tmp_path, method_cells):
    """Two experiments' merged files: one Dataset and one tidy frame, runs sorted by
    experiment, dataset, method and axis values (h2 before h12), unused axes missing, and not
    one warning on the way."""
    import warnings

    from bnnsweep.results import open_results
    from bnnsweep.runner import fit_cell, write_result
    from bnnsweep.sweeps.sweep import Cell

    results = tmp_path / "results"
    for experiment, hidden in (("second", (12, 2)), ("first", (3,))):
        paths = []
        for h in hidden:
            settings = {"hidden": h, "restarts": 1, "max_iter": 5}
            cell = Cell(
                experiment, "toy_sine", "default", "map", "map", 0, (("hidden", h),), settings
            )
            paths.append(
                write_cell_atomic(
                    fit_cell(cell, log=lambda m: None), tmp_path / f"{experiment}{h}.nc"
                )
            )
        paths.append(
            write_cell_atomic(method_cells["vi_mixture"], tmp_path / f"{experiment}_vi.nc")
        )
        write_result(merge_cells(paths), results / experiment / "merged.nc")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = open_results(results)
    frame = res.frame
    assert res.dataset.sizes["run"] == len(frame) == 5
    # the variational cell comes from the fixture, whose experiment is "m"
    assert list(frame["experiment"]) == ["first", "m", "m", "second", "second"]
    second_map = frame[(frame["experiment"] == "second") & (frame["method"] == "map")]
    assert list(second_map["hidden"]) == [2, 12]
    maps = frame[frame["method"] == "map"]
    # an axis of another method's is missing (pd.NA); one no method has is not a column
    assert maps["components"].isna().all() and "schedule" not in frame
    mixtures = frame[frame["method"] == "vi_mixture"]
    assert list(mixtures["components"]) == [2, 2]
    assert {"test_rmse", "log_evidence", "status"} <= set(frame.columns)
    assert "x_test" not in res.dataset and "test_set" not in res.dataset.dims


def test_written_files_follow_the_umask(tmp_path, method_cells):
    """Cells, merged and prepared files get the permissions of any new file (issue 14, item
    8): readable by the group under umask 022, private under 077."""
    import os

    from bnnsweep import datasets

    content = method_cells["map"]
    for mask, mode in ((0o022, 0o644), (0o077, 0o600)):
        old = os.umask(mask)
        try:
            cell = write_cell_atomic(content, tmp_path / f"cell{mask}.nc")
            merged = write_netcdf_atomic(merge_cells([cell]), tmp_path / f"merged{mask}.nc")
            data = datasets.save_netcdf(datasets.load("toy_sine"), tmp_path / f"data{mask}.nc")
        finally:
            os.umask(old)
        for path in (cell, merged, data):
            assert path.stat().st_mode & 0o777 == mode, path


def test_a_cell_without_test_predictions_keeps_its_traces_through_merge(tmp_path):
    """Methods whose answer is not a prediction at test points (likelihood 'none': network
    ensembles, densities; thesis chs. 2-4, 6.5) write empty predictions, no test metrics,
    their numbers as traces, and an 'approximation' evidence kind merges like the others."""
    from bnnsweep.datasets.generated import unstandardised_split
    from bnnsweep.method_base import FitResult
    from bnnsweep.results import cell_content
    from bnnsweep.sweeps.sweep import Cell

    rng = np.random.default_rng(0)
    split = unstandardised_split(
        "span-1.0", rng.normal(size=(5, 3)), np.zeros((5, 0)), np.zeros((0, 3)), np.zeros((0, 0))
    )
    paths = []
    for q in ("mean_field", "mixture"):
        bound = -rng.uniform(1, 2, size=5)
        result = FitResult(
            pred_mean=np.zeros((0, 0)),
            pred_var=np.zeros((0, 0)),
            likelihood="none",
            log_evidence=float(bound.sum()),
            log_evidence_kind="approximation",
            traces={"bound": (("network",), bound)},
        )
        cell = Cell("e", "nets", "span-1.0", "m", "m", 0, (("q_family", q),), {})
        path = tmp_path / f"{q}.nc"
        write_cell_atomic(cell_content(result, split, cell), path)
        paths.append(path)
        assert "test_rmse" not in read_cell(path)
        np.testing.assert_array_equal(read_cell(path)["bound"].values, bound)
    merged = merge_cells(paths)
    assert list(merged["q_family"].values) == ["mean_field", "mixture"]
    assert merged["bound"].dims == ("run", "network")
    assert set(merged["log_evidence_kind"].values) == {"approximation"}
    with pytest.raises(ValueError, match="likelihood must be one of"):
        FitResult(pred_mean=np.zeros((0, 0)), pred_var=np.zeros((0, 0)), likelihood="nothing")
