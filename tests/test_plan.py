"""`bnnsweep plan` calibrates the work models on measured cells: on the fit's CPU time where a
cell records it (``fit_cpu_s``), else on its wall time (``runtime_s``)."""

import netCDF4
import pytest

from bnnsweep.runner import fit_cell_to_file
from bnnsweep.sweeps import jobsize
from bnnsweep.sweeps.config import expand, validate

CONFIG = {
    "experiments": {
        "t": {
            "datasets": ["toy_sine"],
            "seeds": [0, 1],
            "methods": {"map": {"hidden": 2, "restarts": 1, "max_iter": 20}},
        }
    }
}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A results directory with the config's two cells fitted, and the cells."""
    results = tmp_path_factory.mktemp("results")
    cells = expand(validate(CONFIG))
    for cell in cells:
        fit_cell_to_file(cell, results / f"{cell.path_id}.nc", log=lambda *_: None)
    return results, cells


def _record(results, cell, runtime_s, fit_cpu_s=None):
    """Overwrite a cell file's measured times (sealed again: an edited cell is otherwise
    damaged, and calibration skips it)."""
    from bnnsweep.cells.file_seal import seal

    path = results / f"{cell.path_id}.nc"
    with netCDF4.Dataset(path, "a") as nc:
        nc["runtime_s"][...] = runtime_s
        if fit_cpu_s is None:
            nc.delncattr("fit_cpu_s")
        else:
            nc.setncattr("fit_cpu_s", fit_cpu_s)
    seal(path)


def test_calibration_uses_the_fits_cpu_time_where_recorded(measured):
    results, cells = measured
    bound = jobsize.fit_seconds(cells[0], jobsize.data_shape("toy_sine", "default"))
    for cell in cells:
        _record(results, cell, runtime_s=100 * bound, fit_cpu_s=3 * bound)
    calib = jobsize.calibration(results)["map"]
    assert calib["ratio"] == pytest.approx(3.0)
    assert calib["cells"] == 2 and calib["clocks"] == {"cpu": 2}
    table = jobsize.plan_table(validate(CONFIG), cells, results)
    assert "2 cells (CPU time), bound x 3" in table
    estimate = 2 * 3 * bound + jobsize.STARTUP_MEASURED_S
    assert f"({estimate:.0f} core-s;" in table


def test_cells_without_cpu_time_calibrate_on_wall_time(measured):
    results, cells = measured
    bound = jobsize.fit_seconds(cells[0], jobsize.data_shape("toy_sine", "default"))
    _record(results, cells[0], runtime_s=5 * bound)
    _record(results, cells[1], runtime_s=100 * bound, fit_cpu_s=7 * bound)
    calib = jobsize.calibration(results)["map"]
    assert calib["clocks"] == {"wall": 1, "cpu": 1}
    assert calib["ratio"] == pytest.approx(7.0)  # the upper median of 5 and 7
    assert "2 cells (1 CPU, 1 wall time)" in jobsize.plan_table(validate(CONFIG), cells, results)


