"""The sweep's progress line: the cells this run has fitted of those it fits (issue 35: a
rerun showed 100% at once, counting the files already there), and the time left from the
plan's estimates calibrated per method on the cells fitted in this run and divided by this
run's parallelism."""

import pytest

from bnnsweep.sweeps import jobsize
from bnnsweep.sweeps.sweep_progress import SweepProgress, TimeLeft, cell_estimates


def test_cells_done_and_time_left_from_calibrated_estimates(tmp_path):
    paths = [str(tmp_path / f"c{i}.nc") for i in range(5)]
    open(paths[0], "w").close()  # finished before this run
    cells = {
        paths[0]: ("map", 10.0),
        paths[1]: ("map", 10.0),
        paths[2]: ("map", 30.0),
        paths[3]: ("vi", 30.0),
        paths[4]: ("vi", None),  # no work model: the median estimate, 20 s
    }
    measured = {paths[0]: 5.0, paths[1]: 5.0, paths[2]: 15.0, paths[3]: 2.0}
    now = [0.0]
    progress = SweepProgress(cells, print, clock=lambda: now[0], runtime=measured.get)
    # nothing finished in this run: no time left yet, but a line all the same; the file that
    # was there at the start is not this run's work
    assert progress.line() == "bnnsweep: 0/4 cells fitted (0%) in 0 s"
    now[0] = 2.5
    open(paths[1], "w").close()  # 5 s of work in 2.5 s: parallelism 2; map takes half
    # left: map 30 x 0.5 = 15, vi (no cell yet: scaled as all finished cells, 0.5)
    # (30 + 20) x 0.5 = 25
    assert progress.raw_left() == 40 / 2
    assert progress.line() == "bnnsweep: 1/4 cells fitted (25%) in 2 s, about 20 s left"
    now[0] = 10.0
    open(paths[3], "w").close()  # vi measured at 1/15 of its estimate
    # left: map 15 + vi 20 / 15 s of work; parallelism (5 + 2) / 10; the finishing time
    # shown stays at 2.5 + 20 = 22.5 (never later unless the raw estimate stays above it)
    assert progress.raw_left() == pytest.approx((15 + 20 / 15) / 0.7)
    assert progress.line() == "bnnsweep: 2/4 cells fitted (50%) in 10 s, about 12 s left"
    for path in paths[2:]:
        open(path, "w").close()
    assert progress.line() == "bnnsweep: 4/4 cells fitted (100%) in 10 s"
    assert progress.all_done()


def test_running_cells_count_down_and_bound_the_time_left(tmp_path):
    """A running cell's time so far is work done: with one long cell running and none
    finishing, the raw time left falls as the clock runs (it rose before, and the time shown
    was revised up five times in a 32-minute default sweep); and it is never less than the
    longest cell's own remainder, whatever the parallelism."""
    paths = [str(tmp_path / f"c{i}.nc") for i in range(3)]
    cells = {paths[0]: ("map", 10.0), paths[1]: ("vi", 100.0), paths[2]: ("vi", 100.0)}
    begun = set()
    now = [0.0]
    progress = SweepProgress(
        cells,
        print,
        clock=lambda: now[0],
        runtime={paths[0]: 10.0, paths[1]: 100.0}.get,
        logs={p: p + ".log" for p in paths},
        began=lambda log: log in begun,
    )
    begun.add(paths[1] + ".log")
    now[0] = 10.0
    open(paths[0], "w").close()  # map finished after 10 s; vi running since about 10 s
    first = progress.raw_left()
    # left: vi 100 - 0 + 100 (waiting); work done 10 + 0 in 10 s: at least the running 100
    assert first == pytest.approx(200.0)
    now[0] = 50.0
    second = progress.raw_left()  # vi running for 40 s: 60 + 100 left, (10 + 40) / 50 done
    assert second == pytest.approx(160.0) and second < first
    begun.add(paths[2] + ".log")
    now[0] = 60.0
    # both vi cells running (the second seen from 60 s): 50 + 100 left at parallelism 1,
    # and never below the second's own 100 s
    assert progress.raw_left() == pytest.approx(max(150 / (60 / 60), 100.0))


