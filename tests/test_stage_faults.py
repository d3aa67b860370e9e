"""Fault injection, stage by stage (prepare, fit, batch, merge, figure): a real `bnnsweep`
process is killed with SIGKILL while it writes its output or just before it renames it into
place, runs out of disk (a file-size limit: writes fail with EFBIG), or is given a damaged
input. In every case the previous output is still there, whole, nothing else is changed, a
failure is one line naming the file, and the same command (once the disk has room, or the
input is whole again) gives the output of an undisturbed run (issue 14)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import netCDF4
import pytest

from bnnsweep.cells.compare import differing_variables

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow

# Runs `bnnsweep ARGS` with a fault: SIGKILL once the temporary file of TARGET exists,
# SIGKILL just before TARGET is renamed into place, or a 64-byte file-size limit.
DRIVER = """
import os, signal, sys, tempfile
fault, target, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
if fault == "kill-while-writing":
    make = tempfile.mkstemp
    def mkstemp(*args, **kwargs):
        fd, path = make(*args, **kwargs)
        if kwargs.get("prefix", "") == "." + target + ".":
            os.write(fd, b"partial")
            os.kill(os.getpid(), signal.SIGKILL)
        return fd, path
    tempfile.mkstemp = mkstemp
elif fault == "kill-before-rename":
    rename = os.replace
    def replace(src, dst, *args, **kwargs):
        if os.path.basename(str(dst)) == target:
            os.kill(os.getpid(), signal.SIGKILL)
        return rename(src, dst, *args, **kwargs)
    os.replace = replace
elif fault == "full-disk":
    import resource
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
from bnnsweep.cli import main
sys.exit(main(argv))
"""

MAP = ["--method", "map", "--hidden", "2", "--set", "restarts=1", "--set", "max_iter=30"]
CELL = {
    "experiment": "e",
    "dataset": "mine",
    "split": "0",
    "method": "map",
    "method_name": "map",
    "seed": 0,
    "axes": [["hidden", 2]],
    "settings": {"hidden": 2, "restarts": 1, "max_iter": 30},
}
# stage: (argv, output, input a damaged copy of which is given)
STAGES = {
    "prepare": (
        ["prepare", "--dataset", "mine", "--spec", "in/user.json", "--output", "out/data.nc"],
        "out/data.nc",
        "in/mine.csv",
    ),
    "fit": (
        ["fit", "--dataset", "mine", "--split", "0", *MAP, "--data", "in/data.nc"]
        + ["--output", "out/cell.nc"],
        "out/cell.nc",
        "in/data.nc",
    ),
    "batch": (["fit-batch", "in/spec.json"], "out/cell.nc", "in/data.nc"),
    "merge": (
        ["merge", "in/a.nc", "in/b.nc", "--output", "out/merged.nc"],
        "out/merged.nc",
        "in/a.nc",
    ),
    "figure": (
        ["figure", "error_table", "--merged", "in/merged.nc", "--output", "out/table.md"],
        "out/table.md",
        "in/merged.nc",
    ),
}


def bnnsweep(workdir: Path, argv: list[str], fault: str = "none", target: str = ""):
    return subprocess.run(
        [sys.executable, "-c", DRIVER, fault, target, *argv],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Every stage's inputs, made by the stages themselves from a small CSV dataset."""
    base = tmp_path_factory.mktemp("stage-inputs")
    (base / "in").mkdir()
    rows = (ROOT / "config" / "data" / "yacht.csv").read_text().splitlines()[:60]
    (base / "in" / "mine.csv").write_text("\n".join(rows) + "\n")
    spec = {
        "mine": {
            "file": "in/mine.csv",
            "targets": ["residuary_resistance"],
            "task": "regression",
            "splits": {"holdout": 0.2, "repeats": 1, "seed": 0},
        }
    }
    (base / "in" / "user.json").write_text(json.dumps(spec))
    steps = [
        ["prepare", "--dataset", "mine", "--spec", "in/user.json", "--output", "in/data.nc"],
        ["fit", "--dataset", "mine", "--split", "0", *MAP, "--data", "in/data.nc"]
        + ["--output", "in/a.nc", "--seed", "1"],
        ["fit", "--dataset", "mine", "--split", "0", *MAP, "--data", "in/data.nc"]
        + ["--output", "in/b.nc", "--seed", "2"],
        ["merge", "in/a.nc", "in/b.nc", "--output", "in/merged.nc"],
    ]
    for argv in steps:
        proc = bnnsweep(base, argv)
        assert proc.returncode == 0, proc.stderr
    batch = {"cells": [{"cell": CELL, "output": "out/cell.nc", "data": "in/data.nc"}]}
    (base / "in" / "spec.json").write_text(json.dumps(batch))
    return base


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory) -> dict[str, Path]:
    """Each stage's output from an undisturbed run."""
    out = {}
    for stage, (argv, output, _) in STAGES.items():
        workdir = tmp_path_factory.mktemp(f"reference-{stage}")
        shutil.copytree(inputs / "in", workdir / "in")
        proc = bnnsweep(workdir, argv)
        assert proc.returncode == 0, proc.stderr
        out[stage] = workdir / output
    return out


