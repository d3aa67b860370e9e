"""`bnnsweep merge --spec`: the workflow's merge checks every cell file against the config's
cell (its key: cell, settings, data, code version) before merging; a file that holds another
cell, or one made with other settings, is refused with one line naming it and nothing is
written (issue 36: a cell copied over another was merged silently)."""

import json
import shutil
from pathlib import Path

import pytest
import xarray as xr

from bnnsweep import cli, datasets, runner
from bnnsweep.results import merge_cells
from bnnsweep.sweeps.sweep import Cell, batch_spec, spec_text

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
    assert "do not hold the config's cell" in err and str(files[1]) in err
    assert not out.exists()
