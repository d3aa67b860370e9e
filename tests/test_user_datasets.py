"""Datasets of a user's own from the config's `datasets:` section: split recipes, training-row
standardisation, labels, errors that name the key, column or file, and a sweep end to end."""

import hashlib
import json
import subprocess
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import yaml

from bnnsweep import datasets
from bnnsweep.datasets.user import build_splits, register_user_datasets
from bnnsweep.sweeps.config import ConfigError, expand, validate

ROOT = Path(__file__).resolve().parents[1]
YACHT = ROOT / "config" / "data" / "yacht.csv"


def write_csv(path: Path, columns: dict) -> Path:
    names = list(columns)
    rows = zip(*columns.values(), strict=True)
    path.write_text(",".join(names) + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path


def spec(file, **extra):
    out = {"file": str(file), "targets": ["residuary_resistance"], "task": "regression"}
    out["splits"] = {"holdout": 0.1, "repeats": 3, "seed": 0}
    out.update(extra)
    return out


def test_holdout_splits_standardise_on_training_rows_and_cover_the_file():
    splits = build_splits(spec(YACHT), "yacht_a")
    raw = np.loadtxt(YACHT, delimiter=",", skiprows=1)
    assert list(splits) == ["0", "1", "2"]
    for split in splits.values():
        assert split.x_train.shape == (277, 6) and split.x_test.shape == (31, 6)
        np.testing.assert_allclose(split.x_train.mean(axis=0), 0.0, atol=1e-12)
        np.testing.assert_allclose(split.y_train.mean(), 0.0, atol=1e-12)
        np.testing.assert_allclose(split.y_train.std(), 1.0, rtol=1e-12)
        # back in original units, train and test rows are the file's rows, each once
        y = np.concatenate([split.y_train, split.y_test])[:, 0] * split.y_scale + split.y_mean
        np.testing.assert_allclose(np.sort(y), np.sort(raw[:, 6]), rtol=1e-12)
    tests = [set(np.round(s.y_test[:, 0] * s.y_scale + s.y_mean, 9)) for s in splits.values()]
    assert tests[0] != tests[1]  # each repeat draws its own test rows


def test_kfold_tests_every_row_once(tmp_path):
    n = 23
    path = write_csv(tmp_path / "d.csv", {"a": np.arange(n), "t": np.arange(n) * 2.0})
    splits = build_splits(
        {"file": str(path), "targets": ["t"], "task": "regression", "splits": {"kfold": 4}},
        "k",
    )
    assert list(splits) == ["0", "1", "2", "3"]
    tested = np.concatenate([s.y_test[:, 0] * s.y_scale + s.y_mean for s in splits.values()])
    np.testing.assert_allclose(np.sort(tested), np.arange(n) * 2.0, atol=1e-9)
    assert sorted(len(s.y_test) for s in splits.values()) == [5, 6, 6, 6]


def test_split_column_and_class_labels(tmp_path):
    path = write_csv(
        tmp_path / "c.csv",
        {
            "x": [0.1, 0.5, 0.9, 0.3, 0.7, 0.2],
            "species": ["b", "a", "c", "a", "b", "c"],
            "fold": ["one", "one", "two", "two", "two", "one"],
        },
    )
    recipe = {"file": str(path), "targets": ["species"], "task": "multiclass"}
    splits = build_splits({**recipe, "splits": {"column": "fold"}}, "c")
    assert list(splits) == ["one", "two"]
    assert splits["one"].y_test[:, 0].tolist() == [1.0, 0.0, 2.0]  # a, b, c numbered 0, 1, 2
    assert splits["one"].y_scale.tolist() == [1.0]
    with pytest.raises(datasets.DatasetError, match="binary target 'species' has 3 distinct"):
        build_splits({**recipe, "task": "binary", "splits": {"column": "fold"}}, "c")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"targets": ["resistance"]}, "no target column 'resistance' in the file; columns:"),
        ({"inputs": ["froude"]}, "no input column 'froude'"),
        ({"file": "/nonexistent/d.csv"}, "file '/nonexistent/d.csv' does not exist"),
        ({"splits": {"holdout": 0.001}}, "leaves no train or test row"),
        ({"inputs": ["residuary_resistance"]}, "is both an input and a target"),
    ],
)
def test_bad_entries_name_the_key_and_column(change, message):
    with pytest.raises(datasets.DatasetError, match=message) as err:
        build_splits({**spec(YACHT), **change}, "bad")
    assert "config key 'datasets.bad'" in str(err.value)


