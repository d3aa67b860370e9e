"""The import statements of a source file, parsed once per content.

``sweep.code_files`` follows a module's imports (without importing it) to find the files a
cell's code version covers; every Snakemake start, ``bnnsweep plan`` and fit job does so
for the modules of its methods. Parsing them all with ``ast`` costs about 0.3 s of CPU a
process, so the statements found are kept in the user cache (``user_cache_dir()``), keyed by
the SHA-256 of the file's bytes: an edited file is a new key and is parsed again, so the
cache can only save time, never give the imports of another version of a file. Resolving the
statements to files is left to the caller, as it depends on which files exist.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from ..runtime.user_cache import cache_path, read_json, write_json

CACHE_NAME = "code_imports_v1.json"
MAX_ENTRIES = 1000
"""Entries kept in the cache file: the package's modules several times over (checkouts and
edits share it), and small enough (about 0.5 MB) to read in each process in milliseconds."""

Statement = tuple[int | None, str, tuple[str, ...]]
"""``(level, module, names)`` of ``from <level dots><module> import <names>``; level None
for ``import <names>``."""

_cache: dict[str, list] | None = None
_new: dict[str, list] = {}


def cache_file() -> Path | None:
    return cache_path(CACHE_NAME)


def parse(text: str, filename: str = "<source>") -> list[Statement]:
    """Every import statement in ``text``, at any depth (lazy imports in functions too)."""
    found: list[Statement] = []
    for node in ast.walk(ast.parse(text, filename=filename)):
        if isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Import):
            found.append((None, "", tuple(a.name for a in node.names)))
    return found


def _loaded() -> dict[str, list]:
    global _cache
    if _cache is None:
        data = read_json(cache_file())
        _cache = data if isinstance(data, dict) else {}
    return _cache


def _as_statements(entry) -> list[Statement] | None:
    """A cache entry back as statements, or None if it is not a well-formed one."""
    try:
        return [
            (None if level is None else int(level), str(module), tuple(map(str, names)))
            for level, module, names in entry
        ]
    except (TypeError, ValueError):
        return None


def import_statements(path: Path) -> list[Statement]:
    """The import statements of the file at ``path`` (``parse``), from the cache when a file
    of the same bytes was parsed before."""
    data = Path(path).read_bytes()
    key = hashlib.sha256(data).hexdigest()
    cached = _new.get(key, _loaded().get(key))
    statements = _as_statements(cached) if cached is not None else None
    if statements is None:
        statements = parse(data.decode(), filename=str(path))
        _new[key] = [[level, module, list(names)] for level, module, names in statements]
    return statements


def save() -> None:
    """Write the statements parsed since the last save into the cache file (nothing when
    there are none); a cache that cannot be written costs a parse next time, nothing else."""
    if not _new:
        return
    merged = {**_loaded(), **_new}
    if len(merged) > MAX_ENTRIES:
        merged = dict(list(merged.items())[-MAX_ENTRIES:])
    if write_json(cache_file(), merged):
        _loaded().update(_new)
        _new.clear()
