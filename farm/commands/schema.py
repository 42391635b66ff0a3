"""``farm schema pipeline|recipe|env``: the JSON Schema of a file farm reads, for editors (README)."""

from __future__ import annotations

import argparse

from ..errors import EXIT_OK


def schema(args: argparse.Namespace) -> int:
    from ..schema.files import schema_text

    print(schema_text(args.file), end="")
    return EXIT_OK


def register(sub) -> None:
    from ..schema.files import FILES

    p = sub.add_parser("schema", help="print the JSON Schema of a file farm reads: pipeline, recipe, env (for editors)",
                       description="Print the JSON Schema of a kind of file farm reads, made from the same "
                       "declarations farm reads it with (every field, its description, allowed values and "
                       "default; unknown keys refused). An editor with yaml-language-server validates and "
                       "completes the file with it: save it (farm schema pipeline > pipeline.schema.json) and "
                       "start the file with '# yaml-language-server: $schema=pipeline.schema.json'. An env file's schema "
                       "covers what farm reads (labgrid's own drivers and resources stay free); tell the editor "
                       "labgrid's tag: yaml.customTags ['!template scalar'].")
    p.add_argument("file", choices=tuple(FILES), help="the kind of file: " + ", ".join(FILES))
    p.set_defaults(func=schema)
