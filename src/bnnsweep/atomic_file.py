"""Files written whole or not at all: a temporary file beside the target, renamed over it.

Cells, merged files, prepared datasets, figures and tables are all written this way, so a
job killed or a disk filled half-way never leaves a file that looks complete.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, write) -> Path:
    """``write(temporary path)`` into the target directory, fsync, then rename over
    ``path``, so that an interrupted write never leaves a file that looks complete (a write
    killed half-way leaves only ``.<name>.<random>.tmp<suffix>``, which
    ``remove_stale_temporaries`` clears). The file
    gets the permissions the umask gives a new file (0644 under the usual 022). A symbolic
    link, directory, FIFO or device at ``path`` is refused, not replaced."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = (
            "symbolic link"
            if path.is_symlink()
            else "directory"
            if path.is_dir()
            else "special file"
        )
        raise ValueError(f"{path} is a {kind}, not a regular file: refusing to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent
    )
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600: collaborators could not read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def remove_stale_temporaries(output: str | os.PathLike) -> list[Path]:
    """Delete temporary files an earlier, killed write of ``output`` left beside it
    (``.<name>.*.tmp<suffix>``). Only one job writes a given output at a time."""
    output = Path(output)
    pattern = f".{output.name}.*.tmp{output.suffix}"
    stale = list(output.parent.glob(pattern)) if output.parent.is_dir() else []
    for path in stale:
        path.unlink(missing_ok=True)
    return stale
