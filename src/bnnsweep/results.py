"""FitResult -> one self-describing NetCDF file per sweep cell; atomic writes; merging.

Every metric is computed here, from the method's predictions mapped back to original target
units, by the functions of ``bnnsweep.metrics`` (a leaf module), so that all methods are
scored by the same code. Contract variable names (DESIGN.md):
``log_evidence``, ``log_evidence_se``, ``log_evidence_kind``, ``test_rmse``, ``test_nmse``,
``test_loglik``, ``test_error_rate`` (classification), ``train_loglik``, ``pred_mean``,
``pred_var``, ``status``, ``runtime_s``, ``n_grad_evals``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import __version__
from .cells.atomic_file import write_atomic
from .cells.checksum import CHECKSUM_ATTR, MERGE_KEY_ATTR, cell_key, dataset_checksum, merge_key
from .cells.file_seal import seal_problem, sealed_record
from .cells.writer import CellContent, variable
from .method_base import FitResult
from .metrics import discrete_metrics as _discrete_metrics
from .metrics import gaussian_loglik, regression_metrics, unstandardise
from .sweeps.axes import AXES
from .sweeps.sweep import Cell

# the datasets package registers every dataset (and loads the models): type checking only
if TYPE_CHECKING:
    import pandas as pd
    import xarray as xr

    from .datasets.base import Split
    from .sweeps.result_check import Expected

UNITS = {
    "log_evidence": ("log marginal likelihood ln p(D | model)", "nats"),
    "log_evidence_se": ("standard error of log_evidence", "nats"),
    "test_rmse": ("root mean squared test error, original target units", "target units"),
    "test_mse": ("mean squared test error, original target units", "target units squared"),
    "test_nmse": ("test MSE divided by the variance of the test targets", "1"),
    "test_loglik": ("mean Gaussian predictive log density per test target, original units", "nats"),
    "train_loglik": (
        "mean Gaussian predictive log density per training target, original units",
        "nats",
    ),
    "pred_mean": ("predictive mean at the test points, original units", "target units"),
    "pred_var": (
        "predictive variance at the test points (incl. noise), original units",
        "target units squared",
    ),
    "y_test": ("test targets, original units", "target units"),
    "pred_function_samples": (
        "network outputs at the test points for draws of the weights from the posterior "
        "(or its approximation), original units",
        "target units",
    ),
    "test_error_rate": ("fraction of test points whose most probable class is wrong", "1"),
    "test_mad": ("mean absolute deviation of the predicted counts from the test counts", "counts"),
    "class_probs": ("predictive class probabilities at the test points", "1"),
    "runtime_s": ("wall time of the fit", "s"),
    "n_train": ("number of training cases", "1"),
    "n_grad_evals": ("gradient evaluations of the penalised error", "1"),
}


def to_original_units(
    split: Split, mean: np.ndarray, var: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    return unstandardise(mean, var, split.y_mean, split.y_scale)


def discrete_metrics(result: FitResult, y: np.ndarray) -> dict[str, float]:
    """Metrics of class and count predictions of a FitResult (see metrics.discrete_metrics)."""
    return _discrete_metrics(
        y, result.class_probs, result.pred_mean, result.test_logpred, result.train_logpred
    )


@cache
def git_revision() -> str:
    """The checkout's commit (asked of git once per process)."""
    try:
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _installed(package: str) -> str:
    """The installed version of ``package`` (read from its metadata: no import)."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def library_versions() -> dict[str, str]:
    """Versions of Python and of the libraries a cell's numbers depend on, recorded in each
    cell (a copy of ``_library_versions``)."""
    return dict(_library_versions())


@cache
def _library_versions() -> dict[str, str]:
    """Read once per process: each package's metadata lookup scans the installed
    distributions (about 1.5 ms each, 0.56 s over a batch of 120 cells)."""
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": _installed("scipy"),
        "xarray": _installed("xarray"),
        "netCDF4": _installed("netCDF4"),
    }


def _var(values, dims, name):
    long_name, units = UNITS.get(name, (name.replace("_", " "), "1"))
    return variable(values, dims, {"long_name": long_name, "units": units})


def cell_dataset(*args, **kwargs) -> xr.Dataset:
    """``cell_content`` (same arguments) as an ``xr.Dataset``."""
    return cell_content(*args, **kwargs).to_dataset()


def cell_content(
    result: FitResult,
    split: Split,
    cell: Cell,
    resolved_settings: dict | None = None,
    code_version: str = "",
) -> CellContent:
    """The cell's NetCDF content: sweep coordinates, predictions, metrics, traces, attributes.
    ``code_version`` is the hash of the source files the cell's method depends on
    (``sweep.code_version``)."""
    mean, var = to_original_units(split, result.pred_mean, result.pred_var)
    y = split.y_test * split.y_scale + split.y_mean
    data = {
        "pred_mean": _var(mean, ("test_point", "output"), "pred_mean"),
        "pred_var": _var(var, ("test_point", "output"), "pred_var"),
        "y_test": _var(y, ("test_point", "output"), "y_test"),
        "x_test": _var(split.x_test, ("test_point", "input"), "x_test"),
        "log_evidence": _var(result.log_evidence, (), "log_evidence"),
        "log_evidence_se": _var(result.log_evidence_se, (), "log_evidence_se"),
        "log_evidence_kind": variable(result.log_evidence_kind),
        "status": variable(result.status),
        "status_message": variable(result.status_message),
        "runtime_s": _var(result.runtime_s, (), "runtime_s"),
        "n_train": _var(np.int64(split.x_train.shape[0]), (), "n_train"),
        "n_grad_evals": _var(np.int64(result.n_grad_evals), (), "n_grad_evals"),
    }
    if result.likelihood == "none":  # no test predictions: the numbers are traces
        metrics = {}
    elif result.likelihood != "gaussian":
        metrics = discrete_metrics(result, y)
        if result.class_probs is not None:
            data["class_probs"] = _var(result.class_probs, ("test_point", "class"), "class_probs")
    else:
        finite = np.all(np.isfinite(mean)) and np.all(np.isfinite(var))
        metrics = (
            regression_metrics(y, mean, var)
            if finite
            else dict.fromkeys(("test_rmse", "test_mse", "test_nmse", "test_loglik"), np.nan)
        )
        if result.train_mean is not None:
            tmean, tvar = to_original_units(split, result.train_mean, result.train_var)
            ytrain = split.y_train * split.y_scale + split.y_mean
            metrics["train_loglik"] = gaussian_loglik(ytrain, tmean, tvar)
        else:
            metrics["train_loglik"] = np.nan
    for name, value in metrics.items():
        data[name] = _var(value, (), name)
    if result.function_samples is not None:
        samples = result.function_samples * split.y_scale + split.y_mean
        dims = ("function_sample", "test_point", "output")
        data["pred_function_samples"] = _var(samples, dims, "pred_function_samples")
    for dim, (mm, mv) in result.members.items():
        m_mean, m_var = to_original_units(split, mm, mv)
        data[f"{dim}_pred_mean"] = _var(m_mean, (dim, "test_point", "output"), "pred_mean")
        data[f"{dim}_test_rmse"] = _var(
            np.sqrt(np.mean((m_mean - y) ** 2, axis=(1, 2))), (dim,), "test_rmse"
        )
        data[f"{dim}_test_mse"] = _var(np.mean((m_mean - y) ** 2, axis=(1, 2)), (dim,), "test_mse")
    for name, (dims, values) in result.traces.items():
        data[name] = _var(values, dims, name)
    for name, value in result.diagnostics.items():
        data[f"diag_{name}"] = variable(value)
    coords = {
        axis: getattr(cell, axis) for axis in ("experiment", "dataset", "split", "method", "seed")
    }
    coords.update(dict(cell.axes))  # its method's axes only
    coords = {name: variable(value) for name, value in coords.items()}
    coords.update({name: variable(values, (name,)) for name, values in result.coords.items()})
    return CellContent(
        data,
        coords,
        {
            "title": f"bnnsweep cell {cell.path_id}",
            "settings_json": json.dumps(cell.settings, sort_keys=True),
            "resolved_settings_json": json.dumps(
                resolved_settings or {}, sort_keys=True, default=str
            ),
            "method_name": cell.method_name,
            "code_version": code_version,
            "cell_json": json.dumps(cell.key(), sort_keys=True),
            "bnnsweep_version": __version__,
            "git_revision": git_revision(),
            "library_versions": json.dumps(library_versions(), sort_keys=True),
            "seed": cell.seed,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "Conventions": "CF-1.8",
        },
    )


def cell_summary(content: CellContent) -> str:
    """One line on a fitted cell: status, log evidence (its kind, with its s.e. where there
    is one), the test metrics and the fit's wall time."""
    values = {name: var[1] for name, var in content.data_vars.items()}

    def number(name):
        value = values.get(name)
        return float(value) if value is not None and np.isfinite(value) else None

    parts = [f"status {values['status'].item()}"]
    evidence, se = number("log_evidence"), number("log_evidence_se")
    if evidence is not None:
        kind = values["log_evidence_kind"].item()
        error = f" +- {se:.2f}" if se is not None else ""
        parts.append(f"ln p(D) {evidence:.2f}{error} ({kind})")
    for name in ("test_rmse", "test_error_rate", "test_mad", "test_loglik"):
        if (value := number(name)) is not None:
            parts.append(f"{name} {value:.4g}")
    parts.append(f"fit {number('runtime_s') or 0.0:.1f} s")
    return ", ".join(parts)


