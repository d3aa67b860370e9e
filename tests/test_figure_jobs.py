"""The workflow's cheaper jobs: `bnnsweep merge --draw` (the workflow's one job per
experiment) and `bnnsweep figures` draw every figure and table of an experiment in one
process, byte for byte what one `bnnsweep figure` per kind draws, and a failing figure does
not stop the others; `fit-batch --usage` records the job's own CPU time
and peak memory in place of Snakemake's sampled benchmark record."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bnnsweep.results import merge_cells, write_netcdf_atomic
from bnnsweep.runner import fit_cell, write_result
from bnnsweep.sweeps.sweep import Cell, batch_spec

MAP = {"hidden": 2, "restarts": 1, "max_iter": 20, "activation": "erf"}


def map_cell(seed: int) -> Cell:
    return Cell("m", "toy_sine", "default", "map", "map", seed, (("hidden", 2),), MAP)


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("merged")
    paths = []
    for seed in (0, 1):
        paths.append(write_result(fit_cell(map_cell(seed), log=lambda m: None), tmp / f"{seed}.nc"))
    return write_netcdf_atomic(merge_cells(paths), tmp / "merged.nc")


def test_one_process_draws_what_one_process_per_figure_draws(tmp_path, merged):
    kinds = {"occam_hill": "png", "toy_regression": "png", "error_table": "md"}
    one = tmp_path / "one"
    draws = [a for kind, ext in kinds.items() for a in ("--draw", kind, one / f"{kind}.{ext}")]
    proc = cli("figures", "--merged", merged, *draws)
    assert proc.returncode == 0, proc.stderr
    for kind, ext in kinds.items():
        alone = tmp_path / "alone" / f"{kind}.{ext}"
        assert cli("figure", kind, "--merged", merged, "--output", alone).returncode == 0
        assert (one / f"{kind}.{ext}").read_bytes() == alone.read_bytes(), kind
    assert (one / "error_table.csv").read_bytes() == (
        tmp_path / "alone" / "error_table.csv"
    ).read_bytes()


def test_a_failing_figure_is_reported_and_the_others_are_drawn(tmp_path, merged):
    # chapter_one_checks needs the values of ch1_checks cells, absent from map cells
    proc = cli(
        "figures", "--merged", merged,
        "--draw", "chapter_one_checks", tmp_path / "s.md",
        "--draw", "occam_hill", tmp_path / "o.png",
    )  # fmt: skip
    assert proc.returncode == 1
    assert "chapter_one_checks: failed" in proc.stderr
    assert "figures failed: chapter_one_checks" in proc.stderr
    assert (tmp_path / "o.png").stat().st_size > 5000


def test_an_unknown_kind_is_refused_before_anything_is_drawn(tmp_path, merged):
    proc = cli(
        "figures", "--merged", merged,
        "--draw", "occam_hill", tmp_path / "o.png", "--draw", "ocam_hill", tmp_path / "x.png",
    )  # fmt: skip
    assert proc.returncode == 2 and "ocam_hill" in proc.stderr
    assert not (tmp_path / "o.png").exists()


def test_fit_batch_records_its_own_cpu_time_and_peak_memory(tmp_path):
    cells = [map_cell(0)]
    spec = batch_spec(cells, False, str(tmp_path / "results"), True)
    spec["cells"][0]["data"] = None  # from the registry, not a prepared file
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    usage = tmp_path / "bench" / "b.tsv"
    proc = cli("fit-batch", tmp_path / "spec.json", "--log", tmp_path / "b.log", "--usage", usage)
    assert proc.returncode == 0, proc.stderr
    header, values = usage.read_text().splitlines()
    row = dict(zip(header.split("\t"), values.split("\t"), strict=True))
    assert set(row) == {"s", "h:m:s", "max_rss", "cpu_time"}
    # an interpreter with numpy, xarray and netCDF4 has used some CPU and tens of MB
    assert 0.05 < float(row["cpu_time"]) <= float(row["s"]) * 2 + 1
    assert 30 < float(row["max_rss"]) < 4000
    assert Path(spec["cells"][0]["output"]).is_file()


def test_merge_then_draw_in_one_process_equals_the_two_steps(tmp_path, merged):
    """The workflow's job: `merge --draw` writes the merged file and then the figures drawn
    from it, the same bytes as `merge` and `figure` one after the other."""
    cells = sorted(merged.parent.glob("[0-9].nc"))
    both = tmp_path / "both"
    proc = cli(
        "merge", *cells, "--output", both / "merged.nc",
        "--draw", "occam_hill", both / "o.png", "--draw", "error_table", both / "t.md",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert cli("merge", *cells, "--output", tmp_path / "m.nc").returncode == 0
    assert (
        cli(
            "figure", "occam_hill", "--merged", tmp_path / "m.nc", "--output", tmp_path / "o.png"
        ).returncode
        == 0
    )
    assert (both / "o.png").read_bytes() == (tmp_path / "o.png").read_bytes()
    assert (both / "t.md").is_file() and (both / "t.csv").is_file()


def test_peak_memory_is_the_jobs_own_not_its_parents():
    """``ru_maxrss`` survives exec, so a job started by a large parent (a long test session,
    Snakemake) reported the parent's size (5.3 GB for a map fit in CI): the recorded peak is
    the job's own high-water mark. Here the parent holds 800 MB while it starts the child."""
    import numpy as np

    ballast = np.ones(100_000_000)  # 800 MB, touched, resident in this process
    code = (
        "import resource; from bnnsweep.cli import _peak_rss_mb; "
        "print(_peak_rss_mb(resource.getrusage(resource.RUSAGE_SELF)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ballast.sum() > 0 and out.returncode == 0, out.stderr
    assert float(out.stdout) < 400, out.stdout
