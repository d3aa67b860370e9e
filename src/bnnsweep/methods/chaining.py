"""``chaining``: model evidence by Monte Carlo chaining (paper 001 sec. 2-3).

The evidence is a product of ratios along a schedule of E(lambda, w) = lambda phi(w) +
E_0(w), with alpha and beta integrated out analytically (``models.marginal``), so that the
lambda = 0 reference is the normalised prior with evidence 1. Every link is sampled by HMC
(with Gibbs updates of alpha as an auxiliary variable), all links in one vectorised batch,
with the paper's protocol as default: 100 burn-in samples of 50 leapfrog steps, then 600
samples of 300. Beside the paper's ratio estimator, thermodynamic integration and annealed
importance sampling (forward, and reverse from the lambda = 1 chains' draws) are reported;
``estimator`` picks the one stored as ``log_evidence``. The default is ``valley_smc``:
resample-move SMC from a Gaussian mixture over the posterior's valleys (found by many
starts), refitted to its own particles pass by pass, to the posterior folded onto one image
of the hidden units' symmetries, on the target with the output layer integrated out exactly
(``engines.evidence.valley_smc``, ``models.collapsed``); ``valley_tempering`` runs parallel
tempering along the same path, the paper's ratio taken along its adapted ladder;
``tempering`` runs a ladder from the prior,
``valleys`` chains from a Gaussian reference in each posterior valley
(``engines.evidence.valleys``). docs/evidence.md gives what each does on the known-answer
problems and on the robot arm.
Predictions average the network over the lambda = 1 samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..datasets.base import Split
from ..engines.evidence.chaining import ChainProtocol, run_chain
from ..engines.evidence.estimators import bdmc_estimate
from ..engines.evidence.nested import NestedSettings
from ..engines.evidence.schedules import schedule as make_schedule
from ..engines.evidence.tempering import TemperingSettings
from ..engines.evidence.valley_smc import ValleySMCSettings
from ..engines.evidence.valley_tempering import ValleyTemperingSettings
from ..engines.evidence.valleys import ValleySettings
from ..method_base import (
    FitResult,
    check_choice,
    check_positive,
    check_sampler_fractions,
    evenly_spaced,
)
from ..model_settings import ModelSettings
from ..models.collapsed import CollapsedModel
from ..models.marginal import MarginalModel
from ..models.priors import check_prior_supported
from . import JAX, Method, Work, register

# smallest Gamma shape whose draws stay representable (shape 3e-4 gives alpha = 0 in ~80%)
MIN_SHAPE = 0.01


def neal_hyperpriors() -> dict:
    """Paper 001 sec. 5's hyperpriors (after Neal), in (mean omega, shape parameter s) form:
    omega = 1, s = 0.2 for the input->hidden and hidden-bias precisions and for the
    hidden->output precision scaled by the number of hidden units, omega = 0.2, s = 1 for the
    output bias. Proper and sampleable, unlike the thesis's vague shape 3e-4: the lambda = 0
    reference of a chain is the prior, which must be drawn from."""
    vague = {"mean": 1.0, "s": 0.2}
    return {
        "weights": vague,
        "input_hidden": vague,
        "hidden_bias": vague,
        "hidden_output": {**vague, "scale_with_hidden": True},
        "output_bias": {"mean": 0.2, "s": 1.0},
    }


def neal_noise_hyperprior() -> dict:
    """Paper 001 sec. 5's noise-precision hyperprior: omega = 400 (noise s.d. 0.05), s = 0.2."""
    return {"mean": 400.0, "s": 0.2}


MIN_AIS_ESS = 5.0
"""Fewer effective AIS particles than this makes an AIS ``log_evidence`` not_converged."""

# KL(posterior || prior) of nested sampling on the collapsed target, per weight of the full
# network: measured on the robot arm, 13.9 and 13.7 nats at H = 1 (7 weights), 47.5 at H = 4
# (22 weights; python benchmarks/nested_reference.py robot_arm_h4 --coordinates collapsed)
COLLAPSED_NATS_PER_WEIGHT = 2.0
# stages of valley_smc's adaptive ladders, all passes together, per weight of the full network:
# measured 53 over six passes at H = 8 (42 weights; robot arm, collapsed, seed 0)
SMC_STAGES_PER_WEIGHT = 1.5
TARGETS = ("auto", "collapsed", "full")
# estimators that sample the collapsed target (nested sampling: nested: {coordinates: collapsed})
COLLAPSIBLE = ("valley_tempering", "valley_smc")
ESTIMATORS = ("valley_tempering", "valley_smc", "tempering", "valleys", "nested", "bdmc", "ratio",
              "ti", "ais")  # fmt: skip
"""``valleys``: chaining from a Gaussian reference in each valley of the posterior (paper 001
sec. 2 allows any reference whose evidence is known) to the posterior by AIS, summed over the
valleys found and their 2^H H! images (``engines.evidence.valleys``); ``tempering``: the
links exchange states (parallel tempering on an adapted ladder) and the paper's ratio is
taken along it (stepping stone); the others run the paper's sequential links from the prior
(``schedule``) and take the ratio, TI, forward AIS or bidirectional Monte Carlo; ``nested``:
nested sampling from the prior, no lambda path (``engines.evidence.nested``), or with
``nested: {coordinates: reference}`` from the valleys' reference (posterior repartitioning),
or with ``coordinates: collapsed`` on the target with the output layer integrated out exactly
(``models.collapsed``);
``valley_tempering``: parallel tempering from a Gaussian mixture over the valleys found to
the posterior folded onto one image of the symmetries (``engines.evidence.valley_tempering``);
``valley_smc``: resample-move SMC along the same path from the same reference family with the
valleys weighted equally (``engines.evidence.valley_smc``), the second estimator."""


