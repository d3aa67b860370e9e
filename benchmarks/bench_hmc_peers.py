"""Benchmark: bnnsweep's compiled HMC kernel against BlackJAX and NumPyro on the robot arm.

Target: the tanh network (H = 8 and H = 24, 200 training cases, 2 inputs, 2 outputs) with
the grouped Gaussian prior, float64, the same function for every sampler
(``models.jax_network.penalised_error``).

1. Fixed hyperparameters (alpha_k at their hyperprior means, beta = 400): bnnsweep ``hmc``
   kernel (``engines.mcmc.hmc.sample``), ``blackjax.hmc`` (its kernel vmapped over the
   chains inside one jitted ``lax.scan``) and ``numpyro.infer.HMC`` (``potential_fn``,
   vectorised chains, no progress bar, step size and mass matrix adaptation off).
2. With Gibbs updates of alpha_k and beta before every trajectory: bnnsweep ``hmc`` with
   ``jax_network.gibbs_hyperparameters`` against ``numpyro.infer.HMCGibbs`` with the same
   conjugate Gibbs function around an HMC kernel on w (the NumPyro model states the
   Gamma hyperpriors, the Gaussian prior and likelihood).

All samplers use 4 chains, L = 100 leapfrog steps, the same step size (the smallest of the
per-chain step sizes adapted by one common bnnsweep burn-in, no jitter) and the same
starting points (L-BFGS modes at the hyperprior means, then that burn-in's end points).
"numpyro_kernel" and "numpyro_hmcgibbs_kernel" are the same NumPyro kernels driven by one
jitted ``lax.scan`` (the functional ``numpyro.infer.hmc.hmc`` interface, and
``HMCGibbs.init``/``sample``): ``MCMC.run`` compiles its collection loop again at every call
(3-4 s at fixed hyperparameters, more with HMCGibbs), which the "numpyro" rows include in
their CPU time and these rows do not.
"bnnsweep_jitter" is the bnnsweep kernel with its default step jitter of +-10% (Neal 1996
sec. 3.5.1) around the same step size: not the same algorithm as the peers, shown apart. Runs are interleaved in one process
(A, B, C, A, B, C, ...); CPU time is ``time.process_time`` of the sampling call, after a
first call that compiles and is reported separately as "compile" (first call minus the
median of the timed calls; the persistent compilation cache is switched off). ESS is the
bulk ESS of arviz-stats (Vehtari et al. 2021) over the 4 chains: "ESS(U)" of the potential
energy U (fixed hyperparameters) and "ESS(ln b)" of ln beta (Gibbs), the fastest-mixing
scalars; "ESS(E_D)" of the data error; "ESS(w)" the minimum over all weights (on this
ill-conditioned posterior the slowest weight directions barely move in a few hundred
iterations, so ESS(w) sits near its floor for every sampler). Gradients per second count
leapfrog gradients (S x 4 x L); "accept" is the fraction of transitions that moved.

Run: python benchmarks/bench_hmc_peers.py [--quick]
"""

from __future__ import annotations

import os
import sys
import time

os.environ["BNNSWEEP_JAX_CACHE"] = ""  # compile times measured, not loaded from disk

import blackjax  # noqa: E402
import numpy as np  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from arviz_stats.base import array_stats  # noqa: E402
from numpyro.infer import HMC, MCMC, HMCGibbs  # noqa: E402
from numpyro.infer.hmc import hmc as numpyro_hmc  # noqa: E402

from bnnsweep import datasets  # noqa: E402
from bnnsweep.engines.mcmc import hmc  # noqa: E402
from bnnsweep.engines.optimise import minimise_weights  # noqa: E402
from bnnsweep.model_settings import ModelSettings  # noqa: E402
from bnnsweep.models import jax_network as jn  # noqa: E402
from bnnsweep.runtime.jax_runtime import jax, jnp  # noqa: E402

