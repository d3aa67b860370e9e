"""Convergence as the contract (issue 36): after any sequence of faults - cells deleted,
truncated, bit-flipped, swapped, copied over one another, replaced by a file of older
code, the prepared data deleted, the merged file truncated, bit-flipped or replaced, a
batch killed part-way (half a temporary file left) - the sweep run once brings the results
back to the numbers of a clean run, refitting only the cells the faults touched.

The sweep is the workflow's own decision, run in-process so that 200 sequences cost ~85 s
of CPU: ``result_check.cell_states`` (what the Snakefile reads to choose the batches to
rerun), ``runner.fit_batch`` (what the batch job runs), then the merge, which judges every
cell as the Snakefile does (``merge_cells(expected=...)``), when a cell was refitted or
the merged file is not current (``result_check.merged_state``, the Snakefile's test). That
Snakemake acts on those decisions is checked by a handful of random sequences (fixed seeds)
of the same faults, plus damaged specs and SIGKILLs of the whole run, each followed by the
README's command through real Snakemake and compared with a clean Snakemake run's results
directory byte for byte (``test_snakemake_converges_to_the_clean_runs_bytes``, ~12 s of CPU
a run), and by ``test_a_refused_merge_keeps_the_last_good_results``,
tests/test_dry_runs.py and tests/test_cell_integrity.py. The cells are closed-form fits
(``exact``, a linear model on a 21-point grid), milliseconds each.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bnnsweep import datasets, runner
from bnnsweep.cells.file_seal import seal_problem
from bnnsweep.cells.reader import read_any
from bnnsweep.results import merge_cells, write_netcdf_atomic
from bnnsweep.sweeps.result_check import cell_states, merged_state, spec_expectations
from bnnsweep.sweeps.runlock import OWNER_FILE
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
    if fitted or merged_state(merged, paths(root))[0] != "current":
        # every cell judged as the workflow's merge judges it
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
    """A clean run, its numbers, and for each cell a file of it made by older code (and
    their merge)."""
    root = tmp_path_factory.mktemp("clean") / "results"
    assert sweep(root) == {c.path_id for c in CELLS}
    older = tmp_path_factory.mktemp("older")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(runner, "code_version", lambda name: "1" * 16)
        for cell, path in zip(CELLS, paths(older), strict=True):
            runner.write_result(runner.fit_cell(cell, root / "data" / "toy_sine.nc", print), path)
    write_netcdf_atomic(merge_cells(paths(older)), older / "f" / "merged.nc")
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
# what is done to the merged file: cut, one bit flipped, replaced by a cell file (the cell
# at the fraction), by bytes bnnsweep did not write, by the merge of the older cells
MERGED_DAMAGE = ("truncate", "flip", "cell", "junk", "older")
FAULTS = st.one_of(
    st.tuples(st.just("delete"), cell_no),
    st.tuples(st.just("truncate"), cell_no, st.floats(0, 0.999)),
    st.tuples(st.just("flip"), cell_no, st.floats(0, 0.999), st.integers(0, 7)),
    st.tuples(st.just("swap"), cell_no, cell_no),
    st.tuples(st.just("copy"), cell_no, cell_no),
    st.tuples(st.just("older"), cell_no),
    st.tuples(st.just("delete_data")),
    st.tuples(
        st.just("damage_merged"),
        st.sampled_from(MERGED_DAMAGE),
        st.floats(0, 0.999),
        st.integers(0, 7),
    ),
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
    elif kind == "damage_merged":
        damage_merged(root / "f" / "merged.nc", older / "f" / "merged.nc", *fault[1:])
        return set()
    elif kind == "kill":
        return killed_sweep(root, fault[1])
    if kind != "kill":
        touched.add(fault[1])
    return set()


def damage_merged(merged: Path, older: Path, how: str, at: float, bit: int) -> None:
    """Damage the merged file (``MERGED_DAMAGE``); nothing when there is none."""
    if not merged.is_file():
        return
    data = bytearray(merged.read_bytes())
    if how == "truncate":
        merged.write_bytes(data[: int(len(data) * at)])
    elif how == "flip" and data:
        data[int(len(data) * at)] ^= 1 << bit
        merged.write_bytes(bytes(data))
    elif how == "cell":
        cell = paths(merged.parents[1])[int(N * at)]
        if cell.is_file():
            shutil.copy(cell, merged)
    elif how == "junk":
        merged.write_bytes(b"not a merged file")
    elif how == "older":
        shutil.copy(older, merged)


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
    assert merged_state(root / "f" / "merged.nc", paths(root)) == ("current", ""), faults
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
# A handful of sequences (each costs one or two Snakemake runs of ~12 s of CPU): the
# breadth is the 200 in-process sequences above; these check that Snakemake's DAG and jobs
# act on the same decisions, kills included, through the README's command.
WORKFLOW_SEQUENCES = int(os.environ.get("WORKFLOW_FAULT_SEQUENCES", "4"))
CELL_FAULTS = ("delete", "truncate", "flip", "swap", "copy", "older")
FILE_FAULTS = (*CELL_FAULTS, "delete_data", "damage_spec", "damage_merged")
# what a killed run waits for before the kill (if its run ends first, nothing is killed);
# "locked": Snakemake has taken its lock and onstart has not recorded the owner yet
KILL_POINTS = ("locked", "started", "fitting", "merging")
# files that say when and how long, not what: Snakemake's and the jobs' logs, usage records
# and the results directory's lock (holding the last run's process id)
NOT_RESULTS = ("logs/", "benchmarks/", ".bnnsweep-run.lock")


def workflow_sequence(number: int) -> list[tuple]:
    """Random fault sequence ``number`` (a fixed seed each, the same on every run): three
    faults of the kinds whose turn it is (the first three sequences cover every kind), up
    to two more drawn at random, and a run of the sweep command killed at a point taken in
    turn, at a random place after the first fault."""
    rng = random.Random(f"workflow fault sequence {number}")
    kinds = [FILE_FAULTS[(3 * number + k) % len(FILE_FAULTS)] for k in (0, 1, 2)]
    kinds += rng.choices(FILE_FAULTS, k=rng.randint(0, 2))
    rng.shuffle(kinds)
    faults = []
    for kind in kinds:
        cell = rng.randrange(N)
        if kind == "truncate":
            faults.append((kind, cell, round(rng.random(), 3)))
        elif kind == "flip":
            faults.append((kind, cell, round(rng.random(), 3), rng.randrange(8)))
        elif kind in ("swap", "copy"):
            faults.append((kind, cell, (cell + rng.randrange(1, N)) % N))
        elif kind == "damage_spec":
            faults.append((kind, rng.randrange(2), round(rng.random(), 3)))
        elif kind == "delete_data":
            faults.append((kind,))
        elif kind == "damage_merged":
            how = rng.choice(MERGED_DAMAGE)
            faults.append((kind, how, round(rng.random(), 3), rng.randrange(8)))
        else:
            faults.append((kind, cell))
    kill = ("kill", KILL_POINTS[number % len(KILL_POINTS)])
    faults.insert(rng.randint(1, len(faults)), kill)
    return faults


def snakemake_command_line(workdir: Path) -> list[str]:
    """The README's sweep command on the config above, in ``workdir``."""
    from bnnsweep.sweeps.workflow_run import snakemake_command

    return snakemake_command(
        ROOT, workdir, workdir / "f.yaml", "--cores", "1",
        "--workflow-profile", str(ROOT / "profiles" / "default"),
    )  # fmt: skip


