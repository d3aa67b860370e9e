"""Progress of a whole sweep: the cells this run has fitted of those it fits, and the time
left, printed while it runs; a summary when it ends.

Started by the Snakefile's ``onstart`` in the main Snakemake process, a daemon thread looks
every ``interval`` seconds at which cell files this run has written and prints one line,
whether or not the count changed, e.g. ``bnnsweep: 120/400 cells fitted (30%) in 4m 10s,
about 12m left``. It counts this run's work only: the cells that were not current when it
started (missing, corrupt or stale: ``to_fit``), each done when its file is there and is not
the file that was there at the start (a refitted cell is a new file, written atomically); a
rerun with everything current prints no line.

The time left comes from the plan's estimates (``jobsize.packing_seconds``, the work models'
typical times) calibrated as ``bnnsweep plan`` calibrates them: each method's estimates are
scaled by the median of measured over estimated time of its finished cells (``runtime_s`` in
the cell files), a method with none finished yet by the median over all finished cells (the
estimates are of CPU time, ``runtime_s`` is wall time: on a loaded machine every method's
cells take several times their estimate; scaled by 1, such a method's cells were priced at a
tenth of their time, and the time left, 9 minutes at 5% of the default sweep, jumped to 1 h
24 min when its first cell finished), and the work left is
divided by this run's parallelism (the time of the cells fitted since the start, finished or
running, over the wall time since then), and is never less than the longest cell's own
remainder. A cell is running from when its log file (``sweep.cell_paths``) is first seen
written since the start; its time so far counts as work done (without it the time left rose
while long cells ran: on the default sweep it was revised up five times in 32 minutes).
Until a cell has finished in this run, no time is given.

That raw estimate jumps as each method's first cell calibrates it, so the time shown is
smoothed (``TimeLeft``): the expected finishing time is an exponential average of the raw
ones, and the time shown never goes up, unless the raw estimate has stayed more than
``REVISE_ABOVE`` times the shown one for ``REVISE_AFTER`` lines in a row (the plan's
estimates were wrong for a method): then it is revised up once, and the line says so.

``summary`` is the closing report (the Snakefile's ``onsuccess``/``onerror``): cells ok,
not converged, diverged and missing (failed) by method, the slowest cells, and where the
figures and tables are.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from pathlib import Path

from .progress import format_seconds


def cell_facts(path: str) -> tuple[str, float, float | None] | None:
    """(``status``, ``runtime_s``, ``fit_cpu_s`` or None) of a finished cell file (None when
    it cannot be read)."""
    try:
        import netCDF4

        from ..cells.file_seal import seal_problem

        if seal_problem(path) is not None:  # never hand damaged bytes to the HDF5 parser
            return None
        with netCDF4.Dataset(path) as nc:
            status = nc["status"][...] if "status" in nc.variables else "ok"
            cpu = float(nc.getncattr("fit_cpu_s")) if "fit_cpu_s" in nc.ncattrs() else None
            status = str(getattr(status, "item", lambda: status)())
            return status, float(nc["runtime_s"][...]), cpu
    except Exception:  # noqa: BLE001 - progress is never worth a failed sweep
        return None


def cell_runtime(path: str) -> float | None:
    """``runtime_s`` of a finished cell file (None when it cannot be read)."""
    facts = cell_facts(path)
    return None if facts is None else facts[1]


SMOOTHING = 0.3
"""Weight of the newest raw estimate in the exponential average of the finishing time."""
REVISE_ABOVE = 1.25
REVISE_AFTER = 2


class TimeLeft:
    """The time left as shown: ``update(now, raw)`` takes the raw estimate (seconds, or None)
    at time ``now`` and returns (seconds shown or None, whether it was revised up)."""

    def __init__(self):
        self.finish: float | None = None  # smoothed finishing time (clock seconds)
        self.shown_finish: float | None = None
        self.above = 0

    def update(self, now: float, raw: float | None) -> tuple[float | None, bool]:
        if raw is None:
            return (None if self.shown_finish is None else max(self.shown_finish - now, 0.0)), False
        finish = now + raw
        self.finish = finish if self.finish is None else (
            SMOOTHING * finish + (1 - SMOOTHING) * self.finish
        )  # fmt: skip
        if self.shown_finish is None:
            self.shown_finish = self.finish
            return max(self.shown_finish - now, 0.0), False
        shown = max(self.shown_finish - now, 0.0)
        self.above = self.above + 1 if raw > REVISE_ABOVE * max(shown, 1.0) else 0
        # counted down to nothing with work left: the estimate was too short, revise now
        revised = self.above >= REVISE_AFTER or (shown < 1.0 and raw >= 1.0)
        if revised:
            self.shown_finish, self.above = max(self.finish, finish), 0
        else:
            self.shown_finish = min(self.shown_finish, self.finish)
        return max(self.shown_finish - now, 0.0), revised


def file_identity(path: str) -> int | None:
    """The inode of a file, None when there is none. A cell written again is a new file
    (written beside the old one, then renamed over it: another inode); Snakemake touches the
    outputs of a batch that kept them, which changes their time, not their inode."""
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def written_since(start: float):
    """``began(log file)``: True when the file was written at or after ``start`` (seconds
    since the epoch): a cell's fit has begun."""

    def began(path: str | None) -> bool:
        try:
            return path is not None and os.stat(path).st_mtime >= start
        except OSError:
            return False

    return began


