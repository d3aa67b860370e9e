"""Faults: a sweep killed with SIGKILL (Snakemake and its jobs, the whole process group) at
several points resumes with the same command, recomputes only unfinished cells and gives the
results of an uninterrupted run; a job killed while writing leaves no file taken as
complete; a full disk or an unwritable directory gives a clear error and no partial file."""

import base64
import errno
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr
import yaml

from bnnsweep import runner
from bnnsweep.cells import atomic_file
from bnnsweep.cells import writer as cell_writer
from bnnsweep.cells.compare import differing_variables
from bnnsweep.sweeps import runlock
from bnnsweep.sweeps.runlock import (
    ALIVE_FILE,
    OWNER_FILE,
    clear_stale_locks,
    forget_owner,
    record_owner,
    take_working_directory,
)
from bnnsweep.sweeps.sweep import Cell
from bnnsweep.sweeps.workflow_run import snakemake_command

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow
CELL_GLOB = "results/smoke/cells/**/*.nc"
# the local profile quiets the per-job blocks (quiet: rules, reason, host); a dry run whose
# planned jobs a test reads asks for them back
SHOW_JOBS = ("--quiet", "host")


def command(workdir: Path, config: str = "smoke.yaml") -> list[str]:
    return snakemake_command(
        ROOT,
        workdir,
        workdir / config,
        "--cores",
        "2",
        # what `snakemake` run from the repository picks up by itself (rerun-incomplete)
        "--workflow-profile",
        str(ROOT / "profiles" / "default"),
    )


def cell_files(workdir: Path) -> list[Path]:
    """Finished cell files (temporary files of unfinished writes start with a dot)."""
    return [p for p in workdir.glob(CELL_GLOB) if not p.name.startswith(".")]


def marked_incomplete(workdir: Path) -> set[Path]:
    """Outputs whose jobs Snakemake had started but not seen finish (.snakemake/incomplete,
    file names are the base64 of the output path): a job killed after its file was renamed
    into place but before Snakemake recorded it is one of them, and is rerun."""
    marks = (workdir / ".snakemake" / "incomplete").glob("*")
    names = [base64.urlsafe_b64decode(m.name + "=" * (-len(m.name) % 4)).decode() for m in marks]
    return {workdir / name for name in names}


def fresh(workdir: Path) -> Path:
    workdir.mkdir(parents=True)
    shutil.copy(ROOT / "config" / "smoke.yaml", workdir / "smoke.yaml")
    return workdir


def run(workdir: Path, config: str = "smoke.yaml") -> None:
    proc = subprocess.run(command(workdir, config), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc), whatever its process group."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, to_fit = set(), [pid]
    while to_fit:
        for child in children.get(to_fit.pop(), []):
            found.add(child)
            to_fit.append(child)
    return found


def run_and_kill(workdir: Path, ready, timeout: float = 300.0, config="smoke.yaml") -> None:
    """Start the sweep in its own process group, wait until ``ready()``, then SIGKILL the
    group and every descendant (jobs included), as a node failure or `kill -9` would."""
    proc = subprocess.Popen(
        command(workdir, config),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep finished before the kill point"
    victims = descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGKILL)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)


def fits_run(workdir: Path, experiment: str = "smoke") -> dict[str, int]:
    """How often each cell's fit started (each start appends 'fitting' to its log)."""
    logs = (workdir / "results" / "logs" / experiment).glob("*/*/*.log")
    return {f"{p.parent.name}/{p.stem}": p.read_text().count("fitting ") for p in logs}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    workdir = fresh(tmp_path_factory.mktemp("faults") / "reference")
    run(workdir)
    return workdir


def _exists(workdir, pattern):
    return lambda: any(workdir.glob(pattern))


def _n_cells(workdir, n):
    return lambda: len(cell_files(workdir)) >= n


