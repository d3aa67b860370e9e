"""Bad input fails early with a message that names the problem, never deep inside a fit.

Complements tests/test_config.py (misspelled keys and settings, wrong setting types, unknown
names with a close match, the fuzz of the loader) and tests/test_datasets.py (vendored raw
files with NaN, wrong columns or checksum): here are the cases those leave out -- names
without a close match, wrong types and empty or out-of-range axes, a setting of another
method, misspelled enum values, corrupt prepared dataset files (what the fit rule reads)
and path traversal through config names and Snakemake targets.
"""

import copy
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bnnsweep import datasets
from bnnsweep.datasets.base import DatasetError
from bnnsweep.method_base import SettingsError
from bnnsweep.methods import REGISTRY, get_method
from bnnsweep.runner import fit_cell_to_file
from bnnsweep.sweeps.config import ConfigError, expand, validate
from bnnsweep.sweeps.sweep import Cell

ROOT = Path(__file__).resolve().parents[1]
BASE = {
    "experiments": {
        "exp": {
            "datasets": ["toy_sine"],
            "methods": {"laplace": {"hidden": [1, 2], "restarts": 2}, "map": {"hidden": 3}},
        }
    }
}


def config_error(mutate) -> str:
    config = copy.deepcopy(BASE)
    mutate(config)
    with pytest.raises(ConfigError) as err:
        expand(validate(config))
    return str(err.value)


def exp(mutate):
    return lambda c: mutate(c["experiments"]["exp"])


def laplace(**values):
    return exp(lambda e: e["methods"]["laplace"].update(values))


# --- unknown names: the message lists every valid name --------------------------------------


def test_unknown_method_lists_valid_methods():
    message = config_error(exp(lambda e: e["methods"].update(foo={"method": "qqqq"})))
    assert "experiments.exp.methods.foo" in message and "unknown method 'qqqq'" in message
    assert f"valid methods: {', '.join(sorted(REGISTRY))}" in message
    with pytest.raises(SettingsError, match="valid methods: .*exact.*laplace"):
        get_method("qqqq")


def test_unknown_dataset_lists_valid_datasets():
    message = config_error(exp(lambda e: e.update(datasets=["qqqq"])))
    assert "unknown dataset 'qqqq'" in message
    assert f"valid datasets: {', '.join(datasets.names())}" in message


# --- wrong types, negative, empty or out-of-range axes ---------------------------------------


@pytest.mark.parametrize(
    "mutate, message",
    [
        (laplace(hidden="8"), "'experiments.exp.methods.laplace.hidden': '8' is not a valid value (a non-negative integer"),
        (laplace(hidden=1.5), "'experiments.exp.methods.laplace.hidden': 1.5 is not a valid value"),
        (laplace(hidden=True), "'experiments.exp.methods.laplace.hidden': True is not a valid value"),
        (laplace(hidden=[2, 2]), "'experiments.exp.methods.laplace.hidden': [2, 2] is not a valid value"),
        (exp(lambda e: e["methods"].update(vi_mixture={"components": 0})),
         "'experiments.exp.methods.vi_mixture.components': 0 is not a valid value (a positive integer"),
        (exp(lambda e: e["methods"].update(chaining={"schedule": 5})),
         "'experiments.exp.methods.chaining.schedule': 5 is not a valid value (a schedule name"),
        (exp(lambda e: e.update(seeds="a")), "'experiments.exp.seeds': 'a' is not of type 'array'"),
        (exp(lambda e: e.update(seeds=[])), "'experiments.exp.seeds': [] should be non-empty"),
        (exp(lambda e: e.update(seeds=[1.5])), "'experiments.exp.seeds.0': 1.5 is not of type 'integer'"),
        (exp(lambda e: e.update(seeds=[2**40])), "'experiments.exp.seeds.0': 1099511627776 is greater than"),
        (exp(lambda e: e.update(datasets="toy_sine")), "'experiments.exp.datasets': 'toy_sine' is not of type 'array'"),
        (exp(lambda e: e.update(datasets=[])), "'experiments.exp.datasets': [] should be non-empty"),
        (exp(lambda e: e.update(splits=3)), "'experiments.exp.splits': 3 is not of type 'array'"),
        (exp(lambda e: e.update(methods={})), "'experiments.exp.methods': {} should be non-empty"),
        (exp(lambda e: e.update(methods=["laplace"])), "'experiments.exp.methods': ['laplace'] is not of type 'object'"),
        (exp(lambda e: e["methods"].update(laplace=None)), "'experiments.exp.methods.laplace': None is not of type 'object'"),
        (lambda c: c.update(experiments={}), "'experiments': {} should be non-empty"),
        (lambda c: c.update(results_dir=5), "'results_dir': 5 is not of type 'string'"),
        (lambda c: c.update(grouping={"mode": "group", "short_minutes": -1}), "'grouping.short_minutes': -1"),
        (laplace(restarts=0), "setting 'restarts' must be > 0, got 0"),
        (laplace(tol="small"), "setting 'tol' must be a number, got 'small'"),
        (laplace(hyperpriors=[1]), "setting 'hyperpriors' must be a mapping"),
        (laplace(hyperpriors={"input_hidden": {"shape": -1, "rate": 1}}), "'hyperpriors.input_hidden': Gamma hyperprior needs shape > 0"),
        (laplace(noise_hyperprior={"shape": 1}), "'noise_hyperprior' needs either shape and rate, or mean and s"),
    ],
)  # fmt: skip
def test_wrong_type_or_range_names_the_key(mutate, message):
    assert message in config_error(mutate)


