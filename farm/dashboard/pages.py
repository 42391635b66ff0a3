"""The dashboard's pages: each function gathers what its page shows (from :mod:`.data`, :mod:`.runlist`,
:mod:`.trends`) into plain attrs objects and renders the page's template (``templates/<page>.html``,
:mod:`.render`: every value escaped there). A run's page and its figures: :mod:`.runpage`."""

from __future__ import annotations

import statistics
from typing import Callable, Mapping, Sequence

import attrs

from farm.results.compare import verdict
from farm.results.figures import KeyFigure
from farm.results.identity import MetricKey
from farm.results.qualify import REGRESSION, compare as qualify_compare, direction, format_change
from farm.results.rundiff import Difference
from farm.store.changes import Change, Found
from farm.store.history import Series

from .data import Pair, PlaceDetail, PlaceNow, PlaceRuns, RunDetail, Trend
from .formats import duration, epoch, human, human_params
from .paths import facet_href, page_file, run_href
from .render import render
from .runlist import FACETS, FIELDS, Facet, RunFilter
from .svg import ChartPoint, Sparkline, StripCell, TrendChart, ratio_chart, sparkline, strip, trend_chart
from .trends import MIN_VALUES, SeriesRow

#: a trend point is flagged when farm qualify's rules call it a regression against the point before
#: (this threshold, alpha 0.05) with at least two values a side
REGRESSION_THRESHOLD = 0.05
REGRESSION_ALPHA = 0.05
#: how many points of a series a trend page draws (the newest)
TREND_POINTS = 200


@attrs.frozen
class Cell:
    """A table cell's text and its CSS class."""

    text: object
    cls: str = ""


@attrs.frozen
class Fact:
    """A row of a page's table of facts: a name, its value (a link when ``href``) and the value's class."""

    name: str
    text: object
    cls: str = ""
    href: str = ""


def not_found_page(what: str, root: str = "") -> str:
    return render("message.html", title="Not found", text=what, root=root)


def error_page(what: str, root: str = "") -> str:
    """A page that failed (farm serve's 500)."""
    return render("message.html", title="Error", text=what, root=root)


# --- the run list ------------------------------------------------------------------------------

class ListLinks:
    """Where a run list's links go. Static: ``runs-N.html`` / ``runs/<filter>/<value>/N.html`` pages (one filter
    at a time); live (``farm serve``): ``index.html?<filters>&page=N``, each value narrowing the
    filter shown."""

    def __init__(self, root: str, flt: RunFilter, live: bool, facet: tuple[str, str] | None = None):
        self.root, self.flt, self.live, self.facet = root, flt, live, facet

    def page(self, n: int) -> str:
        if self.live:
            return f"{self.root}index.html{self.flt.query(page=n if n > 1 else None)}"
        if self.facet:
            return facet_href(self.root, *self.facet, n)
        return self.root + page_file(n)

    def value(self, field: str, value: str) -> str:
        if self.live:
            return f"{self.root}index.html{attrs.evolve(self.flt, **{field: value}).query()}"
        return facet_href(self.root, field, value)


@attrs.frozen
class Named:
    """A name in a run list's cell: a link to the runs with that value (``href``), or plain text."""

    text: str
    href: str = ""


@attrs.frozen
class RunRow:
    """A run in a run list."""

    run_id: str
    status: str
    status_names: tuple[Named, ...]
    junit: str                  # the junit outcome when it is not a pass, else ""
    started: str
    took: str
    who: str
    pipeline: tuple[Named, ...]
    targets: tuple[Named, ...]
    place: str
    setups: tuple[Named, ...]
    commit: str
    images: str
    kernels: str


RUN_COLUMNS = ("run", "status", "started (UTC)", "took", "who", "pipeline", "board", "place", "setup", "commit",
               "image, kernel")


