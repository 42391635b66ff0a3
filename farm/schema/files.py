"""The files ``farm schema NAME`` describes: each kind of file farm reads, by the name a user knows it by,
and the class that declares it (farm.schema)."""

from __future__ import annotations

import json
from typing import Any, Callable

from ..errors import JobError


def _pipeline() -> tuple[type, str]:
    from ..run.model import pipeline_file

    return pipeline_file(), "a farm pipeline file (pipelines/*.yaml): recipes, targets, setups, benchmarks"


class _AnyRecipe:
    """A recipe of any kind: Linux (kernel, initrd), farm's bare-metal programs, or a Linux packed as a FIT."""

    @classmethod
    def __json_schema__(cls, schema_of: Any) -> dict[str, Any]:
        from ..images.baremetal import BareMetalFile
        from ..images.fit import LinuxSystemFile
        from ..images.recipe import RecipeFile

        return {"anyOf": [schema_of(RecipeFile), schema_of(BareMetalFile), schema_of(LinuxSystemFile)]}


def _recipe() -> tuple[type, str]:
    return _AnyRecipe, ("a farm image recipe (images/*.yaml): a Linux image (kernel, initrd), farm's bare-metal "
                        "programs (baremetal:) or a Linux packed as a FIT image (linux_system:)")


def _env() -> tuple[type, str]:
    from ..boot.envfile import EnvDocument

    return EnvDocument, ("a labgrid env file (env/*.yaml) as farm reads it: its keys, the targets' names and options "
                         "farm uses, the attributes of farm's netboot strategies; labgrid's own drivers and "
                         "resources are labgrid's (free mappings here, checked by labgrid)")


#: name -> () -> (the class, what the file is)
FILES: dict[str, Callable[[], tuple[type, str]]] = {"pipeline": _pipeline, "recipe": _recipe, "env": _env}


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