def test_cli_refuses_a_seed_the_result_files_cannot_hold(tmp_path):
    from bnnsweep.cli import main

    out = tmp_path / "cell.nc"
    args = ["fit", "--dataset", "toy_sine", "--method", "exact", "--output", str(out)]
    assert main([*args, "--seed", str(2**70)]) == 2
    assert not out.exists()


# --- a setting of another method -------------------------------------------------------------


@pytest.mark.parametrize(
    "method, key, value",
    [("laplace", "samples", 100), ("laplace", "components", 2), ("exact", "restarts", 3),
     ("map", "schedule", "geometric5")],
)  # fmt: skip
def test_setting_of_another_method_is_refused(method, key, value):
    message = config_error(exp(lambda e: e["methods"].update({method: {key: value}})))
    assert f"experiments.exp.methods.{method}" in message
    assert f"unknown setting {key!r}" in message or f"has no axis {key!r}" in message
    if "unknown setting" in message:  # the valid settings of this method are listed
        assert f"valid settings: {', '.join(sorted(get_method(method).defaults()))}" in message


# --- misspelled enum values suggest the right one --------------------------------------------


@pytest.mark.parametrize(
    "mutate, message",
    [
        (exp(lambda e: e.update(figures=["error_tabel"])),
         "'experiments.exp.figures.0': 'error_tabel' is not one of occam_hill"),
        (exp(lambda e: e.update(figures=["error_tabel"])), "(did you mean 'error_table'?)"),
        (lambda c: c.update(grouping={"mode": "gruop"}), "(did you mean 'group'?)"),
        (laplace(activation="tahn"), "(did you mean 'tanh'?)"),
        (laplace(prior="groupd"), "(did you mean 'grouped'?)"),
        (laplace(evidence="ful"), "(did you mean 'full'?)"),
        (laplace(hyperpriors={"input_hiden": {"shape": 1, "rate": 1}}), "(did you mean 'input_hidden'?)"),
    ],
)  # fmt: skip
def test_misspelled_enum_value_suggests(mutate, message):
    assert message in config_error(mutate)


def test_misspelled_schedule_lists_the_valid_forms():
    proper = {
        r: {"shape": 1.0, "rate": 1.0}
        for r in ("input_hidden", "hidden_bias", "hidden_output", "output_bias")
    }
    entry = {
        "schedule": "geometrik5",
        "hyperpriors": proper,
        "noise_hyperprior": {"shape": 2.0, "rate": 0.1},
    }
    message = config_error(exp(lambda e: e["methods"].update(chaining=entry)))
    assert "unknown schedule 'geometrik5'" in message and "geometricK" in message  # fmt: skip