def run_rows(rows: Sequence, links: ListLinks | None = None) -> list[RunRow]:
    """The run list's rows; ``links`` makes the board, place, pipeline, setup and status filter links."""

    def names(field: str, text: str) -> tuple[Named, ...]:
        if not text:
            return ()
        if links is None:
            return (Named(text.replace(",", ", ")),)
        values = text.split(",") if field in ("target", "setup") else [text]
        return tuple(Named(v, links.value(field, v)) for v in values)

    return [RunRow(r.run_id, r.status, names("status", r.status), r.junit if r.junit not in ("", "pass") else "",
                   r.started[:16].replace("T", " "), duration(r.duration_s), r.who, names("pipeline", r.pipeline),
                   names("target", r.targets), r.place, names("setup", r.setups), r.git_sha[:8],
                   r.images.replace(",", ", "), r.kernels.replace(",", ", ")) for r in rows]


@attrs.frozen
class PagerItem:
    text: str
    href: str = ""              # "": this page or a gap ("…")
    rel: str = ""
    current: bool = False       # this page


@attrs.frozen
class Pager:
    page: int
    pages: int
    items: tuple[PagerItem, ...]


def pager(page: int, pages: int, href: Callable[[int], str]) -> Pager | None:
    """First, previous, the pages around this one, next and last: a few links at any length; None for
    one page."""
    if pages <= 1:
        return None
    shown = sorted({1, pages, *range(max(1, page - 3), min(pages, page + 3) + 1)})
    items, before = [], 0
    if page > 1:
        items.append(PagerItem("‹ newer", href(page - 1), "prev"))
    for p in shown:
        if p - before > 1:
            items.append(PagerItem("…"))
        items.append(PagerItem(str(p), current=True) if p == page else PagerItem(str(p), href(p)))
        before = p
    if page < pages:
        items.append(PagerItem("older ›", href(page + 1), "next"))
    return Pager(page, pages, tuple(items))


@attrs.frozen
class FormField:
    """A field of the live run list's filter form: a list of values (``options``), a date or a commit."""

    name: str
    label: str
    kind: str                   # "select", "date", "commit"
    value: str
    options: tuple[tuple[str, str], ...] = ()   # (value, text)


def filter_form(flt: RunFilter, facets: Sequence[Facet]) -> list[FormField]:
    """The live run list's filter: a GET form (no script), a select per value list, dates, a commit."""
    values = {f.field: f.values for f in facets}
    fields = []
    for name, label in FIELDS:
        current = getattr(flt, name)
        if name in FACETS:
            options = [("", "any")] + [(v, f"{v} ({n})") for v, n in values.get(name, ())]
            if current and current not in {v for v, _ in options}:
                options.append((current, current))
            fields.append(FormField(name, label, "select", current, tuple(options)))
        else:
            fields.append(FormField(name, label, "date" if name in ("since", "until") else "commit", current))
    return fields


@attrs.frozen
class FacetNav:
    """A filter's values on the static run list, each linked to its page of runs."""

    label: str
    values: tuple[tuple[str, str, int], ...]   # (value, href, runs)
    more: int                                  # values not shown


def facet_nav(facets: Sequence[Facet], links: ListLinks, limit: int = 12) -> list[FacetNav]:
    return [FacetNav(f.label, tuple((v, links.value(f.field, v), n) for v, n in f.values[:limit]),
                     max(0, len(f.values) - limit)) for f in facets if f.values]


def runs_page(rows: Sequence, page: int, pages: int, total: int, root: str = "", *, flt: RunFilter = RunFilter(),
              facets: Sequence[Facet] = (), live: bool = False, facet: tuple[str, str] | None = None,
              error: str = "") -> str:
    """The runs ``flt`` selects, newest first, a page of them; live, a filter form above them, on the
    static site a link per value of each filter (its pages list the runs with that value)."""
    links = ListLinks(root, flt, live, facet)
    return render("runs.html", root=root, error=error, form=filter_form(flt, facets) if live else None,
                  nav=facet_nav(facets, links), flt=flt, total=total, head=RUN_COLUMNS, rows=run_rows(rows, links),
                  paging=pager(page, pages, links.page))


# --- trends ------------------------------------------------------------------------------------

def change(row: SeriesRow) -> Cell:
    """A series' change against its baseline, and its class (a regression, an improvement, inconclusive)."""
    c = row.comparison
    if c is None:
        return Cell("one point: nothing to compare" if row.points == 1 else "")
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
    return Cell(f"{format_change(c.change)} {word}{interval} (n={c.baseline.n} → {c.candidate.n})", cls)


