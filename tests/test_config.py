"""Config validation: errors name the key, before any job runs."""

import copy

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bnnsweep.sweeps.config import ConfigError, expand, load, validate

BASE = {
    "experiments": {
        "exp": {
            "datasets": ["toy_sine"],
            "methods": {"laplace": {"hidden": [1, 2], "restarts": 2}, "map": {"hidden": 3}},
        }
    }
}


def test_defaults_filled_and_cells_expanded():
    config = validate(BASE)
    exp = config["experiments"]["exp"]
    assert exp["seeds"] == [0] and exp["splits"] == ["default"]
    cells = expand(config)
    assert sorted((c.method, dict(c.axes)["hidden"]) for c in cells) == [
        ("laplace", 1),
        ("laplace", 2),
        ("map", 3),
    ]
    assert BASE["experiments"]["exp"].get("seeds") is None  # input not mutated


def test_shipped_configs_are_valid():
    for name in ("config/config.yaml", "config/smoke.yaml", "config/occam_robot_arm.yaml"):
        assert expand(load(name))


def bad(mutate):
    config = copy.deepcopy(BASE)
    mutate(config["experiments"]["exp"])
    return config


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            lambda e: e["methods"].update(laplase={"hidden": 1}),
            "unknown method 'laplase' (did you mean 'laplace'?)",
        ),
        (
            lambda e: e["methods"]["laplace"].update(hidden=[-1]),
            "experiments.exp.methods.laplace.hidden",
        ),
        (
            lambda e: e["methods"]["laplace"].update(hidden=[]),
            "experiments.exp.methods.laplace.hidden",
        ),
        (
            lambda e: e.update(seedz=[1]),
            "'experiments.exp.seedz' is not allowed (did you mean 'seeds'?)",
        ),
        (
            lambda e: e["methods"]["laplace"].update(restart=3),
            "unknown setting 'restart' (did you mean 'restarts'?)",
        ),
        (
            lambda e: e["methods"]["laplace"].update(restarts="many"),
            "'restarts' must be an integer",
        ),
        (
            lambda e: e["methods"]["laplace"].update(activation="sigmoid"),
            "setting 'activation' must be one of",
        ),
        (
            lambda e: e.update(datasets=["robot_armm"]),
            "unknown dataset 'robot_armm' (did you mean 'robot_arm'?)",
        ),
        (lambda e: e.update(datasets=["../etc"]), "experiments.exp.datasets.0"),
        (lambda e: e.update(splits=["7"]), "has no split '7'"),
        (lambda e: e.update(seeds=[-3]), "experiments.exp.seeds.0"),
    ],
)
def test_bad_config_names_the_key(mutate, message):
    with pytest.raises(ConfigError) as err:
        expand(validate(bad(mutate)))
    assert message in str(err.value)


def test_unknown_top_level_key_suggests():
    with pytest.raises(ConfigError, match="did you mean 'experiments'"):
        validate({"experiment": BASE["experiments"]})


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load(tmp_path / "nope.yaml")
    path = tmp_path / "bad.yaml"
    path.write_text("experiments: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(path)


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(yaml_values, st.fixed_dictionaries({"experiments": yaml_values})))
def test_fuzzed_documents_validate_or_fail_cleanly(document):
    try:
        expand(validate(document))
    except ConfigError:
        pass


def test_yaml_round_trip_of_default_config_is_stable():
    raw = yaml.safe_load(open("config/config.yaml"))
    assert validate(raw) == validate(validate(raw))


def test_schema_spells_the_sweep_axes_as_declared():
    """``method_entry`` of the schema has exactly the axes of ``bnnsweep.sweeps.axes`` (and
    ``method``), each as a scalar or a non-empty list of distinct values of its type, least
    value and pattern; every registered method sweeps only declared axes."""
    from bnnsweep.methods import REGISTRY
    from bnnsweep.sweeps.axes import AXES
    from bnnsweep.sweeps.config import schema

    entry = schema()["$defs"]["method_entry"]["properties"]
    assert set(entry) == {"method", *AXES}
    json_type = {int: "integer", str: "string"}
    for name, axis in AXES.items():
        scalar, listed = entry[name]["oneOf"]
        want = {"type": json_type[axis.type]}
        want.update({"minimum": axis.minimum} if axis.minimum is not None else {})
        want.update({"pattern": axis.pattern} if axis.pattern is not None else {})
        assert scalar == want, name
        assert listed == {"type": "array", "minItems": 1, "uniqueItems": True, "items": want}, name
    for method in REGISTRY.values():
        assert set(method.axes) <= set(AXES), method.name


@pytest.mark.parametrize(
    ("axis", "value", "words"),
    [
        ("hidden", -1, "a non-negative integer or a non-empty list"),
        ("components", [0], "a positive integer or a non-empty list"),
        (
            "schedule",
            "Paper",
            "a schedule name (lower-case letters, digits and _) or a non-empty",
        ),
    ],
)
def test_a_bad_axis_value_is_named_with_what_the_axis_takes(axis, value, words):
    bad = copy.deepcopy(BASE)
    bad["experiments"]["exp"]["methods"]["chaining"] = {axis: value}
    with pytest.raises(ConfigError) as err:
        validate(bad)
    assert f"experiments.exp.methods.chaining.{axis}" in str(err.value)
    assert words in str(err.value)


def _readme_table_row(key: str) -> list[str]:
    """The cells of the row of config/README.md's key tables that starts with ``key``."""
    text = open("config/README.md", encoding="utf-8").read()
    (line,) = [line for line in text.splitlines() if line.startswith(f"| {key} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_readme_lists_every_figure_kind_of_the_schema():
    """config/README.md's `figures` row names the schema's figure kinds, in its order."""
    import re

    from bnnsweep.sweeps.config import schema

    kinds = schema()["$defs"]["experiment"]["properties"]["figures"]["items"]["enum"]
    assert re.findall(r"`(\w+)`", _readme_table_row("`figures`")[2]) == kinds


def test_readme_shipped_config_cell_counts_are_the_configs():
    """The cell counts of config/README.md's "Shipped configs" table are ``expand``'s."""
    import re

    text = open("config/README.md", encoding="utf-8").read()
    table = text.split("## Shipped configs", 1)[1].split("\n\n", 2)[1]
    quoted = {}
    for line in table.splitlines()[2:]:
        names, _, cells = (c.strip() for c in line.strip("|").split("|"))
        configs = re.findall(r"`(\w+\.yaml)`", names)
        if not cells:
            continue
        pairs = re.findall(r"`(\w+\.yaml)`: (\d+)", cells)
        counts = pairs or list(zip(configs, re.findall(r"\d+", cells), strict=True))
        quoted.update({name: int(count) for name, count in counts})
    assert len(quoted) >= 8
    for name, count in quoted.items():
        assert len(expand(load(f"config/{name}"))) == count, name
