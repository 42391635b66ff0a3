"""YAML loading (safe loader only) that remembers where every value came from.

Every mapping loaded here is a :class:`Node`, a dict that knows its file and the line of each key, so
validation can say ``images/x.yaml:7: kernel.package: ...`` instead of a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

import yaml

from . import secrets
from .errors import JobError

T = TypeVar("T")


class Node(dict):
    """A YAML mapping with its source: ``file``, ``path`` (dotted field name) and the line of each key."""

    file: str = "?"
    path: str = ""
    line: int = 0
    key_lines: dict[str, int]

    def where(self, key: str | None = None) -> str:
        line = self.key_lines.get(key, self.line) if key is not None else self.line
        field = self.field(key) if key is not None else (self.path or "(top level)")
        return f"{self.file}:{line}: {field}"

    def field(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str | None, message: str) -> JobError:
        return JobError(f"{self.where(key)}: {message}")


class _Loader(yaml.SafeLoader):
    """SafeLoader building :class:`Node` mappings; it refuses every python/* tag like SafeLoader does."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Node:
    loader.flatten_mapping(node)
    result = Node()
    result.file = loader.name
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise JobError(f"{loader.name}:{key_node.start_mark.line + 1}: duplicate key '{key}'")
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# labgrid env files substitute LG_* variables in values tagged !template; here they stay plain text
_Loader.add_constructor("!template", lambda loader, node: loader.construct_scalar(node))
# a value never to be shown in logs or reports (see farm/secrets.py)
_Loader.add_constructor("!secret", lambda loader, node: secrets.register(loader.construct_scalar(node)))


def _set_paths(value: Any, path: str) -> None:
    if isinstance(value, Node):
        value.path = path
        for k, v in value.items():
            if isinstance(v, Node):  # a block mapping starts at its first key; name the key holding it
                v.line = value.key_lines.get(k, v.line)
            _set_paths(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _set_paths(v, f"{path}[{i}]")


def load_yaml(path: str | Path, what: str = "file") -> Node:
    """Load a YAML mapping safely; every problem becomes a one-line :class:`JobError` naming the file."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise JobError(f"{path}: {what} not found") from None
    except OSError as exc:
        raise JobError(f"{path}: cannot read {what}: {exc.strerror}") from None
    loader = _Loader(text)
    loader.name = str(path)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise JobError(f"{path}{line}: invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise JobError(f"{path}: invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    if not isinstance(data, Node):
        raise JobError(f"{path}:1: {'an' if what[0] in 'aeiou' else 'a'} {what} must be a YAML mapping (key: value), not {type(data).__name__}")
    _set_paths(data, "")
    return data


# --- field accessors: each returns the typed value or raises a JobError naming file:line: field ---

def require(node: Node, key: str, kind: type[T] | tuple[type, ...], what: str = "") -> T:
    if node.get(key) is None:
        raise node.error(None, f"missing required field '{node.field(key)}'" + (f" ({what})" if what else ""))
    return field(node, key, kind, None)  # type: ignore[return-value]


def field(node: Node, key: str, kind: type[T] | tuple[type, ...], default: Any) -> T:
    if key not in node or node[key] is None:
        return default
    value = node[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if bool not in kinds and isinstance(value, bool) and (int in kinds or float in kinds):
        raise node.error(key, f"expected {_kind_name(kinds)}, got {value!r}")
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # type: ignore[return-value]
    if not isinstance(value, kinds):
        raise node.error(key, f"expected {_kind_name(kinds)}, got {type(value).__name__} {value!r}")
    return value  # type: ignore[return-value]


def string_list(node: Node, key: str, default: Iterable[str] = (), check: Callable[[str], str | None] | None = None) -> list[str]:
    """A list of strings; ``check`` returns an error message for a bad item, or None."""
    value = field(node, key, list, None)
    if value is None:
        return list(default)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise node.error(key, f"item {i} must be a string, got {type(item).__name__} {item!r}")
        problem = check(item) if check else None
        if problem:
            raise node.error(key, f"item {i} {item!r}: {problem}")
    return value


def reject_unknown(node: Node, allowed: Iterable[str]) -> None:
    allowed = set(allowed)
    for key in node:
        if key not in allowed:
            raise node.error(key, f"unknown field (allowed: {', '.join(sorted(allowed))})")


def _kind_name(kinds: tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true/false", list: "a list",
             dict: "a mapping", Node: "a mapping"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))