@attrs.frozen
class SeriesLine:
    """A series' row of the trends index."""

    row: SeriesRow
    name: str
    spark: Sparkline | None
    interval: str
    change: Cell


def series_name(target: str, setup: str, params: str) -> str:
    return f"{target}/{setup}" + (f" [{human_params(params)}]" if params else "")


def trends_page(trends: Sequence[Trend], rows: Sequence[SeriesRow] = (), root: str = "") -> str:
    """Every series in a row: its newest value, n and interval, a sparkline of its newest points,
    its change against its baseline (farm qualify's rules: :mod:`.trends`); per metric a link to its
    trend page."""
    by_metric: dict[tuple[str, str, str, str], list[SeriesRow]] = {}
    for row in rows:
        by_metric.setdefault((row.suite, row.benchmark, row.metric, row.unit), []).append(row)
    groups = []
    for t in trends:
        lines = []
        for row in by_metric.get((t.suite, t.benchmark, t.metric, t.unit), []):
            name, latest = series_name(row.target, row.setup, row.params), row.latest
            spark = sparkline(row.spark, f"{name}: the newest {len(row.spark)} medians, oldest first",
                              flag="regression" if row.regression else "")
            interval = (f"{human(latest.lo, row.unit)} – {human(latest.hi, row.unit)} ({latest.interval})"
                        if latest.n > 1 else "")
            lines.append(SeriesLine(row, name, spark, interval, change(row)))
        if lines:  # else a setting (a sweep's requested rate), not a measurement: its trend page only
            groups.append((t, lines))
    return render("trends.html", root=root, trends=trends, series=len(rows), groups=groups,
                  regressions=sum(row.regression for row in rows), min_values=MIN_VALUES)


def flag_points(series: Series, baselines: Mapping[str, Sequence[str]],
                values: Mapping[str, Sequence[float]] | None = None) -> list[str]:
    """Per point: ``regression`` when farm qualify's rules call it one against the point before
    (threshold :data:`REGRESSION_THRESHOLD`, alpha 0.05; the points' values from ``values``, run id →
    values) with at least :data:`MIN_VALUES` (the rule's 5) values a side, ``baseline`` when one of its runs is a
    saved baseline."""
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


@attrs.frozen
class TrendPoint:
    """A point of a trend page's table: a run, with its flag and the baselines saved from it."""

    run_id: str
    x: str
    started: str
    n: int
    median: str
    interval: str
    flag: str
    baselines: str
    change: str = ""  # the id of the change point this run is the first after (farm changes)


@attrs.frozen
class TrendSeries:
    """A series of a trend page: its chart and table."""

    title: str
    chart: TrendChart | None
    points: int                 # the series' points (the chart draws the newest TREND_POINTS)
    shown: tuple[TrendPoint, ...]   # newest first


def trend_page(trend: Trend, series: Sequence[Series], baselines: Mapping[str, Sequence[str]],
               root: str = "../", values: Mapping[tuple[str, str, str], Mapping[str, Sequence[float]]] | None = None
               ) -> str:
    """``values``: per series (target, setup, params) its points' values by run id (for the flags)."""
    from farm.store.changes import series_changes

    charts = []
    for s in series:
        flags = flag_points(s, baselines, (values or {}).get((s.target, s.setup, s.params)))
        # the first point after each change point of the series (farm changes) is marked, where nothing else is
        changes = {c.after[0].x: c for c in series_changes(s)}
        shown = list(zip(s.points, flags))[-TREND_POINTS:]
        points = []
        for p, flag in shown:
            marks = ", ".join(baselines.get(run, [""])[0] for run in p.runs if run in baselines)
            change = changes.get(p.x)
            tip = (f"{p.x}: {human(p.median, s.unit)} (n={p.n}, {p.interval} {human(p.lo, s.unit)} – "
                   f"{human(p.hi, s.unit)}){' REGRESSION' if flag == 'regression' else ''}"
                   f"{f' baseline {marks}' if marks else ''}"
                   f"{f' CHANGE {change.id}: {change.judged} {change.ratio_text()}' if change else ''}")
            points.append(ChartPoint(p.x, p.median, p.lo, p.hi, tip, run_href(root, p.runs[-1]),
                                     flag or ("change" if change else "")))
        title = series_name(s.target, s.setup, s.params)
        rows = tuple(TrendPoint(p.runs[-1], p.x, p.first[:19].replace("T", " "), p.n, human(p.median, s.unit),
                                f"{human(p.lo, s.unit)} – {human(p.hi, s.unit)} ({p.interval})", flag,
                                ", ".join(n for run in p.runs for n in baselines.get(run, ())),
                                changes[p.x].id if p.x in changes else "")
                     for p, flag in reversed(shown))
        charts.append(TrendSeries(title, trend_chart(points, s.unit, f"{trend.label()} {title}"), len(s.points), rows))
    return render("trend.html", root=root, trend=trend, charts=charts, threshold=REGRESSION_THRESHOLD,
                  min_values=MIN_VALUES)