def _overridden(kind, key: str, overrides: dict):
    """``kind`` (a settings dataclass) with ``overrides``; an unknown or mistyped key is named."""
    known = {f.name: f for f in fields(kind)}
    for name, value in overrides.items():
        if name not in known:
            raise ValueError(
                f"setting {key!r} has no key {name!r}; valid: {', '.join(sorted(known))}"
            )
        default = getattr(kind(), name)
        # a bool only where the default is one (True is an int to isinstance)
        if isinstance(value, bool) != isinstance(default, bool) or not isinstance(
            value, type(default) | int
        ):
            raise ValueError(f"setting '{key}.{name}' must be like {default!r}, got {value!r}")
    return kind(**overrides)


@dataclass(frozen=True)
class ChainingSettings(ModelSettings):
    hyperpriors: dict = field(default_factory=neal_hyperpriors)
    noise_hyperprior: dict = field(default_factory=neal_noise_hyperprior)
    schedule: str = "paper"
    replicates: int = 4
    burn_in: int = 100
    burn_leapfrog: int = 50
    samples: int = 600
    leapfrog: int = 300
    step_size: float = 0.01
    target_accept: float = 0.8
    persistence: float = 0.0
    ais_particles: int = 16
    ais_leapfrog: int = 10
    ais_substeps: int = 3600
    ais_reverse: bool = True
    start: str = "optimised"
    start_restarts: int = 8
    start_iter: int = 1000
    # robot arm H = 8: valley_tempering from its defaults came out 2-4 nats under valley_smc,
    # three of five seeds marked ok (docs/evidence.md); at H <= 4 they agree
    estimator: str = "valley_smc"
    # the space valley_tempering and valley_smc sample: "full" the weights (alpha and beta
    # integrated out), "collapsed" the first layer and the log-precisions with W2, b2
    # integrated out exactly (``models.collapsed``), "auto" collapsed where that estimator
    # and model allow it (``resolved_target``); predictions draw W2, b2 from their
    # conditional either way. Robot arm H = 4: the full target's ladders made 8-18 round
    # trips and settled 1.3-1.8 nats low, the collapsed one's 114-161 (docs/evidence.md)
    target: str = "auto"
    valleys: dict = field(default_factory=dict)  # overrides of ValleySettings' defaults
    tempering: dict = field(default_factory=dict)  # overrides of TemperingSettings' defaults
    nested: dict = field(default_factory=dict)  # overrides of NestedSettings' defaults
    # overrides of ValleyTemperingSettings' defaults
    valley_tempering: dict = field(default_factory=dict)
    valley_smc: dict = field(default_factory=dict)  # overrides of ValleySMCSettings' defaults
    bdmc_max_gap: float = 20.0
    predictive_samples: int = 200

    def validate(self) -> None:
        super().validate()
        check_prior_supported("chaining", self.prior)
        make_schedule(self.schedule)
        for key in ("replicates", "samples", "leapfrog", "burn_leapfrog", "step_size",
                    "predictive_samples", "ais_leapfrog", "ais_substeps"):  # fmt: skip
            check_positive(key, getattr(self, key))
        check_positive("burn_in", self.burn_in, allow_zero=True)
        check_positive("ais_particles", self.ais_particles, allow_zero=True)
        check_sampler_fractions(self.target_accept, self.persistence)
        check_choice("estimator", self.estimator, ESTIMATORS)
        self.tempering_settings().validate()
        self.valley_settings().validate()
        self.nested_settings().validate()
        self.valley_tempering_settings().validate()
        self.valley_smc_settings().validate()
        if self.estimator == "valleys" and self.hidden < 1:
            raise ValueError("estimator 'valleys' needs hidden >= 1 (the linear model has one)")
        check_choice("target", self.target, TARGETS)
        if self.target == "collapsed" and self.estimator not in COLLAPSIBLE:
            raise ValueError(
                f"target 'collapsed' is sampled by estimators {', '.join(COLLAPSIBLE)} only, "
                f"not {self.estimator!r} (nested sampling: nested: {{coordinates: collapsed}})"
            )
        nested = self.estimator == "nested" and self.nested_settings().coordinates == "collapsed"
        for what, on in (("nested coordinates 'collapsed'", nested),
                         ("target 'collapsed'", self.target == "collapsed")):  # fmt: skip
            if on and (self.hidden < 1 or self.prior == "single"):
                raise ValueError(
                    f"{what} integrates the output layer out, which needs hidden >= 1 and a "
                    "prior with the output layer in groups of its own ('grouped' or 'ard'), not "
                    f"hidden = {self.hidden}, prior {self.prior!r}"
                )
        check_positive("bdmc_max_gap", self.bdmc_max_gap)
        check_choice("start", self.start, ("optimised", "prior"))
        check_positive("start_restarts", self.start_restarts)
        check_positive("start_iter", self.start_iter)
        from ..models.priors import HYPERPRIOR_ROLES, GammaPrior

        used = ("weights",) if self.prior == "single" else HYPERPRIOR_ROLES[1:]
        defaults = type(self)().hyperpriors
        specs = {r: self.hyperpriors.get(r, defaults[r]) for r in used}
        specs["noise_hyperprior"] = self.noise_hyperprior
        for role, spec in specs.items():
            if GammaPrior.from_spec(spec).shape < MIN_SHAPE:
                raise ValueError(
                    f"chaining needs proper, sampleable hyperpriors: {role!r} has shape "
                    f"{GammaPrior.from_spec(spec).shape:g} < {MIN_SHAPE}; draws of alpha from it "
                    "underflow to 0, so the lambda = 0 reference cannot be sampled (give "
                    "'hyperpriors' for every role, e.g. Neal's {mean: 1, s: 0.2}, the default)"
                )
        if self.estimator in ("ais", "bdmc") and self.ais_particles == 0:
            raise ValueError(f"estimator {self.estimator!r} needs ais_particles > 0")
        if self.estimator == "bdmc" and not self.ais_reverse:
            raise ValueError("estimator 'bdmc' needs ais_reverse: true (the upper bound)")
        if self.estimator == "bdmc" and self.ais_particles < self.replicates:
            raise ValueError(
                f"estimator 'bdmc' needs ais_particles >= replicates ({self.replicates}): "
                "reverse AIS starts at least one particle from each lambda = 1 chain"
            )

    def tempering_settings(self) -> TemperingSettings:
        """The parallel-tempering protocol: ``TemperingSettings`` with this method's
        ``tempering`` overrides (a key that is not a setting of it is named)."""
        return _overridden(TemperingSettings, "tempering", self.tempering)

    def valley_settings(self) -> ValleySettings:
        """The valley-sum protocol: ``ValleySettings`` with this method's ``valleys``
        overrides."""
        return _overridden(ValleySettings, "valleys", self.valleys)

    def nested_settings(self) -> NestedSettings:
        """The nested-sampling protocol: ``NestedSettings`` with this method's ``nested``
        overrides."""
        return _overridden(NestedSettings, "nested", self.nested)

    def valley_tempering_settings(self) -> ValleyTemperingSettings:
        """The valley-reference tempering protocol: ``ValleyTemperingSettings`` with this
        method's ``valley_tempering`` overrides."""
        return _overridden(ValleyTemperingSettings, "valley_tempering", self.valley_tempering)

    def valley_smc_settings(self) -> ValleySMCSettings:
        """The SMC protocol from the valleys' reference: ``ValleySMCSettings`` with this
        method's ``valley_smc`` overrides."""
        return _overridden(ValleySMCSettings, "valley_smc", self.valley_smc)

    def resolved_target(self) -> str:
        """The space sampled: ``target``, with "auto" read as "collapsed" for the estimators
        that can sample it (``COLLAPSIBLE``) on a network whose output layer is a group of
        its own (hidden >= 1, prior not 'single'), else "full"."""
        if self.target != "auto":
            return self.target
        collapsible = self.estimator in COLLAPSIBLE and self.hidden >= 1
        return "collapsed" if collapsible and self.prior != "single" else "full"

    def protocol(self) -> ChainProtocol:
        return ChainProtocol(
            replicates=self.replicates,
            burn_in=self.burn_in,
            burn_leapfrog=self.burn_leapfrog,
            samples=self.samples,
            leapfrog=self.leapfrog,
            step_size=self.step_size,
            target_accept=self.target_accept,
            persistence=self.persistence,
            ais_particles=self.ais_particles,
            ais_leapfrog=self.ais_leapfrog,
            ais_substeps=self.ais_substeps,
            ais_reverse=self.ais_reverse,
            start=self.start,
            start_restarts=self.start_restarts,
            start_iter=self.start_iter,
        )


