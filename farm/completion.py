"""Shell completion for ``farm``, generated from its argparse parser (so it never falls behind it).

:func:`command_table` walks the parser into plain data: per command path (``farm``, ``farm db``, …)
its sub-commands, its options, what each option's value is and what its positional arguments
are. :func:`bash_script` writes that table into a bash completion function: ``eval "$(farm
completion bash)"``, or save it under ``~/.local/share/bash-completion/completions/farm``.

What a value completes to: an option's or argument's ``choices`` when it has them; pipeline,
recipe and env files (``*.yaml`` and directories) for ``PIPELINE``, ``RECIPE`` and ``--env``; any
file or directory for directories, files and plots; nothing for names, numbers and tags.
"""

from __future__ import annotations

import argparse
import shlex

import attrs

from .commands import CommandParser

#: dests whose value is a YAML file farm reads
_YAML = {"pipeline", "recipe", "env"}
#: dests whose value is a path
_PATH = {"out", "image", "log_dir", "resume", "baseline", "candidate", "dir", "plot", "file", "dirs", "run_dir",
         "run_dirs"}


@attrs.frozen
class Command:
    """One command path of the parser, as completion sees it."""

    path: str                              # "farm", "farm db", …
    subcommands: tuple[str, ...]
    options: tuple[str, ...]               # every option string
    values: tuple[tuple[str, str], ...]    # (option, kind) for options that take a value
    positionals: tuple[str, ...]           # kind of each positional argument, in order (the last repeats
                                           # when it takes several)


def _kind(action: argparse.Action) -> str:
    """``w:a b c`` (these words), ``yaml``, ``path`` or ``none``."""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        return "w:" + " ".join(str(c) for c in action.choices)
    metavar = str(action.metavar or "")
    if action.dest in _YAML:
        return "yaml"
    if action.dest in _PATH or any(word in metavar for word in ("DIR", "FILE", "PNG")):
        return "path"
    return "none"


def command_table(parser: argparse.ArgumentParser, path: str = "farm") -> list[Command]:
    """Every command path of ``parser``, the top one first (a command's deferred arguments too: farm import's
    kinds and options, from the plugins)."""
    if isinstance(parser, CommandParser):
        parser.complete()
    subcommands: dict[str, argparse.ArgumentParser] = {}
    options, values, positionals = [], [], []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subcommands.update(action.choices)
        elif action.option_strings:
            options += action.option_strings
            if action.nargs != 0:
                values += [(o, _kind(action)) for o in action.option_strings]
        else:
            positionals.append(_kind(action))
    table = [Command(path, tuple(subcommands), tuple(options), tuple(values), tuple(positionals))]
    for name, sub in subcommands.items():
        table += command_table(sub, f"{path} {name}")
    return table


def _assoc(name: str, items: dict[str, str]) -> str:
    body = " ".join(f"[{shlex.quote(k)}]={shlex.quote(v)}" for k, v in items.items())
    return f"    local -A {name}=({body})"


BASH_FUNCTION = r'''
    local cur="${COMP_WORDS[COMP_CWORD]}" key=farm kind="" npos=0 i w
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        if [[ " ${subs[$key]} " == *" $w "* ]]; then
            key="$key $w"; npos=0
        elif [[ -n "${values[$key $w]+x}" ]]; then
            ((i++))
        elif [[ "$w" != -* ]]; then
            ((npos++))
        fi
    done
    local prev="${COMP_WORDS[COMP_CWORD - 1]}"
    if ((COMP_CWORD > 1)) && [[ -n "${values[$key $prev]+x}" ]]; then
        kind="${values[$key $prev]}"
    elif [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "${opts[$key]}" -- "$cur"))
        return 0
    elif [[ -n "${subs[$key]}" ]]; then
        COMPREPLY=($(compgen -W "${subs[$key]}" -- "$cur"))
        return 0
    else
        local -a kinds=(${pos[$key]//,/ })
        ((${#kinds[@]})) || return 0
        ((npos < ${#kinds[@]})) || npos=$((${#kinds[@]} - 1))
        kind="${kinds[npos]//;/ }"
    fi
    case "$kind" in
        w:*) COMPREPLY=($(compgen -W "${kind#w:}" -- "$cur")) ;;
        yaml)
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -d -- "$cur"; compgen -f -X '!*.y*ml' -- "$cur") ;;
        path)
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
    esac
    return 0
'''


def bash_script(parser: argparse.ArgumentParser) -> str:
    """A bash completion script for ``parser`` (``complete -F _farm farm``)."""
    table = command_table(parser)
    subs = {c.path: " ".join(c.subcommands) for c in table if c.subcommands}
    opts = {c.path: " ".join(c.options) for c in table}
    values = {f"{c.path} {option}": kind for c in table for option, kind in c.values}
    # positional kinds are comma-separated; a kind's own spaces (between choices) travel as ';'
    pos = {c.path: ",".join(k.replace(" ", ";") for k in c.positionals) for c in table if c.positionals}
    return "\n".join([
        "# bash completion for farm, generated from its argument parser by `farm completion bash`",
        '# use: eval "$(farm completion bash)"  (e.g. in ~/.bashrc)',
        "_farm() {",
        _assoc("subs", subs), _assoc("opts", opts), _assoc("values", values), _assoc("pos", pos),
        BASH_FUNCTION.strip("\n"),
        "}",
        "complete -F _farm farm",
        "",
    ])
