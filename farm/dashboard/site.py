"""Paths to pages: the one map ``farm dashboard`` writes out and ``farm serve`` answers from.

| path | page |
|---|---|
| ``index.html``, ``runs-N.html`` | the run list, newest first, 100 a page |
| ``run/<run>.html`` | a run: facts, stages, key figures, boots, images, console (failing lines marked), files |
| ``trends.html``, ``trend/<suite.benchmark.metric.unit>.html`` | the metrics; a trend per target/setup/params |
| ``compare.html``, ``compare/<run>--<run>.html`` | comparisons; live, ``compare.html?a=RUN&b=RUN`` any two runs |
| ``compare/<run>/<setup>--<setup>.html`` | two setups of one run (``&sa=SETUP&sb=SETUP`` live) |
| ``places.html`` | the farm's places: held by whom since when and health (the coordinator, when one is given), each one's runs, last run and last failure (the store) |
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Callable, Mapping, Sequence

import sqlalchemy as sa

from farm.errors import JobError
from farm.results.record import write_text_atomic

from . import data, pages


def _baselines() -> dict[str, list[str]]:
    """Run id → names of the saved baselines made from it ($FARM_BASELINES), for the trends' marks."""
    from farm.results.baselines import list_baselines

    marks: dict[str, list[str]] = {}
    try:
        for b in list_baselines():
            marks.setdefault(b.run_id, []).append(b.name)
    except (OSError, ValueError, JobError):
        pass
    return marks


def _compare(c: sa.Connection, a_id: str, b_id: str, root: str, setups: tuple[str | None, str | None] = (None, None)
             ) -> tuple[int, str]:
    a, b = data.run_detail(c, a_id), data.run_detail(c, b_id)
    if a is None or b is None:
        return 404, pages.not_found_page(f"no run {a_id if a is None else b_id} in the store", root)
    fa, fb = data.only_setup(a.figures, setups[0]), data.only_setup(b.figures, setups[1])
    if (setups[0] and not fa) or (setups[1] and not fb):
        return 404, pages.not_found_page(f"no setup {setups[0] if not fa else setups[1]} in that run", root)
    return 200, pages.compare_page(a, b, *data.compare_figures(fa, fb), root=root, setups=setups)


def _setup_for_slug(c: sa.Connection, run_id: str, name: str) -> str | None:
    return next((s for s in data.setups_of(c, run_id).get(run_id, []) if data.slug(s) == name), None)


#: what the places page asks for the coordinator's side: (places now, or None; where they came from)
PlacesNow = Callable[[], "tuple[list[data.PlaceNow] | None, str]"]
NO_COORDINATOR = "no coordinator given (farm dashboard/serve --coordinator, or LG_COORDINATOR), so not known"


def render(c: sa.Connection, path: str, query: Mapping[str, Sequence[str]] | None = None, *,
           live: bool = False, places: PlacesNow | None = None) -> tuple[int, str]:
    """The status and HTML of ``path`` (relative, no leading ``/``); ``places`` gives the places
    page the coordinator's view (asked only for that page)."""
    query = query or {}
    path = path or "index.html"
    parts = path.split("/")
    if len(parts) == 1:
        name = parts[0]
        if name == "index.html" or (name.startswith("runs-") and name.endswith(".html")):
            try:
                page = 1 if name == "index.html" else int(name[5:-5])
            except ValueError:
                return 404, pages.not_found_page(f"no page {path}")
            total = data.count_runs(c)
            count = max(1, math.ceil(total / data.RUNS_PER_PAGE))
            if not 1 <= page <= count:
                return 404, pages.not_found_page(f"no page {page} of the run list")
            return 200, pages.runs_page(data.runs_page(c, page), page, count, total)
        if name == "trends.html":
            return 200, pages.trends_page(data.trends(c))
        if name == "places.html":
            now, note = places() if places is not None else (None, NO_COORDINATOR)
            return 200, pages.places_page(now, note, data.place_history(c))
        if name == "compare.html":
            if live and query.get("a") and query.get("b"):
                setups = tuple((query.get(k) or [""])[0] or None for k in ("sa", "sb"))
                return _compare(c, query["a"][0], query["b"][0], "", setups)  # type: ignore[arg-type]
            return 200, pages.compare_index_page(data.consecutive_pairs(c), data.all_run_ids(c), live)
    elif len(parts) == 2 and parts[1].endswith(".html"):
        folder, name = parts[0], parts[1][:-5]
        if folder == "run" and (run_id := data.run_for_slug(c, name)):
            detail = data.run_detail(c, run_id)
            if detail is not None:
                return 200, pages.run_page(detail)
        if folder == "trend":
            trend = next((t for t in data.trends(c) if t.slug == name), None)
            if trend is not None:
                return 200, pages.trend_page(trend, data.trend_series(c, trend), _baselines())
        if folder == "compare" and "--" in name:
            a, b = name.split("--", 1)
            a_id, b_id = data.run_for_slug(c, a), data.run_for_slug(c, b)
            if a_id and b_id:
                return _compare(c, a_id, b_id, "../")
        return 404, pages.not_found_page(f"nothing at {path}", "../")
    elif len(parts) == 3 and parts[0] == "compare" and parts[2].endswith(".html") and "--" in parts[2]:
        # two setups of one run: compare/<run>/<setup>--<setup>.html
        run_id = data.run_for_slug(c, parts[1])
        sa_name, sb_name = parts[2][:-5].split("--", 1)
        if run_id:
            first, then = _setup_for_slug(c, run_id, sa_name), _setup_for_slug(c, run_id, sb_name)
            if first and then:
                return _compare(c, run_id, run_id, "../../", (first, then))
        return 404, pages.not_found_page(f"nothing at {path}", "../../")
    return 404, pages.not_found_page(f"nothing at {path}")


def site_paths(c: sa.Connection) -> list[str]:
    """Every page of the static site."""
    count = max(1, math.ceil(data.count_runs(c) / data.RUNS_PER_PAGE))
    paths = [pages.page_file(p) for p in range(1, count + 1)] + ["trends.html", "compare.html", "places.html"]
    paths += [f"run/{data.slug(r)}.html" for r in data.all_run_ids(c)]
    paths += [f"trend/{t.slug}.html" for t in data.trends(c)]
    paths += [f"compare/{data.slug(a)}--{data.slug(b)}.html" for a, b in data.consecutive_pairs(c)]
    for run_id, setups in data.setups_of(c).items():
        paths += [pages.setup_compare_path(run_id, setups[0], other) for other in setups[1:]]
    return paths


def _make_dirs(out: Path, folder: Path) -> None:
    """Make ``folder`` (``out`` or inside it), refusing a symbolic link on the way."""
    steps = [out]
    for part in folder.relative_to(out).parts:
        steps.append(steps[-1] / part)
    for p in steps:
        if p.is_symlink():
            raise JobError(f"{p}: is a symbolic link; farm dashboard writes only into directories of its own")
        p.mkdir(parents=p == out, exist_ok=True)


def write_site(eng: sa.Engine, out: str | os.PathLike[str], *, places: PlacesNow | None = None) -> list[Path]:
    """Write every page into ``out`` (made if needed; pages of an earlier site are replaced); the
    places page with the coordinator's view as ``places`` gives it at this moment."""
    out = Path(out)
    written = []
    with eng.connect() as c:
        for path in site_paths(c):
            status, html = render(c, path, places=places)
            target = out / path
            _make_dirs(out, target.parent)
            write_text_atomic(target, html)
            written.append(target)
    return written