def sample_predictions(model: MarginalModel, samples: np.ndarray, x: np.ndarray):
    """Posterior-predictive mean and variance (network spread + E[1/beta | w]), (T, P)."""
    net = model.objective.network
    f = net.forward(samples, x)  # (S, T, P)
    noise = model.noise_variance_mean(samples)  # (S,)
    return f.mean(axis=0), f.var(axis=0) + noise.mean()


def fit(split: Split, settings: ChainingSettings, rng: np.random.Generator, log=print) -> FitResult:
    objective, noise = settings.build(split)
    model = MarginalModel(objective, noise)
    if settings.estimator == "tempering":
        return fit_tempering(split, settings, model, rng, log)
    if settings.estimator == "valleys":
        return fit_valleys(split, settings, model, rng, log)
    if settings.estimator == "nested":
        return fit_nested(split, settings, model, rng, log)
    if settings.estimator == "valley_tempering":
        return fit_valley_tempering(split, settings, model, rng, log)
    if settings.estimator == "valley_smc":
        return fit_valley_smc(split, settings, model, rng, log)
    lambdas = make_schedule(settings.schedule)
    log(f"chaining over {len(lambdas) - 1} links: {np.array2string(lambdas[1:], precision=4)}")
    chain = run_chain(model, lambdas, settings.protocol(), rng, log=log)
    for i in range(len(lambdas) - 1):
        log(
            f"link {i + 1}: lambda={lambdas[i + 1]:.4g} ln ratio={chain.ln_ratio[i]:.4f} "
            f"+- {chain.ln_ratio_se[i]:.4f} acceptance={chain.acceptance[i + 1]:.2f}"
        )
    post = chain.posterior_samples
    pick = np.linspace(0, len(post) - 1, min(settings.predictive_samples, len(post))).astype(int)
    mean, var = sample_predictions(model, post[pick], split.x_test)
    train_mean, train_var = sample_predictions(model, post[pick], split.x_train)
    estimates = {
        "ratio": (chain.log_z_ratio, chain.log_z_ratio_se),
        "ti": (chain.log_z_ti, chain.log_z_ti_se),
        "ais": (chain.log_z_ais, chain.log_z_ais_se),
        "bdmc": bdmc_estimate(
            chain.log_z_ais,
            chain.log_z_ais_se,
            chain.log_z_ais_reverse,
            chain.log_z_ais_reverse_se,
        ),  # fmt: skip
    }
    log_z, log_z_se = estimates[settings.estimator]
    result = FitResult(
        pred_mean=mean,
        pred_var=var,
        train_mean=train_mean,
        train_var=train_var,
        log_evidence=log_z,
        log_evidence_se=log_z_se,
        log_evidence_kind="chain",
        n_grad_evals=chain.n_grad_evals,
        function_samples=model.objective.network.forward(
            post[pick][evenly_spaced(len(pick))], split.x_test
        ),
    )
    n_kept = settings.samples * settings.replicates
    bad_links = np.flatnonzero(chain.divergent > 0.1 * n_kept)
    if bad_links.size:
        # divergent trajectories are rejected by the Metropolis test, so the chains and the
        # ratios stay valid but mix poorly there: the estimate is kept and marked, not discarded
        result.flag(
            "not_converged", f"over 10% divergent trajectories at link(s) {bad_links.tolist()}"
        )
    if settings.estimator == "ais" and chain.ais_ess < MIN_AIS_ESS:
        result.flag(
            "not_converged",
            f"AIS weights have an effective sample size of {chain.ais_ess:.1f} of "
            f"{settings.ais_particles} particles: the estimate is biased low and its standard "
            "error meaningless (raise ais_substeps)",
        )
    gap = chain.log_z_ais_reverse - chain.log_z_ais
    if settings.estimator == "ais" and gap > 3 * np.hypot(
        chain.log_z_ais_se, chain.log_z_ais_reverse_se
    ):
        # the two directions bound ln Z from below and above in expectation
        result.flag(
            "not_converged",
            f"forward and reverse AIS differ by {gap:.1f} nats, over 3 combined s.e.: "
            "ln Z lies between them, the forward estimate is biased low (raise ais_substeps)",
        )
    if settings.estimator == "bdmc" and abs(gap) > settings.bdmc_max_gap:
        bounds = (
            f"ln Z lies between {chain.log_z_ais:.1f} and {chain.log_z_ais_reverse:.1f} "
            "only in expectation"
            if gap > 0
            else "the upper bound below the lower: the lambda = 1 chains' draws the reverse "
            "particles start from are not posterior draws, or both runs are noisy"
        )
        result.flag(
            "not_converged",
            f"forward and reverse AIS differ by {gap:.1f} nats (bdmc_max_gap "
            f"{settings.bdmc_max_gap:g}): {bounds} (raise ais_substeps)",
        )
    if not np.isfinite(log_z):
        result.flag("diverged", "the evidence estimate is not finite")
    elif not np.isfinite(log_z_se):
        result.flag(
            "not_converged",
            "the evidence standard error is not finite (reference draws with overflowing "
            "outputs: a very broad hyperprior makes the prior reference a poor start)",
        )
    result.coords["link"] = np.arange(len(lambdas))
    result.traces.update(
        {
            "link_lambda": (("link",), chain.lambdas),
            "link_ln_ratio": (("link",), np.concatenate([[np.nan], chain.ln_ratio])),
            "link_ln_ratio_se": (("link",), np.concatenate([[np.nan], chain.ln_ratio_se])),
            "link_weight_ess": (("link",), np.concatenate([[np.nan], chain.ratio_ess])),
            "link_acceptance": (("link",), chain.acceptance),
            "link_step_size": (("link",), chain.step_size),
            "link_divergent": (("link",), chain.divergent),
            "link_mean_phi": (("link",), chain.mean_phi),
            "link_phi_trace": (("link", "chain", "sample"), chain.phi_trace),
            "link_energy_trace": (("link", "chain", "sample"), chain.energy_trace),
        }
    )
    result.diagnostics.update(
        log_evidence_ratio=chain.log_z_ratio,
        log_evidence_ratio_se=chain.log_z_ratio_se,
        log_evidence_ti=chain.log_z_ti,
        log_evidence_ratio_se_within=chain.log_z_ratio_se_within,
        log_evidence_ti_se=chain.log_z_ti_se,
        log_evidence_ti_se_within=chain.log_z_ti_se_within,
        log_evidence_ais=chain.log_z_ais,
        log_evidence_ais_se=chain.log_z_ais_se,
        ais_ess=chain.ais_ess,
        log_evidence_ais_reverse=chain.log_z_ais_reverse,
        log_evidence_ais_reverse_se=chain.log_z_ais_reverse_se,
        ais_reverse_ess=chain.ais_reverse_ess,
        log_evidence_bdmc_gap=gap,
        start_seconds=chain.start_seconds,
        start_cpu_seconds=chain.start_cpu_seconds,
        n_links=len(lambdas) - 1,
        n_weights=objective.network.n_weights,
    )
    return result


