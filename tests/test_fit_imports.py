"""Method.imports: what a fit imports is loaded before the runner starts its clock, so that a
cell's runtime_s times the fit, not the process's first import of scipy, sklearn or JAX."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FAST_SETTINGS

PROBE = """
import json, sys
from bnnsweep.methods import get_method
from bnnsweep.runner import import_libraries, load_split
from bnnsweep.sweeps.sweep import Cell

name, settings, preload = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "1"
axes = (("hidden", settings["hidden"]),)
cell = Cell("m", "toy_sine", "default", name, name, 0, axes, settings)
method = get_method(name)
split = load_split(cell)
if preload:
    import_libraries(method)
before = set(sys.modules)
method.fit(split, method.settings(settings), cell.rng(), log=lambda *a: None)
loaded = set(sys.modules) - before

def library(module):
    parts = module.split(".")
    if parts[0] == "scipy" and len(parts) > 1 and not parts[1].startswith("_"):
        return ".".join(parts[:2])
    return parts[0] if parts[0] in ("sklearn", "jax") and len(parts) == 1 else None

print(json.dumps(sorted({library(m) for m in loaded} - {None})))
"""


def libraries_loaded_by_fit(method: str, preload: bool) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, method, json.dumps(FAST_SETTINGS[method]), str(int(preload))],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.parametrize("method", sorted(FAST_SETTINGS))
def test_a_fit_loads_no_library_its_method_does_not_declare(method):
    assert libraries_loaded_by_fit(method, preload=True) == []


def test_the_check_sees_a_library_a_fit_loads():
    assert "scipy.optimize" in libraries_loaded_by_fit("map", preload=False)
