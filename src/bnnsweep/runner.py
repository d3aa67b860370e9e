"""Fit one sweep cell: load its split, build its settings and random stream, run the method,
and turn the result into the cell's dataset. Numerical failure inside the method becomes a
``diverged`` result rather than a crash, so that one bad cell does not stop a sweep.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import time
from pathlib import Path

import numpy as np

from . import datasets
from .cells.atomic_file import WriteError  # noqa: F401 - raised by write_result
from .cells.writer import CellContent, write_cell_atomic
from .datasets.base import Split
from .method_base import FitResult
from .methods import get_method
from .results import cell_content, cell_summary, write_netcdf_atomic
from .sweeps.result_check import cell_state, expected_code, quarantine
from .sweeps.sweep import Cell, code_version, read_batch_spec

NUMERICAL_ERRORS = (np.linalg.LinAlgError, FloatingPointError, OverflowError, ZeroDivisionError)
_DATA_FILES: dict[tuple, datasets.Dataset] = {}
_REGISTRY_CHECKSUMS: dict[str, str] = {}


def _dataset_file(path: str | Path) -> datasets.Dataset:
    """A prepared dataset file, read (and its checksum verified) once per process and file
    version: a batch of 20 splits read it 20 times, 0.2 s each. Its arrays are made
    read-only, so that a method writing into its split fails instead of changing the next
    cell's data."""
    stat = Path(path).stat()
    key = (str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _DATA_FILES:
        dataset = datasets.load_netcdf(path)
        for split in dataset.splits.values():
            for value in vars(split).values():
                if isinstance(value, np.ndarray):
                    value.flags.writeable = False
        _DATA_FILES.clear()
        _DATA_FILES[key] = dataset
    return _DATA_FILES[key]


def data_checksum_of(cell: Cell, data_path: str | Path | None = None) -> str:
    """The checksum of the arrays of the data a cell is fitted on
    (``datasets.store.checksum``): as the prepared file's seal records it, else computed
    (a file without one, or the registry's dataset when there is no file)."""
    from .datasets.store import checksum, data_checksum

    if data_path and (recorded := data_checksum(data_path)) is not None:
        return recorded
    if data_path:
        return checksum(_dataset_file(data_path).splits)
    if cell.dataset not in _REGISTRY_CHECKSUMS:  # loaded from its sources: once a process
        _REGISTRY_CHECKSUMS[cell.dataset] = checksum(datasets.load(cell.dataset).splits)
    return _REGISTRY_CHECKSUMS[cell.dataset]


def load_split(cell: Cell, data_path: str | Path | None = None) -> Split:
    """The cell's split, from a prepared NetCDF file if given, else from the registry."""
    dataset = _dataset_file(data_path) if data_path else datasets.load(cell.dataset)
    if dataset.name != cell.dataset:
        raise datasets.DatasetError(
            f"data file {str(data_path)!r} holds dataset {dataset.name!r}, not {cell.dataset!r}"
        )
    return dataset.split(cell.split)


def _no_result(split: Split, err: BaseException) -> FitResult:
    shape = split.y_test.shape
    result = FitResult(np.full(shape, np.nan), np.full(shape, np.nan))
    result.flag("diverged", f"{type(err).__name__}: {err}")
    return result


# Metrics of the test predictions that are numbers for every healthy fit (train_loglik is
# NaN by design for methods that predict nothing on the training set).
TEST_METRICS = ("test_rmse", "test_mse", "test_nmse", "test_loglik", "test_error_rate", "test_mad")


def non_finite_metrics(content: CellContent, result: FitResult | None = None) -> list[str]:
    """The test metrics (``TEST_METRICS``) of a cell's content that are not finite, leaving
    out ``test_loglik`` of a classifier that gives no log predictive probabilities
    (``test_logpred`` None: the hard predictions of method ``ltu``), NaN by design."""
    by_design = (
        {"test_loglik"}
        if result is not None and result.likelihood != "gaussian" and result.test_logpred is None
        else set()
    )
    return [
        name
        for name in TEST_METRICS
        if name in content.data_vars
        and name not in by_design
        and not np.all(np.isfinite(np.asarray(content.data_vars[name][1], dtype=float)))
    ]


def _content(
    cell: Cell, result: FitResult, split: Split, settings, log, cpu_s: float, data_path
) -> CellContent:
    def build():
        return cell_content(
            result, split, cell, dataclasses.asdict(settings), code_version(cell.method_name)
        )

    content = build()
    if bad := non_finite_metrics(content, result):  # a cell is ok only if its numbers are
        result.flag("diverged", f"non-finite {', '.join(bad)}")
        content = build()
    log(f"done in {result.runtime_s:.2f} s, status {result.status} {result.status_message}")
    # the data it was fitted on: part of the cell's key (cells.checksum.cell_key), so that a
    # cell fitted on other data is refitted
    content.attrs["data_sha256"] = data_checksum_of(cell, data_path)
    # the fit's CPU time (this process, all threads): what benchmarks set against a run's
    # total CPU time; an attribute, since it differs between runs of the same cell
    content.attrs["fit_cpu_s"] = cpu_s
    return content


def _flag_non_finite(result: FitResult) -> None:
    """A result whose test predictions are not all finite is never ``ok``: the predictive
    mean, and the variance (Gaussian likelihood) or the log predictive probabilities and
    class probabilities (class and count likelihoods, whose ``pred_var`` is NaN by design)."""
    arrays = [result.pred_mean]
    if result.likelihood == "gaussian":
        arrays.append(result.pred_var)
    else:
        arrays += [a for a in (result.test_logpred, result.class_probs) if a is not None]
    if not all(np.all(np.isfinite(np.asarray(a, dtype=float))) for a in arrays):
        result.flag("diverged", "non-finite test predictions")


def physical_memory_mb() -> float:
    """This machine's physical memory in MB (inf where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    except (ValueError, OSError, AttributeError):
        return float("inf")


def check_memory(cell: Cell, split: Split) -> None:
    """Refuse, before fitting, a cell whose cost model needs more memory than the machine has
    (e.g. ``hidden: 1000000000``, which would otherwise die in allocation), with the
    estimate (``jobsize.memory_mb`` without its safety factor)."""
    from .sweeps import jobsize

    shape = (split.x_train.shape[0], split.n_inputs, split.n_outputs, split.x_test.shape[0])
    need = jobsize.memory_mb(cell, shape) / jobsize.SAFETY
    have = physical_memory_mb()
    if need > have:
        raise ValueError(
            f"cell {cell.path_id} needs about {need / 1024:.3g} GB by its method's cost model, "
            f"more than this machine's {have / 1024:.3g} GB: refusing to start it"
        )


def import_libraries(method) -> None:
    """Load the libraries ``method``'s fit imports (``Method.imports``), before its clock
    starts: the first fit of a process would otherwise count their import (scipy 0.2-0.4 s,
    JAX 0.4 s) in its ``runtime_s``."""
    for name in method.imports:
        importlib.import_module(name)


def fit_cell(cell: Cell, data_path=None, log=print) -> CellContent:
    method = get_method(cell.method_name)
    settings = method.settings(cell.settings)
    split = load_split(cell, data_path)
    check_memory(cell, split)
    rng = cell.rng()
    log(f"fitting {cell.path_id} with {method.name}: {settings}")
    import_libraries(method)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        with np.errstate(over="ignore", under="ignore"):
            result = method.fit(split, settings, rng, log=log)
    except NUMERICAL_ERRORS as err:
        result = _no_result(split, err)
    result.runtime_s = time.perf_counter() - start
    _flag_non_finite(result)
    return _content(cell, result, split, settings, log, time.process_time() - cpu, data_path)


def fit_many_cells(
    cells: list[Cell], data_paths: list, log=print, cell_logs: list | None = None
) -> list[CellContent]:
    """Cells of one method with equal settings (apart from split and seed), fitted as one
    vectorised batch by the method's ``fit_many``; each keeps its own random stream
    (``Cell.rng``), so its numbers are those of a fit of its own. ``runtime_s`` of each is
    the batch's time over the number of cells. A numerical failure flags every cell.
    ``cell_logs`` (one logger per cell, default ``log``) receive each cell's own lines."""
    cell_logs = cell_logs or [log] * len(cells)
    method = get_method(cells[0].method_name)
    settings = method.settings(cells[0].settings)
    splits = [load_split(c, d) for c, d in zip(cells, data_paths, strict=True)]
    for cell, split in zip(cells, splits, strict=True):
        check_memory(cell, split)
    for cell, cell_log in zip(cells, cell_logs, strict=True):
        cell_log(
            f"fitting {cell.path_id} with {method.name} in a batch of {len(cells)}: {settings}"
        )
    import_libraries(method)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        with np.errstate(over="ignore", under="ignore"):
            results = method.fit_many(splits, settings, [c.rng() for c in cells], log=log)
    except NUMERICAL_ERRORS as err:
        results = [_no_result(split, err) for split in splits]
    elapsed = (time.perf_counter() - start) / len(cells)
    cpu = (time.process_time() - cpu) / len(cells)
    out = []
    for cell, split, result, cell_log, data_path in zip(
        cells, splits, results, cell_logs, data_paths, strict=True
    ):
        result.runtime_s = elapsed
        _flag_non_finite(result)
        out.append(_content(cell, result, split, settings, cell_log, cpu, data_path))
    return out


def write_result(ds, output: str | Path) -> Path:
    """Write a cell's ``CellContent`` or an ``xr.Dataset`` (a merged file) atomically to
    ``output``; any failure is an ``atomic_file.WriteError`` that names the file and, where
    the system says so, the reason (full disk, permissions)."""
    if isinstance(ds, CellContent):
        return write_cell_atomic(ds, output)
    return write_netcdf_atomic(ds, output)


def fit_cell_to_file(cell: Cell, output, data_path=None, log=print, report=None) -> Path:
    """Fit ``cell`` and write its file; ``report`` (e.g. ``print``) gets the cell's
    one-line summary (``results.cell_summary``)."""
    content = fit_cell(cell, data_path, log)
    path = write_result(content, output)
    if report is not None:
        report(f"{cell.path_id}: {cell_summary(content)} -> {path}")
    return path


# --- a batch of cells in one process ------------------------------------------------------


def _cell_logger(path: str | None, batch_log):
    """Log one cell to the batch log and append to the cell's own log file, counted lines
    with the cell's own time left (``progress.ProgressLog``, fresh for each cell)."""
    from .sweeps.progress import ProgressLog

    write_batch = getattr(batch_log, "write", batch_log)
    if not path:
        return ProgressLog(write_batch)
    Path(path).parent.mkdir(parents=True, exist_ok=True)

    def write(msg):
        write_batch(msg)
        with open(path, "a") as fh:
            fh.write(f"{msg}\n")

    return ProgressLog(write)


def fit_batch(spec: dict, log=print, report=None, name: str = "") -> dict[str, int]:
    """Fit the cells of a batch spec (``{"vectorise": bool, "cells": [{"cell": cell spec,
    "output": path, "data": path or None, "log": path or None}, ...]}``) in this process and
    write each cell's own file atomically as soon as it is done.

    Cells whose file is already current (``result_check.cell_state``: this cell, on this
    data, by this code) are skipped, a corrupt one is moved aside first, so a batch killed
    half-way and started again fits only the rest. With ``vectorise``, cells of one method,
    dataset and settings run as one ``fit_many`` (when the method has it); the others one
    after another. ``report`` (e.g. ``print``) gets a line per fitted cell: its place in
    the batch and its summary (``results.cell_summary``). Returns counts of cells
    ``fitted`` and ``skipped``. A spec of another shape is a ValueError naming ``name``
    (its file) and the key (``sweep.read_batch_spec``).
    """
    vectorise, check_code, entries = read_batch_spec(spec, name or "given")
    try:
        return _fit_entries(entries, vectorise, check_code, log, report)
    except datasets.DataFileError as err:
        # a damaged prepared file: moved aside, so the same snakemake command prepares it
        # again (a batch job's data is the workflow's own derived file)
        if err.path is None or not Path(err.path).is_file():
            raise
        bad = {e["data"] for e in entries if e.get("data") and Path(e["data"]) == Path(err.path)}
        if not bad:
            raise
        moved = [f"{path} moved to {quarantine(path)}" for path in bad]
        raise datasets.DataFileError(
            f"{err}; {', '.join(moved)}: the same command prepares it again"
        ) from None


def _fit_entries(entries, vectorise, check_code, log, report) -> dict[str, int]:
    from .cells.atomic_file import remove_stale_temporaries

    todo = []
    for e in entries:
        # half-written files of this batch's earlier run, killed while writing (the batch is
        # the one writer of its cells: runlock keeps a second run away)
        remove_stale_temporaries(e["output"])
        cell = e["cell"]
        data = data_checksum_of(cell, e.get("data"))
        state, why = cell_state(e["output"], cell, data, expected_code(cell, check_code))
        if state == "current":
            log(f"{cell.path_id}: current file {e['output']} kept")
            continue
        if state == "corrupt":
            log(f"{cell.path_id}: {e['output']} {why}; moved to {quarantine(e['output'])}")
        elif state == "stale":
            log(f"{cell.path_id}: {e['output']} is stale: {why}; refitting it")
        todo.append(e)
    groups: dict[tuple, list[dict]] = {}
    fitted = 0
    for e in todo:
        cell = e["cell"]
        many = vectorise and get_method(cell.method_name).fit_many is not None
        key = (cell.method_name, cell.dataset, json_key(cell.settings)) if many else (id(e),)
        groups.setdefault(key, []).append(e)
    for group in groups.values():
        if len(group) > 1:
            datasets_ = fit_many_cells(
                [e["cell"] for e in group],
                [e.get("data") for e in group],
                log,
                [_cell_logger(e.get("log"), log) for e in group],
            )
            done = list(zip(group, datasets_, strict=True))
        else:
            e = group[0]
            cell_log = _cell_logger(e.get("log"), log)
            done = [(e, fit_cell(e["cell"], e.get("data"), cell_log))]
        for e, content in done:
            write_result(content, e["output"])
            fitted += 1
            if report is not None:
                summary = cell_summary(content)
                report(f"[{fitted}/{len(todo)}] {e['cell'].path_id}: {summary}")
    return {"fitted": len(todo), "skipped": len(entries) - len(todo)}


def json_key(settings: dict) -> str:
    """Settings as a canonical string: cells vectorised together have equal ones."""
    import json

    return json.dumps(settings, sort_keys=True, default=str)
