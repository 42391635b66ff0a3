"""The dashboard's pages, rendered from :mod:`.data` as HTML strings. Pure functions; every text
that comes from a run (names, console output, messages) goes through :func:`e`."""

from __future__ import annotations

import math
import re
from html import escape
from typing import Iterable, Mapping, Sequence
from urllib.parse import quote

from farm.boot.watch import LINUX_FATAL, UBOOT_FATAL
from farm.results.compare import verdict
from farm.results.qualify import direction
from farm.measure.units import human, human_params
from farm.results.figures import KeyFigure
from farm.store.history import Series

from .data import Pair, PlaceNow, PlaceRuns, RunDetail, SweepCurve, Trend, slug
from .svg import ChartPoint, Curve, ratio_chart, trend_chart, xy_chart

#: a trend point is flagged when its median moved this far the bad way from the previous point and
#: their intervals do not overlap (the noise rule farm qualify uses for few repeats)
REGRESSION_THRESHOLD = 0.05
#: how many points of a series a trend page draws (the newest)
TREND_POINTS = 200
#: console lines that end a run (farm.boot.watch), minus the banners, which are only fatal the second time
_FATAL = re.compile("|".join(f.pattern for f in (*LINUX_FATAL[:2], *UBOOT_FATAL)))

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


def runs_page(rows: Sequence, page: int, pages: int, total: int, root: str = "") -> str:
    body = [f"<p>{total} runs, newest first.</p>"]
    body.append(_table(("run", "status", "junit", "who", "started", "duration", "pipeline", "target", "setup",
                        "image", "kernel"), (
        [f'<td><a href="{e(run_href(root, r.run_id))}">{e(r.run_id)}</a></td>', _td(r.status, r.status),
         _td(r.junit, r.junit), _td(r.who), _td(r.started[:19].replace("T", " ")), _td(_duration(r.duration_s)),
         _td(r.pipeline), _td(r.targets), _td(r.setups), _td(r.images), _td(r.kernels)] for r in rows), "runs"))
    if pages > 1:
        links = [f'<a href="{root}{page_file(p)}">{p}</a>' if p != page else f"<b>{p}</b>" for p in range(1, pages + 1)]
        body.append("<p>pages: " + " ".join(links) + "</p>")
    return layout("Runs", "".join(body), root)


# --- a run -------------------------------------------------------------------------------------

def highlight_console(text: str, excerpts: Iterable[str]) -> tuple[str, int]:
    """The console as escaped HTML lines, the failing excerpt (lines of a failed stage's message, or
    a fatal console line) in ``<mark>``; and how many lines were marked."""
    wanted = {line.strip() for chunk in excerpts for line in chunk.splitlines() if len(line.strip()) >= 4}
    out, marked = [], 0
    for line in text.splitlines():
        if line.strip() in wanted or _FATAL.search(line):
            out.append(f'<mark id="fail-{marked}">{e(line)}</mark>')
            marked += 1
        else:
            out.append(e(line))
    return "\n".join(out), marked


def _figure_rows(figures: Sequence[KeyFigure]) -> list[list[str]]:
    return [[_td(f.target), _td(f.setup), _td(f"{f.suite}.{f.benchmark}"), _td(human_params(f.params)),
             _td(f.metric),
             _td(len(f.values), "num"), _td(human(f.median, f.unit), "num"),
             _td(f"{human(min(f.values), f.unit)} – {human(max(f.values), f.unit)}", "num")] for f in figures]


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


