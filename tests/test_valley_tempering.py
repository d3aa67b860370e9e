"""Parallel tempering from a valley reference (``engines.evidence.valley_tempering``): the
folding onto one image of the hidden units' symmetries, the reference's normaliser and exact
draws; its known-answer rows are in ``test_evidence_known_answers.py``."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bnnsweep.engines.evidence import valley_tempering as vt
from bnnsweep.models.jax_network import canonical_units, network_symmetry
from bnnsweep.runtime.jax_runtime import jnp


def _spec(hidden: int, activation: str = "tanh"):
    """The architecture fields the symmetries depend on (those of ``NetworkSpec``)."""
    n_weights = hidden * (2 + 1 + 2) + 2
    return SimpleNamespace(
        n_inputs=2, n_hidden=hidden, n_outputs=2, activation=activation, n_weights=n_weights
    )


def _n_weights(spec) -> int:
    return spec.n_weights


@pytest.mark.parametrize("hidden", [1, 3, 5])
def test_signed_permutation_is_the_element_canonical_units_applies(hidden):
    spec = _spec(hidden)
    sym = network_symmetry(spec)
    rng = np.random.default_rng(hidden)
    for _ in range(20):
        w = rng.standard_normal(_n_weights(spec))
        index, sign = sym.signed_permutation(w)
        np.testing.assert_array_equal(
            sign * w[index], np.asarray(canonical_units(spec, jnp.asarray(w)))
        )
        assert sorted(index) == list(range(len(w)))  # a permutation
        # the same g moves any other vector: applying it twice to w's image changes nothing
        image = sign * w[index]
        i2, s2 = sym.signed_permutation(image)
        np.testing.assert_array_equal(i2, np.arange(len(w)))
        np.testing.assert_array_equal(s2, np.ones(len(w)))


def test_fold_moves_a_gaussian_into_the_domain_with_its_covariance():
    spec = _spec(3)
    sym = network_symmetry(spec)
    rng = np.random.default_rng(0)
    n = _n_weights(spec)
    centre = rng.standard_normal(n)
    factor = np.tril(rng.standard_normal((n, n))) * 0.1 + np.eye(n) * 0.05
    c, f = vt.fold(sym, centre, factor)
    np.testing.assert_array_equal(c, np.asarray(canonical_units(spec, jnp.asarray(centre))))
    # draws of the folded Gaussian are the original's draws moved by the same g
    x = rng.standard_normal((5, n))
    index, sign = sym.signed_permutation(centre)
    moved = sign * (centre + x @ factor.T)[:, index]
    np.testing.assert_allclose(c + x @ f.T, moved, atol=1e-12)


def _boundary_reference(spec, distance):
    """One Gaussian, isotropic, whose two units' first output weights differ by
    ``distance`` standard deviations (both far above 0)."""
    n = _n_weights(spec)
    centre = np.zeros(n)
    start = spec.n_hidden * (spec.n_inputs + 1)
    centre[start : start + 2] = [5.0 + distance, 5.0]
    return vt.build_reference(network_symmetry(spec), centre[None], np.eye(n)[None], np.zeros(1))


@pytest.mark.parametrize("distance", [0.0, 1.0])
def test_fold_probability_against_the_normal_cdf(distance):
    """The share of N(c, I) inside C is P(first output weight of unit 1 > that of unit 2) =
    Phi(distance / sqrt 2) (both far from 0), over five seeds within 4 binomial s.e."""
    from scipy.stats import norm

    spec = _spec(2)
    sym = network_symmetry(spec)
    ref = _boundary_reference(spec, distance)
    exact = norm.cdf(distance / np.sqrt(2.0))
    for seed in range(5):
        p, log_se, _ = vt.fold_probability(sym, ref, 4000, np.random.default_rng(seed))
        assert abs(p - exact) <= 4 * log_se * p, (seed, p, exact)


def test_reference_draws_lie_in_the_domain_with_the_mixture_shares():
    spec = _spec(2)
    sym = network_symmetry(spec)
    n = _n_weights(spec)
    rng = np.random.default_rng(1)
    centres = np.stack([rng.standard_normal(n), rng.standard_normal(n)])
    ref = vt.build_reference(sym, centres, np.stack([0.3 * np.eye(n)] * 2), np.log([0.25, 0.75]))
    u, k = vt.sample_reference(sym, ref, 4000, rng)
    assert u.shape == (4000, n)
    canon = np.asarray([canonical_units(spec, jnp.asarray(v)) for v in u[:200]])
    np.testing.assert_array_equal(canon, u[:200])
    _, _, share = vt.fold_probability(sym, ref, 20000, rng)
    expected = np.array([0.25, 0.75]) * share / (np.array([0.25, 0.75]) @ share)
    counts = np.bincount(k, minlength=2) / len(k)
    assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected * (1 - expected) / len(k)))


def test_settings_reject_bad_values():
    with pytest.raises(ValueError, match="rungs"):
        vt.ValleyTemperingSettings(rungs=2).validate()
    with pytest.raises(ValueError, match="weight_floor"):
        vt.ValleyTemperingSettings(weight_floor=0.0).validate()
    with pytest.raises(TypeError):
        vt.ValleyTemperingSettings(search={"no_such_key": 1}).validate()


@pytest.mark.parametrize("searches", [1, 2])
def test_chaining_with_the_valley_tempering_estimator_fits_a_cell(searches):
    """``chaining`` with ``estimator: valley_tempering`` on the robot arm at H = 1 (a short
    protocol, one search or two independent ones): a finite ln p(D) with its s.e., within 1
    nat of the valley sum's -514.51 (docs/evidence.md), finite predictions, the reference's
    valleys as traces whose weights sum to 1 with the prior's share, the drift between the
    kept halves, and with two searches each one's estimate, their mean the cell's."""
    from bnnsweep import datasets
    from bnnsweep.methods import get_method

    method = get_method("chaining")
    settings = method.settings(
        {"hidden": 1, "activation": "tanh", "estimator": "valley_tempering",
         "valley_tempering": {"rungs": 5, "replicates": 4, "burn_in": 100, "adapt_rounds": 2,
                              "samples": 100, "searches": searches,
                              "search": {"starts": 8, "pilot_samples": 40}}}
    )  # fmt: skip
    split = datasets.load("robot_arm").split("default")
    result = method.fit(split, settings, np.random.default_rng(0), log=lambda *_: None)
    assert np.isfinite(result.log_evidence) and result.log_evidence_se > 0
    assert abs(result.log_evidence - (-514.51)) < 1.0, result.log_evidence
    assert np.all(np.isfinite(result.pred_mean)) and np.all(result.pred_var > 0)
    weights = result.traces["valley_reference_weight"][1]  # the valleys'; the prior has the rest
    assert weights.sum() == pytest.approx(1.0 - vt.ValleyTemperingSettings().prior_share)
    assert result.traces["link_lambda"][1][0] == 0.0 and result.traces["link_lambda"][1][-1] == 1
    assert np.isfinite(result.diagnostics["log_evidence_drift"])
    if searches > 1:
        per_search = result.traces["search_log_evidence"][1]
        assert len(per_search) == searches
        assert per_search.mean() == pytest.approx(result.log_evidence)


def test_valley_tempering_settings_are_checked_with_the_key_named():
    from bnnsweep.method_base import SettingsError
    from bnnsweep.methods import get_method

    chaining = get_method("chaining")
    with pytest.raises(SettingsError, match="'valley_tempering' has no key 'rung'"):
        chaining.settings({"valley_tempering": {"rung": 3}})
    # a bool where the default is one (both values), never where it is a number
    for value in (False, True):
        settings = chaining.settings({"valley_tempering": {"refit": value, "prune": value}})
        assert settings.valley_tempering_settings().refit is value
    with pytest.raises(SettingsError, match="'valley_tempering.rungs' must be like 24, got True"):
        chaining.settings({"valley_tempering": {"rungs": True}})


def test_the_prior_component_is_folded_into_the_domain_with_its_share():
    """With ``prior_share`` the prior is the reference's last component: its draws are moved
    to their image in C (all canonical), its share of the draws is prior_share / P (its
    fold probability is 1), and its log density is the folded prior's."""
    spec = _spec(2)
    sym = network_symmetry(spec)
    n = _n_weights(spec)
    rng = np.random.default_rng(2)
    centres = np.abs(rng.standard_normal((2, n))) + 1.0
    ref = vt.build_reference(sym, centres, np.stack([0.3 * np.eye(n)] * 2), [0.0, 0.0], 0.2)
    assert list(ref.valleys) == [0, 1, -1]
    assert np.exp(ref.log_weights).sum() == pytest.approx(1.0)
    assert np.exp(ref.log_weights[-1]) == pytest.approx(0.2)

    def prior(m, gen):
        return gen.standard_normal((m, n)) * 2.0, None

    u, k = vt.sample_reference(sym, ref, 3000, rng, prior)
    canon = np.asarray(vt._canonical_program(sym)(jnp.asarray(u)))
    np.testing.assert_array_equal(canon, u)
    p, _, share = vt.fold_probability(sym, ref, 20000, rng)
    assert share[-1] == 1.0
    expected = 0.2 / p
    got = np.mean(k == 2)
    assert abs(got - expected) < 4 * np.sqrt(expected * (1 - expected) / len(k)), (got, expected)


