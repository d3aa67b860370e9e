"""Same config and seeds, byte-identical data variables in every cell file and in the merged
file: across runs, and across ``--cores 1`` and ``--cores 2``. (Local against SLURM is in
tests/test_slurm.py.) Provenance variables (runtime, creation time, revision) are exempt."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from bnnsweep.compare import differing_variables

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow


def sweep(workdir: Path, cores: int) -> Path:
    workdir.mkdir(parents=True)
    shutil.copy(ROOT / "config" / "smoke.yaml", workdir / "smoke.yaml")
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores)]
    cmd += ["--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir)]
    cmd += ["--configfile", str(workdir / "smoke.yaml")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return workdir


def results(workdir: Path) -> list[Path]:
    return sorted(
        p.relative_to(workdir)
        for p in (workdir / "results" / "smoke").rglob("*.nc")
        if not p.name.startswith(".")
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("determinism")
    return {
        "cores2_a": sweep(base / "cores2_a", 2),
        "cores2_b": sweep(base / "cores2_b", 2),
        "cores1": sweep(base / "cores1", 1),
    }


@pytest.mark.parametrize("other", ["cores2_b", "cores1"])
def test_every_result_file_is_bitwise_identical(runs, other):
    files = results(runs["cores2_a"])
    assert len(files) == 4 and files == results(runs[other])
    for rel in files:
        assert differing_variables(runs["cores2_a"] / rel, runs[other] / rel) == [], rel


def test_comparison_detects_a_one_ulp_change(runs, tmp_path):
    """The check above can fail: one value moved by one unit in the last place is found."""
    rel = Path("results/smoke/merged.nc")
    with xr.open_dataset(runs["cores1"] / rel) as ds:
        changed = ds.load()
    values = changed.test_rmse.values.copy()
    values[0] = np.nextafter(values[0], np.inf)
    changed["test_rmse"] = (changed.test_rmse.dims, values)
    changed.to_netcdf(tmp_path / "changed.nc")
    assert differing_variables(runs["cores1"] / rel, tmp_path / "changed.nc") == ["test_rmse"]