# --- comparisons -------------------------------------------------------------------------------

def compare_index_page(pairs: Sequence[tuple[str, str]], run_ids: Sequence[str], live: bool, root: str = "") -> str:
    return render("compare_index.html", root=root, pairs=pairs, run_ids=run_ids, live=live)


def _ratio(p: Pair) -> Cell:
    x = p.estimate
    if x.ratio is None:
        return Cell("–", "num")
    text = f"{x.ratio:.3f} {x.interval_text()}"
    return Cell(text if x.conclusive else f"inconclusive: {text}", "num" if x.conclusive else "num inconclusive")


def compare_row(p: Pair) -> list[Cell]:
    """A measurement of both runs: n and median a side, the ratio with its interval, the verdict."""
    x = p.estimate
    return [Cell(f"{p.a.suite}.{p.a.benchmark}"), Cell(human_params(p.a.params)), Cell(p.a.metric),
            Cell(f"{p.a.target}/{p.a.setup} → {p.b.target}/{p.b.setup}"), Cell(len(p.a.values), "num"),
            Cell(human(p.a.median, p.a.unit), "num"), Cell(len(p.b.values), "num"),
            Cell(human(p.b.median, p.b.unit), "num"), _ratio(p),
            Cell(x.verdict if x.conclusive else f"inconclusive: {x.why}", "" if x.conclusive else "inconclusive")]


def compare_page(a: RunDetail, b: RunDetail, pairs: Sequence[Pair], only_a: Sequence[KeyFigure],
                 only_b: Sequence[KeyFigure], root: str = "../",
                 setups: tuple[str | None, str | None] = (None, None)) -> str:
    ra, rb = a.run, b.run
    rule = pairs[0].rule if pairs else a.rule

    def label(p: Pair) -> str:
        return f"{p.a.benchmark} {p.a.metric}" + (f" [{human_params(p.a.params)}]" if p.a.params else "")

    # a sweep's requested rate is a setting, its ratio always 1: not a bar
    chart = ratio_chart([(label(p), p.ratio, verdict(p.ratio, direction(p.a.metric, p.a.unit, p.a.benchmark),
                                                     p.estimate), p.estimate.interval)
                         for p in pairs if p.a.metric != "requested_throughput"],
                        f"{ra.run_id} vs {rb.run_id}")
    title = (f"Compare {setups[0]} → {setups[1]} in {ra.run_id}" if ra.run_id == rb.run_id and setups[0] and setups[1]
             else f"Compare {ra.run_id} → {rb.run_id}")
    return render("compare.html", root=root, title=title, a=ra, b=rb, setup_a=setups[0] or ra.setups,
                  setup_b=setups[1] or rb.setups, rule=rule,
                  band=f"1 ± {rule.threshold:.1%}" if rule.threshold else "1.0",
                  conclusive=sum(p.estimate.conclusive and p.estimate.ratio is not None for p in pairs),
                  pairs=len(pairs), chart=chart, rows=[compare_row(p) for p in pairs],
                  only=[(what, figs) for what, figs in (("only in the first", only_a), ("only in the second", only_b))
                        if figs])


# --- places ------------------------------------------------------------------------------------

def tags_text(tags: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(tags.items()))


@attrs.frozen
class PlaceLine:
    """A place's row of the places page: the coordinator's side (``held``, ``since``, ``health``: "?"
    when no coordinator answered) and the store's (``history``: None when no run in the store ran on it)."""

    name: str
    tags: str
    held: Cell
    since: str
    health: Cell
    history: PlaceRuns | None