@pytest.mark.parametrize("dof", [np.inf, 3.0])
def test_moves_leave_the_reference_invariant_at_lambda_zero(dof):
    """At lambda = 0 p_lambda is the reference r itself, so label Gibbs, HMC (in the label's
    frame, or a prior-labelled state's in a valley's frame drawn from q(j | u), with its
    Metropolis-Hastings factor) and valley jumps must keep exact draws of r distributed as r.
    Reference: components centred at c_1 (scale 0.2) and c_2 (scale 2), Gaussian or Student-t
    with 3 degrees of freedom, of weight 1/4 each, and the prior N(0, 3^2 I) as the defensive
    component (1/2), d = 4, no symmetries. After 60 iterations from exact draws, over 128
    ladders x 7 moving rungs (rung 0, whose fresh exact draws would otherwise swap in, kept
    apart), three seeds: the prior's share of the labels
    within 4 binomial s.e. of 1/2, and under each label the share of states within 1 and 2
    scales of its centre (|z|^2 <= d, 4 d: chi^2_d, or d F(d, nu) for the Student-t) within
    4.5 binomial s.e. (HMC under the prior's label aiming at N(0, I), as an earlier version
    did, puts every such state inside; the missing factor q(j | u') / q(j | u) goes undetected
    here: the crossings of the responsibilities' boundaries it corrects are rare)."""
    from scipy.stats import chi2, f

    from bnnsweep.engines.evidence.known_answers import MixtureTarget
    from bnnsweep.engines.mcmc import hmc
    from bnnsweep.runtime.jax_runtime import jax, key_from_rng

    d, R, L, T = 4, 128, 8, 60
    centres = np.stack([np.full(d, 2.0), np.full(d, -1.0)])
    sds = np.array([0.2, 2.0])
    target = MixtureTarget(centres[:1], sds[:1], np.zeros(1), 3.0, 0.0)
    factors = sds[:, None, None] * np.eye(d)
    ref = vt.build_reference(None, centres, factors, np.log([0.5, 0.5]), 0.5, dof)
    run = vt._programs(target, 5)

    def inside_share(radius2, heavy):
        return f.cdf(radius2 / d, d, dof) if heavy and np.isfinite(dof) else chi2.cdf(radius2, d)

    for seed in range(3):
        rng = np.random.default_rng(seed)
        u, k = vt.sample_reference(None, ref, R * L, rng, target.sample_prior)
        step = jnp.full((R, L - 1), 0.3)
        carry = (jnp.asarray(u.reshape(R, L, d)), jnp.asarray(k.reshape(R, L)),
                 jnp.tile(jnp.arange(L, dtype=jnp.int32), (R, 1)),
                 jax.vmap(jax.vmap(hmc.dual_averaging_init))(step), step, key_from_rng(rng))  # fmt: skip
        u0, k0 = vt.sample_reference(None, ref, T * R, rng, target.sample_prior)
        xs = (jnp.arange(T), jnp.asarray(u0.reshape(T, R, d)), jnp.asarray(k0.reshape(T, R)))
        consts = {"target_accept": jnp.float64(0.8)}
        # rung 0's lambda NaN: no swap brings its fresh exact draws up to the moving rungs
        ladder = jnp.asarray(np.r_[np.nan, np.zeros(L - 1)])
        carry, _ = run(carry, ladder, xs, consts, ref.arrays(), jnp.asarray(False))
        u_end = np.asarray(carry[0])[:, 1:].reshape(-1, d)
        k_end = np.asarray(carry[1])[:, 1:].ravel()
        prior = k_end == 2
        n = len(k_end)
        assert abs(prior.mean() - 0.5) < 4 * np.sqrt(0.25 / n), prior.mean()
        for label, centre, scale, heavy in (
            (2, np.zeros(d), 3.0, False),
            (0, centres[0], sds[0], True),
            (1, centres[1], sds[1], True),
        ):
            r2 = np.sum((u_end[k_end == label] - centre) ** 2, axis=1) / scale**2
            for radius2 in (d, 4 * d):
                p = inside_share(radius2, heavy)
                got = np.mean(r2 <= radius2)
                se = np.sqrt(p * (1 - p) / len(r2))
                assert abs(got - p) < 4.5 * se, (seed, label, radius2, got, p)


