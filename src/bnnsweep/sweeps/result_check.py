"""The state of a results directory's cell and merged files: current, missing, corrupt or
stale.

A cell file is *corrupt* when it cannot be read or its content does not match the checksum
it records (``cells.checksum``); *stale* when it is intact but records another cell, other
settings or an older version of its method's code than the config and code ask for now;
*missing* when it is not there. ``bnnsweep check`` lists them; the workflow finds them
when it builds its DAG, without writing anything, and reruns the batches that hold them
(``bnnsweep fit-batch`` refits exactly those cells and moves the corrupt ones aside).
A merged file is judged the same way against the cell files it is merged from
(``merged_state``), and merged again when it is not current.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .sweep import Cell, code_version


def current_attrs(cell: Cell) -> dict[str, str]:
    """What a cell file records of its cell (``results.cell_content``): the attributes its
    identity digest is taken over (``checksum.identity_digest``)."""
    return {
        "cell_json": json.dumps(cell.key(), sort_keys=True),
        "settings_json": json.dumps(cell.settings, sort_keys=True),
        "method_name": cell.method_name,
    }


def key_state(
    key: str | None, cell: Cell | None, data: str | None = None, code: str | None = None
) -> tuple[str, str]:
    """(state, why) of a cell key (``checksum.cell_key``) for ``cell``: ``stale`` when it
    is no cell key, records another cell or other settings (``cell`` None: any cell will
    do), other data than the checksum ``data`` (when known) or another code version than
    ``code`` (when given: ``code_reruns``); else ``current``. Pure: the judgement
    ``cell_state`` makes of a file's sealed key and the merge of the key of what it read."""
    from ..cells.checksum import identity_digest, parse_cell_key

    parsed = parse_cell_key(key)
    if parsed is None:
        return "stale", "it records no cell key (an older bnnsweep wrote it, or it is no cell)"
    identity, fitted_on, fitted_by = parsed
    if cell is not None and identity != identity_digest(current_attrs(cell)):
        return "stale", "it records another cell or other settings"
    if data is not None and fitted_on != data:
        return "stale", "it was fitted on other data than the prepared dataset"
    if code is not None and fitted_by != code:
        return "stale", "another version of its method's code fitted it"
    return "current", ""


def judge_cell(
    path: str | Path, cell: Cell | None, data: str | None = None, code: str | None = None
) -> tuple[str, str, str | None]:
    """(state, why, the key judged) of the file ``path`` for ``cell`` (None: the cell it
    records), the one test of what is current that the workflow's DAG, ``bnnsweep
    check``, ``bnnsweep fit-batch`` and the merge share:

    - ``missing``: no such file;
    - ``corrupt``: its bytes do not match its seal (``file_seal.seal_problem``);
    - ``stale``: intact, but its key (``checksum.cell_key``, sealed after its bytes) is not
      current for ``cell`` on data ``data`` by code ``code`` (``key_state``);
    - ``current``.

    Reads the file's bytes (to verify the seal) and parses nothing. The key is returned so
    that a reader can check that what it parses afterwards is what was judged."""
    from ..cells.file_seal import seal_problem, sealed_key

    path = Path(path)
    if not path.is_file():
        return "missing", "no such file", None
    key = sealed_key(path)
    if (why := seal_problem(path)) is not None:
        return "corrupt", why, None
    return (*key_state(key, cell, data, code), key)