def same_output(a: Path, b: Path) -> bool:
    if a.suffix == ".nc":
        return a.is_file() and not differing_variables(a, b)
    return a.read_bytes() == b.read_bytes()


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def damage(path: Path) -> None:
    """Change one value of the input, as a careless edit or a bad sector would."""
    if path.suffix == ".csv":
        lines = path.read_text().splitlines()
        lines[5] = "abc," + lines[5].split(",", 1)[1]
        path.write_text("\n".join(lines) + "\n")
        return
    with netCDF4.Dataset(path, "a") as nc:
        name = next(n for n, v in nc.variables.items() if v.dtype.kind == "f" and v.ndim)
        values = nc[name][...]
        values.flat[0] += 1.0
        nc[name][...] = values


FAULTS = ["kill-while-writing", "kill-before-rename", "full-disk", "damaged-input"]


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("stage", list(STAGES))
def test_a_fault_loses_nothing_and_the_same_command_recovers(
    inputs, reference, tmp_path, stage, fault
):
    argv, output, damaged = STAGES[stage]
    shutil.copytree(inputs / "in", tmp_path / "in")
    out = tmp_path / output
    out.parent.mkdir(parents=True)
    if stage != "batch":  # the previous run's output (a batch keeps a current cell as it is)
        shutil.copy(reference[stage], out)
    if fault == "damaged-input":
        damage(tmp_path / damaged)
    before = files(tmp_path)

    proc = bnnsweep(tmp_path, argv, fault, Path(output).name)

    if fault.startswith("kill"):
        assert proc.returncode == -9
    else:
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        culprit = output if fault == "full-disk" else damaged
        assert culprit in proc.stderr, proc.stderr
    after = files(tmp_path)
    temporaries = {p for p in after if Path(p).name.startswith(".")}
    if fault.startswith("kill"):
        assert len(temporaries) == 1  # the killed write's, removed by the next write
    else:
        assert not temporaries
    moved = {p for p in set(after) - set(before) if p.endswith(".corrupt")}
    if stage == "batch" and fault == "damaged-input":
        # the prepared file, the workflow's own, is moved aside for the workflow to redo
        assert moved == {damaged + ".corrupt"} and "prepares it again" in proc.stderr
    else:
        assert not moved
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert changed - temporaries - moved - {damaged} == set(), changed
    if stage != "batch":
        assert same_output(out, reference[stage])  # the previous output, whole
    else:
        assert not out.exists()

    # the fault is gone (a restored input, room on the disk): the same command recovers
    if fault == "damaged-input":
        shutil.copy(inputs / damaged, tmp_path / damaged)
    out.unlink(missing_ok=True)
    proc = bnnsweep(tmp_path, argv)
    assert proc.returncode == 0, proc.stderr
    assert same_output(out, reference[stage])
    assert not [p for p in files(tmp_path) if Path(p).name.startswith(".")]