NEAL = {
    "input_hidden": {"mean": 1.0, "s": 0.2},
    "hidden_bias": {"mean": 1.0, "s": 0.2},
    "hidden_output": {"mean": 1.0, "s": 0.2, "scale_with_hidden": True},
    "output_bias": {"mean": 0.2, "s": 1.0},
}
NOISE = {"mean": 400.0, "s": 0.2}
CHAINS, LEAPFROG = 4, 100


def problem(hidden: int):
    split = datasets.load("robot_arm").split("default")
    settings = ModelSettings(hidden=hidden, hyperpriors=NEAL, noise_hyperprior=NOISE)
    objective, noise = settings.build(split)
    spec = jn.objective_spec(objective)
    x, t = jnp.asarray(objective.x), jnp.asarray(objective.t)
    alpha = jnp.asarray(spec.prior_shapes / spec.prior_rates)
    beta = noise.mean
    return objective, noise, spec, x, t, alpha, beta


def min_ess(samples: np.ndarray) -> float:
    """Minimum over weights of the bulk ESS of samples (S, C, W)."""
    return float(np.min(array_stats.ess(np.transpose(samples, (2, 1, 0)), method="bulk")))


def bulk_ess(trace: np.ndarray) -> float:
    """Bulk ESS of a scalar trace (S, C)."""
    return float(array_stats.ess(trace.T, method="bulk"))


def moved(samples: np.ndarray) -> float:
    """Fraction of transitions that moved (the acceptance rate, for every sampler alike)."""
    return float(np.mean(np.any(samples[1:] != samples[:-1], axis=2)))


def timed(run):
    start = time.process_time()
    out = run()
    return out, time.process_time() - start


def fixed_samplers(spec, x, t, alpha, beta, w_start, eps, n_samples):
    """name -> function(seed) returning samples (S, C, W) of the fixed-hyperparameter target."""

    def u(w):
        return jn.penalised_error(spec, x, t, w, alpha, beta)

    def ours_potential(params, theta, w):
        return u(w)

    def ours(seed, jitter=0.0):
        res = hmc.sample(
            ours_potential, w_start, None, None, jax.random.key(seed),
            n_burn=0, n_samples=n_samples, n_leapfrog_burn=LEAPFROG, n_leapfrog=LEAPFROG,
            step_size=eps, adapt=False, jitter=jitter,
        )  # fmt: skip
        return res.samples

    def ours_jitter(seed):
        return ours(seed, jitter=0.1)

    bj = blackjax.hmc(
        lambda w: -u(w), step_size=eps, inverse_mass_matrix=jnp.ones(w_start.shape[1]),
        num_integration_steps=LEAPFROG,
    )  # fmt: skip

    @jax.jit
    def bj_run(key, positions):
        states = jax.vmap(bj.init)(positions)

        def one(states, k):
            states, _ = jax.vmap(bj.step)(jax.random.split(k, CHAINS), states)
            return states, states.position

        _, trace = jax.lax.scan(one, states, jax.random.split(key, n_samples))
        return trace

    def blackjax_run(seed):
        return np.asarray(bj_run(jax.random.key(seed), jnp.asarray(w_start)))

    kernel = HMC(
        potential_fn=u, step_size=eps, num_steps=LEAPFROG, trajectory_length=None,
        adapt_step_size=False, adapt_mass_matrix=False, dense_mass=False,
    )  # fmt: skip
    mcmc = MCMC(kernel, num_warmup=0, num_samples=n_samples, num_chains=CHAINS,
                chain_method="vectorized", progress_bar=False)  # fmt: skip

    def numpyro_run(seed):
        mcmc.run(jax.random.key(seed), init_params=jnp.asarray(w_start))
        return np.transpose(np.asarray(mcmc.get_samples(group_by_chain=True)), (1, 0, 2))

    # NumPyro's HMC kernel through its functional interface, driven by one jitted scan like
    # BlackJAX (MCMC.run compiles its collection loop again at every call)
    init_kernel, sample_kernel = numpyro_hmc(potential_fn=u, algo="HMC")

    def np_init(w, key):
        return init_kernel(
            w, num_warmup=0, step_size=eps, num_steps=LEAPFROG, trajectory_length=None,
            adapt_step_size=False, adapt_mass_matrix=False, rng_key=key,
        )  # fmt: skip

    @jax.jit
    def np_kernel_run(key, positions):
        states = jax.vmap(np_init)(positions, jax.random.split(key, CHAINS))

        def one(states, _):
            states = jax.vmap(sample_kernel)(states)
            return states, states.z

        return jax.lax.scan(one, states, None, length=n_samples)[1]

    def numpyro_kernel_run(seed):
        return np.asarray(np_kernel_run(jax.random.key(seed), jnp.asarray(w_start)))

    return {"bnnsweep": ours, "blackjax": blackjax_run, "numpyro": numpyro_run,
            "numpyro_kernel": numpyro_kernel_run, "bnnsweep_jitter": ours_jitter}  # fmt: skip


