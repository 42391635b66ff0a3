"""``farm completion bash``: a shell completion script made from farm's own argument parser."""

from __future__ import annotations

import argparse

from ..errors import EXIT_OK


def completion(args: argparse.Namespace) -> int:
    from ..cli import build_parser
    from ..completion import bash_script

    print(bash_script(build_parser()), end="")
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash)",
                       description="Print a bash completion script for farm, made from its argument parser: "
                       "sub-commands, options, their choices, and pipeline/recipe/env files. "
                       'Use: eval "$(farm completion bash)" in ~/.bashrc, or save the output as '
                       "~/.local/share/bash-completion/completions/farm.")
    p.add_argument("shell", choices=("bash",), help="the shell (bash)")
    p.set_defaults(func=completion)
