"""Cluster resources of one fit job (``runtime`` in minutes, ``mem_mb``) from its settings.

The estimate is an upper bound on the work a method's settings allow (every restart running
to ``max_iter``, every leapfrog step of every chain), priced by the size of one forward and
backward pass, ``N x W`` multiply-adds for N training points and W weights, plus a fixed cost
per call; Hessians cost ``N x W^2``. The constants were measured on the default sweep
(results/*/cells: runtime_s against n_grad_evals): about 20 us per call and 10 ns per
multiply-add on one core, with a safety factor of 3 on top, since a job killed at its time
limit is worse than one that waits a little longer in the queue. A chaining cell of the
paper protocol comes out at hours, a small laplace cell at the SLURM minimum of a few minutes.

Each method declares its work model beside its ``fit`` (``Method.work`` in its module under
``bnnsweep.methods``, returning a ``Work``); one that declares none (``no_work_model``) gets
``DEFAULT`` (one hour, 2 GB) per cell: give it one when its cells are long.

Cells are fitted in batches, one job each (``plan_batches``): the config's ``batching``
section chooses per method how (README, config/README.md); a batch asks for the sum of its
cells' times and the largest cell's memory.
"""

from __future__ import annotations

import dataclasses
import json
import math
from functools import cache

from ..methods import Work, get_method
from .axes import AXES
from .sweep import Cell

CALL_S = 20e-6  # fixed cost of one batched gradient call (Python and numpy overhead)
MULTIPLY_ADD_S = 10e-9  # one multiply-add of a forward/backward pass, one core
STARTUP_S = 10.0  # interpreter, imports, data and NetCDF writing: in a bound
SAFETY = 3.0
MIN_RUNTIME_MIN = 5  # below this a SLURM time limit only adds scheduling noise
BASE_MEM_MB = 600  # python + numpy + scipy + xarray + netCDF4, measured RSS about 250 MB
DEFAULT = {"runtime": 60, "mem_mb": 2000}


def data_shape(dataset: str, split: str) -> tuple[int, int, int, int]:
    """(training points, inputs, outputs, test points) of a split; each dataset is loaded
    once per process (a UCI set's loader builds all its splits at once)."""
    shapes = _split_shapes(dataset)
    if split not in shapes:
        from .. import datasets

        datasets.load(dataset).split(split)  # raises the DatasetError naming the valid splits
    return shapes[split]


@cache
def _split_shapes(dataset: str) -> dict[str, tuple[int, int, int, int]]:
    """``data_shape`` of every split of a dataset (shapes only are kept, not the arrays); a
    dataset whose metadata give its ``split_shape`` (one for every split) is not loaded."""
    from .. import datasets
    from ..datasets.registry import entry

    known = entry(dataset)
    if "split_shape" in known.metadata:  # data downloaded on first use: planned without it
        return {name: tuple(known.metadata["split_shape"]) for name in known.split_names}
    loaded = datasets.load(dataset)
    return {
        name: (s.x_train.shape[0], s.n_inputs, s.n_outputs, s.x_test.shape[0])
        for name, s in loaded.splits.items()
    }


def n_weights(n_inputs: int, hidden: int, n_outputs: int) -> int:
    """Weights of an I->H->P network with biases (models/network.py layout)."""
    if hidden <= 0:
        return (n_inputs + 1) * n_outputs
    return hidden * (n_inputs + 1) + n_outputs * (hidden + 1)


_WORK: dict[tuple, tuple[int, int, Work | None]] = {}


def _work_of(cell: Cell, shape: tuple[int, int, int, int]) -> tuple[int, int, Work | None]:
    """(hidden units, weights, work model) of a cell on data of ``shape``; computed once per
    method, settings and shape (a sweep over seeds shares one)."""
    key = (cell.method_name, json.dumps(cell.settings, sort_keys=True, default=str), shape)
    if key not in _WORK:
        n_train, n_in, n_out, n_test = shape
        method = get_method(cell.method_name)
        settings = method.settings(cell.settings)
        hidden = getattr(settings, "hidden", 0)
        w = n_weights(n_in, hidden, n_out)
        _WORK[key] = hidden, w, method.work(settings, n_train, n_test, n_out, w)
    return _WORK[key]