class SweepProgress:
    """``cells``: {cell file: (method label, estimated seconds or None)}; ``write`` takes a
    line; ``runtime(path)`` reads a finished cell's measured seconds; ``to_fit``: the cell files
    this run is to write (default: those missing at the start); ``logs``: {cell file: its log
    file}, and ``began(log file)`` says whether the cell's fit has begun (default: the log
    written since the start)."""

    def __init__(
        self,
        cells: dict,
        write,
        clock=time.monotonic,
        runtime=cell_runtime,
        to_fit=None,
        logs=None,
        began=None,
    ):
        known = [s for _, s in cells.values() if s is not None and s > 0]
        fallback = statistics.median(known) if known else 1.0
        self.cells = {
            path: (method, s if s is not None and s > 0 else fallback)
            for path, (method, s) in cells.items()
        }
        self.write, self.clock, self.runtime = write, clock, runtime
        self.at_start = {path: file_identity(path) for path in self.cells}
        if to_fit is None:
            to_fit = {path for path, found in self.at_start.items() if found is None}
        self.to_fit = set(to_fit) & set(self.cells)
        self.start = clock()
        self.logs = logs or {}
        self.began = began or written_since(time.time())
        self.started: dict[str, float] = {}  # cell file: when its fit was first seen running
        self.measured: dict[str, float | None] = {}
        self.time_left = TimeLeft()

    def finished(self) -> set[str]:
        """The cell files written since the start (any cell: the planned ones, ``to_fit``, and
        any other Snakemake reruns)."""
        return {
            path
            for path, before in self.at_start.items()
            if (now := file_identity(path)) is not None and now != before
        }

    def planned(self, done: set[str]) -> set[str]:
        """This run's cells: those to write at the start and those written since."""
        return self.to_fit | done

    def running(self, done: set[str]) -> dict[str, float]:
        """{cell file: seconds since its fit was first seen running} of this run's cells not
        done whose fit has begun."""
        now = self.clock()
        for path in self.planned(done) - done - self.started.keys():
            if self.began(self.logs.get(path)):
                self.started[path] = now
        return {p: now - t for p, t in self.started.items() if p not in done}

    def seconds_left(self, done: set[str]) -> float | None:
        for path in done - self.measured.keys():
            self.measured[path] = self.runtime(path)
        ratios: dict[str, list[float]] = {}
        for path, seconds in self.measured.items():
            if seconds is not None and path in done:
                method, estimate = self.cells[path]
                ratios.setdefault(method, []).append(seconds / estimate)
        if not ratios:
            return None
        scale = {method: statistics.median(rs) for method, rs in ratios.items()}
        pooled = statistics.median([r for rs in ratios.values() for r in rs])
        running = self.running(done)
        left = {  # each cell's own time left: its calibrated estimate less its time so far
            path: max(
                self.cells[path][1] * scale.get(self.cells[path][0], pooled)
                - running.get(path, 0.0),
                0.0,
            )
            for path in self.planned(done) - done
        }
        spent = sum(self.measured[p] for p in done if self.measured[p] is not None)
        spent += sum(running.values())
        elapsed = self.clock() - self.start
        if spent <= 0 or elapsed <= 0:
            return None
        return max(sum(left.values()) / (spent / elapsed), max(left.values(), default=0.0))

    def raw_left(self) -> float | None:
        """The unsmoothed time left (``seconds_left`` of the cells done now)."""
        return self.seconds_left(self.finished())

    def line(self) -> str:
        """The progress line: this run's cells fitted of those it fits, the time since the
        start and the time left."""
        done = self.finished()
        total = len(self.planned(done))
        now = self.clock()
        text = (
            f"bnnsweep: {len(done)}/{total} cells fitted ({100 * len(done) // max(total, 1)}%) "
            f"in {format_seconds(now - self.start)}"
        )
        if len(done) < total:
            left, revised = self.time_left.update(now, self.seconds_left(done))
            if left is not None:
                text += f", about {format_seconds(left)} left"
                text += " (revised up: slower cells than planned)" if revised else ""
        return text

    def all_done(self) -> bool:
        done = self.finished()
        return self.planned(done) <= done

    def run(self, interval: float, stop: threading.Event) -> None:
        while not self.all_done() and not stop.wait(interval):
            self.write(self.line())


def cell_estimates(cells: dict) -> dict[str, tuple[str, float | None]]:
    """{cell file: (method label, ``jobsize.packing_seconds``)} of {cell file: Cell}: the
    typical time, not the bound, which is up to 30 times longer (every restart and iteration
    run to its limit); None where a cell cannot be priced (no work model, or its data cannot
    be read here)."""
    from .jobsize import packing_seconds

    out = {}
    for path, cell in cells.items():
        try:
            out[path] = (cell.method, packing_seconds(cell))
        except Exception:  # noqa: BLE001 - progress is never worth a failed sweep
            out[path] = (cell.method, None)
    return out