def gibbs_samplers(spec, x, t, noise, w_start, theta_start, eps, n_samples):
    """name -> function(seed) returning (samples (S, C, W), beta (S, C)) with Gibbs steps."""

    def ours_potential(params, theta, w):
        a, b = theta
        return jn.penalised_error(spec, x, t, w, a, b)

    def ours_gibbs(key, params, w, theta):
        return jn.gibbs_hyperparameters(key, spec, x, t, w, noise)

    def ours(seed):
        res = hmc.sample(
            ours_potential, w_start, theta_start, None, jax.random.key(seed),
            n_burn=0, n_samples=n_samples, n_leapfrog_burn=LEAPFROG, n_leapfrog=LEAPFROG,
            step_size=eps, adapt=False, jitter=0.0, gibbs=ours_gibbs,
        )  # fmt: skip
        return res.samples, res.thetas[1]

    index = jnp.asarray(spec.group_index)

    def model():
        a = numpyro.sample("alpha", dist.Gamma(spec.prior_shapes, spec.prior_rates).to_event(1))
        b = numpyro.sample("beta", dist.Gamma(noise.shape, noise.rate))
        w = numpyro.sample("w", dist.Normal(0.0, 1.0 / jnp.sqrt(a[index])).to_event(1))
        f = jn.forward(spec, x, w)
        numpyro.sample("y", dist.Normal(f, 1.0 / jnp.sqrt(b)).to_event(2), obs=t)

    def gibbs_fn(rng_key, gibbs_sites, hmc_sites):
        a, b = jn.gibbs_hyperparameters(rng_key, spec, x, t, hmc_sites["w"], noise)
        return {"alpha": a, "beta": b}

    inner = HMC(
        model, step_size=eps, num_steps=LEAPFROG, trajectory_length=None,
        adapt_step_size=False, adapt_mass_matrix=False, dense_mass=False,
    )  # fmt: skip
    # HMCGibbs refuses chain_method="vectorized"; jax.vmap is its vectorised equivalent
    mcmc = MCMC(HMCGibbs(inner, gibbs_fn=gibbs_fn, gibbs_sites=["alpha", "beta"]),
                num_warmup=0, num_samples=n_samples, num_chains=CHAINS,
                chain_method=jax.vmap, progress_bar=False)  # fmt: skip
    init = {"w": jnp.asarray(w_start), "alpha": jnp.asarray(theta_start[0]),
            "beta": jnp.asarray(theta_start[1])}  # fmt: skip

    def numpyro_run(seed):
        mcmc.run(jax.random.key(seed), init_params=init)
        s = mcmc.get_samples(group_by_chain=True)
        return np.transpose(np.asarray(s["w"]), (1, 0, 2)), np.asarray(s["beta"]).T

    # the same HMCGibbs kernel driven by one jitted scan (init per chain: HMCGibbs takes one
    # key at a time), without MCMC.run's compilation at every call
    kernel = HMCGibbs(inner, gibbs_fn=gibbs_fn, gibbs_sites=["alpha", "beta"])

    def init_states(seed):
        keys = jax.random.split(jax.random.key(seed), CHAINS)
        states = [
            kernel.init(keys[c], 0, jax.tree_util.tree_map(lambda v: v[c], init), (), {})
            for c in range(CHAINS)
        ]
        return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *states)

    @jax.jit
    def kernel_loop(states):
        def one(states, _):
            states = jax.vmap(lambda st: kernel.sample(st, (), {}))(states)
            return states, (states.z["w"], states.z["beta"])

        return jax.lax.scan(one, states, None, length=n_samples)[1]

    start = init_states(0)  # once, outside the timed calls; each run gets its own keys

    def numpyro_kernel_run(seed):
        keys = jax.random.split(jax.random.key(seed), CHAINS)
        w, b = jax.device_get(kernel_loop(start._replace(rng_key=keys)))
        return w, b

    return {"bnnsweep": ours, "numpyro_hmcgibbs": numpyro_run,
            "numpyro_hmcgibbs_kernel": numpyro_kernel_run}  # fmt: skip