# --- prepared dataset files (bnnsweep prepare, read by the fit rule) -------------------------


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "toy_sine.nc"
    datasets.save_netcdf(datasets.load("toy_sine"), path)
    return path


def rewritten(prepared, tmp_path, change, sealed=True) -> Path:
    """A copy of the prepared file with ``change(ds)`` applied, attributes kept, and (as a
    file written by bnnsweep from bad data would be) sealed with the checksum of its bytes,
    so that the checks of its content are what refuses it."""
    from bnnsweep.cells.file_seal import seal

    ds = xr.load_dataset(prepared, engine="netcdf4", mask_and_scale=False)
    ds = change(ds) or ds
    out = tmp_path / "toy_sine.nc"
    encoding = {name: {"_FillValue": None} for name in ds.data_vars}
    ds.to_netcdf(out, engine="netcdf4", encoding=encoding)
    if sealed:
        seal(out)
    return out


def set_value(name, index, value):
    def change(ds):
        values = ds[name].values.copy()
        values[index] = value
        ds[name] = (ds[name].dims, values)

    return change


def extra_output_column(ds):
    values = ds["y_test__default"].values
    ds["y_test__default"] = (("test__default", "output2"), np.column_stack([values, values]))


@pytest.mark.parametrize(
    "change, message",
    [
        (set_value("x_train__default", (3, 0), np.nan), "x_train contains NaN or inf"),
        (set_value("y_test__default", (0, 0), np.inf), "y_test contains NaN or inf"),
        (set_value("y_train__default", (5, 0), 0.123), "checksum mismatch"),
        (extra_output_column, "y_test has 2 output columns, y_train has 1"),
    ],
)
def test_corrupt_prepared_file_is_refused_with_its_name(prepared, tmp_path, change, message):
    bad = rewritten(prepared, tmp_path, change)
    with pytest.raises(DatasetError) as err:
        datasets.load_netcdf(bad)
    assert str(bad) in str(err.value) and message in str(err.value)
    # the fit of a cell on it stops before fitting and writes nothing
    cell = Cell("t", "toy_sine", "default", "exact", "exact", 0, (), {})
    out = tmp_path / "cell.nc"
    with pytest.raises(DatasetError, match=message):
        fit_cell_to_file(cell, out, data_path=bad, log=lambda *_: None)
    assert not out.exists()


def test_prepared_file_carries_a_checksum_and_one_without_is_refused(prepared, tmp_path):
    """Without its checksum a prepared file could hold altered data unnoticed (issue 14,
    item 6): it is refused with the advice to prepare it again."""
    with xr.open_dataset(prepared) as ds:
        assert len(ds.attrs["sha256"]) == 64
    unchanged = rewritten(prepared, tmp_path, lambda ds: None)
    assert datasets.load_netcdf(unchanged).split("default").x_train.shape == (30, 1)
    stripped = rewritten(prepared, tmp_path, lambda ds: ds.attrs.pop("sha256") and None)
    with pytest.raises(datasets.DatasetError, match="no checksum .*prepare it again"):
        datasets.load_netcdf(stripped)
    # its bytes unsealed (rewritten by another tool): refused before any parser reads it
    unsealed = rewritten(prepared, tmp_path, lambda ds: None, sealed=False)
    with pytest.raises(datasets.DataFileError, match="records no checksum.*prepare it again"):
        datasets.load_netcdf(unsealed)


def test_cli_fit_on_a_corrupt_prepared_file_gives_a_one_line_error(prepared, tmp_path):
    bad = rewritten(prepared, tmp_path, set_value("x_test__default", (0, 0), np.nan))
    out = tmp_path / "cell.nc"
    proc = subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", "fit", "--dataset", "toy_sine", "--method", "exact",
         "--data", str(bad), "--output", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"bnnsweep: error: {bad}: split 'default': x_test contains NaN")
    assert not out.exists()