def fit_seconds(cell: Cell, shape: tuple[int, int, int, int] | None = None) -> float | None:
    """Upper bound on the time of a cell's fit alone, in seconds, without start-up or safety
    factor (None when the method has no work model); ``shape`` defaults to the cell's data."""
    if shape is None:
        shape = data_shape(cell.dataset, cell.split)
    n_train, _, n_out, _ = shape
    _, w, model = _work_of(cell, shape)
    if model is None:
        return None
    points = n_train if model.points is None else model.points
    fixed = CALL_S if model.call_s is None else model.call_s
    per_call = fixed + MULTIPLY_ADD_S * points * w * model.batch
    per_hessian = MULTIPLY_ADD_S * (n_train * n_out * w * w + w**3)
    return model.fixed_s + model.gradient_calls * per_call + model.hessians * per_hessian


def packing_seconds(cell: Cell, shape: tuple[int, int, int, int] | None = None) -> float | None:
    """The typical time of a cell's fit (its bound, less ``Work.fixed_s``, times
    ``Work.typical``, plus ``fixed_s``): what the plan estimates and ``time`` batching packs
    by."""
    fit = fit_seconds(cell, shape)
    if fit is None:
        return None
    shape = data_shape(cell.dataset, cell.split) if shape is None else shape
    model = _work_of(cell, shape)[2]
    return model.fixed_s + (fit - model.fixed_s) * model.typical


def seconds(cell: Cell, shape: tuple[int, int, int, int]) -> float | None:
    """Upper bound on a cell's wall time in seconds as a job of its own, safety factor
    included (None when the method has no work model)."""
    fit = fit_seconds(cell, shape)
    return None if fit is None else SAFETY * (STARTUP_S + fit)


def memory_mb(cell: Cell, shape: tuple[int, int, int, int]) -> float:
    """Memory of a cell's fit beyond the interpreter's ``BASE_MEM_MB``, safety included."""
    n_train, n_in, n_out, n_test = shape
    hidden, _, model = _work_of(cell, shape)
    if model is None:
        return DEFAULT["mem_mb"] - BASE_MEM_MB
    activations = 4 * n_train * max(hidden, 1) * model.batch
    data = (n_train + n_test) * (n_in + n_out)
    return SAFETY * 8 * (model.floats_held + activations + data) / 2**20


def _round_mb(mb: float) -> int:
    return int(math.ceil(mb / 100.0) * 100)


def runtime_minutes(typical_s: float, bound_s: float, attempt: int = 1) -> int:
    """The ``runtime`` (minutes) a job asks for: first ``SAFETY`` times what the plan
    estimates for it (its typical time, ``packing_seconds``, and a start-up,
    ``STARTUP_MEASURED_S``) in whole minutes, never more, at least ``MIN_RUNTIME_MIN``; a
    retried job (``attempt`` > 1: killed at that limit, its finished cells kept) asks for
    ``SAFETY`` times its bound (every restart and iteration to its limit), at least
    ``attempt`` times the first request. Asking for the bound from the start made a 14 s
    sweep of variational cells ask for 2.7 hours; with a 10 s start-up and the minute
    rounded up, jobs above the floor asked for 3.1-3.45 times the plan's estimate."""
    first = max(MIN_RUNTIME_MIN, math.floor(SAFETY * (STARTUP_MEASURED_S + typical_s) / 60.0))
    if attempt <= 1:
        return first
    return max(first * attempt, math.ceil(SAFETY * (STARTUP_S + bound_s) / 60.0))


def estimate(cell: Cell, shape: tuple[int, int, int, int], attempt: int = 1) -> dict:
    """``{"runtime": minutes, "mem_mb": MB}`` of a cell as a job of its own on data of
    ``shape`` (``runtime_minutes``); a retried job (``attempt`` > 1, e.g. after hitting its
    time limit) gets its bound's time and proportionally more memory."""
    bound = fit_seconds(cell, shape)
    if bound is None:
        return {key: value * attempt for key, value in DEFAULT.items()}
    runtime = runtime_minutes(packing_seconds(cell, shape), bound, attempt)
    mem = _round_mb(BASE_MEM_MB + memory_mb(cell, shape))
    return {"runtime": runtime, "mem_mb": mem * attempt}


def resources(cell: Cell, attempt: int = 1) -> dict:
    """Resources of a cell fitted as a job of its own."""
    return estimate(cell, data_shape(cell.dataset, cell.split), attempt)


# --- batches: several cells in one job ---------------------------------------------------

