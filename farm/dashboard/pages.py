"""The dashboard's pages, rendered from :mod:`.data` as HTML strings. Pure functions; every text
that comes from a run (names, console output, messages) goes through :func:`e`."""

from __future__ import annotations

import math
from html import escape
from typing import Callable, Iterable, Mapping, Sequence
from urllib.parse import quote

from farm.results.compare import verdict
from farm.results.identity import MetricKey
from farm.results.qualify import REGRESSION, compare as qualify_compare, direction, format_change
from farm.measure.units import human, human_params
from farm.results.figures import KeyFigure
from farm.results.record import parse_params
from farm.store.history import Series

from . import console as consolefold
from .archived import ArchiveView, reproduces_line, section as archive_section
from .data import Pair, PlaceDetail, PlaceNow, PlaceRuns, RunDetail, SweepCurve, Trend, slug
from .runlist import FACETS, FIELDS, Facet, RunFilter
from .svg import ChartPoint, Curve, ratio_chart, sparkline, trend_chart, xy_chart
from .trends import MIN_VALUES, SeriesRow

#: a trend point is flagged when farm qualify's rules call it a regression against the point before
#: (this threshold, alpha 0.05) with at least two values a side
REGRESSION_THRESHOLD = 0.05
REGRESSION_ALPHA = 0.05
#: how many points of a series a trend page draws (the newest)
TREND_POINTS = 200
#: console lines that end a run (farm.boot.watch), minus the banners, which are only fatal the second time
_FATAL = consolefold.FATAL

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'"

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#234;color:#fff;padding:8px 16px}header a{color:#fff;margin-right:16px}
main{padding:8px 16px}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}th{background:#eee}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.passed,.pass{color:#060}.failed,.failure,.error,.interrupted{color:#b00;font-weight:bold}
pre.console{background:#111;color:#ddd;padding:8px;overflow:auto;max-height:40em}
pre.console mark{background:#a00;color:#fff}
svg.chart text{font-size:11px;fill:#333}svg.chart .plot{fill:#fafafa;stroke:#999}
svg.chart .grid{stroke:#ddd}svg.chart .series{fill:none;stroke:#36c;stroke-width:1.5}
svg.chart .interval{stroke:#36c;stroke-width:1}svg.chart .point{fill:#36c}
svg.chart .regression{fill:#c00}svg.chart .baseline{fill:#e90}
svg.chart .bar.better{fill:#2e9e44}svg.chart .bar.worse{fill:#d0342c}svg.chart .bar.same{fill:#9a9a9a}
svg.chart .bar.unknown{fill:#5b7fb5}svg.chart .one{stroke:#000}
svg.chart .curve{fill:none;stroke-width:2}svg.chart .ideal{stroke:#777;stroke-dasharray:5 4}
svg.chart .c0{stroke:#1f77b4;fill:#1f77b4}svg.chart .c1{stroke:#ff7f0e;fill:#ff7f0e}
svg.chart .c2{stroke:#2ca02c;fill:#2ca02c}svg.chart .c3{stroke:#d62728;fill:#d62728}
svg.chart .c4{stroke:#9467bd;fill:#9467bd}svg.chart .c5{stroke:#8c564b;fill:#8c564b}
svg.chart polyline.curve{fill:none}
.flag-regression{color:#c00;font-weight:bold}.flag-baseline{color:#a60;font-weight:bold}
svg.chart text.value{font-size:10px;fill:#333}
pre.console .ln{display:inline-block;width:3.5em;color:#777;text-decoration:none;user-select:none}
pre.console .ln:hover{color:#fff}pre.console .typing{display:none;color:#8a8}pre.console .typed{color:#9cf}
pre.console .exit{color:#777}pre.console .context{background:#402020}
pre.console :target{outline:1px solid #fc0}
.show-typing:checked+label+pre.console .typing{display:inline}
.show-typing:checked+label+pre.console .shown{display:none}
form.filters{background:#f4f4f4;padding:6px 8px;border:1px solid #ddd;display:inline-block}
form.filters label{margin-right:10px;white-space:nowrap}
nav.facets{font-size:13px;margin:6px 0}nav.facets span.facet{margin-right:14px}
nav.pages a,nav.pages b{margin:0 3px}
svg.spark .spark-line{fill:none;stroke:#36c;stroke-width:1.2}svg.spark .spark-last{fill:#36c}
svg.spark .spark-last.regression{fill:#c00}
td.regression{color:#c00;font-weight:bold}td.improvement{color:#060}td.inconclusive,p.inconclusive{color:#a60}
td.flagged,p.flagged{color:#a60}svg.chart .bar.inconclusive{fill:#e4e4e4;stroke:#555;stroke-dasharray:3 2}
svg.chart .ci{stroke:#000;stroke-width:1}
svg.strip rect.pass{fill:#2e9e44}svg.strip rect.failure{fill:#d0342c}svg.strip rect.error{fill:#e9a21a}
svg.strip rect.none,svg.strip rect.skipped{fill:#999}svg.strip .health{stroke:#000;stroke-width:2}
svg.strip text{font-size:11px;fill:#333}
.legend .key{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-left:8px}
.legend .key.pass{background:#2e9e44}.legend .key.failure{background:#d0342c}.legend .key.error{background:#e9a21a}
.legend .key.health{background:#000;height:3px}
table.series th.metric{background:#dde4ee;text-align:left}table.series th.metric .runs{font-weight:normal;color:#555}
table.series td.num a{white-space:nowrap}table.runs{font-size:13px}table.runs a,table.runs td:nth-child(3){white-space:nowrap}
table.runs .junit{font-size:11px}table.runs td{padding:2px 6px}table.runs .kernel{color:#555}td pre{white-space:pre-wrap;margin:0;max-width:62em}
"""


def e(value: object) -> str:
    """Escaped text of ``value`` (quotes too: it may end up in an attribute)."""
    return escape("" if value is None else str(value), quote=True)


def _num(value: float | None, unit: str = "") -> str:
    if value is None or not math.isfinite(value):
        return ""
    return e(human(value, unit)) if unit else f"{value:.4g}"


def run_href(root: str, run_id: str) -> str:
    return f"{root}run/{quote(slug(run_id))}.html"


def trend_href(root: str, trend: Trend) -> str:
    return f"{root}trend/{quote(trend.slug)}.html"


def compare_href(root: str, a: str, b: str) -> str:
    return f"{root}compare/{quote(slug(a))}--{quote(slug(b))}.html"


def setup_compare_path(run_id: str, first: str, then: str) -> str:
    return f"compare/{slug(run_id)}/{slug(first)}--{slug(then)}.html"


def layout(title: str, body: str, root: str = "") -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,"><title>{e(title)} · farm</title><style>{STYLE}</style></head>'
            f'<body><header><a href="{root}index.html">Runs</a><a href="{root}trends.html">Trends</a>'
            f'<a href="{root}compare.html">Compare</a><a href="{root}places.html">Places</a></header><main><h1>{e(title)}</h1>{body}</main></body></html>\n')


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """``rows`` are already HTML (each cell escaped by the caller)."""
    out = [f'<table class="{cls}"><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    out.extend("<tr>" + "".join(cells) + "</tr>" for cells in rows)
    out.append("</tbody></table>")
    return "".join(out)


def _td(text: object, cls: str = "") -> str:
    return f'<td class="{e(cls)}">{e(text)}</td>' if cls else f"<td>{e(text)}</td>"


def _duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return ""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


# --- the run list ------------------------------------------------------------------------------

def page_file(page: int) -> str:
    return "index.html" if page == 1 else f"runs-{page}.html"


def facet_path(field: str, value: str, page: int = 1) -> str:
    """The static site's page of the runs with one value of one filter (:data:`runlist.FACETS`)."""
    return f"runs/{field}/{slug(value)}/{page}.html"


def place_href(root: str, name: str) -> str:
    return f"{root}place/{quote(slug(name))}.html"


def file_href(root: str, run_id: str, path: str) -> str:
    """A file of a run directory: ``farm serve`` answers it from the run directory, the static site
    holds a copy."""
    return f"{root}run/{quote(slug(run_id))}/files/{quote(path)}"


def figures_href(root: str, run_id: str) -> str:
    return f"{root}run/{quote(slug(run_id))}/figures.html"


#: how a run list links its pages and its filter values: the static site's fixed pages, or live queries
Links = Callable[..., str]


class ListLinks:
    """Where a run list's links go. Static: ``runs-N.html`` / :func:`facet_path` pages (one filter
    at a time); live (``farm serve``): ``index.html?<filters>&page=N``, each value narrowing the
    filter shown."""

    def __init__(self, root: str, flt: RunFilter, live: bool, facet: tuple[str, str] | None = None):
        self.root, self.flt, self.live, self.facet = root, flt, live, facet

    def page(self, n: int) -> str:
        if self.live:
            return f"{self.root}index.html{self.flt.query(page=n if n > 1 else None)}"
        if self.facet:
            return self.root + quote(facet_path(*self.facet, n))
        return self.root + page_file(n)

    def value(self, field: str, value: str) -> str:
        if self.live:
            import attrs

            return f"{self.root}index.html{attrs.evolve(self.flt, **{field: value}).query()}"
        return self.root + quote(facet_path(field, value))


def _pager(page: int, pages: int, href: Callable[[int], str]) -> str:
    """First, previous, the pages around this one, next and last: a few links at any length."""
    if pages <= 1:
        return ""
    shown = sorted({1, pages, *range(max(1, page - 3), min(pages, page + 3) + 1)})
    parts, before = [], 0
    if page > 1:
        parts.append(f'<a href="{e(href(page - 1))}" rel="prev">‹ newer</a>')
    for p in shown:
        if p - before > 1:
            parts.append("…")
        parts.append(f"<b>{p}</b>" if p == page else f'<a href="{e(href(p))}">{p}</a>')
        before = p
    if page < pages:
        parts.append(f'<a href="{e(href(page + 1))}" rel="next">older ›</a>')
    return f'<nav class="pages">page {page} of {pages}: ' + " ".join(parts) + "</nav>"


def _filter_form(flt: RunFilter, facets: Sequence[Facet], root: str) -> str:
    """The live run list's filter: a GET form (no script), a select per value list, dates, a commit."""
    values = {f.field: f.values for f in facets}
    fields = []
    for name, label in FIELDS:
        current = getattr(flt, name)
        if name in FACETS:
            options = [("", "any")] + [(v, f"{v} ({n})") for v, n in values.get(name, ())]
            if current and current not in {v for v, _ in options}:
                options.append((current, current))
            opts = "".join(f'<option value="{e(v)}"{" selected" if v == current else ""}>{e(text)}</option>'
                           for v, text in options)
            fields.append(f'<label>{e(label)} <select name="{name}">{opts}</select></label>')
        elif name in ("since", "until"):
            fields.append(f'<label>{e(label)} <input type="date" name="{name}" value="{e(current)}"></label>')
        else:
            fields.append(f'<label>{e(label)} <input name="{name}" value="{e(current)}" size="12" '
                          f'placeholder="sha prefix" pattern="[0-9a-fA-F]{{4,40}}"></label>')
    clear = f' <a href="{root}index.html">all runs</a>' if not flt.empty else ""
    return (f'<form class="filters" method="get" action="{root}index.html">{"".join(fields)}'
            f'<button type="submit">filter</button>{clear}</form>')


def _facet_nav(facets: Sequence[Facet], links: ListLinks, limit: int = 12) -> str:
    parts = []
    for f in facets:
        if not f.values:
            continue
        shown = " · ".join(f'<a href="{e(links.value(f.field, v))}">{e(v)}</a> ({n})' for v, n in f.values[:limit])
        more = f" · +{len(f.values) - limit} more" if len(f.values) > limit else ""
        parts.append(f'<span class="facet"><b>{e(f.label)}:</b> {shown}{more}</span>')
    return f'<nav class="facets">{"".join(parts)}</nav>' if parts else ""


def run_rows(rows: Sequence, root: str, links: ListLinks | None = None) -> list[list[str]]:
    """The run list's rows; ``links`` makes the board, place, pipeline, setup and status filter links."""

    def names(field: str, text: str, cls: str = "") -> str:
        if not text:
            return "<td></td>"
        if links is None:
            return _td(text.replace(",", ", "), cls)
        items = [f'<a href="{e(links.value(field, v))}">{e(v)}</a>' for v in text.split(",")] \
            if field in ("target", "setup") else [f'<a href="{e(links.value(field, text))}">{e(text)}</a>']
        return f'<td class="{e(cls)}">{", ".join(items)}</td>' if cls else f"<td>{', '.join(items)}</td>"

    def status(r) -> str:
        cell = names("status", r.status, r.status)
        junit = f' <span class="junit {e(r.junit)}" title="junit outcome">{e(r.junit)}</span>' \
            if r.junit not in ("", "pass") else ""
        return cell[:-5] + junit + "</td>"

    return [[f'<td><a href="{e(run_href(root, r.run_id))}">{e(r.run_id)}</a></td>', status(r),
             _td(r.started[:16].replace("T", " ")), _td(_duration(r.duration_s), "num"), _td(r.who),
             names("pipeline", r.pipeline), names("target", r.targets),
             f'<td><a href="{e(place_href(root, r.place))}">{e(r.place)}</a></td>' if r.place else "<td></td>",
             names("setup", r.setups), f"<td><code>{e(r.git_sha[:8])}</code></td>",
             f'<td>{e(r.images.replace(",", ", "))}<br><span class="kernel">{e(r.kernels.replace(",", ", "))}</span>'
             "</td>"]
            for r in rows]


RUN_COLUMNS = ("run", "status", "started (UTC)", "took", "who", "pipeline", "board", "place", "setup", "commit",
               "image, kernel")


def runs_page(rows: Sequence, page: int, pages: int, total: int, root: str = "", *, flt: RunFilter = RunFilter(),
              facets: Sequence[Facet] = (), live: bool = False, facet: tuple[str, str] | None = None,
              error: str = "") -> str:
    """The runs ``flt`` selects, newest first, a page of them; live, a filter form above them, on the
    static site a link per value of each filter (its pages list the runs with that value)."""
    links = ListLinks(root, flt, live, facet)
    body = []
    if error:
        body.append(f'<p class="failure">{e(error)}</p>')
    if live:
        body.append(_filter_form(flt, facets, root))
    else:
        body.append("<p>Filter by one value (farm serve filters by several, by commit and by date):</p>")
    body.append(_facet_nav(facets, links))
    what = f" with {e(flt.describe())}" if not flt.empty else ""
    body.append(f'<p class="count">{total} run{"s" * (total != 1)}{what}, newest first.'
                + (f' <a href="{root}index.html">all runs</a>' if not flt.empty else "") + "</p>")
    body.append(_table(RUN_COLUMNS, run_rows(rows, root, links), "runs"))
    body.append(_pager(page, pages, links.page))
    title = "Runs" + (f": {flt.describe()}" if not flt.empty else "")
    return layout(title, "".join(body), root)


# --- a run -------------------------------------------------------------------------------------

def highlight_console(text: str, excerpts: Iterable[str], anchor: str = "c") -> tuple[str, int]:
    """The console as escaped HTML lines (:mod:`.console`): farm's typing checks folded away (shown
    with the ``show-typing`` checkbox before the ``<pre>``), each line numbered with a link to itself
    (``#<anchor>-L<n>``, the log file's line numbers), the failing lines (a fatal console line, the
    line a failed stage's console excerpt ends with, or one its message quotes) in ``<mark>``, the
    first ``id="fail-0"``, the excerpt's other lines lightly; and how many lines were marked."""
    lines = consolefold.fold(text)
    wanted, context = consolefold.marked(lines, excerpts)
    out, marked = [], 0
    for ln in lines:
        number = f'<a class="ln" id="{anchor}-L{ln.number}" href="#{anchor}-L{ln.number}">{ln.number}</a>'
        if ln.kind == consolefold.CHECK:
            out.append(f'<span class="typing"><span class="ln">{ln.number}</span>{e(ln.raw)}\n</span>')
            continue
        shown = e(ln.text)
        if ln.number in wanted:
            shown = f'<mark id="fail-{marked}">{shown}</mark>'
            marked += 1
        elif ln.number in context:
            shown = f'<span class="context">{shown}</span>'  # the console excerpt that led to it
        exit_note = f' <span class="exit">(exit {ln.status})</span>' if ln.status else ""
        if ln.folded:
            out.append(f'<span class="shown">{number}<span class="typed">{shown}</span>{exit_note}\n</span>'
                       f'<span class="typing"><span class="ln">{ln.number}</span>{e(ln.raw)}\n</span>')
        else:
            out.append(f"{number}{shown}\n")
    return "".join(out), marked


def first_marked_line(text: str, excerpts: Iterable[str]) -> int | None:
    """The log's line number of the first failing line of ``text`` (see :func:`highlight_console`)."""
    lines = consolefold.fold(text)
    wanted, _ = consolefold.marked(lines, excerpts)
    return min(wanted) if wanted else None


FIGURE_HEAD = ("target", "setup", "benchmark", "params", "metric", "n", "median", "range", "flagged")


def _figure_rows(figures: Sequence[KeyFigure]) -> list[list[str]]:
    return [[_td(f.target), _td(f.setup), _td(f"{f.suite}.{f.benchmark}"), _td(human_params(f.params)),
             _td(f.metric),
             _td(len(f.values), "num"), _td(human(f.median, f.unit), "num"),
             _td(f"{human(min(f.values), f.unit)} – {human(max(f.values), f.unit)}", "num"),
             _td(f.flagged, "flagged" if f.flags else "")] for f in figures]


def flagged_section(figures: Sequence[KeyFigure]) -> str:
    """What a sanity rule flagged among a run's figures (farm.results.sanity), and what each flag means."""
    from farm.results.sanity import MEANING

    flagged = [f for f in figures if f.flags]
    if not flagged:
        return ""
    seen = sorted({flag for f in flagged for flag, _ in f.flags})
    return (f'<h2 id="flagged">Flagged values</h2><p class="flagged">{len(flagged)} figures have values a sanity rule '
            "flagged (they are in the figures and comparisons, marked): "
            + "; ".join(f"<b>{e(flag)}</b>: {e(MEANING.get(flag, flag))}" for flag in seen) + ".</p>"
            + _table(FIGURE_HEAD, _figure_rows(flagged), "flagged"))


#: a sweep's columns in its summary, when it measured them: the load, what it achieved, the RTT, the CPU
SWEEP_KEY_METRICS = ("requested_throughput", "received_throughput", "sent_throughput", "rtt_min", "rtt_median",
                     "rtt_p90", "rtt_max", "cpu_utilisation")
#: at most this many columns of a sweep that measured none of SWEEP_KEY_METRICS
SWEEP_OTHER_COLUMNS = 6


def split_sweeps(figures: Sequence[KeyFigure]) -> tuple[list[KeyFigure], dict[tuple[str, str, str, str], dict]]:
    """The figures that are rows of their own, and the sweeps: a benchmark measured at three or more
    parameter points per target and setup, three or more metrics each (as summary.md tells them),
    as (target, setup, suite, benchmark) → params → its figures."""
    groups: dict[tuple[str, str, str, str], dict[str, list[KeyFigure]]] = {}
    for f in figures:
        groups.setdefault((f.target, f.setup, f.suite, f.benchmark), {}).setdefault(f.params, []).append(f)
    sweeps = {k: v for k, v in groups.items() if len(v) >= 3 and min(len(fs) for fs in v.values()) >= 3}
    rest = [f for f in figures if (f.target, f.setup, f.suite, f.benchmark) not in sweeps]
    return rest, sweeps


def sweep_summary(key: tuple[str, str, str, str], points: Mapping[str, Sequence[KeyFigure]]) -> str:
    """One row per load (parameter point) of a sweep, the key columns (medians over its repeats)."""
    target, setup, suite, benchmark = key
    params = [parse_params(p) for p in points]
    common = {k: v for k, v in params[0].items() if all(p.get(k) == v for p in params[1:])}
    varying = list(dict.fromkeys(k for p in params for k in p if k not in common))
    measured = list(dict.fromkeys(f.metric for fs in points.values() for f in fs))
    columns = [m for m in SWEEP_KEY_METRICS if m in measured] or measured[:SWEEP_OTHER_COLUMNS]
    if varying == ["requested"]:  # the load is the requested rate: its column says it already
        columns = [m for m in columns if m != "requested_throughput"]
    rows = []
    for text, figs in points.items():
        by_metric = {f.metric: f for f in figs}
        here = {k: v for k, v in parse_params(text).items() if k not in common}
        shown = human_params(";".join(f"{k}={v}" for k, v in here.items()))
        if len(varying) == 1 and shown.startswith(f"{varying[0]}="):
            shown = shown[len(varying[0]) + 1:]
        rows.append([_td(shown or "-", "num" if len(varying) == 1 else ""), _td(max(f.n for f in figs), "num")]
                    + [_td(human(by_metric[m].median, by_metric[m].unit) if m in by_metric else "–", "num")
                       for m in columns])
    note = f"<p>all points: {e(human_params(';'.join(f'{k}={v}' for k, v in common.items())))}</p>" if common else ""
    head = varying[0] if len(varying) == 1 else "load"
    return (f"<h3>{e(suite)}.{e(benchmark)} on {e(target)}/{e(setup)}: {len(points)} loads</h3>{note}"
            + _table((head, "n", *columns), rows, "sweep"))


def sweep_charts(curves: Sequence[SweepCurve]) -> list[str]:
    """A network sweep's curves per target, a colour per setup: achieved throughput against the
    requested rate (dashed: the ideal, achieved = requested) and the median RTT."""
    out = []
    for target in sorted({c.target for c in curves}):
        mine = [c for c in curves if c.target == target]
        out.append(f"<h2>Network sweep of {e(target)}</h2>")
        for metric, title, ideal in (("received_throughput", "achieved (received) against requested; dashed: "
                                      "ideal", True), ("rtt_median", "median round-trip time", False)):
            of_metric = [c for c in mine if c.metric == metric]
            if of_metric:
                out.append(f"<p>{e(title)}</p>" + xy_chart(
                    [Curve(c.setup, c.points) for c in of_metric], "bit/s", of_metric[0].unit,
                    f"{target}: {metric} against the requested rate", ideal=ideal))
    return out


def phases_line(stages: Sequence, duration_s: float | None) -> str:
    """The run's time by phase (farm.results.phases), from its stages and its duration (which ends when the
    run does, before it is published: the publish stage comes on top, as in run.json's ``phases``)."""
    from ..results.phases import describe, split

    pairs = [(s.classname, s.seconds) for s in stages]
    wall = None
    if duration_s is not None and math.isfinite(duration_s):
        wall = duration_s + sum(x or 0.0 for c, x in pairs if c == "farm.publish")
    phases = split(pairs, wall)
    return f'<p class="phases">time by phase: {e(describe(phases))}</p>' if phases else ""


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def _console_anchor(target: str) -> str:
    return f"c-{slug(target)}"


def run_page(d: RunDetail, root: str = "../", files: Mapping[str, bool] | None = None,
             archive: ArchiveView | None = None) -> str:
    """A run's page. ``files``: path in the run directory → whether it can be opened (``farm serve``
    has it, the static site copied it); None: no file is linked. ``archive``: what the archive holds
    of the run (farm.dashboard.archived), its files linked when ``files`` is given."""
    r = d.run
    linked = files is not None
    files = files or {}
    facts = [("status", r.status), ("junit outcome", r.junit), ("kind", r.kind), ("who", r.who),
             ("started", r.started), ("finished", r.finished), ("duration", _duration(r.duration_s)),
             ("pipeline", r.pipeline), ("targets", r.targets), ("setups", r.setups), ("images", r.images),
             ("kernels", r.kernels), ("git sha", r.git_sha), ("farm version", r.farm_version), ("CI job", r.ci_job),
             ("stopped at", r.stopped_at), ("run directory", r.path)]
    rows = [[f"<th>{e(k)}</th>", _td(v, str(v) if k in ("status", "junit outcome") else "")]
            for k, v in facts if v not in (None, "")]
    if getattr(r, "place", ""):
        rows.insert(8, ["<th>place</th>", f'<td><a href="{e(place_href(root, r.place))}">{e(r.place)}</a></td>'])
    body = [_table(("", ""), rows)]
    links = []
    if d.previous:
        links.append(f'<a href="{e(compare_href(root, d.previous, r.run_id))}">compare with the run before it '
                     f'({e(d.previous)})</a>')
    links += [f'<a href="#{_console_anchor(c.target)}">console of {e(c.target)}</a>' for c in d.consoles]
    if files:
        links.append('<a href="#files">files</a>')
    if links:
        body.append("<p>" + " · ".join(links) + "</p>")
    setups = sorted({f.setup for f in d.figures})
    if len(setups) > 1:
        setup_links = (f'<a href="{e(root + quote(setup_compare_path(r.run_id, setups[0], other)))}">'
                       f'{e(setups[0])} → {e(other)}</a>' for other in setups[1:])
        body.append("<p>compare its setups: " + ", ".join(setup_links) + "</p>")
    for q in d.qualifications:
        body.append(f'<p class="{"pass" if q.passed else "failure"}">qualify against {e(q.baseline)}: '
                    f'{e(q.headline)}</p>')
    body.append(reproduces_line(d.reproduces, root))
    failing = [s.message for s in d.stages if s.kind in ("failure", "error")]
    where = []  # (target, line) of each console's first failing line
    for c in d.consoles:
        line = first_marked_line(c.text, failing)
        if line is not None:
            where.append((c.target, line))

    def message_cell(s) -> str:
        if not s.message:
            return "<td></td>"
        jump = ""
        if s.kind in ("failure", "error") and where:
            target, line = next(((t, n) for t, n in where if t in s.name), where[0])
            jump = (f'<a class="jump" href="#{_console_anchor(target)}-L{line}">the failing line: console of '
                    f'{e(target)}, line {line}</a>')
        return f"<td><pre>{e(s.message)}</pre>{jump}</td>"

    body.append(phases_line(d.stages, r.duration_s))
    body.append("<h2>Stages</h2>" + _table(("stage", "outcome", "seconds", "message"), (
        [_td(s.name), _td(s.kind, s.kind), _td(f"{s.seconds:.1f}" if s.seconds is not None else "", "num"),
         message_cell(s)] for s in d.stages)))
    body += sweep_charts(d.sweeps)
    body.append("<h2>Key figures</h2>")
    plain, sweeps = split_sweeps(d.figures)
    if sweeps:
        body.append(f'<p>A sweep: a row per load, its key columns (medians over repeats). '
                    f'<a href="{e(figures_href(root, r.run_id))}">every figure of the run</a> '
                    f'({len(d.figures)} rows: each metric with n and range).</p>')
        body += [sweep_summary(k, v) for k, v in sweeps.items()]
    if plain:
        body.append(_table(FIGURE_HEAD, _figure_rows(plain)))
    elif not d.figures:
        body.append("<p>no measured values</p>")
    body.append(flagged_section(d.figures))
    if d.failed:
        body.append("<p class=\"failure\">failed benchmarks: " + e(", ".join(
            sorted({f"{x.suite}.{x.benchmark} {x.target}/{x.setup}" for x in d.failed}))) + "</p>")
    if d.boots:
        body.append("<h2>Boots</h2>" + experiment_text(d) + _table(
            ("target", "setup", "repeat", "kernel", "image key", "cpus", "boot s", "settled"), (
                [_td(b.target), _td(b.setup), _td(b.repeat, "num"), _td(b.kernel), _td(b.image_key[:16]),
                 _td(b.cpus, "num"), _td(_num(b.boot_seconds), "num"), _settle_cell(settle)]
                for b, settle in zip(d.boots, _settle_of_boots(d)))))
    body.append(archive_section(r.run_id, d.images, d.reproductions, archive, root, linked))
    for i, c in enumerate(d.consoles):
        anchor = _console_anchor(c.target)
        html_text, marked = highlight_console(c.text, failing, anchor)
        jump = f'<a href="#fail-0">first of {marked} failing lines</a>' if marked and i == 0 else ""
        cut = " (its end: the log was longer)" if c.truncated else ""
        log = f"console/{c.target}.log"
        whole = (f' <a href="{e(file_href(root, r.run_id, log))}">the whole log</a>' if files.get(log) else "")
        toggle = f"typing-{i}"
        body.append(f'<h2 id="{anchor}">Console of {e(c.target)}{cut}</h2><p>{jump}{whole}</p>'
                    f'<input type="checkbox" id="{toggle}" class="show-typing"><label for="{toggle}"> show '
                    f"farm's own typing checks (the markers around each command it typed, folded away)</label>"
                    f'<pre class="console">{html_text}</pre>')
    if d.artifacts:
        body.append('<h2 id="files">Files</h2>' + _table(("path in the run directory", "size"), (
            [f'<td><a href="{e(file_href(root, r.run_id, a.path))}">{e(a.path)}</a></td>' if files.get(a.path)
             else _td(a.path + (" (not on disk any more)" if a.path in files else "")),
             _td(_size(a.size), "num")] for a in d.artifacts), "files"))
    return layout(f"Run {r.run_id}", "".join(body), root)


def experiment_text(d: RunDetail) -> str:
    """The run's experiment design in one paragraph (run.json's experiment), "" when it has none."""
    x = d.experiment
    if not x:
        return ""
    boots = x.get("boots") if isinstance(x.get("boots"), dict) else {}
    seed = f" (seed {x['seed']})" if x.get("seed") is not None else ""
    settle = x.get("settle")
    rule = (f"; a boot settles when every core is below {settle.get('cpu_below')} % for {settle.get('for')} s "
            f"(at most {settle.get('within')} s)" if isinstance(settle, dict) else "; no settling rule")
    return (f"<p>boots per setup: {e(', '.join(f'{k} {v}' for k, v in boots.items()))}, order "
            f"{e(x.get('order', '?'))}{e(seed)}{e(rule)}.</p>")


def _settle_of_boots(d: RunDetail) -> list[dict | None]:
    """Each stored boot's settle record, by its target, setup and repeat (run.json's label)."""
    by_label = dict(d.settling)
    out = []
    for b in d.boots:
        label = f"{b.target}/{b.setup}"
        out.append(by_label.get(f"{label}/{b.repeat}", by_label.get(label)))
    return out


def _settle_cell(settle: dict | None) -> str:
    if not settle:
        return _td("")
    if settle.get("skipped"):
        return _td(f"not read: {settle['skipped']}")
    seconds = settle.get("seconds")
    took = f" in {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
    return _td(f"yes{took}") if settle.get("settled") else _td(f"NO{took}: flagged unsettled", "flagged")


def figures_page(d: RunDetail, root: str = "../../") -> str:
    """Every key figure of a run, a row per metric (a sweep's every metric at every load)."""
    body = [f'<p><a href="{e(run_href(root, d.run.run_id))}">back to the run</a>. Each metric under each target, '
            f"setup and parameters: n values, their median and range.</p>",
            _table(FIGURE_HEAD, _figure_rows(d.figures), "figures") if d.figures else "<p>no measured values</p>"]
    return layout(f"Key figures of {d.run.run_id}", "".join(body), root)


# --- trends ------------------------------------------------------------------------------------

def _verdict_cell(row: SeriesRow) -> str:
    c = row.comparison
    if c is None:
        return _td("one point: nothing to compare" if row.points == 1 else "")
    interval = ""
    if c.ratio_interval is not None:
        lo, hi = c.ratio_interval
        interval = f", ratio {c.ratio:.3f} (95 % CI {lo:.3f} – {hi:.3f})"
    elif c.rule == "mann-whitney":
        interval = f", Mann-Whitney p={c.p_value:.2g}"
    else:
        interval = ", ranges " + ("apart" if c.significant else "overlap")
    if row.regression:
        word, cls = "regression", "regression"
    elif row.too_few:
        word, cls = f"n={min(c.baseline.n, c.candidate.n)} a side: not judged", ""
    else:
        word, cls = c.verdict, c.verdict if c.verdict in ("improvement", "inconclusive") else ""
    text = f"{format_change(c.change)} {word}{interval} (n={c.baseline.n} → {c.candidate.n})"
    return _td(text, cls)


def trends_page(trends: Sequence[Trend], rows: Sequence[SeriesRow] = (), root: str = "") -> str:
    """Every series in a row: its newest value, n and interval, a sparkline of its newest points,
    its change against its baseline (farm qualify's rules: :mod:`.trends`); per metric a link to its
    trend page."""
    if not trends:
        return layout("Trends", "<p>no metrics in the store yet</p>", root)
    by_metric: dict[tuple[str, str, str, str], list[SeriesRow]] = {}
    for row in rows:
        by_metric.setdefault((row.suite, row.benchmark, row.metric, row.unit), []).append(row)
    regressions = sum(row.regression for row in rows)
    body = [f"<p>{len(rows)} series (a target, setup and parameters of a metric) in {len(trends)} metrics; "
            f"{regressions} regression{'s' * (regressions != 1)}. The sparkline draws the newest points (a run "
            "each), the change is the newest run against the newest saved baseline that measured the series "
            "(farm baseline save), else the run before it, judged as farm qualify judges (5 %, alpha 0.05): a "
            f"regression needs at least {MIN_VALUES} values a side.</p>"]
    head = ("series", "newest points", "newest", "n", "interval", "runs", "against", "change")
    table_rows = []
    for t in trends:
        mine = by_metric.get((t.suite, t.benchmark, t.metric, t.unit), [])
        if not mine:  # a setting (a sweep's requested rate), not a measurement: its trend page only
            continue
        table_rows.append([f'<th colspan="{len(head)}" class="metric"><a href="{e(trend_href(root, t))}">'
                           f"{e(t.label())}</a> <span class=\"runs\">up to {t.runs} runs a series</span></th>"])
        for row in mine:
            name = f"{row.target}/{row.setup}" + (f" [{human_params(row.params)}]" if row.params else "")
            latest = row.latest
            spark = sparkline(row.spark, f"{name}: the newest {len(row.spark)} medians, oldest first",
                              flag="regression" if row.regression else "")
            against = (f'{e(row.against)} (<a href="{e(run_href(root, row.against_run))}">{e(row.against_run)}</a>)'
                       if row.against_run else "")
            interval = (f"{human(latest.lo, row.unit)} – {human(latest.hi, row.unit)} ({latest.interval})"
                        if latest.n > 1 else "")
            table_rows.append([
                _td(name), f'<td class="spark">{spark}</td>',
                f'<td class="num"><a href="{e(run_href(root, latest.run_id))}">{e(human(latest.median, row.unit))}</a>'
                f"</td>", _td(latest.n, "num"), _td(interval, "num"), _td(row.points, "num"),
                f"<td>{against}</td>", _verdict_cell(row)])
    body.append(_table(head, table_rows, "series"))
    return layout("Trends", "".join(body), root)


def flag_points(series: Series, baselines: Mapping[str, Sequence[str]],
                values: Mapping[str, Sequence[float]] | None = None) -> list[str]:
    """Per point: ``regression`` when farm qualify's rules call it one against the point before
    (threshold :data:`REGRESSION_THRESHOLD`, alpha 0.05; the points' values from ``values``, run id →
    values) with at least two values a side, ``baseline`` when one of its runs is a saved baseline."""
    values = values or {}
    flags = []
    for i, p in enumerate(series.points):
        flag = ""
        if any(run in baselines for run in p.runs):
            flag = "baseline"
        if i:
            prev = series.points[i - 1]
            before = [v for run in prev.runs for v in values.get(run, ())]
            now = [v for run in p.runs for v in values.get(run, ())]
            if len(before) >= MIN_VALUES and len(now) >= MIN_VALUES:
                key = MetricKey(series.target, "", series.suite, series.benchmark, series.params, series.metric,
                                series.unit)
                c = qualify_compare(key, series.setup, series.setup, before, now, threshold=REGRESSION_THRESHOLD,
                                    alpha=REGRESSION_ALPHA)
                if c.verdict == REGRESSION:
                    flag = "regression"
        flags.append(flag)
    return flags


def trend_page(trend: Trend, series: Sequence[Series], baselines: Mapping[str, Sequence[str]],
               root: str = "../", values: Mapping[tuple[str, str, str], Mapping[str, Sequence[float]]] | None = None
               ) -> str:
    """``values``: per series (target, setup, params) its points' values by run id (for the flags)."""
    body = [f"<p>One chart per target, setup and parameters; a point is a run: its median with the interval "
            f"(95 % confidence interval of the median for n ≥ 6, else min–max). "
            f'<span class="flag-regression">Red</span>: a regression against the point before as farm qualify '
            f"judges one ({REGRESSION_THRESHOLD:.0%} the bad way, and significant: the ratio's interval, "
            f"Mann-Whitney U or ranges apart; at least {MIN_VALUES} values a side). "
            f'<span class="flag-baseline">Orange</span>: a saved baseline (farm baseline save).</p>']
    for s in series:
        flags = flag_points(s, baselines, (values or {}).get((s.target, s.setup, s.params)))
        shown = list(zip(s.points, flags))[-TREND_POINTS:]
        points = []
        for p, flag in shown:
            marks = ", ".join(baselines.get(run, [""])[0] for run in p.runs if run in baselines)
            tip = (f"{p.x}: {human(p.median, s.unit)} (n={p.n}, {p.interval} {human(p.lo, s.unit)} – "
                   f"{human(p.hi, s.unit)}){' REGRESSION' if flag == 'regression' else ''}"
                   f"{f' baseline {marks}' if marks else ''}")
            points.append(ChartPoint(p.x, p.median, p.lo, p.hi, tip, run_href(root, p.runs[-1]), flag))
        title = f"{s.target}/{s.setup}" + (f" [{human_params(s.params)}]" if s.params else "")
        body.append(f"<h2>{e(title)}</h2>" + trend_chart(points, s.unit, f"{trend.label()} {title}"))
        if len(s.points) > len(shown):
            body.append(f"<p>the newest {len(shown)} of {len(s.points)} points (farm history --json has all)</p>")
        body.append(_table(("run", "started", "n", "median", "interval", "flag"), (
            [f'<td><a href="{e(run_href(root, p.runs[-1]))}">{e(p.x)}</a></td>', _td(p.first[:19].replace("T", " ")),
             _td(p.n, "num"), _td(human(p.median, s.unit), "num"),
             _td(f"{human(p.lo, s.unit)} – {human(p.hi, s.unit)} ({p.interval})", "num"),
             _td(flag + (" " + ", ".join(n for run in p.runs for n in baselines.get(run, ())) if flag == "baseline"
                         else ""), f"flag-{flag}" if flag else "")]
            for p, flag in reversed(shown))))
    return layout(f"Trend: {trend.label()}", "".join(body), root)


# --- comparisons -------------------------------------------------------------------------------

def compare_index_page(pairs: Sequence[tuple[str, str]], run_ids: Sequence[str], live: bool, root: str = "") -> str:
    body = []
    if live and run_ids:
        options = "".join(f"<option>{e(r)}</option>" for r in reversed(run_ids))
        body.append(f'<form method="get" action="{root}compare.html"><label>first <select name="a">{options}'
                    f'</select></label> <label>setup <input name="sa" size="12"></label> <label>then <select name="b">'
                    f'{options}</select></label> <label>setup <input name="sb" size="12"></label> '
                    f'<button type="submit">compare</button> (setups: empty for all; two setups of one run '
                    f'compare them, e.g. kvm-guest against bare-linux)</form>')
    body.append("<h2>Each run with the one before it of its pipeline</h2>")
    body.append(_table(("first", "then"), (
        [f'<td><a href="{e(compare_href(root, a, b))}">{e(a)}</a></td>', _td(b)] for a, b in reversed(pairs)))
        if pairs else "<p>no pipeline has two runs yet</p>")
    return layout("Compare", "".join(body), root)


def compare_page(a: RunDetail, b: RunDetail, pairs: Sequence[Pair], only_a: Sequence[KeyFigure],
                 only_b: Sequence[KeyFigure], root: str = "../",
                 setups: tuple[str | None, str | None] = (None, None)) -> str:
    ra, rb = a.run, b.run
    sa_, sb_ = (setups[0] or ra.setups), (setups[1] or rb.setups)
    rule = pairs[0].rule if pairs else a.rule
    band = f"1 ± {rule.threshold:.1%}" if rule.threshold else "1.0"
    estimates = [p.estimate for p in pairs]
    conclusive = sum(x.conclusive and x.ratio is not None for x in estimates)
    body = [f'<p>first: <a href="{e(run_href(root, ra.run_id))}">{e(ra.run_id)}</a> ({e(ra.targets)}/{e(sa_)}), '
            f'then: <a href="{e(run_href(root, rb.run_id))}">{e(rb.run_id)}</a> ({e(rb.targets)}/{e(sb_)}). '
            f"Ratio = then / first, of the medians over boots (n = boots: a boot's repeats reduced to their median), "
            f"with its {rule.confidence * 100:g} % interval (Hodges-Lehmann, of the log ratio) and n a side; "
            f"<b>inconclusive</b> below {rule.min_n} boots a side or when the interval straddles {e(band)}. "
            f"{conclusive} of {len(pairs)} ratios conclusive.</p>"]

    def label(p: Pair) -> str:
        return f"{p.a.benchmark} {p.a.metric}" + (f" [{human_params(p.a.params)}]" if p.a.params else "")

    # a sweep's requested rate is a setting, its ratio always 1: not a bar
    body.append(ratio_chart([(label(p), p.ratio, verdict(p.ratio, direction(p.a.metric, p.a.unit, p.a.benchmark), x),
                              x.interval) for p, x in zip(pairs, estimates) if p.a.metric != "requested_throughput"],
                            f"{ra.run_id} vs {rb.run_id}"))

    def ratio_cell(x) -> str:
        if x.ratio is None:
            return _td("–", "num")
        text = f"{x.ratio:.3f} {x.interval_text()}"
        return _td(text if x.conclusive else f"inconclusive: {text}", "num" if x.conclusive else "num inconclusive")

    body.append(_table(("benchmark", "params", "metric", "target/setup", "n first", "median first", "n then",
                        "median then", "ratio [95 % CI]", "verdict"), (
        [_td(f"{p.a.suite}.{p.a.benchmark}"), _td(human_params(p.a.params)), _td(p.a.metric),
         _td(f"{p.a.target}/{p.a.setup} → {p.b.target}/{p.b.setup}"), _td(len(p.a.values), "num"),
         _td(human(p.a.median, p.a.unit), "num"), _td(len(p.b.values), "num"), _td(human(p.b.median, p.b.unit), "num"),
         ratio_cell(x), _td(x.verdict if x.conclusive else f"inconclusive: {x.why}",
                            "" if x.conclusive else "inconclusive")] for p, x in zip(pairs, estimates))))
    for what, figs in (("only in the first", only_a), ("only in the second", only_b)):
        if figs:
            body.append(f"<h2>{e(what)}</h2>" + _table(("target", "setup", "benchmark", "params", "metric", "n",
                                                         "median", "range"), _figure_rows(figs)))
    if ra.run_id == rb.run_id and setups[0] and setups[1]:
        return layout(f"Compare {setups[0]} → {setups[1]} in {ra.run_id}", "".join(body), root)
    return layout(f"Compare {ra.run_id} → {rb.run_id}", "".join(body), root)


# --- places ------------------------------------------------------------------------------------

def _tags(tags: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(tags.items()))


def _epoch(seconds: float | None) -> str:
    from datetime import datetime, timezone

    if not seconds:
        return ""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def places_page(now: Sequence[PlaceNow] | None, note: str, history: Sequence[PlaceRuns], root: str = "") -> str:
    """The farm's places: from the coordinator (``now``; None when none was reached, ``note`` says
    why) who holds each and its health, and from the store each one's runs, last run and last
    failure."""
    known = {p.name: p for p in now or ()}
    runs = {h.name: h for h in history}
    names = sorted(set(known) | set(runs))
    body = [f"<p>Held by and health: {e(note)}. Runs: the newest runs in the store that name a place "
            f"(run.json <code>place</code>; farm run --farm).</p>"]
    if not names:
        body.append("<p>no places: no coordinator answered and no run in the store ran on a place</p>")
        return layout("Places", "".join(body), root)
    rows = []
    for name in names:
        p, h = known.get(name), runs.get(name)
        if p is not None:
            held = p.holder or ("reserved" if p.reservation else "free")
            health, since, tags = p.health, _epoch(p.since), p.tags
        else:
            held = "?" if now is None else "(not on the coordinator)"
            health, since, tags = (f"{h.health} (recorded by its last run)" if h and h.health else "?"), "", h.tags
        health_cls = "pass" if health == "ok" else ("" if health.startswith("?") else "failure")
        last = (f'<td><a href="{e(run_href(root, h.last.run_id))}">{e(h.last.run_id)}</a> '
                f'<span class="{e(h.last.status)}">{e(h.last.status)}</span> {e(h.last.started[:16])}</td>'
                if h else "<td></td>")
        failure = (f'<td><a href="{e(run_href(root, h.last_failure.run_id))}">{e(h.last_failure.run_id)}</a> '
                   f'<span class="failed">{e(h.last_failure.status)}</span>'
                   f'{e(", stopped at " + h.last_failure.stopped_at if h.last_failure.stopped_at else "")}</td>'
                   if h and h.last_failure else "<td></td>")
        rows.append([f'<td><a href="{e(place_href(root, name))}">{e(name)}</a></td>' if h else _td(name),
                     _td(_tags(tags)), _td(held, "held" if held not in ("free", "?") else ""), _td(since),
                     _td(health, health_cls), _td(h.runs if h else 0, "num"), last, failure])
    body.append(_table(("place", "tags", "held by", "since", "health", "runs", "last run", "last failure"), rows,
                       "places"))
    return layout("Places", "".join(body), root)


def health_strip(events: Sequence, root: str) -> str:
    """A place's runs over time as a strip of cells, oldest left, coloured by the run's junit
    outcome (pass, a test failure, a lab error), each a link to its run; a black bar over a cell
    where the run recorded the place's health (its text in the hover)."""
    if not events:
        return ""
    cell, gap, h = max(4, min(24, 760 // len(events) - 1)), 1, 22
    width = max(200, len(events) * (cell + gap) + 10)
    out = [f'<svg class="strip" viewBox="0 0 {width} {h + 34}" width="{width}" height="{h + 34}" role="img" '
           f'aria-label="runs over time" xmlns="http://www.w3.org/2000/svg"><title>its runs, oldest left</title>']
    for i, ev in enumerate(events):
        x = 5 + i * (cell + gap)
        tip = f"{ev.run_id} {ev.started[:16].replace('T', ' ')}: {ev.status} (junit {ev.junit})" + (
            f", stopped at {ev.stopped_at}" if ev.stopped_at else "") + (f"; health {ev.health}" if ev.health else "")
        out.append(f'<a href="{e(run_href(root, ev.run_id))}"><rect x="{x}" y="8" width="{cell}" height="{h}" '
                   f'class="{e(ev.junit or "none")}"><title>{e(tip)}</title></rect></a>')
        if ev.health:
            out.append(f'<line x1="{x}" x2="{x + cell}" y1="4" y2="4" class="health">'
                       f'<title>{e(ev.health)}</title></line>')
    out.append(f'<text x="5" y="{h + 24}">{e(events[0].started[:10])}</text>'
               f'<text x="{width - 5}" y="{h + 24}" text-anchor="end">{e(events[-1].started[:10])}</text></svg>')
    legend = "".join(f'<span class="key {k}"></span> {e(text)} ' for k, text in (
        ("pass", "passed"), ("failure", "a test failure (the image, a benchmark)"),
        ("error", "the lab's error (infrastructure)"), ("health", "the place's health recorded")))
    out.append(f'<p class="legend">{legend}</p>')
    return "".join(out)


def place_page(d: PlaceDetail, now: PlaceNow | None, note: str, root: str = "../") -> str:
    """A place's page (as LAVA's device page): what it is and how it is now, its outcomes, its runs
    over time with the health they recorded, the newest of its jobs."""
    facts = [("tags", _tags(now.tags if now else d.tags)), ("coordinator", d.coordinator)]
    if now is not None:
        facts += [("held by", now.holder or ("reserved" if now.reservation else "free")),
                  ("since", _epoch(now.since)), ("health now", now.health)]
    else:
        facts.append(("now", note))
    body = [_table(("", ""), ([f"<th>{e(k)}</th>", _td(v, ("pass" if v == "ok" else "failure")
                                                      if k == "health now" else "")] for k, v in facts if v))]
    body.append(f'<h2>Outcomes</h2><p><a href="{e(root + quote(facet_path("place", d.name)))}">{d.total} runs</a>: '
                + ", ".join(f'<span class="{e(s)}">{n} {e(s)}</span>' for s, n in d.outcomes) + "</p>")
    health = [ev for ev in d.timeline if ev.health]
    body.append(f"<h2>Over time</h2><p>its newest {len(d.timeline)} runs, oldest left, each a link to its run; "
                "a black bar over a run: it recorded the place's health (farm health: 3 lab failures in a row tag "
                "it unhealthy)</p>" + health_strip(d.timeline, root))
    if health:
        body.append("<h3>Health it recorded</h3>" + _table(("run", "when", "health", "run status"), (
            [f'<td><a href="{e(run_href(root, ev.run_id))}">{e(ev.run_id)}</a></td>',
             _td(ev.started[:19].replace("T", " ")), _td(ev.health, "pass" if ev.health == "ok" else "failure"),
             _td(ev.status, ev.status)] for ev in reversed(health))))
    body.append(f"<h2>Jobs</h2><p>the newest {len(d.recent)} of {d.total}; "
                f'<a href="{e(root + quote(facet_path("place", d.name)))}">all of its runs</a></p>')
    place_at = RUN_COLUMNS.index("place")  # every run's is this place: not a column here
    body.append(_table(RUN_COLUMNS[:place_at] + RUN_COLUMNS[place_at + 1:],
                       [row[:place_at] + row[place_at + 1:] for row in run_rows(d.recent, root)], "runs"))
    return layout(f"Place {d.name}", "".join(body), root)


def not_found_page(what: str, root: str = "") -> str:
    return layout("Not found", f"<p>{e(what)}</p>", root)
