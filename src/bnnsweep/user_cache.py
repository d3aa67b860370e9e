"""The user's cache folder for bnnsweep: ``$XDG_CACHE_HOME/bnnsweep``, i.e.
``~/.cache/bnnsweep`` (the XDG base-directory convention). What is kept there can always be
made again: compiled programs (``jax_runtime``), the figure theme (``figures.theme``), the
import statements behind code versions (``code_imports``)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/bnnsweep``, else ``~/.cache/bnnsweep`` (not created here); None
    when there is neither (no home directory): then nothing is cached."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no HOME and no password-database entry
            return None
    return Path(base) / "bnnsweep"
