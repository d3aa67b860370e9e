"""Benchmark: how the workflow scales and what it costs per job.

1. DAG: ``snakemake --dry-run`` of a generated sweep of ``--dag-cells`` cells (default
   100,000: the ``exact`` method on toy_sine over that many seeds, batched by the default
   ``batching``) in a temporary directory; prints the wall time to plan the batches and build
   the DAG (target: under 120 s for 100,000 cells).
2. Trivial cells: ``--cells`` (default 500) ``exact`` cells run locally with ``snakemake
   --cores C``; the fit time of each cell is its ``runtime_s`` (the method alone, as recorded
   in the cell file) and its CPU time (attribute ``fit_cpu_s``). Two measures of what is
   spent outside fits (process start, imports, data loading, NetCDF writing, Snakemake
   scheduling, merge and table): by CPU time, the CPU time of Snakemake and all its jobs
   minus the fits' CPU time, over that CPU time (meaningful on a loaded machine too); by
   core time, ``C x wall - sum(runtime_s)`` over ``C x wall`` (which also counts a core left
   idle while the last jobs finish; only meaningful on an idle machine).
3. The default sweep (config/config.yaml) the same way, into a temporary results directory
   (target: under 10% of the time outside fits).
4. ``--adf``: PBP and EBP on boston_housing, energy and yacht (or ``--adf-datasets``),
   every split (config uci_adf.yaml restricted to them), through Snakemake with the default batching (one job
   per dataset and method, a vectorised ``fit_many``), against the same fits in one process
   (``fit_many`` per dataset and method, and one ``fit`` after another); ``--adf-one-per-job``
   also runs them one job per cell and compares every cell file bitwise. Each of these runs
   starts from an empty compile cache of its own.

``--batching none`` runs 2-4 with one job per cell, for the comparison.
Everything runs in temporary directories; nothing under the project's results/ is touched.
Writes benchmarks/results/bench_dag.json.
Run: python benchmarks/bench_dag.py [--cells N] [--dag-cells N] [--cores C] [--skip-default]
     [--adf] [--adf-one-per-job] [--adf-datasets NAME ...] [--batching auto|none]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from bnnsweep.sweeps.workflow_run import snakemake_command

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "bench_dag.json"
EXPERIMENT = "bench"


ADF_DATASETS = ["boston_housing", "energy", "yacht"]


SEEDS_PER_LABEL = 1000


def generated_config(n_cells: int, batching: str = "auto") -> dict:
    """A sweep of ``n_cells`` exact cells on toy_sine: up to ``SEEDS_PER_LABEL`` seeds, times
    as many method labels of ``exact`` as it takes (a config file holds at most
    ``config.MAX_CONFIG_NODES`` values, so 100,000 cells cannot be 100,000 listed seeds)."""
    seeds = min(n_cells, SEEDS_PER_LABEL)
    if n_cells % seeds:
        raise SystemExit(f"--cells/--dag-cells above {SEEDS_PER_LABEL} must be a multiple of it")
    labels = n_cells // seeds
    if labels == 1:
        methods = {"exact": {"hidden": 0}}
    else:
        methods = {f"exact_{k}": {"method": "exact", "hidden": 0} for k in range(labels)}
    return {
        "batching": {"mode": batching},
        "experiments": {
            EXPERIMENT: {
                "description": f"{n_cells} closed-form linear-regression cells",
                "datasets": ["toy_sine"],
                "seeds": list(range(seeds)),
                "figures": ["error_table"],
                "methods": methods,
            }
        },
    }


def children_cpu() -> float:
    """CPU seconds (user + system) of every finished descendant of this process."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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


def dag_seconds(n_cells: int, batching: str = "auto") -> tuple[float, float]:
    """Wall and CPU seconds of a dry run of ``n_cells`` generated cells."""
    with tempfile.TemporaryDirectory(prefix="bench_dag_") as tmp:
        workdir = Path(tmp)
        config = write_config(workdir, generated_config(n_cells, batching))
        cpu = children_cpu()
        wall = snakemake(workdir, config, "--dry-run", "--quiet", "all", "--cores", "1")
        return wall, children_cpu() - cpu


def fit_seconds(results: Path) -> tuple[float, float, int]:
    """Sum of runtime_s (wall) and of the fits' CPU time (attribute fit_cpu_s) over every
    cell under ``results``, and the number of cells."""
    import netCDF4

    wall = cpu = 0.0
    cells = 0
    for path in sorted(results.glob("*/cells/*/*/*.nc")):
        if path.name.startswith("."):
            continue
        with netCDF4.Dataset(path) as nc:
            wall += float(nc["runtime_s"][...])
            cpu += float(getattr(nc, "fit_cpu_s", np.nan))
        cells += 1
    return wall, cpu, cells