# --- path traversal: impossible by construction ----------------------------------------------


@pytest.mark.parametrize(
    "mutate, key",
    [
        (lambda c: c["experiments"].update({"../x": c["experiments"]["exp"]}), "'experiments'"),
        (exp(lambda e: e["methods"].update({"../x": {"method": "map"}})), "'experiments.exp.methods'"),
        (exp(lambda e: e["methods"].update(x={"method": "../map"})), "'experiments.exp.methods.x.method'"),
        (exp(lambda e: e.update(datasets=["../../etc"])), "'experiments.exp.datasets.0'"),
        (exp(lambda e: e.update(splits=["../x"])), "'experiments.exp.splits.0'"),
        (exp(lambda e: e.update(splits=["a/b"])), "'experiments.exp.splits.0'"),
        (exp(lambda e: e["methods"].update(chaining={"schedule": "../x"})), "'experiments.exp.methods.chaining.schedule'"),
    ],
)  # fmt: skip
def test_config_names_cannot_hold_path_separators(mutate, key):
    message = config_error(mutate)
    assert f"config key {key}" in message
    assert "must match" in message or "is not a valid value" in message


@pytest.mark.workflow
def test_snakemake_targets_outside_the_sweep_are_refused(tmp_path):
    """Targets with '..' (or naming no configured cell) match no rule, so nothing is written;
    the wildcard constraints of the Snakefile admit no '.' or '/' in a wildcard."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    config = workdir / "config.yaml"
    config.write_text(yaml.safe_dump({"experiments": {"exp": {"datasets": ["toy_sine"], "methods": {"exact": {"hidden": 0}}}}}))  # fmt: skip
    targets = {
        "results/../escaped.nc": "No rule to produce",
        "results/data/../../../escaped.nc": "No rule to produce",
        "results/exp/cells/toy_sine/exact/h0_split-default_seed-0/../../../../../../escaped.nc":
            "No rule to produce",
        # cells are outputs of their batch's rule only: a cell the config lacks has none
        "results/exp/cells/toy_sine/exact/h0_split-default_seed-7.nc": "No rule to produce",
        "results/data/qqqq.nc": "Error in rule prepare_data",
    }  # fmt: skip
    before = sorted(os.listdir(tmp_path))
    for target, message in targets.items():
        proc = subprocess.run(
            [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
             "--directory", str(workdir), "--configfile", str(config), "--cores", "1",
             target, "--quiet", "host"],  # the job blocks back (the profile hides rules)
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        output = proc.stdout + proc.stderr
        assert proc.returncode != 0, target
        assert message in output, f"{target}:\n{output[-2000:]}"
    assert sorted(os.listdir(tmp_path)) == before
    written = [p for p in workdir.rglob("*") if p.is_file() and ".snakemake" not in p.parts]
    assert [p.name for p in written if p.suffix == ".nc" and p.parent.name != "data"] == []


# --- fuzz of method settings (test_config.py fuzzes the document structure) ------------------

setting_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=2) | st.dictionaries(st.text(max_size=6), children, max_size=2),
    max_leaves=6,
)  # fmt: skip


@st.composite
def method_entries(draw):
    """A registered method with a few of its real setting names given random values."""
    name = draw(st.sampled_from(sorted(REGISTRY)))
    keys = sorted(get_method(name).defaults())
    chosen = draw(st.lists(st.sampled_from(keys), max_size=3, unique=True)) if keys else []
    return name, {k: draw(setting_values) for k in chosen}


@settings(max_examples=150, deadline=None)
@given(method_entries())
def test_fuzzed_method_settings_validate_or_fail_cleanly(entry):
    name, values = entry
    config = {"experiments": {"exp": {"datasets": ["toy_sine"], "methods": {name: values}}}}
    try:
        expand(validate(config))
    except ConfigError:
        pass


# --- fit-batch and plan ------------------------------------------------------------------------


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_fit_batch_and_plan_refuse_bad_input_in_one_line(tmp_path):
    (tmp_path / "bad.json").write_text("{bad")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**BATCHING_TYPO, "experiments": {"x": BASE_EXPERIMENT}}))
    cases = [
        (("fit-batch", tmp_path / "missing.json"), "batch spec"),
        (("fit-batch", tmp_path / "bad.json"), "is not valid JSON"),
        (("plan", tmp_path / "missing.yaml"), "does not exist"),
        (
            ("plan", config),
            "'batching.methods.mpa': no method or label 'mpa' (did you mean 'map'?)",
        ),
    ]
    for args, message in cases:
        proc = _cli(*args)
        assert proc.returncode == 2, args
        assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


BATCHING_TYPO = {"batching": {"methods": {"mpa": "time"}}}
BASE_EXPERIMENT = {"datasets": ["toy_sine"], "methods": {"map": {"hidden": 1}}}


# --- shell lines: every path quoted, results_dir validated (issue 14, item 1) ---------------


@pytest.mark.parametrize(
    "results_dir",
    ["r$(touch PWNED)", "r`touch PWNED`", "r;touch PWNED", "-rf", "r{x}", "r\nx", "", "r'x"],
)
def test_results_dir_with_shell_or_snakemake_syntax_is_refused(results_dir):
    message = config_error(lambda c: c.update(results_dir=results_dir))
    assert "config key 'results_dir'" in message


@pytest.mark.workflow
def test_results_dir_with_spaces_runs_and_runs_nothing_else(tmp_path):
    """Paths reach the shell quoted: a results directory with a space works; the same
    sweep with a command in the name would have run it (it is now refused before any
    job: see above)."""
    config = tmp_path / "config.yaml"
    experiment = {"datasets": ["toy_sine"], "methods": {"exact": {"hidden": 0}}}
    config.write_text(
        yaml.safe_dump({"results_dir": "my results", "experiments": {"exp": experiment}})
    )
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
           "--directory", str(tmp_path), "--configfile", str(config), "--cores", "1"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (tmp_path / "my results" / "exp" / "merged.nc").is_file()
    assert (tmp_path / "my results" / "exp" / "tables" / "error_table.md").is_file()
    assert not (tmp_path / "my").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_output_onto_a_special_file_is_refused_and_left_alone(tmp_path, kind):
    """`--output` naming a FIFO, a symbolic link or a directory: one line, exit 2, and the
    thing itself untouched (issue 14, item 8)."""
    out = tmp_path / "out.nc"
    target = tmp_path / "elsewhere.nc"
    target.write_text("someone's file")
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "symlink":
        out.symlink_to(target)
    else:
        out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", "prepare", "--dataset", "toy_sine", "--output", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{out} is a" in proc.stderr and "refusing to replace it" in proc.stderr
    assert target.read_text() == "someone's file"
    assert {"fifo": out.is_fifo(), "symlink": out.is_symlink(), "directory": out.is_dir()}[kind]


# --- YAML: keys given twice, alias bombs (issue 14, items 6 and 7) ----------------------------

DUPLICATE = """experiments:
  exp: {datasets: [toy_sine], methods: {map: {hidden: 1}}}
  exp: {datasets: [toy_sine], methods: {exact: {hidden: 0}}}
