"""Benchmark: bnnsweep's compiled HMC kernel against BlackJAX HMC and NumPyro's HMC kernel on
the robot arm (H = 8 and 24; 200 training cases, 2 inputs, 2 outputs), float64.

Target: the tanh network's posterior at fixed hyperparameters, U(w) = beta E_D(w) +
sum_k alpha_k E_Wk(w) (thesis eq. 5.18), alpha_k at their hyperprior means (Neal's grouped
prior), beta = 400. Two model functions, each given to every sampler:

- "ours": ``models.jax_network.penalised_error``, whose E_D has a hand-written backward pass
  (``jax.custom_vjp``, Bishop 1995 sec. 4.8) that the samplers' autodiff calls;
- "autodiff": the same U written plainly in ``jax.numpy`` (``autodiff_potential`` below:
  x @ W1^T + b1, tanh, @ W2^T + b2) and differentiated by JAX, as a peer's user would write it.

Samplers, all with 4 chains, L = 100 leapfrog steps, identity mass, the same step size (the
smallest of the per-chain step sizes a common bnnsweep burn-in adapted, no jitter) and the
same starting points (one L-BFGS mode, then the end points of that burn-in's 4 chains from
it: one mode for all, see ``start_points``):

- "bnnsweep": ``engines.mcmc.hmc.sample`` (n_burn = 0, adapt off, jitter 0);
- "blackjax": ``blackjax.hmc``, its kernel vmapped over the chains in one jitted ``lax.scan``;
- "numpyro": NumPyro's HMC kernel (``numpyro.infer.hmc.hmc``, algo "HMC", adaptation off)
  vmapped over the chains in one jitted ``lax.scan``, as BlackJAX. (``MCMC.run`` compiles its
  collection loop again at every call, which would charge NumPyro a compilation per run.)

Every program is compiled with the options of bnnsweep's samplers
(``runtime.jax_runtime.SAMPLER_COMPILER_OPTIONS``, passed to the peers' ``jax.jit``); the
persistent compilation cache is off. Compilation is apart from sampling for every side:
each sampler runs once first (compiling), then ``reps`` rounds run every sampler in turn
(interleaved, one process) with a fresh random key per round and sampler run; "CPU s" is the
median ``time.process_time`` of a timed run, "compile s" the first run's CPU minus that.

Mixing: ESS is arviz-stats' bulk ESS (Vehtari et al. 2021) over the 4 chains of one run, of
U (the energy; the scalar the ratios use) and of E_D; "ESS(w)" is the smallest over the
weights (the slowest directions of this ill-conditioned posterior; shown, not ranked).
ESS(U) is given as the mean over runs +- its standard error (the runs' spread / sqrt(reps));
"rel" is that s.e. over the mean (the issue asks < 0.2), R-hat the largest split R-hat of U
over the runs. All samplers run the same algorithm from the same points, so their ESS per
iteration agree up to noise and ESS/s ratios differ from the gradients/s ratios by that noise.
Ratios are per round (runs next to each other in time), mean +- s.e. over the rounds.

Run: python benchmarks/bench_hmc_peers.py [--hidden 8 24] [--samples 2000] [--reps 4]
     (--quick: 50 samples, 2 rounds, a smoke test of the script)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial

os.environ["BNNSWEEP_JAX_CACHE"] = ""  # compile times measured, not loaded from disk

import blackjax  # noqa: E402
import numpy as np  # noqa: E402
from arviz_stats.base import array_stats  # noqa: E402
from numpyro.infer.hmc import hmc as numpyro_hmc  # noqa: E402

from bnnsweep import datasets  # noqa: E402
from bnnsweep.engines.mcmc import hmc  # noqa: E402
from bnnsweep.engines.optimise import minimise_weights  # noqa: E402
from bnnsweep.model_settings import ModelSettings  # noqa: E402
from bnnsweep.models import jax_network as jn  # noqa: E402
from bnnsweep.runtime.jax_runtime import SAMPLER_COMPILER_OPTIONS, jax, jnp  # noqa: E402

NEAL = {
    "input_hidden": {"mean": 1.0, "s": 0.2},
    "hidden_bias": {"mean": 1.0, "s": 0.2},
    "hidden_output": {"mean": 1.0, "s": 0.2, "scale_with_hidden": True},
    "output_bias": {"mean": 0.2, "s": 1.0},
}
NOISE = {"mean": 400.0, "s": 0.2}
CHAINS, LEAPFROG = 4, 100
compiled = partial(jax.jit, compiler_options=SAMPLER_COMPILER_OPTIONS)


def problem(hidden: int):
    split = datasets.load("robot_arm").split("default")
    settings = ModelSettings(hidden=hidden, hyperpriors=NEAL, noise_hyperprior=NOISE)
    objective, noise = settings.build(split)
    spec = jn.objective_spec(objective)
    alpha = jnp.asarray(spec.prior_shapes / spec.prior_rates)
    return objective, spec, jnp.asarray(objective.x), jnp.asarray(objective.t), alpha, noise.mean


def autodiff_potential(spec, x, t, alpha, beta):
    """U(w) in plain jax.numpy, for JAX's autodiff: the model a peer's user writes."""
    I, H, P = spec.n_inputs, spec.n_hidden, spec.n_outputs
    group = jnp.asarray(spec.group_index)

    def u(w):
        w1 = w[: H * I].reshape(H, I)
        b1 = w[H * I : H * I + H]
        w2 = w[H * I + H : H * I + H + P * H].reshape(P, H)
        b2 = w[H * I + H + P * H :]
        y = jnp.tanh(x @ w1.T + b1) @ w2.T + b2
        return 0.5 * beta * jnp.sum((y - t) ** 2) + 0.5 * jnp.sum(alpha[group] * w * w)

    return u


def samplers(u, w_start, eps, n_samples):
    """name -> function(seed) returning draws (S, C, W) of exp(-u), for one model u."""

    def potential(params, theta, w):  # one function object: compiled once, not per run
        return u(w)

    def ours(seed):
        return hmc.sample(
            potential, w_start, None, None, jax.random.key(seed),
            n_burn=0, n_samples=n_samples, n_leapfrog_burn=LEAPFROG, n_leapfrog=LEAPFROG,
            step_size=eps, adapt=False, jitter=0.0,
        ).samples  # fmt: skip

    bj = blackjax.hmc(
        lambda w: -u(w), step_size=eps, inverse_mass_matrix=jnp.ones(w_start.shape[1]),
        num_integration_steps=LEAPFROG,
    )  # fmt: skip

    @compiled
    def bj_run(key, positions):
        states = jax.vmap(bj.init)(positions)

        def one(states, k):
            states, _ = jax.vmap(bj.step)(jax.random.split(k, CHAINS), states)
            return states, states.position

        return jax.lax.scan(one, states, jax.random.split(key, n_samples))[1]

    init_kernel, sample_kernel = numpyro_hmc(potential_fn=u, algo="HMC")

    def np_init(w, key):
        return init_kernel(
            w, num_warmup=0, step_size=eps, num_steps=LEAPFROG, trajectory_length=None,
            adapt_step_size=False, adapt_mass_matrix=False, rng_key=key,
        )  # fmt: skip

    @compiled
    def np_run(key, positions):
        states = jax.vmap(np_init)(positions, jax.random.split(key, CHAINS))

        def one(states, _):
            states = jax.vmap(sample_kernel)(states)
            return states, states.z

        return jax.lax.scan(one, states, None, length=n_samples)[1]

    start = jnp.asarray(w_start)
    return {
        "bnnsweep": ours,
        "blackjax": lambda seed: np.asarray(bj_run(jax.random.key(seed), start)),
        "numpyro": lambda seed: np.asarray(np_run(jax.random.key(seed), start)),
    }


def scores(samples, u_batch, e_d_batch) -> dict:
    """Mixing of one run's draws (S, C, W): bulk ESS and split R-hat of U over the chains,
    ESS of E_D, the smallest ESS over the weights, the fraction of transitions that moved."""
    u_trace = np.asarray(u_batch(samples)).T  # (C, S)
    return {
        "ess_u": float(array_stats.ess(u_trace, method="bulk")),
        "rhat_u": float(array_stats.rhat(u_trace)),
        "ess_ed": float(array_stats.ess(np.asarray(e_d_batch(samples)).T, method="bulk")),
        "ess_w": float(np.min(array_stats.ess(np.transpose(samples, (2, 1, 0)), method="bulk"))),
        "accept": float(np.mean(np.any(samples[1:] != samples[:-1], axis=2))),
    }


def interleaved(runs: dict, reps: int, score) -> tuple[dict, dict]:
    """A compiling first run of each, then ``reps`` rounds of one run each, in turn, seeds
    fresh per round; per name the compile CPU and the timed runs' (CPU s, scores)."""
    first = {}
    for name, run in runs.items():
        start = time.process_time()
        run(0)
        first[name] = time.process_time() - start
    timed = {name: [] for name in runs}
    for r in range(reps):
        for i, (name, run) in enumerate(runs.items()):
            start = time.process_time()
            samples = run(1 + r * len(runs) + i)
            timed[name].append((time.process_time() - start, score(samples)))
    compile_s = {n: first[n] - float(np.median([t for t, _ in timed[n]])) for n in runs}
    return compile_s, timed


