"""Benchmark: how the workflow scales and what it costs per job.

1. DAG: ``snakemake --dry-run`` of a generated sweep of ``--dag-cells`` cells (default 10,000:
   the ``exact`` method on toy_sine over that many seeds) in a temporary directory; prints the
   wall time to build the DAG (target: under 60 s for 10,000 cells).
2. Trivial cells: ``--cells`` (default 500) ``exact`` cells run locally with ``snakemake
   --cores C``; the fit time of each cell is its ``runtime_s`` (the method alone, as recorded
   in the cell file), so ``C x wall - sum(runtime_s)`` is the core time spent outside fits
   (process start, imports, data loading, NetCDF writing, Snakemake scheduling, merge and
   table). Prints the per-job overhead (that, per fit job) and the fraction of the cores' wall
   time spent outside fits.
3. The default sweep (config/config.yaml) the same way, into a temporary results directory
   (target: under 10% of the time outside fits).

Everything runs in temporary directories; nothing under the project's results/ is touched.
Writes benchmarks/results/bench_dag.json.
Run: python benchmarks/bench_dag.py [--cells N] [--dag-cells N] [--cores C] [--skip-default]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import xarray as xr
import yaml

from bnnsweep.workflow_run import snakemake_command

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "bench_dag.json"
EXPERIMENT = "bench"


def generated_config(n_cells: int) -> dict:
    """A sweep of ``n_cells`` exact cells on toy_sine, one per seed."""
    return {
        "experiments": {
            EXPERIMENT: {
                "description": f"{n_cells} closed-form linear-regression cells",
                "datasets": ["toy_sine"],
                "seeds": list(range(n_cells)),
                "figures": ["error_table"],
                "methods": {"exact": {"hidden": 0}},
            }
        }
    }


def snakemake(workdir: Path, config: Path, *extra: str) -> float:
    """Run Snakemake on the project's Snakefile in ``workdir``; returns the wall seconds."""
    cmd = snakemake_command(ROOT, workdir, config, *extra)
    env = {
        **os.environ,
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return wall


def write_config(workdir: Path, config: dict) -> Path:
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def dag_seconds(n_cells: int) -> float:
    with tempfile.TemporaryDirectory(prefix="bench_dag_") as tmp:
        workdir = Path(tmp)
        config = write_config(workdir, generated_config(n_cells))
        return snakemake(workdir, config, "--dry-run", "--quiet", "all", "--cores", "1")


def fit_seconds(results: Path) -> tuple[float, int]:
    """Sum of runtime_s over every merged file under ``results``, and the number of cells."""
    total, cells = 0.0, 0
    for merged in sorted(results.glob("*/merged.nc")):
        with xr.open_dataset(merged) as ds:
            total += float(ds.runtime_s.sum())
            cells += ds.sizes["run"]
    return total, cells


def run_sweep(config: dict | Path, cores: int) -> dict:
    """Run a sweep locally in a temporary directory; wall time against summed fit time."""
    with tempfile.TemporaryDirectory(prefix="bench_run_") as tmp:
        workdir = Path(tmp)
        if isinstance(config, Path):
            path = workdir / config.name
            shutil.copy(config, path)
        else:
            path = write_config(workdir, config)
        wall = snakemake(workdir, path, "--cores", str(cores), "--quiet", "progress", "rules")
        fits, cells = fit_seconds(workdir / "results")
    outside = cores * wall - fits
    return {
        "cells": cells,
        "cores": cores,
        "wall_s": wall,
        "fit_s_total": fits,
        "overhead_s_per_job": outside / cells,
        "fraction_outside_fits": outside / (cores * wall),
    }


def report(name: str, r: dict) -> None:
    print(
        f"{name}: {r['cells']} cells on {r['cores']} cores in {r['wall_s']:.1f} s wall; "
        f"fits {r['fit_s_total']:.1f} s in total ({r['fit_s_total'] / r['cells']:.3f} s per cell); "
        f"overhead {r['overhead_s_per_job']:.2f} core-s per job; "
        f"{100 * r['fraction_outside_fits']:.1f}% of the cores' wall time outside fits"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=500, help="trivial cells to run locally")
    parser.add_argument("--dag-cells", type=int, default=10_000, help="cells of the dry-run DAG")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--skip-default", action="store_true", help="skip the default sweep")
    args = parser.parse_args(argv)

    out: dict = {"load_average_1min_at_start": os.getloadavg()[0]}
    dag = dag_seconds(args.dag_cells)
    out["dag"] = {"cells": args.dag_cells, "seconds": dag, "target_s": 60}
    print(f"DAG of {args.dag_cells} cells (dry run): {dag:.1f} s (target < 60 s)")

    out["trivial"] = run_sweep(generated_config(args.cells), args.cores)
    report("trivial exact cells", out["trivial"])
    if not args.skip_default:
        out["default"] = run_sweep(ROOT / "config" / "config.yaml", args.cores)
        report("default sweep (config/config.yaml)", out["default"])
        print("target: < 10% of the time outside fits for the default sweep")
    out["load_average_1min_at_end"] = os.getloadavg()[0]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
