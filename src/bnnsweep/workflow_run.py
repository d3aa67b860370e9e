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
