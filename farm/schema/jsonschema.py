"""The JSON Schema of a file's declared class (farm.schema), for editors: ``farm schema pipeline``.

Written from the same declarations :func:`farm.schema.read.structure` reads with (attrs fields, their type
hints and :class:`~farm.schema.Setting`), so the editor's completion and the reader never disagree: each
class an ``object`` with ``additionalProperties: false`` (an ``OPEN`` class's other keys: allowed, described)
and its required keys, each field its ``description`` (the ``doc``), ``default``, ``enum`` (``choices``,
``Literal``) and bounds (``number()``).
A class that reads itself (``__structure__``) gives its own (``__json_schema__(schema_of)``). A few
dozen types are all farm's files use, so this is written here rather than taken from a library.
"""

from __future__ import annotations

import enum
import types
import typing
from pathlib import Path
from typing import Any, Literal, Mapping, Union

import attrs

from . import key_of, read_fields, setting_of

DIALECT = "https://json-schema.org/draft/2020-12/schema"


class SchemaWriter:
    """Collects the schema of each class once, under ``$defs``, and refers to it by ``$ref``."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}

    def __call__(self, tp: Any) -> dict[str, Any]:
        return self.of(tp)

    def of(self, tp: Any) -> dict[str, Any]:
        if isinstance(tp, type) and hasattr(tp, "__json_schema__"):
            return self._ref(tp, lambda: tp.__json_schema__(self))
        if isinstance(tp, type) and attrs.has(tp):
            return self._ref(tp, lambda: self._class(tp))
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin in (Union, types.UnionType):
            members = [self.of(a) for a in args]
            return members[0] if len(members) == 1 else {"anyOf": members}
        if origin is Literal:
            return {"enum": list(args)}
        if origin in (list, tuple, set, frozenset) or tp in (list, tuple):
            item = args[0] if args else Any
            return {"type": "array", **({"items": self.of(item)} if item is not Any else {})}
        if origin in (dict, Mapping) or tp in (dict, Mapping):
            key, value = args or (Any, Any)
            names = {"propertyNames": {"enum": list(typing.get_args(key))}} if typing.get_origin(key) is Literal else {}
            return {"type": "object", **names, **({"additionalProperties": self.of(value)} if value is not Any else {})}
        simple = {str: "string", Path: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
        if tp in simple:
            return {"type": simple[tp]}
        return {}

    def _ref(self, cls: type, make: Any) -> dict[str, Any]:
        name = cls.__qualname__.replace(".", "_").replace("<locals>_", "")
        if name not in self.defs:
            self.defs[name] = {}  # a class that holds itself refers to this while it is made
            self.defs[name] = make()
        return {"$ref": f"#/$defs/{name}"}

    def _class(self, cls: type) -> dict[str, Any]:
        attrs.resolve_types(cls)
        properties, required = {}, []
        for field in read_fields(cls):
            properties[key_of(field)] = self.field(field)
            if field.default is attrs.NOTHING:
                required.append(key_of(field))
        others = getattr(cls, "OPEN", None)
        return {"type": "object", **_description(cls.__doc__), "properties": properties,
                **({"required": required} if required else {}),
                "additionalProperties": {"description": others} if others is not None else False}

    def field(self, field: attrs.Attribute) -> dict[str, Any]:
        """A field's schema: its file form, doc, default, allowed values and bounds."""
        info = setting_of(field)
        schema = dict(info.schema) if info.schema is not None else self.of(field.type)
        choices = next((c for c in (info.choices, getattr(info.check, "choices", None),
                                    getattr(info.named_check, "choices", None)) if c is not None), None)
        if choices is not None:
            schema = {**schema, "enum": list(choices)}
        bounds = getattr(info.check, "bounds", None)
        if bounds is not None:
            low, high, whole, low_open = bounds
            schema = {**schema, "exclusiveMinimum" if low_open else "minimum": low, "maximum": high}
        if info.doc:
            schema["description"] = info.doc
        default = _json_value(field.default)
        if default is not _NONE:
            schema["default"] = default
        return schema


_NONE = object()


def _json_value(value: Any) -> Any:
    """``value`` as JSON, or _NONE when it has no JSON form (no default, a factory, an object)."""
    if value is attrs.NOTHING:
        return _NONE
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        items = [_json_value(v) for v in value]
        return _NONE if any(i is _NONE for i in items) else items
    return _NONE


def _description(doc: str | None) -> dict[str, str]:
    """A class's description: the first paragraph of its docstring, on one line."""
    if not doc:
        return {}
    return {"description": " ".join(doc.strip().split("\n\n")[0].split())}


def json_schema(cls: type, title: str, description: str = "") -> dict[str, Any]:
    """The JSON Schema of the file ``cls`` declares (draft 2020-12)."""
    writer = SchemaWriter()
    root = writer.of(cls)
    name = root["$ref"].rsplit("/", 1)[1] if "$ref" in root else None
    body = writer.defs.pop(name) if name else root
    if description:
        body = {**body, "description": description}
    return {"$schema": DIALECT, "title": title, **body, **({"$defs": writer.defs} if writer.defs else {})}
