"""One run at a time per results directory (issue 36): a sweep started from a second working
directory while another run holds the same results_dir refuses with one line naming that
run, and runs nothing; the lock is gone with the process that held it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bnnsweep.sweeps.runlock import RESULTS_LOCK, hold_results_dir
from bnnsweep.sweeps.workflow_run import snakemake_command

ROOT = Path(__file__).resolve().parents[1]
HOLD = "import sys, time; from bnnsweep.sweeps.runlock import hold_results_dir as h; h(sys.argv[1]); print('held', flush=True); time.sleep(600)"


def holder(results: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(results)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_held_results_directory_is_refused_naming_the_holder(tmp_path):
    results = tmp_path / "results"
    proc = holder(results)
    try:
        with pytest.raises(ValueError, match=f"in use by another run \\(pid {proc.pid}"):
            hold_results_dir(results)
    finally:
        proc.kill()
        proc.wait()
    fd = hold_results_dir(results)  # the holder is gone: its lock with it
    assert json.loads((results / RESULTS_LOCK).read_text())["pid"] == os.getpid()
    os.close(fd)


@pytest.mark.workflow
def test_a_second_working_directory_is_refused_while_the_first_runs(tmp_path):
    results = tmp_path / "shared_results"
    config = tmp_path / "c.yaml"
    config.write_text(
        f"results_dir: {results}\n"
        "experiments: {x: {datasets: [toy_sine], figures: [error_table], "
        "methods: {exact: {hidden: 0}}}}\n"
    )
    (tmp_path / "second").mkdir()
    proc = holder(results)
    try:
        run = subprocess.run(
            snakemake_command(ROOT, tmp_path / "second", config, "--cores", "1"),
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        proc.kill()
        proc.wait()
    assert run.returncode != 0
    assert f"results directory {results} is in use by another run (pid {proc.pid}" in run.stderr
    assert "Traceback" not in run.stderr
    assert sorted(p.name for p in results.iterdir()) == [RESULTS_LOCK]  # nothing was run
