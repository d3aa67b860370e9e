"""The sweep's progress line: cells done of all, and the time left from the plan's estimates
calibrated per method on the finished cells and divided by this run's parallelism."""

from bnnsweep import jobsize
from bnnsweep.sweep_progress import SweepProgress, cell_estimates


def test_cells_done_and_time_left_from_calibrated_estimates(tmp_path):
    paths = [str(tmp_path / f"c{i}.nc") for i in range(5)]
    open(paths[0], "w").close()  # finished before this run
    cells = {
        paths[0]: ("map", 10.0),
        paths[1]: ("map", 10.0),
        paths[2]: ("map", 30.0),
        paths[3]: ("vi", 100.0),
        paths[4]: ("vi", None),  # no work model: the median estimate, 20 s
    }
    measured = {paths[0]: 5.0, paths[1]: 5.0, paths[2]: 15.0, paths[3]: 2.0}
    now = [0.0]
    progress = SweepProgress(cells, print, clock=lambda: now[0], runtime=measured.get)
    assert progress.line() is None  # nothing new since the start
    now[0] = 2.5
    open(paths[1], "w").close()  # 5 s of work in 2.5 s: parallelism 2; map takes half
    # left: map 30 x 0.5 = 15, vi (no cell yet: its bound) 100 + 20 = 120
    assert progress.line() == "bnnsweep: 2/5 cells done (40%), about 1m 08s left"  # 135 / 2
    assert progress.line() is None  # unchanged: no line
    now[0] = 10.0
    open(paths[3], "w").close()  # vi measured at 0.02 of its estimate
    # left: map 15 + vi 20 x 0.02 = 15.4 s of work; parallelism (5 + 2) / 10
    assert progress.line() == "bnnsweep: 3/5 cells done (60%), about 22 s left"
    for path in paths[2:]:
        open(path, "w").close()
    assert progress.line() == "bnnsweep: 5/5 cells done (100%)"


def test_cells_that_cannot_be_priced_count_as_the_median():
    from bnnsweep.sweep import Cell

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