def run_sweep(config: dict | Path, cores: int, batching: str = "auto", keep=None) -> dict:
    """Run a sweep locally in a temporary directory; wall and CPU time against summed fit
    time. ``keep``: copy the results directory there."""
    with tempfile.TemporaryDirectory(prefix="bench_run_") as tmp:
        workdir = Path(tmp)
        if isinstance(config, Path):
            raw = yaml.safe_load(config.read_text())
        else:
            raw = dict(config)
        raw["batching"] = {**raw.get("batching", {}), "mode": batching}
        path = write_config(workdir, raw)
        cpu = children_cpu()
        wall = snakemake(workdir, path, "--cores", str(cores), "--quiet", "progress", "rules")
        cpu = children_cpu() - cpu
        fits, fits_cpu, cells = fit_seconds(workdir / "results")
        jobs = len(list((workdir / "results").glob("logs/*/batches/*.log")))
        if keep is not None:
            shutil.copytree(workdir / "results", keep)
    outside = cores * wall - fits
    return {
        "cells": cells,
        "fit_jobs": jobs,
        "batching": batching,
        "cores": cores,
        "wall_s": wall,
        "cpu_s": cpu,
        "fit_s_total": fits,
        "fit_cpu_s_total": fits_cpu,
        "overhead_cpu_s_per_cell": (cpu - fits_cpu) / cells,
        "fraction_cpu_outside_fits": (cpu - fits_cpu) / cpu,
        "fraction_core_time_outside_fits": outside / (cores * wall),
    }


def report(name: str, r: dict) -> None:
    print(
        f"{name}: {r['cells']} cells in {r['fit_jobs']} fit jobs (batching {r['batching']}) on "
        f"{r['cores']} cores in {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU; fits "
        f"{r['fit_s_total']:.1f} s wall, {r['fit_cpu_s_total']:.1f} s CPU in total; "
        f"{r['overhead_cpu_s_per_cell']:.2f} CPU-s per cell outside fits; outside fits: "
        f"{100 * r['fraction_cpu_outside_fits']:.1f}% of the CPU time, "
        f"{100 * r['fraction_core_time_outside_fits']:.1f}% of the cores' wall time"
    )


def adf_config(datasets: list[str] | None = None) -> dict:
    """config/uci_adf.yaml restricted to ``datasets`` (boston_housing, energy and yacht, the
    issue's comparison, by default)."""
    config = yaml.safe_load((ROOT / "config" / "uci_adf.yaml").read_text())
    experiment = config["experiments"]["uci_adf"]
    experiment["datasets"] = list(datasets or ADF_DATASETS)
    return {"experiments": {"uci_adf": experiment}}


def adf_in_one_process(config: dict, vectorise: bool) -> dict:
    """The ADF fits of ``config`` in this process, per dataset and method one ``fit_many``
    (``vectorise``, as a throwaway script would) or one ``fit`` after another; CPU seconds
    of the fits and of the whole."""
    from bnnsweep import datasets
    from bnnsweep.methods import get_method
    from bnnsweep.sweeps.config import expand, validate

    start = time.process_time()
    cells = expand(validate(config))
    groups: dict[tuple, list] = {}
    for cell in cells:
        groups.setdefault((cell.method_name, cell.dataset), []).append(cell)
    fit_cpu = 0.0
    for (method_name, dataset), group in groups.items():
        method = get_method(method_name)
        data = datasets.load(dataset)
        splits = [data.split(c.split) for c in group]
        settings = method.settings(group[0].settings)
        t = time.process_time()
        if vectorise:
            method.fit_many(splits, settings, [c.rng() for c in group], log=lambda m: None)
        else:
            for split, cell in zip(splits, group, strict=True):
                method.fit(split, settings, cell.rng(), log=lambda m: None)
        fit_cpu += time.process_time() - t
    return {"cells": len(cells), "cpu_s": time.process_time() - start, "fit_cpu_s": fit_cpu}