def fit_tempering(split: Split, settings: ChainingSettings, model: MarginalModel, rng, log):
    """Chaining with swaps: every rung of the ladder (lambda_0 = 0 exact prior draws, then
    rungs up to lambda = 1) holds a chain, neighbours exchange states, and ln p(D) is the
    paper's product of ratios along the ladder (``engines.evidence.tempering``). The links'
    traces are the ladder's; predictions average over the lambda = 1 rung's states."""
    from ..engines.evidence.tempering import estimate_from_run, run_tempering

    protocol = settings.tempering_settings()
    run = run_tempering(model, protocol, rng, log=log)
    found = estimate_from_run(run, protocol)
    return _ladder_result(model, split, settings, run, found, "tempering", log)


def fit_valley_tempering(split: Split, settings: ChainingSettings, model: MarginalModel, rng, log):
    """Parallel tempering from a reference on the valleys found to the posterior folded onto
    one image of the hidden units' symmetries (``engines.evidence.valley_tempering``): the
    ladder's traces as ``tempering``'s (their phi is the path's phi' = E - ln |G| + ln r), the
    reference's valleys beside them."""
    from ..engines.evidence.valley_tempering import estimate_and_run

    target = _sampled_target(settings, model)
    found, res = estimate_and_run(target, settings.valley_tempering_settings(), rng, log=log)
    if res is None:
        return _no_draws_result(split, found)
    if target is not model:  # theta -> full weights, W2, b2 from their conditional
        res = replace(res, run=replace(res.run, posterior_samples=_full_weights(
            target, res.run.posterior_samples, rng)))  # fmt: skip
    result = _ladder_result(model, split, settings, res.run, found, "valley tempering", log)
    d = found.diagnostics
    result.coords["valley"] = np.arange(d["n_components"])
    result.traces["valley_reference_weight"] = (("valley",), d["reference_weights"])
    result.traces["valley_occupancy"] = (("valley",), d["top_occupancy"])
    result.traces["valley_fold_share"] = (("valley",), d["fold_share"])
    result.diagnostics.update(
        log_fold=d["log_fold"],
        n_valleys=d["n_components"],
        n_new_valleys=d["n_new_valleys"],
        new_valley_share=d["new_valley_share"],
        # the lambda = 1 states' share under the prior's label: posterior mass outside every
        # valley's Gaussian (robot arm H = 4 and 8: most of it, in the searched valleys' basins far
        # beyond their moment-matched Gaussians, docs/evidence.md)
        prior_occupancy=d["prior_occupancy"],
        group_order=d["group_order"],
        # the second half of the kept iterations' stepping stone minus the first's
        log_evidence_drift=d.get("log_z_drift", np.nan),
        log_evidence_drift_se=d.get("log_z_drift_se", np.nan),
    )
    if "search_log_z" in d:  # independent searches (setting ``searches``): each one's estimate
        result.coords["search"] = np.arange(len(d["search_log_z"]))
        result.traces["search_log_evidence"] = (("search",), d["search_log_z"])
        result.traces["search_log_evidence_se"] = (("search",), d["search_log_z_se"])
    return result