def merged_state(path: str | Path, cell_files: Sequence[str | Path]) -> tuple[str, str]:
    """(state, why) of an experiment's merged file ``path``, merged from ``cell_files``:
    ``missing``; ``corrupt`` when its bytes do not match its seal
    (``file_seal.seal_problem``: truncated, bit-flipped, replaced by a file bnnsweep did
    not write); ``stale`` when its sealed key is not the key the cell files there now give
    (``checksum.merge_key`` of their ``file_seal.sealed_record``: another file bnnsweep
    wrote, such as a cell or another experiment's merged file, or a merge of earlier fits
    of the same cells); else ``current``. The workflow's DAG (which merges again a merged
    file that is not current) and ``bnnsweep check`` judge it so. Reads the merged file's
    bytes and the cell files' last bytes; parses nothing."""
    from ..cells.checksum import merge_key
    from ..cells.file_seal import seal_problem, sealed_key, sealed_record

    path = Path(path)
    if not path.is_file():
        return "missing", "no such file"
    if (why := seal_problem(path)) is not None:
        return "corrupt", why
    key, want = sealed_key(path), merge_key(sealed_record(p) for p in cell_files)
    if key == want:
        return "current", ""
    if key is None or not key.startswith("M:"):
        return (
            "stale",
            "it records no merge key (an older bnnsweep wrote it, or it is no merged file)",
        )
    if key.split(":")[2:] == want.split(":")[2:]:
        return "stale", "it was merged from earlier files of the same cells"
    return "stale", "it was not merged from the experiment's cell files"


def cell_state(
    path: str | Path, cell: Cell | None, data: str | None = None, code: str | None = None
) -> tuple[str, str]:
    """(state, why) of ``judge_cell``."""
    state, why, _ = judge_cell(path, cell, data, code)
    return state, why


def expected_code(cell: Cell, check_code: bool = True) -> str | None:
    """The code version a current file of ``cell`` records, or None when ``check_code`` is
    off (``code_reruns: false``)."""
    return code_version(cell.method_name) if check_code else None


def is_current(
    path: str | Path, cell: Cell, data: str | None = None, code: str | None = None
) -> bool:
    """Whether ``path`` is an intact cell file of exactly this cell, on this data, by this
    code (``cell_state``); anything else is refitted."""
    return cell_state(path, cell, data, code)[0] == "current"


def data_checksums(paths) -> dict[str, str | None]:
    """{prepared dataset file: the checksum of its arrays its seal records, None if there
    is none (not prepared yet)} (``datasets.store.data_checksum``)."""
    from ..datasets.store import data_checksum

    return {str(p): data_checksum(p) if Path(p).is_file() else None for p in paths}


@dataclass(frozen=True)
class Expected:
    """What the current file of a cell records (``judge_cell``'s arguments): its cell, the
    checksum of its prepared data (None: not judged) and its method's code version (None:
    ``code_reruns`` off)."""

    cell: Cell
    data: str | None
    code: str | None


def spec_expectations(entries: Sequence[dict], check_code: bool = True) -> dict[str, Expected]:
    """{cell file: ``Expected``} of the entries of a batch spec (``sweep.read_batch_spec``:
    each a ``cell``, its ``output`` file and ``data`` file, as the workflow writes one for
    a merge), judged against the prepared data files as they are now."""
    sums = data_checksums({e["data"] for e in entries if e.get("data")})
    return {
        str(e["output"]): Expected(
            e["cell"], sums.get(e.get("data") or ""), expected_code(e["cell"], check_code)
        )
        for e in entries
    }


def quarantine(path: str | os.PathLike) -> Path:
    """Move a damaged file aside to ``<path>.corrupt`` (``.corrupt-2``, ... if taken), so
    that it stays for inspection and the workflow writes the file again."""
    path = Path(path)
    target, n = path.with_name(path.name + ".corrupt"), 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{n}")
    os.replace(path, target)
    return target


def _fresh_marker(base: Path) -> Path:
    """``base``, or ``<base>-N`` if a file of that name is there (left by a killed run, it
    would count as done)."""
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def refit_marker(results_dir: str | Path, experiment: str, batch_id: str) -> Path:
    """The marker output of a batch that has cells to refit when the workflow starts:
    ``<results>/logs/<experiment>/batches/<batch>.refitted``, or ``...refitted-N`` if a
    file of that name is there (left by a killed run, it would count as done). The same
    in every parse of one run (a cluster job parses the workflow again): the marker
    is made only when its batch is done, and removed when the run ends
    (``remove_rerun_markers``)."""
    base = Path(results_dir) / "logs" / experiment / "batches" / f"{batch_id}.refitted"
    return _fresh_marker(base)


