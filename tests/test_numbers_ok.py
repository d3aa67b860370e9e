"""A cell is ok only if its numbers are (issue 36): a standardisation that gives no numbers
(y_scale 0 or NaN, targets near 1e300) and masked NetCDF values (_FillValue) are refused
when the data is prepared or read, with one line naming the split or column; a fit whose
test metrics are not finite is recorded as diverged, never ok."""

import netCDF4
import numpy as np
import pytest

from bnnsweep import datasets
from bnnsweep.datasets import store
from bnnsweep.datasets.base import DataFileError, Dataset, DatasetError, Split
from bnnsweep.datasets.user import build_splits
from bnnsweep.method_base import FitResult
from bnnsweep.runner import _content, non_finite_metrics
from bnnsweep.sweeps.sweep import Cell


def toy(y_scale=1.0, y_mean=0.0, y=None) -> Dataset:
    rng = np.random.default_rng(0)
    y_train = rng.normal(size=(8, 1)) if y is None else y
    split = Split(
        "default",
        rng.normal(size=(8, 2)),
        y_train,
        rng.normal(size=(4, 2)),
        rng.normal(size=(4, 1)),
        np.array([y_mean]),
        np.array([y_scale]),
    )
    return Dataset("toy", {"default": split}, {"task": "regression"})


@pytest.mark.parametrize(
    ("scale", "mean", "why"),
    [
        (0.0, 0.0, "y_scale"),
        (np.nan, 0.0, "y_scale"),
        (-1.0, 0.0, "y_scale"),
        (1.0, np.nan, "y_mean"),
        (1e299, 0.0, r"beyond 1e\+150"),
    ],
)
def test_degenerate_standardisation_is_refused_when_prepared(tmp_path, scale, mean, why):
    with pytest.raises(DatasetError, match=why) as err:
        store.save_netcdf(toy(scale, mean), tmp_path / "d.nc")
    assert "\n" not in str(err.value) and "split 'default'" in str(err.value)
    assert not (tmp_path / "d.nc").exists()


@pytest.mark.parametrize("scale", [0.0, np.nan])
def test_a_prepared_file_with_a_degenerate_scale_is_refused_when_read(tmp_path, monkeypatch, scale):
    """A prepared file written by other means (here: the check switched off) is refused by
    the fit that reads it, with the file and the key named."""
    with monkeypatch.context() as m:
        m.setattr(store, "_check_columns", lambda split: None)
        store.save_netcdf(toy(scale), tmp_path / "d.nc")
    with pytest.raises(DataFileError, match=r"d\.nc: split 'default': y_scale"):
        store.load_netcdf(tmp_path / "d.nc")


def test_targets_near_1e300_in_a_users_file_are_refused(tmp_path):
    path = tmp_path / "d.csv"
    rows = "\n".join(f"{i},{1e300 * (1 + i)}" for i in range(12))
    path.write_text("a,t\n" + rows + "\n")
    spec = {"file": str(path), "targets": ["t"], "task": "regression", "splits": {"kfold": 3}}
    with pytest.raises(DatasetError, match=r"target column 't' has values beyond 1e\+150"):
        build_splits(spec, "huge")


@pytest.mark.parametrize("fill", [-999.0, 9.969209968386869e36])
def test_masked_netcdf_values_count_as_missing(tmp_path, fill):
    """A NetCDF column with a _FillValue entry is refused as missing, not fitted as the fill
    number."""
    path = tmp_path / "d.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("row", 12)
        a = nc.createVariable("a", "f8", ("row",))
        t = nc.createVariable("t", "f8", ("row",), fill_value=fill)
        a[:] = np.arange(12.0)
        values = np.ma.masked_array(np.arange(12.0), mask=[False] * 11 + [True])
        t[:] = values
    spec = {"file": str(path), "targets": ["t"], "task": "regression", "splits": {"kfold": 3}}
    with pytest.raises(DatasetError, match=r"target column 't' has 1 missing or infinite"):
        build_splits(spec, "masked")


def cell() -> Cell:
    return Cell("e", "toy_sine", "default", "map", "map", 0, (("hidden", 2),), {"hidden": 2})


@pytest.mark.parametrize("var", [0.0, -1.0])
def test_non_finite_metrics_make_a_cell_diverged(var):
    """Finite predictions whose predictive variance is 0 or negative give a log likelihood
    that is no number: the cell is diverged, with the metric named."""
    from bnnsweep.methods import get_method

    split = datasets.load("toy_sine").split("default")
    n = split.y_test.shape[0]
    result = FitResult(np.zeros((n, 1)), np.full((n, 1), var))
    settings = get_method("map").settings({"hidden": 2})
    with np.errstate(all="ignore"):
        content = _content(cell(), result, split, settings, lambda m: None, 0.0, None)
    assert "test_loglik" in non_finite_metrics(content)
    assert str(content.data_vars["status"][1]) == "diverged"
    assert "non-finite test_loglik" in str(content.data_vars["status_message"][1])


def test_finite_metrics_stay_ok():
    split = datasets.load("toy_sine").split("default")
    n = split.y_test.shape[0]
    result = FitResult(np.zeros((n, 1)), np.ones((n, 1)))
    from bnnsweep.methods import get_method

    settings = get_method("map").settings({"hidden": 2})
    content = _content(cell(), result, split, settings, lambda m: None, 0.0, None)
    assert str(content.data_vars["status"][1]) == "ok" and non_finite_metrics(content) == []
