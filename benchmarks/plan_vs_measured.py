"""The plan's estimate of each cell's fit against the fit's measured CPU time.

    python benchmarks/plan_vs_measured.py CONFIG [RESULTS_DIR] [--cells]
    python benchmarks/plan_vs_measured.py CONFIG --fit K [--only LABEL ...] [--cells]

For every cell of CONFIG whose file exists under RESULTS_DIR (default: the config's
``results_dir``), the uncalibrated estimate ``bnnsweep plan`` makes before any cell exists
(``jobsize.packing_seconds``: each method's work-model bound times its ``Work.typical``)
beside the CPU time the fit took (the cell's ``fit_cpu_s``). One row per experiment and
method label: the cells measured, the summed estimate and measured CPU seconds, their ratio
(estimate / measured; within 0.5-2 is the issue-35 target) and the range of the per-cell
ratios; ``--cells`` prints a row per cell as well. Cells of methods without a work model are
listed with no estimate.

With ``--fit K``, nothing is read from a results directory: K cells of each experiment and
label (spread over its list: the first, the last, and between) are fitted here, one after
another in this process, writing nothing, and their ``fit_cpu_s`` measured as a cell file
records it (``runner.fit_cell``: the process's CPU time during the method's ``fit``). On a
machine shared with other work this is the measurement to use: CPU time, not wall time.

The cost models' docstrings name the run this was checked on (a sweep run with
``snakemake --configfile CONFIG``, then this script on its results).
"""

from __future__ import annotations

import os

# One BLAS thread, as every fit job has (workflow/rules/fit.smk, bnnsweep.cli): numpy's
# OpenBLAS threads spin while they wait, and on a loaded 2-core machine a fit's CPU time
# was up to 9.5 times that of the same fit on one thread (toy vi_gauss H = 3: 26.5 s
# against 2.8 s), which is what an earlier calibration measured. Set before numpy is
# imported; an explicit setting wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
from pathlib import Path  # noqa: E402

import netCDF4  # noqa: E402

from bnnsweep.cells.file_seal import seal_problem  # noqa: E402
from bnnsweep.sweeps.config import expand, load  # noqa: E402
from bnnsweep.sweeps.jobsize import packing_seconds  # noqa: E402
from bnnsweep.sweeps.sweep import cell_index  # noqa: E402


def measured_cpu(path: Path) -> float | None:
    """A cell file's ``fit_cpu_s`` (None when the file is missing, damaged or has none)."""
    if not path.is_file() or seal_problem(path) is not None:
        return None
    with netCDF4.Dataset(path) as nc:
        if "fit_cpu_s" not in nc.ncattrs():
            return None
        return float(nc.getncattr("fit_cpu_s"))


def spread(members: list, k: int) -> list:
    """``k`` of ``members`` evenly spaced from the first to the last."""
    if k >= len(members):
        return list(members)
    if k == 1:
        return [members[0]]
    return [members[round(i * (len(members) - 1) / (k - 1))] for i in range(k)]


def fitted_cpu(cell) -> float:
    """The fit's CPU time of ``cell`` fitted here (nothing written)."""
    from bnnsweep.runner import fit_cell

    return float(fit_cell(cell, log=lambda *_: None).attrs["fit_cpu_s"])


def compare(
    config_path: str, results_dir: str | None, fit: int = 0, only=()
) -> tuple[list[dict], list[dict]]:
    """(rows per experiment and label, rows per cell) of estimate against measurement: of
    the cell files under ``results_dir``, or with ``fit`` of that many cells per label fitted
    here (``only``: those labels)."""
    config = load(config_path)
    results = Path(results_dir or config["results_dir"])
    index = cell_index(expand(config))
    chosen = index
    if fit:
        by_label: dict[tuple[str, str], list[str]] = {}
        for key, cell in index.items():
            if not only or cell.method in only:
                by_label.setdefault((cell.experiment, cell.method), []).append(key)
        chosen = {k: index[k] for keys in by_label.values() for k in spread(keys, fit)}
    cells = []
    for key, cell in chosen.items():
        cpu = fitted_cpu(cell) if fit else measured_cpu(results / f"{key}.nc")
        if cpu is not None:
            cells.append({"key": key, "cell": cell, "cpu": cpu, "estimate": packing_seconds(cell)})
            if fit:
                print(f"{key}: estimate {cells[-1]['estimate']}, CPU {cpu:.2f} s", flush=True)
    rows: dict[tuple[str, str], dict] = {}
    for c in cells:
        cell = c["cell"]
        row = rows.setdefault(
            (cell.experiment, cell.method),
            {"label": f"{cell.experiment} / {cell.method}", "method": cell.method_name,
             "cells": 0, "cpu": 0.0, "estimate": 0.0, "ratios": []},
        )  # fmt: skip
        row["cells"] += 1
        row["cpu"] += c["cpu"]
        if c["estimate"] is None:
            row["estimate"] = None
        elif row["estimate"] is not None:
            row["estimate"] += c["estimate"]
            row["ratios"].append(c["estimate"] / max(c["cpu"], 1e-3))
    return list(rows.values()), cells


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("results_dir", nargs="?")
    parser.add_argument("--cells", action="store_true", help="a row per cell as well")
    parser.add_argument("--fit", type=int, default=0, help="fit this many cells per label here")
    parser.add_argument("--only", nargs="*", default=(), help="with --fit: only these labels")
    args = parser.parse_args(argv)
    rows, cells = compare(args.config, args.results_dir, args.fit, tuple(args.only))
    print("| experiment / label | method | cells | estimate s | measured CPU s | ratio | "
          "per-cell ratio min / median / max |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    total_est = total_cpu = 0.0
    for row in rows:
        if row["estimate"] is None:
            print(f"| {row['label']} | {row['method']} | {row['cells']} | no work model | "
                  f"{row['cpu']:.1f} | | |")  # fmt: skip
            continue
        ratios = row["ratios"]
        spread = f"{min(ratios):.2f} / {statistics.median(ratios):.2f} / {max(ratios):.2f}"
        ratio = row["estimate"] / max(row["cpu"], 1e-3)
        print(f"| {row['label']} | {row['method']} | {row['cells']} | {row['estimate']:.1f} | "
              f"{row['cpu']:.1f} | {ratio:.2f} | {spread} |")  # fmt: skip
        total_est += row["estimate"]
        total_cpu += row["cpu"]
    print(f"\n{len(cells)} cells measured; estimate {total_est:.0f} s, measured CPU "
          f"{total_cpu:.0f} s, ratio {total_est / max(total_cpu, 1e-3):.2f}")  # fmt: skip
    if args.cells:
        print("\n| cell | estimate s | measured CPU s |\n|---|---|---|")
        for c in cells:
            est = "" if c["estimate"] is None else f"{c['estimate']:.2f}"
            print(f"| {c['key']} | {est} | {c['cpu']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
