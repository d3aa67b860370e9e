"""JAX as the compiled numerical core: float64, one CPU thread per job, compiled programs
cached on disk; on whichever device JAX finds (a GPU where the CUDA build of jaxlib, the
``gpu`` extra, is installed and one is visible; the CPU otherwise), unless ``JAX_PLATFORMS``
says otherwise.

Import ``jax`` and ``jax.numpy`` from here (``from ..runtime.jax_runtime import jax, jnp``)
so that the configuration is in place before the first computation:

- ``jax_enable_x64``: every kernel runs in float64, as the numpy code it replaced did;
- XLA's CPU backend single-threaded (``--xla_cpu_multi_thread_eigen=false``) unless
  ``XLA_FLAGS`` is already set, so that
  ``snakemake --cores N`` runs N single-threaded jobs as the design asks; and since this
  jaxlib sizes its CPU thread pool by the CPU affinity instead, the backend is started
  under a one-CPU affinity (``_one_compute_thread``);
- the persistent compilation cache in ``$BNNSWEEP_JAX_CACHE`` (default
  ``$XDG_CACHE_HOME/bnnsweep/jax``, i.e. ``~/.cache/bnnsweep/jax``), so that the hundredth
  cell of a shape loads its programs instead of compiling them again. Set
  ``BNNSWEEP_JAX_CACHE=`` (empty) to switch the cache off. A program's key is its content
  (the program with its source locations stripped, jaxlib version, compiler options and
  flags), not where its code lives: ``jax_compilation_cache_include_metadata_in_key`` is
  kept off, so a second checkout or worktree at another path sharing the directory loads
  what the first compiled (``tests/test_compile_cache.py``; measured with two clones of
  this repository and one ``bnnsweep fit --method hmc`` cell each: the second added no
  entry to the 25 of the first).

``key_from_rng`` turns the numpy ``Generator`` a method receives into a JAX key, so a
cell's numbers still derive from its ``SeedSequence`` alone.
"""

from __future__ import annotations

import os
from pathlib import Path

# only XLA flags: XLA stops reading XLA_FLAGS at a token that is not one and ignores the
# rest silently (an "intra_op_parallelism_threads=1" here, a TensorFlow setting, hid every
# flag a user appended after it)
_DEFAULT_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false"
# the user's own flags; ours, inherited from a parent that imported this module (Snakemake
# building the DAG, a benchmark), are not
_USER_XLA_FLAGS = os.environ.get("XLA_FLAGS", _DEFAULT_XLA_FLAGS) != _DEFAULT_XLA_FLAGS
os.environ.setdefault("XLA_FLAGS", _DEFAULT_XLA_FLAGS)
# JAX_PLATFORMS is left to the user: JAX runs on a GPU where its CUDA build is installed and
# finds one (a job of a method the config's ``devices`` gives a GPU), on the CPU otherwise

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from .user_cache import cache_path  # noqa: E402

jax.config.update("jax_enable_x64", True)


def cache_dir() -> Path | None:
    """Where compiled programs are kept, or None when the cache is switched off."""
    value = os.environ.get("BNNSWEEP_JAX_CACHE")
    if value is not None:
        return Path(value) if value.strip() else None
    return cache_path("jax")


def _configure_cache() -> None:
    path = cache_dir()
    if path is None:
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # an unwritable cache location costs compile time, never a result
    jax.config.update("jax_compilation_cache_dir", str(path))
    # keyed by content: file names and line numbers (which differ between checkouts) are
    # stripped from the program before it is hashed (JAX's default, pinned here)
    jax.config.update("jax_compilation_cache_include_metadata_in_key", False)
    # small programs compile in well under a second; cache them all
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


_configure_cache()


def _one_compute_thread() -> None:
    """Start XLA's CPU backend with one intra-op thread. This jaxlib sizes that thread pool
    by the process's CPU affinity when the backend starts (jax-ml/jax#1539) and does not
    honour ``--xla_cpu_multi_thread_eigen=false``: with a second core free, the second
    thread spins beside the one computing. Measured on the robot-arm H = 24 chain (2 cores):
    85.7 s of CPU in 53.4 s of wall time, against 49.1 s in 49.2 s pinned to one core.
    So the backend starts under a one-CPU affinity, and then every thread of the process,
    the pool's included, gets the full affinity back (the pool keeps its one thread, which
    the kernel may run on any core). Skipped where affinity cannot be set, where the
    process already has one CPU, and when ``XLA_FLAGS`` was set by the user."""
    if _USER_XLA_FLAGS or not hasattr(os, "sched_setaffinity"):
        return
    cpus = os.sched_getaffinity(0)
    if len(cpus) <= 1:
        return
    os.sched_setaffinity(0, {min(cpus)})
    try:
        jnp.zeros(1).block_until_ready()  # starts the backend and its thread pool
    finally:
        for thread in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(thread), cpus)
            except OSError:  # a thread that has exited since the listing
                pass


_one_compute_thread()


SAMPLER_COMPILER_OPTIONS = {
    "xla_cpu_prefer_vector_width": 512,
    "xla_cpu_experimental_ynn_fusion_type": "",
}
"""XLA options of the samplers' compiled programs (``jax.jit(..., compiler_options=...)``):
512-bit vectors where the CPU has them (AVX-512; elsewhere the widest it has), and the
small reductions and products of a batch of networks left to XLA's own loops rather than
YNNPACK kernels, whose call costs more than these sizes' arithmetic. The batched gradient of
the robot-arm chain (18 chains, H = 24, in a compiled loop) took 153 µs against 200 µs with
the defaults. Not process-wide: PBP's filter on kin8nm was 12% slower with the wider
vectors (0.93 against 0.83 s per split batched)."""


def key_from_rng(rng: np.random.Generator) -> jax.Array:
    """A JAX PRNG key drawn from a numpy Generator (advances it by one draw)."""
    return jax.random.key(int(rng.integers(0, 2**63 - 1)))


__all__ = ["SAMPLER_COMPILER_OPTIONS", "cache_dir", "jax", "jnp", "key_from_rng"]
