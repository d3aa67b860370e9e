"""Benchmark: one complete paper-protocol chain (paper 001 sec. 5) on the robot arm, H = 24:
18 links, per link 100 burn-in trajectories of 50 leapfrog steps and 600 kept of 300, with
``replicates`` independent chains per link (1 = the paper's single chain; 4 = the default,
whose spread gives the honest standard error).

Prints, per replicate count, the CPU time of the whole fit (compilation included once: the
persistent compilation cache is switched off for this process), the parts spent placing the
chains' starts and compiling (JAX's backend-compile events), and the CPU time per batched
leapfrog step (everything but the starts over the steps) against the floor: the batched
gradient of the same potential over the same number of chains in a compiled loop, compiled
as the sampler is (no leapfrog, Gibbs or Metropolis bookkeeping); the steps times the floor
is the least the sampling can cost. Writes benchmarks/results/bench_chain.nc.

``--peer SRC`` also runs the numpy implementation this compiled core replaced, side by side:
``SRC`` is the ``src`` directory of a checkout of the last numpy commit (e.g.
``git worktree add ../bnnsweep-numpy dae481e`` then ``--peer ../bnnsweep-numpy/src``). Each
round runs one complete fit of ours and one of the peer's, in turn, each in a fresh Python
process (imports, compilation and the starts' placement included, as a cell pays them), with
one chain per link as the issue's 97 s baseline had; it prints their CPU times and the ratio
round by round and the median ratio (the shared machine's speed drifts; pairs do not).
``--groups 1 2 4 ...`` first measures the CPU time per network gradient of the chaining
batch (18 links x the largest replicate count, the chaining potential with its Gibbs step, the
paper's 300 leapfrog steps a kept trajectory) advanced that many chains at a time
(``hmc.sample(group=...)``), against all at once and the size the sampler picks itself
(``hmc.chains_per_group``): short runs, interleaved in rounds, the median per size and its
ratio to the best size's.
Run: python benchmarks/bench_chain.py [--quick] [--replicates 1 4] [--groups 1 4 8 18 36]
     [--groups-only]
     [--peer SRC --rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

os.environ["BNNSWEEP_JAX_CACHE"] = ""  # compile time is part of what is measured
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from bnnsweep import datasets  # noqa: E402
from bnnsweep.engines.mcmc import hmc  # noqa: E402
from bnnsweep.methods import get_method  # noqa: E402
from bnnsweep.models.marginal import MarginalModel  # noqa: E402
from bnnsweep.runtime.jax_runtime import SAMPLER_COMPILER_OPTIONS, jax, jnp  # noqa: E402

NEAL = {
    "input_hidden": {"mean": 1.0, "s": 0.2},
    "hidden_bias": {"mean": 1.0, "s": 0.2},
    "hidden_output": {"mean": 1.0, "s": 0.2, "scale_with_hidden": True},
    "output_bias": {"mean": 0.2, "s": 1.0},
}
N_LINKS = 18
SRC = Path(__file__).resolve().parents[1] / "src"
# one complete fit in a fresh process, for either code base (the peer has chains_per_link
# where ours has replicates; both are 1 here); prints a JSON line
FIT_ONE = """
import json, os, sys, time
os.environ["BNNSWEEP_JAX_CACHE"] = ""
import numpy as np
from bnnsweep import datasets
from bnnsweep.methods import get_method
settings = json.loads(sys.argv[1])
method = get_method("chaining")
key = "replicates" if "replicates" in method.defaults() else "chains_per_link"
settings[key] = 1
s = method.settings(settings)
split = datasets.load("robot_arm").split("default")
result = method.fit(split, s, np.random.default_rng(0), log=lambda *_: None)
print(json.dumps({"log_evidence": result.log_evidence,
                  "steps": s.burn_in * s.burn_leapfrog + s.samples * s.leapfrog}))
