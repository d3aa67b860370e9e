# bnnsweep: sweeps of Bayesian neural-network inference and model evidence.
# This file holds no science: it reads and validates the config, expands the cells and
# includes one rule file per stage. All mathematics lives in the `bnnsweep` package.
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("8.10")

from bnnsweep.sweeps.config import ConfigError, check_config_files, expand, validate
from bnnsweep.sweeps.jobsize import batching_settings, plan_batches
from bnnsweep.sweeps.result_check import (
    cell_states,
    merged_state,
    refit_marker,
    remerge_marker,
    remove_rerun_markers,
)
from bnnsweep.sweeps.runlock import (
    forget_owner,
    hold_results_dir,
    record_owner,
    take_working_directory,
)
from bnnsweep.sweeps.sweep_progress import print_summary, start_sweep_progress
from bnnsweep.sweeps.table_kinds import TABLE_KINDS
from bnnsweep.sweeps.sweep import (
    batch_spec,
    cell_index,
    data_code_version,
    figure_code_version,
    spec_file,
    spec_text,
    write_spec_file,
)
from bnnsweep.sweeps.workflow_run import conda_env_file, quiet_job_blocks

# The default sweep, unless another config is given with --configfile (which would otherwise
# be merged into this one, adding its experiments to the default ones).
if not config:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


# A sweep killed with SIGKILL leaves Snakemake's lock behind; the same command resumes it:
# the lock is removed when the run that took it is provably gone, never otherwise; this run
# marks itself alive until it ends (bnnsweep.sweeps.runlock.take_working_directory).
if workflow.is_main_process:
    take_working_directory(".snakemake", log=lambda msg: print(msg, file=sys.stderr))
    # the profile's quiet: [reason, host]: Snakemake's per-job blocks and scheduler lines
    # dropped, errors kept (bnnsweep.sweeps.workflow_run.JobBlocks)
    quiet_job_blocks(workflow.output_settings.quiet)


onsuccess:
    forget_owner(".snakemake")
    remove_rerun_markers(RESULTS)
    # cells by status and method, the slowest, the figures (bnnsweep.sweeps.sweep_progress.summary)
    print_summary(CELLS, RESULTS, lambda line: print(line, file=sys.stderr), log)


onerror:
    forget_owner(".snakemake")
    remove_rerun_markers(RESULTS)
    print_summary(CELLS, RESULTS, lambda line: print(line, file=sys.stderr), log)


onstart:
    # one run at a time writes to a results directory, from whichever working directory
    try:
        RESULTS_HELD.append(hold_results_dir(RESULTS))
    except ValueError as err:
        print(f"bnnsweep: {err}", file=sys.stderr)
        raise SystemExit(1)
    record_owner(".snakemake")
    # every 30 s, a line with the cells this run has fitted of those it fits (the ones not
    # current when it started) and the time left (bnnsweep.sweeps.sweep_progress)
    start_sweep_progress(
        {f"{RESULTS}/{key}.nc": cell for key, cell in CELLS.items()},
        lambda line: print(line, file=sys.stderr, flush=True),
        to_fit={path for path, (state, _) in STATES.items() if state != "current"},
    )


# Cells, and the batches (one job each) they are fitted in: bnnsweep.sweeps.jobsize.plan_batches,
# from the config's `batching` section.
try:
    if workflow.is_main_process:  # a key given twice, an alias bomb
        check_config_files(workflow.configfiles)
    CONFIG = validate(config)
    CELLS = cell_index(expand(CONFIG))
    BATCHES = plan_batches(
        list(CELLS.values()), batching_settings(CONFIG), CONFIG.get("devices")
    )
except (ConfigError, ValueError) as err:
    sys.stderr.write(f"bnnsweep: invalid configuration: {err}\n")
    sys.exit(1)

RESULTS = CONFIG["results_dir"]
RESULTS_HELD = []  # the results directory's lock, held while this run lasts (onstart)
CODE_RERUNS = CONFIG["code_reruns"]
FIGURE_FORMATS = CONFIG["figure_format"]
# the jobs' conda environment (--software-deployment-method conda): envs/bnnsweep.yaml with
# this checkout's absolute path and lock file
CONDA_ENV = str(conda_env_file(Path(workflow.basedir), Path(".snakemake") / "bnnsweep"))


envvars:
    "PATH",


# Jobs find the `bnnsweep` command of the environment Snakemake itself runs in, even when
# that environment (e.g. a virtualenv) was not activated.
os.environ["PATH"] = os.pathsep.join(
    [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
)
EXPERIMENTS = CONFIG["experiments"]


# What is current, decided here by reading (bnnsweep.sweeps.result_check.cell_states: each cell
# file's seal and key against the config's cell, its prepared data and its method's code);
# nothing is written while the workflow is parsed (a dry run, --lint, --report, --summary).
# A batch holding a cell that is missing, corrupt or stale gets an extra output, a marker
# that Snakemake touches when the batch is done and that `all` asks for: so the batch runs
# (fit-batch refits exactly those cells), then the merge.
STATES = cell_states(
    {f"{RESULTS}/{key}.nc": cell for key, cell in CELLS.items()},
    RESULTS,
    CODE_RERUNS,
)
if workflow.is_main_process:
    for path, (state, why) in STATES.items():
        if state != "current" and state != "missing":
            print(f"bnnsweep: {path} is {state}: {why}; refitting it", file=sys.stderr)


wildcard_constraints:
    experiment="[a-z0-9_]+",
    dataset="[a-z0-9_]+",
    method="[a-z0-9_]+",
    cell="[A-Za-z0-9][A-Za-z0-9_-]*",
    kind="[a-z_]+",


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/fit.smk"
include: "workflow/rules/collect.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        [merged_file(e) for e in EXPERIMENTS],
        [figure_files(e) for e in EXPERIMENTS],
        [redo_marker(b) for b in BATCHES if batch_needs_refit(b)],
        [remerge_outputs(e) for e in EXPERIMENTS],
        # a prepared dataset deleted while every cell is current is prepared again
        sorted({f"{RESULTS}/data/{c.dataset}.nc" for c in CELLS.values()}),