def _sampled_target(settings: ChainingSettings, model: MarginalModel):
    """The model, or its collapsed form (``models.collapsed``) where ``resolved_target`` says
    so."""
    if settings.resolved_target() == "collapsed":
        return CollapsedModel(model.objective, model.noise_prior)
    return model


def fit_valley_smc(split: Split, settings: ChainingSettings, model: MarginalModel, rng, log):
    """Resample-move SMC from the valleys' reference (``engines.evidence.valley_smc``):
    predictions average the network over the final particles (equally weighted posterior
    draws; on the collapsed target each completed by a draw of W2, b2)."""
    from ..engines.evidence.valley_smc import estimate_and_run

    target = _sampled_target(settings, model)
    found, res = estimate_and_run(target, settings.valley_smc_settings(), rng, log=log)
    if res is None:
        return _no_draws_result(split, found)
    draws = res.particles.reshape(-1, res.particles.shape[-1])
    if target is not model:
        draws = _full_weights(target, draws, rng)
    pick = np.linspace(0, len(draws) - 1, min(settings.predictive_samples, len(draws)))
    draws = draws[pick.astype(int)]
    result = _weighted_draws_result(model, split, found, draws, np.full(len(draws), 1 / len(draws)))
    d = found.diagnostics
    result.coords["smc_run"] = np.arange(len(d["log_z_runs"]))
    result.traces["smc_run_log_evidence"] = (("smc_run",), np.asarray(d["log_z_runs"]))
    result.coords["link"] = np.arange(len(d["ladder"]))
    result.traces["link_lambda"] = (("link",), np.asarray(d["ladder"]))
    result.diagnostics.update(
        smc_stages=d["stages"], smc_run_sd=d["run_sd"], smc_acceptance_min=d["acceptance_min"],
        log_fold=d["log_fold"], n_valleys=d["n_components"], n_new_valleys=d["n_new_valleys"],
        new_valley_share=d["new_valley_share"], prior_occupancy=d["prior_occupancy"],
        group_order=d["group_order"], smc_passes=len(d["log_z_passes"]),
    )  # fmt: skip
    for key in ("log_z_importance", "log_z_importance_se", "importance_ess",
                "log_z_tempering", "log_z_tempering_se", "tempering_status"):  # fmt: skip
        if key in d:  # the importance check (``check_draws`` > 0), ``tempering_check``
            result.diagnostics[f"smc_{key}"] = d[key]
    return result


