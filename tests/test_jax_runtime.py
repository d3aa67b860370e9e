"""jax_runtime: one XLA compute thread per process, the full CPU affinity kept, and a user's
own XLA_FLAGS left alone. Each case runs in a fresh interpreter, since the backend starts
once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# run a computation, then report the XLA pool's threads and every thread's affinity
PROBE = """
import json, os
full = sorted(os.sched_getaffinity(0))
from bnnsweep.runtime.jax_runtime import jax, jnp
x = jnp.ones((200, 200))
(x @ x).block_until_ready()
threads = {}
for tid in os.listdir("/proc/self/task"):
    try:
        name = open(f"/proc/self/task/{tid}/comm").read().strip()
        threads[tid] = [name, sorted(os.sched_getaffinity(int(tid)))]
    except OSError:
        pass
print(json.dumps({"full": full, "threads": threads, "flags": os.environ.get("XLA_FLAGS")}))
"""

CPUS = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
needs_two_cpus = pytest.mark.skipif(
    len(CPUS) < 2 or not os.path.isdir("/proc/self/task"),
    reason="needs CPU affinity control, /proc and at least two CPUs",
)


def _probe(xla_flags: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pool(report: dict) -> list:
    return [t for t in report["threads"].values() if t[0].startswith("tf_XLAEigen")]


@needs_two_cpus
@pytest.mark.parametrize("inherited", [False, True])
def test_one_pool_thread_and_full_affinity_back(inherited):
    """Without XLA_FLAGS, and with our own defaults inherited from a parent process, the
    pool has one thread, and every thread of the process may run on every CPU again."""
    from bnnsweep.runtime import jax_runtime

    report = _probe(jax_runtime._DEFAULT_XLA_FLAGS if inherited else None)
    assert len(_pool(report)) == 1
    assert all(affinity == report["full"] for _, affinity in report["threads"].values())
    assert report["flags"] == jax_runtime._DEFAULT_XLA_FLAGS


@needs_two_cpus
def test_users_own_flags_are_left_alone():
    """A user's own XLA_FLAGS are kept and the backend starts as jaxlib starts it: a pool
    sized by the affinity (which is why the one-CPU start is needed at all)."""
    flags = "--xla_cpu_multi_thread_eigen=true"
    report = _probe(flags)
    assert report["flags"] == flags
    assert len(_pool(report)) == len(report["full"])
    assert all(affinity == report["full"] for _, affinity in report["threads"].values())


def test_xla_reads_every_flag_after_our_defaults(tmp_path):
    """Our default XLA_FLAGS hold XLA flags only: XLA stops at a token that is not one and
    silently ignores every flag after it. A dump directory appended after them is used."""
    from bnnsweep.runtime import jax_runtime

    assert all(token.startswith("--xla_") for token in jax_runtime._DEFAULT_XLA_FLAGS.split())
    dump = tmp_path / "dump"
    _probe(f"{jax_runtime._DEFAULT_XLA_FLAGS} --xla_dump_to={dump}")
    assert dump.is_dir() and any(dump.iterdir())
