"""Load and validate a sweep configuration before anything runs.

Validation is two-stage: the JSON schema (``schemas/config.schema.yaml``, defaults filled
in), then each method's typed settings and the dataset and split names against the
registries. Every error names the offending key path and, for a misspelling, suggests the
right name.
"""

from __future__ import annotations

import copy
import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from ..method_base import SettingsError, suggest
from .axes import AXES
from .sweep import Cell, expand_experiment


class ConfigError(ValueError):
    """A configuration that cannot run, with the key path that is wrong."""


MAX_CONFIG_BYTES = 1_000_000
MAX_CONFIG_NODES = 100_000  # values, lists and mappings, aliases expanded (a sweep has ~100s)
MAX_CONFIG_DEPTH = 40  # nested lists and mappings (a config nests 6-8 deep)


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


def bounded_yaml(text: str, where: str):
    """YAML ``text`` read under the limits of a config file: at most ``MAX_CONFIG_DEPTH``
    nested lists and mappings (checked on its tokens, before anything recursive reads
    it), at most ``MAX_CONFIG_NODES`` values with aliases expanded (checked on the
    composed node graph, before any object is built), no key twice in a mapping. Errors
    are one line starting with ``where`` (a file, a command-line value)."""
    if len(text.encode()) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where} is larger than {MAX_CONFIG_BYTES} bytes")
    loader = None
    try:
        _check_depth(text, MAX_CONFIG_DEPTH)
        loader = _StrictLoader(text)  # its reader refuses control characters at once
        node = loader.get_single_node()
        if node is not None and _node_size(node) > MAX_CONFIG_NODES:
            raise ConfigError(
                f"more than {MAX_CONFIG_NODES} values once its YAML aliases are expanded"
            )
        return loader.construct_document(node) if node is not None else None
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{where} is not valid YAML: {yaml_problem(err)}") from None
    finally:
        if loader is not None:
            loader.dispose()


def read_yaml(path: str | Path):
    """A YAML config file: at most ``MAX_CONFIG_BYTES``, read by ``bounded_yaml``; errors
    name the file."""
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
    return bounded_yaml(text, f"config file {str(path)!r}")


_OPENING = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSING = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def _check_depth(text: str, limit: int) -> None:
    """Refuse YAML text whose lists and mappings nest deeper than ``limit``, from its tokens
    (the scanner is not recursive; composing a document is, and 100 KB of brackets would
    end in a RecursionError)."""
    depth = 0
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        if isinstance(token, _OPENING):
            depth += 1
            if depth > limit:
                line = token.start_mark.line + 1
                raise ConfigError(f"lists and mappings nest deeper than {limit} (line {line})")
        elif isinstance(token, _CLOSING):
            depth -= 1


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
    """Read each config file strictly (``read_yaml``: size, nesting, aliases, keys given
    twice) and refuse two files that name one experiment, results directory section or
    dataset: Snakemake reads ``--configfile`` itself, merges the files key by key (one
    experiment's methods from one file, its datasets from the other) and would let a key
    given twice pass."""
    seen: dict[tuple[str, str], str] = {}
    for path in paths:
        content = read_yaml(path)
        if not isinstance(content, dict):
            continue
        for section in ("experiments", "datasets"):
            names = content.get(section)
            for name in names if isinstance(names, dict) else ():
                if (section, str(name)) in seen:
                    raise ConfigError(
                        f"{section[:-1]} {name!r} is in both {seen[section, str(name)]!r} and "
                        f"{str(path)!r}: Snakemake would merge the two key by key; give it once"
                    )
                seen[section, str(name)] = str(path)


def schema() -> dict:
    text = resources.files("bnnsweep").joinpath("schemas/config.schema.yaml").read_text()
    return yaml.safe_load(text)


def _extend_with_defaults(validator_class):
    """A validator that fills in ``default`` values of properties it visits, and matches a
    ``pattern`` anchored with ``$`` at the very end of the string: Python's ``$`` also
    matches before a final newline, so ``"smoke\n"`` would pass ``^[a-z0-9_]+$`` and name
    a directory ``smoke\n``."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    def anchored_pattern(validator, pattern, instance, schema):
        if not isinstance(instance, str):
            return
        anchored = pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern
        if re.search(anchored, instance) is None:
            yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")

    return jsonschema.validators.extend(
        validator_class, {"properties": set_defaults, "pattern": anchored_pattern}
    )


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
    if error.validator == "maxLength":
        shown = repr(error.instance[:40]) + ("..." if len(error.instance) > 40 else "")
        return (
            f"config key {where!r}: {shown} is longer than {error.validator_value} characters "
            "(it names a directory, a file and a job)"
        )
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
    if (why := results_dir_problem(config["results_dir"])) is not None:
        raise ConfigError(f"config key 'results_dir': {config['results_dir']!r} {why}")
    config["results_dir"] = config["results_dir"].rstrip("/")
    return config


# Top-level directories of the system's own trees: no results directory lies in them.
SYSTEM_TREES = frozenset("bin boot dev etc lib lib32 lib64 proc run sbin sys usr".split())


def results_dir_problem(value: str) -> str | None:
    """Why ``value`` cannot be a results directory, or None. A relative path must name a
    directory inside the working directory: no ``..`` (outside it), not ``.`` (the
    working directory itself, whose config, inputs and other files the workflow would
    write among). An absolute path must name a directory below a top-level one (not
    ``/``, ``/tmp``) outside the system's trees (``/usr``, ``/etc``, ...). No empty,
    ``.`` or ``..`` component, none longer than 255 bytes (what file systems take)."""
    path = value.rstrip("/") or value
    absolute = path.startswith("/")
    names = path.split("/")[1:] if absolute else path.split("/")
    if any(len(p.encode()) > 255 for p in names):
        return "has a component longer than 255 bytes, more than file systems take"
    if absolute:
        if any(p in ("", ".", "..") for p in names) or len(names) < 2:
            return "must be an absolute path below a top-level directory (not '/', '/tmp')"
        if names[0] in SYSTEM_TREES:
            return f"lies in the system's /{names[0]}; give a directory of your own"
        return None
    if any(p in ("", ".", "..") for p in names):
        return (
            "must name a directory inside the working directory, without '.', '..' or '//' "
            "(e.g. results)"
        )
    return None


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
    from .. import datasets
    from ..datasets.user import register_user_datasets
    from ..methods import get_method
    from ..methods import names as method_names

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
    named = [("batching.methods", name) for name in config.get("batching", {}).get("methods", {})]
    named += [("devices", name) for name in config.get("devices") or {}]
    for key, name in named:
        if name not in labels:
            raise ConfigError(
                f"config key '{key}.{name}': no method or label {name!r}"
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