def mean_se(values) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def report(title: str, compile_s: dict, timed: dict, n_grads: int) -> list[dict]:
    print(f"\n{title}")
    head = ("compile s", "CPU s", "grad/s", "ESS(U)", "+- s.e.", "rel", "R-hat(U)", "ESS(E_D)",
            "ESS(w)", "accept", "ESS(U)/s")  # fmt: skip
    print(f"{'sampler':>20} " + " ".join(f"{h:>9}" for h in head))
    rows = []
    for name, runs in timed.items():
        sec = np.array([t for t, _ in runs])
        sc = {k: np.array([s[k] for _, s in runs]) for k in runs[0][1]}
        ess, ess_se = mean_se(sc["ess_u"])
        row = {"sampler": name, "compile_s": compile_s[name], "cpu_s": float(np.median(sec)),
               "grad_per_s": n_grads / float(np.median(sec)), "ess_u": ess, "ess_u_se": ess_se,
               "rhat_u": float(sc["rhat_u"].max()), "ess_ed": float(np.median(sc["ess_ed"])),
               "ess_w": float(np.median(sc["ess_w"])), "accept": float(sc["accept"].mean()),
               "ess_u_per_s": float(np.mean(sc["ess_u"] / sec))}  # fmt: skip
        cells = [row["compile_s"], row["cpu_s"], row["grad_per_s"], ess, ess_se, ess_se / ess,
                 row["rhat_u"], row["ess_ed"], row["ess_w"], row["accept"], row["ess_u_per_s"]]  # fmt: skip
        print(f"{name:>20} " + " ".join(f"{c:9.3g}" for c in cells))
        rows.append(row)
    return rows