def _full_weights(target: CollapsedModel, states: np.ndarray, rng) -> np.ndarray:
    """Full weight vectors (..., W) from the collapsed target's states (..., D): one draw of
    W2, b2 from their Gaussian conditional per state (``CollapsedModel.full_weights``), so
    that (theta, W2, b2) is a draw of the full posterior."""
    from ..runtime.jax_runtime import jax, jnp, key_from_rng

    flat = states.reshape(-1, states.shape[-1])
    keys = jax.random.split(key_from_rng(rng), len(flat))
    weights = jax.jit(jax.vmap(target.full_weights))(jnp.asarray(flat), keys)
    return np.asarray(weights).reshape(*states.shape[:-1], -1)


def _ladder_result(model, split, settings, run, found, label: str, log):
    """A FitResult from a parallel-tempering ladder (``tempering.TemperingRun``) and its
    estimate: predictions over the lambda = 1 rung's states, the links' traces, the
    stepping-stone and TI estimates and the ladder's diagnostics."""
    from ..engines.evidence.estimators import ratio_estimate

    post = run.posterior_samples.reshape(-1, run.posterior_samples.shape[-1])
    pick = np.linspace(0, len(post) - 1, min(settings.predictive_samples, len(post))).astype(int)
    mean, var = sample_predictions(model, post[pick], split.x_test)
    train_mean, train_var = sample_predictions(model, post[pick], split.x_train)
    net = model.objective.network
    result = FitResult(
        pred_mean=mean, pred_var=var, train_mean=train_mean, train_var=train_var,
        log_evidence=found.log_z, log_evidence_se=found.log_z_se, log_evidence_kind="chain",
        n_grad_evals=found.n_grad_evals,
        function_samples=net.forward(post[pick][evenly_spaced(len(pick))], split.x_test),
    )  # fmt: skip
    if found.status != "ok":
        result.flag(found.status, found.reason)
    ratios = ratio_estimate(run.ladder, run.phi)
    log(
        f"{label} over {len(run.ladder)} rungs: ln p(D) = {found.log_z:.3f} +- "
        f"{found.log_z_se:.3f} (TI {found.diagnostics['log_z_ti']:.3f}), swap acceptance "
        f"min {run.swap_accept.min():.2f}, {run.round_trips.mean():.1f} round trips per ladder"
    )
    nan = np.array([np.nan])
    result.coords["link"] = np.arange(len(run.ladder))
    result.traces.update(
        {
            "link_lambda": (("link",), run.ladder),
            "link_ln_ratio": (("link",), np.concatenate([nan, ratios.ln_ratio])),
            "link_ln_ratio_se": (("link",), np.concatenate([nan, ratios.ln_ratio_se])),
            "link_weight_ess": (("link",), np.concatenate([nan, ratios.weight_ess])),
            "link_acceptance": (("link",), np.concatenate([nan, run.hmc_accept])),
            "link_step_size": (("link",), np.concatenate([nan, run.step_size.mean(axis=0)])),
            "link_divergent": (("link",), np.concatenate([[0], run.divergent])),
            "link_mean_phi": (("link",), run.phi.mean(axis=(1, 2))),
            "link_swap_accept": (("link",), np.concatenate([run.swap_accept, nan])),
            "link_phi_trace": (("link", "chain", "sample"), run.phi),
        }
    )
    d = found.diagnostics
    result.diagnostics.update(
        log_evidence_ratio=found.log_z,
        log_evidence_ratio_se=found.log_z_se,
        log_evidence_ratio_se_within=d["log_z_se_within"],
        log_evidence_ti=d["log_z_ti"],
        log_evidence_ti_se=d["log_z_ti_se"],
        ti_discretisation=d["ti_discretisation"],
        swap_accept_min=float(run.swap_accept.min()),
        round_trips=float(run.round_trips.mean()),
        barrier=run.barrier,
        n_links=len(run.ladder) - 1,
        n_weights=net.n_weights,
    )
    return result


def _no_draws_result(split: Split, found) -> FitResult:
    """The result of an estimate that ended with no posterior draws: NaN predictions, the
    estimate's status and reason."""
    nan = np.full((len(split.x_test), split.n_outputs), np.nan)
    result = FitResult(nan, nan, log_evidence_kind="chain", n_grad_evals=found.n_grad_evals)
    result.flag(found.status, found.reason)
    return result


