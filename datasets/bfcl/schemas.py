"""BFCL parameter schemas converted to standard JSON Schema (``bfcl_to_json_schema``).

See the package docstring (``junction_datasets.bfcl``) for the data format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from junction.errors import DatasetError

__all__ = ["bfcl_to_json_schema"]

# BFCL's parameter type names (Python, Java and JavaScript flavoured) -> JSON Schema type.
# ``None`` means "any value": the ``type`` key is dropped.
_TYPE_MAP: dict[str, str | None] = {
    "string": "string", "String": "string", "char": "string",
    "integer": "integer", "long": "integer",
    "float": "number", "double": "number", "number": "number",
    "boolean": "boolean", "Boolean": "boolean",
    "array": "array", "Array": "array", "ArrayList": "array", "tuple": "array",
    "dict": "object", "HashMap": "object", "object": "object",
    "null": "null",
    "any": None, "": None,
}
_SUBSCHEMA_KEYS = ("items", "additionalProperties")
_DROPPED_KEYS = ("optional",)  # BFCL-only flag; absence from ``required`` says the same


def bfcl_to_json_schema(schema: Mapping[str, Any], path: str = "parameters") -> dict[str, Any]:
    """Convert one BFCL parameter schema to standard JSON Schema (draft 2020-12 keywords).

    Types map through ``_TYPE_MAP`` (``dict`` -> ``object``, ``float`` -> ``number``,
    ``tuple`` -> ``array``, ``any`` -> no ``type``, Java names such as ``String`` or
    ``HashMap`` likewise); ``properties``, ``items`` and ``additionalProperties`` are
    converted recursively; BFCL's ``optional`` flag is dropped; other keys (description,
    default, enum, required, bounds) are kept. Raises ``DatasetError`` naming ``path`` for
    an unknown type name or a schema that is not an object.
    """
    if not isinstance(schema, Mapping):
        raise DatasetError(f"{path}: schema must be an object, got {type(schema).__name__}")
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "type":
            if not isinstance(value, str) or value not in _TYPE_MAP:
                raise DatasetError(f"{path}.type: unsupported BFCL type {value!r}")
            if _TYPE_MAP[value] is not None:
                out["type"] = _TYPE_MAP[value]
        elif key == "properties":
            if not isinstance(value, Mapping):
                raise DatasetError(f"{path}.properties: must be an object")
            out["properties"] = {
                name: bfcl_to_json_schema(sub, f"{path}.properties.{name}")
                for name, sub in value.items()
            }
        elif key in _SUBSCHEMA_KEYS and isinstance(value, Mapping):
            out[key] = bfcl_to_json_schema(value, f"{path}.{key}")
        else:
            out[key] = value
    return out

