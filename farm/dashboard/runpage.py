"""A run's page and the page of its every figure: what they show, gathered into plain attrs objects for
``templates/run.html`` and ``templates/figures.html`` (facts, stages with a link to the failing console
line, network sweeps, key figures, boots, the archive's part, consoles folded by :mod:`.console`, files)."""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import attrs

from farm.results.figures import KeyFigure
from farm.results.record import parse_params

from . import archived, console as consolefold
from .data import RunDetail, SweepCurve, slug
from .formats import duration, human, human_params
from .pages import Cell, Fact, Named
from .paths import compare_href, place_href
from .render import macro, render
from .svg import Curve, XYChart, xy_chart

FIGURE_HEAD = ("target", "setup", "benchmark", "params", "metric", "n", "median", "range", "flagged")


# --- the console -------------------------------------------------------------------------------

@attrs.frozen
class ConsoleLine:
    """A line of a console as its page shows it: ``mark`` "fail" (a failing line, ``fail`` its number
    among them: ``#fail-<n>``), "context" (the console excerpt that led to it) or ""."""

    line: consolefold.Line
    mark: str = ""
    fail: int = 0


def console_lines(text: str, excerpts: Iterable[str]) -> tuple[list[ConsoleLine], int]:
    """The console's lines (:mod:`.console`: farm's typing checks folded away), the failing lines (a fatal
    console line, the line a failed stage's console excerpt ends with, or one its message quotes) and
    the excerpt's other lines marked; and how many lines were marked failing."""
    lines = consolefold.fold(text)
    wanted, context = consolefold.marked(lines, excerpts)
    out, marked = [], 0
    for ln in lines:
        if ln.kind != consolefold.CHECK and ln.number in wanted:
            out.append(ConsoleLine(ln, "fail", marked))
            marked += 1
        else:
            out.append(ConsoleLine(ln, "context" if ln.kind != consolefold.CHECK and ln.number in context else ""))
    return out, marked


def highlight_console(text: str, excerpts: Iterable[str], anchor: str = "c") -> tuple[str, int]:
    """The console as its page shows it (``templates/macros.html``'s console): each line numbered with a
    link to itself (``#<anchor>-L<n>``, the log file's line numbers), farm's typing checks folded away
    (shown with the ``show-typing`` checkbox before the ``<pre>``), the first failing line
    ``id="fail-0"``; and how many lines were marked failing."""
    lines, marked = console_lines(text, excerpts)
    return macro("macros.html", "console")(lines, anchor), marked


def first_marked_line(text: str, excerpts: Iterable[str]) -> int | None:
    """The log's line number of the first failing line of ``text`` (see :func:`console_lines`)."""
    lines = consolefold.fold(text)
    wanted, _ = consolefold.marked(lines, excerpts)
    return min(wanted) if wanted else None


def console_anchor(target: str) -> str:
    return f"c-{slug(target)}"


@attrs.frozen
class ConsoleView:
    target: str
    anchor: str
    lines: list[ConsoleLine]
    marked: int
    truncated: bool
    log: str                    # its log file in the run directory, "" when the page cannot link it


# --- key figures and sweeps --------------------------------------------------------------------

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


@attrs.frozen
class SweepTable:
    """A sweep summarised: one row per load (parameter point), the key columns (medians over its repeats)."""

    target: str
    setup: str
    suite: str
    benchmark: str
    common: str                 # the parameters every point shares
    head: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


def sweep_table(key: tuple[str, str, str, str], points: Mapping[str, Sequence[KeyFigure]]) -> SweepTable:
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
        rows.append((Cell(shown or "-", "num" if len(varying) == 1 else ""), Cell(max(f.n for f in figs), "num"),
                     *(Cell(human(by_metric[m].median, by_metric[m].unit) if m in by_metric else "–", "num")
                       for m in columns)))
    return SweepTable(target, setup, suite, benchmark, human_params(";".join(f"{k}={v}" for k, v in common.items())),
                      (varying[0] if len(varying) == 1 else "load", "n", *columns), tuple(rows))


def sweep_charts(curves: Sequence[SweepCurve]) -> list[tuple[str, list[tuple[str, XYChart | None]]]]:
    """A network sweep's curves per target (target, [(what, chart)]), a colour per setup: achieved throughput
    against the requested rate (dashed: the ideal, achieved = requested) and the median RTT."""
    out = []
    for target in sorted({c.target for c in curves}):
        mine = [c for c in curves if c.target == target]
        charts = []
        for metric, title, ideal in (("received_throughput", "achieved (received) against requested; dashed: "
                                      "ideal", True), ("rtt_median", "median round-trip time", False)):
            of_metric = [c for c in mine if c.metric == metric]
            if of_metric:
                charts.append((title, xy_chart([Curve(c.setup, c.points) for c in of_metric], "bit/s",
                                               of_metric[0].unit, f"{target}: {metric} against the requested rate",
                                               ideal=ideal)))
        out.append((target, charts))
    return out


def phases_text(stages: Sequence, duration_s: float | None) -> str:
    """The run's time by phase (farm.results.phases), from its stages and its duration (which ends when the
    run does, before it is published: the publish stage comes on top, as in run.json's ``phases``); ""
    when its stages say none."""
    from ..results.phases import describe, split

    pairs = [(s.classname, s.seconds) for s in stages]
    wall = None
    if duration_s is not None and math.isfinite(duration_s):
        wall = duration_s + sum(x or 0.0 for c, x in pairs if c == "farm.publish")
    phases = split(pairs, wall)
    return describe(phases) if phases else ""


# --- boots -------------------------------------------------------------------------------------

