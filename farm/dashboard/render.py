"""The dashboard's pages from jinja2 templates (``farm/dashboard/templates/``, package data): one
Environment, made at the first page, that escapes every value a template writes (``autoescape``) and
refuses a name the page was not given (``StrictUndefined``) instead of writing nothing.

Only ``farm dashboard`` and ``farm serve`` import the dashboard (farm.commands.dashboard), so no other
command pays for importing jinja2.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jinja2

from . import formats, paths

#: every page and file carries it (meta tag and header): no script at all, styles inline, images as data
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'"


def _blank_none(value: Any) -> Any:
    """What ``{{ value }}`` writes: nothing for None (a column the store left empty), else the value."""
    return "" if value is None else value


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("farm.dashboard", "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined, finalize=_blank_none, auto_reload=False,
        # the pages are written without whitespace between their tags (tests and readers find a table's row on
        # one line): a line of only a block tag leaves nothing, and a template's last newline is the page's
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(human=formats.human, human_params=formats.human_params, number=formats.number,
                       duration=formats.duration, size=formats.size, epoch=formats.epoch, px=formats.px)
    env.globals.update(paths.HREFS, CSP=CSP)
    return env


def render(template: str, /, **context: Any) -> str:
    """The page ``template`` shows with ``context``."""
    return environment().get_template(template).render(**context)


def macro(template: str, name: str) -> Callable[..., str]:
    """Macro ``name`` of ``template`` (a piece of a page, for a test or a page that draws it alone)."""
    return getattr(environment().get_template(template).module, name)