@pytest.mark.parametrize("dof", [np.inf, 2.5])
def test_component_densities_against_scipy(dof):
    """ln pi_k + the component's log density at random points: scipy's multivariate normal
    or Student-t with the same centre and scale matrix L L^T (the normaliser enters ln P and
    the stepping stone through ln r)."""
    from scipy.stats import multivariate_normal, multivariate_t

    rng = np.random.default_rng(4)
    d = 5
    centres = rng.standard_normal((2, d))
    factors = np.stack([np.tril(rng.standard_normal((d, d))) * 0.3 + np.eye(d) for _ in range(2)])
    weights = np.log([0.3, 0.7])
    ref = vt.build_reference(None, centres, factors, weights, 0.0, dof)
    points = rng.standard_normal((6, d)) * 2.0
    arrays = ref.arrays()
    for u in points:
        got = np.asarray(vt._log_components(arrays, jnp.asarray(u), lambda v: 0.0))
        for k in range(2):
            cov = factors[k] @ factors[k].T
            dist = (multivariate_normal(centres[k], cov) if np.isinf(dof)
                    else multivariate_t(centres[k], cov, df=dof))  # fmt: skip
            np.testing.assert_allclose(got[k], weights[k] + dist.logpdf(u), rtol=0, atol=1e-10)