BATCHING_DEFAULTS = {
    "mode": "auto",
    "target_minutes": 5.0,
    "max_cells": 400,
    "methods": {},
    "vectorise": True,
}
STRATEGIES = ("dataset", "time", "none")


@dataclasses.dataclass
class Batch:
    """Cells fitted by one job, in order; ``strategy`` says why they are together."""

    batch_id: str
    cells: list[Cell]
    strategy: str
    vectorised: bool = False
    gpus: int = 0  # GPUs the job asks for (config key ``devices``; ``gpus``)

    @property
    def rule_name(self) -> str:
        return "fit_" + self.batch_id.replace(".", "__")

    def fit_seconds(self) -> float | None:
        """Upper bound on the batch's fit time (sum over its cells; None if unknown)."""
        times = [fit_seconds(c, data_shape(c.dataset, c.split)) for c in self.cells]
        return None if any(t is None for t in times) else float(sum(times))

    def priority(self) -> int:
        """The job's scheduling priority: its typical time in whole seconds
        (``typical_seconds``). Snakemake starts the ready job of highest priority first, so
        the longest batches start first (longest-processing-time-first) and the short ones
        fill the cores at the end, instead of a long job starting last and leaving the other
        cores idle while it runs."""
        return int(round(typical_seconds(self.cells)))

    def fit_groups(self) -> list[list[Cell]]:
        """The cells that run together: with ``vectorised``, those of one method label,
        dataset and axis values (one ``fit_many`` each, as ``runner.fit_batch`` runs them);
        otherwise each cell on its own."""
        if not self.vectorised:
            return [[cell] for cell in self.cells]
        groups: dict[tuple, list[Cell]] = {}
        for cell in self.cells:
            groups.setdefault((cell.method, cell.dataset, cell.axes), []).append(cell)
        return list(groups.values())

    def resources(self, attempt: int = 1) -> dict:
        """``runtime`` (minutes, ``runtime_minutes`` of the sums over the cells of their
        typical times and bounds), ``mem_mb`` (the largest cell's; all cells of a
        vectorised batch at once) and, for a batch of GPU cells, ``gpu`` (the number of
        GPUs, which the SLURM executor requests with ``--gpus``)."""
        return {**self._cpu_resources(attempt), **({"gpu": self.gpus} if self.gpus else {})}

    def _cpu_resources(self, attempt: int) -> dict:
        if len(self.cells) == 1:
            return resources(self.cells[0], attempt)
        fit = self.fit_seconds()
        if fit is None:
            runtime = DEFAULT["runtime"] * len(self.cells) * attempt
        else:
            runtime = runtime_minutes(typical_seconds(self.cells), fit, attempt)
        mem = _round_mb(
            BASE_MEM_MB
            + max(
                sum(memory_mb(c, data_shape(c.dataset, c.split)) for c in group)
                for group in self.fit_groups()
            )
        )
        return {"runtime": runtime, "mem_mb": mem * attempt}


def typical_seconds(cells: list[Cell]) -> float:
    """The typical fit time of ``cells`` one after another: the sum of their
    ``packing_seconds``, a cell without a work model counting as ``DEFAULT``'s runtime."""
    times = [packing_seconds(c) for c in cells]
    return float(sum(60.0 * DEFAULT["runtime"] if t is None else t for t in times))


def pack(units: list[list[Cell]], target_s: float, limit: int) -> list[list[Cell]]:
    """Consecutive ``units`` (lists of cells that stay together) joined into jobs while their
    ``typical_seconds`` stay within ``target_s`` and their cells within ``limit``; a unit
    beyond either is a job of its own."""
    jobs: list[list[Cell]] = []
    current: list[Cell] = []
    total = 0.0
    for unit in units:
        need = typical_seconds(unit)
        if current and (total + need > target_s or len(current) + len(unit) > limit):
            jobs.append(current)
            current, total = [], 0.0
        current = current + list(unit)
        total += need
    if current:
        jobs.append(current)
    return jobs


def batching_settings(config: dict) -> dict:
    """The ``batching`` section of a validated config with defaults filled in."""
    return {**BATCHING_DEFAULTS, **(config.get("batching") or {})}


def gpus(cell: Cell, devices: dict) -> int:
    """GPUs a cell's job asks for: the config's ``devices`` entry for its method label, else
    for its registered method name; none without one."""
    entry = devices.get(cell.method) or devices.get(cell.method_name) or {}
    return int(entry.get("gpu", 0))


