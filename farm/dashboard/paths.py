"""Where each page and file of the dashboard is (the map is :mod:`.site`'s docstring): its path in the
static site, and the link to it from a page ``root`` away from the site's top (``""``, ``"../"`` …),
its names URL-quoted. Pure; the templates call the ``*_href`` functions (:mod:`.render`'s globals)."""

from __future__ import annotations

from urllib.parse import quote

from .data import Trend, slug


def page_file(page: int) -> str:
    """The run list's page ``page`` (1: the newest runs)."""
    return "index.html" if page == 1 else f"runs-{page}.html"


def facet_path(field: str, value: str, page: int = 1) -> str:
    """The static site's page of the runs with one value of one filter (:data:`runlist.FACETS`)."""
    return f"runs/{field}/{slug(value)}/{page}.html"


def setup_compare_path(run_id: str, first: str, then: str) -> str:
    """Two setups of one run compared."""
    return f"compare/{slug(run_id)}/{slug(first)}--{slug(then)}.html"


def run_href(root: str, run_id: str) -> str:
    return f"{root}run/{quote(slug(run_id))}.html"


def trend_href(root: str, trend: Trend) -> str:
    return f"{root}trend/{quote(trend.slug)}.html"


def compare_href(root: str, a: str, b: str) -> str:
    return f"{root}compare/{quote(slug(a))}--{quote(slug(b))}.html"


def setup_compare_href(root: str, run_id: str, first: str, then: str) -> str:
    return root + quote(setup_compare_path(run_id, first, then))


def facet_href(root: str, field: str, value: str, page: int = 1) -> str:
    return root + quote(facet_path(field, value, page))


def place_href(root: str, name: str) -> str:
    return f"{root}place/{quote(slug(name))}.html"


def file_href(root: str, run_id: str, path: str) -> str:
    """A file of a run directory: ``farm serve`` answers it from the run directory, the static site
    holds a copy."""
    return f"{root}run/{quote(slug(run_id))}/files/{quote(path)}"


def figures_href(root: str, run_id: str) -> str:
    return f"{root}run/{quote(slug(run_id))}/figures.html"


def object_href(root: str, sha256: str, name: str) -> str:
    """A file the archive holds (farm.dashboard.archived), named ``name`` when downloaded."""
    return f"{root}archive/{sha256}/{quote(name)}"


#: the functions the templates link with
HREFS = {f.__name__: f for f in (run_href, trend_href, compare_href, setup_compare_href, facet_href, place_href,
                                 file_href, figures_href, object_href)}
