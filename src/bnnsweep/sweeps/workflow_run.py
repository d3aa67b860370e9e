"""The workflow's dealings with Snakemake outside the rules: the command line that runs it in
another directory (tests, benchmarks and the local SLURM check run sweeps in temporary
working directories), the jobs' conda environment, and what a run prints (``JobBlocks``)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def snakemake_command(root: Path, workdir: Path, configfile: Path, *extra: str) -> list[str]:
    """``python -m snakemake`` on ``root``'s Snakefile with working directory ``workdir``.

    ``--configfile`` comes last because it takes several values: a target given after it
    would be read as another config file.
    """
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(Path(root) / "Snakefile"),
        "--directory",
        str(workdir),
        *extra,
        "--configfile",
        str(configfile),
    ]


def conda_env_file(root: Path, directory: Path) -> Path:
    """The conda environment of the workflow's jobs, ``envs/bnnsweep.yaml`` with the package
    installed from ``root`` by absolute path and pinned by ``requirements-lock.txt``: the
    env file's relative ``-e ..`` would be resolved against the copy Snakemake keeps under
    ``.snakemake/conda/``. Written under ``directory`` once, named by its content's hash."""
    import hashlib

    import yaml

    root = Path(root).resolve()
    env = yaml.safe_load((root / "envs" / "bnnsweep.yaml").read_text())
    deps = [d for d in env["dependencies"] if not isinstance(d, dict)]
    pip = [f"-c {root / 'requirements-lock.txt'}", f"-e {root}"]
    env["dependencies"] = [*deps, {"pip": pip}]
    text = "# written by bnnsweep.sweeps.workflow_run.conda_env_file from envs/bnnsweep.yaml\n"
    text += yaml.safe_dump(env, sort_keys=False)
    path = Path(directory) / f"env-{hashlib.sha256(text.encode()).hexdigest()[:12]}.yaml"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path.resolve()


# --- what a sweep prints: bnnsweep's lines, not Snakemake's per-job blocks -----------------

JOB_EVENTS = frozenset(
    {"job_info", "group_info", "shellcmd", "job_started", "job_finished", "progress",
     "resources_info"}
)  # fmt: skip
"""Snakemake's log events of each job (``snakemake_interface_logger_plugins.common.LogEvent``
values): the multi-line block of a job that starts (rule, inputs, outputs, the reason), its
"Execute n jobs", "Finished jobid" and "n of m steps done" lines."""
CHATTER = (
    "Select jobs to execute...",
    "Touching output file ",
    "Removing temporary output ",
    "Complete log(s): ",
    "Elapsed time: ",
)
"""Plain lines of Snakemake's scheduler and of its end, after the summary (which names the
log file itself)."""


class JobBlocks(logging.Filter):
    """Drops Snakemake's per-job records (``JOB_EVENTS``, ``CHATTER``); keeps the rest: the
    job counts at the start, errors with the failed job's rule and log, and bnnsweep's own
    lines (per fitted cell, progress, summary), which the jobs print to the terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(getattr(record, "event", "") or "") in JOB_EVENTS:
            return False
        return not (isinstance(record.msg, str) and record.msg.startswith(CHATTER))


def quiet_job_blocks(quiet, logger: logging.Logger | None = None) -> bool:
    """Install ``JobBlocks`` on the terminal handlers of Snakemake's logger (not its log file
    under .snakemake/log, which keeps every line) when its ``quiet`` setting (a set of
    ``Quietness``, ``workflow.output_settings.quiet``) is the workflow profile's: ``reason``
    without ``rules`` (profiles/default). ``--quiet host`` on the command line (the blocks
    back) or ``--quiet`` (everything quiet) leave Snakemake's own choice. Returns whether it
    was installed; installed once per handler."""
    names = {str(getattr(q, "name", q)).lower() for q in quiet or ()}
    if "reason" not in names or "rules" in names or "all" in names:
        return False
    if logger is None:
        from snakemake.logging import logger
    terminals = [
        h
        for h in logger.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    for handler in terminals or [logger]:
        if not any(isinstance(f, JobBlocks) for f in handler.filters):
            handler.addFilter(JobBlocks())
    return True