def experiment_text(d: RunDetail) -> str:
    """The run's experiment design in one sentence (run.json's experiment), "" when it has none."""
    x = d.experiment
    if not x:
        return ""
    boots = x.get("boots") if isinstance(x.get("boots"), dict) else {}
    seed = f" (seed {x['seed']})" if x.get("seed") is not None else ""
    settle = x.get("settle")
    rule = (f"; a boot settles when every core is below {settle.get('cpu_below')} % for {settle.get('for')} s "
            f"(at most {settle.get('within')} s)" if isinstance(settle, dict) else "; no settling rule")
    boots_text = ", ".join(f"{k} {v}" for k, v in boots.items())
    return f"boots per setup: {boots_text}, order {x.get('order', '?')}{seed}{rule}."


def settle_of_boots(d: RunDetail) -> list[dict | None]:
    """Each stored boot's settle record, by its target, setup and repeat (run.json's label)."""
    by_label = dict(d.settling)
    out = []
    for b in d.boots:
        label = f"{b.target}/{b.setup}"
        out.append(by_label.get(f"{label}/{b.repeat}", by_label.get(label)))
    return out


def settled(settle: dict | None) -> Cell:
    """How a boot settled before its benchmarks (farm.run's settle rule)."""
    if not settle:
        return Cell("")
    if settle.get("skipped"):
        return Cell(f"not read: {settle['skipped']}")
    seconds = settle.get("seconds")
    took = f" in {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
    return Cell(f"yes{took}") if settle.get("settled") else Cell(f"NO{took}: flagged unsettled", "flagged")


# --- the pages ---------------------------------------------------------------------------------

def run_facts(r, root: str) -> list[Fact]:
    facts = [("status", r.status), ("junit outcome", r.junit), ("kind", r.kind), ("who", r.who),
             ("started", r.started), ("finished", r.finished), ("duration", duration(r.duration_s)),
             ("pipeline", r.pipeline), ("targets", r.targets), ("setups", r.setups), ("images", r.images),
             ("kernels", r.kernels), ("git sha", r.git_sha), ("farm version", r.farm_version), ("CI job", r.ci_job),
             ("stopped at", r.stopped_at), ("run directory", r.path)]
    out = [Fact(k, v, str(v) if k in ("status", "junit outcome") else "") for k, v in facts if v not in (None, "")]
    if getattr(r, "place", ""):
        out.insert(8, Fact("place", r.place, href=place_href(root, r.place)))
    return out


@attrs.frozen
class StageRow:
    stage: object               # the stages row: name, kind, seconds, message
    jump: tuple[str, str, int] | None   # a failure's failing line: (console anchor, target, line)


def run_page(d: RunDetail, root: str = "../", files: Mapping[str, bool] | None = None,
             archive: archived.ArchiveView | None = None) -> str:
    """A run's page. ``files``: path in the run directory → whether it can be opened (``farm serve``
    has it, the static site copied it); None: no file is linked. ``archive``: what the archive holds
    of the run (farm.dashboard.archived), its files linked when ``files`` is given."""
    r = d.run
    linked = files is not None
    files = files or {}
    links = [Named(f"compare with the run before it ({d.previous})", compare_href(root, d.previous, r.run_id))
             ] if d.previous else []
    links += [Named(f"console of {c.target}", f"#{console_anchor(c.target)}") for c in d.consoles]
    if files:
        links.append(Named("files", "#files"))
    failing = [s.message for s in d.stages if s.kind in ("failure", "error")]
    where = []  # (anchor, target, line) of each console's first failing line
    for c in d.consoles:
        line = first_marked_line(c.text, failing)
        if line is not None:
            where.append((console_anchor(c.target), c.target, line))
    stages = [StageRow(s, next((w for w in where if w[1] in s.name), where[0])
                       if s.message and s.kind in ("failure", "error") and where else None) for s in d.stages]
    consoles = []
    for c in d.consoles:
        lines, marked = console_lines(c.text, failing)
        log = f"console/{c.target}.log"
        consoles.append(ConsoleView(c.target, console_anchor(c.target), lines, marked, c.truncated,
                                    log if files.get(log) else ""))
    plain, sweeps = split_sweeps(d.figures)
    return render("run.html", root=root, d=d, r=r, facts=run_facts(r, root), links=links,
                  setups=sorted({f.setup for f in d.figures}), phases=phases_text(d.stages, r.duration_s),
                  stages=stages, sweep_charts=sweep_charts(d.sweeps),
                  sweeps=[sweep_table(k, v) for k, v in sweeps.items()],
                  plain=plain, flagged=flagged(d.figures),
                  failed=", ".join(sorted({f"{x.suite}.{x.benchmark} {x.target}/{x.setup}" for x in d.failed})),
                  experiment=experiment_text(d), boots=list(zip(d.boots, map(settled, settle_of_boots(d)))),
                  archive=archived.part(r.run_id, archive), linked=linked, consoles=consoles, files=files,
                  head=FIGURE_HEAD)


def flagged(figures: Sequence[KeyFigure]) -> tuple[list[KeyFigure], list[tuple[str, str]]]:
    """What a sanity rule flagged among a run's figures (farm.results.sanity), and what each flag means."""
    from farm.results.sanity import MEANING

    figs = [f for f in figures if f.flags]
    return figs, [(flag, MEANING.get(flag, flag)) for flag in sorted({flag for f in figs for flag, _ in f.flags})]


def figures_page(d: RunDetail, root: str = "../../") -> str:
    """Every key figure of a run, a row per metric (a sweep's every metric at every load)."""
    return render("figures.html", root=root, run=d.run, figures=d.figures, head=FIGURE_HEAD)
