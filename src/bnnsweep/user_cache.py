"""The user's cache folder for bnnsweep: ``$XDG_CACHE_HOME/bnnsweep``, i.e.
``~/.cache/bnnsweep`` (the XDG base-directory convention). What is kept there can always be
made again: compiled programs (``jax_runtime``), the figure theme (``figures.theme``)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/bnnsweep``, else ``~/.cache/bnnsweep`` (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bnnsweep"