def cell_logs(cells: dict) -> dict[str, str]:
    """{cell file: its log file (``sweep.cell_paths``)} of {cell file: Cell} where the cell
    file is ``<results_dir>/<path_id>.nc``, as the workflow names them."""
    from .sweep import cell_paths

    out = {}
    for path, cell in cells.items():
        suffix = f"/{cell.path_id}.nc"
        if str(path).endswith(suffix):
            out[path] = cell_paths(cell, str(path)[: -len(suffix)])["log"]
    return out


def start_sweep_progress(
    cells: dict, write, interval: float = 30.0, to_fit=None
) -> threading.Event:
    """Start the reporting thread (a daemon) for {cell file: Cell}, of which this run writes
    the files ``to_fit`` (default: the missing ones), a line every ``interval`` seconds (environment
    variable ``BNNSWEEP_PROGRESS_SECONDS``) until they are done, after a first line with
    how many that is; setting the returned event stops it."""
    interval = float(os.environ.get("BNNSWEEP_PROGRESS_SECONDS", interval))
    stop = threading.Event()
    progress = SweepProgress(cell_estimates(cells), write, to_fit=to_fit, logs=cell_logs(cells))
    kept = len(cells) - len(progress.to_fit)
    write(f"bnnsweep: {len(progress.to_fit)} of {len(cells)} cells to fit, {kept} current")
    threading.Thread(target=progress.run, args=(interval, stop), daemon=True).start()
    return stop


SLOWEST = 3
"""How many of the slowest cells the summary names."""
NOT_FITTED = "missing"


def summary(cells: dict, results_dir: str, facts=cell_facts) -> list[str]:
    """The closing report of a sweep, as lines: for the sweep's cells ({key: Cell}, the file
    of each ``results_dir/<key>.nc``, as ``sweep.cell_index`` gives them), per method label the
    cells by status (``ok``, ``not_converged``, ``diverged``, and ``missing``: no cell file,
    its fit failed or did not run), the ``SLOWEST`` cells by fit time (wall, and the fit's CPU
    time where the cell records it: on a loaded machine the two differ, a toy vi_mixture cell
    of the default sweep took 15m 46s of wall time for 71 s of CPU), and the figure and table
    files under ``results_dir/<experiment>/``."""
    counts: dict[str, dict[str, int]] = {}
    times: list[tuple[float, float | None, str]] = []
    for key, cell in cells.items():
        path = f"{results_dir}/{key}.nc"
        found = facts(path) if os.path.exists(path) else None
        status = NOT_FITTED if found is None else found[0]
        by_status = counts.setdefault(cell.method, {})
        by_status[status] = by_status.get(status, 0) + 1
        if found is not None:
            times.append((found[1], found[2] if len(found) > 2 else None, path))
    statuses = ["ok", "not_converged", "diverged", NOT_FITTED]
    statuses += sorted({s for c in counts.values() for s in c} - set(statuses))
    width = max([len(m) for m in counts] + [6])
    lines = [f"bnnsweep: {len(cells)} cells of {len({c.experiment for c in cells.values()})} "
             "experiments"]  # fmt: skip
    lines.append("  " + "method".ljust(width) + "".join(f"{s:>15}" for s in statuses))
    for method in sorted(counts):
        row = "".join(f"{counts[method].get(s, 0):>15}" for s in statuses)
        lines.append("  " + method.ljust(width) + row)
    if times:
        lines.append("slowest cells (fit time: wall, CPU):")
        for wall, cpu, path in sorted(times, key=lambda t: t[0], reverse=True)[:SLOWEST]:
            cpu_text = "" if cpu is None else format_seconds(cpu)
            lines.append(f"  {format_seconds(wall):>8} {cpu_text:>8}  {path}")
    outputs = sorted(
        str(f)
        for experiment in sorted({c.experiment for c in cells.values()})
        for folder in ("figures", "tables")
        for f in (Path(results_dir) / experiment / folder).glob("*")
        if f.suffix in (".png", ".pdf", ".svg", ".md")
    )
    if outputs:
        lines.append(f"figures and tables ({len(outputs)}):")
        lines += [f"  {f}" for f in outputs]
    lines.append("report: snakemake --report report.html (every figure with its caption)")
    return lines


def print_summary(cells: dict, results_dir: str, write, logfiles=()) -> None:
    """``summary`` of {key: Cell}, each line to ``write``, then where Snakemake's log of the
    run is (``logfiles``, its ``log`` of onsuccess/onerror); never raises."""
    try:
        for text in summary(cells, results_dir):
            write(text)
        if logfiles:
            write(f"snakemake's log: {', '.join(str(f) for f in logfiles)}")
    except Exception as err:  # noqa: BLE001 - a summary is never worth a failed sweep
        write(f"bnnsweep: no summary ({err})")