def test_a_registered_name_is_refused_and_an_unchanged_entry_registers_once():
    with pytest.raises(datasets.DatasetError, match="taken by a registered dataset"):
        register_user_datasets({"yacht": spec(YACHT)})
    entry = spec(YACHT, splits={"kfold": 3})
    assert register_user_datasets({"yacht_twice": entry}) == ["yacht_twice"]
    assert register_user_datasets({"yacht_twice": entry}) == ["yacht_twice"]
    assert datasets.describe("yacht_twice")["split_names"] == ["0", "1", "2"]


def test_config_errors_are_config_errors():
    config = yaml.safe_load((ROOT / "config" / "user_dataset.yaml").read_text())
    config["datasets"]["yacht_csv"]["file"] = str(YACHT)
    config["datasets"]["yacht_csv"]["targets"] = ["nope"]
    with pytest.raises(ConfigError, match="datasets.yacht_csv.*no target column 'nope'"):
        expand(validate(config))
    config["datasets"]["yacht_csv"]["splits"] = {"holdout": 0.1, "kfold": 3}
    with pytest.raises(ConfigError, match="datasets.yacht_csv.splits"):
        validate(config)


def _run_example(tmp_path, change=None):
    """config/user_dataset.yaml through Snakemake in ``tmp_path`` (its CSV by absolute path,
    the closed-form method only), a second dataset from the same file with k folds."""
    from bnnsweep.sweeps.workflow_run import snakemake_command

    config = yaml.safe_load((ROOT / "config" / "user_dataset.yaml").read_text())
    config["datasets"]["yacht_csv"]["file"] = str(YACHT)
    config["datasets"]["yacht_folds"] = {
        **config["datasets"]["yacht_csv"],
        "splits": {"kfold": 4, "seed": 1},
    }
    experiment = config["experiments"]["user_dataset"]
    experiment["methods"] = {"exact": experiment["methods"]["exact"]}
    experiment["datasets"] = ["yacht_csv", "yacht_folds"]
    if change:
        change(config)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    cmd = snakemake_command(ROOT, tmp_path, path, "--cores", "1", "--quiet", "all")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_the_example_sweep_runs_from_its_csv_with_holdout_and_kfold_splits(tmp_path):
    """Prepared with the file's checksum, fitted on every split of both recipes, merged and
    tabled."""
    proc = _run_example(tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = tmp_path / "results"
    with netCDF4.Dataset(results / "data" / "yacht_csv.nc") as nc:
        metadata = json.loads(nc.getncattr("metadata"))
    assert metadata["file_sha256"] == hashlib.sha256(YACHT.read_bytes()).hexdigest()
    cells = results / "user_dataset" / "cells"
    assert len(list((cells / "yacht_csv" / "exact").glob("*.nc"))) == 5
    assert len(list((cells / "yacht_folds" / "exact").glob("*.nc"))) == 4
    table = (results / "user_dataset" / "tables" / "error_table.md").read_text()
    assert "| yacht_csv | exact | 0 | 5 | 0 |" in table
    assert "| yacht_folds | exact | 0 | 4 | 0 |" in table


@pytest.mark.parametrize(
    "column, content, message",
    [
        ("froude_number", None, "no input column 'froude_number'"),
        ("residuary_resistance", "high", "target column 'residuary_resistance' is not numeric"),
    ],
)
def test_a_malformed_csv_fails_before_any_job_naming_the_column(tmp_path, column, content, message):
    frame = (YACHT.read_text()).splitlines()
    header = frame[0].split(",")
    index = header.index(column)
    rows = []
    for line in frame:
        cells = line.split(",")
        if content is None:
            del cells[index]
        elif line is not frame[0]:
            cells[index] = content
        rows.append(",".join(cells))
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(rows) + "\n")

    def use_bad_file(config):
        for entry in config["datasets"].values():
            entry["file"] = str(bad)
            entry["inputs"] = [c for c in header if c != "residuary_resistance"]

    proc = _run_example(tmp_path, use_bad_file)
    assert proc.returncode != 0
    assert message in proc.stderr and "config key 'datasets.yacht_csv'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists()  # no job ran


