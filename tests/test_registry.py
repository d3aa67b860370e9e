"""The method registry: every method registers itself in its own module with a cost model,
the index read from the sources agrees with what the modules register, and asking for one
method imports that method's module only."""

import json
import subprocess
import sys

import pytest

from bnnsweep.methods import REGISTRY, Method, Work, get_method, index, names, register
from bnnsweep.methods.map_early_stopping import MAP_CALL_S, MAP_PASSES
from bnnsweep.sweeps import jobsize
from bnnsweep.sweeps.sweep import Cell


def test_the_index_read_from_sources_is_what_the_modules_register():
    assert sorted(REGISTRY) == names() == sorted(index())
    for name, method in REGISTRY.items():
        assert method.name == name
        assert method.fit.__module__ == f"bnnsweep.methods.{index()[name]}", name


def test_one_module_may_register_several_methods():
    assert index()["pbp"] == index()["ebp"] == "adf"
    assert index()["relu_map"] == index()["relu_hmc"] == "relu_reference"


HYPERPRIORS = {
    "hyperpriors": {
        role: {"shape": 1.0, "rate": 1.0}
        for role in ("input_hidden", "hidden_bias", "hidden_output", "output_bias")
    },
    "noise_hyperprior": {"shape": 2.0, "rate": 0.1},
}
VALID = {"exact": {"hidden": 0, "activation": "linear"}, "chaining": HYPERPRIORS}
"""Settings that validate, where a method's defaults alone do not."""


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_method_declares_a_cost_model(name):
    method = REGISTRY[name]
    assert callable(method.work), name
    settings = method.settings(VALID.get(name, {}))
    work = method.work(settings, 100, 20, 1, 31)
    assert work is None or (isinstance(work, Work) and work.gradient_calls > 0), name


def test_a_method_without_a_cost_model_is_refused():
    fields = ("nameless", object, print, ("hidden",), "no cost model")
    with pytest.raises(TypeError, match="work"):
        Method(*fields)  # the cost model is a required field
    with pytest.raises(TypeError, match="'nameless' declares no cost model"):
        register(Method(*fields, work=None))
    assert "nameless" not in REGISTRY


def test_jobsize_prices_a_cell_by_its_methods_cost_model():
    settings = {"hidden": 3, "restarts": 2, "max_iter": 50, "validation": "holdout"}
    cell = Cell("t", "toy_sine", "default", "map", "map", 0, (("hidden", 3),), settings)
    shape = jobsize.data_shape("toy_sine", "default")
    n_train, n_in, n_out, n_test = shape
    w = jobsize.n_weights(n_in, 3, n_out)
    method = get_method("map")
    model = method.work(method.settings(settings), n_train, n_test, n_out, w)
    assert model == Work(2 * 50, batch=MAP_PASSES, call_s=MAP_CALL_S)
    # a call's price: the method's own fixed cost plus its passes over every training point
    per_call = MAP_CALL_S + jobsize.MULTIPLY_ADD_S * n_train * w * MAP_PASSES
    assert jobsize.fit_seconds(cell, shape) == pytest.approx(100 * per_call)
    assert MAP_CALL_S != jobsize.CALL_S and MAP_PASSES != 1  # else the check above is weak


