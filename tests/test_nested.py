"""Nested sampling (``engines.evidence.nested``) and what it stands on: the non-centred prior
of ``MarginalModel.noncentred`` and the canonical form of the hidden units' symmetries.
Its accuracy on the known-answer problems is tested with the other estimators'
(tests/test_evidence_known_answers.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bnnsweep import datasets
from bnnsweep.engines.evidence import nested
from bnnsweep.engines.evidence.valleys import group_elements
from bnnsweep.methods import get_method
from bnnsweep.models.jax_network import canonical_units
from bnnsweep.models.marginal import MarginalModel
from bnnsweep.runtime.jax_runtime import jax, jnp


def _robot_arm(hidden: int) -> MarginalModel:
    split = datasets.load("robot_arm").split("default")
    settings = get_method("chaining").settings({"hidden": hidden, "activation": "tanh"})
    return MarginalModel(*settings.build(split))


def test_canonical_form_is_one_point_per_orbit_and_keeps_the_energies():
    """For every one of the 2^3 3! = 48 images g w of random weights (H = 3): the canonical
    form is the same point, and phi and E_0 at it equal their values at w."""
    model = _robot_arm(3)
    spec = model.spec
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = rng.normal(size=spec.n_weights)
        ref = np.asarray(canonical_units(spec, jnp.asarray(w)))
        images = group_elements(model.symmetry)
        assert len(images) == 48
        for index, sign in images:
            g_w = sign * w[index]
            np.testing.assert_allclose(np.asarray(canonical_units(spec, jnp.asarray(g_w))), ref)
        np.testing.assert_allclose(model.phi(ref)[0], model.phi(w)[0], rtol=1e-12)
        np.testing.assert_allclose(model.prior_energy(ref), model.prior_energy(w), rtol=1e-12)


def test_noncentred_prior_is_the_marginal_prior():
    """Draws of u pushed to w have the distribution of ``sample_prior``'s w (KS test on
    each group's first weight, 4,000 draws each, three seeds), and the log density of u is
    scipy's: N(0, I) in z and, per group, the Gamma density of alpha = e^eta times the
    Jacobian e^eta (on a grid of eta from -80 to 12, and its constant at u = 0)."""
    model = _robot_arm(2)
    nc = model.noncentred()
    weights = jax.jit(jax.vmap(nc.weights))
    first = [
        int(np.flatnonzero(model.spec.group_index == k)[0]) for k in range(model.spec.n_groups)
    ]
    rejected = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        via_u = np.asarray(weights(jnp.asarray(nc.sample(4000, rng))))
        direct, _ = model.sample_prior(4000, rng)
        rejected += sum(stats.ks_2samp(via_u[:, j], direct[:, j]).pvalue < 0.001 for j in first)
    assert rejected == 0
    W = model.spec.n_weights
    shapes, rates = model.objective.prior.shapes, model.objective.prior.rates
    eta = np.linspace(-80.0, 12.0, 200_001)
    log_density = jax.jit(jax.vmap(nc.log_prior))
    for k in range(len(shapes)):
        u = np.zeros((len(eta), W + len(shapes)))
        u[:, W:] = np.log(shapes / rates)  # the other groups at a fixed point
        u[:, W + k] = eta
        ld = np.asarray(log_density(jnp.asarray(u)))
        # the eta_k terms against scipy's Gamma density of alpha = e^eta times the
        # Jacobian e^eta: equal up to one constant (the other coordinates' terms)
        ref = stats.gamma(shapes[k], scale=1 / rates[k]).logpdf(np.exp(eta)) + eta
        shift = ld - ref
        assert np.ptp(shift) < 1e-8
    # the constant: at u = 0 the density is N(0, I) at z = 0 times the eta terms
    z_part = -0.5 * W * np.log(2 * np.pi)
    eta_part = sum(
        stats.gamma(a, scale=1 / b).logpdf(1.0) for a, b in zip(shapes, rates, strict=True)
    )
    assert float(log_density(jnp.zeros((1, W + len(shapes))))[0]) == pytest.approx(
        z_part + eta_part, abs=1e-9
    )


def test_replicates_that_disagree_make_the_estimate_not_converged():
    """A run whose replicates differ by 10 nats with volume errors of 0.3 is flagged, and its
    s.e. is the spread of the replicates, not the volume error."""
    run = nested.NestedRun(
        log_z_replicates=np.array([-360.0, -360.3, -370.0, -359.8]),
        se_replicates=np.full(4, 0.3),
        log_z=-361.0,
        se_volume=0.15,
        dead=1000,
        steps=10,
        evaluations=1,
        information=50.0,
        capped=False,
        draws=np.zeros((1, 2)),
        draw_weights=np.ones(1),
        kept_share=1.0,
    )
    out = nested.estimate_from_run(run, nested.NestedSettings())
    assert out.status == "not_converged" and "lost a valley" in out.reason
    assert out.log_z_se == pytest.approx(np.std(run.log_z_replicates, ddof=1) / 2)
    agreeing = run.__class__(
        **{**run.__dict__, "log_z_replicates": np.array([-360.0, -360.3, -359.9, -359.8])}
    )
    assert nested.estimate_from_run(agreeing, nested.NestedSettings()).status == "ok"


def test_chaining_with_the_nested_estimator_fits_a_cell():
    """``chaining`` with ``estimator: nested`` (robot arm H = 1, 2 runs of 60 live points):
    a finite ln p(D) with its s.e., one trace value per run, finite predictions from the
    weighted dead points, and posterior weights that sum to 1 over the kept points."""
    method = get_method("chaining")
    settings = method.settings(
        {"hidden": 1, "activation": "tanh", "estimator": "nested",
         "nested": {"live": 60, "replicates": 2, "inner_steps": 2.0}}
    )  # fmt: skip
    split = datasets.load("robot_arm").split("default")
    result = method.fit(split, settings, np.random.default_rng(0), log=lambda *_: None)
    assert np.isfinite(result.log_evidence) and result.log_evidence_se > 0
    assert result.traces["nested_log_z"][1].shape == (2,)
    assert np.all(np.isfinite(result.pred_mean)) and np.all(result.pred_var > 0)
    assert 0.99 < result.diagnostics["nested_kept_share"] <= 1.0 + 1e-9


def test_nested_settings_are_checked_with_the_key_named():
    from bnnsweep.method_base import SettingsError

    with pytest.raises(SettingsError, match="coordinates"):
        get_method("chaining").settings({"estimator": "nested", "nested": {"coordinates": "x"}})
    with pytest.raises(SettingsError, match="'reference' must be 'search' or 'tempered'"):
        get_method("chaining").settings({"estimator": "nested", "nested": {"reference": "x"}})
    with pytest.raises(SettingsError, match="startz"):
        get_method("chaining").settings({"nested": {"coordinates": "reference",
                                                    "search": {"startz": 3}}})  # fmt: skip
    with pytest.raises(SettingsError, match="'nested' has no key 'lives'"):
        get_method("chaining").settings({"nested": {"lives": 10}})
    collapsed = {"estimator": "nested", "nested": {"coordinates": "collapsed"}}
    with pytest.raises(SettingsError, match="collapsed.*prior 'single'"):
        get_method("chaining").settings({**collapsed, "prior": "single"})
    get_method("chaining").settings(collapsed)  # grouped, the default: accepted


def test_reference_space_repartitions_the_folded_posterior():
    """``coordinates: reference`` (robot arm H = 2, a 16-start search): its prior draws lie
    in the fundamental domain C, where the log prior is finite, and at their mirror images
    (one unit's signs flipped) it is -inf; prior times likelihood is the folded posterior's
    density, ln r(u) - phi'(u) = ln |G| - E(u), at every draw; ln P = ln int_C r is <= 0."""
    from bnnsweep.engines.evidence import valleys

    model = _robot_arm(2)
    spec = model.spec
    settings = nested.NestedSettings(coordinates="reference", search={"starts": 16})
    where = nested.reference_space(model, settings, np.random.default_rng(0))
    u = where.sample(64, np.random.default_rng(1))
    canonical = np.asarray(jax.vmap(lambda x: canonical_units(spec, x))(jnp.asarray(u)))
    np.testing.assert_array_equal(canonical, u)
    log_prior = np.asarray(jax.vmap(where.log_prior)(jnp.asarray(u)))
    log_like = np.asarray(jax.vmap(where.log_likelihood)(jnp.asarray(u)))
    assert np.all(np.isfinite(log_prior)) and np.all(np.isfinite(log_like))
    energy = np.asarray(jax.vmap(valleys.energy_function(model))(jnp.asarray(u)))
    log_group = np.log(valleys.group_order(model.symmetry))
    np.testing.assert_allclose(log_prior + log_like, log_group - energy, rtol=1e-10, atol=1e-8)
    index, sign = group_elements(model.symmetry)[1]
    flipped = sign * u[:, index]
    moved = np.any(flipped != u, axis=1)
    outside = np.asarray(jax.vmap(where.log_prior)(jnp.asarray(flipped[moved])))
    assert moved.sum() > 50 and np.all(outside == -np.inf)
    assert where.log_offset <= 1e-12 and where.log_offset_se >= 0
