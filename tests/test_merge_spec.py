"""`bnnsweep merge --spec`: the workflow's merge checks every cell file against the config's
cell (its key: cell, settings, data, code version) before merging; a file that holds another
cell, or one made with other settings, is refused with one line naming it and nothing is
written (issue 36: a cell copied over another was merged silently)."""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import xarray as xr

from bnnsweep import cli, datasets, runner
from bnnsweep.cells import reader
from bnnsweep.cells.atomic_file import write_atomic
from bnnsweep.cells.file_seal import KEY_SIZE, SEAL_SIZE, seal_problem, sealed_key
from bnnsweep.results import StaleCells, merge_cells, write_netcdf_atomic
from bnnsweep.sweeps.result_check import (
    cell_state,
    check_merged,
    merged_state,
    spec_expectations,
)
from bnnsweep.sweeps.sweep import Cell, batch_spec, read_batch_spec, spec_text

SETTINGS = {"hidden": 0, "grid": 21}


def cells(settings=SETTINGS):
    return [
        Cell("m", "toy_sine", "default", "exact", "exact", seed, (("hidden", 0),), dict(settings))
        for seed in range(2)
    ]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """Two fitted cells (closed-form fits, milliseconds) and their spec file."""
    root = tmp_path_factory.mktemp("merge") / "results"
    datasets.save_netcdf(datasets.load("toy_sine"), root / "data" / "toy_sine.nc")
    spec = batch_spec(cells(), False, str(root), True)
    runner.fit_batch(spec, log=lambda *_: None)
    return root, spec


@pytest.fixture(scope="module")
def other_cell(fitted, tmp_path_factory) -> Path:
    """An intact file of a cell outside the spec: seed 1 with other settings."""
    root, _ = fitted
    cell = cells({**SETTINGS, "grid": 31})[1]
    content = runner.fit_cell(cell, root / "data" / "toy_sine.nc", lambda *_: None)
    return runner.write_result(content, tmp_path_factory.mktemp("other") / "other.nc")


def write_spec(tmp_path: Path, spec: dict) -> Path:
    text, digest = spec_text(spec)
    path = tmp_path / f"{digest}.json"
    path.write_text(text)
    return path


def relocated(spec: dict, old: Path, new: Path) -> dict:
    """The spec with its files under ``new`` instead of ``old``."""
    return json.loads(json.dumps(spec).replace(str(old), str(new)))


def test_merge_with_the_spec_merges_the_specs_cells(fitted, tmp_path):
    root, spec = fitted
    out = tmp_path / "merged.nc"
    assert cli.main(["merge", "--spec", str(write_spec(tmp_path, spec)), "--output", str(out)]) == 0
    expected = merge_cells([e["output"] for e in spec["cells"]])
    with xr.open_dataset(out) as got:
        assert got.sizes["run"] == 2
        assert list(got["seed"].values) == list(expected["seed"].values)