def snakemake_sweep(workdir: Path) -> str:
    """The sweep command, run to its end; what it printed to stderr."""
    proc = subprocess.run(
        snakemake_command_line(workdir), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stderr


# The sweep command with onstart's ``runlock.record_owner`` replaced: Snakemake has taken its
# lock (and onstart the results directory's) when it is called. The process kills itself
# there ("die"), or marks the point reached in the file $BNNSWEEP_TEST_REACHED and waits.
STOP_BEFORE_RECORDING = """
import os, signal, sys, time
from pathlib import Path
from bnnsweep.sweeps import runlock
def stop(*args, **kwargs):
    if sys.argv[1] == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    Path(os.environ["BNNSWEEP_TEST_REACHED"]).touch()
    time.sleep(600)
runlock.record_owner = stop
from snakemake.cli import main
main(sys.argv[2:])
"""


def stopped_command_line(workdir: Path, how: str) -> list[str]:
    """The sweep command, stopped between Snakemake's lock and the owner record: ``how``
    'die' (SIGKILL) or 'wait'."""
    command = snakemake_command_line(workdir)
    at = command.index("snakemake")
    return [command[0], "-c", STOP_BEFORE_RECORDING, how, *command[at + 1 :]]


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a run and every process below it (a node failure)."""
    from test_faults import descendants

    victims = descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGKILL)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=60)


def killed_snakemake_sweep(workdir: Path, point: str) -> None:
    """The sweep command, SIGKILLed with every process below it (a node failure) once
    ``point`` is reached: Snakemake's lock taken and no owner recorded yet (the process
    kills itself there: ``STOP_BEFORE_RECORDING``), the run started (its owner recorded:
    ``runlock.record_owner``), a batch fitting (its log written), the merge running (its
    log written)."""
    if point == "locked":
        proc = subprocess.run(stopped_command_line(workdir, "die"), capture_output=True)
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
        assert list((workdir / ".snakemake" / "locks").glob("*.lock"))
        assert not (workdir / ".snakemake" / OWNER_FILE).exists()
        return
    results = workdir / "results"
    started = time.time()

    def newer(pattern: str) -> bool:
        return any(p.stat().st_mtime >= started for p in results.glob(pattern) if p.is_file())

    reached = {
        "started": lambda: (workdir / ".snakemake" / OWNER_FILE).is_file(),
        "fitting": lambda: newer("logs/f/batches/*.log"),
        "merging": lambda: newer("logs/f/merge.log"),
    }[point]
    proc = subprocess.Popen(
        snakemake_command_line(workdir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while proc.poll() is None and not reached() and time.monotonic() < deadline:
        time.sleep(0.01)
    if proc.poll() is None:
        kill_group(proc)
    proc.wait(timeout=60)


def damage_spec(root: Path, which: int, cut: float) -> Path:
    """A batch spec (``which`` 0) or the merge's spec (1) of the config, as a killed run
    leaves it under ``results/batches/``, cut short (named by the batch_spec rule's logs)."""
    names = sorted(p.stem for p in (root / "logs" / "batches").glob("*.log"))
    name = [n for n in names if n.startswith("merge-") == bool(which)][0]
    text = b'{"cells": [{"cell": {"dataset": "toy_sine", "experiment": "f"'
    path = root / "batches" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text[: int(len(text) * cut)])
    return path


