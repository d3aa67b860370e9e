"""Parallel tempering from a valley reference (``engines.evidence.valley_tempering``): the
folding onto one image of the hidden units' symmetries, the reference's normaliser and exact
draws; its known-answer rows are in ``test_evidence_known_answers.py``."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bnnsweep.engines.evidence import valley_tempering as vt
from bnnsweep.models.jax_network import canonical_units
from bnnsweep.runtime.jax_runtime import jnp


def _spec(hidden: int, activation: str = "tanh"):
    """The architecture fields the symmetries depend on (those of ``NetworkSpec``)."""
    return SimpleNamespace(n_inputs=2, n_hidden=hidden, n_outputs=2, activation=activation)


def _n_weights(spec) -> int:
    return spec.n_hidden * (spec.n_inputs + 1 + spec.n_outputs) + spec.n_outputs


@pytest.mark.parametrize("hidden", [1, 3, 5])
def test_signed_permutation_is_the_element_canonical_units_applies(hidden):
    spec = _spec(hidden)
    rng = np.random.default_rng(hidden)
    for _ in range(20):
        w = rng.standard_normal(_n_weights(spec))
        index, sign = vt.signed_permutation(spec, w)
        np.testing.assert_array_equal(
            sign * w[index], np.asarray(canonical_units(spec, jnp.asarray(w)))
        )
        assert sorted(index) == list(range(len(w)))  # a permutation
        # the same g moves any other vector: applying it twice to w's image changes nothing
        image = sign * w[index]
        i2, s2 = vt.signed_permutation(spec, image)
        np.testing.assert_array_equal(i2, np.arange(len(w)))
        np.testing.assert_array_equal(s2, np.ones(len(w)))


def test_fold_moves_a_gaussian_into_the_domain_with_its_covariance():
    spec = _spec(3)
    rng = np.random.default_rng(0)
    n = _n_weights(spec)
    centre = rng.standard_normal(n)
    factor = np.tril(rng.standard_normal((n, n))) * 0.1 + np.eye(n) * 0.05
    c, f = vt.fold(spec, centre, factor)
    np.testing.assert_array_equal(c, np.asarray(canonical_units(spec, jnp.asarray(centre))))
    # draws of the folded Gaussian are the original's draws moved by the same g
    x = rng.standard_normal((5, n))
    index, sign = vt.signed_permutation(spec, centre)
    moved = sign * (centre + x @ factor.T)[:, index]
    np.testing.assert_allclose(c + x @ f.T, moved, atol=1e-12)


def _boundary_reference(spec, distance):
    """One Gaussian, isotropic, whose two units' first output weights differ by
    ``distance`` standard deviations (both far above 0)."""
    n = _n_weights(spec)
    centre = np.zeros(n)
    start = spec.n_hidden * (spec.n_inputs + 1)
    centre[start : start + 2] = [5.0 + distance, 5.0]
    return vt.build_reference(spec, centre[None], np.eye(n)[None], np.zeros(1))


@pytest.mark.parametrize("distance", [0.0, 1.0])
def test_fold_probability_against_the_normal_cdf(distance):
    """The share of N(c, I) inside C is P(first output weight of unit 1 > that of unit 2) =
    Phi(distance / sqrt 2) (both far from 0), over five seeds within 4 binomial s.e."""
    from scipy.stats import norm

    spec = _spec(2)
    ref = _boundary_reference(spec, distance)
    exact = norm.cdf(distance / np.sqrt(2.0))
    for seed in range(5):
        p, log_se, _ = vt.fold_probability(spec, ref, 4000, np.random.default_rng(seed))
        assert abs(p - exact) <= 4 * log_se * p, (seed, p, exact)


def test_reference_draws_lie_in_the_domain_with_the_mixture_shares():
    spec = _spec(2)
    n = _n_weights(spec)
    rng = np.random.default_rng(1)
    centres = np.stack([rng.standard_normal(n), rng.standard_normal(n)])
    ref = vt.build_reference(spec, centres, np.stack([0.3 * np.eye(n)] * 2), np.log([0.25, 0.75]))
    u, k = vt.sample_reference(spec, ref, 4000, rng)
    assert u.shape == (4000, n)
    canon = np.asarray([canonical_units(spec, jnp.asarray(v)) for v in u[:200]])
    np.testing.assert_array_equal(canon, u[:200])
    _, _, share = vt.fold_probability(spec, ref, 20000, rng)
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


def test_chaining_with_the_valley_tempering_estimator_fits_a_cell():
    """``chaining`` with ``estimator: valley_tempering`` on the robot arm at H = 1 (a short
    protocol): a finite ln p(D) with its s.e., within 1 nat of the valley sum's -514.51
    (docs/evidence.md), finite predictions, and the reference's valleys as traces whose
    weights sum to 1 with the prior's share."""
    from bnnsweep import datasets
    from bnnsweep.methods import get_method

    method = get_method("chaining")
    settings = method.settings(
        {"hidden": 1, "activation": "tanh", "estimator": "valley_tempering",
         "valley_tempering": {"rungs": 5, "replicates": 4, "burn_in": 100, "adapt_rounds": 2,
                              "samples": 100,
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


def test_valley_tempering_settings_are_checked_with_the_key_named():
    from bnnsweep.method_base import SettingsError
    from bnnsweep.methods import get_method

    with pytest.raises(SettingsError, match="'valley_tempering' has no key 'rung'"):
        get_method("chaining").settings({"valley_tempering": {"rung": 3}})


def test_the_prior_component_is_folded_into_the_domain_with_its_share():
    """With ``prior_share`` the prior is the reference's last component: its draws are moved
    to their image in C (all canonical), its share of the draws is prior_share / P (its
    fold probability is 1), and its log density is the folded prior's."""
    spec = _spec(2)
    n = _n_weights(spec)
    rng = np.random.default_rng(2)
    centres = np.abs(rng.standard_normal((2, n))) + 1.0
    ref = vt.build_reference(spec, centres, np.stack([0.3 * np.eye(n)] * 2), [0.0, 0.0], 0.2)
    assert list(ref.valleys) == [0, 1, -1]
    assert np.exp(ref.log_weights).sum() == pytest.approx(1.0)
    assert np.exp(ref.log_weights[-1]) == pytest.approx(0.2)

    def prior(m, gen):
        return gen.standard_normal((m, n)) * 2.0, None

    u, k = vt.sample_reference(spec, ref, 3000, rng, prior)
    canon = np.asarray(vt._canonical_program(spec)(jnp.asarray(u)))
    np.testing.assert_array_equal(canon, u)
    p, _, share = vt.fold_probability(spec, ref, 20000, rng)
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