def test_adf_is_priced_per_data_point_and_packed_across_datasets():
    """An ADF update touches one data point, so a pbp cell's bound is seconds, not the hours
    a per-call pass over all N points would give; with ``vectorise`` (the default) one
    ``fit_many`` per dataset, short datasets sharing a job up to the target length; without
    it its cells pack by time across datasets (each dataset's cells together, so its
    program compiles once per job)."""
    cells = [
        Cell("u", d, str(k), "pbp", "pbp", 0, (("hidden", 50),), {"hidden": 50, "epochs": 40})
        for d in ("boston_housing", "yacht")
        for k in range(3)
    ]
    shape = jobsize.data_shape("boston_housing", "0")
    n_train, n_in, n_out, n_test = shape
    w = jobsize.n_weights(n_in, 50, n_out)
    per_point = jobsize.CALL_S + jobsize.MULTIPLY_ADD_S * w
    expected = 40 * (2 * n_train + n_test) * per_point
    assert jobsize.fit_seconds(cells[0], shape) == pytest.approx(expected)
    assert jobsize.fit_seconds(cells[0], shape) < 5.0
    batching = dict(jobsize.BATCHING_DEFAULTS)
    assert batching["vectorise"]
    # two short datasets: one job, each dataset's cells one fit_many
    (both,) = jobsize.plan_batches(cells, batching)
    assert both.strategy == "dataset" and both.vectorised and both.cells == cells
    assert both.fit_groups() == [cells[:3], cells[3:]]
    # a target below one dataset's typical time: a job per dataset
    short_target = {**batching, "target_minutes": jobsize.typical_seconds(cells[:3]) / 60 / 2}
    per_dataset = jobsize.plan_batches(cells, short_target)
    assert [b.cells for b in per_dataset] == [cells[:3], cells[3:]]
    assert all(b.vectorised and b.strategy == "dataset" for b in per_dataset)
    # memory: the largest fit group's, as one group is in memory at a time
    assert both.resources()["mem_mb"] == max(b.resources()["mem_mb"] for b in per_dataset)
    (packed,) = jobsize.plan_batches(cells, {**batching, "vectorise": False})
    assert packed.strategy == "time" and packed.cells == cells


def _imported_after(code: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys\n"
         "print(json.dumps({'methods': sorted(m for m in sys.modules"
         " if m.startswith('bnnsweep.methods.')), 'jax': 'jax' in sys.modules,"
         " 'matplotlib': 'matplotlib' in sys.modules,"
         " 'xarray': 'xarray' in sys.modules or 'pandas' in sys.modules}))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.splitlines()[-1])


def test_get_method_imports_only_that_methods_module():
    seen = _imported_after("from bnnsweep.methods import get_method; get_method('map')")
    assert seen == {
        "methods": ["bnnsweep.methods.map_early_stopping"],
        "jax": False,
        "matplotlib": False,
        "xarray": False,
    }
    # pbp's settings and cost model need no JAX; its fit loads the compiled core
    seen = _imported_after("from bnnsweep.methods import get_method; get_method('pbp')")
    assert seen["methods"] == ["bnnsweep.methods.adf"] and not seen["jax"]


def test_fitting_a_numpy_method_loads_neither_jax_nor_figures_nor_xarray(tmp_path):
    """A fit job's start-up is imports: jax (a second), xarray and pandas (0.7 s) only where
    the method needs them, which no fit does for xarray and pandas."""
    out = tmp_path / "cell.nc"
    seen = _imported_after(
        "from bnnsweep.cli import main\n"
        "main(['fit', '--dataset', 'toy_sine', '--method', 'map', '--hidden', '2', '--set',"
        f" 'restarts=1', '--set', 'max_iter=5', '--output', {str(out)!r}, '--log', "
        f"{str(tmp_path / 'log')!r}])"
    )
    assert out.is_file()
    assert seen == {
        "methods": ["bnnsweep.methods.map_early_stopping"],
        "jax": False,
        "matplotlib": False,
        "xarray": False,
    }


def test_a_methods_code_version_hashes_its_registering_module_and_not_the_registry():
    from bnnsweep.methods import module_of
    from bnnsweep.sweeps.sweep import PACKAGE_ROOT, code_files, code_version

    files = code_files(module_of("map").removeprefix("bnnsweep."))
    method_files = {
        f.relative_to(PACKAGE_ROOT).as_posix() for f in files if f.parent.name == "methods"
    }
    assert method_files == {"methods/map_early_stopping.py"}
    assert code_version("pbp") == code_version("ebp")  # one module registers both
    assert code_version("pbp") != code_version("map")


def test_the_jobs_conda_env_installs_this_checkout_pinned_by_the_lock(tmp_path):
    """The env file Snakemake materialises under .snakemake/conda/ must not depend on where
    it lies: the package and the lock file are given by absolute path."""
    from pathlib import Path

    import yaml

    from bnnsweep.sweeps.workflow_run import conda_env_file

    root = Path(__file__).resolve().parents[1]
    path = conda_env_file(root, tmp_path / "envs")
    assert path == conda_env_file(root, tmp_path / "envs")  # one file per content
    env = yaml.safe_load(path.read_text())
    (pip,) = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert pip == [f"-c {root / 'requirements-lock.txt'}", f"-e {root}"]
    assert "python=3.11" in env["dependencies"]