"""
BOMB = "experiments: {}\na0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"a{i + 1}: &a{i + 1} [{', '.join([f'*a{i}'] * 10)}]\n" for i in range(8)
)


@pytest.mark.parametrize(
    "text, message",
    [
        (DUPLICATE, "key 'exp' given twice in one mapping (line 3)"),
        (BOMB, "more than 100000 values once its YAML aliases are expanded"),
        ("experiments: {a: \xff}".encode("latin-1"), "is not UTF-8 text"),
    ],
    ids=["duplicate-key", "alias-bomb", "latin-1"],
)
def test_config_files_are_read_strictly_by_the_cli_and_under_snakemake(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    proc = subprocess.run([sys.executable, "-m", "bnnsweep.cli", "validate", str(path)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert f"config file {str(path)!r}" in proc.stderr
    smk = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory",
         str(tmp_path), "--configfile", str(path), "--cores", "1", "-n"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert smk.returncode != 0
    if not isinstance(text, bytes):  # Snakemake itself refuses to read a non-UTF-8 file
        assert message in smk.stderr


# --- silent acceptance, degenerate data (issue 14, items 5 and 6) ------------------------------


@pytest.mark.parametrize("key", ["tol", "weight_decay", "init_scale"])
@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_non_finite_settings_are_refused(key, value):
    from bnnsweep.methods import get_method

    with pytest.raises(ValueError, match=f"setting '{key}' must be a finite number"):
        get_method("map").settings({key: value})


def test_a_result_with_non_finite_predictions_is_never_ok():
    from bnnsweep.method_base import FitResult
    from bnnsweep.runner import _flag_non_finite

    result = FitResult(np.array([[0.1], [np.nan]]), np.array([[1.0], [1.0]]))
    _flag_non_finite(result)
    assert result.status == "diverged" and "non-finite test predictions" in result.status_message
    fine = FitResult(np.zeros((2, 1)), np.ones((2, 1)))
    _flag_non_finite(fine)
    assert fine.status == "ok"
    # class predictions: no predictive variance (NaN by design), finite log probabilities
    labels = FitResult(np.zeros((2, 1)), np.full((2, 1), np.nan), likelihood="probit")
    labels.test_logpred, labels.class_probs = np.array([-0.1, -0.2]), np.full((2, 2), 0.5)
    _flag_non_finite(labels)
    assert labels.status == "ok"
    labels.test_logpred = np.array([-0.1, np.nan])
    _flag_non_finite(labels)
    assert labels.status == "diverged"


def test_constant_targets_lose_no_fit(tmp_path):
    """A constant target (test targets without spread): every method writes its cell, with
    test_nmse recorded as undefined (NaN), instead of a ZeroDivisionError after the fit."""
    import dataclasses

    import netCDF4

    from bnnsweep.runner import fit_cell_to_file
    from bnnsweep.sweeps.config import expand, validate

    csv = tmp_path / "const.csv"
    csv.write_text("x,t\n" + "".join(f"{i / 39},3.0\n" for i in range(40)))
    config = {
        "datasets": {"const": {"file": str(csv), "targets": ["t"], "task": "regression",
                               "splits": {"holdout": 0.25}}},
        "experiments": {"c": {"datasets": ["const"], "splits": ["all"],
                              "methods": {"map": {"hidden": 2}}}},
    }  # fmt: skip
    (cell,) = expand(validate(config))
    runs = {
        "map": {"hidden": 2, "restarts": 1, "max_iter": 20},
        "laplace": {"hidden": 2, "restarts": 1, "max_iter": 20, "cycles": 2},
        "exact": {"hidden": 0},
    }
    for method, chosen in runs.items():
        axes = (("hidden", chosen["hidden"]),)
        one = dataclasses.replace(
            cell, method=method, method_name=method, settings=chosen, axes=axes
        )
        path = fit_cell_to_file(one, tmp_path / f"{method}.nc", log=lambda m: None)
        with netCDF4.Dataset(path) as nc:
            nc.set_auto_mask(False)
            assert np.isnan(nc["test_nmse"][...]) and np.isfinite(nc["test_rmse"][...]), method


def test_merging_one_cell_twice_is_refused(tmp_path):
    from bnnsweep.results import merge_cells
    from bnnsweep.runner import fit_cell, write_result
    from bnnsweep.sweeps.sweep import Cell

    settings = {"hidden": 1, "restarts": 1, "max_iter": 5}
    cell = Cell("m", "toy_sine", "default", "map", "map", 0, (("hidden", 1),), settings)
    path = write_result(fit_cell(cell, log=lambda m: None), tmp_path / "a.nc")
    copy = tmp_path / "b.nc"
    copy.write_bytes(path.read_bytes())
    for paths in ([path, path], [path, copy]):
        with pytest.raises(ValueError, match="is given twice"):
            merge_cells(paths)
    proc = subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", "merge", str(path), str(path), "--output", str(tmp_path / "m.nc")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert (
        proc.returncode == 2 and "is given twice" in proc.stderr and "Traceback" not in proc.stderr
    )
    assert not (tmp_path / "m.nc").exists()


def test_a_cell_too_large_for_the_machine_is_refused_before_fitting(tmp_path):
    """`hidden: 1000000000` validated and died in allocation; the cost model's memory
    estimate refuses it before fitting, with the estimate (issue 14, item 6)."""
    out = tmp_path / "cell.nc"
    proc = subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", "fit", "--dataset", "toy_sine", "--method", "map",
         "--hidden", "1000000000", "--output", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "GB by its method's cost model, more than this machine's" in proc.stderr
    assert not out.exists()


def test_merge_keys_may_be_overridden_and_every_shipped_config_reads(tmp_path):
    """`<<: *anchor` then a key of the anchor again is YAML's override, not a duplicate."""
    from bnnsweep.sweeps.config import load

    path = tmp_path / "c.yaml"
    path.write_text(
        "experiments:\n  e:\n    datasets: [toy_sine]\n    methods:\n"
        "      a: &a {method: map, hidden: 1, restarts: 1}\n"
        "      b:\n        <<: *a\n        hidden: 2\n"
    )
    config = load(path)
    assert config["experiments"]["e"]["methods"]["b"] == {
        "method": "map",
        "hidden": 2,
        "restarts": 1,
    }
    for shipped in sorted((ROOT / "config").glob("*.yaml")):
        load(shipped)


