"""Same config and seeds, byte-identical data variables in every cell file and in the merged
file: across runs, and across ``--cores 1`` and ``--cores 2``; for the compiled (JAX) core also
between a cold and a warm persistent compilation cache. (Local against SLURM is in
tests/test_slurm.py.) Provenance variables (runtime, creation time, revision) are exempt."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from bnnsweep.cells.compare import differing_variables

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow


SMOKE = ROOT / "config" / "smoke.yaml"
# a few seconds-long cells of every method on the compiled core (hmc, chaining with AIS,
# pbp and ebp batched by dataset)
COMPILED = ROOT / "tests" / "configs" / "compiled.yaml"


def sweep(workdir: Path, cores: int, config: Path = SMOKE, jax_cache: Path | None = None) -> Path:
    workdir.mkdir(parents=True)
    shutil.copy(config, workdir / config.name)
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores)]
    cmd += ["--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir)]
    cmd += ["--configfile", str(workdir / config.name)]
    env = dict(os.environ)
    if jax_cache is not None:
        env["BNNSWEEP_JAX_CACHE"] = str(jax_cache)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return workdir


def results(workdir: Path, experiments=("smoke",)) -> list[Path]:
    return sorted(
        p.relative_to(workdir)
        for experiment in experiments
        for p in (workdir / "results" / experiment).rglob("*.nc")
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


@pytest.fixture(scope="module")
def compiled_runs(tmp_path_factory):
    """The compiled cells twice: 2 cores compiling into an empty cache, then 1 core loading
    every program from that cache."""
    base = tmp_path_factory.mktemp("determinism_compiled")
    cache = base / "jax_cache"
    return {
        "cold_cores2": sweep(base / "cold_cores2", 2, COMPILED, cache),
        "warm_cores1": sweep(base / "warm_cores1", 1, COMPILED, cache),
    }


def test_compiled_core_is_bitwise_reproducible_across_cores_and_cache(compiled_runs):
    experiments = ("compiled", "compiled_adf")
    files = results(compiled_runs["cold_cores2"], experiments)
    assert len(files) == 10 and files == results(compiled_runs["warm_cores1"], experiments)
    assert any((compiled_runs["cold_cores2"].parent / "jax_cache").iterdir())
    for rel in files:
        a, b = compiled_runs["cold_cores2"] / rel, compiled_runs["warm_cores1"] / rel
        assert differing_variables(a, b) == [], rel
