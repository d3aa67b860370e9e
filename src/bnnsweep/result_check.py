"""The state of a results directory's cell files: current, missing, corrupt or stale.

A cell file is *corrupt* when it cannot be read or its content does not match the checksum
it records (``cell_checksum``); *stale* when it is intact but records another cell, other
settings or an older version of its method's code than the config and code ask for now;
*missing* when it is not there. ``bnnsweep check`` lists them; the workflow refits missing
and stale cells by itself, and a corrupt cell once it is moved aside (``quarantine``): by
``bnnsweep check --fix``, by the merge, or, for cells changed since their
experiment's last merge, when the workflow starts (``quarantine_damaged_cells``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .sweep import Cell, code_version


def current_attrs(cell: Cell) -> dict[str, str]:
    """What a cell file must record to count as this cell, fitted by the current code."""
    return {
        "cell_json": json.dumps(cell.key(), sort_keys=True),
        "settings_json": json.dumps(cell.settings, sort_keys=True),
        "method_name": cell.method_name,
        "code_version": code_version(cell.method_name),
    }


def cell_state(path: str | Path, cell: Cell, check_code: bool = True) -> tuple[str, str]:
    """(state, why) of the file ``path`` for ``cell``: state is ``current``, ``missing``,
    ``corrupt`` (``cell_reader.integrity_problem``) or ``stale`` (another cell, other
    settings or, with ``check_code``, another code version recorded)."""
    from .cell_reader import integrity_problem, read_variables

    if not Path(path).is_file():
        return "missing", "no such file"
    if (why := integrity_problem(path)) is not None:
        return "corrupt", why
    _, _, attrs = read_variables(path)
    wanted = current_attrs(cell)
    if not check_code:
        wanted.pop("code_version")
    differing = [name for name, value in wanted.items() if attrs.get(name) != value]
    if differing:
        return "stale", "it records another " + ", ".join(
            name.removesuffix("_json").replace("_", " ") for name in differing
        )
    return "current", ""


def is_current(path: str | Path, cell: Cell, check_code: bool = True) -> bool:
    """Whether ``path`` is an intact cell file of exactly this cell, fitted by the current
    code (``cell_state``); anything else is refitted."""
    return cell_state(path, cell, check_code)[0] == "current"


def quarantine(path: str | os.PathLike, why: str = "corrupt") -> Path:
    """Move a corrupt file aside to ``<path>.corrupt`` (``.corrupt-2``, ... if taken), so
    that the damaged file stays for inspection, and record it in the experiment's repair log
    (``record_repair``), so that the workflow refits the cell."""
    path = Path(path)
    target, n = path.with_name(path.name + ".corrupt"), 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{n}")
    os.replace(path, target)
    record_repair(path, f"{why}; moved to {target}")
    return target


def merged_file_of(cell: str | os.PathLike) -> Path:
    """The merged file of a cell's experiment: ``<results>/<experiment>/merged.nc`` for the
    cell ``<results>/<experiment>/cells/...``."""
    path = Path(cell)
    for parent in path.parents:
        if parent.name == "cells":
            return parent.parent / "merged.nc"
    raise ValueError(f"{path} is not under an experiment's cells/ directory")


REPAIR_LOG = "repairs.log"


def repair_log_of(cell: str | os.PathLike) -> Path:
    """The repair log of a cell's experiment, ``<results>/<experiment>/repairs.log``."""
    return merged_file_of(cell).parent / REPAIR_LOG


def record_repair(cell: str | os.PathLike, what: str) -> Path | None:
    """Append a line on a cell moved aside or found missing to its experiment's repair log.
    The merge rule takes the log as an input when it exists: a new or changed log makes
    Snakemake merge again and so, first, refit the cells that are missing (a missing input
    alone does not rerun a job whose output is newer than the inputs that remain, and
    Snakemake ignores a modification time changed without a change of content). None for a
    file outside an experiment's cells/ directory."""
    import datetime as dt

    try:
        log = repair_log_of(cell)
    except ValueError:
        return None
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"{stamp} {cell}: {what}\n")
    return log