@pytest.mark.parametrize(
    "point",
    ["fit_log_started", "first_cell_written", "merged_written"],
)
def test_sigkill_then_same_command_resumes(reference, tmp_path, point):
    workdir = fresh(tmp_path / point)
    ready = {
        "fit_log_started": _exists(workdir, "results/logs/smoke/*/*/*.log"),
        "first_cell_written": _n_cells(workdir, 1),
        "merged_written": _exists(workdir, "results/smoke/merged.nc"),
    }[point]
    run_and_kill(workdir, ready)
    assert (workdir / ".snakemake" / "locks").is_dir() and any(
        (workdir / ".snakemake" / "locks").iterdir()
    ), "a killed Snakemake leaves its lock"
    unfinished = marked_incomplete(workdir)
    finished = {p: p.stat().st_mtime_ns for p in cell_files(workdir) if p not in unfinished}
    runs_before = fits_run(workdir)

    run(workdir)  # the same command again

    for path, mtime in finished.items():
        assert path.stat().st_mtime_ns == mtime, f"{path.name} was recomputed"
    runs_after = fits_run(workdir)
    assert len(cell_files(workdir)) == len(runs_after) == 3
    for path in finished:  # a finished cell's log was not touched either (a rerun resets it)
        key = f"{path.parent.name}/{path.stem}"
        assert runs_after[key] == runs_before[key] == 1, key
    assert not list(workdir.glob("results/**/.*.tmp.nc")), "temporary files left behind"
    for rel in [p.relative_to(reference) for p in cell_files(reference)] + [
        Path("results/smoke/merged.nc")
    ]:
        assert differing_variables(workdir / rel, reference / rel) == [], rel


# --- a batch of cells killed half-way -----------------------------------------------------

BATCH = {
    "experiments": {
        "batch": {
            "datasets": ["toy_sine"],
            "figures": ["error_table"],
            "methods": {"map": {"hidden": [1, 2, 3, 4, 5, 6], "activation": "erf", "restarts": 3}},
        }
    }
}


def batch_config(workdir: Path, **top) -> Path:
    workdir.mkdir(parents=True)
    (workdir / "batch.yaml").write_text(yaml.safe_dump({**BATCH, **top}))
    return workdir


def written(path: Path) -> str:
    """A cell file's creation stamp (its mtime changes when Snakemake touches a kept cell)."""
    with xr.open_dataset(path) as ds:
        return ds.attrs["created"] + str(ds.runtime_s.item())


def test_batch_killed_half_way_fits_only_its_unfinished_cells(tmp_path):
    """Six map cells in one batch job (default batching) are SIGKILLed after some are
    written; the same command fits only the others, and every cell equals bitwise the cell
    of a run with one job per cell."""
    one_per_job = batch_config(tmp_path / "one_per_job", batching={"mode": "none"})
    run(one_per_job, "batch.yaml")
    workdir = batch_config(tmp_path / "batched")
    cells = lambda: [  # noqa: E731 - finished cells (temporary files start with a dot)
        p for p in workdir.glob("results/batch/cells/**/*.nc") if not p.name.startswith(".")
    ]
    dry = subprocess.run(
        [*command(workdir, "batch.yaml"), "-n", *SHOW_JOBS], capture_output=True, text=True
    )
    assert dry.stdout.count("rule fit_batch__map__") == 1, "the six cells are one batch job"
    run_and_kill(workdir, lambda: len(cells()) >= 2, config="batch.yaml")
    finished = {p: written(p) for p in cells()}
    assert 2 <= len(finished) < 6, "killed half-way"
    before = fits_run(workdir, "batch")

    run(workdir, "batch.yaml")

    after = fits_run(workdir, "batch")
    assert len(cells()) == len(after) == 6
    for path, stamp in finished.items():
        key = f"{path.parent.name}/{path.stem}"
        assert written(path) == stamp and after[key] == before[key] == 1, key
    assert sum(after.values()) - sum(before.values()) == 6 - len(finished)
    for path in cells():
        rel = path.relative_to(workdir)
        assert differing_variables(path, one_per_job / rel) == [], rel


def test_stale_lock_of_live_or_foreign_owner_is_kept(tmp_path):
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "0.input.lock").write_text("")
    record_owner(tmp_path)  # this very process: alive
    assert not clear_stale_locks(tmp_path, log=lambda m: None)
    assert (locks / "0.input.lock").exists()
    owner = (tmp_path / OWNER_FILE).read_text().replace('"host": "', '"host": "elsewhere-')
    (tmp_path / OWNER_FILE).write_text(owner)
    assert not clear_stale_locks(tmp_path, log=lambda m: None)
    assert (locks / "0.input.lock").exists()


