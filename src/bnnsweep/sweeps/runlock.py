"""Resume a sweep whose Snakemake was killed, without a manual ``--unlock``.

Snakemake locks a working directory while it runs and removes the lock when it exits; a
SIGKILL or a power loss leaves the lock behind and the next run refuses to start. Two
records say whether the run that took a lock is alive:

- every main Snakemake process of the workflow holds a shared ``flock`` on
  ``.snakemake/bnnsweep_alive.lock`` from the moment it parses the Snakefile until it
  ends (``take_working_directory``); Snakemake takes its own lock only after parsing, so
  a live run that holds a lock always holds this one, and the kernel releases it when the
  process dies, however it dies;
- the run that holds the lock records its process (``record_owner``, Snakemake's
  ``onstart``, about a second after the lock is taken) and removes the record when it ends
  by itself (``forget_owner``); the record names the holder in the lines printed.

When a run starts, the locks are removed (``clear_stale_locks``) only if their owner is
provably dead: no other process holds the shared ``flock`` (the new run takes it
exclusively for a moment first) and no owner record names a live process on this host or
any process on another host; or, while some other process of the workflow is alive there
(a dry run, say), an owner record names a dead process on this host and no lock is newer
than that record. A lock held by a live run is kept, with a line saying whose, and
Snakemake refuses to start.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

OWNER_FILE = "bnnsweep_lock_owner.json"
ALIVE_FILE = "bnnsweep_alive.lock"
_HELD: dict[str, int] = {}  # {.snakemake directory: this process's shared flock on it}


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


def _owner(owner_path: Path) -> dict | None:
    """The owner record (host, pid, start), or None when there is none or it is unreadable."""
    try:
        owner = json.loads(owner_path.read_text())
        return {"host": owner["host"], "pid": int(owner["pid"]), "start": owner["start"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _is_alive(owner: dict) -> bool:
    """Whether the process of an owner record on this host is alive (its id and start
    time)."""
    return _start_time(owner["pid"]) in (owner["start"], "alive")


def clear_stale_locks(
    snakemake_dir: str | Path = ".snakemake", log=print, alone: bool = False
) -> bool:
    """Remove the Snakemake locks of ``snakemake_dir`` if the run that took them has died.
    ``alone``: no other process holds the shared ``flock`` of live runs
    (``take_working_directory``), so no live run of the workflow holds a lock there.
    Returns whether locks were removed; a kept lock gets a line naming its holder."""
    snakemake_dir = Path(snakemake_dir)
    locks = sorted((snakemake_dir / "locks").glob("*.lock"))
    if not locks:
        return False
    owner_path = snakemake_dir / OWNER_FILE
    owner = _owner(owner_path)
    if owner is not None and owner["host"] != socket.gethostname():
        log(
            f"bnnsweep: this working directory is locked by a run on {owner['host']} (pid "
            f"{owner['pid']}), which cannot be checked from here; the lock is kept: once "
            "that run has ended, `snakemake --unlock` removes it"
        )
        return False
    if owner is not None and _is_alive(owner):
        log(
            f"bnnsweep: this working directory is locked by a live run (pid {owner['pid']}); "
            "the lock is kept: wait until that run ends"
        )
        return False
    if alone:
        who = f"pid {owner['pid']}" if owner else "no owner recorded: killed as it started"
    elif owner is not None and not any(
        lock.stat().st_mtime > owner_path.stat().st_mtime for lock in locks if lock.exists()
    ):
        # another run of the workflow is alive here (its flock), but the locks are older than
        # the dead owner's record: that owner took them
        who = f"pid {owner['pid']}"
    else:
        # taken after the recorded owner, or with no owner recorded, while a run of the
        # workflow is alive here: it may be that run's, which records itself ~1 s after
        # locking, so the lock is never removed
        log(
            "bnnsweep: this working directory is locked, and another Snakemake of this "
            "workflow is running in it (it may hold the lock); the lock is kept: wait "
            "until that run ends"
        )
        return False
    for lock in locks:
        lock.unlink(missing_ok=True)
    owner_path.unlink(missing_ok=True)
    log(f"bnnsweep: removed the Snakemake lock left by a run that was killed ({who})")
    return True


def take_working_directory(snakemake_dir: str | Path = ".snakemake", log=print) -> bool:
    """Mark this process as a live run of the workflow in this working directory (a shared
    ``flock`` on ``<snakemake_dir>/bnnsweep_alive.lock``, held until the process ends) and
    first remove the locks of a dead run (``clear_stale_locks``), judged alone if the
    ``flock`` could be taken exclusively. Called once per process when the Snakefile is
    parsed (again: nothing is done). Returns whether locks were removed."""
    import fcntl

    key = str(Path(snakemake_dir).resolve())
    if key in _HELD:
        return False
    path = Path(snakemake_dir) / ALIVE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)  # not inherited by the jobs
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        alone = True
    except OSError:
        alone = False
    try:
        return clear_stale_locks(snakemake_dir, log, alone=alone)
    finally:
        fcntl.flock(fd, fcntl.LOCK_SH)  # from exclusive: a conversion; else waits a moment
        _HELD[key] = fd


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