def test_student_t_draws_have_the_f_distribution():
    """x of a Student-t reference: |x|^2 / d ~ F(d, nu) (Kolmogorov-Smirnov, three seeds)."""
    from scipy.stats import f, kstest

    d, nu = 6, 3.0
    ref = vt.build_reference(None, np.zeros((1, d)), np.eye(d)[None], np.zeros(1), 0.0, nu)
    for seed in range(3):
        x = ref.standard_draws(4000, np.random.default_rng(seed))
        assert kstest(np.sum(x * x, axis=1) / d, f(d, nu).cdf).pvalue > 1e-3


def test_refit_widens_each_valley_to_its_states_never_narrows():
    """``refit_components``: states drawn around two valleys (no symmetries, d = 3) go to the
    nearer component. Valley 0's states are wider than its component in every direction: its
    centre becomes (n m + n_0 c) / (n + n_0) and its scale matrix (n a^2 S + n_0 Sigma) /
    (n + n_0), of the states' mean m and covariance S. Valley 1's are wider along the first
    axis only: the scale matrix widens there and keeps Sigma along the others (expand only).
    A valley with no state and the prior's component keep theirs."""
    d = 3
    rng = np.random.default_rng(0)
    centres = np.array([[6.0, 0.0, 0.0], [-6.0, 0.0, 0.0], [0.0, 20.0, 0.0]])
    factors = np.stack([0.5 * np.eye(d)] * 3)
    ref = vt.build_reference(None, centres, factors, np.log([0.4, 0.4, 0.2]), 0.05)
    cov = np.array([[1.0, 0.3, 0.0], [0.3, 2.0, 0.0], [0.0, 0.0, 0.5]])
    narrow = np.diag([1.0, 0.01, 0.01])
    states = np.concatenate([
        rng.multivariate_normal([6.5, 0.2, 0.0], cov, 300),
        rng.multivariate_normal([-6.0, -0.2, 0.1], narrow, 100),
    ])  # fmt: skip
    s = vt.ValleyTemperingSettings(refit_prior=20.0, refit_inflate=1.2)
    out = vt.refit_components(None, ref, states, s)
    n, part = 300, states[:300]
    centre = (n * part.mean(axis=0) + 20.0 * centres[0]) / (n + 20.0)
    scale = (n * 1.44 * np.cov(part, rowvar=False) + 20.0 * 0.25 * np.eye(d)) / (n + 20.0)
    np.testing.assert_allclose(out.centres[0], centre, atol=1e-12)
    np.testing.assert_allclose(out.factors[0] @ out.factors[0].T, scale, atol=1e-12)
    new = out.factors[1] @ out.factors[1].T
    assert new[0, 0] > 1.0  # widened along the states' long axis (from 0.25)
    assert np.all(np.linalg.eigvalsh(new - 0.25 * np.eye(d)) > -1e-12)  # nowhere narrower
    np.testing.assert_allclose(np.diag(new)[1:], 0.25, rtol=0.05)  # kept where they are narrow
    for k in (0, 1):
        np.testing.assert_allclose(out.inverses[k] @ out.factors[k], np.eye(d), atol=1e-10)
        sign, logdet = np.linalg.slogdet(out.factors[k] @ out.factors[k].T)
        assert out.log_det[k] == pytest.approx(0.5 * logdet)
    for k in (2, 3):  # the empty valley and the prior
        np.testing.assert_array_equal(out.centres[k], ref.centres[k])
        np.testing.assert_array_equal(out.factors[k], ref.factors[k])
    np.testing.assert_array_equal(out.log_weights, ref.log_weights)