def interleave(samplers, reps, score):
    """Compile round, then ``reps`` interleaved timed rounds; per sampler the compile time,
    and per timed run (CPU s, min-weight ESS, E_D ESS, acceptance)."""
    first, runs = {}, {name: [] for name in samplers}
    for name, run in samplers.items():
        _, first[name] = timed(lambda: run(0))
    for rep in range(reps):
        for name, run in samplers.items():
            out, seconds = timed(lambda: run(rep + 1))
            runs[name].append((seconds, *score(out)))
    compile_s = {n: first[n] - np.median([r[0] for r in runs[n]]) for n in samplers}
    return compile_s, runs


def report(title, fast, compile_s, runs, n_grads):
    """Medians over the timed runs; ratios per round (runs next to each other in time)."""
    print(f"\n{title}")
    head = ["compile s", "CPU s", "grad/s", "ESS(w)", f"ESS({fast})", "ESS(E_D)", "accept"]
    head += [f"ESS({fast})/s", "ESS(E_D)/s", "ESS(w)/s"]
    print(f"{'sampler':>16} " + " ".join(f"{h:>10}" for h in head))
    for name, rows in runs.items():
        r = np.array(rows)  # seconds, ESS(w), ESS(E_D), moved, ESS(fast)
        sec = np.median(r[:, 0])
        cells = [compile_s[name], sec, n_grads / sec, np.median(r[:, 1]), np.median(r[:, 4]),
                 np.median(r[:, 2]), np.mean(r[:, 3]), np.median(r[:, 4] / r[:, 0]),
                 np.median(r[:, 2] / r[:, 0]), np.median(r[:, 1] / r[:, 0])]  # fmt: skip
        print(f"{name:>16} " + " ".join(f"{c:10.2f}" if c < 1e4 else f"{c:10.0f}" for c in cells))
    for mine in (n for n in runs if n.startswith("bnnsweep")):
        for name in (n for n in runs if not n.startswith("bnnsweep")):
            a, b = np.array(runs[mine]), np.array(runs[name])
            grad = np.median(b[:, 0] / a[:, 0])
            per_s = [np.median((a[:, k] / a[:, 0]) / (b[:, k] / b[:, 0])) for k in (4, 2, 1)]
            print(f"  {mine} / {name}: grad/s x{grad:.2f}, ESS({fast})/s x{per_s[0]:.2f}, "
                  f"ESS(E_D)/s x{per_s[1]:.2f}, ESS(w)/s x{per_s[2]:.2f}")  # fmt: skip


