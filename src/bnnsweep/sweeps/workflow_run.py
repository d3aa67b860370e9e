"""The Snakemake command line that runs this project's workflow in another directory: tests,
benchmarks and the local SLURM check run sweeps in temporary working directories."""

from __future__ import annotations

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
