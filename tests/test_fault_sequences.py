"""Convergence as the contract (issue 36): after any sequence of faults - cells deleted,
truncated, bit-flipped, swapped, copied over one another, replaced by a file of older
code, the prepared data deleted, a batch killed part-way (half a temporary file left) - the
sweep run once brings the results back to the numbers of a clean run, refitting only the
cells the faults touched.

The sweep is the workflow's own decision, run in-process so that 200 sequences take
seconds: ``result_check.cell_states`` (what the Snakefile reads to choose the batches to
rerun) and ``runner.fit_batch`` (what the batch job runs), then the merge when a cell was
refitted. Snakemake's part, that those states rerun exactly those batches, is checked by
a few fixed sequences of the same faults run through real Snakemake (the README's command,
once, on a copy of a clean Snakemake run: the clean run's numbers, no healthy cell written
again), and by tests/test_dry_runs.py and tests/test_cell_integrity.py. The cells are
closed-form fits (``exact``, a linear model on a 21-point grid), milliseconds each.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bnnsweep import datasets, runner
from bnnsweep.cells.file_seal import seal_problem
from bnnsweep.cells.reader import read_any
from bnnsweep.results import merge_cells, write_netcdf_atomic
from bnnsweep.sweeps.result_check import cell_states, spec_expectations
from bnnsweep.sweeps.sweep import Cell, batch_spec, cell_index, read_batch_spec

SEQUENCES = int(os.environ.get("FAULT_SEQUENCES", "200"))
SETTINGS = {"hidden": 0, "grid": 21}
CELLS = [
    Cell("f", "toy_sine", "default", "exact", "exact", seed, (("hidden", 0),), dict(SETTINGS))
    for seed in range(4)
]
PROVENANCE = {"runtime_s", "created", "git_revision"}


def paths(root: Path) -> list[Path]:
    return [root / f"{key}.nc" for key in cell_index(CELLS)]


def prepare(root: Path) -> Path:
    data = root / "data" / "toy_sine.nc"
    if not data.is_file():  # Snakemake prepares a missing data file again
        datasets.save_netcdf(datasets.load("toy_sine"), data)
    return data


INCOMPLETE = ".incomplete"  # Snakemake's record of a job it started and did not see end


def sweep(root: Path) -> set[str]:
    """The sweep command, in-process: the cells' states, the batch when one is not current
    or the batch was killed in an earlier run (Snakemake's rerun-incomplete), fit-batch
    refitting exactly the cells that are not current, then the merge when a cell changed
    or it is missing. Returns the cells fitted."""
    prepare(root)
    index = {str(p): c for p, c in zip(paths(root), CELLS, strict=True)}
    states = cell_states(index, root, True)
    fitted: set[str] = set()
    incomplete = root.parent / INCOMPLETE
    if incomplete.exists() or any(state != "current" for state, _ in states.values()):
        incomplete.touch()

        def log(msg):
            if str(msg).startswith("fitting "):
                fitted.add(str(msg).split()[1])

        runner.fit_batch(batch_spec(CELLS, False, str(root), True), log=log)
        incomplete.unlink()
    merged = root / "f" / "merged.nc"
    if fitted or not merged.is_file():  # every cell judged as the workflow's merge judges it
        entries = read_batch_spec(batch_spec(CELLS, False, str(root), True), "merge spec")[2]
        write_netcdf_atomic(merge_cells(expected=spec_expectations(entries)), merged)
    return fitted


def numbers(path: Path) -> dict[str, bytes]:
    """A result file's variables as bytes, provenance (times, revision) left out."""
    variables, _, _ = read_any(path)
    return {
        name: np.asarray(values).tobytes()
        if np.asarray(values).dtype.kind != "O"
        else repr(np.asarray(values).tolist()).encode()
        for name, (_, values, _) in variables.items()
        if name not in PROVENANCE and not name.endswith("_seconds")
    }


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A clean run, its numbers, and for each cell a file of it made by older code."""
    root = tmp_path_factory.mktemp("clean") / "results"
    assert sweep(root) == {c.path_id for c in CELLS}
    older = tmp_path_factory.mktemp("older")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(runner, "code_version", lambda name: "1" * 16)
        for cell, path in zip(CELLS, paths(older), strict=True):
            runner.write_result(runner.fit_cell(cell, root / "data" / "toy_sine.nc", print), path)
    reference = {p.relative_to(root): numbers(p) for p in [*paths(root), root / "f/merged.nc"]}
    return Clean(root, older, reference)


class Clean:
    """The clean run (a short repr: hypothesis prints it with a failing example)."""

    def __init__(self, root, older, reference):
        self.root, self.older, self.reference = root, older, reference

    def __repr__(self):
        return f"Clean({self.root})"


N = len(CELLS)
cell_no = st.integers(0, N - 1)
FAULTS = st.one_of(
    st.tuples(st.just("delete"), cell_no),
    st.tuples(st.just("truncate"), cell_no, st.floats(0, 0.999)),
    st.tuples(st.just("flip"), cell_no, st.floats(0, 0.999), st.integers(0, 7)),
    st.tuples(st.just("swap"), cell_no, cell_no),
    st.tuples(st.just("copy"), cell_no, cell_no),
    st.tuples(st.just("older"), cell_no),
    st.tuples(st.just("delete_data")),
    st.tuples(st.just("kill"), st.integers(0, N - 1)),
)


class Killed(BaseException):
    """A batch job killed while it writes its cells."""


def apply(fault, root: Path, older: Path, touched: set[int]) -> set[str]:
    """Do ``fault`` to the results under ``root``; the cells it changed go in ``touched``.
    Returns the cells a killed sweep fitted."""
    cells, kind = paths(root), fault[0]
    if kind == "delete":
        cells[fault[1]].unlink(missing_ok=True)
    elif kind == "truncate" and cells[fault[1]].is_file():
        data = cells[fault[1]].read_bytes()
        cells[fault[1]].write_bytes(data[: int(len(data) * fault[2])])
    elif kind == "flip" and cells[fault[1]].is_file() and cells[fault[1]].stat().st_size:
        data = bytearray(cells[fault[1]].read_bytes())
        data[int(len(data) * fault[2])] ^= 1 << fault[3]
        cells[fault[1]].write_bytes(bytes(data))
    elif kind in ("swap", "copy"):
        a, b = cells[fault[1]], cells[fault[2]]
        if a.is_file() and b.is_file():
            if kind == "swap":
                data = a.read_bytes()
                a.write_bytes(b.read_bytes())
                b.write_bytes(data)
            else:
                b.write_bytes(a.read_bytes())
        touched.add(fault[1])
        touched.add(fault[2])
        return set()
    elif kind == "older":
        shutil.copy(paths(older)[fault[1]], cells[fault[1]])
    elif kind == "delete_data":
        (root / "data" / "toy_sine.nc").unlink(missing_ok=True)
        return set()
    elif kind == "kill":
        return killed_sweep(root, fault[1])
    if kind != "kill":
        touched.add(fault[1])
    return set()


def killed_sweep(root: Path, after: int) -> set[str]:
    """A sweep whose batch is killed when it writes its cell number ``after`` (counted from
    0): that write leaves half a temporary file and nothing under the cell's name."""
    write, writes = runner.write_result, []

    def dying(content, output):
        if len(writes) == after:
            output = Path(output)
            (output.parent / f".{output.name}.k1ll3d.tmp.nc").write_bytes(b"\x89HDF half")
            raise Killed
        writes.append(output)
        return write(content, output)

    runner.write_result = dying
    try:
        return sweep(root)
    except Killed:
        return {Path(p).relative_to(root).with_suffix("").as_posix() for p in writes}
    finally:
        runner.write_result = write


@settings(
    max_examples=SEQUENCES,
    deadline=None,
    database=None,
    derandomize=not os.environ.get("BNNSWEEP_FUZZ_RANDOM"),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(faults=st.lists(FAULTS, min_size=1, max_size=5))
def test_one_sweep_converges_after_any_fault_sequence(clean, tmp_path_factory, faults):
    source, older, reference = clean.root, clean.older, clean.reference
    root = tmp_path_factory.mktemp("faults") / "results"
    shutil.copytree(source, root)
    touched: set[int] = set()
    fitted_while_killed: set[str] = set()
    for fault in faults:
        fitted_while_killed |= apply(fault, root, older, touched)
    damaged = {CELLS[i].path_id for i in touched}

    fitted = sweep(root)  # the same command, once

    healthy_refits = (fitted | fitted_while_killed) - damaged
    assert not healthy_refits, f"{faults}: healthy cells refitted: {healthy_refits}"
    index = {str(p): c for p, c in zip(paths(root), CELLS, strict=True)}
    states = cell_states(index, root, True)
    assert all(state == "current" for state, _ in states.values()), (faults, states)
    for rel, expected in reference.items():
        assert seal_problem(root / rel) is None
        assert numbers(root / rel) == expected, (faults, rel)
    leftovers = [p for p in root.rglob(".*.tmp.nc")]
    assert leftovers == [], (faults, leftovers)


# --- the same contract through real Snakemake ---------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE_CONFIG = """\
experiments:
  f:
    datasets: [toy_sine]
    seeds: [0, 1, 2, 3]
    figures: [error_table]
    methods:
      exact: {hidden: 0, grid: 21}
"""
# a few sequences of every file fault the in-process test draws (kills: tests/test_faults.py)
SNAKEMAKE_SEQUENCES = [
    [("swap", 0, 1), ("delete_data",)],
    [("older", 2), ("flip", 3, 0.5, 3), ("copy", 1, 0)],
    [("truncate", 0, 0.4), ("delete", 2), ("older", 3)],
]


def snakemake_sweep(workdir: Path) -> None:
    """The README's sweep command on the config above, in ``workdir``."""
    from bnnsweep.sweeps.workflow_run import snakemake_command

    command = snakemake_command(
        ROOT, workdir, workdir / "f.yaml", "--cores", "1",
        "--workflow-profile", str(ROOT / "profiles" / "default"),
    )  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def clean_snakemake(tmp_path_factory):
    """A clean Snakemake run of the config (the same cells as ``CELLS``) and its numbers."""
    workdir = tmp_path_factory.mktemp("snakemake_clean")
    (workdir / "f.yaml").write_text(SNAKEMAKE_CONFIG)
    snakemake_sweep(workdir)
    root = workdir / "results"
    reference = {p.relative_to(root): numbers(p) for p in [*paths(root), root / "f/merged.nc"]}
    return workdir, reference


def identity(path: Path) -> int | None:
    """The inode of a file: a refitted cell is a new file, written beside the old one and
    renamed over it (Snakemake touches the outputs a batch kept: their times change)."""
    return path.stat().st_ino if path.is_file() else None


@pytest.mark.workflow
@pytest.mark.parametrize("faults", SNAKEMAKE_SEQUENCES, ids=str)
def test_snakemake_converges_after_a_fault_sequence(clean, clean_snakemake, tmp_path, faults):
    source, reference = clean_snakemake
    workdir = tmp_path / "work"
    shutil.copytree(source, workdir, ignore=shutil.ignore_patterns(".snakemake"))
    root = workdir / "results"
    touched: set[int] = set()
    for fault in faults:
        apply(fault, root, clean.older, touched)
    healthy = {p: identity(p) for i, p in enumerate(paths(root)) if i not in touched}

    snakemake_sweep(workdir)  # the same command, once

    refitted = [str(p) for p, before in healthy.items() if identity(p) != before]
    assert not refitted, f"{faults}: healthy cells refitted: {refitted}"
    for rel, expected in reference.items():
        assert seal_problem(root / rel) is None
        assert numbers(root / rel) == expected, (faults, rel)