def strategy(cell: Cell, batching: dict) -> str:
    """How a cell's method is batched: the config's choice for its label or method, else
    ``dataset`` for methods with a vectorised ``fit_many`` when ``vectorise`` is on (the
    default), ``time`` for methods with a work model, ``none`` (a job per cell) for the
    rest; ``mode: none`` turns batching off.

    ``dataset`` is the default only with ``vectorise``: one after another in one process,
    ``time`` packing builds each dataset's compiled functions once as well (its cells come
    in dataset order) and needs fewer jobs, so fewer interpreter starts, where the cells
    are short."""
    if batching["mode"] == "none":
        return "none"
    chosen = batching["methods"].get(cell.method) or batching["methods"].get(cell.method_name)
    if chosen:
        return chosen
    if get_method(cell.method_name).fit_many is not None and batching["vectorise"]:
        return "dataset"
    return "time" if fit_seconds(cell, data_shape(cell.dataset, cell.split)) is not None else "none"


def plan_batches(cells: list[Cell], batching: dict, devices: dict | None = None) -> list[Batch]:
    """Cells grouped into jobs, deterministically from the config (never from measured times,
    so that a batch's cells do not move between runs).

    ``dataset``: every split and seed of one dataset, method label and axis values, one
    after another in one process (so a compiled function is built once), or with
    ``vectorise`` as one ``fit_many`` where the method has one; such groups of one
    experiment that are short share a job (``pack``: consecutive groups up to
    ``target_minutes`` of typical time, e.g. PBP on the small UCI sets), so that a group
    of seconds does not pay an interpreter start and a cluster queue of its own; ``time``: consecutive cells
    of one experiment packed until their typical time (``packing_seconds``; the safety
    factor is for the time a job asks for, not for packing) reaches ``target_minutes``,
    across method labels (the short cells of several methods share one interpreter start);
    ``none``: a job per cell. No batch holds more than ``max_cells``. A batch is named ``<experiment>.<label>.<k>``, or for cells of several
    labels ``<experiment>.<first label>_to_<last label>.<k>``. Cells whose jobs ask for GPUs
    (``devices``, the config key: ``gpus``) share a job only with cells asking for as many.
    """
    devices = devices or {}
    target = 60.0 * float(batching["target_minutes"])
    limit = int(batching["max_cells"])
    groups: dict[tuple, list[Cell]] = {}
    kinds: dict[tuple, str] = {}
    for cell in cells:
        how = strategy(cell, batching)
        if how == "dataset":
            key = (cell.experiment, cell.method, "dataset", cell.dataset, cell.axes)
        elif how == "time":
            key = (cell.experiment, "time")
        else:
            key = (cell.experiment, cell.method, "none", cell.path_id)
        if gpus(cell, devices):  # apart from the CPU cells
            key = (*key, "gpu", gpus(cell, devices))
        groups.setdefault(key, []).append(cell)
        kinds[key] = how
    batches: list[Batch] = []
    counters: dict[tuple[str, str], int] = {}  # per experiment and batch name

    def add(key, members, how):
        labels = list(dict.fromkeys(c.method for c in members))
        name = labels[0] if len(labels) == 1 else f"{labels[0]}_to_{labels[-1]}"
        k = counters.get((key[0], name), 0)
        counters[(key[0], name)] = k + 1
        vectorised = how == "dataset" and len(members) > 1 and bool(batching["vectorise"])
        n_gpus = gpus(members[0], devices)
        batches.append(Batch(f"{key[0]}.{name}.{k}", members, how, vectorised, n_gpus))

    dataset_units: dict[tuple, list[list[Cell]]] = {}  # per experiment and GPUs, in order
    for key, members in groups.items():
        how = kinds[key]
        if how == "time":
            for job in pack([[cell] for cell in members], target, limit):
                add(key, job, how)
            continue
        chunks = [members[start : start + limit] for start in range(0, len(members), limit)]
        if how == "dataset":
            dataset_units.setdefault((key[0], gpus(members[0], devices)), []).extend(chunks)
        else:
            for chunk in chunks:
                add(key, chunk, how)
    for (experiment, _), units in dataset_units.items():
        for job in pack(units, target, limit):
            add((experiment,), job, "dataset")
    names = [b.rule_name for b in batches]
    if len(set(names)) != len(names):
        raise ValueError("two batches share a rule name; make experiment and method labels differ")
    return batches