def ratios(timed: dict, compile_s: dict, ours: str, peer: str) -> dict:
    """ours / peer per round: ESS(U) per CPU second and gradients per CPU second (mean +- s.e.
    over rounds), and the compile times' ratio."""
    a, b = timed[ours], timed[peer]
    ess = [(sa["ess_u"] / ta) / (sb["ess_u"] / tb) for (ta, sa), (tb, sb) in zip(a, b, strict=True)]
    grad = [tb / ta for (ta, _), (tb, _) in zip(a, b, strict=True)]
    out = {"ess_per_s": mean_se(ess), "grad_per_s": mean_se(grad),
           "compile": compile_s[ours] / compile_s[peer]}  # fmt: skip
    print(f"  {ours} / {peer}: ESS(U)/s x{out['ess_per_s'][0]:.2f} +- {out['ess_per_s'][1]:.2f}, "
          f"grad/s x{out['grad_per_s'][0]:.2f} +- {out['grad_per_s'][1]:.2f}, "
          f"compile time x{out['compile']:.2f}")  # fmt: skip
    return out


def start_points(objective, spec, x, t, alpha, beta):
    """One L-BFGS mode from random weights, then every chain from it through 400 iterations
    of a bnnsweep burn-in adapting per-chain step sizes: (end points (C, W), the smallest
    adapted step size). One mode for all chains: chains in different modes of this
    multimodal posterior never meet (R-hat 3 at H = 8 with one mode a chain), which would
    make a multi-chain ESS count modes, not mix."""
    w0 = objective.network.init_weights(np.random.default_rng(0), 1)[0]
    w0 = minimise_weights(objective, w0, np.asarray(alpha), beta, 500, 1e-10).w
    w0 = np.tile(w0, (CHAINS, 1))
    warm = hmc.sample(
        lambda p, th, w: jn.penalised_error(spec, x, t, w, alpha, beta), w0, None, None,
        jax.random.key(123), n_burn=400, n_samples=1, n_leapfrog_burn=LEAPFROG,
        n_leapfrog=LEAPFROG, step_size=1e-3,
    )  # fmt: skip
    return warm.samples[-1], float(warm.step_size.min())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[8, 24])
    parser.add_argument("--samples", type=int, default=2000, help="kept iterations per run")
    parser.add_argument("--reps", type=int, default=4, help="timed rounds")
    parser.add_argument("--quick", action="store_true", help="50 iterations, 2 rounds")
    parser.add_argument(
        "--skip", nargs="*", default=[], help="samplers left out, e.g. bnnsweep/autodiff"
    )
    args = parser.parse_args()
    n_samples, reps = (50, 2) if args.quick else (args.samples, args.reps)
    for hidden in args.hidden:
        objective, spec, x, t, alpha, beta = problem(hidden)
        print(f"\n=== robot arm, H = {hidden} (W = {spec.n_weights}), {CHAINS} chains, "
              f"L = {LEAPFROG}, {n_samples} iterations a run, {reps} rounds ===")  # fmt: skip
        w_start, eps = start_points(objective, spec, x, t, alpha, beta)
        models = {
            "ours": lambda w: jn.penalised_error(spec, x, t, w, alpha, beta),
            "autodiff": autodiff_potential(spec, x, t, alpha, beta),
        }
        # the two model functions are the same U, value and gradient
        w = jnp.asarray(w_start[0])
        np.testing.assert_allclose(models["autodiff"](w), models["ours"](w), rtol=1e-10)
        np.testing.assert_allclose(
            jax.grad(models["autodiff"])(w), jax.grad(models["ours"])(w), rtol=1e-8, atol=1e-8
        )
        print(f"step size {eps:.3g}; U at the start {float(models['ours'](w)):.1f}")
        u_batch = jax.jit(jax.vmap(jax.vmap(models["ours"])))
        e_d_batch = jax.jit(jax.vmap(jax.vmap(lambda w: jn.data_error(spec, x, t, w))))
        runs = {}
        for model, u in models.items():
            for name, run in samplers(u, w_start, eps, n_samples).items():
                if f"{name}/{model}" not in args.skip:
                    runs[f"{name}/{model}"] = run
        compile_s, timed = interleaved(runs, reps, lambda s: scores(s, u_batch, e_d_batch))
        report(f"H = {hidden}: model / sampler", compile_s, timed, n_samples * CHAINS * LEAPFROG)
        pairs = [
            (f"bnnsweep/{m}", f"{peer}/{m}") for m in models for peer in ("blackjax", "numpyro")
        ]
        pairs += [("bnnsweep/ours", f"{peer}/autodiff") for peer in ("blackjax", "numpyro")]
        for ours, peer in pairs:
            if ours in runs and peer in runs:
                ratios(timed, compile_s, ours, peer)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
