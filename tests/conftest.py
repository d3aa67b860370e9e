import os

# single-threaded BLAS: small matrices, and tests run beside other work
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")


def _own_compilation_cache() -> None:
    """Each test process (each xdist worker, and the subprocesses its tests start) compiles
    into a fresh JAX cache directory of its own, removed at exit, unless
    ``BNNSWEEP_JAX_CACHE`` is set. Two CI runs lost a worker to a segmentation fault inside
    JAX's cache read (``backend.deserialize_executable``) while both workers shared
    ``~/.cache/bnnsweep/jax``, and pytest-xdist then hung under ``--dist loadfile``
    (pytest-dev/pytest-xdist#784, #1323) until CI's time ran out. Thirteen single-process
    runs of the same files on a warm shared cache loaded every entry without one. A cache
    per worker keeps what the cache buys the tests (a subprocess loads the programs its
    parent compiled) and removes the sharing; nothing is read from an earlier session."""
    if "BNNSWEEP_JAX_CACHE" in os.environ:
        return
    import atexit
    import shutil
    import tempfile

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = tempfile.mkdtemp(prefix=f"bnnsweep-jax-{worker}-")
    os.environ["BNNSWEEP_JAX_CACHE"] = path
    atexit.register(shutil.rmtree, path, ignore_errors=True)


_own_compilation_cache()

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _dataset_registry_restored():
    """Datasets a test registers from a config's `datasets:` section are gone after it, so
    that no other test sees them (the registry is one per process)."""
    from bnnsweep.datasets.registry import _REGISTRY

    before = dict(_REGISTRY)
    yield
    _REGISTRY.clear()
    _REGISTRY.update(before)


# a cell of every fast method, fitted once per test session
FAST_SETTINGS = {
    "map": {"hidden": 2, "restarts": 1, "max_iter": 20},
    "laplace": {"hidden": 2, "restarts": 1, "max_iter": 20, "cycles": 2},
    "exact": {"hidden": 0},
    "vi_gauss": {"hidden": 2, "restarts": 2, "outer_iter": 2, "max_iter": 10},
    "vi_mixture": {"hidden": 2, "restarts": 1, "outer_iter": 2, "max_iter": 10, "components": 2},
    "pbp": {"hidden": 3, "epochs": 2},
}


@pytest.fixture(scope="session")
def method_cells():
    """Cells of map, laplace, exact, the variational methods and pbp: traces along restart,
    group, component and epoch dimensions, string and boolean diagnostics."""
    from bnnsweep.runner import fit_cell
    from bnnsweep.sweeps.sweep import Cell

    cells = {}
    for method, settings in FAST_SETTINGS.items():
        axes = (("hidden", settings["hidden"]),)
        if method == "vi_mixture":
            axes += (("components", 2),)
        cell = Cell("m", "toy_sine", "default", method, method, 0, axes, settings)
        cells[method] = fit_cell(cell, log=lambda m: None)
    return cells


# merged files of small real fits, shared by each figure's own tests and test_figure_legends
from merged_fixtures import (  # noqa: E402, F401
    adf_activations_merged_path,
    adf_toy_merged,
    adf_yacht_merged,
    bm_digits_merged,
    bm_merged_files,
    ch1_merged_path,
    g2_approximation_merged_path,
    gaussian_fits_merged_path,
    ica_merged,
    ica_toy_fits,
    ltu_merged_path,
    mixture_target_merged_path,
    posterior_slices_merged_path,
    sbn_bars_merged,
    sbn_inference_merged,
)