def test_cells_are_packed_by_their_typical_time_and_ask_for_their_bound():
    """vi_gauss's bound (every outer iteration to max_iter) is far above its fits' time: cells
    are packed by the bound times Work.typical, up to ``target_minutes`` of typical time per
    job, and a job still asks for SAFETY times the bound of its cells."""

    def vi_gauss_cells(n):
        methods = {"vi_gauss": {"hidden": 3}}
        experiment = {"datasets": ["toy_sine"], "seeds": list(range(n)), "methods": methods}
        config = validate({"experiments": {"t": experiment}})
        return config, expand(config)

    _, (cell,) = vi_gauss_cells(1)
    bound = jobsize.fit_seconds(cell)
    typical = jobsize.packing_seconds(cell)
    assert typical < bound
    per_job = int(60 * jobsize.BATCHING_DEFAULTS["target_minutes"] // typical)
    assert per_job >= 2
    n = 2 * per_job + 1  # so this config packs, into three jobs
    config, cells = vi_gauss_cells(n)
    batches = jobsize.plan_batches(cells, jobsize.batching_settings(config))
    assert [len(b.cells) for b in batches] == [per_job, per_job, 1]
    for batch in batches:
        # first asked: 3x the plan's estimate (typical time and a start-up) in whole
        # minutes, never above it, at least the floor; a retry of a job killed at that
        # limit: 3x the bound
        estimate = jobsize.typical_seconds(batch.cells) + jobsize.STARTUP_MEASURED_S
        asked_s = 60 * batch.resources()["runtime"]
        if asked_s > 60 * jobsize.MIN_RUNTIME_MIN:
            assert jobsize.SAFETY * estimate - 60 < asked_s <= jobsize.SAFETY * estimate
        else:
            assert asked_s == 60 * jobsize.MIN_RUNTIME_MIN
        assert (
            60 * batch.resources(attempt=2)["runtime"] >= jobsize.SAFETY * len(batch.cells) * bound
        )


SHORT_CELLS = {
    "experiments": {
        "t": {
            "datasets": ["toy_sine"],
            "seeds": [0, 1],
            "methods": {
                "map": {"hidden": 2, "restarts": 1, "max_iter": 20},
                "laplace": {"hidden": [1, 2], "restarts": 1},
            },
        },
        "u": {
            "datasets": ["toy_sine"],
            "seeds": [0],
            "methods": {"map": {"hidden": 2, "restarts": 1, "max_iter": 20}},
        },
    }
}


def test_short_cells_of_several_labels_share_a_job_within_their_experiment(tmp_path):
    """Short cells of map and laplace (far below target_minutes together) are one job, named
    by its first and last label; another experiment's cells are a job of their own. `plan`
    still counts cells per label, and the shared job for each of them."""
    config = validate(SHORT_CELLS)
    cells = expand(config)
    batches = jobsize.plan_batches(cells, jobsize.batching_settings(config))
    assert [(b.batch_id, len(b.cells)) for b in batches] == [
        ("t.map_to_laplace.0", 6),
        ("u.map.0", 1),
    ]
    assert batches[0].cells == [c for c in cells if c.experiment == "t"]
    table = jobsize.plan_table(config, cells, tmp_path)
    rows = {
        line.split("|")[1].strip(): line.split("|")
        for line in table.splitlines()[2:]
        if "|" in line
    }
    assert [rows[k][3].strip() for k in ("t / map", "t / laplace", "u / map")] == ["2", "4", "1"]
    assert [rows[k][4].strip() for k in ("t / map", "t / laplace", "u / map")] == ["1", "1", "1"]
    assert "7 cells in 2 jobs" in table
    # one label alone keeps the name it had
    alone = validate(
        {
            "experiments": {
                "t": {
                    **SHORT_CELLS["experiments"]["t"],
                    "methods": {"map": SHORT_CELLS["experiments"]["t"]["methods"]["map"]},
                }
            }
        }
    )
    assert [
        b.batch_id for b in jobsize.plan_batches(expand(alone), jobsize.batching_settings(alone))
    ] == ["t.map.0"]


def test_fit_jobs_are_scheduled_longest_first_after_their_data(tmp_path):
    """Each batch job's Snakemake priority is its typical length in seconds
    (``Batch.priority``), so the scheduler starts the longest ready batch first; data
    preparation outranks every fit (a long fit waiting for its data would start last)."""
    import re
    import subprocess
    from pathlib import Path

    import yaml

    from bnnsweep.sweeps.sweep import cell_index
    from bnnsweep.sweeps.workflow_run import snakemake_command

    config = {
        "experiments": {
            "long": {
                "datasets": ["toy_sine"],
                "seeds": [0],
                "methods": {"vi_mixture": {"hidden": 3, "components": 3}},
            },
            "short": SHORT_CELLS["experiments"]["t"],
        }
    }
    cells = list(cell_index(expand(validate(config))).values())  # as the Snakefile orders them
    batches = jobsize.plan_batches(cells, jobsize.BATCHING_DEFAULTS)
    expected = {b.rule_name: b.priority() for b in batches}
    lengths = {b.rule_name: sum(jobsize.packing_seconds(c) for c in b.cells) for b in batches}
    assert sorted(expected, key=expected.get) == sorted(lengths, key=lengths.get)
    assert len(set(expected.values())) == len(expected)  # a real ordering, not a tie
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    root = Path(__file__).resolve().parents[1]
    cmd = snakemake_command(
        root, tmp_path, path, "--dry-run", "--quiet", "host", "--cores", "2"
    )  # the job blocks, which the local profile quiets
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
    out = proc.stdout + proc.stderr
    seen = {}
    for block in re.split(r"\n(?=(?:local)?rule )", out):
        if m := re.match(r"(?:local)?rule (\w+):", block):
            p = re.search(r"^\s+priority: (\d+)$", block, re.M)
            seen.setdefault(m.group(1), int(p.group(1)) if p else 0)
    assert {name: seen[name] for name in expected} == expected
    assert seen["prepare_data"] > max(expected.values())


def test_vi_gauss_is_priced_per_covariance_family():
    """Issue 35: a factor-analysis cell was priced with the share of its bound that diagonal
    fits take (about 9 times low). Each family takes its own measured share; full and
    factor-analysis fits are priced above a diagonal one on the same data, and a larger
    network costs more than a smaller one."""
    from bnnsweep.methods.vi_gauss import VI_GAUSS_TYPICAL
    from bnnsweep.sweeps.sweep import Cell

    def cell(covariance, hidden=3):
        settings = {"hidden": hidden, "covariance": covariance, "prior": "single"}
        return Cell("e", "toy_sine", "default", "v", "vi_gauss", 0, (("hidden", hidden),), settings)

    price = {kind: jobsize.packing_seconds(cell(kind)) for kind in ("diag", "fa", "full")}
    for kind, seconds in price.items():
        assert seconds == pytest.approx(VI_GAUSS_TYPICAL[kind] * jobsize.fit_seconds(cell(kind)))
    assert price["fa"] > 2 * price["diag"] and price["full"] > 2 * price["diag"]
    for kind in price:
        assert jobsize.packing_seconds(cell(kind, 8)) > price[kind]