# --- calibration against measured runtimes -------------------------------------------------


def measured_seconds(nc) -> tuple[float, str]:
    """A cell file's measured fit time and its clock: the fit's CPU time (attribute
    ``fit_cpu_s``, what a core is busy for, whatever else runs on the machine) where the
    cell records it, else its wall time (``runtime_s``, of cells written before)."""
    if "fit_cpu_s" in nc.ncattrs():
        cpu = float(nc.getncattr("fit_cpu_s"))
        if math.isfinite(cpu) and cpu > 0:
            return cpu, "cpu"
    return float(nc["runtime_s"][...]), "wall"


def calibration(results_dir) -> dict[str, dict]:
    """Per method, measured fit time over the work model's bound, from the cell files under
    ``results_dir``: ``{method: {"cells": n, "ratio": median, "clocks": {"cpu": n, ...}}}``.

    The measured time is the fit's CPU time where a cell records it, else its wall time
    (``measured_seconds``; ``clocks`` counts the cells of each). The bound is the work
    model's upper limit (every restart to ``max_iter``), so ratios are usually well below
    one; ``plan`` multiplies the bound by them to predict core time. For methods without a
    work model, ``seconds`` is the median measured time of a cell.
    """
    from pathlib import Path

    import netCDF4

    from ..cells.file_seal import seal_problem
    from .sweep import cell_from_spec

    ratios: dict[str, list[float]] = {}
    times: dict[str, list[float]] = {}
    clocks: dict[str, dict[str, int]] = {}
    for path in sorted(Path(results_dir).glob("*/cells/*/*/*.nc")):
        if seal_problem(path) is not None:  # damaged bytes can hang the HDF5 parser
            continue
        try:
            with netCDF4.Dataset(path) as nc:
                runtime, clock = measured_seconds(nc)
                cell_key = json.loads(nc.getncattr("cell_json"))
                settings = json.loads(nc.getncattr("settings_json"))
                method_name = nc.getncattr("method_name")
                experiment = str(nc["experiment"][...])
        except (OSError, KeyError, ValueError, AttributeError, IndexError):
            continue
        axes = [[a, cell_key[a]] for a in AXES if a in cell_key]
        spec = {**cell_key, "experiment": experiment, "method_name": method_name}
        spec.update(axes=axes, settings=settings)
        try:
            cell = cell_from_spec(spec)
            bound = fit_seconds(cell, data_shape(cell.dataset, cell.split))
        except Exception:  # noqa: BLE001 - a cell of a method or dataset no longer registered
            continue
        if bound and runtime > 0:
            ratios.setdefault(method_name, []).append(runtime / bound)
        elif bound is None:
            times.setdefault(method_name, []).append(runtime)
        else:
            continue
        counts = clocks.setdefault(method_name, {})
        counts[clock] = counts.get(clock, 0) + 1
    out = {}
    for key, measured in (("ratio", ratios), ("seconds", times)):
        for method, values in measured.items():
            values.sort()
            out[method] = {
                "cells": len(values),
                key: values[len(values) // 2],
                "clocks": clocks[method],
            }
    return out


def _cells_and_clocks(calibrated: dict) -> str:
    """'12 cells (CPU time)', or '12 cells (8 CPU, 4 wall time)' where some cells record only
    their wall time."""
    clocks = calibrated["clocks"]
    if len(clocks) == 1:
        clock = "CPU time" if "cpu" in clocks else "wall time"
    else:
        clock = f"{clocks['cpu']} CPU, {clocks['wall']} wall time"
    return f"{calibrated['cells']} cells ({clock})"


STARTUP_MEASURED_S = 2.0  # a fit job's start-up on one core: interpreter, imports, data


@dataclasses.dataclass
class Plan:
    """What ``bnnsweep plan`` prints: the batches, the calibration it used (``calibration``)
    and a row per experiment and method label (``plan_rows``)."""

    batches: list[Batch]
    calibration: dict[str, dict]
    rows: dict[tuple[str, str], dict]

    @property
    def estimate_s(self) -> float:
        """The estimated core time of the whole sweep, seconds."""
        return sum(row["estimate"] for row in self.rows.values())

    @property
    def bound_s(self) -> float:
        return sum(row["bound"] for row in self.rows.values())


def plan_rows(config: dict, cells: list[Cell], results_dir) -> Plan:
    """The batches of a sweep and, per experiment and method label, its cells, batch jobs and
    how they are formed (with the GPUs a job asks for, config key ``devices``), the work
    models' bound, the estimate calibrated against measured cells under ``results_dir``
    (where there are some; else the bound times the method's typical share of it, plus a
    start-up per job), the peak memory of a job and the time its jobs ask for."""
    batches = plan_batches(cells, batching_settings(config), config.get("devices"))
    calib = calibration(results_dir)
    rows: dict[tuple[str, str], dict] = {}
    for batch in batches:
        need = batch.resources()
        by_label: dict[str, list[Cell]] = {}
        for cell in batch.cells:
            by_label.setdefault(cell.method, []).append(cell)
        for label, members in by_label.items():
            # a job of several labels counts for each; its start-up and requested time are
            # shared by their numbers of cells
            share = len(members) / len(batch.cells)
            row = rows.setdefault(
                (batch.cells[0].experiment, label),
                {
                    "method": members[0].method_name,
                    "cells": 0,
                    "jobs": 0,
                    "how": set(),
                    "bound": 0.0,
                    "estimate": 0.0,
                    "unknown": 0,
                    "mem": 0,
                    "requested": 0.0,
                },
            )
            row["cells"] += len(members)
            row["jobs"] += 1
            gpu = f", {batch.gpus} GPU" if batch.gpus else ""
            row["how"].add(("vectorised " if batch.vectorised else "") + batch.strategy + gpu)
            row["mem"] = max(row["mem"], need["mem_mb"])
            row["requested"] += share * need["runtime"] / 60.0
            measured = calib.get(members[0].method_name, {})
            for cell in members:
                fit = fit_seconds(cell, data_shape(cell.dataset, cell.split))
                if fit is None and "seconds" in measured:
                    row["estimate"] += measured["seconds"]
                    continue
                if fit is None:
                    row["unknown"] += 1
                    continue
                row["bound"] += fit
                if "ratio" in measured:
                    row["estimate"] += fit * measured["ratio"]
                else:
                    row["estimate"] += packing_seconds(cell)
            row["estimate"] += share * STARTUP_MEASURED_S
    return Plan(batches, calib, rows)


def plan_table(config: dict, cells: list[Cell], results_dir) -> str:
    """What a sweep will cost (``plan_rows``) as a Markdown table and a closing line."""
    plan = plan_rows(config, cells, results_dir)
    batches, calib, rows = plan.batches, plan.calibration, plan.rows
    head = [
        "experiment / label",
        "method",
        "cells",
        "jobs",
        "batched by",
        "bound core-h",
        "estimate core-h",
        "calibrated on",
        "peak mem MB",
        "requested h",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total_est = total_bound = 0.0
    for (experiment, label), row in rows.items():
        c = calib.get(row["method"])
        if not c:
            note = "none (bound x typical share)"
        elif "ratio" in c:
            note = f"{_cells_and_clocks(c)}, bound x {c['ratio']:.3g}"
        else:
            note = f"{_cells_and_clocks(c)}, {c['seconds']:.3g} s per cell"
        unknown = f" + {row['unknown']} cell(s) without a work model" if row["unknown"] else ""
        lines.append(
            f"| {experiment} / {label} | {row['method']} | {row['cells']} | {row['jobs']} | "
            f"{', '.join(sorted(row['how']))} | {row['bound'] / 3600:.3g} | "
            f"{row['estimate'] / 3600:.3g}{unknown} | {note} | {row['mem']} | "
            f"{row['requested']:.3g} |"
        )
        total_est += row["estimate"]
        total_bound += row["bound"]
    n_unknown = sum(r["unknown"] for r in rows.values())
    summary = (
        f"{len(cells)} cells in {len(batches)} jobs; estimated {total_est / 3600:.3g} core-h "
        f"({total_est:.0f} core-s; work-model bound {total_bound / 3600:.3g} core-h)"
        + (f"; {n_unknown} cell(s) have no work model and are not counted" if n_unknown else "")
        + f"; peak memory of a job {max(r['mem'] for r in rows.values())} MB"
        + (
            f"; calibrated on the cells under {results_dir}"
            if calib
            else f"; no cells under {results_dir} to calibrate on: the estimate is the bound"
            " times each method's typical share of it (Work.typical)"
        )
    )
    return "\n".join([*lines, "", summary])
