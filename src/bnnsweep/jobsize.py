"""Cluster resources of one fit job (``runtime`` in minutes, ``mem_mb``) from its settings.

The estimate is an upper bound on the work a method's settings allow (every restart running
to ``max_iter``, every leapfrog step of every chain), priced by the size of one forward and
backward pass, ``N x W`` multiply-adds for N training points and W weights, plus a fixed cost
per call; Hessians cost ``N x W^2``. The constants were measured on the default sweep
(results/*/cells: runtime_s against n_grad_evals): about 20 us per call and 10 ns per
multiply-add on one core, with a safety factor of 3 on top, since a job killed at its time
limit is worse than one that waits a little longer in the queue. A chaining cell of the
paper protocol comes out at hours, a small laplace cell at the SLURM minimum of a few minutes.

Methods without a work model here get ``DEFAULT`` (one hour, 2 GB): add one when a method's
cells are long.
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

from .sweep import Cell

CALL_S = 20e-6  # fixed cost of one batched gradient call (Python and numpy overhead)
MULTIPLY_ADD_S = 10e-9  # one multiply-add of a forward/backward pass, one core
STARTUP_S = 10.0  # interpreter, imports, data and NetCDF writing
SAFETY = 3.0
MIN_RUNTIME_MIN = 5  # below this a SLURM time limit only adds scheduling noise
BASE_MEM_MB = 600  # python + numpy + scipy + xarray + netCDF4, measured RSS about 250 MB
DEFAULT = {"runtime": 60, "mem_mb": 2000}


@dataclasses.dataclass(frozen=True)
class Work:
    """Upper bounds on what a fit does: gradient calls, each over ``batch`` networks at
    once, Hessians, and floats held at once (samples, Jacobians, predictions)."""

    gradient_calls: float
    batch: int = 1
    hessians: float = 0.0
    floats_held: float = 0.0


@lru_cache(maxsize=64)
def data_shape(dataset: str, split: str) -> tuple[int, int, int, int]:
    """(training points, inputs, outputs, test points) of a split, loaded once per process."""
    from . import datasets

    s = datasets.load(dataset).split(split)
    return s.x_train.shape[0], s.n_inputs, s.n_outputs, s.x_test.shape[0]


def n_weights(n_inputs: int, hidden: int, n_outputs: int) -> int:
    """Weights of an I->H->P network with biases (models/network.py layout)."""
    if hidden <= 0:
        return (n_inputs + 1) * n_outputs
    return hidden * (n_inputs + 1) + n_outputs * (hidden + 1)


def _links(schedule: str) -> int:
    from .engines.evidence.schedules import schedule as lambdas

    return len(lambdas(schedule)) - 1


def work(method: str, s, n_train: int, n_test: int, n_out: int, w: int) -> Work | None:
    """The work model of a registered method with resolved settings ``s`` (None if unknown)."""
    if method == "map":
        return Work(s.restarts * s.max_iter)
    if method == "laplace":
        hessians = s.restarts * (s.cycles + s.newton_steps)
        jacobian = n_train * n_out * w + w * w
        return Work(s.restarts * s.cycles * s.max_iter, hessians=hessians, floats_held=jacobian)
    if method == "hmc":
        steps = s.burn_in * s.burn_leapfrog + s.samples * s.leapfrog + s.init_iter
        held = s.chains * s.samples * (w + 8) + s.predictive_samples * n_test * n_out * 2
        return Work(steps, batch=s.chains, floats_held=held)
    if method == "chaining":
        links = _links(s.schedule)
        chains = (links + 1) * s.replicates
        steps = s.burn_in * s.burn_leapfrog + s.samples * s.leapfrog
        ais = s.ais_leapfrog * links if s.ais_particles else 0
        held = chains * s.samples * (w + 4) + s.predictive_samples * n_test * n_out * 2
        return Work(steps + ais, batch=max(chains, s.ais_particles), floats_held=held)
    if method == "exact":
        return Work(1, floats_held=n_train * w)
    return None


def _work_of(cell: Cell, shape: tuple[int, int, int, int]) -> tuple[int, int, Work | None]:
    """(hidden units, weights, work model) of a cell on data of ``shape``."""
    from .methods import get_method

    n_train, n_in, n_out, n_test = shape
    settings = get_method(cell.method_name).settings(cell.settings)
    hidden = getattr(settings, "hidden", 0)
    w = n_weights(n_in, hidden, n_out)
    return hidden, w, work(cell.method_name, settings, n_train, n_test, n_out, w)


def seconds(cell: Cell, shape: tuple[int, int, int, int]) -> float | None:
    """Upper bound on a cell's wall time in seconds, safety factor included (None when the
    method has no work model)."""
    n_train, _, n_out, _ = shape
    _, w, model = _work_of(cell, shape)
    if model is None:
        return None
    per_call = CALL_S + MULTIPLY_ADD_S * n_train * w * model.batch
    per_hessian = MULTIPLY_ADD_S * (n_train * n_out * w * w + w**3)
    return SAFETY * (STARTUP_S + model.gradient_calls * per_call + model.hessians * per_hessian)


def estimate(
    cell: Cell, shape: tuple[int, int, int, int], attempt: int = 1, grouped: bool = False
) -> dict:
    """``{"runtime": minutes, "mem_mb": MB}`` of a cell on data of ``shape``; a retried job
    (``attempt`` > 1, e.g. after hitting its time limit) gets proportionally more of both.
    A cell of a group job is not rounded up to ``MIN_RUNTIME_MIN``: its group's time limit
    is the sum over its cells."""
    n_train, n_in, n_out, n_test = shape
    hidden, _, model = _work_of(cell, shape)
    if model is None:
        return {key: value * attempt for key, value in DEFAULT.items()}
    runtime = max(1 if grouped else MIN_RUNTIME_MIN, math.ceil(seconds(cell, shape) / 60.0))
    activations = 4 * n_train * max(hidden, 1) * model.batch
    data = (n_train + n_test) * (n_in + n_out)
    mem = BASE_MEM_MB + SAFETY * 8 * (model.floats_held + activations + data) / 2**20
    return {"runtime": runtime * attempt, "mem_mb": int(math.ceil(mem / 100.0) * 100) * attempt}


def resources(cell: Cell, attempt: int = 1, grouped: bool = False) -> dict:
    """Resources of a cell's fit job (used by the Snakemake fit rule)."""
    return estimate(cell, data_shape(cell.dataset, cell.split), attempt, grouped)


GROUP = "fits"  # the Snakemake group of short fits; --group-components fits=N packs N per job


def short_cells(cells: list[Cell], short_minutes: float) -> dict[str, str]:
    """``{path id: GROUP}`` for the cells whose estimated time is at most ``short_minutes``.

    Snakemake then submits ``--group-components fits=N`` of them as one cluster job; the
    other cells (long ones, or methods without a work model) stay jobs of their own.
    """
    limit = 60.0 * short_minutes
    out = {}
    for cell in cells:
        need = seconds(cell, data_shape(cell.dataset, cell.split))
        if need is not None and need <= limit:
            out[cell.path_id] = GROUP
    return out