def write_netcdf_atomic(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write an ``xr.Dataset`` atomically (``atomic_file.write_atomic``), numeric data
    variables with dimensions zlib-compressed, its content's checksum recorded
    (``cells.checksum``); a cell (its attributes say which) sealed with its key
    (``checksum.cell_key``), as ``cells.writer.write_cell_atomic`` seals it, and a merged
    file with the key of the cells it was merged from (its ``merge_key`` attribute)."""
    ds = ds.copy(deep=False)
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != CHECKSUM_ATTR}
    ds.attrs[CHECKSUM_ATTR] = dataset_checksum(ds)
    encoding = {
        name: {"zlib": True, "complevel": 4}
        for name, var in ds.data_vars.items()
        if var.dtype.kind in "fiu" and var.ndim > 0
    }
    write = lambda tmp: ds.to_netcdf(tmp, engine="netcdf4", encoding=encoding)  # noqa: E731
    key = cell_key(ds.attrs) if "cell_json" in ds.attrs else ds.attrs.get(MERGE_KEY_ATTR)
    return write_atomic(path, write, sealed=True, key=key)


RUN_COORDS = ("experiment", "dataset", "split", "method", "seed", *AXES)
# stored once per (dataset, split) in a merged file, along ``test_set``: every cell of a split
# has the same test inputs and targets
TEST_DATA = ("x_test", "y_test")
PER_RUN_ATTRS = (
    "settings_json",
    "resolved_settings_json",
    "git_revision",
    "code_version",
    "created",
)


def _as_object(values: np.ndarray) -> np.ndarray:
    """Fixed-width strings as objects: concatenated, they would be cut to the first file's
    width."""
    return values.astype(object) if values.dtype.kind == "U" else values


def _run_variables(cell: tuple[dict, set, dict], drop, path, test_set_index: int):
    """One cell (``cells.reader.read_any``: variables, coordinate names, attributes) as one
    entry of the ``run`` dimension: (data variables, coordinates), each {name: (dims, values,
    attrs)}. Data variables gain a leading ``run``, sweep coordinates and per-run attributes
    become ``run`` variables, and every unlabelled dimension gets integer labels so that
    ragged traces align by padding."""
    variables, coord_names, attrs = cell
    data, coords = {}, {}
    sizes: dict[str, int] = {}
    for name, (dims, values, var_attrs) in variables.items():
        sizes.update(zip(dims, np.shape(values), strict=True))
        if name in coord_names:
            if name not in RUN_COORDS:
                coords[name] = (tuple(dims), _as_object(values), dict(var_attrs))
        elif name not in drop:
            data[name] = (("run", *dims), _as_object(values)[None], dict(var_attrs))
    used = {d for dims, _, _ in (*data.values(), *coords.values()) for d in dims}
    for dim, n in sizes.items():
        if dim not in coords and dim in used:
            coords[dim] = ((dim,), np.arange(n), {})
    for name in RUN_COORDS:
        if name in coord_names:
            coords[name] = (("run",), _as_object(np.asarray(variables[name][1]))[None], {})
    title = str(attrs.get("title", "")).removeprefix("bnnsweep cell ")
    per_run = {
        "cell_file": title or Path(path).name,
        "method_name": str(attrs.get("method_name", "")),
    }
    for name, value in per_run.items():
        coords[name] = (("run",), np.array([value], dtype=object), {})
    coords["test_set_index"] = (("run",), np.array([test_set_index]), {})
    for attr in PER_RUN_ATTRS:
        data[attr] = (("run",), np.array([str(attrs.get(attr, ""))], dtype=object), {})
    return data, coords


def _run_dataset(data: dict, coords: dict) -> xr.Dataset:
    """``_run_variables``' answer as an ``xr.Dataset`` (for ``concat_runs``)."""
    import xarray as xr

    def variables(named):
        # plain numpy arrays of numbers or str objects: nothing for xarray to convert
        return {name: xr.Variable(*v, fastpath=True) for name, v in named.items()}

    return xr.Dataset(variables(data), coords=variables(coords))


def _not_applicable(axis: str) -> np.ndarray:
    """An axis's 'not applicable' value as a one-run array of its type."""
    value = AXES[axis].not_applicable
    return np.array([value], dtype=object if isinstance(value, str) else np.int64)


def with_every_axis(runs: list[tuple[dict, dict]]) -> list[tuple[dict, dict]]:
    """``_run_variables``' runs, each with every sweep axis some run carries: a run whose
    method does not have it gets the axis's 'not applicable' value (``axes.AXES``)."""
    carried = [a for a in AXES if any(a in coords for _, coords in runs)]
    for _, coords in runs:
        for axis in carried:
            if axis not in coords:
                coords[axis] = (("run",), _not_applicable(axis), {})
    return runs


def with_axes(ds: xr.Dataset, axes) -> xr.Dataset:
    """``ds`` (along ``run``) with each of ``axes`` it lacks as a ``run`` coordinate holding
    the axis's 'not applicable' value (``with_every_axis`` for merged files)."""
    n = ds.sizes.get("run", 0)
    missing = {a: ("run", np.repeat(_not_applicable(a), n)) for a in axes if a not in ds.coords}
    return ds.assign_coords(missing) if missing else ds


def natural_order(path: str) -> list:
    """Sort key reading each run of digits as a number, so that the runs of a merged file
    come out as h1, h2, ..., h12 and split-2 before split-10, not in character order."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def concat_runs(datasets: list[xr.Dataset]) -> xr.Dataset:
    """Datasets along ``run``, every argument given (xarray's defaults are changing and warn):
    variables missing from some are filled with missing values, other dimensions padded by
    an outer join, coordinates without ``run`` taken from the first."""
    import xarray as xr

    return xr.concat(
        datasets,
        dim="run",
        data_vars="all",
        coords="minimal",
        compat="override",
        join="outer",
        fill_value={},
    )


class CorruptCells(ValueError):
    """Cell files that are unreadable or do not match their checksum, named one per line."""

    def __init__(self, problems: dict[str, str], moved: dict[str, str]):
        self.problems, self.moved = problems, moved
        lines = []
        for path, why in problems.items():
            where = f"; moved to {moved[path]}" if path in moved else ""
            lines.append(f"{path} is corrupt: {why}{where}")
        hint = (
            "run the same command again to refit the moved cells"
            if moved
            else "refit or remove them"
        )
        super().__init__(f"{len(problems)} corrupt cell file(s), {hint}: " + "; ".join(lines))


class StaleCells(ValueError):
    """Intact files that do not hold the cells a merge was asked for (or no cell at all),
    named in one line."""

    def __init__(self, stale: dict[str, str]):
        self.stale = stale
        named = "; ".join(f"{path}: {why}" for path, why in stale.items())
        super().__init__(
            f"{len(stale)} file(s) do not hold the cell asked for, not merged ({named}); "
            "the same sweep command refits a config's cells"
        )


def _read_judged(path: str, expected: Expected | None) -> tuple[str, str, tuple | None, tuple]:
    """(state, why, content: ``cells.reader.read_any``, its seal's record) of one cell
    file for a merge,
    judged by ``result_check.judge_cell`` against ``expected`` (None: the cell it records)
    before any parser reads it; then read, and the key of what was read
    (``checksum.cell_key`` of its attributes) held to the key judged, and the seal to the
    seal judged (``file_seal.sealed_record``, which the merged file's key is made of), so
    that a file replaced in between is not merged."""
    from .cells.checksum import cell_key
    from .cells.reader import content_problem, read_any
    from .sweeps.result_check import judge_cell

    args = (expected.cell, expected.data, expected.code) if expected else (None,)
    record = sealed_record(path)
    state, why, key = judge_cell(path, *args)
    if state != "current":
        return state, why, None, record
    try:
        content = read_any(path)
    except Exception as err:  # a damaged file fails in any of netCDF4's ways
        return "corrupt", f"it cannot be read ({err})", None, record
    if (why := content_problem(content[0], content[2])) is not None:
        return "corrupt", why, None, record
    try:
        read_key = cell_key(content[2])
    except ValueError:
        read_key = None
    if read_key != key or sealed_record(path) != record or record[0] != key:
        why = "what it holds is not the cell its seal records (replaced while read)"
        return "stale", why, None, record
    return "current", "", content, record


def merge_cells(
    paths=(), quarantine_corrupt: bool = False, expected: Mapping[str, Expected] | None = None
) -> xr.Dataset:
    """Concatenate cell files along ``run``, in ``natural_order`` of their paths; sweep
    coordinates become coordinates of ``run``.

    Every file, those of ``expected`` ({path: ``result_check.Expected``}: the config's
    cells, ``result_check.spec_expectations``) and ``paths``, is judged first by
    ``result_check.judge_cell``, the test of what is current that the workflow and
    ``bnnsweep check`` apply: a file of ``expected`` must be the current file of its cell
    (its cell, settings, data and code), any other an intact cell file (of the cell it
    records). Nothing is merged unless every file is: unreadable or altered files are all
    named in one ``CorruptCells`` error (with ``quarantine_corrupt`` moved aside,
    ``quarantine``, so that the workflow refits them), stale or foreign ones in one
    ``StaleCells`` error.

    ``merged.set_index(run=[...]).unstack('run')`` then gives the labelled hypercube.
    A cell carries the sweep axes of its own method only (``Cell.axes``); the merged file
    has every axis that some cell carries as a coordinate of ``run`` (an outer join), and
    a run whose method does not have the axis holds its 'not applicable' value
    (``axes.AXES``: ``"none"`` for a string axis, ``-1`` for an integer one), so that the
    coordinates keep their types and the hypercube can be pivoted.
    The test inputs and targets (``x_test``, ``y_test``) are stored once per dataset and
    split, along ``test_set`` (coordinates ``test_set_dataset``, ``test_set_split``); the
    run coordinate ``test_set_index`` points each run at its own (``run_test_data``).
    """
    import xarray as xr

    from .cells.reader import plain_dataset
    from .cells.run_stack import stack_runs
    from .sweeps.result_check import quarantine

    expected = {str(path): e for path, e in (expected or {}).items()}
    files = [*expected, *(str(p) for p in paths if str(p) not in expected)]
    cells, records, problems, stale = [], [], {}, {}
    for path in sorted(files, key=natural_order):
        state, why, content, record = _read_judged(path, expected.get(path))
        if state == "missing":
            raise ValueError(f"{path} is not a cell file: no such file")
        if state == "corrupt":
            problems[path] = why
        elif state == "stale":
            stale[path] = why
        else:
            cells.append((path, content))
            records.append(record)
    if problems:
        moved = {p: str(quarantine(p)) for p in problems} if quarantine_corrupt else {}
        raise CorruptCells(problems, moved)
    if stale:
        raise StaleCells(stale)
    runs = []
    test_sets: dict[tuple[str, str], xr.Dataset] = {}
    seen: dict[str, str] = {}
    versions = "{}"
    for path, cell in cells:
        variables, coord_names, attrs = cell
        if "run" in {d for dims, _, _ in variables.values() for d in dims}:
            raise ValueError(f"{path} is already a merged file, not a cell file")
        cell_id = str(attrs.get("title", "")).removeprefix("bnnsweep cell ") or path
        if cell_id in seen:  # two runs of one cell could no longer be pivoted by their axes
            raise ValueError(f"cell {cell_id} is given twice: {seen[cell_id]} and {path}")
        seen[cell_id] = path
        key = tuple(str(np.asarray(variables[n][1]).item()) for n in ("dataset", "split"))
        present = [name for name in TEST_DATA if name in variables]
        if key not in test_sets and present:
            tests = plain_dataset(*cell)[present]  # integer labels: test sets of other sizes align
            test_sets[key] = tests.assign_coords(
                {d: np.arange(n) for d, n in tests.sizes.items() if d not in tests.coords}
            )
        index = list(test_sets).index(key) if present else -1
        runs.append(_run_variables(cell, present, path, index))
        versions = attrs.get("library_versions", "{}")
    if not runs:
        raise ValueError("no cell files to merge")
    runs = with_every_axis(runs)
    merged = stack_runs(runs)
    if merged is None:  # a case the numpy stacking leaves to xarray
        merged = concat_runs([_run_dataset(*run) for run in runs])
    if test_sets:
        tests = xr.concat(
            [t.expand_dims("test_set") for t in test_sets.values()],
            dim="test_set",
            data_vars="all",
            coords="minimal",
            compat="override",
            join="outer",
            fill_value=np.nan,
        )
        tests = tests.assign_coords(
            test_set_dataset=("test_set", [d for d, _ in test_sets]),
            test_set_split=("test_set", [s for _, s in test_sets]),
        )
        merged = xr.merge([merged, tests], join="outer", compat="override")
    merged.attrs = {
        "title": "bnnsweep merged results",
        "bnnsweep_version": __version__,
        "n_runs": len(runs),
        "library_versions": versions,
        "run_coordinates": ",".join(c for c in RUN_COORDS if c in merged.coords),
        # which cell files it was merged from (their keys and seals), sealed into the file
        # (write_netcdf_atomic): result_check.merged_state
        MERGE_KEY_ATTR: merge_key(records),
    }
    return merged


def run_test_data(merged: xr.Dataset, name: str) -> xr.DataArray:
    """``x_test`` or ``y_test`` of every run of a merged file, over ``run`` (each run's own
    dataset and split; stored once per test set)."""
    values = merged[name]
    if "test_set" not in values.dims:
        return values
    picked = values.isel(test_set=merged["test_set_index"].clip(min=0))
    return picked.drop_vars(["test_set_dataset", "test_set_split"], errors="ignore")


def with_run_test_data(merged: xr.Dataset) -> xr.Dataset:
    """``merged`` with ``x_test`` and ``y_test`` over ``run`` instead of ``test_set`` (as
    every run held them before they were stored once per test set); figures read this."""
    if "test_set" not in merged.dims:
        return merged
    per_run = {name: run_test_data(merged, name) for name in TEST_DATA if name in merged}
    out = merged.drop_dims("test_set").drop_vars("test_set_index", errors="ignore")
    return out.assign(per_run)


def hypercube(merged: xr.Dataset, dims=RUN_COORDS) -> xr.Dataset:
    """Pivot the ``run`` dimension into the labelled hypercube of the sweep axes."""
    present = [d for d in dims if d in merged.coords]
    return merged.set_index(run=present).unstack("run")


# --- every experiment at once -------------------------------------------------------------


@dataclass
class Results:
    """Every experiment of a results directory: ``dataset``, all runs along ``run`` (sorted
    by ``run_sort_key``; test inputs and targets left out, as each experiment stores its own
    test sets), and ``frame``, one row per run with the sweep coordinates and every scalar
    variable, axes a method does not use as missing values (``pd.NA``)."""

    dataset: xr.Dataset
    frame: pd.DataFrame


def run_sort_key(run: dict) -> tuple:
    """Order of runs: experiment, dataset, method, then the axes by value, split (in
    ``natural_order``) and seed."""
    axes = tuple(run.get(a, AXES[a].not_applicable) for a in AXES)
    return (
        str(run["experiment"]),
        str(run["dataset"]),
        str(run["method"]),
        *axes,
        natural_order(str(run["split"])),
        int(run["seed"]),
    )


def open_results(results_dir: str | os.PathLike = "results") -> Results:
    """Every ``<experiment>/merged.nc`` under ``results_dir`` as one ``Results``.

    >>> res = open_results("results")  # doctest: +SKIP
    >>> sns.pointplot(res.frame, x="hidden", y="test_rmse", hue="method")  # doctest: +SKIP
    """
    import xarray as xr

    paths = sorted(Path(results_dir).glob("*/merged.nc"), key=lambda p: natural_order(str(p)))
    if not paths:
        raise FileNotFoundError(
            f"no merged results under {str(results_dir)!r} (<experiment>/merged.nc): run the "
            "workflow first"
        )
    parts = []
    for path in paths:
        if (why := seal_problem(path)) is not None:
            raise ValueError(f"{path} is corrupt or outdated: {why}; merge its cells again")
        with xr.open_dataset(path, engine="netcdf4") as opened:
            ds = opened.load()
        per_test_set = [n for n, v in ds.variables.items() if "test_set" in v.dims]
        ds = ds.drop_vars([*per_test_set, "test_set_index"], errors="ignore")
        ds.attrs = {}
        parts.append(ds)
    # an axis one experiment's methods have and another's do not: 'not applicable' there
    axes = [a for a in AXES if any(a in part.coords for part in parts)]
    combined = concat_runs([with_axes(part, axes) for part in parts])
    runs = [
        {name: combined[name].values[i] for name in RUN_COORDS if name in combined.coords}
        for i in range(combined.sizes["run"])
    ]
    order = sorted(range(len(runs)), key=lambda i: run_sort_key(runs[i]))
    combined = combined.isel(run=order)
    combined.attrs = {
        "title": "bnnsweep results",
        "experiments": ",".join(p.parent.name for p in paths),
    }
    return Results(combined, results_frame(combined))


def results_frame(ds: xr.Dataset) -> pd.DataFrame:
    """One row per run of a merged (or ``open_results``) Dataset: its ``run`` coordinates and
    every variable over ``run`` alone; an axis a run's method does not use is ``pd.NA``."""
    import pandas as pd

    columns = {}
    for name, var in ds.variables.items():
        if var.dims == ("run",):
            columns[name] = var.values
    frame = pd.DataFrame(columns)
    for name, axis in AXES.items():
        if name not in frame:
            continue
        kind = "Int64" if axis.type is int else "string"
        frame[name] = frame[name].astype(kind).mask(frame[name] == axis.not_applicable)
    return frame.reset_index(drop=True)