def compare_results(a: Path, b: Path) -> dict:
    from bnnsweep.cells.compare import differing_variables

    files = sorted(p.relative_to(a) for p in a.glob("*/cells/**/*.nc"))
    differing = {str(f): d for f in files if (d := differing_variables(a / f, b / f))}
    return {"cells_compared": len(files), "differing": differing}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=500, help="trivial cells to run locally")
    parser.add_argument("--dag-cells", type=int, default=100_000, help="cells of the dry-run DAG")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--skip-default", action="store_true", help="skip the default sweep")
    parser.add_argument("--skip-dag", action="store_true", help="skip the dry-run DAG")
    parser.add_argument("--skip-trivial", action="store_true", help="skip the trivial cells")
    parser.add_argument("--adf", action="store_true", help="the ADF comparison (minutes)")
    parser.add_argument(
        "--adf-one-per-job", action="store_true", help="ADF also one job per cell, compared bitwise"
    )
    parser.add_argument("--batching", choices=["auto", "none"], default="auto")
    parser.add_argument(
        "--adf-datasets", nargs="+", default=ADF_DATASETS, help="the UCI sets of --adf"
    )
    parser.add_argument("--adf-one-process", type=int, choices=[0, 1], help=argparse.SUPPRESS)
    parser.add_argument(
        "--keep-default", type=Path, help="copy the default sweep's results here (for plan)"
    )
    args = parser.parse_args(argv)
    if args.adf_one_process is not None:
        config = adf_config(args.adf_datasets)
        print(json.dumps(adf_in_one_process(config, bool(args.adf_one_process))))
        return 0

    out: dict = {"load_average_1min_at_start": os.getloadavg()[0]}
    if not args.skip_dag:
        dag, dag_cpu = dag_seconds(args.dag_cells, args.batching)
        out["dag"] = {"cells": args.dag_cells, "seconds": dag, "cpu_s": dag_cpu, "target_s": 120}
        print(
            f"DAG of {args.dag_cells} cells (dry run): {dag:.1f} s wall, {dag_cpu:.1f} s CPU "
            "(target < 120 s)"
        )
    if not args.skip_trivial:
        out["trivial"] = run_sweep(generated_config(args.cells), args.cores, args.batching)
        report("trivial exact cells", out["trivial"])
    if not args.skip_default:
        out["default"] = run_sweep(
            ROOT / "config" / "config.yaml", args.cores, args.batching, keep=args.keep_default
        )
        report("default sweep (config/config.yaml)", out["default"])
        print("target: < 10% of the time outside fits for the default sweep")
    if args.adf:
        with tempfile.TemporaryDirectory(prefix="bench_adf_") as tmp:

            def cold_cache(name: str) -> None:
                """Each ADF run compiles its programs as a first run does: a cache of its
                own (shared, the later runs would load what the first compiled)."""
                os.environ["BNNSWEEP_JAX_CACHE"] = str(Path(tmp) / f"jax_cache_{name}")

            batched = Path(tmp) / "batched"
            cold_cache("workflow")
            config = adf_config(args.adf_datasets)
            out["adf_workflow"] = run_sweep(config, args.cores, "auto", keep=batched)
            report("ADF through the workflow", out["adf_workflow"])
            for vectorise in (True, False):
                # each in a fresh process with a cache of its own, so that neither reuses
                # the other's compilations
                cold_cache(f"one_process_{vectorise}")
                cpu = children_cpu()
                one = json.loads(
                    subprocess.run(
                        [sys.executable, __file__, "--adf-one-process", str(int(vectorise)),
                         "--adf-datasets", *args.adf_datasets],
                        capture_output=True, text=True, check=True,
                    ).stdout.splitlines()[-1]
                )  # fmt: skip
                # the whole process too: interpreter, imports and all, as the workflow's
                # CPU time counts each of its processes whole
                one["process_cpu_s"] = children_cpu() - cpu
                name = "fit_many" if vectorise else "fit one after another"
                out[f"adf_one_process_{'vectorised' if vectorise else 'sequential'}"] = one
                workflow = out["adf_workflow"]["cpu_s"]
                print(
                    f"ADF in one process ({name}): {one['cells']} cells, {one['cpu_s']:.1f} s "
                    f"CPU from its first import of bnnsweep ({one['fit_cpu_s']:.1f} s fitting), "
                    f"{one['process_cpu_s']:.1f} s for the whole process; workflow / this = "
                    f"{workflow / one['cpu_s']:.2f}, {workflow / one['process_cpu_s']:.2f} "
                    "against the whole process (target <= 1.2)"
                )
            if args.adf_one_per_job:
                single = Path(tmp) / "single"
                cold_cache("one_per_job")
                out["adf_one_per_job"] = run_sweep(config, args.cores, "none", keep=single)
                report("ADF one job per cell", out["adf_one_per_job"])
                out["adf_bitwise"] = compare_results(batched, single)
                print(f"batched against one job per cell: {out['adf_bitwise']}")
    out["load_average_1min_at_end"] = os.getloadavg()[0]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
