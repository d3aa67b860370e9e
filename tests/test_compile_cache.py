"""The persistent compilation cache is keyed by a program's content, not by the path of the
code that built it (``runtime.jax_runtime``): the same program from a second copy of its
source at another path, sharing the cache directory, compiles nothing. Control: with source
locations in the key (``jax_compilation_cache_include_metadata_in_key``) the second copy
does add entries, so the count can see a path-keyed cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SOURCE = """
from bnnsweep.runtime.jax_runtime import jax, jnp

@jax.jit
def step(w, x):
    return jnp.tanh(x @ w).sum() + jax.grad(lambda v: jnp.sum(jnp.tanh(x @ v) ** 2))(w).sum()
"""

# one process: runs the program from copy a, then from copy b (a separate function object,
# so it is looked up in the persistent cache, not in memory); prints the entry counts
DRIVER = """
import importlib.util, json, os, sys
from bnnsweep.runtime.jax_runtime import jax, jnp, cache_dir
if sys.argv[1] == "metadata":
    jax.config.update("jax_compilation_cache_include_metadata_in_key", True)
counts = []
for copy in sys.argv[2:]:
    spec = importlib.util.spec_from_file_location("program_" + str(len(counts)), copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.step(jnp.ones((3, 2)), jnp.ones((4, 3))).block_until_ready()
    counts.append(len(os.listdir(cache_dir())))
print(json.dumps(counts))
"""


def _entries_after_each_copy(tmp_path, key: str) -> list[int]:
    copies = []
    for where in ("checkout_a", "elsewhere/checkout_b"):
        path = tmp_path / key / where / "program.py"
        path.parent.mkdir(parents=True)
        path.write_text(SOURCE)
        copies.append(str(path))
    env = dict(os.environ, BNNSWEEP_JAX_CACHE=str(tmp_path / key / "cache"))
    out = subprocess.run(
        [sys.executable, "-c", DRIVER, key, *copies],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_copy_at_another_path_compiles_nothing(tmp_path):
    first, second = _entries_after_each_copy(tmp_path, "content")
    assert first > 0, "the first copy wrote no cache entry"
    assert second == first
    # control: with file names and lines in the key, the second copy compiles again
    first, second = _entries_after_each_copy(tmp_path, "metadata")
    assert second > first
