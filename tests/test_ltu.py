"""Linear threshold unit networks (thesis ch. 3): the T -> 0 E-step against enumeration of the
exact ±1 sigmoid belief network, fixed points, the SVM M-step, the Ripley datasets, the
method end to end, its config and figures."""

from __future__ import annotations

import numpy as np
import pytest
from merged_fixtures import LTU_SMALL
from merged_fixtures import ltu_cell as _cell
from merged_fixtures import ltu_fit as _fit

from bnnsweep import datasets
from bnnsweep.engines.ltu import (
    LearningSchedule,
    annealing_temperatures,
    fit_unit,
    fit_weights,
    infer_hidden,
    learn,
    normalise_weights,
    random_network,
    scaled_log_odds,
)
from bnnsweep.figures import draw
from bnnsweep.figures.ltu import committee_errors, ltu_error_frame, ltu_runs
from bnnsweep.methods import get_method
from bnnsweep.methods.ltu import validation_rows
from bnnsweep.models.binary_states import all_states
from bnnsweep.models.threshold_network import (
    ThresholdNetwork,
    forward,
    hidden_input,
    log_joint,
    output_input,
    training_errors,
    zero_temperature_energy,
)
from bnnsweep.results import cell_dataset, with_run_test_data
from bnnsweep.sweeps.config import expand, load

# ---------------------------------------------------------------- tiny networks, enumeration


def _tiny(rng, n_in, n_hidden, n_out, n_points):
    net = ThresholdNetwork(
        rng.normal(size=(n_hidden, n_in)),
        rng.normal(size=n_hidden),
        rng.normal(size=(n_out, n_hidden)),
        rng.normal(size=n_out),
    )
    x = rng.uniform(-1, 1, size=(n_points, n_in))
    t = np.where(rng.random((n_points, n_out)) < 0.5, -1.0, 1.0)
    return net, x, t


def _log_odds_by_enumeration(net, x, t, temperature):
    """For every state of the hidden units (2^H, N, H) and unit j: T times the exact
    conditional log-odds of h_j = +1 given the other units, from the joint table."""
    states = all_states(net.n_hidden, (-1.0, 1.0))  # (S, H)
    h = np.broadcast_to(states[:, None, :], (len(states), len(x), net.n_hidden))
    out = np.empty(h.shape)
    for j in range(net.n_hidden):
        up, down = h.copy(), h.copy()
        up[..., j], down[..., j] = 1.0, -1.0
        out[..., j] = temperature * (
            log_joint(net, x, up, t, temperature) - log_joint(net, x, down, t, temperature)
        )
    return h, out


def _engine_log_odds(net, x, h, t, temperature):
    out = np.empty(h.shape)
    a = hidden_input(net, x)
    for s in range(h.shape[0]):
        b = output_input(net, h[s])
        for j in range(net.n_hidden):
            v = net.w_out[:, j]
            out[s, :, j] = scaled_log_odds(a[:, j], b - h[s, :, j, None] * v, v, t, temperature)
    return out


SHAPES = [(2, 1, 1), (3, 3, 1), (2, 5, 2), (2, 6, 2), (1, 7, 1)]  # (I, H, O), H + O <= 8


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("temperature", [2.0, 0.3, 0.05])
def test_log_odds_equal_the_exact_conditional_at_every_temperature(shape, temperature):
    for seed in range(3):
        net, x, t = _tiny(np.random.default_rng(seed), *shape, n_points=4)
        h, exact = _log_odds_by_enumeration(net, x, t, temperature)
        np.testing.assert_allclose(
            _engine_log_odds(net, x, h, t, temperature), exact, rtol=1e-9, atol=1e-9
        )


