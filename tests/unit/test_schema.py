"""farm.schema: one declaration of a file's fields gives its reader (every value checked once, each problem
``file:line: field: problem``) and its JSON Schema."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import attrs
import pytest

from farm.config import load_yaml
from farm.errors import JobError
from farm.schema import Invalid, each, number, setting
from farm.schema.jsonschema import json_schema
from farm.schema.read import structure


@attrs.frozen
class Policy:
    """A policy."""

    kind: Literal["rr", "fifo"] = setting(doc="the scheduler", hint="chrt -r / -f")
    priority: int = setting(doc="1-99", check=number(1, 99, whole=True))


@attrs.frozen
class Target:
    SHAPE = "a mapping like {env: x.yaml}"

    env: Path = setting(relative=True, doc="its env file")


@attrs.frozen
class Doc:
    """A document."""

    name: str = setting(doc="its name")
    targets: list[Target] = setting(doc="where it runs")
    policy: Policy | None = setting(None)
    settle: Policy | bool = setting(True, doc="a policy, or true/false")
    memory_mb: int = setting(512, key="memory", parse=lambda v: int(v[:-1]) if isinstance(v, str) else v,
                             schema={"type": ["integer", "string"]})
    tags: tuple[str, ...] = setting((), check=each(lambda t: None if t.islower() else "must be lower case"))
    per_arch: dict[Literal["arm64", "amd64"], str] = setting(factory=dict)

    def validate(self, given):
        if self.name == self.tags[:1] or (self.tags and self.name in self.tags):
            raise Invalid("a tag may not be the name", key="tags")


def _read(tmp_path: Path, text: str):
    path = tmp_path / "d.yaml"
    path.write_text(text)
    return structure(load_yaml(path), Doc)


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(JobError) as info:
        _read(tmp_path, text)
    return str(info.value).replace(f"{tmp_path}/", "")


def test_a_file_is_read_into_its_class(tmp_path):
    doc = _read(tmp_path, "name: n\ntargets: [{env: a.yaml}]\nmemory: 2G\nsettle: {kind: rr, priority: 5}\n"
                          "per_arch: {arm64: x}\npolicy:\n")
    assert doc == Doc("n", [Target(tmp_path / "a.yaml")], None, Policy("rr", 5), 2, (), {"arm64": "x"})


@pytest.mark.parametrize("text, message", [
    ("nam: n\ntargets: []\n", "d.yaml:1: nam: unknown field (allowed: memory, name, per_arch, policy, settle, tags, "
                              "targets); did you mean 'name'?"),
    ("name: 3\ntargets: []\n", "d.yaml:1: name: expected a string, got int 3"),
    ("name: n\ntargets: [{env: a}, b]\n", "d.yaml:2: targets: item 1 must be a mapping like {env: x.yaml}"),
    ("name: n\ntargets:\n  - {}\n", "d.yaml:3: targets[0]: missing required field 'targets[0].env'"),
    ("name: n\n", "d.yaml:1: (top level): missing required field 'targets'"),
    ("name: n\ntargets: []\npolicy:\n  kind: rq\n  priority: 5\n",
     "d.yaml:4: policy.kind: 'rq': expected one of rr, fifo (chrt -r / -f)"),
    ("name: n\ntargets: []\npolicy:\n  kind: rr\n  priority: 500\n",
     "d.yaml:5: policy.priority: 500 is out of range: expected a whole number >= 1 and <= 99"),
    ("name: n\ntargets: []\nsettle: 3\n", "d.yaml:3: settle: expected a mapping or true/false, got int 3"),
    ("name: n\ntargets: []\ntags: [a, B]\n", "d.yaml:3: tags: item 1 'B': must be lower case"),
    ("name: n\ntargets: []\ntags: [a, 3]\n", "d.yaml:3: tags: item 1 must be a string, got int 3"),
    ("name: n\ntargets: []\ntags: [n]\n", "d.yaml:3: tags: a tag may not be the name"),
    ("name: n\ntargets: []\nper_arch: {arm65: x}\n",
     "d.yaml:3: per_arch.arm65: unknown field (allowed: amd64, arm64); did you mean 'arm64'?"),
])
def test_every_problem_names_file_line_and_field(tmp_path, text, message):
    assert _error(tmp_path, text) == message


def test_an_unknown_key_is_named_before_the_required_one_it_misspells(tmp_path):
    assert _error(tmp_path, "name: n\ntargets: []\npolicy: {kind: rr, priorty: 3}\n").startswith(
        "d.yaml:3: policy.priorty: unknown field (allowed: kind, priority); did you mean 'priority'?")


def test_the_json_schema_is_the_same_declaration():
    schema = json_schema(Doc, "doc")
    assert schema["title"] == "doc" and schema["description"] == "A document."
    assert schema["required"] == ["name", "targets"] and schema["additionalProperties"] is False
    properties = schema["properties"]
    assert properties["memory"] == {"type": ["integer", "string"], "default": 512}
    assert properties["targets"] == {"type": "array", "items": {"$ref": "#/$defs/Target"}, "description": "where it runs"}
    assert properties["settle"]["anyOf"] == [{"$ref": "#/$defs/Policy"}, {"type": "boolean"}]
    assert properties["per_arch"]["propertyNames"] == {"enum": ["arm64", "amd64"]}
    policy = schema["$defs"]["Policy"]
    assert policy["properties"]["kind"] == {"enum": ["rr", "fifo"], "description": "the scheduler"}
    assert policy["properties"]["priority"] == {"type": "integer", "minimum": 1, "maximum": 99, "description": "1-99"}
    assert policy["additionalProperties"] is False and policy["required"] == ["kind", "priority"]
