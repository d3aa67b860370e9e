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
    """Read a YAML config file and validate it."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} does not exist") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {err}") from None
    return validate(raw)
