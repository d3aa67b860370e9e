"""``valley_smc``: resample-move SMC from the valleys' reference (``engines.evidence.
valley_smc``). Its evidence on the known-answer problems is in
``tests/test_evidence_known_answers.py`` (row ``valley_smc``); here its parts: the adaptive
step, the resampling, the run's error against the spread over seeds, and the chaining cell."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bnnsweep.engines.evidence import known_answers
from bnnsweep.engines.evidence import valley_smc as smc
from bnnsweep.engines.evidence import valley_tempering as vt


def _ess(log_w: np.ndarray) -> float:
    w = np.exp(log_w - log_w.max())
    return float(w.sum() ** 2 / np.sum(w**2))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_next_lambda_keeps_the_weights_ess_in_every_run(seed):
    """The step returned leaves the worst run's ESS at the target (to the bisection's
    precision) and a larger step would not; a flat phi goes straight to lambda = 1."""
    rng = np.random.default_rng(seed)
    phi = rng.gamma(2.0, 50.0, size=(4, 300)) * np.array([1.0, 2.0, 0.5, 1.0])[:, None]
    lam = 0.1
    new = smc.next_lambda(phi, lam, 0.5)
    assert lam < new < 1.0
    worst = min(_ess(-(new - lam) * p) for p in phi) / phi.shape[1]
    assert worst == pytest.approx(0.5, abs=1e-6)
    assert min(_ess(-1.01 * (new - lam) * p) for p in phi) / phi.shape[1] < 0.5
    assert smc.next_lambda(np.ones((2, 10)), lam, 0.9) == 1.0


def test_next_lambda_ignores_particles_of_zero_weight():
    """phi = inf (outside the target's support) gives weight 0, not NaN."""
    phi = np.array([[1.0, 2.0, np.inf, 3.0]])
    new = smc.next_lambda(phi, 0.0, 0.5)
    assert 0 < new <= 1.0 and np.isfinite(new)


@pytest.mark.parametrize("seed", [0, 1])
def test_systematic_resampling_keeps_each_particle_floor_or_ceil_of_n_w_times(seed):
    rng = np.random.default_rng(seed)
    log_w = rng.normal(size=(3, 50)) * 2
    log_w[1, :10] = -np.inf
    idx = smc.systematic_resample(log_w, rng)
    assert idx.shape == (3, 50)
    for r in range(3):
        w = np.exp(log_w[r] - log_w[r].max())
        expected = 50 * w / w.sum()
        counts = np.bincount(idx[r], minlength=50)
        assert np.all(counts >= np.floor(expected) - 1e-9)
        assert np.all(counts <= np.ceil(expected) + 1e-9)
    assert not np.isin(np.arange(10), idx[1]).any()


def test_reported_se_covers_the_spread_over_seeds():
    """On the Bayesian linear regression (exact ln Z), eight seeds of a small protocol: the
    s.d. of ln Z over seeds within [1/2.5, 2.5] x the mean reported s.e., and the mean over
    seeds within 3 s.e. of the truth (the suite's row covers the mixture, whose narrow mode
    needs 128 starts)."""
    problem = known_answers.problem("linear_gaussian")
    settings = smc.ValleySMCSettings(particles=64, runs=4, refits=2, search={"starts": 16})
    outs = [smc.estimate(problem.target, settings, np.random.default_rng([9, s])) for s in range(8)]
    values = np.array([o.log_z for o in outs])
    ses = np.array([o.log_z_se for o in outs])
    ratio = values.std(ddof=1) / ses.mean()
    assert 1 / 2.5 < ratio < 2.5, (values - problem.log_z, ses)
    assert abs(values.mean() - problem.log_z) < 3 * ses.mean() / np.sqrt(len(values)) + 0.02


def test_settings_reject_bad_values():
    for bad in ({"runs": 1}, {"ess_target": 1.0}, {"particles": 0}, {"max_run_sd": 0.0},
                {"check_draws": -1}, {"check_se": 0.0}, {"refit_prior": 0.0},
                {"tempering": {"rungs": 2}}, {"tempering": {"ladders": 8}}):  # fmt: skip
        with pytest.raises(ValueError):
            smc.ValleySMCSettings(**bad).validate()


def test_chaining_with_the_valley_smc_estimator_fits_a_cell():
    """``chaining`` with ``estimator: valley_smc`` on the robot arm at H = 1, the target
    collapsed by the default ``target: auto``: ln p(D) within 0.5 nat of importance
    sampling's -514.510 (docs/evidence.md), finite predictions, each run's estimate stored."""
    from bnnsweep import datasets
    from bnnsweep.methods import get_method

    method = get_method("chaining")
    settings = method.settings(
        {"hidden": 1, "activation": "tanh", "estimator": "valley_smc",
         "valley_smc": {"particles": 64, "runs": 4, "search": {"starts": 8, "pilot_samples": 40},
                        "tempering_check": True,
                        "tempering": {"rungs": 6, "burn_in": 100, "samples": 100}}}
    )  # fmt: skip
    assert settings.resolved_target() == "collapsed"
    split = datasets.load("robot_arm").split("default")
    result = method.fit(split, settings, np.random.default_rng(0), log=lambda *_: None)
    assert abs(result.log_evidence - (-514.510)) < 0.5, result.log_evidence
    assert 0 < result.log_evidence_se < 0.5
    assert np.all(np.isfinite(result.pred_mean)) and np.all(result.pred_var > 0)
    assert len(result.traces["smc_run_log_evidence"][1]) == 4
    assert result.traces["link_lambda"][1][-1] == 1.0
    # the importance check from the final reference, a lower bound below the estimate
    check = result.diagnostics["smc_log_z_importance"]
    assert check < result.log_evidence + 3 * result.log_evidence_se + 0.05, check
    # the second estimator on the same reference, stored beside it
    second = result.diagnostics["smc_log_z_tempering"]
    assert abs(second - (-514.510)) < 0.5, second


def test_target_auto_collapses_where_the_model_and_estimator_allow():
    from bnnsweep.methods import get_method

    chaining = get_method("chaining")
    assert chaining.settings({}).resolved_target() == "collapsed"
    assert chaining.settings({"estimator": "valley_smc"}).resolved_target() == "collapsed"
    assert chaining.settings({"hidden": 0}).resolved_target() == "full"
    assert chaining.settings({"prior": "single"}).resolved_target() == "full"
    assert chaining.settings({"estimator": "tempering"}).resolved_target() == "full"
    assert chaining.settings({"target": "full"}).resolved_target() == "full"


@pytest.mark.parametrize(("shift", "flagged"), [(0.0, False), (2.0, True)])
def test_a_last_pass_that_moves_the_answer_is_not_converged(monkeypatch, shift, flagged):
    """Each pass's runs give ln Z raised by ``shift`` over the pass before (a reference that
    keeps improving): a shift of 2 nats with runs of s.d. 0.1 spends every refit and is
    flagged; with none the second pass settles it."""
    problem = known_answers.problem("linear_gaussian")
    real = smc.run_valley_smc
    calls = []

    def fake(target, reference, settings, rng, log=None):
        res = real(target, reference, settings, rng, log)
        res.log_z_runs = 0.1 * np.random.default_rng(len(calls)).standard_normal(settings.runs)
        res.log_z_runs += shift * len(calls)
        calls.append(1)
        return res

    monkeypatch.setattr(smc, "run_valley_smc", fake)
    settings = smc.ValleySMCSettings(particles=32, runs=4, refits=3, search={"starts": 8})
    out = smc.estimate(problem.target, settings, np.random.default_rng(0))
    # passes stop once two in a row agree; a reference that keeps moving spends every refit
    assert len(calls) == (settings.refits + 1 if flagged else 2)
    assert (out.status == "not_converged") == flagged, out.reason
    assert out.diagnostics["log_z_pass_gap"] == pytest.approx(shift, abs=0.3)


@pytest.mark.parametrize(
    ("values", "ses", "settled"),
    [
        ([481.89, 481.98], [0.13, 0.13], True),  # two passes within 0.25 nat and 2 s.e.
        ([481.66, 482.10], [0.17, 0.17], False),  # 0.44 apart: not yet
        ([481.66, 482.10, 481.78], [0.17, 0.17, 0.17], True),  # a plateau's scatter
        ([475.87, 477.24, 477.90], [0.3, 0.3, 0.3], False),  # a climb with shrinking steps
        ([481.0, 481.3, 481.6], [0.2, 0.2, 0.2], False),  # a steady climb of 0.3 a pass
        ([481.0, 482.0, 481.1], [0.1, 0.1, 0.1], False),  # a middle pass 10 s.e. off
        ([481.0], [0.1], False),
    ],
)
def test_the_passes_settle_on_a_plateau_not_on_a_climb(values, ses, settled):
    assert smc.passes_settled(values, ses, gap=2.0, nats=0.25) == settled


@pytest.mark.parametrize(("shift", "flagged"), [(0.0, False), (-2.0, True)])
def test_an_estimate_under_importance_sampling_from_its_reference_is_not_converged(
    monkeypatch, shift, flagged
):
    """Every pass's runs moved by ``shift`` nats (an SMC that stays low whatever its
    reference): importance sampling from the final reference, a stochastic lower bound
    computed with no Markov chain, lands on the exact ln Z and, 2 nats above the estimate,
    flags it; unshifted, the two agree and the estimate stays ok."""
    problem = known_answers.problem("linear_gaussian")
    real = smc.run_valley_smc

    def low(target, reference, settings, rng, log=None):
        res = real(target, reference, settings, rng, log)
        res.log_z_runs = res.log_z_runs + shift
        return res

    monkeypatch.setattr(smc, "run_valley_smc", low)
    settings = smc.ValleySMCSettings(
        particles=64, runs=4, refits=2, check_draws=20000, search={"starts": 16}
    )
    out = smc.estimate(problem.target, settings, np.random.default_rng(3))
    d = out.diagnostics
    assert abs(d["log_z_importance"] - problem.log_z) < 3 * d["log_z_importance_se"] + 0.02
    assert d["importance_ess"] > 100
    assert (out.status == "not_converged") == flagged, out.reason
    assert ("stochastic lower bound" in out.reason) == flagged


def test_an_estimate_the_tempering_on_its_reference_disagrees_with_is_not_converged():
    """``tempering_check``: valley_tempering from the SMC's final reference lands on the
    exact ln Z of the linear Gaussian; the SMC's estimate moved 1 nat off it (either way; the
    s.e. about 0.03) is flagged by the disagreement, the unmoved one is not."""
    import copy

    problem = known_answers.problem("linear_gaussian")
    settings = smc.ValleySMCSettings(
        particles=64, runs=4, refits=2, check_draws=0, search={"starts": 16},
        tempering_check=True, tempering={"rungs": 8, "burn_in": 200, "samples": 200},
    )  # fmt: skip
    found, res = smc.estimate_and_run(
        problem.target, replace(settings, tempering_check=False), np.random.default_rng(5)
    )
    assert found.status == "ok", found.reason
    for shift, flagged in [(0.0, False), (1.0, True), (-1.0, True)]:
        out = copy.deepcopy(found)
        out.log_z += shift
        smc.tempering_check(problem.target, out, res, settings, np.random.default_rng(6))
        d = out.diagnostics
        assert abs(d["log_z_tempering"] - problem.log_z) < 3 * d["log_z_tempering_se"] + 0.02
        assert d["tempering_status"] == "ok"
        assert (out.status == "not_converged") == flagged, (shift, out.reason)
        assert ("valley_tempering from the final reference" in (out.reason or "")) == flagged


def test_tempering_started_from_the_posterior_end_lands_on_the_exact_evidence():
    """``run_valley_tempering(start=...)``: the chains started from the SMC's final particles
    (the lambda = 1 end) instead of reference draws land on the exact ln Z of the linear
    Gaussian in each of three seeds; a start too short for the ladder is refused."""
    problem = known_answers.problem("linear_gaussian")
    settings = smc.ValleySMCSettings(particles=64, runs=4, refits=2, check_draws=0,
                                     search={"starts": 16})  # fmt: skip
    protocol = vt.ValleyTemperingSettings(
        **{**settings.check_protocol().__dict__, "rungs": 8, "burn_in": 200, "samples": 200}
    )
    for seed in range(3):
        _, res = smc.estimate_and_run(problem.target, settings, np.random.default_rng(seed))
        ref = smc.refitted(problem.target, res, settings.tempering_settings())
        start = (res.particles.reshape(-1, res.particles.shape[-1]), res.labels.ravel())
        run = vt.run_valley_tempering(
            problem.target, ref, protocol, np.random.default_rng(seed + 10), start=start
        )
        out = vt.estimate_from_valley_run(run, protocol)
        assert abs(out.log_z - problem.log_z) < 3 * out.log_z_se + 0.02, (seed, out.log_z)
    with pytest.raises(ValueError, match="start: need >= 64 states"):
        vt.run_valley_tempering(problem.target, ref, protocol, np.random.default_rng(0),
                                start=(start[0][:10], start[1][:10]))  # fmt: skip
