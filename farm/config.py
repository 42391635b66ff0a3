"""YAML loading (safe loader only) that remembers where every value came from.

Every mapping loaded here is a :class:`Node`, a dict that knows its file and the line of each key, so
validation can say ``images/x.yaml:7: kernel.package: ...`` instead of a traceback: a file's fields are
declared and read with farm.schema, which names the lines from the Node.

Files are inputs, not trusted: a file is read only when it is a regular file of at most
:data:`MAX_FILE_BYTES`, must be UTF-8, and its YAML may nest at most :data:`MAX_DEPTH` levels and
expand (aliases followed) to at most :data:`MAX_NODES` values, so an alias bomb is refused at once.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from . import secrets
from .errors import JobError

#: farm's own files (recipes, pipelines, env files, run.json) are a few kB; this is far beyond any of them
MAX_FILE_BYTES = 1 << 20
#: nesting of YAML/JSON collections; an env file uses about 6 levels
MAX_DEPTH = 64
#: values in a YAML document with its aliases expanded (a file of MAX_FILE_BYTES holds at most ~500k)
MAX_NODES = 1_000_000


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
    """SafeLoader building :class:`Node` mappings; it refuses every python/* tag like SafeLoader does,
    and collections nested deeper than :data:`MAX_DEPTH`."""

    _depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise JobError(f"{self.name}:{mark.line + 1}: YAML nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_expansion(root: yaml.Node, name: str) -> None:
    """Refuse a document whose aliases expand it beyond MAX_NODES values or MAX_DEPTH levels, or
    refer to themselves; computed on the composed graph, each node once (no expansion happens)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = _children(node)
        if done:
            on_path.discard(id(node))
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
            depth[id(node)] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[id(node)] > MAX_NODES:
                raise JobError(f"{name}:{node.start_mark.line + 1}: YAML aliases expand to more than "
                               f"{MAX_NODES} values (an alias bomb?)")
            if depth[id(node)] > MAX_DEPTH:
                raise JobError(f"{name}:{node.start_mark.line + 1}: YAML nested deeper than {MAX_DEPTH} "
                               "levels (through aliases)")
            continue
        if id(node) in size:
            continue
        on_path.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                raise JobError(f"{name}:{child.start_mark.line + 1}: a YAML alias refers to the collection "
                               "that holds it")
            if id(child) not in size:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


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


class _LabgridFileLoader(_Loader):
    """For a file labgrid reads too (an env file): labgrid's own loader knows ``!template``, not
    farm's ``!secret``, so a file farm accepted would fail in labgrid (``labgrid-client``, pytest
    ``--lg-env``). Refused here, naming the line and what labgrid substitutes instead."""


def _secret_in_labgrid_file(loader: _Loader, node: yaml.Node) -> None:
    raise JobError(f"{loader.name}:{node.start_mark.line + 1}: !secret is farm's tag, which labgrid cannot read "
                   "(it reads env files itself): write !template \"$LG_SECRET_NAME\" and set LG_SECRET_NAME in the "
                   "environment (labgrid substitutes LG_* variables; farm masks LG_SECRET_* values as secrets)")


_LabgridFileLoader.add_constructor("!secret", _secret_in_labgrid_file)


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


def read_text(path: str | Path, what: str = "file", limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes, or a :class:`JobError` naming it."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise JobError(f"{path}:{line}: {what} is not UTF-8 text (byte {data[exc.start]:#04x})") from None


def read_bytes(path: str | Path, what: str = "file", limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or a :class:`JobError` naming it.

    Not a device, a FIFO or a directory (``/dev/zero`` would be read forever, a FIFO blocks), and never
    more than ``limit`` bytes read."""
    path = Path(path)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise JobError(f"{path}: {what} is not a regular file")
        if info.st_size > limit:
            raise JobError(f"{path}: {what} too large ({info.st_size} bytes; at most {limit})")
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # replaced between stat and open
                raise JobError(f"{path}: {what} is not a regular file")
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise JobError(f"{path}: {what} not found") from None
    except OSError as exc:
        raise JobError(f"{path}: cannot read {what}: {exc.strerror}") from None
    if len(data) > limit:
        raise JobError(f"{path}: {what} too large (more than {limit} bytes)")
    return data


def json_depth(text: str) -> int:
    """How deep the collections of the JSON ``text`` nest (``json.loads`` recurses once per level:
    measured before it runs, so a deep document is refused instead of a RecursionError)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def json_node(data: Any, file: str | Path) -> Any:
    """JSON ``data`` loaded from ``file`` with its mappings as :class:`Node` (no lines: JSON keeps none), so
    farm.schema names a problem ``file: field.path: problem``."""
    if isinstance(data, dict):
        node = Node((k, json_node(v, file)) for k, v in data.items())
        node.file, node.line, node.key_lines = str(file), 0, {}
        return node
    if isinstance(data, list):
        return [json_node(v, file) for v in data]
    return data


def load_json(path: str | Path, what: str = "file", limit: int = MAX_FILE_BYTES) -> dict:
    """A JSON object from a file (size-limited, UTF-8, nesting bounded), or a :class:`JobError` naming it."""
    text = read_text(path, what, limit)
    if json_depth(text) > MAX_DEPTH:
        raise JobError(f"{path}: {what} nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise JobError(f"{path}: {what} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise JobError(f"{path}: {what} must be a JSON object, not {type(data).__name__}")
    return data


def load_yaml(path: str | Path, what: str = "file", *, labgrid_reads_it: bool = False) -> Node:
    """Load a YAML mapping safely; every problem becomes a one-line :class:`JobError` naming the file.
    ``labgrid_reads_it``: the file is labgrid's too (an env file): only tags labgrid knows."""
    path = Path(path)
    text = read_text(path, what)
    loader = (_LabgridFileLoader if labgrid_reads_it else _Loader)(text)
    loader.name = str(path)
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_expansion(node, str(path))
        data = loader.construct_document(node) if node is not None else None
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