@pytest.mark.parametrize("covered", [3, 2])
def test_reference_importance_is_unbiased_with_cover_and_low_without(covered):
    """``reference_importance`` on the first-order-transition mixture (d = 30, exact ln Z):
    from a reference over all three narrow modes (scales 1.2 s_k, equal weights, the prior as
    a 5% defensive component) within 3 reported s.e. of ln Z in each of 4 seeds; from one
    leaving out the mode of weight 0.2 it stays below ln Z by about ln(1 / 0.8) in every seed
    (a stochastic lower bound: the missing mode is reached only by the prior's draws)."""
    from bnnsweep.engines.evidence.known_answers import mixture

    target = mixture()
    k = covered
    factors = 1.2 * target.sds[:k, None, None] * np.eye(target.dimension)
    ref = vt.build_reference(None, target.means[:k], factors, np.zeros(k), 0.05)
    for seed in range(4):
        value, se, ess = vt.reference_importance(target, ref, 20000, np.random.default_rng(seed))
        if covered == 3:
            assert abs(value - target.log_z) < 3 * se, (seed, value, se, ess)
            assert se < 0.05
        else:
            assert target.log_z - 0.4 < value < target.log_z - 0.1, (seed, value, se)


def test_combined_searches_take_the_larger_of_spread_and_errors():
    """``combine_searches``: the mean of the searches' estimates; s.e. their spread
    s / sqrt(G) where it exceeds their reported errors sqrt(mean se^2 / G), else those; each
    search's flag kept with its index."""
    from bnnsweep.engines.evidence.result import EvidenceEstimate

    def part(value, se, status="ok"):
        out = EvidenceEstimate(value, se, 10, diagnostics={
            "log_z_ti": value, "round_trips": np.array([3.0, 4.0]), "swap_accept_min": 0.5,
            "prior_occupancy": 0.1, "new_valley_share": 0.0})  # fmt: skip
        if status != "ok":
            out.flag(status, "0.0 round trips")
        return out

    spread = vt.combine_searches([part(158.0, 0.1), part(159.0, 0.1), part(160.0, 0.1),
                                  part(161.0, 0.1)])  # fmt: skip
    assert spread.log_z == pytest.approx(159.5)
    assert spread.log_z_se == pytest.approx(np.std([158, 159, 160, 161], ddof=1) / 2)
    assert spread.n_grad_evals == 40 and spread.status == "ok"
    assert len(spread.diagnostics["round_trips"]) == 8
    errors = vt.combine_searches([part(159.0, 1.0), part(159.1, 2.0, "not_converged")])
    assert errors.log_z_se == pytest.approx(np.sqrt((1.0 + 4.0) / 2 / 2))
    assert errors.status == "not_converged" and errors.reason.startswith("search 1: ")