def test_cells_that_cannot_be_priced_count_as_the_median():
    from bnnsweep.sweeps.sweep import Cell

    ok = Cell("e", "toy_sine", "default", "map", "map", 0, (("hidden", 2),), {"hidden": 2})
    bad = Cell("e", "no_such_dataset", "default", "map", "map", 0, (("hidden", 2),), {})
    estimates = cell_estimates({"a.nc": ok, "b.nc": bad})
    assert estimates["a.nc"][1] > 0 and estimates["b.nc"] == ("map", None)
    # the typical time (as an uncalibrated plan uses), not the bound, which for vi_gauss is
    # many times longer
    vi = Cell("e", "toy_sine", "default", "vi_gauss", "vi_gauss", 0, (("hidden", 3),), {})
    (estimate,) = cell_estimates({"v.nc": vi}).values()
    assert estimate[1] == jobsize.packing_seconds(vi) < jobsize.fit_seconds(vi) / 5
    assert SweepProgress(estimates, print).cells["b.nc"][1] == estimates["a.nc"][1]


def test_the_time_left_never_rises_unless_the_estimate_stays_well_above_it():
    """Issue 35: the time left went 35 min, 30 min, 1 h 23 min, 55 min within two minutes.
    Shown: the smoothed finishing time, never later than before, unless the raw estimate
    stays over 1.25 x the time shown for two lines (then revised up, once)."""
    left = TimeLeft()
    now, shown = 0.0, []
    for raw in [35 * 60, 30 * 60, 83 * 60, 32 * 60, 30 * 60, 28 * 60]:
        shown.append(left.update(now, raw))
        now += 30.0
    seconds = [s for s, _ in shown]
    assert all(
        b <= a for a, b in zip(seconds, seconds[1:], strict=False)
    )  # the one-line jump is ignored
    assert not any(revised for _, revised in shown)
    assert seconds[0] == 35 * 60 and seconds[-1] <= seconds[0] - 5 * 30  # counts down
    # the issue's own sequence: 83 then 55 min is two lines well above 35: revised up once
    left, now, shown = TimeLeft(), 0.0, []
    for raw in [35 * 60, 30 * 60, 83 * 60, 55 * 60, 54 * 60, 53 * 60]:
        shown.append(left.update(now, raw))
        now += 30.0
    assert [revised for _, revised in shown] == [False, False, False, True, False, False]
    after = [s for s, _ in shown[3:]]
    assert all(b <= a for a, b in zip(after, after[1:], strict=False))

    left = TimeLeft()
    first, _ = left.update(0.0, 600.0)
    assert left.update(30.0, 1800.0) == (570.0, False)  # once above: held
    second, revised = left.update(60.0, 1800.0)  # twice: the plan was wrong, revised up
    assert revised and second > first
    assert left.update(90.0, None) == (second - 30.0, False)  # no estimate: counts down

    left = TimeLeft()
    left.update(0.0, 20.0)
    assert left.update(30.0, 15.0) == (15.0, True)  # counted down to 0 with work left


def test_a_line_every_interval_even_when_no_cell_finishes(tmp_path):
    import threading

    path = str(tmp_path / "c.nc")
    lines = []
    progress = SweepProgress({path: ("map", 1.0)}, lines.append)
    stop = threading.Event()
    thread = threading.Thread(target=progress.run, args=(0.01, stop))
    thread.start()
    while len(lines) < 3:
        stop.wait(0.01)
    open(path, "w").close()
    thread.join(timeout=10)
    assert lines[0].startswith("bnnsweep: 0/1 cells fitted (0%)")
    assert lines[-1].startswith("bnnsweep: 1/1 cells fitted (100%)")


def test_a_rerun_counts_only_the_cells_it_refits(tmp_path):
    """Three cells current, one stale (its file there, to be replaced): 0/1 until the stale
    one's file is replaced (atomically: a new file), then 1/1; with nothing to fit no line
    is printed at all."""
    import os
    import threading

    paths = [str(tmp_path / f"c{i}.nc") for i in range(4)]
    for path in paths:
        open(path, "w").close()
    cells = {path: ("map", 1.0) for path in paths}
    progress = SweepProgress(cells, print, to_fit={paths[3]})
    assert progress.line().startswith("bnnsweep: 0/1 cells fitted (0%)")
    new = tmp_path / "new.nc"
    new.write_text("refitted")
    os.replace(new, paths[3])
    assert progress.line().startswith("bnnsweep: 1/1 cells fitted (100%)")

    lines = []
    current = SweepProgress(cells, lines.append, to_fit=set())
    stop = threading.Event()
    current.run(0.01, stop)  # returns at once
    assert lines == []


