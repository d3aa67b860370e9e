import os

# single-threaded BLAS: small matrices, and tests run beside other work
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

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