def test_searches_must_leave_two_ladders_each():
    with pytest.raises(ValueError, match="searches"):
        vt.ValleyTemperingSettings(replicates=8, searches=3).validate()
    with pytest.raises(ValueError, match="searches"):
        vt.ValleyTemperingSettings(replicates=8, searches=8).validate()
    vt.ValleyTemperingSettings(replicates=8, searches=4).validate()


@pytest.mark.parametrize("shift", [0.0, 1.0])
def test_drift_between_the_halves_of_the_kept_iterations_is_flagged(shift):
    """``estimate_from_valley_run``'s drift check on a two-rung ladder whose lambda = 0 rung
    holds phi' ~ N(0, 0.3^2) iid over 4 ladders x 400 iterations: stationary (shift 0), the
    drift is within 3 s.e. and unflagged in each of 4 seeds; with phi' lowered by 1 in the
    second half (the chains reaching mass the first half missed), ln p(D) of the halves
    differs by about 1 and the run is not_converged."""
    from bnnsweep.engines.evidence.tempering import TemperingRun

    R, S = 4, 400
    for seed in range(4):
        rng = np.random.default_rng(seed)
        phi = 0.3 * rng.standard_normal((2, R, S))
        phi[0, :, S // 2 :] -= shift
        run = TemperingRun(
            ladder=np.array([0.0, 1.0]), phi=phi, swap_accept=np.array([0.5]),
            hmc_accept=np.array([0.8]), divergent=np.zeros(1), step_size=np.ones((R, 1)),
            round_trips=np.full(R, 10.0), posterior_samples=np.zeros((S, R, 1)), barrier=0.5,
            n_grad_evals=1,
        )  # fmt: skip
        res = vt.ValleyTemperingRun(run, None, 0.0, 0.0, np.ones(1), np.zeros(1), np.zeros((S, R)))
        out = vt.estimate_from_valley_run(res, vt.ValleyTemperingSettings())
        drift = out.diagnostics["log_z_drift"]
        if shift == 0.0:
            assert abs(drift) < 3 * out.diagnostics["log_z_drift_se"], (seed, drift)
            assert "second half" not in out.reason, out.reason
        else:
            assert drift == pytest.approx(1.0, abs=0.1)
            assert out.status == "not_converged" and "second half" in out.reason