# --- one line, never a traceback (issue 14, item 4) ---------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["merge", "{notnc}", "--output", "{out}"], "is corrupt: it records no checksum"),
        (["merge", "{trunc}", "--output", "{out}"], "is corrupt: it records no checksum"),
        (["figure", "error_table", "--merged", "{notnc}", "--output", "{out}.md"], "is corrupt or outdated: it records no checksum"),
        (["figure", "occam_hill", "--merged", "{trunc}", "--output", "{out}.png"], "is corrupt or outdated: it records no checksum"),
        (["fit", "--dataset", "toy_sine", "--method", "map", "--set", "hidden", "--output", "{out}"], "--set expects key=value"),
        (["fit", "--dataset", "toy_sine", "--method", "map", "--set", "restarts=[1,2", "--output", "{out}"], "is not valid YAML"),
        (["fit", "--dataset", "toy_sine", "--method", "map", "--settings-json", "{{bad", "--output", "{out}"], "--settings-json is not valid JSON"),
        (["fit", "--dataset", "toy_sine", "--method", "map", "--settings-json", "[1]", "--output", "{out}"], "must be a JSON object"),
    ],
    ids=["merge-not-netcdf", "merge-truncated", "figure-not-netcdf", "figure-truncated",
         "set-no-value", "set-bad-yaml", "json-bad", "json-not-object"],
)  # fmt: skip
def test_bad_files_and_options_give_one_line(tmp_path, args, message):
    good = tmp_path / "good.nc"
    datasets.save_netcdf(datasets.load("toy_sine"), good)
    notnc, trunc = tmp_path / "not.nc", tmp_path / "trunc.nc"
    notnc.write_text("hello")
    trunc.write_bytes(good.read_bytes()[:3000])
    values = {"notnc": notnc, "trunc": trunc, "out": tmp_path / "out"}
    argv = [a.format(**values) for a in args]
    proc = subprocess.run([sys.executable, "-m", "bnnsweep.cli", *argv],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("text", ["just a sentence\n", "- a list\n- of items\n"])
def test_a_config_file_that_is_not_a_mapping_is_named(tmp_path, text):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    for command in ("validate", "plan"):
        proc = subprocess.run([sys.executable, "-m", "bnnsweep.cli", command, str(path)],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1
        assert f"config file {str(path)!r} must be a mapping" in proc.stderr
