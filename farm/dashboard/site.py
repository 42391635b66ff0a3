"""Paths to pages: the one map ``farm dashboard`` writes out and ``farm serve`` answers from.

| path | page |
|---|---|
| ``index.html``, ``runs-N.html`` | the run list, newest first, 100 a page (live: ``index.html?place=…&status=…&page=N``) |
| ``runs/<filter>/<value>/<N>.html`` | the runs with one value of a filter (board, place, pipeline, setup, status) |
| ``run/<run>.html`` | a run: facts, stages, key figures (a sweep a row per load), boots, images, console, files |
| ``run/<run>/figures.html`` | every key figure of a run |
| ``run/<run>/files/<path>`` | a file of its run directory (a copy in the static site) |
| ``archive/<sha256>/<name>`` | a file the archive holds (an image's artifact, manifest, the pipeline file as run) |
| ``place/<place>.html`` | a place: its outcomes, its runs over time with their health, its jobs |
| ``trends.html``, ``trend/<suite.benchmark.metric.unit>.html`` | every series with its sparkline and change; a trend per target/setup/params |
| ``changes.html`` | every change point of the store (farm changes), each with its runs and what differs across it (farm diff) |
| ``compare.html``, ``compare/<run>--<run>.html`` | comparisons; live, ``compare.html?a=RUN&b=RUN`` any two runs |
| ``compare/<run>/<setup>--<setup>.html`` | two setups of one run (``&sa=SETUP&sb=SETUP`` live) |
| ``places.html`` | the farm's places: held by whom since when and health (the coordinator, when one is given), each one's runs, last run and last failure (the store) |
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Mapping, Sequence

import sqlalchemy as sa

from farm.errors import JobError
from farm.results.record import open_atomic, write_text_atomic

from . import archived, data, files, pages, paths, runlist, runpage, trends


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
    fa, fb = data.only_setup(a.boot_figures, setups[0]), data.only_setup(b.boot_figures, setups[1])
    if (setups[0] and not fa) or (setups[1] and not fb):
        return 404, pages.not_found_page(f"no setup {setups[0] if not fa else setups[1]} in that run", root)
    return 200, pages.compare_page(a, b, *data.compare_figures(fa, fb, a.rule), root=root, setups=setups)


def _setup_for_slug(c: sa.Connection, run_id: str, name: str) -> str | None:
    return next((s for s in data.setups_of(c, run_id).get(run_id, []) if data.slug(s) == name), None)


#: what the places page asks for the coordinator's side: (places now, or None; where they came from)
PlacesNow = Callable[[], "tuple[list[data.PlaceNow] | None, str]"]
NO_COORDINATOR = "no coordinator given (farm dashboard/serve --coordinator, or LG_COORDINATOR), so not known"
#: how a run's files are linked: "disk" (those in its run directory, and the consoles the store keeps), "none"
FILES = ("disk", "none")


def run_files(detail: data.RunDetail) -> dict[str, bool]:
    """Path → whether the dashboard can give it: the run directory's files that are still on disk,
    and the console logs the store keeps (their end) when they are not."""
    paths = [a.path for a in detail.artifacts]
    there = files.on_disk(detail.run.path, paths) if paths else {}
    for c in detail.consoles:
        there[f"console/{c.target}.log"] = True
    return there


def _run_list(c: sa.Connection, flt: runlist.RunFilter, page: int, *, live: bool, root: str = "",
              facet: tuple[str, str] | None = None, error: str = "") -> tuple[int, str]:
    total = runlist.count(c, flt)
    count = runlist.page_count(total)
    if not 1 <= page <= count:
        return 404, pages.not_found_page(f"no page {page} of the run list ({count} pages)", root)
    return (400 if error else 200), pages.runs_page(runlist.runs(c, flt, page), page, count, total, root, flt=flt,
                                                    facets=runlist.facets(c), live=live, facet=facet, error=error)


def _live_run_list(c: sa.Connection, query: Mapping[str, Sequence[str]]) -> tuple[int, str]:
    try:
        flt = runlist.RunFilter.from_query(query)
    except runlist.FilterError as exc:
        return _run_list(c, runlist.RunFilter(), 1, live=True, error=f"filter not applied: {exc}")
    try:
        page = int((query.get("page") or ["1"])[0])
    except ValueError:
        return 404, pages.not_found_page("page: expected a number")
    return _run_list(c, flt, page, live=True)


def _facet_value(c: sa.Connection, field: str, name: str) -> str | None:
    """The value of filter ``field`` whose slug is ``name``."""
    facet = next((f for f in runlist.facets(c) if f.field == field), None)
    return next((v for v, _ in facet.values if data.slug(v) == name), None) if facet else None


def _trend_values(c: sa.Connection, trend: data.Trend, series) -> dict:
    """Per series of a trend page, the values of the points it draws (for farm qualify's flags)."""
    out = {}
    for s in series:
        runs = [run for p in s.points[-pages.TREND_POINTS - 1:] for run in p.runs]
        out[s.target, s.setup, s.params] = data.point_values(c, trend, s, runs)
    return out


def _changes(c: sa.Connection) -> tuple:
    """The store's change points (farm changes) and, per change, what differs between the runs on its sides."""
    from farm.results.rundiff import diff_runs
    from farm.store.changes import find_changes
    from farm.store.runinfo import stored_run_json

    found = find_changes(c)
    differences = {}
    for change in found.changes:
        pair = (change.before[-1].x, change.after[0].x)
        if pair not in differences:
            a, b = (stored_run_json(c, run) for run in pair)
            differences[pair] = diff_runs(a, b) if a is not None and b is not None else []
    return found, differences


def render(c: sa.Connection, path: str, query: Mapping[str, Sequence[str]] | None = None, *,
           live: bool = False, places: PlacesNow | None = None, files: str = "disk") -> tuple[int, str]:
    """The status and HTML of ``path`` (relative, no leading ``/``); ``places`` gives the places
    page the coordinator's view (asked only for that page); ``files`` says which of a run's files
    its page links (:data:`FILES`)."""
    query = query or {}
    path = path or "index.html"
    parts = path.split("/")
    if len(parts) == 1:
        name = parts[0]
        if name == "index.html" and live and query:
            return _live_run_list(c, query)
        if name == "index.html" or (name.startswith("runs-") and name.endswith(".html")):
            try:
                page = 1 if name == "index.html" else int(name[5:-5])
            except ValueError:
                return 404, pages.not_found_page(f"no page {path}")
            return _run_list(c, runlist.RunFilter(), page, live=live)
        if name == "trends.html":
            rows = trends.series_rows(c, _baselines())
            return 200, pages.trends_page(trends.metrics_of(rows), rows)
        if name == "changes.html":
            found, differences = _changes(c)
            return 200, pages.changes_page(found, differences)
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
                return 200, runpage.run_page(detail, files=run_files(detail) if files == "disk" else None,
                                           archive=archived.view(run_id))
        if folder == "trend":
            trend = next((t for t in data.trends(c) if t.slug == name), None)
            if trend is not None:
                series = data.trend_series(c, trend)
                return 200, pages.trend_page(trend, series, _baselines(), values=_trend_values(c, trend, series))
        if folder == "place" and (place := data.place_for_slug(c, name)):
            detail = data.place_detail(c, place)
            if detail is not None:
                now, note = places() if places is not None else (None, NO_COORDINATOR)
                current = next((p for p in now or () if p.name == place), None)
                return 200, pages.place_page(detail, current, note)
        if folder == "compare" and "--" in name:
            a, b = name.split("--", 1)
            a_id, b_id = data.run_for_slug(c, a), data.run_for_slug(c, b)
            if a_id and b_id:
                return _compare(c, a_id, b_id, "../")
        return 404, pages.not_found_page(f"nothing at {path}", "../")
    elif len(parts) == 3 and parts[0] == "run" and parts[2] == "figures.html":
        run_id = data.run_for_slug(c, parts[1])
        detail = data.run_detail(c, run_id) if run_id else None
        if detail is not None:
            return 200, runpage.figures_page(detail)
        return 404, pages.not_found_page(f"nothing at {path}", "../../")
    elif len(parts) == 4 and parts[0] == "runs" and parts[3].endswith(".html"):
        field, name, number = parts[1], parts[2], parts[3][:-5]
        value = _facet_value(c, field, name) if field in runlist.FACETS else None
        if value is not None and number.isdigit():
            return _run_list(c, runlist.facet_filter(field, value), int(number), live=live, root="../../../",
                             facet=(field, value))
        return 404, pages.not_found_page(f"nothing at {path}", "../../../")
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


def run_file(c: sa.Connection, path: str) -> files.RunFile | None:
    """The file at ``run/<run>/files/<path in the run directory>``: one the store lists for that run,
    from its run directory, or a console log from the store; at ``archive/<sha256>/<name>``, an
    archived file (farm.dashboard.archived); None for any other path."""
    if archived.is_object_path(path):
        return archived.read_object(path)
    parts = path.split("/", 3)
    if len(parts) != 4 or parts[0] != "run" or parts[2] != "files":
        return None
    run_id = data.run_for_slug(c, parts[1])
    detail = data.run_detail(c, run_id) if run_id else None
    if detail is None or files.relative(parts[3]) != parts[3]:
        return None
    listed = {a.path for a in detail.artifacts}
    found = files.read(detail.run.path, parts[3]) if parts[3] in listed else None
    return found or files.stored_console(parts[3], detail.consoles)


def is_file_path(path: str) -> bool:
    parts = path.split("/", 3)
    return (len(parts) == 4 and parts[0] == "run" and parts[2] == "files") or archived.is_object_path(path)


def site_paths(c: sa.Connection) -> list[str]:
    """Every page of the static site."""
    count = runlist.page_count(runlist.count(c))
    out = [paths.page_file(p) for p in range(1, count + 1)] + ["trends.html", "changes.html", "compare.html",
                                                                     "places.html"]
    for facet in runlist.facets(c):
        for value, n in facet.values:
            out += [paths.facet_path(facet.field, value, p) for p in range(1, runlist.page_count(n) + 1)]
    run_ids = data.all_run_ids(c)
    out += [f"run/{data.slug(r)}.html" for r in run_ids]
    out += [f"run/{data.slug(r)}/figures.html" for r in run_ids]
    out += [f"place/{data.slug(p)}.html" for p in data.place_names(c)]
    out += [f"trend/{t.slug}.html" for t in data.trends(c)]
    pairs = dict.fromkeys(data.consecutive_pairs(c))
    pairs.update(dict.fromkeys(_changes(c)[1]))  # the runs on the two sides of each change point
    out += [f"compare/{data.slug(a)}--{data.slug(b)}.html" for a, b in pairs]
    for run_id, setups in data.setups_of(c).items():
        out += [paths.setup_compare_path(run_id, setups[0], other) for other in setups[1:]]
    return out


def _make_dirs(out: Path, folder: Path) -> None:
    """Make ``folder`` (``out`` or inside it), refusing a symbolic link on the way."""
    steps = [out]
    for part in folder.relative_to(out).parts:
        steps.append(steps[-1] / part)
    for p in steps:
        if p.is_symlink():
            raise JobError(f"{p}: is a symbolic link; farm dashboard writes only into directories of its own")
        p.mkdir(parents=p == out, exist_ok=True)


#: how the static site holds the runs' files: a copy (masked), a symbolic link to the run directory's, or none
FILE_MODES = ("copy", "link", "none")


def _write_files(c: sa.Connection, out: Path, mode: str) -> list[Path]:
    """Each run's files into ``run/<run>/files/`` of the site (``mode``: :data:`FILE_MODES`)."""
    written = []
    for run_id in data.all_run_ids(c):
        detail = data.run_detail(c, run_id)
        if detail is None:
            continue
        folder = out / "run" / data.slug(run_id) / "files"
        for path, there in run_files(detail).items():
            if not there:
                continue
            target = folder / path
            _make_dirs(out, target.parent)
            source = Path(detail.run.path) / path
            if mode == "link" and path in {a.path for a in detail.artifacts} and source.is_file():
                if target.is_symlink() or target.exists():
                    target.unlink()
                target.symlink_to(source.resolve())
            else:
                got = run_file(c, f"run/{data.slug(run_id)}/files/{path}")
                if got is None:
                    continue
                with open_atomic(target, "wb") as f:
                    f.write(got.data)
            written.append(target)
    records = [v.record for v in map(archived.view, data.all_run_ids(c)) if v is not None and v.record is not None]
    return written + archived.write_objects(records, out, mode, _make_dirs)


def write_site(eng: sa.Engine, out: str | os.PathLike[str], *, places: PlacesNow | None = None,
               files_mode: str = "copy") -> list[Path]:
    """Write every page into ``out`` (made if needed; pages of an earlier site are replaced); the
    places page with the coordinator's view as ``places`` gives it at this moment; the runs' files
    as ``files_mode`` says (:data:`FILE_MODES`). Returns the pages written."""
    if files_mode not in FILE_MODES:
        raise JobError(f"--files {files_mode}: expected one of {', '.join(FILE_MODES)}")
    out = Path(out)
    written = []
    with eng.connect() as c:
        for path in site_paths(c):
            status, html = render(c, path, places=places, files="none" if files_mode == "none" else "disk")
            target = out / path
            _make_dirs(out, target.parent)
            write_text_atomic(target, html)
            written.append(target)
        if files_mode != "none":
            _write_files(c, out, files_mode)
    return written