def run_page(d: RunDetail, root: str = "../") -> str:
    r = d.run
    facts = [("status", r.status), ("junit outcome", r.junit), ("kind", r.kind), ("who", r.who),
             ("started", r.started), ("finished", r.finished), ("duration", _duration(r.duration_s)),
             ("pipeline", r.pipeline), ("targets", r.targets), ("setups", r.setups), ("images", r.images),
             ("kernels", r.kernels), ("git sha", r.git_sha), ("farm version", r.farm_version), ("CI job", r.ci_job),
             ("stopped at", r.stopped_at), ("run directory", r.path)]
    body = [_table(("", ""), ([f"<th>{e(k)}</th>", _td(v, str(v) if k in ("status", "junit outcome") else "")]
                              for k, v in facts if v not in (None, "")))]
    if d.previous:
        body.append(f'<p><a href="{e(compare_href(root, d.previous, r.run_id))}">compare with the run before it '
                    f'({e(d.previous)})</a></p>')
    setups = sorted({f.setup for f in d.figures})
    if len(setups) > 1:
        links = (f'<a href="{e(root + quote(setup_compare_path(r.run_id, setups[0], other)))}">'
                 f'{e(setups[0])} → {e(other)}</a>' for other in setups[1:])
        body.append("<p>compare its setups: " + ", ".join(links) + "</p>")
    for q in d.qualifications:
        body.append(f'<p class="{"pass" if q.passed else "failure"}">qualify against {e(q.baseline)}: '
                    f'{e(q.headline)}</p>')
    body.append(phases_line(d.stages, r.duration_s))
    body.append("<h2>Stages</h2>" + _table(("stage", "outcome", "seconds", "message"), (
        [_td(s.name), _td(s.kind, s.kind), _td(f"{s.seconds:.1f}" if s.seconds is not None else "", "num"),
         f"<td><pre>{e(s.message)}</pre></td>" if s.message else "<td></td>"] for s in d.stages)))
    body += sweep_charts(d.sweeps)
    body.append("<h2>Key figures</h2>")
    body.append(_table(("target", "setup", "benchmark", "params", "metric", "n", "median", "range"),
                       _figure_rows(d.figures)) if d.figures else "<p>no measured values</p>")
    if d.failed:
        body.append("<p class=\"failure\">failed benchmarks: " + e(", ".join(
            sorted({f"{x.suite}.{x.benchmark} {x.target}/{x.setup}" for x in d.failed}))) + "</p>")
    if d.boots:
        body.append("<h2>Boots</h2>" + _table(("target", "setup", "repeat", "kernel", "image key", "cpus", "boot s"), (
            [_td(b.target), _td(b.setup), _td(b.repeat, "num"), _td(b.kernel), _td(b.image_key[:16]),
             _td(b.cpus, "num"), _td(_num(b.boot_seconds), "num")] for b in d.boots)))
    if d.images:
        body.append("<h2>Images</h2>" + _table(("image", "artifact", "sha256"), (
            [_td(i.image), _td(i.artifact), f"<td><code>{e(i.sha256)}</code></td>"] for i in d.images)))
    failing = [s.message for s in d.stages if s.kind in ("failure", "error")]
    for c in d.consoles:
        html_text, marked = highlight_console(c.text, failing)
        jump = f' <a href="#fail-0">first of {marked} failing lines</a>' if marked else ""
        cut = " (its end: the log was longer)" if c.truncated else ""
        body.append(f"<h2>Console of {e(c.target)}{cut}</h2><p>{jump}</p><pre class=\"console\">{html_text}</pre>")
    if d.artifacts:
        body.append("<h2>Files</h2>" + _table(("path in the run directory", "bytes"), (
            [_td(a.path), _td(a.size, "num")] for a in d.artifacts)))
    return layout(f"Run {r.run_id}", "".join(body), root)


# --- trends ------------------------------------------------------------------------------------

def trends_page(trends: Sequence[Trend], root: str = "") -> str:
    if not trends:
        return layout("Trends", "<p>no metrics in the store yet</p>", root)
    return layout("Trends", _table(("metric", "runs"), (
        [f'<td><a href="{e(trend_href(root, t))}">{e(t.label())}</a></td>', _td(t.runs, "num")] for t in trends)),
        root)