def quarantine_damaged_cells(
    experiments: Mapping[str, Sequence[str]], log: Callable[[str], None], move: bool = True
) -> list[Path]:
    """Verify the cells changed since their experiment's merged file was written ({merged
    file: cell files}) and move the corrupt ones aside (``quarantine``), so that the run
    about to start refits them before it merges (Snakemake would otherwise rerun only the
    merge, on a damaged cell). A merged file without a checksum (an older bnnsweep's) is
    merged again, through the repair log. Cells not newer than their merged file are not
    read: ``bnnsweep check`` finds damage that kept the old
    modification time. Returns the corrupt cells; with ``move`` False (a dry run) they are
    only named."""
    from .cell_reader import integrity_problem
    from .file_seal import is_sealed

    found = []
    for merged, cells in experiments.items():
        try:
            merged_time = os.stat(merged).st_mtime
        except OSError:
            continue
        if not is_sealed(merged) and move:  # written before files carried a checksum
            log_file = Path(merged).parent / REPAIR_LOG
            with open(log_file, "a", encoding="utf-8") as fh:
                fh.write(f"{merged}: written without a checksum; merged again\n")
            log(f"bnnsweep: {merged} has no checksum (an older bnnsweep wrote it): merging again")
        damaged = []
        for cell in cells:
            try:
                if os.stat(cell).st_mtime <= merged_time:
                    continue
            except OSError:
                continue
            if (why := integrity_problem(cell)) is None:
                continue
            damaged.append(Path(cell))
            if move:
                where = quarantine(cell, why)
                log(f"bnnsweep: {cell} is corrupt: {why}; moved to {where}, refitting it")
            else:
                log(f"bnnsweep: {cell} is corrupt: {why}; a run moves it aside and refits it")
        found += damaged
    return found


@dataclass
class CheckReport:
    """Cell files by state: {path: why} for each problem state, and the current count."""

    missing: dict[str, str] = field(default_factory=dict)
    corrupt: dict[str, str] = field(default_factory=dict)
    stale: dict[str, str] = field(default_factory=dict)
    current: int = 0

    @property
    def ok(self) -> bool:
        return not (self.missing or self.corrupt or self.stale)

    def lines(self) -> list[str]:
        out = []
        for state in ("corrupt", "stale", "missing"):
            for path, why in getattr(self, state).items():
                out.append(f"{state:8s}{path}: {why}")
        out.append(
            f"{self.current} current, {len(self.corrupt)} corrupt, {len(self.stale)} stale, "
            f"{len(self.missing)} missing"
        )
        return out


def check_cells(cells: Mapping[str, Cell], check_code: bool = True) -> CheckReport:
    """The state (``cell_state``) of every expected cell file ({path: cell})."""
    report = CheckReport()
    for path, cell in cells.items():
        state, why = cell_state(path, cell, check_code)
        if state == "current":
            report.current += 1
        else:
            getattr(report, state)[path] = why
    return report


def fix(report: CheckReport, log: Callable[[str], None]) -> None:
    """Move the corrupt files of ``report`` aside and record its missing cells in their
    experiments' repair logs (``record_repair``), so that the same snakemake command refits
    them."""
    for path, why in report.corrupt.items():
        log(f"moved {path} to {quarantine(path, why)}")
    for path in report.missing:
        if (repairs := record_repair(path, "missing")) is not None:
            log(f"recorded {path} as missing in {repairs}")


def check_files(paths: Sequence[str | Path]) -> CheckReport:
    """Integrity of result files found without a config (which alone says what is missing
    or stale): each is current or corrupt."""
    from .cell_reader import integrity_problem

    report = CheckReport()
    for path in paths:
        if (why := integrity_problem(path)) is None:
            report.current += 1
        else:
            report.corrupt[str(path)] = why
    return report
