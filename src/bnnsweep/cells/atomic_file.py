"""Files written whole or not at all: a temporary file beside the target, renamed over it.

Cells, merged files, prepared datasets, figures and tables are all written this way, so a
job killed or a disk filled half-way never leaves a file that looks complete.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import tempfile
from pathlib import Path

from .file_seal import seal

_WRITE_HINTS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EFBIG: "the file size limit was reached",
    errno.EACCES: "the directory is not writable",
    errno.EPERM: "the directory is not writable",
    errno.EROFS: "the file system is read-only",
}


class WriteError(RuntimeError):
    """A result file could not be written (full disk, unwritable directory); no partial file
    is left under the output's name."""


def _write_hint(err: BaseException, output: Path) -> str:
    """Why a write failed, as far as the system tells: the errno, else (the HDF5 library
    reports every failed write as 'HDF error') the file size limit or the free space."""
    reason = _WRITE_HINTS.get(getattr(err, "errno", None))
    if reason is None:
        size_limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if size_limit != resource.RLIM_INFINITY:
            reason = f"the file size limit (ulimit -f) is {size_limit} bytes"
    try:
        free = shutil.disk_usage(output.parent).free / 2**20
    except OSError:
        free = None
    if reason is None and free is not None and free < 100:
        reason = "the disk is full"
    space = f"; {free:.0f} MB free there" if free is not None else ""
    return f" ({reason}{space})" if reason else f" ({space[2:]})" if space else ""


def _umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(
    path: str | os.PathLike, write, sealed: bool = False, key: str | None = None
) -> Path:
    """``write(temporary path)`` into the target directory, fsync, then rename over
    ``path``, so that an interrupted write never leaves a file that looks complete (a write
    killed half-way leaves only ``.<name>.<random>.tmp<suffix>``, which
    ``remove_stale_temporaries`` clears). Any failure to write is a ``WriteError`` naming
    the file and, where the system says, why. The file gets the permissions the umask gives
    a new file (0644 under the usual 022). A symbolic link, directory, FIFO or device at
    ``path`` is refused, not replaced. With ``sealed``, the file ends with the checksum of
    its bytes, after ``key`` if one is given (``file_seal``)."""
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
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent
        )
        os.close(fd)
        write(tmp)
        if sealed:
            seal(tmp, key)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600: collaborators could not read
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # HDF5 reports a failed write as RuntimeError
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(err, WriteError):
            raise
        raise WriteError(f"cannot write {path}{_write_hint(err, path)}: {err}") from err
    except BaseException:
        if tmp is not None:
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