def remerge_marker(results_dir: str | Path, experiment: str) -> Path:
    """The marker output of an experiment's merge when its merged file is there and not
    current when the workflow starts (``merged_state``): ``<results>/logs/<experiment>/
    merged.remerged`` (``-N`` as ``refit_marker``), made when the merge is done and removed
    when the run ends (``remove_rerun_markers``)."""
    return _fresh_marker(Path(results_dir) / "logs" / experiment / "merged.remerged")


def remove_rerun_markers(results_dir: str | Path) -> None:
    """Remove every ``refit_marker`` and ``remerge_marker`` (the workflow, when a run
    ends)."""
    results_dir = Path(results_dir)
    for pattern in ("logs/*/batches/*.refitted*", "logs/*/merged.remerged*"):
        for marker in results_dir.glob(pattern):
            marker.unlink(missing_ok=True)


@dataclass
class CheckReport:
    """Cell files by state: {path: why} for each problem state, and the current count."""

    missing: dict[str, str] = field(default_factory=dict)
    corrupt: dict[str, str] = field(default_factory=dict)
    stale: dict[str, str] = field(default_factory=dict)
    current: int = 0

    def extend(self, other: CheckReport) -> None:
        """Add the files of ``other``."""
        for state in ("missing", "corrupt", "stale"):
            getattr(self, state).update(getattr(other, state))
        self.current += other.current

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


def cell_states(
    cells: Mapping[str, Cell], results_dir: str | Path, check_code: bool = True
) -> dict[str, tuple[str, str]]:
    """{path: ``cell_state``} of every expected cell file ({path: cell}) of a results
    directory, each judged against the prepared dataset under ``<results_dir>/data/`` (the
    data is not judged where it is not prepared yet). Reads, never writes."""
    files = {
        cell.dataset: Path(results_dir) / "data" / f"{cell.dataset}.nc" for cell in cells.values()
    }
    sums = data_checksums(files.values())
    return {
        path: cell_state(
            path, cell, sums[str(files[cell.dataset])], expected_code(cell, check_code)
        )
        for path, cell in cells.items()
    }


def check_cells(
    cells: Mapping[str, Cell], results_dir: str | Path, check_code: bool = True
) -> CheckReport:
    """The state (``cell_states``) of every expected cell file ({path: cell})."""
    report = CheckReport()
    for path, (state, why) in cell_states(cells, results_dir, check_code).items():
        if state == "current":
            report.current += 1
        else:
            getattr(report, state)[path] = why
    return report


def check_merged(merged: Mapping[str, Sequence[str | Path]]) -> CheckReport:
    """The state (``merged_state``) of every merged file there ({merged file: the cell
    files it is merged from}); one not made yet is not counted (the workflow makes it)."""
    report = CheckReport()
    for path, cell_files in merged.items():
        state, why = merged_state(path, cell_files)
        if state == "current":
            report.current += 1
        elif state != "missing":
            getattr(report, state)[str(path)] = why
    return report


def fix(report: CheckReport, log: Callable[[str], None]) -> None:
    """Move the corrupt cell and merged files of ``report`` (the workflow's own names: it
    writes them) aside to ``<file>.corrupt`` for inspection. The workflow refits (merges)
    them, and the missing and stale ones, by itself."""
    for path in report.corrupt:
        log(f"moved {path} to {quarantine(path)}")


def check_files(paths: Sequence[str | Path]) -> CheckReport:
    """Integrity of result files found without a config (which alone says what is missing
    or stale): each is current or corrupt."""
    from ..cells.reader import integrity_problem

    report = CheckReport()
    for path in paths:
        if (why := integrity_problem(path)) is None:
            report.current += 1
        else:
            report.corrupt[str(path)] = why
    return report
