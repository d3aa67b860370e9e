"""Load and validate a sweep configuration before anything runs.

Validation is two-stage: the JSON schema (``schemas/config.schema.yaml``, defaults filled
in), then each method's typed settings and the dataset and split names against the
registries. Every error names the offending key path and, for a misspelling, suggests the
right name.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from .axes import AXES
from .method_base import SettingsError, suggest
from .sweep import Cell, expand_experiment


class ConfigError(ValueError):
    """A configuration that cannot run, with the key path that is wrong."""


MAX_CONFIG_BYTES = 1_000_000
MAX_CONFIG_NODES = 100_000  # values, lists and mappings, aliases expanded (a sweep has ~100s)


class _StrictLoader(yaml.SafeLoader):
    """The safe YAML loader, refusing a key given twice in one mapping (the safe loader keeps
    the last silently, so an experiment could disappear); keys merged in with ``<<`` may be
    overridden, as YAML intends."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`, overridable
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigError(
                    f"key {key!r} given twice in one mapping (line {key_node.start_mark.line + 1})"
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _expanded_size(value, limit: int = MAX_CONFIG_NODES) -> int:
    """Number of values in ``value`` counted as a tree (a list or mapping reached twice through
    YAML aliases counts twice), stopping past ``limit``."""
    sizes: dict[int, int] = {}

    def size(v) -> int:
        if not isinstance(v, dict | list):
            return 1
        if id(v) in sizes:
            return sizes[id(v)]
        sizes[id(v)] = limit + 1  # a cycle counts as too large
        children = v.items() if isinstance(v, dict) else ((None, c) for c in v)
        total = 1
        for key, child in children:
            total += size(child) + (key is not None)
            if total > limit:
                break
        sizes[id(v)] = total
        return total

    return size(value)


def yaml_problem(err: yaml.YAMLError) -> str:
    """A YAML error in one line: where (line and column, counted from 1) and what."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    context = getattr(err, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    text = f"{where}{problem}" + (f" ({context})" if context else "")
    return " ".join(text.split())


def read_yaml(path: str | Path):
    """A YAML config file: at most ``MAX_CONFIG_BYTES``, no key twice in a mapping, at most
    ``MAX_CONFIG_NODES`` values with aliases expanded; errors name the file."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} does not exist") from None
    except OSError as err:
        raise ConfigError(f"config file {str(path)!r} cannot be read: {err}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {str(path)!r} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"config file {str(path)!r} is not UTF-8 text: {err}") from None
    try:
        loader = _StrictLoader(text)  # its reader refuses control characters at once
    except yaml.YAMLError as err:
        raise ConfigError(
            f"config file {str(path)!r} is not valid YAML: {yaml_problem(err)}"
        ) from None
    try:
        node = loader.get_single_node()
        if node is not None and _node_size(node) > MAX_CONFIG_NODES:
            raise ConfigError(
                f"config file {str(path)!r}: more than {MAX_CONFIG_NODES} values once its YAML "
                "aliases are expanded"
            )
        return loader.construct_document(node) if node is not None else None
    except ConfigError as err:
        message = str(err)
        prefix = f"config file {str(path)!r}"
        raise ConfigError(
            message if message.startswith(prefix) else f"{prefix}: {message}"
        ) from None
    except yaml.YAMLError as err:
        raise ConfigError(
            f"config file {str(path)!r} is not valid YAML at {yaml_problem(err)}"
        ) from None
    finally:
        loader.dispose()


def _node_size(node, limit: int = MAX_CONFIG_NODES) -> int:
    """``_expanded_size`` of a composed YAML node graph (before any object is built)."""
    sizes: dict[int, int] = {}

    def size(n) -> int:
        if isinstance(n, yaml.ScalarNode):
            return 1
        if id(n) in sizes:
            return sizes[id(n)]
        sizes[id(n)] = limit + 1
        total = 1
        for item in n.value:
            total += sum(size(x) for x in item) if isinstance(item, tuple) else size(item)
            if total > limit:
                break
        sizes[id(n)] = total
        return total

    return size(node)


def check_config_files(paths) -> None:
    """Read each config file strictly (``read_yaml``): Snakemake reads ``--configfile``
    itself and would let a key given twice pass."""
    for path in paths:
        read_yaml(path)


def schema() -> dict:
    text = resources.files("bnnsweep").joinpath("schemas/config.schema.yaml").read_text()
    return yaml.safe_load(text)


def _extend_with_defaults(validator_class):
    """A validator that fills in ``default`` values of properties it visits."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


_Validator = _extend_with_defaults(jsonschema.Draft202012Validator)


def _path(error) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "<top level>"


def _describe(error, sch: dict) -> str:
    where = _path(error)
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        key = extra[0] if extra else "?"
        full = f"{where}.{key}" if where != "<top level>" else key
        return f"config key {full!r} is not allowed{suggest(key, allowed)}; allowed keys: {', '.join(allowed)}"
    if error.validator == "required":
        return f"config {where}: {error.message}"
    if error.validator == "oneOf":
        axis = AXES.get(str(error.absolute_path[-1])) if error.absolute_path else None
        what = (
            f"{axis.valid} or a non-empty list of distinct ones"
            if axis
            else "a value or a non-empty list of distinct values"
        )
        return f"config key {where!r}: {error.instance!r} is not a valid value ({what})"
    if error.validator == "pattern":
        letters = "letters" if "A-Z" in error.validator_value else "lower-case letters"
        return f"config key {where!r}: {error.instance!r} must match {error.validator_value} ({letters}, digits, _)"
    if error.validator == "enum":
        valid = error.validator_value
        return (
            f"config key {where!r}: {error.instance!r} is not one of {', '.join(map(str, valid))}"
            f"{suggest(error.instance, valid)}"
        )
    return f"config key {where!r}: {error.message}"


def validate(config: dict) -> dict:
    """Schema-validate ``config`` (a copy, defaults filled) and the method settings."""
    if not isinstance(config, dict):
        raise ConfigError(f"the configuration must be a mapping, got {type(config).__name__}")
    if _expanded_size(config) > MAX_CONFIG_NODES:
        raise ConfigError(
            f"the configuration holds more than {MAX_CONFIG_NODES} values once its YAML aliases "
            "are expanded"
        )
    config = copy.deepcopy(config)
    sch = schema()
    errors = sorted(
        _Validator(sch).iter_errors(config), key=lambda e: (len(e.absolute_path), _path(e))
    )
    if errors:
        raise ConfigError(_describe(errors[0], sch))
    if config.get("grouping", {}).get("mode") == "group":  # the deprecated spelling
        config["batching"]["mode"] = "auto"
    return config


def validate_datasets(specs) -> dict:
    """Schema-validate a ``datasets:`` section on its own (a copy, defaults filled): what
    ``bnnsweep prepare --spec`` reads, written by the workflow from a validated config but
    a file that could have been edited since."""
    sch = schema()
    sub = {
        "$defs": sch["$defs"],
        "type": "object",
        "properties": {"datasets": sch["properties"]["datasets"]},
    }
    section = {"datasets": copy.deepcopy(specs)}
    errors = sorted(
        _Validator(sub).iter_errors(section), key=lambda e: (len(e.absolute_path), _path(e))
    )
    if errors:
        raise ConfigError(_describe(errors[0], sub))
    return section["datasets"]


def expand(config: dict) -> list[Cell]:
    """All cells of a validated config; checks dataset, split and method names and settings."""
    from . import datasets
    from .datasets.user import register_user_datasets
    from .methods import get_method
    from .methods import names as method_names

    try:
        register_user_datasets(config.get("datasets", {}))
    except datasets.DatasetError as err:
        raise ConfigError(str(err)) from None
    known = datasets.names()
    cells: list[Cell] = []
    for name, experiment in config["experiments"].items():
        for ds in experiment["datasets"]:
            if ds not in known:
                raise ConfigError(
                    f"config key 'experiments.{name}.datasets': unknown dataset {ds!r}"
                    f"{suggest(ds, known)}; valid datasets: {', '.join(known)}"
                )
        for label, entry in experiment["methods"].items():
            where = f"experiments.{name}.methods.{label}"
            try:
                method = get_method(entry.get("method", label))
                settings = {k: v for k, v in entry.items() if k not in ("method", *method.axes)}
                built = method.settings(settings)
            except SettingsError as err:
                raise ConfigError(f"config key {where!r}: {err}") from None
            tasks = method.accepted_tasks(built)
            for ds in experiment["datasets"]:
                task = datasets.describe(ds)["task"]
                if task not in tasks:
                    raise ConfigError(
                        f"config key {where!r}: method {method.name!r} with these settings fits "
                        f"{' or '.join(tasks)} data, but dataset {ds!r} is a {task} task"
                        + (" (choose a matching 'likelihood')" if method.tasks else "")
                    )
                model = datasets.describe(ds).get("model")
                if model and method.models and model not in method.models:
                    raise ConfigError(
                        f"config key {where!r}: dataset {ds!r} holds {model} data, but method "
                        f"{method.name!r} fits {' or '.join(method.models)} data only"
                    )
            unused = [a for a in AXES if a in entry and a not in method.axes]
            if unused:
                raise ConfigError(
                    f"config key {where!r}: method {method.name!r} has no axis {unused[0]!r}"
                )

        def split_names(ds):
            return datasets.describe(ds)["split_names"]

        for ds in experiment["datasets"]:
            valid = split_names(ds)
            for split in experiment["splits"]:
                if split != "all" and split not in valid:
                    raise ConfigError(
                        f"config key 'experiments.{name}.splits': dataset {ds!r} has no split {split!r}"
                        f"{suggest(split, valid)}; valid: {', '.join(valid[:25])}"
                    )
        try:
            cells.extend(expand_experiment(name, experiment, split_names))
        except SettingsError as err:
            raise ConfigError(f"config key 'experiments.{name}': {err}") from None
    labels = {c.method for c in cells} | set(method_names())
    for name in config.get("batching", {}).get("methods", {}):
        if name not in labels:
            raise ConfigError(
                f"config key 'batching.methods.{name}': no method or label {name!r}"
                f"{suggest(name, sorted(labels))} in this config"
            )
    checked = set()
    for cell in cells:
        key = (cell.method_name, json.dumps(cell.settings, sort_keys=True, default=str))
        if key in checked:  # cells that differ only in dataset, split or seed
            continue
        checked.add(key)
        try:
            get_method(cell.method_name).settings(cell.settings)
        except SettingsError as err:
            raise ConfigError(
                f"config key 'experiments.{cell.experiment}.methods.{cell.method}': {err}"
            ) from None
    return cells


def load(path: str | Path) -> dict:
    """Read a YAML config file strictly (``read_yaml``) and validate it."""
    config = read_yaml(path)
    if not isinstance(config, dict):
        raise ConfigError(
            f"config file {str(path)!r} must be a mapping of keys (experiments: ...), "
            f"got {type(config).__name__}"
        )
    return validate(config)