def flag_points(series: Series, baselines: Mapping[str, Sequence[str]]) -> list[str]:
    """Per point: ``regression`` when it moved beyond the threshold the bad way from the previous
    point with no overlap of their intervals, ``baseline`` when one of its runs is a saved baseline."""
    better = direction(series.metric, series.unit)
    flags = []
    for i, p in enumerate(series.points):
        flag = ""
        if any(run in baselines for run in p.runs):
            flag = "baseline"
        if i and better:
            prev = series.points[i - 1]
            change = (p.median - prev.median) / prev.median if prev.median else 0.0
            apart = p.hi < prev.lo or p.lo > prev.hi
            if apart and change * better < -REGRESSION_THRESHOLD:
                flag = "regression"
        flags.append(flag)
    return flags


def trend_page(trend: Trend, series: Sequence[Series], baselines: Mapping[str, Sequence[str]],
               root: str = "../") -> str:
    body = [f"<p>One chart per target, setup and parameters; a point is a run: its median with the interval "
            f"(95 % confidence interval of the median for n ≥ 6, else min–max). "
            f'<span class="flag-regression">Red</span>: moved more than {REGRESSION_THRESHOLD:.0%} the bad way '
            f'from the point before, intervals apart. <span class="flag-baseline">Orange</span>: a saved '
            f"baseline (farm baseline save).</p>"]
    for s in series:
        flags = flag_points(s, baselines)
        shown = list(zip(s.points, flags))[-TREND_POINTS:]
        points = []
        for p, flag in shown:
            marks = ", ".join(baselines.get(run, [""])[0] for run in p.runs if run in baselines)
            tip = (f"{p.x}: {human(p.median, s.unit)} (n={p.n}, {p.interval} {human(p.lo, s.unit)} – "
                   f"{human(p.hi, s.unit)}){' REGRESSION' if flag == 'regression' else ''}"
                   f"{f' baseline {marks}' if marks else ''}")
            points.append(ChartPoint(p.x, p.median, p.lo, p.hi, tip, run_href(root, p.runs[-1]), flag))
        title = f"{s.target}/{s.setup}" + (f" [{s.params}]" if s.params else "")
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
    body = [f'<p>first: <a href="{e(run_href(root, ra.run_id))}">{e(ra.run_id)}</a> ({e(ra.targets)}/{e(sa_)}), '
            f'then: <a href="{e(run_href(root, rb.run_id))}">{e(rb.run_id)}</a> ({e(rb.targets)}/{e(sb_)}). '
            "Ratio = then / first, of the medians.</p>"]

    def label(p: Pair) -> str:
        return f"{p.a.benchmark} {p.a.metric}" + (f"[{p.a.params}]" if p.a.params else "")

    # a sweep's requested rate is a setting, its ratio always 1: not a bar
    body.append(ratio_chart([(label(p), p.ratio, verdict(p.ratio, direction(p.a.metric, p.a.unit)))
                             for p in pairs if p.a.metric != "requested_throughput"], f"{ra.run_id} vs {rb.run_id}"))
    body.append(_table(("benchmark", "params", "metric", "target/setup", "n first", "median first", "n then",
                        "median then", "ratio"), (
        [_td(f"{p.a.suite}.{p.a.benchmark}"), _td(p.a.params), _td(p.a.metric),
         _td(f"{p.a.target}/{p.a.setup} → {p.b.target}/{p.b.setup}"), _td(len(p.a.values), "num"),
         _td(human(p.a.median, p.a.unit), "num"), _td(len(p.b.values), "num"), _td(human(p.b.median, p.b.unit), "num"),
         _td(f"{p.ratio:.3f}", "num")] for p in pairs)))
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
        rows.append([_td(name), _td(_tags(tags)), _td(held, "held" if held not in ("free", "?") else ""), _td(since),
                     _td(health, health_cls), _td(h.runs if h else 0, "num"), last, failure])
    body.append(_table(("place", "tags", "held by", "since", "health", "runs", "last run", "last failure"), rows,
                       "places"))
    return layout("Places", "".join(body), root)


def not_found_page(what: str, root: str = "") -> str:
    return layout("Not found", f"<p>{e(what)}</p>", root)