def results_files(root: Path) -> dict[str, Path]:
    return {
        p.relative_to(root).as_posix(): p
        for p in root.rglob("*")
        if p.is_file() and not p.relative_to(root).as_posix().startswith(NOT_RESULTS)
    }


# a cell's attributes that say when, how long and at which commit it was fitted, and the
# checksum over them; a merged file's key, made of its cells' seals (which cover those)
PROVENANCE_ATTRS = {"created", "fit_cpu_s", "git_revision", "content_sha256", "merge_key"}


def attributes(path: Path) -> dict:
    """A result file's global attributes but its provenance (``PROVENANCE_ATTRS``)."""
    return {k: v for k, v in read_any(path)[2].items() if k not in PROVENANCE_ATTRS}


@pytest.fixture(scope="module")
def clean_snakemake(tmp_path_factory):
    """A clean Snakemake run of the config (the same cells as ``CELLS``)."""
    workdir = tmp_path_factory.mktemp("snakemake_clean")
    (workdir / "f.yaml").write_text(SNAKEMAKE_CONFIG)
    snakemake_sweep(workdir)
    return workdir


def identity(path: Path) -> int | None:
    """The inode of a file: a refitted cell is a new file, written beside the old one and
    renamed over it (Snakemake touches the outputs a batch kept: their times change)."""
    return path.stat().st_ino if path.is_file() else None


@pytest.mark.workflow
@pytest.mark.parametrize("number", range(WORKFLOW_SEQUENCES))
def test_snakemake_converges_to_the_clean_runs_bytes(clean, clean_snakemake, tmp_path, number):
    """Random fault sequences (fixed seeds) on a copy of a clean Snakemake run, then the
    README's sweep command once: the results directory holds the clean run's files, byte
    for byte, except that a cell the faults touched and had to be refitted, and the merged
    file when one was, differ from the clean run's in their provenance alone (the fit's
    wall and CPU time, creation time and commit: ``PROVENANCE``, ``PROVENANCE_ATTRS``;
    every other variable and attribute compared byte for byte); no healthy
    cell is written again (its inode is kept), none is left corrupt or stale, and the only
    other files are those the faults left: damaged specs and corrupt cells moved aside to
    ``*.corrupt`` (kept for inspection).

    How it relates to ``test_one_sweep_converges_after_any_fault_sequence``: that test
    draws 200 sequences of the same cell faults (and kills inside a batch) and runs the
    workflow's decisions in-process, ``cell_states`` then ``fit_batch`` then the judged
    merge, in seconds; this one runs a handful through Snakemake itself (its DAG from the
    Snakefile's states, its jobs, rerun-incomplete after a SIGKILL of the whole run), which
    costs ~12 s of CPU a run, and compares the whole results directory."""
    faults = workflow_sequence(number)
    workdir = tmp_path / "work"
    shutil.copytree(clean_snakemake, workdir, ignore=shutil.ignore_patterns(".snakemake"))
    root = workdir / "results"
    before = {p: identity(p) for p in paths(root)}
    touched: set[int] = set()
    left: set[str] = set()  # files a fault put there, not the workflow
    for fault in faults:
        if fault[0] == "kill":
            killed_snakemake_sweep(workdir, fault[1])
        elif fault[0] == "damage_spec":
            left.add(damage_spec(root, *fault[1:]).relative_to(root).as_posix())
        else:
            apply(fault, root, clean.older, touched)

    snakemake_sweep(workdir)  # the same command, once

    assert_converged(clean_snakemake, root, before, touched, left, faults)


