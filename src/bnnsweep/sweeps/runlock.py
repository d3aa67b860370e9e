"""Resume a sweep whose Snakemake was killed, without a manual ``--unlock``.

Snakemake locks a working directory while it runs and removes the lock when it exits; a
SIGKILL or a power loss leaves the lock behind and the next run refuses to start. The
workflow therefore records which process holds the lock (``record_owner``, called once the
lock is taken) and, when a new run starts, removes the lock only if that process is gone
(``clear_stale_locks``): same host, no process with that id and start time, and no lock
newer than the record. A lock held by a live Snakemake, by one on another host, or taken
after the record (by a run that has not recorded itself yet) is left alone, so two
concurrent runs in one directory are still refused; a run that ends by itself removes its
record (``forget_owner``).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

OWNER_FILE = "bnnsweep_lock_owner.json"


def _start_time(pid: int) -> str | None:
    """A process's start time (clock ticks since boot) from /proc, or None if it is gone;
    where /proc is missing, whether the id is in use at all."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "alive"


def record_owner(snakemake_dir: str | Path = ".snakemake") -> None:
    """Record this process as the holder of the working directory's Snakemake lock."""
    path = Path(snakemake_dir) / OWNER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "start": _start_time(os.getpid())}
    path.write_text(json.dumps(owner))


def forget_owner(snakemake_dir: str | Path = ".snakemake") -> None:
    """Remove the owner record when the run ends by itself (success or error), so that it
    cannot outlive the run it describes."""
    (Path(snakemake_dir) / OWNER_FILE).unlink(missing_ok=True)


def clear_stale_locks(snakemake_dir: str | Path = ".snakemake", log=print) -> bool:
    """Remove the Snakemake locks of ``snakemake_dir`` if the run that took them has died.
    Returns whether locks were removed."""
    snakemake_dir = Path(snakemake_dir)
    locks = sorted((snakemake_dir / "locks").glob("*.lock"))
    owner_path = snakemake_dir / OWNER_FILE
    if not locks or not owner_path.exists():
        return False
    try:
        owner = json.loads(owner_path.read_text())
        host, pid, start = owner["host"], int(owner["pid"]), owner["start"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if host != socket.gethostname() or _start_time(pid) in (start, "alive"):
        return False
    recorded = owner_path.stat().st_mtime
    if any(lock.stat().st_mtime > recorded for lock in locks if lock.exists()):
        # taken after the recorded owner, by a run that has not recorded itself yet (it does
        # so ~1 s after locking): it may be alive, so its lock is never removed
        return False
    for lock in locks:
        lock.unlink(missing_ok=True)
    owner_path.unlink(missing_ok=True)
    log(f"bnnsweep: removed the Snakemake lock left by a run that was killed (pid {pid})")
    return True


# --- one run at a time per results directory -------------------------------------------------

RESULTS_LOCK = ".bnnsweep-run.lock"


def hold_results_dir(results_dir: str | os.PathLike) -> int:
    """Take the results directory for this run: an exclusive ``flock`` on
    ``<results_dir>/.bnnsweep-run.lock``, held until this process ends (the file
    descriptor returned), with this run's process, host and working directory written
    in it. Snakemake's own lock covers one working directory only; two runs from two
    working directories sharing one ``results_dir`` would fit every cell twice and delete
    each other's temporary files. A ValueError naming the other run when it is held."""
    import fcntl

    path = Path(results_dir) / RESULTS_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except (OSError, ValueError):
            holder = {}
        os.close(fd)
        who = ", ".join(
            f"{key} {holder[key]}" for key in ("pid", "host", "directory") if key in holder
        )
        raise ValueError(
            f"results directory {results_dir} is in use by another run ({who or 'unknown'}); "
            "wait until it ends, or give this sweep another results_dir"
        ) from None
    record = {"pid": os.getpid(), "host": socket.gethostname(), "directory": os.getcwd()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(record).encode(), 0)
    return fd
