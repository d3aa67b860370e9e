"""The SLURM workflow profile on a real, single-node SLURM started for this test.

``scripts/slurm_local.py`` installs Debian's slurm-wlm and munge when missing, starts
munged, slurmctld and slurmd, and runs the smoke sweep through
``--workflow-profile workflow/profiles/slurm``: once with one SLURM job per cell and once
with short cells grouped. Both must equal a local run bitwise (data variables of every cell
file and of the merged file). Skipped, with the reason, only when SLURM cannot be installed
(not root, no apt-get, no package registry); a cluster that installs but does not run fails.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.workflow, pytest.mark.slurm]


def _load_script():
    spec = importlib.util.spec_from_file_location(
        "slurm_local", ROOT / "scripts" / "slurm_local.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["slurm_local"] = module
    spec.loader.exec_module(module)
    return module


slurm_local = _load_script()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    try:
        slurm_local.install()
    except slurm_local.SlurmUnavailable as err:
        pytest.skip(f"SLURM cannot be installed here: {err}")
    workdir = tmp_path_factory.mktemp("slurm")
    ids = {}
    cluster = slurm_local.LocalSlurm(workdir / "cluster")
    with cluster:
        for name, extra in (
            ("slurm", slurm_local.QUICK_STATUS),
            ("slurm_grouped", slurm_local.QUICK_STATUS + slurm_local.GROUPED),
        ):
            output = slurm_local.run_sweep(workdir / name, "slurm", *extra, env=cluster.env())
            ids[name] = slurm_local.submitted_job_ids(output)
            print(f"{name}: submitted SLURM job ids {', '.join(ids[name])}")
        slurmd_log = (workdir / "cluster" / "log" / "slurmd.log").read_text()
    slurm_local.run_sweep(workdir / "local", "default")
    return workdir, ids, slurmd_log, cluster


def smoke_batches() -> int:
    """How many batch jobs ``bnnsweep plan config/smoke.yaml`` forms (one since time
    batching packs short cells across method labels)."""
    import yaml

    from bnnsweep.sweeps.config import expand, validate
    from bnnsweep.sweeps.jobsize import batching_settings, plan_batches

    config = validate(yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text()))
    return len(plan_batches(expand(config), batching_settings(config)))


def test_jobs_are_submitted_to_and_run_by_slurmd(runs):
    workdir, ids, slurmd_log, _ = runs
    # one SLURM job per batch of the smoke sweep's three cells; data, merge and figures run
    # locally
    assert len(ids["slurm"]) == smoke_batches() >= 1
    for job_id in ids["slurm"] + ids["slurm_grouped"]:
        assert f"Launching batch job {job_id} " in slurmd_log
        logs = list((workdir).glob(f"slurm*/results/logs/slurm/**/{job_id}.log"))
        assert logs and "Finished jobid" in logs[0].read_text()


def test_grouping_packs_short_cells_into_batches(runs):
    """The old ``grouping`` key now means batching on: the same batch jobs."""
    _, ids, _, _ = runs
    assert len(ids["slurm_grouped"]) == len(ids["slurm"]) == smoke_batches()


@pytest.mark.parametrize("name", ["slurm", "slurm_grouped"])
def test_slurm_results_equal_local_results_bitwise(runs, name):
    workdir = runs[0]
    files = slurm_local.result_files(workdir / "local")
    assert len(files) == 4  # three cells and the merged file
    assert slurm_local.compare_runs(workdir / name, workdir / "local") == {}


def test_daemons_are_stopped(runs):
    cluster = runs[3]
    assert not cluster.procs
    if cluster.foreign_munged:  # a munged that was running before is left running
        assert slurm_local.munge_answers()
    else:
        assert not slurm_local.MUNGE_SOCKET.exists()