def _weighted_draws_result(model: MarginalModel, split: Split, found, draws, weights):
    """A FitResult from weighted posterior draws (valleys' AIS particles, nested sampling's
    dead points): predictions average the network over the draws by weight, the predictive
    variance adds the spread and E[1/beta | w]; ln p(D) and the status from ``found``."""
    if len(draws) == 0:
        return _no_draws_result(split, found)
    net = model.objective.network

    def predict(x):
        f = net.forward(draws, x)  # (N, T, P)
        mean = np.einsum("n,ntp->tp", weights, f)
        spread = np.einsum("n,ntp->tp", weights, (f - mean) ** 2)
        return mean, spread + float(weights @ model.noise_variance_mean(draws))

    mean, var = predict(split.x_test)
    train_mean, train_var = predict(split.x_train)
    pick = np.random.default_rng(0).choice(len(draws), size=len(draws), p=weights)
    result = FitResult(
        pred_mean=mean,
        pred_var=var,
        train_mean=train_mean,
        train_var=train_var,
        log_evidence=found.log_z,
        log_evidence_se=found.log_z_se,
        log_evidence_kind="chain",
        n_grad_evals=found.n_grad_evals,
        function_samples=net.forward(draws[pick[evenly_spaced(len(pick))]], split.x_test),
    )
    if found.status != "ok":
        result.flag(found.status, found.reason)
    result.diagnostics["n_weights"] = net.n_weights
    return result


def fit_nested(split: Split, settings: ChainingSettings, model: MarginalModel, rng, log):
    """ln p(D) by nested sampling (``engines.evidence.nested``): ``replicates`` independent
    runs merged; predictions from the dead points' posterior weights."""
    from ..engines.evidence.nested import estimate

    protocol = settings.nested_settings()
    found = estimate(model, protocol, rng, log=log)
    d = found.diagnostics
    if "draws" not in d:  # ``coordinates: reference`` whose valley search found no minimum
        return _no_draws_result(split, found)
    result = _weighted_draws_result(model, split, found, d["draws"], d["draw_weights"])
    runs = ", ".join(f"{z:.2f}" for z in d["log_z_replicates"])
    log(
        f"nested: ln p(D) = {found.log_z:.3f} +- {found.log_z_se:.3f} from "
        f"{protocol.replicates} runs of {protocol.live} live points ({runs}); "
        f"KL(posterior || prior) {d['information']:.1f} nats"
        + (f", ln P {d['log_offset']:.3f}" if protocol.coordinates == "reference" else "")
    )
    result.coords["nested_run"] = np.arange(protocol.replicates)
    result.traces["nested_log_z"] = (("nested_run",), np.asarray(d["log_z_replicates"]))
    result.traces["nested_log_z_se"] = (("nested_run",), np.asarray(d["se_replicates"]))
    result.diagnostics.update(
        nested_information=d["information"],
        nested_replicate_p=d["replicate_p"],
        nested_se_volume=d["se_volume"],
        nested_se_spread=d["se_spread"],
        nested_kept_share=d["kept_share"],
        nested_dead=d["dead"],
    )
    return result


def fit_valleys(split: Split, settings: ChainingSettings, model: MarginalModel, rng, log):
    """Chaining from each valley's Gaussian reference (``engines.evidence.valleys``): ln p(D)
    as the sum over the valleys found and their images, a lower bound and, when the coverage
    check holds, the estimate. Predictions average the network over the AIS particles, each
    weighted by its valley's share of the evidence and its own importance weight."""
    from ..engines.evidence.valleys import estimate

    protocol = settings.valley_settings()
    found = estimate(model, protocol, rng, log=log)
    d = found.diagnostics
    result = _weighted_draws_result(model, split, found, d["draws"], d["draw_weights"])
    if len(d["draws"]) == 0:
        return result
    log(
        f"valleys: ln p(D) = {found.log_z:.3f} +- {found.log_z_se:.3f} from "
        f"{d['n_ais_valleys']} valleys ({d['n_valleys']} found, {d['n_accepted_minima']} "
        f"minima of {protocol.starts} starts; last {protocol.coverage_fraction:.0%} of starts "
        f"found {d['n_new_valleys']} new, {d['new_valley_share']:.1%} of the mass)"
    )
    result.coords["valley"] = np.arange(d["n_ais_valleys"])
    for name in ("energy", "hits", "orbit", "laplace_log_mass", "log_mass", "log_mass_se",
                 "ess", "stayed"):  # fmt: skip
        result.traces[f"valley_{name}"] = (("valley",), np.asarray(d[f"valley_{name}"], float))
    result.diagnostics.update(
        {
            k: d[k]
            for k in (
                "n_valleys",
                "n_ais_valleys",
                "n_accepted_minima",
                "n_new_valleys",
                "new_valley_share",
                "n_merged_valleys",
                "group_order",
            )
        }  # fmt: skip
    )
    return result


def _search_calls(v, n_weights: int) -> float:
    """Gradient calls of a valley search (``valleys.find_minima``): L-BFGS from every start,
    then the Newton polish (a Hessian per step, few steps)."""
    return v.starts * v.start_iter * 2 + v.starts * v.newton_iter * 0.1 * n_weights


