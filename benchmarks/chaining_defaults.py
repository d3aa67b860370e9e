"""``chaining`` from its defaults on the robot arm (tanh units, Neal's hyperpriors), one cell
per seed through the runner, as a sweep fits it: the stored ln p(D), its s.e., the status,
the stepping stone and TI of the ladder, round trips, the weakest swap, the lambda = 1
states' share under the prior's label (mass outside every valley's Gaussian) and the fit CPU. The
spread over seeds is set against the mean reported s.e. (issue 33 asks s.d. <= 1.5 x mean
s.e.).

    python benchmarks/chaining_defaults.py --hidden 8 --seeds 0 1 2 3 4

``--set KEY=VALUE`` overrides a setting of the estimator's own section (``valley_smc`` by
default, e.g. ``--set particles=512``; with ``--estimator valley_tempering`` e.g. ``--set
tail_dof=3``); ``--target`` as chaining's (default ``auto``: collapsed where it applies). The
tempering's columns (TI, round trips, swaps) are NaN for SMC cells.

Long: a cell at H = 8 takes 10-12 minutes of CPU (a 64-start valley search, then 24 rungs
x 8 ladders x 2,800 iterations); H = 4 2-3 (measured on a loaded 2-core machine).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr
import yaml

from bnnsweep.runner import fit_cell_to_file
from bnnsweep.sweeps.sweep import Cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=8)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="valley_tempering settings over the defaults (e.g. tail_dof=3)")  # fmt: skip
    parser.add_argument("--target", default="auto", choices=("auto", "full", "collapsed"))
    parser.add_argument("--estimator", default="valley_smc")
    args = parser.parse_args()
    overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            started = time.process_time()
            axes = (("hidden", args.hidden),)
            settings = {"activation": "tanh", "hidden": args.hidden, "target": args.target,
                        "estimator": args.estimator}  # fmt: skip
            if overrides:
                settings[args.estimator] = overrides
            cell = Cell("defaults", "robot_arm", "default", "chaining", "chaining", seed, axes,
                        settings)  # fmt: skip
            path = fit_cell_to_file(cell, Path(tmp) / f"seed{seed}.nc", log=lambda *_: None)
            with xr.open_dataset(path) as ds:
                row = (seed, float(ds.log_evidence), float(ds.log_evidence_se), ds.status.item(),
                       float(ds.get("diag_log_evidence_ti", np.nan)),
                       float(ds.get("diag_round_trips", np.nan)),
                       float(ds.get("diag_swap_accept_min", np.nan)), time.process_time() - started,
                       float(ds.get("diag_prior_occupancy", np.nan)),
                       float(ds.get("diag_log_evidence_drift", np.nan)),
                       float(ds.get("diag_log_evidence_drift_se", np.nan)))  # fmt: skip
            rows.append(row)
            print(f"H = {args.hidden} seed {row[0]}: {row[1]:.2f} +- {row[2]:.2f} {row[3]} | TI "
                  f"{row[4]:.2f} | round trips {row[5]:.1f} per ladder | swap min {row[6]:.2f} "
                  f"| prior's label at lambda = 1 {row[8]:.2f} | drift {row[9]:+.2f} +- "
                  f"{row[10]:.2f} | {row[7]:.0f} s CPU",
                  flush=True)  # fmt: skip
    values, ses = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    ok = [r for r in rows if r[3] == "ok"]
    print(f"mean {values.mean():.2f}, s.d. over seeds {values.std(ddof=1):.2f}, mean reported "
          f"s.e. {ses.mean():.2f}; status ok {len(ok)} of {len(rows)}")  # fmt: skip


if __name__ == "__main__":
    main()