def test_the_summary_counts_statuses_by_method_and_names_the_slowest(tmp_path):
    from bnnsweep.sweeps.sweep import Cell
    from bnnsweep.sweeps.sweep_progress import summary

    def cell(method, seed):
        return Cell("e", "toy_sine", "default", method, method, seed, (), {})

    cells = {f"e/cells/{m}_{s}": cell(m, s) for m in ("laplace", "map") for s in range(3)}
    facts = {
        "e/cells/laplace_0": ("ok", 12.0, 5.0),
        "e/cells/laplace_1": ("not_converged", 30.0, 11.0),
        "e/cells/map_0": ("ok", 1.0),
        "e/cells/map_1": ("diverged", 2.0),
    }
    for key in facts:
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{key}.nc").touch()
    (tmp_path / "e" / "figures").mkdir()
    (tmp_path / "e" / "figures" / "occam_hill.png").touch()
    lines = summary(cells, str(tmp_path), facts=lambda p: facts[p[len(str(tmp_path)) + 1 : -3]])
    table = {line.split()[0]: line.split()[1:] for line in lines[2:4]}
    assert lines[1].split() == ["method", "ok", "not_converged", "diverged", "missing"]
    assert table == {"laplace": ["1", "1", "0", "1"], "map": ["1", "0", "1", "1"]}
    slowest = lines[lines.index("slowest cells (fit time: wall, CPU):") + 1 :][:3]
    assert [line.split()[-1].rsplit("/", 1)[-1] for line in slowest] == [
        "laplace_1.nc", "laplace_0.nc", "map_1.nc"]  # fmt: skip
    # wall and CPU time where the cell records its CPU time (map_1's facts have none)
    assert slowest[0].split()[:2] == ["30", "s"] and slowest[0].split()[2:4] == ["11", "s"]
    assert slowest[2].split()[:3] == ["2", "s", str(tmp_path / "e/cells/map_1.nc")]
    assert any(line.endswith("e/figures/occam_hill.png") for line in lines)
    assert lines[-1].startswith("report: snakemake --report")


def test_the_terminal_shows_errors_and_bnnsweeps_lines_without_snakemakes_job_blocks(tmp_path):
    """The profile's quiet: [reason, host]: per-job blocks, scheduler lines and the step
    counts dropped from the terminal, kept in Snakemake's log file; errors shown. Any other
    quiet setting (``--quiet host``: the blocks back) leaves Snakemake's output alone."""
    import io
    import logging

    from snakemake.settings.enums import Quietness
    from snakemake_interface_logger_plugins.common import LogEvent

    from bnnsweep.sweeps.workflow_run import quiet_job_blocks

    logger = logging.getLogger("test_job_blocks")
    terminal = io.StringIO()
    logger.addHandler(logging.StreamHandler(terminal))
    logger.addHandler(logging.FileHandler(tmp_path / "snakemake.log"))
    logger.setLevel(logging.INFO)
    assert not quiet_job_blocks({Quietness.HOST}, logger)
    assert quiet_job_blocks({Quietness.REASON, Quietness.HOST}, logger)
    assert quiet_job_blocks({Quietness.REASON, Quietness.HOST}, logger)  # once per handler
    logger.info("rule fit_x:\n    output: a.nc", extra={"event": LogEvent.JOB_INFO})
    logger.info("Select jobs to execute...")
    logger.info("Execute 2 jobs...", extra={"event": LogEvent.JOB_STARTED})
    logger.info("3 of 9 steps (33%) done", extra={"event": LogEvent.PROGRESS})
    logger.info("Finished jobid: 4 (Rule: fit_x)", extra={"event": LogEvent.JOB_FINISHED})
    logger.info("Touching output file results/x.refitted.")
    logger.error("Error in rule fit_x:\n    log: x.log", extra={"event": LogEvent.JOB_ERROR})
    logger.info("bnnsweep: 3/9 cells fitted (33%) in 30 s")
    logger.info("Complete log(s): /w/.snakemake/log/x.log")
    for handler in logger.handlers:
        handler.flush()
    assert terminal.getvalue().splitlines() == [
        "Error in rule fit_x:",
        "    log: x.log",
        "bnnsweep: 3/9 cells fitted (33%) in 30 s",
    ]
    assert len((tmp_path / "snakemake.log").read_text().splitlines()) == 11
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
