"""The files ``farm schema NAME`` describes: each kind of file farm reads, by the name a user knows it by,
and the class that declares it (farm.schema)."""

from __future__ import annotations

import json
from typing import Any, Callable

from ..errors import JobError


def _pipeline() -> tuple[type, str]:
    from ..run.model import pipeline_file

    return pipeline_file(), "a farm pipeline file (pipelines/*.yaml): recipes, targets, setups, benchmarks"


#: name -> () -> (the class, what the file is)
FILES: dict[str, Callable[[], tuple[type, str]]] = {"pipeline": _pipeline}


def schema_of(name: str) -> dict[str, Any]:
    """The JSON Schema of the file ``name`` (one of :data:`FILES`)."""
    from .jsonschema import json_schema

    if name not in FILES:
        raise JobError(f"schema {name!r}: unknown file (known: {', '.join(FILES)})")
    cls, what = FILES[name]()
    return json_schema(cls, f"farm {name}", what)


def schema_text(name: str) -> str:
    """:func:`schema_of` as JSON text, as ``farm schema`` prints it."""
    return json.dumps(schema_of(name), indent=2) + "\n"
