import os

# single-threaded BLAS: small matrices, and tests run beside other work
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")


def _no_compilation_cache() -> None:
    """Test processes (each xdist worker, and the subprocesses its tests start) run with
    JAX's persistent compilation cache off (``BNNSWEEP_JAX_CACHE`` empty) unless it is set;
    the tests of the cache itself (``test_compile_cache.py``, ``test_determinism.py``) give
    theirs. jaxlib 0.10.2 on CPU segfaults now and then inside the cache's own calls: two CI
    runs lost a worker in ``backend.deserialize_executable`` while the workers shared a
    cache, and after a cache per worker one lost it in ``executable.serialize()`` (the
    cache's write, ``compilation_cache.put_executable_and_time``) compiling the tempering's
    sweep in ``test_valley_tempering.py`` (CI and a clean clone here, 2026-12-06: the same
    test passed alone and in its file). Without the cache no executable is serialized."""
    os.environ.setdefault("BNNSWEEP_JAX_CACHE", "")


_no_compilation_cache()

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


class _CrashedWorkers:
    """On the pytest-xdist controller: the tests whose worker died (a segmentation fault
    inside jaxlib's compiler once the worker's memory mappings reach ``vm.max_map_count``,
    which ``.ci/run`` raises: docs/internals.md) and the tests that worker never ran
    (``--max-worker-restart=0``), rerun once in a fresh process at the end. The run passes
    only if every other test passed and the rerun passes; a test that fails by assertion is
    never rerun."""

    def __init__(self) -> None:
        self.collected: set[str] = set()
        self.reported: set[str] = set()
        self.crashed: list[str] = []
        self.other_failures = 0

    def pytest_xdist_node_collection_finished(self, node, ids):
        self.collected.update(ids)

    def pytest_runtest_logreport(self, report):
        self.reported.add(report.nodeid)
        if report.failed:
            if "crashed while running" in str(report.longrepr):
                self.crashed.append(report.nodeid)
            else:
                self.other_failures += 1

    def pytest_sessionfinish(self, session, exitstatus):
        if not self.crashed or self.other_failures:
            return
        import subprocess
        import sys

        rerun = sorted(set(self.crashed) | (self.collected - self.reported))
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        say = reporter.write_line if reporter else print
        say(f"rerunning in a fresh process the {len(self.crashed)} test(s) whose worker "
            f"crashed and {len(rerun) - len(set(self.crashed))} it never ran")  # fmt: skip
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
        proc = subprocess.run([*args, *rerun], cwd=session.config.rootpath)
        say(f"rerun exit code {proc.returncode}")
        if proc.returncode == 0:
            session.exitstatus = 0


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        if getattr(config.option, "numprocesses", None):
            config.pluginmanager.register(_CrashedWorkers(), "crashed_workers")
