"""Code-aware reruns, end to end on a copy of the project: editing one method's module reruns
exactly that method's cells (its batch job, shared with laplace's short cells, keeps those);
editing a figure module merges and redraws the experiment that draws it (one job) and
refits nothing; with `code_reruns: false` an edit reruns nothing."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import xarray as xr

from bnnsweep.sweeps.workflow_run import snakemake_command

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow
CELLS = "results/smoke/cells"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the Snakefile, rules and package, and a finished smoke sweep run with it."""
    copy = tmp_path_factory.mktemp("code_reruns") / "project"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "results", ".snakemake")
    copy.mkdir()
    for name in ("Snakefile", "workflow", "src", "config", "envs"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy(source, copy / name)
    work = copy / "work"
    work.mkdir()
    shutil.copy(ROOT / "config" / "smoke.yaml", work / "smoke.yaml")
    run(copy)
    return copy


def run(copy: Path, *extra: str) -> str:
    """Snakemake of the copy, with the copy's package imported (by Snakemake and its jobs)."""
    env = {**os.environ, "PYTHONPATH": str(copy / "src")}
    cmd = snakemake_command(
        copy, copy / "work", copy / "work" / "smoke.yaml", "--cores", "2", *extra
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def planned_rules(copy: Path, *extra: str) -> set[str]:
    out = run(copy, "--dry-run", "--quiet", "host", *extra)  # the job blocks
    return {
        line.split()[-1].rstrip(":")
        for line in out.splitlines()
        if line.startswith(("rule ", "localrule "))
    }


def fits(copy: Path) -> dict[str, int]:
    """How often each cell was fitted (each fit appends 'fitting' to the cell's log)."""
    logs = (copy / "work" / "results" / "logs" / "smoke").glob("*/*/*.log")
    return {f"{p.parent.name}/{p.stem}": p.read_text().count("fitting ") for p in logs}


def versions(copy: Path) -> dict[str, str]:
    out = {}
    for path in (copy / "work" / CELLS).rglob("*.nc"):
        with xr.open_dataset(path) as ds:
            out[f"{path.parent.name}/{path.stem}"] = ds.attrs["code_version"]
    return out


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit\n")


def test_nothing_to_do_after_a_finished_run(project):
    assert planned_rules(project) == set()


def test_editing_a_method_module_reruns_exactly_its_cells(project):
    before_fits, before_versions = fits(project), versions(project)
    assert set(before_fits.values()) == {1} and len(before_fits) == 3
    edit(project / "src" / "bnnsweep" / "methods" / "map_early_stopping.py")
    planned = planned_rules(project)
    # the one batch of the smoke sweep's short cells (laplace's and map's): rerun, it
    # refits the map cells only (fit-batch keeps the current ones)
    assert {r for r in planned if r.startswith("fit_")} == {"fit_smoke__laplace_to_map__0"}
    run(project)
    after_fits, after_versions = fits(project), versions(project)
    for cell, n in after_fits.items():
        refit = cell.startswith("map/")
        assert n == before_fits[cell] + refit, cell
        assert (after_versions[cell] != before_versions[cell]) == refit, cell
    assert planned_rules(project) == set()


def test_editing_a_figure_module_redraws_only_the_figures(project):
    before = fits(project)
    edit(project / "src" / "bnnsweep" / "figures" / "occam_hill.py")
    # the merge, and the spec of the cells it checks (a temporary file, written again)
    assert planned_rules(project) == {"batch_spec", "merge_and_draw_smoke", "all"}
    out = run(project, "--dry-run", "--quiet", "host")
    outputs = [line for line in out.splitlines() if line.strip().startswith("output:")]
    drawn = [line for line in outputs if "figures/" in line]
    assert len(drawn) == 1 and "figures/occam_hill.png" in drawn[0]
    assert all("figures/" in line or "/batches/merge-" in line for line in outputs), outputs
    run(project)
    assert fits(project) == before


def test_editing_the_metrics_refits_every_cell(project):
    """metrics.py sets every cell's numbers: part of every method's code version (issue 36),
    so a table never mixes two definitions of RMSE."""
    before = fits(project)
    edit(project / "src" / "bnnsweep" / "metrics.py")
    run(project)
    assert fits(project) == {cell: n + 1 for cell, n in before.items()}
    assert planned_rules(project) == set()


def test_editing_data_preparation_prepares_again_and_keeps_cells_on_unchanged_data(project):
    """The preparing code's version reruns the data's preparation; cells are refitted only
    if the prepared data came out different (their key records its checksum)."""
    before = fits(project)
    edit(project / "src" / "bnnsweep" / "datasets" / "preprocess.py")
    assert "prepare_data" in planned_rules(project)
    run(project)
    assert fits(project) == before
    assert planned_rules(project) == set()


def test_code_reruns_false_keeps_cells_made_by_older_code(project):
    before = fits(project)
    off = ("--config", "code_reruns=False")
    run(project, *off)  # the batch specs change once (no code versions): every cell is kept
    assert fits(project) == before
    edit(project / "src" / "bnnsweep" / "methods" / "laplace.py")
    assert planned_rules(project, *off) == set()
    run(project, *off)
    assert fits(project) == before