def main(quick: bool) -> None:
    # HMCGibbs is slow: fewer kept iterations and repetitions for the Gibbs comparison
    (n_samples, reps), (n_gibbs, reps_gibbs) = ((50, 1), (50, 1)) if quick else ((400, 3), (200, 2))
    for hidden in (8, 24):
        objective, noise, spec, x, t, alpha, beta = problem(hidden)
        W = spec.n_weights
        print(f"\n=== robot arm, H = {hidden} (W = {W}), {CHAINS} chains, L = {LEAPFROG}: "
              f"{n_samples} kept iterations x {reps} timed repetitions at fixed hyperparameters, "
              f"{n_gibbs} x {reps_gibbs} with Gibbs ===")  # fmt: skip
        # chains start near modes: L-BFGS from random weights at the hyperprior means
        w0 = objective.network.init_weights(np.random.default_rng(0), CHAINS)
        for c in range(CHAINS):
            w0[c] = minimise_weights(objective, w0[c], np.asarray(alpha), beta, 500, 1e-10).w

        def e_d_trace(samples):
            return np.asarray(jax.vmap(jax.vmap(lambda w: jn.data_error(spec, x, t, w)))(samples))

        # common start: a bnnsweep burn-in with Gibbs and step-size adaptation
        theta0 = (np.tile(np.asarray(alpha), (CHAINS, 1)), np.full(CHAINS, beta))

        def pot(params, theta, w):
            return jn.penalised_error(spec, x, t, w, theta[0], theta[1])

        def gib(key, params, w, theta):
            return jn.gibbs_hyperparameters(key, spec, x, t, w, noise)

        warm = hmc.sample(
            pot, w0, theta0, None, jax.random.key(123), n_burn=400, n_samples=1,
            n_leapfrog_burn=LEAPFROG, n_leapfrog=LEAPFROG, step_size=1e-3, gibbs=gib,
        )  # fmt: skip
        w_start = warm.samples[-1]
        theta_start = (warm.thetas[0][-1], warm.thetas[1][-1])
        eps = float(warm.step_size.min())
        # fixed hyperparameters: the Gibbs-sampled ones of the start, shared by all chains
        a_fix, b_fix = jnp.asarray(theta_start[0].mean(axis=0)), float(theta_start[1].mean())
        fixed = hmc.sample(
            lambda p, th, w: jn.penalised_error(spec, x, t, w, a_fix, b_fix), w_start, None,
            None, jax.random.key(124), n_burn=400, n_samples=1, n_leapfrog_burn=LEAPFROG,
            n_leapfrog=LEAPFROG, step_size=eps,
        )  # fmt: skip
        eps_fixed = float(fixed.step_size.min())
        print(f"step size: fixed {eps_fixed:.3g}, Gibbs {eps:.3g}; beta fixed at {b_fix:.1f}")

        samplers = fixed_samplers(spec, x, t, a_fix, b_fix, fixed.samples[-1], eps_fixed,
                                  n_samples)  # fmt: skip

        def u_trace(samples):
            return np.asarray(
                jax.vmap(jax.vmap(lambda w: jn.penalised_error(spec, x, t, w, a_fix, b_fix)))(
                    samples
                )
            )

        compile_s, runs = interleave(
            samplers,
            reps,
            lambda s: (min_ess(s), bulk_ess(e_d_trace(s)), moved(s), bulk_ess(u_trace(s))),
        )
        report(f"fixed hyperparameters, H = {hidden}", "U", compile_s, runs,
               n_samples * CHAINS * LEAPFROG)  # fmt: skip

        samplers = gibbs_samplers(spec, x, t, noise, w_start, theta_start, eps, n_gibbs)
        compile_s, runs = interleave(
            samplers,
            reps_gibbs,
            lambda o: (
                min_ess(o[0]),
                bulk_ess(e_d_trace(o[0])),
                moved(o[0]),
                bulk_ess(np.log(o[1])),
            ),
        )
        report(f"Gibbs updates of alpha and beta, H = {hidden}", "ln b", compile_s, runs,
               n_gibbs * CHAINS * LEAPFROG)  # fmt: skip
        sys.stdout.flush()


if __name__ == "__main__":
    main("--quick" in sys.argv)