def place_line(name: str, p: PlaceNow | None, h: PlaceRuns | None, asked: bool) -> PlaceLine:
    if p is not None:
        held = p.holder or ("reserved" if p.reservation else "free")
        health, since, tags = p.health, epoch(p.since), p.tags
    else:
        held = "(not on the coordinator)" if asked else "?"
        health, since, tags = (f"{h.health} (recorded by its last run)" if h and h.health else "?"), "", h.tags
    return PlaceLine(name, tags_text(tags), Cell(held, "held" if held not in ("free", "?") else ""), since,
                     Cell(health, "pass" if health == "ok" else ("" if health.startswith("?") else "failure")), h)


def places_page(now: Sequence[PlaceNow] | None, note: str, history: Sequence[PlaceRuns], root: str = "") -> str:
    """The farm's places: from the coordinator (``now``; None when none was reached, ``note`` says
    why) who holds each and its health, and from the store each one's runs, last run and last
    failure."""
    known = {p.name: p for p in now or ()}
    runs = {h.name: h for h in history}
    return render("places.html", root=root, note=note, places=[
        place_line(name, known.get(name), runs.get(name), now is not None) for name in sorted(set(known) | set(runs))])


def place_page(d: PlaceDetail, now: PlaceNow | None, note: str, root: str = "../") -> str:
    """A place's page (as LAVA's device page): what it is and how it is now, its outcomes, its runs
    over time with the health they recorded, the newest of its jobs."""
    facts = [Fact("tags", tags_text(now.tags if now else d.tags)), Fact("coordinator", d.coordinator)]
    if now is not None:
        facts += [Fact("held by", now.holder or ("reserved" if now.reservation else "free")),
                  Fact("since", epoch(now.since)), Fact("health now", now.health, "pass" if now.health == "ok"
                                                        else "failure")]
    else:
        facts.append(Fact("now", note))
    cells = [StripCell(f"{ev.run_id} {ev.started[:16].replace('T', ' ')}: {ev.status} (junit {ev.junit})"
                       + (f", stopped at {ev.stopped_at}" if ev.stopped_at else "")
                       + (f"; health {ev.health}" if ev.health else ""), run_href(root, ev.run_id), ev.junit or "none",
                       ev.health) for ev in d.timeline]
    place_at = RUN_COLUMNS.index("place")  # every run's is this place: not a column here
    return render("place.html", root=root, d=d, facts=[f for f in facts if f.text],
                  strip=strip(cells, d.timeline[0].started[:10], d.timeline[-1].started[:10]) if cells else None,
                  health=[ev for ev in reversed(d.timeline) if ev.health],
                  head=RUN_COLUMNS[:place_at] + RUN_COLUMNS[place_at + 1:], rows=run_rows(d.recent))


# --- change points -----------------------------------------------------------------------------

@attrs.frozen
class ChangeLine:
    """A change point as the changes page shows it: its series' name, the change, and what differs between the
    runs on its two sides (farm diff)."""

    change: Change
    name: str
    text: str
    cls: str
    differences: tuple[Difference, ...]


def changes_page(found: Found, differences: Mapping[tuple[str, str], Sequence[Difference]], root: str = "") -> str:
    """Every change point of the store (``farm changes``), grouped by series, newest first within it, each with
    its runs and the inputs that differ between the last run before it and the first after (``farm diff``)."""
    groups: dict[str, tuple[str, list[ChangeLine]]] = {}
    for c in found.changes:
        s = c.series
        label = f"{s.suite}.{s.benchmark} {s.metric} ({s.unit})"
        _, lines = groups.setdefault(label, (label, []))
        step = c.step
        text = (f"{c.judged}: {c.ratio_text()}, p {step.p_value:.2g}; median "
                f"{human(statistics.median(step.before), s.unit)} → {human(statistics.median(step.after), s.unit)}")
        pair = (c.before[-1].x, c.after[0].x)
        lines.append(ChangeLine(c, series_name(s.target, s.setup, s.params), text,
                                "regression" if c.judged == "worse" else "", tuple(differences.get(pair, ()))))
    return render("changes.html", root=root, groups=list(groups.values()), found=found,
                  changes=len(found.changes))
