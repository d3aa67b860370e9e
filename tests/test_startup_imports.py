"""What a job's start-up imports: figure and merge jobs read a merged file and need neither the
datasets package (importing it registers every dataset and so loads the models and
scipy.special, about 0.6 s) nor jax."""

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("bnnsweep.datasets", "bnnsweep.models", "scipy.special", "jax")


def _heavy_imports_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys\n"
         f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.splitlines()[-1])


def test_the_figure_and_merge_commands_import_no_datasets_models_or_jax():
    assert _heavy_imports_after("import bnnsweep.cli\nfrom bnnsweep.figures import draw") == []
    assert (
        _heavy_imports_after("import bnnsweep.cli\nfrom bnnsweep.results import merge_cells") == []
    )


def test_the_dataset_registry_and_a_prepared_regression_set_import_no_models_or_scipy():
    """Snakemake's DAG and every ``prepare`` job import the registry: registering a dataset
    (its metadata, e.g. the bars entropy) must not load the network models or scipy.special
    (0.1 s a process), which only the data generators that use them import."""
    for code in (
        "import bnnsweep.datasets",
        "from bnnsweep import datasets\ndatasets.load('toy_sine')",
    ):
        heavy = _heavy_imports_after(code + "\nimport scipy.special as s\ndel s")
        assert "scipy.special" in heavy  # the check sees scipy.special where it is imported
        heavy = _heavy_imports_after(code)
        assert "scipy.special" not in heavy and "jax" not in heavy, heavy


def test_the_models_package_gives_its_names_on_first_use():
    from bnnsweep import models
    from bnnsweep.models.network import Network

    assert models.Network is Network
    assert set(models.__all__) <= set(dir(models))
    try:
        models.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_checking_adf_settings_loads_no_jax():
    """Snakemake's DAG, ``validate`` and ``plan`` of an ADF config build every cell's settings;
    the compiled core (JAX, 0.3-0.5 s) is loaded only by the fit itself."""
    code = (
        "from bnnsweep.methods import get_method\n"
        "for name in ('pbp', 'ebp'):\n"
        "    get_method(name).settings({'hidden': 50, 'likelihood': 'gaussian'})\n"
    )
    assert "jax" not in _heavy_imports_after(code)
    assert "jax" in _heavy_imports_after(code + "import bnnsweep.engines.adf.replicates\n")


def test_planning_the_default_sweep_loads_no_scipy_sklearn_or_jax():
    """Snakemake's DAG (and ``validate``, ``plan``) checks every cell's settings and prices it
    with its method's work model: the method modules give both without the numerical
    libraries their fits import (scipy.special and scipy.optimize alone were 0.45 s of the
    DAG, while both cores waited for the first job)."""
    code = (
        "import yaml\n"
        "from bnnsweep.sweeps.config import expand, validate\n"
        "from bnnsweep.sweeps.jobsize import batching_settings, plan_batches\n"
        "config = validate(yaml.safe_load(open('config/config.yaml')))\n"
        "batches = plan_batches(expand(config), batching_settings(config))\n"
        "assert len({c.method_name for b in batches for c in b.cells}) >= 7\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code + "import json, sys\n"
         "print(json.dumps([m for m in ('scipy', 'sklearn', 'jax') if m in sys.modules]))"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).parents[1],
    )  # fmt: skip
    assert json.loads(out.stdout.splitlines()[-1]) == []
