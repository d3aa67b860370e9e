"""MkDocs hook: the configuration reference (docs/reference/config.md) is generated from the
config's JSON schema, src/bnnsweep/schemas/config.schema.yaml, the one the workflow validates
against: the line ``<!-- schema: PATH -->`` becomes a table of the object at ``PATH`` (``/``
for the top level, ``/properties/batching``, ``/$defs/experiment``): each key with its type,
default and description."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

SCHEMA = Path(__file__).resolve().parents[1] / "src" / "bnnsweep" / "schemas" / "config.schema.yaml"
MARKER = re.compile(r"^<!-- schema: (\S+) -->$", re.MULTILINE)


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = _at(schema, node["$ref"].removeprefix("#"))
    return node


def _at(schema: dict, path: str) -> dict:
    node = schema
    for part in [p for p in path.split("/") if p]:
        node = node[part]
    return node


def _type(schema: dict, node: dict) -> str:
    node = _resolve(schema, node)
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    kind = node.get("type", "")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and "items" in node:
        return f"list of {_type(schema, node['items'])}"
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(_type(schema, n) for n in node.get("oneOf", node.get("anyOf")))
    return " or ".join(k for k in kinds if k) or "any"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def table(schema: dict, path: str) -> str:
    """The Markdown table of the object at ``path`` of ``schema``."""
    node = _resolve(schema, _at(schema, path))
    required = set(node.get("required", []))
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, prop in node.get("properties", {}).items():
        prop_resolved = _resolve(schema, prop)
        default = "required" if key in required else (
            f"`{json.dumps(prop_resolved['default'])}`" if "default" in prop_resolved else ""
        )  # fmt: skip
        meaning = prop.get("description", prop_resolved.get("description", ""))
        lines.append(f"| `{key}` | {_type(schema, prop)} | {default} | {_cell(meaning)} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER.search(markdown) is None:
        return markdown
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    return MARKER.sub(lambda m: table(schema, m.group(1)), markdown)