def test_an_edited_data_file_refits_the_cells_fitted_on_it(tmp_path):
    """Issue 36: the targets of the user's CSV multiplied by 10, the same command prepares
    the data again and refits every cell on it (their key records the prepared data's
    checksum): the merged RMSE is ten times the first, not the old number kept."""
    import xarray as xr

    data = tmp_path / "yacht.csv"
    data.write_text(YACHT.read_text())

    def mine(config):
        for name in ("yacht_csv", "yacht_folds"):
            config["datasets"][name]["file"] = str(data)

    assert _run_example(tmp_path, mine).returncode == 0
    merged = tmp_path / "results" / "user_dataset" / "merged.nc"
    with xr.open_dataset(merged) as ds:
        before = ds["test_rmse"].values.copy()
    lines = data.read_text().splitlines()
    header = lines[0].split(",")
    column = header.index("residuary_resistance")
    edited = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        cells[column] = repr(float(cells[column]) * 10)
        edited.append(",".join(cells))
    data.write_text("\n".join(edited) + "\n")
    proc = _run_example(tmp_path, mine)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    with xr.open_dataset(merged) as ds:
        after = ds["test_rmse"].values
    np.testing.assert_allclose(after, 10 * before, rtol=1e-6)


def test_fit_batch_refits_exactly_the_cells_whose_data_changed(tmp_path):
    """The same, in-process: fit-batch keeps cells on unchanged data and refits those whose
    prepared data's checksum differs from the one their key records."""
    from bnnsweep.cells.reader import read_variables
    from bnnsweep.runner import fit_batch
    from bnnsweep.sweeps.config import validate_datasets
    from bnnsweep.sweeps.sweep import Cell, batch_spec

    csv = tmp_path / "y.csv"
    csv.write_text(YACHT.read_text())
    specs = {"mine": spec(csv, splits={"holdout": 0.1, "repeats": 2, "seed": 0})}

    def prepare():
        register_user_datasets(validate_datasets(specs))
        datasets.save_netcdf(datasets.load("mine"), tmp_path / "data" / "mine.nc")

    cells = [
        Cell("e", "mine", str(s), "exact", "exact", 0, (("hidden", 0),), {"hidden": 0, "grid": 21})
        for s in range(2)
    ]
    batch = batch_spec(cells, False, str(tmp_path), True)

    def rmse():
        return np.array(
            [read_variables(tmp_path / f"{c.path_id}.nc")[0]["test_rmse"][1] for c in cells]
        )

    prepare()
    assert fit_batch(batch, log=lambda m: None) == {"fitted": 2, "skipped": 0}
    before = rmse()
    prepare()  # prepared again from the same file: same data
    assert fit_batch(batch, log=lambda m: None) == {"fitted": 0, "skipped": 2}
    frame = np.genfromtxt(csv, delimiter=",", names=True)
    frame["residuary_resistance"] *= 10
    header = ",".join(frame.dtype.names)
    np.savetxt(csv, frame, delimiter=",", header=header, comments="", fmt="%.17g")
    prepare()
    assert fit_batch(batch, log=lambda m: None) == {"fitted": 2, "skipped": 0}
    np.testing.assert_allclose(rmse(), 10 * before, rtol=1e-9)
