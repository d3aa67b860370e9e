"""The user's cache folder for bnnsweep: ``$XDG_CACHE_HOME/bnnsweep``, i.e.
``~/.cache/bnnsweep`` (the XDG base-directory convention). What is kept there can always be
made again: compiled programs (``jax_runtime``), the figure theme (``figures.theme``), the
import statements behind code versions (``code_imports``). So a cache file that is missing,
damaged or cannot be written costs the time to make its content again, never an error."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..cells.atomic_file import WriteError, write_atomic


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


def cache_path(*parts: str) -> Path | None:
    """``user_cache_dir() / parts``, or None when nothing is cached."""
    base = user_cache_dir()
    return None if base is None else base.joinpath(*parts)


def read_json(path: Path | None):
    """The JSON content of cache file ``path``; None when there is none or it is unreadable."""
    if path is None:
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path | None, content) -> bool:
    """Write ``content`` as JSON to cache file ``path``, whole or not at all
    (``atomic_file.write_atomic``); False when there is no cache or it cannot be written."""
    if path is None:
        return False
    try:
        write_atomic(path, lambda tmp: Path(tmp).write_text(json.dumps(content)))
    except (WriteError, ValueError):
        return False
    return True