def test_a_lock_taken_after_a_dead_owner_was_recorded_is_kept(tmp_path):
    """The race of issue 14, item 2: a finished run's record (its process gone) and a new
    run's lock taken before that run records itself. The lock is newer than the record, so
    it may belong to a live run: it stays."""
    locks = tmp_path / "locks"
    locks.mkdir()
    lock = locks / "0.input.lock"
    lock.write_text("")
    record_owner(tmp_path)
    owner = json.loads((tmp_path / OWNER_FILE).read_text())
    owner["start"] = "not this process's start"  # the recorded run is gone
    (tmp_path / OWNER_FILE).write_text(json.dumps(owner))
    os.utime(tmp_path / OWNER_FILE, (1000, 1000))
    os.utime(lock, (2000, 2000))  # taken after the record
    assert not clear_stale_locks(tmp_path, log=lambda m: None)
    assert lock.exists()
    os.utime(lock, (500, 500))  # taken before the record by the run that died: stale
    assert clear_stale_locks(tmp_path, log=lambda m: None)
    assert not lock.exists()
    record_owner(tmp_path)
    forget_owner(tmp_path)  # a run that ends by itself leaves no record behind
    assert not (tmp_path / OWNER_FILE).exists()


def dead_owner(directory: Path) -> None:
    """An owner record of a process that is gone (this one's id, another start time)."""
    record_owner(directory)
    owner = json.loads((directory / OWNER_FILE).read_text())
    owner["start"] = "not this process's start"
    (directory / OWNER_FILE).write_text(json.dumps(owner))


def test_a_lock_no_live_run_holds_is_removed_with_or_without_an_owner(tmp_path, monkeypatch):
    """A SIGKILL between Snakemake taking its lock and onstart's record_owner leaves a lock
    and no owner record (or an older run's): when no other process holds the shared flock
    of live runs (``alone``), the lock is removed, with a line saying so; a live owner's or
    another host's lock is kept, with a line naming it."""
    monkeypatch.setattr(runlock, "_HELD", {})
    lines: list[str] = []
    lock = tmp_path / "locks" / "0.output.lock"
    for owner in ("none", "dead", "dead, older than the lock"):
        lock.parent.mkdir(exist_ok=True)
        lock.write_text("")
        if owner != "none":
            dead_owner(tmp_path)
        if owner.endswith("lock"):
            os.utime(tmp_path / OWNER_FILE, (1000, 1000))
        assert clear_stale_locks(tmp_path, log=lines.append, alone=True), owner
        assert not lock.exists() and not (tmp_path / OWNER_FILE).exists()
    assert lines[0].endswith("(no owner recorded: killed as it started)"), lines
    assert all(line.startswith("bnnsweep: removed the Snakemake lock") for line in lines)
    lock.write_text("")
    record_owner(tmp_path)  # this very process: alive
    assert not clear_stale_locks(tmp_path, log=lines.append, alone=True)
    assert lock.exists() and f"locked by a live run (pid {os.getpid()})" in lines[-1]
    owner = (tmp_path / OWNER_FILE).read_text().replace('"host": "', '"host": "elsewhere-')
    (tmp_path / OWNER_FILE).write_text(owner)
    assert not clear_stale_locks(tmp_path, log=lines.append, alone=True)
    assert lock.exists() and "locked by a run on elsewhere-" in lines[-1]


def test_a_live_run_of_the_workflow_keeps_a_lock_without_an_owner(tmp_path, monkeypatch):
    """``take_working_directory``: a run that parses the Snakefile while another process
    holds the shared flock (a live run, which may have locked and not yet recorded itself)
    keeps a lock with no owner record, and one newer than a dead owner's record; once that
    process is gone, the next run removes it; the flock is held after each call."""
    import fcntl

    def release():  # this process's flock, as when it ends
        for fd in runlock._HELD.values():
            os.close(fd)
        runlock._HELD.clear()

    monkeypatch.setattr(runlock, "_HELD", {})
    lock = tmp_path / "locks" / "0.input.lock"
    lock.parent.mkdir()
    lock.write_text("")
    live = os.open(tmp_path / ALIVE_FILE, os.O_RDWR | os.O_CREAT)  # another live run
    fcntl.flock(live, fcntl.LOCK_SH)
    lines: list[str] = []
    assert not take_working_directory(tmp_path, log=lines.append)
    assert lock.exists() and "another Snakemake of this workflow is running" in lines[-1]
    release()
    dead_owner(tmp_path)
    os.utime(tmp_path / OWNER_FILE, (1000, 1000))  # the lock was taken after the record
    assert not take_working_directory(tmp_path, log=lines.append) and lock.exists()
    release()
    os.close(live)  # that run ends (is killed): the kernel drops its flock
    assert take_working_directory(tmp_path, log=lines.append) and not lock.exists()
    assert lines[-1].startswith("bnnsweep: removed the Snakemake lock"), lines
    probe = os.open(tmp_path / ALIVE_FILE, os.O_RDWR)
    with pytest.raises(OSError):  # this process holds it now, shared
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
    os.close(probe)
    assert not take_working_directory(tmp_path, log=lines.append)  # once per process
    release()