def work(s: ChainingSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: every leapfrog step of the chains of every link and replicate, batched,
    and the AIS particles' steps (both directions with ``ais_reverse``), counted as calls of
    the chains' batch in proportion to the particles they move (the two batches run one
    after the other); holds every chain's samples and the predictive draws."""
    if s.estimator == "valleys":
        v = s.valley_settings()
        pilot = v.max_valleys * v.pilot_chains * 2 * v.pilot_samples * (v.leapfrog + 1)
        ais = v.n_grad_evals(v.max_valleys)
        held = v.max_valleys * v.particles * (n_weights + n_test * n_out)
        # AIS and the pilot run batched over valleys x particles; typical: fewer valleys
        return Work(_search_calls(v, n_weights) + (pilot + ais) / v.particles,
                    batch=v.particles, floats_held=held, typical=0.5)  # fmt: skip
    if s.estimator == "valley_tempering":
        from ..engines.evidence.valley_tempering import cost

        protocol = s.valley_tempering_settings()
        v, k = protocol.search_settings(), protocol.max_components
        grads, batch = cost(protocol)
        # every network gradient of the search, the pilot chains and the ladder, priced as
        # calls of the ladder's batch. Measured on the robot arm at H = 8 (defaults, seeds 0
        # and 3, a loaded 2-core machine): 692 and 664 s of fit CPU against 745 s priced here;
        # the reference mixture's K W^2 a point adds no measurable time after pruning
        pilot = k * v.pilot_chains * 2 * v.pilot_samples * (v.leapfrog + 1)
        total = protocol.searches * (_search_calls(v, n_weights) + pilot) + grads
        held = batch * (protocol.samples + n_weights) + s.predictive_samples * n_test * n_out * 2
        return Work(total / batch, batch=batch, floats_held=held)
    if s.estimator == "valley_smc":
        from ..engines.evidence.valley_smc import checks_cost, cost

        protocol = s.valley_smc_settings()
        vts = protocol.tempering_settings()
        v, k = vts.search_settings(), protocol.max_components
        pilot = k * v.pilot_chains * 2 * v.pilot_samples * (v.leapfrog + 1)
        grads, batch = cost(protocol, stages=SMC_STAGES_PER_WEIGHT * n_weights)
        grads += checks_cost(protocol)
        held = batch * n_weights * 2 + s.predictive_samples * n_test * n_out * 2
        return Work((_search_calls(v, n_weights) + pilot + grads) / batch, batch=batch,
                    floats_held=held)  # fmt: skip
    if s.estimator == "nested":
        from ..engines.evidence.nested import cost

        protocol = s.nested_settings()
        # KL(posterior || prior) grows with the weights: ~50 nats at 12 weights (robot arm
        # H = 2, measured), taken as 4 nats per weight; from the valleys' reference 3-4 nats
        # at 12 weights and 17-33 at 22 (H = 4), taken as 1.5 per weight, plus the search; a
        # likelihood ~ 1/3 gradient
        from_reference = protocol.coordinates == "reference"
        per_weight = 1.5 if from_reference else 4.0
        dimension = n_weights
        if protocol.coordinates == "collapsed":  # the first layer and 5 hyperparameters
            per_weight = COLLAPSED_NATS_PER_WEIGHT
            dimension = n_weights - (s.hidden + 1) * n_out + 5
        evals = cost(protocol, dimension, information=per_weight * n_weights) / 3.0
        if from_reference:  # the valley search, and with ``tempered`` the tempering's burn-in
            from ..engines.evidence import valley_tempering as vt

            vts = vt.ValleyTemperingSettings(search=dict(protocol.search))
            evals += _search_calls(vts.search_settings(), n_weights)
            if protocol.reference == "tempered":
                evals += vt.cost(vts)[0] * vts.burn_in / (vts.burn_in + vts.samples)
        batch = protocol.replicates * max(1, round(protocol.delete_fraction * protocol.live))
        return Work(evals / batch, batch=batch,
                    floats_held=protocol.replicates * protocol.live * protocol.window * n_weights)  # fmt: skip
    if s.estimator == "tempering":
        from ..engines.evidence.tempering import cost

        protocol = s.tempering_settings()
        grads, batch = cost(protocol)
        held = batch * (protocol.samples + n_weights) + s.predictive_samples * n_test * n_out * 2
        return Work(grads / batch, batch=batch, floats_held=held)
    links = len(make_schedule(s.schedule)) - 1
    chains = (links + 1) * s.replicates
    batch = max(chains, s.ais_particles)
    steps = s.burn_in * s.burn_leapfrog + s.samples * s.leapfrog
    directions = 2 if s.ais_reverse else 1
    ais = s.ais_leapfrog * links * s.ais_substeps * directions * s.ais_particles / batch
    held = chains * s.samples * (n_weights + 4) + s.predictive_samples * n_test * n_out * 2
    return Work(steps + ais, batch=batch, floats_held=held)


register(
    Method(
        "chaining",
        ChainingSettings,
        fit,
        ("hidden", "schedule"),
        "Monte Carlo chaining of evidence ratios along a lambda schedule, with TI and AIS (paper 001)",
        work=work,
        imports=(*JAX, "scipy.special"),
    )
)
