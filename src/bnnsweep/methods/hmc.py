"""``hmc``: hybrid Monte Carlo over the weights with Gibbs updates of the hyperparameters
(Neal 1996; thesis sec. 5.3.1 and 5.5.2; paper 000 sec. 2.1).

Several chains advance together in one compiled JAX loop (engines.mcmc.hmc; the potential
and the Gibbs conditionals are models.jax_network). Before every
trajectory each alpha_k and beta is drawn from its conjugate Gamma conditional:
alpha_k | w ~ Gamma(a_k + W_k/2, b_k + w_k^T w_k / 2), beta | w ~ Gamma(a_b + N/2, b_b + E_D).
The step size is adapted during burn-in only and recorded. ESS (bulk and tail) and the
rank-normalised split R-hat are those of Vehtari et al. (2021), from arviz-stats; a fit is
``not_converged`` when the R-hat across chains of ln beta or of any ln alpha_k exceeds
``RHAT_LIMIT`` (every hyperparameter, not ln beta alone: on the sunspots ln beta mixes within
100 trajectories while ln alpha does not). Each chain starts at a short MAP fit
(``init: map``), the one of least M(w) among ``init_restarts`` random starts of its own: a
chain started in a minor mode of the weight posterior stays there (Tecator, 3 hidden units:
one chain of four at beta 620 against 710, for 24,000 trajectories), which R-hat flags. Predictions average the network
over the kept samples; the variance adds the mean noise variance 1/beta.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..datasets.base import Split
from ..engines.mcmc.diagnostics import effective_sample_size, split_rhat
from ..method_base import (
    FitResult,
    check_choice,
    check_positive,
    check_sampler_fractions,
    evenly_spaced,
)
from ..model_settings import ModelSettings
from ..models.priors import GammaPrior, check_prior_supported
from . import JAX, SCIPY, Method, Work, register

if TYPE_CHECKING:
    from ..models import jax_network

# rank-normalised split R-hat above this marks a fit not_converged (Vehtari et al. 2021
# sec. 4.3 recommend 1.01 for final inferences; 1.1 is the older, looser threshold kept here
# because short default runs of 4 chains rarely reach 1.01 on ln beta)
RHAT_LIMIT = 1.1


@dataclass(frozen=True)
class HMCSettings(ModelSettings):
    chains: int = 4
    burn_in: int = 100
    samples: int = 300
    leapfrog: int = 100
    burn_leapfrog: int = 100
    step_size: float = 2e-3
    target_accept: float = 0.8
    persistence: float = 0.0
    thin: int = 1
    init: str = "map"
    init_iter: int = 300
    init_restarts: int = 1
    alpha_init: float = 0.3
    beta_init: float = 200.0
    predictive_samples: int = 300
    step_scale: str = "none"

    def validate(self) -> None:
        super().validate()
        check_prior_supported("hmc", self.prior)
        for key in ("chains", "samples", "leapfrog", "burn_leapfrog", "step_size", "thin",
                    "init_iter", "init_restarts", "alpha_init", "beta_init",
                    "predictive_samples"):  # fmt: skip
            check_positive(key, getattr(self, key))
        check_positive("burn_in", self.burn_in, allow_zero=True)
        check_choice("init", self.init, ("map", "prior"))
        check_choice("step_scale", self.step_scale, STEP_SCALES)
        check_sampler_fractions(self.target_accept, self.persistence)


def hyperparameter_rhats(betas: np.ndarray, alphas: np.ndarray, groups) -> tuple:
    """Rank-normalised split R-hat across chains of ln beta (``betas`` (S, C)) and of each
    ln alpha_k (``alphas`` (S, C, K), ``groups`` their names): (R-hat of ln beta, list of
    R-hat of ln alpha_k, the names and values above ``RHAT_LIMIT`` as text)."""
    rhat = split_rhat(np.log(betas).T)
    rhat_alpha = [split_rhat(np.log(alphas[:, :, k]).T) for k in range(alphas.shape[2])]
    named = [
        ("ln beta", rhat),
        *((f"ln alpha_{g}", r) for g, r in zip(groups, rhat_alpha, strict=True)),
    ]
    slow = [f"{name} {r:.3f}" for name, r in named if np.isfinite(r) and r > RHAT_LIMIT]
    return rhat, rhat_alpha, slow


STEP_SCALES = ("none", "prior", "curvature")
"""How each weight's step is scaled (a diagonal mass matrix M(alpha, beta) of the trajectory,
drawn afresh with the hyperparameters; ``engines.mcmc.hmc.transition``): ``none``, M = I (one
step size for every weight); ``prior``, M_i = alpha_k(i), each weight's step in proportion to
its prior width (Neal 1996 sec. 3.5.2 sets step sizes from the hyperparameters); ``curvature``,
M_i = alpha_k(i) + beta h_i, the diagonal of the Gauss-Newton Hessian of M(w) = beta E_D +
sum_k alpha_k E_Wk, with h_i = sum_n sum_p (dy_p(x_n)/dw_i)^2 at the chains' starts (their
mean: fixed before sampling, so that M depends on alpha and beta only)."""


def curvature_diagonal(net, w0: np.ndarray, x: np.ndarray) -> np.ndarray:
    """h_i = sum_n sum_p (dy_p(x_n)/dw_i)^2, averaged over the rows of ``w0`` (C, W): the data
    term's Gauss-Newton diagonal per unit beta (thesis eq. 5.23's A without the prior)."""
    return (net.jacobian(w0, x) ** 2).sum(axis=(1, 2)).mean(axis=0)


def _target(spec: jax_network.NetworkSpec, noise: GammaPrior, step_scale: str = "none"):
    """U(w) = beta E_D + sum_k alpha_k E_Wk and the Gibbs draw of (alpha, beta), with the
    data (x, t) as the sampler's shared parameters; one pair per architecture, prior and
    noise prior in a process, so that every cell of a batch with the
    same network and data shape runs the same compiled programs."""
    key = (
        spec.n_inputs, spec.n_hidden, spec.n_outputs, spec.activation,
        tuple(spec.group_index.tolist()), tuple(spec.prior_shapes.tolist()),
        tuple(spec.prior_rates.tolist()), float(noise.shape), float(noise.rate), step_scale,
    )  # fmt: skip
    if key not in _TARGETS:
        _TARGETS[key] = _build_target(spec, noise, step_scale)
    return _TARGETS[key]


_TARGETS: dict[tuple, tuple] = {}


def _build_target(spec: jax_network.NetworkSpec, noise: GammaPrior, step_scale: str):
    """(potential, gibbs, mass) over the shared data (x, t, h): h the curvature diagonal
    (``curvature_diagonal``; read only by the ``curvature`` mass)."""
    from ..models import jax_network

    def potential(data, theta, w):
        (x, t, _), (alpha, beta) = data, theta
        return jax_network.penalised_error(spec, x, t, w, alpha, beta)

    def gibbs(key, data, w, theta):
        x, t, _ = data
        return jax_network.gibbs_hyperparameters(key, spec, x, t, w, noise)

    def mass(data, theta):
        alpha, beta = theta
        prior = alpha[spec.group_index]
        return prior + beta * data[2] if step_scale == "curvature" else prior

    return potential, gibbs, None if step_scale == "none" else mass


def fit(split: Split, settings: HMCSettings, rng: np.random.Generator, log=print) -> FitResult:
    # the compiled core is imported by a fit, not with the module: Snakemake imports this
    # module to plan a sweep (settings, cost model), and JAX cost 0.46 s of that DAG's 2 s
    from ..engines.mcmc import hmc as hmc_sampler
    from ..engines.optimise import minimise_weights
    from ..models import jax_network
    from ..runtime.jax_runtime import jnp, key_from_rng

    objective, noise = settings.build(split)
    net, prior = objective.network, objective.prior
    C, K = settings.chains, prior.n_groups
    w0 = net.init_weights(rng, C)
    n_init = 0
    if settings.init == "map":
        alpha0 = np.full(K, settings.alpha_init)
        R = settings.init_restarts
        # restarts beyond each chain's first are drawn after w0, so that R = 1 leaves the
        # random stream (and every earlier result) as it was
        extra = net.init_weights(rng, C * (R - 1)).reshape(C, R - 1, -1) if R > 1 else None
        for c in range(C):
            starts = [w0[c], *(extra[c] if extra is not None else ())]
            best = None
            for start in starts:
                found = minimise_weights(
                    objective, start, alpha0, settings.beta_init, settings.init_iter, 1e-9
                )
                n_init += found.n_evals
                if best is None or found.value < best.value:
                    best = found
            w0[c] = best.w
    theta0 = (np.full((C, K), settings.alpha_init), np.full(C, settings.beta_init))
    potential, gibbs, mass = _target(
        jax_network.objective_spec(objective), noise, settings.step_scale
    )
    h = curvature_diagonal(net, w0, objective.x) if settings.step_scale == "curvature" else 0.0
    data = (jnp.asarray(objective.x), jnp.asarray(objective.t), jnp.asarray(h))
    run = hmc_sampler.sample(
        potential, w0, theta0, data, key_from_rng(rng), shared_params=True,
        n_burn=settings.burn_in, n_samples=settings.samples,
        n_leapfrog_burn=settings.burn_leapfrog, n_leapfrog=settings.leapfrog,
        step_size=settings.step_size, gibbs=gibbs, persistence=settings.persistence,
        target_accept=settings.target_accept, thin=settings.thin, log=log, mass=mass,
    )  # fmt: skip
    S = run.samples.shape[0]
    flat = run.samples.reshape(S * C, -1)
    alphas, betas = run.thetas  # (S, C, K), (S, C)
    pick = np.linspace(0, S * C - 1, min(settings.predictive_samples, S * C)).astype(int)
    noise_var = float(np.mean(1.0 / betas))

    def predict(x):
        f = net.forward(flat[pick], x)
        return f.mean(axis=0), f.var(axis=0) + noise_var

    mean, var = predict(split.x_test)
    drawn = flat[pick][evenly_spaced(len(pick))]
    train_mean, train_var = predict(split.x_train)
    e_d = objective.data_error(flat).reshape(S, C)
    result = FitResult(
        pred_mean=mean, pred_var=var, train_mean=train_mean, train_var=train_var,
        n_grad_evals=run.n_grad_evals + n_init,
        function_samples=net.forward(drawn, split.x_test),
    )  # fmt: skip
    diverged = run.divergent.sum()
    # every trajectory after burn-in, the thinned-out ones too (S x thin a chain)
    n_trajectories = S * settings.thin * C
    if diverged > 0.1 * n_trajectories:
        result.flag(
            "diverged", f"{diverged} of {n_trajectories} trajectories after burn-in diverged"
        )
    rhat, rhat_alpha, slow = hyperparameter_rhats(betas, alphas, prior.group_names)
    if slow:
        result.flag(
            "not_converged",
            f"rank-normalised split R-hat across chains above {RHAT_LIMIT}: {', '.join(slow)}",
        )
    result.coords["group"] = np.array(prior.group_names)
    result.traces.update(
        {
            "sample_energy": (("sample", "chain"), run.energy),
            "sample_data_error": (("sample", "chain"), e_d),
            "sample_beta": (("sample", "chain"), betas),
            "sample_alpha": (("sample", "chain", "group"), alphas),
            "sample_acceptance": (("sample", "chain"), run.accept_prob),
            "sample_energy_error": (("sample", "chain"), run.energy_error),
            "chain_step_size": (("chain",), run.step_size),
            "chain_divergent": (("chain",), run.divergent),
        }
    )
    result.diagnostics.update(
        acceptance_rate=float(run.accepted.mean()),
        divergent=int(diverged),
        trajectories=int(n_trajectories),
        divergent_burn_in=int(run.divergent_burn.sum()),
        ess_data_error=effective_sample_size(e_d.T),
        ess_tail_data_error=effective_sample_size(e_d.T, method="tail"),
        ess_log_beta=effective_sample_size(np.log(betas).T),
        ess_tail_log_beta=effective_sample_size(np.log(betas).T, method="tail"),
        rhat_data_error=split_rhat(e_d.T),
        rhat_log_beta=rhat,
        rhat_log_alpha=max(rhat_alpha, key=lambda r: r if np.isfinite(r) else -np.inf),
        n_weights=net.n_weights,
    )
    return result


HMC_TYPICAL = 0.3
"""Share of the bound's step time an hmc fit takes (``Work.typical``): it runs every step
the bound counts, but a compiled step costs about 3 ns a multiply-add of the chains' passes
where ``jobsize.MULTIPLY_ADD_S`` counts 10."""
HMC_CALL_S = 8.3e-5
"""Fixed cost of one leapfrog step of the chains in the bound (the compiled step and the
Python around each trajectory): 25 us in a fit, with ``HMC_TYPICAL``."""
HMC_COMPILE_S = 8.0
"""CPU time of compiling the sampler's programs, once per network and data shape in a
process (``Work.fixed_s``). Fit CPU of the default sweep's toy cells, one job, one BLAS
thread (2026-11-27, fresh clone, ``python benchmarks/plan_vs_measured.py config/config.yaml
results``): 12.2 and 10.5 s for the first cell of each shape, 0.95 and 1.2 s for the
same shapes again (40300 steps, 4 chains, N x W = 300-480): about 10 s of compilation and
25 us a step. Sunspots (N = 209, W = 113) 18.2 s and, in-process
(``... config/variational.yaml --fit 2 --only hmc_grouped hmc_ard``), 19.6 and 18.9 s;
Tecator (N = 172, W = 97) 16.0 and 19.5 s, 30300 steps each: with 10 s compiling, 3 ns a
multiply-add. The old model (steps x 120 us x 0.3, no compile) priced the toy cells at
0.26 of their CPU and these at 0.37-0.53. Charged to every cell (a job whose cells share
a shape compiles once), at 8 s: toy 1.47, sunspots 0.95, Tecator 0.74-0.91 of the fit
CPU."""


def work(s: HMCSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: every leapfrog step of burn-in and sampling (chains batched; the thinned-out
    trajectories run too: samples x thin of them) and the initial optimisation; holds every
    chain's samples and the predictive draws."""
    steps = (
        s.burn_in * s.burn_leapfrog
        + s.samples * s.thin * s.leapfrog
        + s.init_iter * s.init_restarts
    )
    held = s.chains * s.samples * (n_weights + 8) + s.predictive_samples * n_test * n_out * 2
    return Work(
        steps,
        batch=s.chains,
        floats_held=held,
        call_s=HMC_CALL_S,
        typical=HMC_TYPICAL,
        fixed_s=HMC_COMPILE_S,
    )


register(
    Method(
        "hmc",
        HMCSettings,
        fit,
        ("hidden",),
        "hybrid Monte Carlo over the weights, Gibbs updates of alpha and beta, several chains batched",
        work=work,
        imports=(*JAX, *SCIPY),
    )
)