"""


def fit_in_process(src: Path, settings: dict) -> tuple[float, dict]:
    """CPU seconds (user + system) of one complete fit in a fresh Python process importing
    ``bnnsweep`` from ``src``, and what it printed."""
    env = dict(os.environ, PYTHONPATH=str(src))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-c", FIT_ONE, json.dumps(settings)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, json.loads(out.stdout.strip().splitlines()[-1])


def against_peer(peer: Path, settings: dict, rounds: int) -> list[tuple[float, float]]:
    """``rounds`` pairs (ours, peer) of whole-process CPU times, run in turn."""
    pairs = []
    for r in range(rounds):
        ours, mine = fit_in_process(SRC, settings)
        theirs, peers = fit_in_process(peer, settings)
        pairs.append((ours, theirs))
        print(
            f"  round {r + 1}: ours {ours:7.1f} s (ln p(D) {mine['log_evidence']:.2f})  "
            f"numpy {theirs:7.1f} s (ln p(D) {peers['log_evidence']:.2f})  "
            f"ratio numpy/ours {theirs / ours:5.2f}",
            flush=True,
        )
    return pairs


def floor_step_cpu(model: MarginalModel, batch: int, repeats: int = 3000) -> float:
    """CPU seconds of one batched gradient of the chain's potential over ``batch`` chains
    inside a compiled loop, compiled and cut into groups of chains as the sampler's programs
    are: the cost of a leapfrog step without the leapfrog, Gibbs or Metropolis bookkeeping
    (called from Python once per gradient, the same gradient costs twice as much in
    dispatch)."""
    grad = jax.vmap(jax.grad(model.potential, argnums=2))
    w0, theta0 = model.start_points(batch, np.random.default_rng(0))
    lam = jnp.linspace(1.0 / batch, 1.0, batch)

    w, theta = jnp.asarray(w0), jax.tree_util.tree_map(jnp.asarray, theta0)
    group = hmc.chains_per_group(model.potential, lam, theta, w, 0)

    @partial(jax.jit, compiler_options=SAMPLER_COMPILER_OPTIONS)
    def loop(w, theta):
        def chains(lam, theta, w):  # a group's whole loop at a time, as the sampler's trajectories
            return jax.lax.fori_loop(0, repeats, lambda i, w: w - 1e-12 * grad(lam, theta, w), w)

        return hmc.in_groups(chains, group, lam, theta, w)

    loop(w, theta).block_until_ready()
    start = time.process_time()
    loop(w, theta).block_until_ready()
    return (time.process_time() - start) / repeats


def group_scan(model: MarginalModel, chains: int, groups: list, rounds: int = 5) -> dict:
    """Median CPU seconds per network gradient of ``chains`` chains of the chaining potential
    (Gibbs step, per-chain lambda, 300 leapfrog steps a trajectory) advanced ``group`` at a
    time, for each entry of ``groups`` (an int, None: all at once, or "cache": the sampler's
    own choice); compiled first, then ``rounds`` interleaved rounds of 3 trajectories."""
    w0, theta0 = model.start_points(chains, np.random.default_rng(0))
    lam = np.linspace(1.0 / chains, 1.0, chains)

    def run(group, seed):
        return hmc.sample(
            model.potential, w0, theta0, lam, jax.random.key(seed), n_burn=0, n_samples=3,
            n_leapfrog_burn=300, n_leapfrog=300, step_size=1e-3, gibbs=model.gibbs,
            adapt=False, group=group,
        )  # fmt: skip

    # every size's programs stay compiled through the rounds: at most as many sizes as the
    # sampler keeps compiled programs for (more, and each run would compile again)
    assert len(groups) <= hmc._programs.cache_info().maxsize - 1, "too many group sizes"
    for group in groups:
        run(group, 0)
    seconds = {group: [] for group in groups}
    for r in range(rounds):
        for group in groups:
            start = time.process_time()
            result = run(group, r + 1)
            seconds[group].append((time.process_time() - start) / result.n_grad_evals)
    return {group: float(np.median(s)) for group, s in seconds.items()}


class CompileTimer:
    """Seconds XLA spends compiling while it is registered (JAX's backend-compile events;
    compilation runs on one thread, so this is CPU time too)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        jax.monitoring.register_event_duration_secs_listener(self._event)

    def _event(self, name: str, seconds: float, **_) -> None:
        if name == "/jax/core/compile/backend_compile_duration":
            self.seconds += seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 burn-in, 20 kept samples")
    parser.add_argument("--replicates", type=int, nargs="+", default=[1, 4])
    parser.add_argument(
        "--groups", type=int, nargs="*", help="chains a group to measure (at most 6 sizes)"
    )
    parser.add_argument("--groups-only", action="store_true", help="no fit after --groups")
    parser.add_argument("--peer", type=Path, help="src directory of the numpy implementation")
    parser.add_argument("--rounds", type=int, default=3, help="pairs of runs against --peer")
    args = parser.parse_args()
    if args.peer is not None:
        settings = {"hidden": 24, "schedule": "paper", "hyperpriors": NEAL,
                    "noise_hyperprior": {"mean": 400.0, "s": 0.2}, "ais_particles": 0,
                    "estimator": "ratio"}  # fmt: skip
        if args.quick:
            settings.update(burn_in=20, samples=20)
        print(f"paper protocol chain, robot_arm H=24, 18 links x 1 chain: ours against {args.peer}")
        pairs = np.array(against_peer(args.peer, settings, args.rounds))
        print(
            f"  median CPU: ours {np.median(pairs[:, 0]):.1f} s, numpy {np.median(pairs[:, 1]):.1f} s;"
            f" median ratio numpy/ours {np.median(pairs[:, 1] / pairs[:, 0]):.2f}"
        )
    split = datasets.load("robot_arm").split("default")
    method = get_method("chaining")
    if args.groups:
        settings = {"hidden": 24, "schedule": "paper", "hyperpriors": NEAL,
                    "noise_hyperprior": {"mean": 400.0, "s": 0.2}}  # fmt: skip
        model = MarginalModel(*method.settings(settings).build(split))
        chains = N_LINKS * max(args.replicates)
        w0, theta0 = model.start_points(chains, np.random.default_rng(0))
        picked = hmc.chains_per_group(
            model.potential, jnp.ones(chains), jax.tree_util.tree_map(jnp.asarray, theta0),
            jnp.asarray(w0), 0,
        )  # fmt: skip
        sizes = [*dict.fromkeys([*args.groups, picked]), None]  # the picked size once
        per_grad = group_scan(model, chains, sizes)
        best = min(per_grad.values())
        print(f"CPU per network gradient, {chains} chains (robot_arm H=24), by chains a group:")
        for group, seconds in per_grad.items():
            name = f"all {chains}" if group is None else str(group)
            name += " (picked)" if group == picked else ""
            print(f"  {name:>14}: {seconds * 1e6:7.2f} us  x{seconds / best:.2f} of the best")
        if args.groups_only:
            return
    compile_timer = CompileTimer()
    rows = []
    for replicates in args.replicates:
        settings = {"hidden": 24, "schedule": "paper", "hyperpriors": NEAL,
                    "noise_hyperprior": {"mean": 400.0, "s": 0.2}, "ais_particles": 0,
                    "estimator": "ratio",
                    "replicates": replicates}  # fmt: skip
        if args.quick:
            settings.update(burn_in=20, samples=20)
        s = method.settings(settings)
        steps_per_chain = s.burn_in * s.burn_leapfrog + s.samples * s.leapfrog
        compiled_before = compile_timer.seconds
        start = time.process_time()
        result = method.fit(split, s, np.random.default_rng(0), log=lambda *_: None)
        cpu = time.process_time() - start
        compile_s = compile_timer.seconds - compiled_before
        start_s = result.diagnostics["start_cpu_seconds"]
        objective, noise = s.build(split)
        chains = N_LINKS * replicates
        floor = floor_step_cpu(MarginalModel(objective, noise), chains)
        # every step of the fit, with the rest (compilation, the estimators) charged to it:
        # an upper bound on what one step costs
        per_step = (cpu - start_s) / steps_per_chain
        print(f"paper protocol chain, robot_arm H=24, {N_LINKS} links x {replicates} replicate(s)")
        print(
            f"  CPU time          {cpu:8.1f} s (compile included; {start_s:.1f} s of it placing the starts,"
            f" {compile_s:.1f} s compiling)"
        )
        print(
            f"  per batched step  {per_step * 1e3:8.3f} ms, all but the starts over the steps; the batched"
            f" gradient alone in a compiled loop {floor * 1e3:.3f} ms, so {steps_per_chain * floor:.1f} s"
            " of gradients"
        )
        print(
            f"  ln p(D) = {result.log_evidence:.2f} +- {result.log_evidence_se:.2f} (TI {result.diagnostics['log_evidence_ti']:.2f})"
        )
        rows.append((replicates, cpu, start_s, per_step, floor, result.log_evidence, compile_s))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    r = np.array(rows)
    xr.Dataset(
        {
            "cpu_time": (("replicates",), r[:, 1], {"units": "s"}),
            "start_time": (("replicates",), r[:, 2], {"units": "s"}),
            "step_time": (("replicates",), r[:, 3], {"units": "s"}),
            "floor_step_time": (("replicates",), r[:, 4], {"units": "s"}),
            "log_evidence": (("replicates",), r[:, 5], {"units": "nats"}),
            "compile_time": (("replicates",), r[:, 6], {"units": "s"}),
        },
        coords={"replicates": r[:, 0].astype(int)},
        attrs={"quick": int(args.quick)},
    ).to_netcdf(out / "bench_chain.nc")


if __name__ == "__main__":
    main()