def assert_converged(clean_workdir, root, before, touched, left, faults) -> None:
    """The results directory ``root`` after the sweep command holds the clean run's files,
    byte for byte, but for the refitted cells (of ``touched``) and the merged file, which
    differ from them in provenance alone; no healthy cell was written again (its inode,
    ``before``), none is corrupt or stale; the only other files are ``left`` (put there by
    the faults) and corrupt cells moved aside."""
    healthy = [p for i, p in enumerate(paths(root)) if i not in touched]
    refitted = [str(p) for p in healthy if identity(p) != before[p]]
    assert not refitted, f"{faults}: healthy cells refitted: {refitted}"
    index = {str(p): c for p, c in zip(paths(root), CELLS, strict=True)}
    assert all(s == "current" for s, _ in cell_states(index, root, True).values()), faults
    expected, got = results_files(clean_workdir / "results"), results_files(root)
    assert set(expected) <= set(got), (faults, set(expected) - set(got))
    extra = set(got) - set(expected) - left
    touched_names = {paths(root)[i].name for i in touched}
    assert all(Path(e).name.split(".nc.corrupt")[0] + ".nc" in touched_names for e in extra), (
        faults,
        extra,
    )
    for rel, path in expected.items():
        if path.read_bytes() == got[rel].read_bytes():
            continue
        assert rel.endswith(".nc") and (rel == "f/merged.nc" or got[rel] in paths(root)), (
            faults,
            rel,
        )
        assert got[rel] not in healthy, (faults, rel)
        assert numbers(got[rel]) == numbers(path), (faults, rel)
        assert attributes(got[rel]) == attributes(path), (faults, rel)