@pytest.mark.parametrize("shape", SHAPES)
def test_zero_temperature_log_odds_are_the_limit_of_the_exact_conditional(shape):
    for seed in range(3):
        net, x, t = _tiny(np.random.default_rng(10 + seed), *shape, n_points=5)
        h, _ = _log_odds_by_enumeration(net, x, t, 1.0)
        limit = _engine_log_odds(net, x, h, t, 0.0)
        for temperature in (1e-3, 1e-5):
            _, exact = _log_odds_by_enumeration(net, x, t, temperature)
            # |T ln sigma(z/T) + max(0, -z)| <= T ln 2 per term, two terms per output
            bound = 2 * shape[2] * temperature * np.log(2) + 1e-12
            assert np.max(np.abs(limit - exact)) <= bound
        # and it is the difference of the zero-temperature energy F, computed independently
        for j in range(net.n_hidden):
            up, down = h.copy(), h.copy()
            up[..., j], down[..., j] = 1.0, -1.0
            diff = zero_temperature_energy(net, x, up, t) - zero_temperature_energy(net, x, down, t)
            np.testing.assert_allclose(limit[..., j], diff, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_zero_temperature_passes_end_at_a_brute_force_coordinate_maximum(shape):
    for seed in range(4):
        rng = np.random.default_rng(20 + seed)
        net, x, t = _tiny(rng, *shape, n_points=6)
        start = np.where(rng.random((len(x), net.n_hidden)) < 0.5, -1.0, 1.0)
        result = infer_hidden(net, x, t, start, rng, np.zeros(0), zero_passes=50)
        assert result.settled
        h = result.hidden
        energy = zero_temperature_energy(net, x, h, t)
        assert np.all(energy >= zero_temperature_energy(net, x, start, t) - 1e-12)
        for j in range(net.n_hidden):  # no single flip does better (brute force)
            flipped = h.copy()
            flipped[:, j] *= -1
            assert np.all(zero_temperature_energy(net, x, flipped, t) <= energy + 1e-12)


def _teacher_data(seed, n_in=3, n_hidden=4, n_points=40):
    """A network and data it classifies (targets from its own forward pass)."""
    rng = np.random.default_rng(seed)
    net = normalise_weights(
        ThresholdNetwork(
            rng.normal(size=(n_hidden, n_in)),
            0.3 * rng.normal(size=n_hidden),
            rng.normal(size=(1, n_hidden)),
            np.array([0.1]),
        )
    )
    x = rng.uniform(-1, 1, size=(n_points, n_in))
    _, t = forward(net, x)
    return net, x, t


def test_a_network_that_classifies_the_data_is_a_fixed_point():
    for seed in range(5):
        net, x, t = _teacher_data(seed)
        h, _ = forward(net, x)
        assert training_errors(net, x, t) == 0
        # the forward states have F = 0, the maximum, and are where every T = 0 pass stays
        np.testing.assert_array_equal(zero_temperature_energy(net, x, h, t), 0.0)
        rng = np.random.default_rng(seed)
        result = infer_hidden(net, x, t, h, rng, np.zeros(0))
        assert result.settled and result.zero_passes == 1
        np.testing.assert_array_equal(result.hidden, h)
        # they are the mode of the exact posterior at small T (enumeration over 2^4 states)
        states = all_states(net.n_hidden, (-1.0, 1.0))
        cand = np.broadcast_to(states[:, None, :], (len(states), len(x), net.n_hidden))
        mode = states[np.argmax(log_joint(net, x, cand, t, 1e-2), axis=0)]
        np.testing.assert_array_equal(mode, h)
        # learning from it stops at once and returns it unchanged
        learned = learn(x, t, net, LearningSchedule(temperatures=annealing_temperatures()), rng)
        assert learned.best_iteration == 0 and learned.train_errors[0] == 0
        assert learned.network is net


def test_printed_rule_differs_from_the_exact_limit_only_where_the_thesis_pulls_harder():
    """The printed 3.23 adds v t / 2 where unit j cannot change a correct output (the exact
    limit adds nothing there) and agrees at T > 0."""
    from bnnsweep.engines.ltu import printed_log_odds

    a, v, t = np.zeros(3), np.array([1.0]), np.ones((3, 1))
    c = np.array([[3.0], [-3.0], [0.5]])  # right and fixed, wrong and fixed, pivotal
    np.testing.assert_allclose(scaled_log_odds(a, c, v, t, 0.0), [0.0, 2.0, 0.5])
    np.testing.assert_allclose(printed_log_odds(a, c, v, t, 0.0), [0.5, 0.5, 0.0])
    np.testing.assert_allclose(
        printed_log_odds(a, c, v, t, 0.3), scaled_log_odds(a, c, v, t, 0.3), rtol=1e-12
    )


def test_default_update_is_the_printed_rule_of_table_3_1():
    """The method's default E-step is the thesis's printed 3.23-3.24 (the update Table 3.1
    ran): its fits are those of ``update: printed``, bit for bit, and differ from the exact
    limit's (the ablation) on crabs, over three seeds."""
    method = get_method("ltu")
    assert method.settings({}).schedule().rule == "printed"
    differ = 0
    for seed in range(3):
        _, default = _fit(dict(LTU_SMALL, penalty=10), seed)
        _, printed = _fit(dict(LTU_SMALL, penalty=10, update="printed"), seed)
        _, exact = _fit(dict(LTU_SMALL, penalty=10, update="exact"), seed)
        np.testing.assert_array_equal(default.class_probs, printed.class_probs)
        differ += not np.array_equal(default.class_probs, exact.class_probs)
    assert differ >= 2


def test_printed_rule_is_eq_3_23_by_hand():
    """sign(a_j + sum_o (v_oj / 2)(t_o - phi_oj)), phi_oj = [sign(c + v) - sign(c - v)] / 2
    (eqs. 3.23-3.24) on a 1-hidden, 2-output case worked by hand."""
    from bnnsweep.engines.ltu import printed_log_odds

    a = np.array([0.3, -0.3])
    v = np.array([1.0, -2.0])
    t = np.array([[1.0, 1.0], [-1.0, 1.0]])
    c = np.array([[0.5, 3.0], [-1.5, 1.0]])
    # pattern 0: phi = (1 - (-1))/2 = 1 and (sign(1) - sign(5))/2 = 0;
    #   0.3 + 0.5 (1 - 1) - 1.0 (1 - 0) = -0.7
    # pattern 1: phi = (sign(-0.5) - sign(-2.5))/2 = 0 and (sign(-1) - sign(3))/2 = -1;
    #   -0.3 + 0.5 (-1 - 0) - 1.0 (1 + 1) = -2.8
    np.testing.assert_allclose(printed_log_odds(a, c, v, t, 0.0), [-0.7, -2.8])


def test_annealing_schedule_is_the_thesis_one():
    temps = annealing_temperatures(1000.0, 0.8, 1e-3)
    assert len(temps) == 62 and temps[0] == 1000.0 and temps[-1] >= 1e-3 > temps[-1] * 0.8
    assert LearningSchedule().kkt_tolerance(1) == 1.0
    assert LearningSchedule().kkt_tolerance(4) == pytest.approx(1e-3)
    assert LearningSchedule().kkt_tolerance(5) == 1e-4


# ---------------------------------------------------------------- M-step


def test_svm_unit_separates_separable_data_with_the_right_sign():
    rng = np.random.default_rng(3)
    z = rng.uniform(-1, 1, size=(60, 3))
    for w_true in (np.array([1.0, -2.0, 0.5]), np.array([-1.0, 0.2, 1.0])):
        y = np.where(z @ w_true + 0.2 > 0, 1.0, -1.0)
        fit = fit_unit(z, y, penalty=1e4, tol=1e-6, max_iter=100_000)
        np.testing.assert_array_equal(np.where(z @ fit.weights + fit.bias >= 0, 1.0, -1.0), y)
        assert not fit.capped and fit.iterations > 0
    const = fit_unit(z, -np.ones(60), 1.0, 1e-3, 1000)
    assert const.bias == -1.0 and np.all(const.weights == 0)


def test_weight_step_and_normalisation_keep_the_mapping():
    net, x, t = _teacher_data(7, n_points=80)
    h, _ = forward(net, x)
    step = fit_weights(x, h, t, penalty=1e4, tol=1e-6, max_iter=100_000)
    assert training_errors(step.network, x, t) == 0
    rescaled = normalise_weights(step.network)
    incoming = np.sqrt(np.sum(rescaled.w_in**2, axis=1) + rescaled.b_in**2)
    used = rescaled.w_out[0] != 0  # a unit the output ignores is left alone
    np.testing.assert_allclose(incoming[used], np.abs(rescaled.w_out[0, used]))
    np.testing.assert_array_equal(forward(rescaled, x)[1], forward(step.network, x)[1])


def test_learning_keeps_the_network_of_least_training_error():
    net, x, t = _teacher_data(11, n_hidden=5, n_points=60)
    rng = np.random.default_rng(0)
    schedule = LearningSchedule(penalty=10.0, outer=4, temperatures=annealing_temperatures())
    learned = learn(x, t, random_network(3, 6, 1, rng), schedule, rng)
    ran = learned.train_errors[learned.train_errors >= 0]
    assert learned.train_errors[learned.best_iteration] == ran.min()
    assert training_errors(learned.network, x, t) == ran.min() < learned.train_errors[0]


# ---------------------------------------------------------------- datasets


def test_ripley_datasets_have_the_documented_sizes_and_are_deterministic():
    pima = datasets.load("pima_ripley").split("default")
    assert pima.x_train.shape == (200, 7) and pima.x_test.shape == (332, 7)
    assert pima.x_train.min() == -1.0 and pima.x_train.max() == 1.0
    assert set(np.unique(pima.y_train)) == {0.0, 1.0} and int(pima.y_train.sum()) == 68
    assert int(pima.y_test.sum()) == 109  # Ripley's test set: 109 diabetic of 332
    crabs = datasets.load("crabs_ripley")
    assert crabs.metadata["task"] == "binary" and "not available" in crabs.metadata["preprocessing"]
    again = datasets.load("crabs_ripley")
    for name in crabs.metadata["split_names"]:
        s = crabs.split(name)
        assert s.x_train.shape == (80, 5) and s.x_test.shape == (120, 5)
        assert s.y_train.sum() == 40 and s.y_test.sum() == 60
        np.testing.assert_array_equal(s.x_train, again.split(name).x_train)
    assert not np.array_equal(crabs.split("0").x_train, crabs.split("1").x_train)


def test_crabs_training_rows_take_twenty_of_each_species_and_sex():
    from bnnsweep.datasets.classes import load_vendored
    from bnnsweep.datasets.ripley import crabs_train_rows

    data = load_vendored("mass-crabs.npz", 200, 8)
    groups = 2 * data[:, 0] + data[:, 1]
    rows = crabs_train_rows(groups, 3)
    np.testing.assert_array_equal(np.bincount(groups[rows].astype(int)), [20, 20, 20, 20])
    np.testing.assert_array_equal(rows, crabs_train_rows(groups, 3))


def test_validation_rows_are_stratified_and_seeded():
    labels = np.array([1.0] * 30 + [-1.0] * 50)
    rows = validation_rows(labels, 12, 0)
    assert len(rows) == 12 and np.sum(labels[rows] > 0) == 4 and len(set(rows)) == 12
    np.testing.assert_array_equal(rows, validation_rows(labels, 12, 0))
    assert not np.array_equal(rows, validation_rows(labels, 12, 1))


# ---------------------------------------------------------------- method, config, figures

SMALL = LTU_SMALL


def test_method_end_to_end_on_crabs():
    settings = {**SMALL, "penalty": 10, "validation": 12}
    split, result = _fit(settings, 0)
    probs = result.class_probs
    assert probs.shape == (120, 2) and set(np.unique(probs)) == {0.0, 1.0}
    np.testing.assert_array_equal(probs.sum(axis=1), 1.0)
    cell = cell_dataset(result, split, _cell("ltu", settings, 0))
    errors = int(np.sum(np.argmax(probs, axis=1) != split.y_test[:, 0]))
    assert int(cell["diag_test_errors"]) == errors
    assert float(cell["test_error_rate"]) == pytest.approx(errors / 120)
    assert int(cell["diag_n_validation"]) == 12 and int(cell["diag_n_fit"]) == 68
    assert 0 <= int(cell["diag_validation_errors"]) <= 12
    assert errors < 60  # far better than chance on a problem a linear rule nearly solves
    assert result.n_grad_evals > 0  # SMO iterations
    _, again = _fit(settings, 0)
    np.testing.assert_array_equal(again.class_probs, probs)
    assert get_method("ltu").accepted_tasks(get_method("ltu").settings({})) == ("binary",)


def test_standardised_inputs_are_a_fit_on_standardised_data():
    """``inputs: standardised`` (the default) is the fit of the same network on inputs mapped
    to zero training mean and unit training s.d. (test inputs by the same map), bit for bit on
    the predictions, over three seeds; and it is not the fit on the dataset's own scaling
    (``as_given``, the ablation)."""
    assert get_method("ltu").settings({}).inputs == "standardised"
    from bnnsweep.datasets.generated import unstandardised_split

    method = get_method("ltu")
    split = datasets.load("crabs_ripley").split("0")
    mean, sd = split.x_train.mean(axis=0), split.x_train.std(axis=0)
    by_hand = unstandardised_split(
        "0", (split.x_train - mean) / sd, split.y_train, (split.x_test - mean) / sd, split.y_test
    )
    settings = dict(LTU_SMALL, penalty=10)
    differ = 0
    for seed in range(3):
        ours = method.fit(split, method.settings(dict(settings, inputs="standardised")),
                          np.random.default_rng(seed), log=lambda *a: None)  # fmt: skip
        ref = method.fit(by_hand, method.settings(settings), np.random.default_rng(seed),
                         log=lambda *a: None)  # fmt: skip
        np.testing.assert_array_equal(ours.class_probs, ref.class_probs)
        _, given = _fit(dict(settings, inputs="as_given"), seed)
        differ += not np.array_equal(given.class_probs, ours.class_probs)
    assert differ >= 1
    with pytest.raises(ValueError, match="inputs"):
        method.settings({"inputs": "minmax"})


def test_thesis_config_validates_and_spans_table_3_1():
    cells = expand(load("config/thesis_ltu.yaml"))
    plain = [c for c in cells if c.method == "ltu"]
    exact = [c for c in cells if c.method == "ltu_exact"]
    assert len(exact) == 210 and all(dict(c.settings)["update"] == "exact" for c in exact)
    grid = {(c.dataset, dict(c.axes)["hidden"], dict(c.axes)["penalty"]) for c in plain}
    assert len(plain) == 210 and len(grid) == 21
    assert {s for _, _, s in grid} == {1, 10, 100}
    assert {h for d, h, _ in grid if d == "crabs_ripley"} == {10, 20, 30, 40}


def test_figures_draw_from_a_merged_file(ltu_merged_path, tmp_path):
    merged_path = ltu_merged_path
    from bnnsweep.figures import load_merged

    ds = with_run_test_data(load_merged(merged_path))  # what draw() hands a figure
    runs = ltu_runs(ds)
    table = ltu_error_frame(ds).set_index("model")
    plain = runs[~runs["validated"]]["diag_test_errors"]
    average = table.loc[table.index.str.startswith("LTU average (ours: ltu,"), "crabs_ripley"].iloc[
        0
    ]
    assert average.startswith(f"{plain.mean():.4g} ±")
    assert table.loc["LTU best (thesis Table 3.1)", "crabs_ripley"] == "2"
    held = runs[runs["validated"]].sort_values(
        ["diag_validation_errors", "diag_train_errors", "run"]
    )
    chosen = table.loc[table.index.str.startswith("LTU validation-selected"), "crabs_ripley"]
    assert chosen.iloc[0].startswith(f"{int(held['diag_test_errors'].iloc[0])} (val")
    committee = table.loc[table.index.str.startswith("LTU committee of 5"), "crabs_ripley"]
    # committee by hand: majority of the five chosen networks' hard predictions
    members = held.head(5)["run"].to_numpy()
    votes = ds["class_probs"].values[members][:, :, 1].sum(axis=0) >= 3
    y = ds["y_test"].values[members[0]][:, 0]
    assert int(committee.iloc[0]) == int(np.sum(votes != y)) == committee_errors(ds, held.head(5))
    assert any("FISH" in model for model in table.index)
    (png,) = draw("ltu_error_vs_hidden", merged_path, tmp_path / "hidden.png")
    assert png.stat().st_size > 10_000
    (table_png,) = draw("ltu_error_table", merged_path, tmp_path / "table.png")
    assert table_png.stat().st_size > 10_000
    md, csv = draw("ltu_error_counts", merged_path, tmp_path / "counts.md")
    assert f"| {average} |" in md.read_text() and csv.suffix == ".csv"
    assert "STAND-IN split" in table.loc["data", "crabs_ripley"]
