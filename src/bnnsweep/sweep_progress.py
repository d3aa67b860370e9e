"""Progress of a whole sweep: cells done of all, and the time left, printed while it runs.

Started by the Snakefile's ``onstart`` in the main Snakemake process, a daemon thread looks
every ``interval`` seconds at which cell files exist and prints one line when the count has
changed, e.g. ``bnnsweep: 120/400 cells done (30%), about 12m 05s left``.

The time left comes from the plan's estimates (``jobsize.packing_seconds``, the work models'
typical times) calibrated as ``bnnsweep plan`` calibrates them: each method's estimates are
scaled by the median of measured over estimated time of its finished cells (``runtime_s`` in
the cell files; a method with none finished yet keeps its typical time, as an uncalibrated
plan does: the estimates of different methods are off by different factors), and the work left is
divided by this run's parallelism (the measured time of the cells finished since the start
over the wall time since then). Until a cell has finished in this run, no time is given.
"""

from __future__ import annotations

import os
import statistics
import threading
import time

from .progress import format_seconds


def cell_runtime(path: str) -> float | None:
    """``runtime_s`` of a finished cell file (None when it cannot be read)."""
    try:
        import netCDF4

        from .file_seal import seal_problem

        if seal_problem(path) is not None:  # never hand damaged bytes to the HDF5 parser
            return None
        with netCDF4.Dataset(path) as nc:
            return float(nc["runtime_s"][...])
    except Exception:  # noqa: BLE001 - progress is never worth a failed sweep
        return None


class SweepProgress:
    """``cells``: {cell file: (method label, estimated seconds or None)}; ``write`` takes a
    line; ``runtime(path)`` reads a finished cell's measured seconds."""

    def __init__(self, cells: dict, write, clock=time.monotonic, runtime=cell_runtime):
        known = [s for _, s in cells.values() if s is not None and s > 0]
        fallback = statistics.median(known) if known else 1.0
        self.cells = {
            path: (method, s if s is not None and s > 0 else fallback)
            for path, (method, s) in cells.items()
        }
        self.write, self.clock, self.runtime = write, clock, runtime
        self.start = clock()
        self.done_at_start = self.finished()
        self.last_count = len(self.done_at_start)
        self.measured: dict[str, float | None] = {}

    def finished(self) -> set[str]:
        return {path for path in self.cells if os.path.exists(path)}

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
        work = sum(
            estimate * scale.get(method, 1.0)
            for path, (method, estimate) in self.cells.items()
            if path not in done
        )
        this_run = [self.measured[p] for p in done - self.done_at_start]
        spent = sum(s for s in this_run if s is not None)
        elapsed = self.clock() - self.start
        if spent <= 0 or elapsed <= 0:
            return None
        return work / (spent / elapsed)

    def line(self) -> str | None:
        """The progress line, or None when no cell finished since the last one."""
        done = self.finished()
        if len(done) == self.last_count:
            return None
        self.last_count = len(done)
        total = len(self.cells)
        text = f"bnnsweep: {len(done)}/{total} cells done ({100 * len(done) // total}%)"
        left = self.seconds_left(done) if len(done) < total else None
        if left is not None:
            text += f", about {format_seconds(left)} left"
        return text

    def run(self, interval: float, stop: threading.Event) -> None:
        while not stop.wait(interval):
            text = self.line()
            if text is not None:
                self.write(text)
            if self.last_count == len(self.cells):
                return


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


def start_sweep_progress(cells: dict, write, interval: float = 30.0) -> threading.Event:
    """Start the reporting thread (a daemon) for {cell file: Cell}, a line every ``interval``
    seconds (environment variable ``BNNSWEEP_PROGRESS_SECONDS``) when the count changed;
    setting the returned event stops it."""
    interval = float(os.environ.get("BNNSWEEP_PROGRESS_SECONDS", interval))
    stop = threading.Event()
    progress = SweepProgress(cell_estimates(cells), write)
    threading.Thread(target=progress.run, args=(interval, stop), daemon=True).start()
    return stop