@pytest.mark.workflow
@pytest.mark.parametrize("how", ["flip", "cell"])
def test_a_damaged_merged_file_is_merged_again_by_the_same_command(
    clean, clean_snakemake, tmp_path, how
):
    """The merged file alone damaged (a bit flipped: its seal does not verify; or a cell
    file copied over it: intact, but not merged from the experiment's cells), every cell
    current: a dry run plans the merge and writes nothing under results/; the README's
    command merges again, with one line saying why, refits nothing, and the results
    directory converges to the clean run's bytes (tables and figures byte for byte)."""
    workdir = tmp_path / "work"
    shutil.copytree(clean_snakemake, workdir, ignore=shutil.ignore_patterns(".snakemake"))
    root = workdir / "results"
    before = {p: identity(p) for p in paths(root)}
    damage_merged(root / "f" / "merged.nc", clean.older / "f" / "merged.nc", how, 0.5, 3)
    state = merged_state(root / "f" / "merged.nc", paths(root))[0]
    assert state == {"flip": "corrupt", "cell": "stale"}[how]
    files = {rel: path.read_bytes() for rel, path in results_files(root).items()}
    dry = subprocess.run(
        [*snakemake_command_line(workdir), "-n", "--quiet", "host"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert dry.returncode == 0 and "merge_and_draw_f" in dry.stdout, dry.stderr[-3000:]
    assert {rel: path.read_bytes() for rel, path in results_files(root).items()} == files
    assert not (root / "logs" / "f" / "merged.remerged").exists()

    stderr = snakemake_sweep(workdir)  # the same command

    assert f"results/f/merged.nc is {state}" in stderr and "merging it again" in stderr
    assert_converged(clean_snakemake, root, before, set(), set(), [("damage_merged", how)])
    assert merged_state(root / "f" / "merged.nc", paths(root)) == ("current", "")
    assert not list((root / "logs" / "f").glob("merged.remerged*"))
    rerun = subprocess.run(
        [*snakemake_command_line(workdir), "-n"], capture_output=True, text=True, timeout=600
    )
    assert "Nothing to be done" in rerun.stdout + rerun.stderr


@pytest.mark.workflow
def test_a_refused_merge_keeps_the_last_good_results(clean, clean_snakemake, tmp_path):
    """Nothing derived is deleted before its replacement is known to succeed: a cell
    copied over another (intact, another cell's key), the merged file damaged (a bit
    flipped: merged again), and Snakemake allowed to run the merge only
    (``--allowed-rules``, standing for any run in which the merge meets a cell that
    is not current: the newer cell makes the merge rerun, its batch may not), so the merge
    meets the foreign cell: it refuses it in one line naming the file, writes nothing, and
    the merged file and tables (``update()`` outputs) keep their bytes; then the README's
    command refits the cell and converges."""
    workdir = tmp_path / "work"
    shutil.copytree(clean_snakemake, workdir, ignore=shutil.ignore_patterns(".snakemake"))
    root = workdir / "results"
    damage_merged(root / "f" / "merged.nc", clean.older / "f" / "merged.nc", "flip", 0.5, 3)
    derived = {
        rel: p.read_bytes() for rel, p in results_files(root).items() if "/cells/" not in rel
    }
    apply(("copy", 0, 1), root, clean.older, set())
    command = snakemake_command_line(workdir)
    at = command.index("snakemake") + 1  # the target, then the options (some take lists)
    command[at:at] = ["results/f/merged.nc", "--allowed-rules", "merge_and_draw_f", "batch_spec"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "merge_and_draw_f" in proc.stderr, proc.stderr[-3000:]
    log = (root / "logs" / "f" / "merge.log").read_text()
    assert "do not hold the cell asked for" in log and paths(root)[1].name in log, log
    for rel, data in derived.items():
        assert (root / rel).read_bytes() == data, rel

    snakemake_sweep(workdir)

    for rel, path in results_files(clean_snakemake / "results").items():
        if "/cells/" not in rel or path.name != paths(root)[1].name:
            assert path.read_bytes() == (root / rel).read_bytes() or rel == "f/merged.nc", rel
    assert numbers(paths(root)[1]) == numbers(paths(clean_snakemake / "results")[1])
    assert merged_state(root / "f" / "merged.nc", paths(root)) == ("current", "")
    assert numbers(root / "f" / "merged.nc") == clean.reference[Path("f/merged.nc")]


@pytest.mark.workflow
def test_a_lock_left_before_the_owner_was_recorded_heals_and_a_live_one_is_kept(
    clean, clean_snakemake, tmp_path
):
    """A run SIGKILLed after Snakemake took its lock and before onstart recorded the owner
    leaves a lock with no owner record. While a live run holds the lock at that same
    point (stopped there: it has not recorded itself either), the README's command is
    refused with a line saying so, and the lock is kept; once that run is killed too, the
    same command removes the lock, says so in one line, and converges to the clean run's
    bytes (a cell deleted before the first kill is refitted)."""
    workdir = tmp_path / "work"
    shutil.copytree(clean_snakemake, workdir, ignore=shutil.ignore_patterns(".snakemake"))
    root = workdir / "results"
    before = {p: identity(p) for p in paths(root)}
    apply(("delete", 2), root, clean.older, touched := set())
    killed_snakemake_sweep(workdir, "locked")  # asserts: locks, no owner record

    reached = tmp_path / "reached"
    live = subprocess.Popen(
        stopped_command_line(workdir, "wait"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "BNNSWEEP_TEST_REACHED": str(reached)},
    )
    try:
        deadline = time.monotonic() + 300
        while not reached.exists() and live.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reached.exists(), live.stderr.read()[-3000:] if live.poll() is not None else ""
        locks = sorted((workdir / ".snakemake" / "locks").glob("*.lock"))
        assert locks and not (workdir / ".snakemake" / OWNER_FILE).exists()
        refused = subprocess.run(
            snakemake_command_line(workdir), capture_output=True, text=True, timeout=600
        )
        assert refused.returncode != 0, refused.stderr[-3000:]
        assert "another Snakemake of this workflow is running in it" in refused.stderr
        assert "the lock is kept" in refused.stderr
        assert sorted((workdir / ".snakemake" / "locks").glob("*.lock")) == locks
        assert live.poll() is None, "the refused run left the live one alone"
    finally:
        kill_group(live)
    assert not paths(root)[2].exists(), "neither run fitted anything"

    healed = snakemake_sweep(workdir)  # the same command

    assert "removed the Snakemake lock left by a run that was killed" in healed, healed
    assert "(no owner recorded: killed as it started)" in healed, healed
    assert_converged(clean_snakemake, root, before, touched, set(), [("locked",)])
