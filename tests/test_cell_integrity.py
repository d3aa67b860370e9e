"""Every cell and merged file records a checksum of its content, verified when it is read:
a file truncated, bit-flipped or edited after it was written is named as corrupt, never read
as if intact; the merge names every corrupt cell and, in the workflow, moves it aside so that
the same command refits it; ``bnnsweep check`` lists missing, corrupt and stale cells
(issue 14, item 3)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from bnnsweep.cells.checksum import CHECKSUM_ATTR
from bnnsweep.cells.reader import integrity_problem, read_variables
from bnnsweep.results import CorruptCells, merge_cells, write_netcdf_atomic
from bnnsweep.runner import write_result
from bnnsweep.sweeps.result_check import cell_state, check_cells, quarantine
from bnnsweep.sweeps.sweep import Cell

MAP_SETTINGS = {"hidden": 2, "restarts": 1, "max_iter": 20}


def map_cell(seed: int = 0) -> Cell:
    return Cell("m", "toy_sine", "default", "map", "map", seed, (("hidden", 2),), MAP_SETTINGS)


@pytest.fixture(scope="module")
def cell_file(tmp_path_factory, method_cells):
    path = tmp_path_factory.mktemp("cells") / "map.nc"
    write_result(method_cells["map"], path)
    return path


def edited(path: Path, edit) -> Path:
    """``edit(netCDF4.Dataset)`` applied in place, the modification time kept (as a careless
    tool or a restore from a damaged backup would)."""
    stat = os.stat(path)
    with netCDF4.Dataset(path, "a") as nc:
        edit(nc)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return path


def same_content(a, b) -> bool:
    (va, _, aa), (vb, _, ab) = a, b
    if set(va) != set(vb) or set(aa) != set(ab):
        return False
    for name, (dims, values, attrs) in va.items():
        other = vb[name]
        if dims != other[0] or str(attrs) != str(other[2]):
            return False
        if values.dtype.kind == "f":
            if not np.array_equal(values, other[1], equal_nan=True):
                return False
        elif not np.array_equal(values, other[1]):
            return False
    return all(str(aa[k]) == str(ab[k]) for k in aa)


def test_every_methods_cell_and_their_merge_are_intact(tmp_path, method_cells):
    paths = [write_result(c, tmp_path / f"{m}.nc") for m, c in method_cells.items()]
    for path in paths:
        assert integrity_problem(path) is None, path
        _, _, attrs = read_variables(path)
        assert len(attrs[CHECKSUM_ATTR]) == 64
    merged = write_netcdf_atomic(merge_cells(paths), tmp_path / "merged.nc")
    assert integrity_problem(merged) is None


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda nc: nc["pred_mean"].__setitem__((0, 0), 1.0), "altered"),
        (lambda nc: nc["hidden"].assignValue(5), "altered"),
        (lambda nc: nc.setncattr("settings_json", '{"hidden": 3}'), "altered"),
        (lambda nc: nc.delncattr(CHECKSUM_ATTR), "altered"),
    ],
    ids=["value", "coordinate", "attribute", "no-checksum"],
)
def test_an_edited_cell_is_corrupt_and_the_merge_names_it(tmp_path, cell_file, edit, why):
    good = tmp_path / "good.nc"
    shutil.copy(cell_file, good)
    bad = edited(Path(shutil.copy(cell_file, tmp_path / "bad.nc")), edit)
    problem = integrity_problem(bad)
    assert problem is not None and why in problem
    with pytest.raises(CorruptCells, match=f"{bad} is corrupt") as err:
        merge_cells([good, bad])
    assert list(err.value.problems) == [str(bad)] and bad.exists()


def test_truncated_cells_are_all_named_and_moved_aside_on_request(tmp_path, cell_file):
    paths = []
    for n in (100, 4000):
        path = tmp_path / f"cut{n}.nc"
        path.write_bytes(cell_file.read_bytes()[:n])
        paths.append(path)
    with pytest.raises(CorruptCells) as err:
        merge_cells([cell_file, *paths], quarantine_corrupt=True)
    assert sorted(err.value.problems) == sorted(map(str, paths))
    assert "run the same command again" in str(err.value)
    for path in paths:
        assert not path.exists() and Path(str(path) + ".corrupt").exists()
    assert cell_file.exists()


@pytest.mark.parametrize("seed", range(4))
def test_a_flipped_bit_is_detected_or_leaves_the_content_unchanged(tmp_path, cell_file, seed):
    """Anywhere in the file: either the file is named corrupt, or what it holds is what was
    written (a bit of padding or of HDF5 bookkeeping that nothing reads)."""
    original = read_variables(cell_file)
    data = bytearray(cell_file.read_bytes())
    rng = np.random.default_rng(seed)
    detected = 0
    for k in range(50):
        flipped = bytearray(data)
        offset = int(rng.integers(len(data)))
        flipped[offset] ^= 1 << int(rng.integers(8))
        path = tmp_path / f"flip{k}.nc"
        path.write_bytes(bytes(flipped))
        if integrity_problem(path) is not None:
            detected += 1
        else:
            assert same_content(read_variables(path), original), f"bit at {offset} undetected"
    assert detected > 0


def test_cell_state_tells_current_stale_missing_and_corrupt(tmp_path, cell_file):
    """The key sealed into a cell file (cell, settings, data, code) against what is asked."""
    from bnnsweep.runner import data_checksum_of
    from bnnsweep.sweeps.sweep import code_version

    cell = map_cell()
    path = tmp_path / "c.nc"
    write_result(fit_cell_quietly(cell), path)
    data, code = data_checksum_of(cell), code_version("map")
    assert cell_state(path, cell, data, code) == ("current", "")
    assert cell_state(tmp_path / "none.nc", cell)[0] == "missing"
    state, why = cell_state(path, map_cell(seed=1), data, code)
    assert state == "stale" and "another cell" in why
    state, why = cell_state(path, cell, data, "f" * 16)
    assert state == "stale" and "code" in why
    assert cell_state(path, cell, data, None)[0] == "current"  # code_reruns: false
    state, why = cell_state(path, cell, "e" * 64, code)
    assert state == "stale" and "other data" in why
    assert cell_state(path, cell, None, code)[0] == "current"  # data not prepared yet
    edited(path, lambda nc: nc["runtime_s"].assignValue(-1.0))
    assert cell_state(path, cell, data, code)[0] == "corrupt"
    report = check_cells({str(path): cell, str(tmp_path / "none.nc"): cell}, tmp_path)
    assert not report.ok and list(report.corrupt) == [str(path)] and len(report.missing) == 1


def fit_cell_quietly(cell):
    from bnnsweep.runner import fit_cell

    return fit_cell(cell, log=lambda m: None)


def test_a_corrupt_cell_is_refitted_by_the_batch_that_owns_it(tmp_path):
    """fit-batch skips current cells and refits the others: a corrupt one counts as not
    current, so rerunning its batch restores it bitwise."""
    from bnnsweep.cli import main
    from bnnsweep.runner import fit_batch
    from bnnsweep.sweeps.sweep import batch_spec

    assert (
        main(["prepare", "--dataset", "toy_sine", "--output", str(tmp_path / "data/toy_sine.nc")])
        == 0
    )
    cells = [map_cell(0), map_cell(1)]
    spec = batch_spec(cells, False, str(tmp_path), True)
    assert fit_batch(spec, log=lambda m: None)["fitted"] == 2
    first = tmp_path / f"{cells[0].path_id}.nc"
    before = read_variables(first)[0]["pred_mean"][1]
    edited(first, lambda nc: nc["pred_mean"].__setitem__((0, 0), 9.0))
    counts = fit_batch(spec, log=lambda m: None)
    assert (counts["fitted"], counts["skipped"]) == (1, 1)
    assert integrity_problem(first) is None
    np.testing.assert_array_equal(read_variables(first)[0]["pred_mean"][1], before)


def test_quarantine_keeps_every_damaged_copy(tmp_path):
    path = tmp_path / "x.nc"
    for n in range(3):
        path.write_text(str(n))
        quarantine(path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["x.nc.corrupt", "x.nc.corrupt-2", "x.nc.corrupt-3"]


def run_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_figure_refuses_an_altered_merged_file(tmp_path, cell_file):
    merged = write_netcdf_atomic(merge_cells([cell_file]), tmp_path / "merged.nc")
    edited(merged, lambda nc: nc["test_rmse"].__setitem__(0, 0.0))
    proc = run_cli("figure", "error_table", "--merged", merged, "--output", tmp_path / "t.md")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{merged} is corrupt" in proc.stderr
    assert not (tmp_path / "t.md").exists()


def test_check_without_config_names_corrupt_files(tmp_path, cell_file):
    results = tmp_path / "results"
    (results / "e" / "cells").mkdir(parents=True)
    good = Path(shutil.copy(cell_file, results / "e" / "cells" / "a.nc"))
    bad = edited(
        Path(shutil.copy(cell_file, results / "e" / "cells" / "b.nc")),
        lambda nc: nc["runtime_s"].assignValue(0.0),
    )
    proc = run_cli("check", results, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert f"corrupt {bad}" in " ".join(proc.stdout.split()) and str(good) not in proc.stdout
    assert "1 current, 1 corrupt" in proc.stdout
    proc = run_cli("check", results, "--fix", cwd=tmp_path)
    assert proc.returncode == 1 and not bad.exists()
    proc = run_cli("check", results, cwd=tmp_path)
    assert proc.returncode == 0 and "1 current, 0 corrupt" in proc.stdout


def test_check_of_a_missing_directory_is_one_line(tmp_path):
    proc = run_cli("check", tmp_path / "nowhere", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "nowhere" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.workflow
def test_the_same_snakemake_command_refits_a_damaged_cell(tmp_path):
    """After a complete sweep: a cell truncated, a cell edited with its time kept, a cell
    damaged with the merged file gone: each is moved aside and refitted by the next run of
    the same command, before the merge, and each ends with the undamaged sweep's results."""
    from bnnsweep.cells.compare import differing_variables

    sys.path.insert(0, str(Path(__file__).parent))
    from test_faults import cell_files, fits_run, fresh, run

    workdir = fresh(tmp_path / "w")
    run(workdir)
    merged = workdir / "results" / "smoke" / "merged.nc"
    reference = Path(shutil.copy(merged, tmp_path / "reference.nc"))
    cells = sorted(cell_files(workdir))
    assert len(cells) == 3
    before = fits_run(workdir)

    cut = cells[0]
    cut.write_bytes(cut.read_bytes()[:3000])
    run(workdir)
    assert Path(str(cut) + ".corrupt").exists() and integrity_problem(cut) is None
    refitted = {k for k, n in fits_run(workdir).items() if n != before[k]}
    assert len(refitted) == 1
    assert not differing_variables(reference, merged)

    check = ["check", "results", "--config", "smoke.yaml"]
    assert run_cli(*check, cwd=workdir).returncode == 0
    # edited with its time kept: `bnnsweep check` names it, and the same command refits it
    # (the workflow reads every cell's seal when it starts), nothing else
    quiet = edited(cells[1], lambda nc: nc["pred_mean"].__setitem__((0, 0), 5.0))
    proc = run_cli(*check, cwd=workdir)
    assert proc.returncode == 1 and f"corrupt {quiet.relative_to(workdir)}" in " ".join(
        proc.stdout.split()
    )
    before = fits_run(workdir)
    run(workdir)
    assert integrity_problem(quiet) is None
    assert {k for k, n in fits_run(workdir).items() if n != before[k]} == {
        f"{quiet.parent.name}/{quiet.stem}"
    }
    assert run_cli(*check, cwd=workdir).returncode == 0
    assert not differing_variables(reference, merged)

    # no merged file and a quietly damaged cell: one run refits the cell, then merges
    merged.unlink()
    quiet = edited(cells[2], lambda nc: nc["pred_mean"].__setitem__((0, 0), 5.0))
    run(workdir)
    assert run_cli(*check, cwd=workdir).returncode == 0
    assert not differing_variables(reference, merged)