# --- a job killed while writing ---------------------------------------------------------------

DIE_WHILE_WRITING = """
import os, signal, sys
from bnnsweep.cells import writer as cell_writer
write = cell_writer.write_cell
def dying(content, path):
    write(content, path)
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) // 2)  # half of the bytes are on disk
    os.kill(os.getpid(), signal.SIGKILL)
cell_writer.write_cell = dying
from bnnsweep.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_job_killed_while_writing_leaves_nothing_complete(reference, tmp_path):
    workdir = fresh(tmp_path / "killed_write")
    shutil.copytree(reference / "results" / "data", workdir / "results" / "data")
    out = workdir / "results/smoke/cells/toy_sine/map/h2_split-default_seed-0.nc"
    args = [
        "fit",
        "--experiment",
        "smoke",
        "--dataset",
        "toy_sine",
        "--method",
        "map",
        "--hidden",
        "2",
        "--settings-json",
        '{"activation": "erf", "max_iter": 200, "restarts": 2}',
        "--data",
        str(workdir / "results/data/toy_sine.nc"),
        "--output",
        str(out),
    ]
    proc = subprocess.run([sys.executable, "-c", DIE_WHILE_WRITING, *args], capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()
    partial = list(out.parent.glob(f".{out.name}.*.tmp.nc"))
    assert len(partial) == 1  # the half-written temporary file, under another name
    dry = subprocess.run(
        [*command(workdir), "-n", *SHOW_JOBS], capture_output=True, text=True, timeout=300
    )
    assert out.name in dry.stdout  # Snakemake plans the cell again
    run(workdir)
    assert not partial[0].exists()  # the rerun removed the stale temporary file
    rel = out.relative_to(workdir)
    assert differing_variables(out, reference / rel) == []


# --- full disk, unwritable directory ---------------------------------------------------------


@pytest.fixture(scope="module")
def fitted():
    """One cheap fit, shared by the write tests."""
    settings = {"hidden": 2, "restarts": 1, "max_iter": 50}
    cell = Cell("faults", "toy_sine", "default", "map", "map", 0, (("hidden", 2),), settings)
    return runner.fit_cell(cell, log=lambda m: None)


def test_full_disk_gives_clear_error_and_no_partial_file(fitted, tmp_path, monkeypatch):
    written = []

    def no_space(content, path):
        Path(path).write_bytes(b"\x89HDF partial")
        written.append(path)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(cell_writer, "write_cell", no_space)
    out = tmp_path / "cells" / "cell.nc"
    with pytest.raises(runner.WriteError, match=r"cannot write .*cell\.nc \(the disk is full"):
        runner.write_result(fitted, out)
    assert written and not list(out.parent.iterdir())  # neither the file nor a temporary


def _write_under_file_size_limit(path: str, limit: int) -> subprocess.CompletedProcess:
    """``bnnsweep fit`` in a child whose files may not grow beyond ``limit`` bytes
    (RLIMIT_FSIZE): writes then fail as they would on a full disk."""

    def limit_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    args = ["fit", "--dataset", "toy_sine", "--method", "map", "--hidden", "2"]
    args += ["--set", "restarts=1", "--set", "max_iter=20", "--output", path]
    return subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", *args],
        capture_output=True,
        text=True,
        preexec_fn=limit_size,
        timeout=300,
    )


def test_file_size_limit_in_a_real_process(tmp_path):
    out = tmp_path / "cell.nc"
    proc = _write_under_file_size_limit(str(out), 4096)
    assert proc.returncode == 2, proc.stderr
    assert "bnnsweep: error: cannot write" in proc.stderr and "Traceback" not in proc.stderr
    assert "file size limit (ulimit -f) is 4096 bytes" in proc.stderr
    assert not list(tmp_path.iterdir())


def test_unwritable_results_directory(fitted, tmp_path, monkeypatch):
    cells = tmp_path / "results"
    cells.mkdir()
    cells.chmod(0o555)
    out = cells / "cell.nc"
    if os.geteuid() == 0:
        # root writes through any mode bits, so the permission error a user would get is
        # simulated at the point it would arise: creating the temporary file
        def denied(*args, **kwargs):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(cells))

        monkeypatch.setattr(atomic_file.tempfile, "mkstemp", denied)
    with pytest.raises(runner.WriteError, match="directory is not writable"):
        runner.write_result(fitted, out)
    assert not list(cells.iterdir())
    cells.chmod(0o755)