@pytest.mark.parametrize("fault", ["copied_over", "other_settings"])
def test_a_cell_file_holding_another_cell_is_not_merged(fitted, tmp_path, capsys, fault):
    root, spec = fitted
    copy = tmp_path / "results"
    shutil.copytree(root, copy)
    spec = relocated(spec, root, copy)
    files = [Path(e["output"]) for e in spec["cells"]]
    if fault == "copied_over":  # an intact file of seed 0 under seed 1's name
        shutil.copy(files[0], files[1])
    else:  # the config asks for other settings than the files were fitted with
        spec = relocated(
            batch_spec(cells({**SETTINGS, "grid": 31}), False, str(copy), True), copy, copy
        )
    out = tmp_path / "merged.nc"
    code = cli.main(["merge", "--spec", str(write_spec(tmp_path, spec)), "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "do not hold the cell asked for, not merged" in err and str(files[1]) in err
    assert not out.exists()


# --- the merge judges every file by result_check.judge_cell --------------------------------


def expectations(spec: dict) -> dict:
    return spec_expectations(read_batch_spec(spec, "spec")[2], True)


def test_the_merge_judges_each_file_as_the_workflow_does(fitted, tmp_path):
    """``merge_cells`` given the config's cells refuses, naming it, a file that the
    workflow's DAG and ``bnnsweep check`` call stale (``result_check.cell_state``): another
    cell's file, one fitted by other code, one fitted on other data; the current ones it
    merges."""
    root, spec = fitted
    expected = expectations(spec)
    first, second = expected
    assert merge_cells(expected=expected).sizes["run"] == 2
    foreign = tmp_path / "foreign.nc"
    shutil.copy(first, foreign)  # seed 0's file where seed 1's is asked for
    cases = {
        "another cell": ({first: expected[first], str(foreign): expected[second]}, str(foreign)),
        "other code": (
            {first: replace(expected[first], code="1" * 16), second: expected[second]},
            first,
        ),
        "other data": (
            {first: replace(expected[first], data="0" * 63 + "1"), second: expected[second]},
            first,
        ),
    }
    for case, (judged, stale) in cases.items():
        e = judged[stale]
        assert cell_state(stale, e.cell, e.data, e.code)[0] == "stale", case
        with pytest.raises(StaleCells, match="not merged") as err:
            merge_cells(expected=judged)
        assert list(err.value.stale) == [stale], case


def test_a_file_without_a_cell_key_is_not_merged(fitted, other_cell, tmp_path):
    """An intact, sealed cell file that records no key (what an older bnnsweep wrote, or a
    file that is no cell) is not merged from a list of paths either: one line naming it."""
    root, spec = fitted
    good = Path(spec["cells"][0]["output"])
    keyless = tmp_path / "keyless.nc"
    content = other_cell.read_bytes()[: -(SEAL_SIZE + KEY_SIZE)]  # seal and key off
    write_atomic(keyless, lambda tmp: Path(tmp).write_bytes(content), sealed=True)
    assert seal_problem(keyless) is None and sealed_key(keyless) is None
    out = tmp_path / "merged.nc"
    code = cli.main(["merge", str(good), str(keyless), "--output", str(out)])
    assert code == 2 and not out.exists()
    with pytest.raises(StaleCells, match="records no cell key") as err:
        merge_cells([good, keyless])
    assert list(err.value.stale) == [str(keyless)]


def test_a_file_replaced_after_it_was_judged_is_not_merged(
    fitted, other_cell, tmp_path, monkeypatch
):
    """The merge holds what it parses to the key it judged: a cell file replaced by another
    intact cell's between the judgement and the read (the other run of a shared results
    directory, a user's copy) is refused, not merged as the cell asked for."""
    root, spec = fitted
    copy = tmp_path / "results"
    shutil.copytree(root, copy)
    spec = relocated(spec, root, copy)
    files = [Path(e["output"]) for e in spec["cells"]]
    read = reader.read_any

    def replaced_then_read(path):
        if Path(path) == files[1]:  # seed 1's file replaced after the judgement
            shutil.copy(other_cell, files[1])
        return read(path)

    monkeypatch.setattr(reader, "read_any", replaced_then_read)
    out = tmp_path / "merged.nc"
    code = cli.main(["merge", "--spec", str(write_spec(tmp_path, spec)), "--output", str(out)])
    assert code == 2 and not out.exists()


# --- a merged file is judged against the cell files it is merged from ------------------------


def test_merged_state_tells_current_corrupt_and_stale(fitted, tmp_path):
    """``result_check.merged_state`` (the workflow's DAG and ``bnnsweep check``): a merged
    file is current only when its seal verifies and its key (``checksum.merge_key``) is the
    one the cell files there give now, in any order; truncated, bit-flipped or replaced
    by bytes bnnsweep did not write it is corrupt; replaced by a cell file, by the merge of
    other cells, or merged from an earlier fit of one of the same cells it is stale."""
    root, spec = fitted
    files = [Path(e["output"]) for e in spec["cells"]]
    out = tmp_path / "merged.nc"
    assert cli.main(["merge", "--spec", str(write_spec(tmp_path, spec)), "--output", str(out)]) == 0
    with xr.open_dataset(out) as got:
        assert sealed_key(out) == got.attrs["merge_key"]
    assert merged_state(out, files) == ("current", "")
    assert merged_state(out, files[::-1]) == ("current", "")
    assert merged_state(tmp_path / "none.nc", files)[0] == "missing"
    data = out.read_bytes()
    flips = [bytearray(data) for _ in range(3)]
    for flip, at in zip(flips, (100, len(data) // 2, len(data) - 10), strict=True):
        flip[at] ^= 1  # the HDF5 data, the middle, the seal's checksum
    damaged = {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "junk": b"not a merged file",
        **{f"flip {i}": bytes(flip) for i, flip in enumerate(flips)},
    }
    for case, content in damaged.items():
        out.write_bytes(content)
        assert merged_state(out, files)[0] == "corrupt", case
    out.write_bytes(files[0].read_bytes())  # a cell file in its place
    assert merged_state(out, files) == (
        "stale",
        "it records no merge key (an older bnnsweep wrote it, or it is no merged file)",
    )
    write_netcdf_atomic(merge_cells([files[0]]), out)  # the merge of other cells
    assert merged_state(out, files) == (
        "stale",
        "it was not merged from the experiment's cell files",
    )
    out.write_bytes(data)
    refit = tmp_path / "refit.nc"  # seed 1 fitted again: the same cell key, other bytes
    content = runner.fit_cell(cells()[1], root / "data" / "toy_sine.nc", lambda *_: None)
    runner.write_result(content, refit)
    assert sealed_key(refit) == sealed_key(files[1])
    assert merged_state(out, [files[0], refit]) == (
        "stale",
        "it was merged from earlier files of the same cells",
    )
    report = check_merged({str(out): files, str(tmp_path / "refit-merged.nc"): [refit]})
    assert report.current == 1 and report.ok  # one not made yet is the workflow's to make
    assert not check_merged({str(out): [files[0], refit]}).ok
