"""End to end: the smoke sweep under Snakemake in a temporary directory, merged results,
resumption after an interruption, reruns triggered by a changed setting, and the CLI."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from bnnsweep.results import hypercube
from bnnsweep.sweeps.workflow_run import snakemake_command

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow


def snakemake(workdir, config, *extra, check=True):
    cmd = snakemake_command(ROOT, workdir, config, "--cores", "2", *extra)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stdout[-3000:] + proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("smoke")
    config = workdir / "smoke.yaml"
    shutil.copy(ROOT / "config" / "smoke.yaml", config)
    snakemake(workdir, config)
    return workdir, config


def test_smoke_sweep_writes_merged_results_and_figures(smoke_run):
    workdir, _ = smoke_run
    results = workdir / "results" / "smoke"
    with xr.open_dataset(results / "merged.nc") as merged:
        assert merged.sizes["run"] == 3
        assert set(merged.method.values) == {"laplace", "map"}
        assert set(merged.method_name.values) == {"laplace", "map"}
        for name in (
            "log_evidence",
            "log_evidence_kind",
            "test_rmse",
            "test_nmse",
            "test_loglik",
            "train_loglik",
            "pred_mean",
            "pred_var",
            "status",
            "runtime_s",
            "n_grad_evals",
        ):
            assert name in merged
        assert np.all(np.isfinite(merged.test_rmse.values))
        laplace = merged.where(merged.method == "laplace", drop=True)
        assert np.all(np.isfinite(laplace.log_evidence.values))
        cube = hypercube(merged)
        assert cube.test_rmse.sel({"method": "map", "hidden": 2}).notnull().all()
        assert cube.test_rmse.sel({"method": "map", "hidden": 1}).isnull().all()  # ragged axis
        assert merged.pred_mean.attrs["units"] and merged.test_rmse.attrs["long_name"]
    for kind in ("occam_hill", "toy_regression"):
        assert (results / "figures" / f"{kind}.png").stat().st_size > 5000
    assert (results / "tables" / "error_table.md").read_text().count("|") > 10
    # Snakemake's own record of every fit job: wall time, CPU time, peak memory
    records = sorted((workdir / "results" / "benchmarks" / "smoke" / "batches").glob("*.tsv"))
    assert len(records) == len(
        list((workdir / "results" / "logs" / "smoke" / "batches").glob("*.log"))
    )
    for record in records:
        header, values = record.read_text().splitlines()[:2]
        row = dict(zip(header.split("\t"), values.split("\t"), strict=True))
        assert float(row["cpu_time"]) > 0 and float(row["max_rss"]) > 0


def test_report_gives_every_figure_its_own_caption(smoke_run):
    """`snakemake --report` on the smoke sweep: each figure and table is in the report once,
    with the caption of its own kind."""
    workdir, config = smoke_run
    report = workdir / "report.html"
    snakemake(workdir, config, "--report", str(report))
    html = report.read_text()
    for phrase in ("Occam hill", "Predictions on a one-input problem", "Test errors of experiment"):
        assert html.count(phrase) == 1, phrase
    assert "one predictive standard deviation" in html  # what toy_regression draws


def test_cell_file_records_settings_and_provenance(smoke_run):
    workdir, _ = smoke_run
    cell = next((workdir / "results" / "smoke" / "cells" / "toy_sine" / "laplace").glob("h1_*.nc"))
    with xr.open_dataset(cell) as ds:
        assert '"restarts": 2' in ds.attrs["settings_json"]
        assert ds.attrs["bnnsweep_version"] and ds.attrs["git_revision"]
        assert ds.log_evidence_kind.item() == "laplace"
        assert '"cycles": 3' in ds.attrs["resolved_settings_json"]
        assert '"evidence": "full"' in ds.attrs["resolved_settings_json"]


def created(path: Path) -> str:
    """When a cell file was written (Snakemake touches the kept cells of a batch it reruns,
    so their mtime changes; their content does not)."""
    with xr.open_dataset(path) as ds:
        return ds.attrs["created"] + ds.attrs["code_version"] + str(ds.runtime_s.item())


def test_rerun_after_interruption_and_changed_setting(smoke_run):
    workdir, config = smoke_run
    cells = sorted((workdir / "results" / "smoke" / "cells").rglob("*.nc"))
    stamps = {p: created(p) for p in cells}
    # the state a sweep killed mid-way leaves: one cell unfinished (only a half-written
    # temporary file), nothing merged or drawn yet
    victim = cells[0]
    victim.unlink()
    (victim.parent / f".{victim.name}.abc.tmp.nc").write_bytes(b"partial")
    for done in ("merged.nc", "figures", "tables"):
        shutil.rmtree(workdir / "results" / "smoke" / done, ignore_errors=True)
        (workdir / "results" / "smoke" / done).unlink(missing_ok=True)
    dry = snakemake(workdir, config, "-n", "--quiet", "host")  # the job blocks
    planned = [line for line in dry.stdout.splitlines() if "output:" in line and "/cells/" in line]
    # the victim's batch job, whose other cell is kept (fit-batch skips current files)
    assert len(planned) == 1 and victim.name in planned[0]
    snakemake(workdir, config)
    assert victim.exists()
    for p in cells[1:]:
        assert created(p) == stamps[p], f"{p.name} was recomputed"
    # changing one method's setting reruns only that method's cells
    changed = yaml.safe_load(config.read_text())
    changed["experiments"]["smoke"]["methods"]["map"]["restarts"] = 3
    config.write_text(yaml.safe_dump(changed))
    dry = snakemake(workdir, config, "-n", "--quiet", "host")  # the job blocks
    fits = [
        line for line in dry.stdout.splitlines() if "cells/toy_sine/" in line and "output:" in line
    ]
    assert fits and all("/map/" in line for line in fits)


def test_a_batch_spec_this_run_did_not_make_is_one_line(smoke_run):
    """A batch spec is named by its cells' code version; when the package changes while
    the workflow runs, a job's re-parse asks for a name the run did not make. The failure
    says so in one line, and every result already written stays."""
    workdir, config = smoke_run
    merged = workdir / "results" / "smoke" / "merged.nc"
    before = merged.read_bytes()
    proc = snakemake(workdir, config, "results/batches/0123456789abcdef0123.json", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "batch spec 0123456789abcdef0123 is not one of this run's batches" in out
    assert "run the same snakemake command again" in out
    assert merged.read_bytes() == before


def test_malformed_config_fails_before_any_job(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "experiments": {
                    "x": {"datasets": ["toy_sine"], "methods": {"laplace": {"hidden": [-2]}}}
                }
            }
        )
    )
    proc = snakemake(tmp_path, config, check=False)
    assert proc.returncode != 0
    assert "experiments.x.methods.laplace.hidden" in proc.stderr + proc.stdout
    assert not (tmp_path / "results").exists()


def test_cli_fit_list_and_errors(tmp_path):
    out = tmp_path / "cell.nc"
    cli = [sys.executable, "-m", "bnnsweep.cli"]
    subprocess.run(
        [
            *cli,
            "fit",
            "--dataset",
            "toy_sine",
            "--method",
            "map",
            "--hidden",
            "2",
            "--set",
            "restarts=1",
            "--set",
            "max_iter=50",
            "--output",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    with xr.open_dataset(out) as ds:
        assert ds.hidden.item() == 2 and ds.method.item() == "map"
    listing = subprocess.run([*cli, "list", "methods"], check=True, capture_output=True, text=True)
    assert "laplace" in listing.stdout and "restarts" in listing.stdout
    bad = subprocess.run(
        [*cli, "fit", "--dataset", "nope", "--method", "map", "--output", str(tmp_path / "x.nc")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "unknown dataset 'nope'" in bad.stderr
    bad = subprocess.run(
        [
            *cli,
            "fit",
            "--dataset",
            "toy_sine",
            "--method",
            "map",
            "--set",
            "restartz=1",
            "--output",
            str(tmp_path / "x.nc"),
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "did you mean 'restarts'" in bad.stderr
    assert not (tmp_path / "x.nc").exists()


def test_merge_stores_test_data_once_per_test_set(tmp_path):
    """Cells of two datasets (1 and 12 inputs) and two seeds: the merged file holds each
    test set once, and figures see every run's own test data."""
    from bnnsweep.figures import load_merged
    from bnnsweep.results import merge_cells, run_test_data, with_run_test_data
    from bnnsweep.runner import fit_cell, write_result
    from bnnsweep.sweeps.sweep import Cell

    paths = []
    for dataset in ("toy_sine", "sunspots"):
        for seed in (0, 1):
            settings = {"hidden": 1, "restarts": 1, "max_iter": 5}
            cell = Cell("m", dataset, "default", "map", "map", seed, (("hidden", 1),), settings)
            path = tmp_path / f"{dataset}_{seed}.nc"
            paths.append(write_result(fit_cell(cell, log=lambda m: None), path))
    paths.sort(key=str)  # the order of the runs in the merged file
    merged = merge_cells(paths)
    assert merged.sizes["run"] == 4 and merged.sizes["test_set"] == 2
    assert merged["x_test"].dims == ("test_set", "test_point", "input")
    assert sorted(merged.test_set_dataset.values) == ["sunspots", "toy_sine"]
    x = run_test_data(merged, "x_test")
    for run in range(4):
        with xr.open_dataset(paths[run]) as cell:
            own = cell["x_test"].values
        got = x.isel(run=run).values[: own.shape[0], : own.shape[1]]
        np.testing.assert_array_equal(got, own)
    write_result(merged, tmp_path / "merged.nc")
    per_run = with_run_test_data(load_merged(tmp_path / "merged.nc"))
    assert per_run["y_test"].dims[0] == "run" and "test_set" not in per_run.dims
