"""Publishing a run directory for people and for CI, from what it holds on disk alone.

:func:`regenerate` reads ``results.csv``, ``run.json`` and ``junit.xml`` (whichever exist: a run
that died early still gets a report) and (re)writes:

* ``summary.md``: how the run ended, the stage table from junit.xml and the key figures (per
  target, setup, benchmark, parameters and metric: the median over repeats, n and the min–max
  range). It is what a GitHub job summary (``$GITHUB_STEP_SUMMARY``) or a GitLab artifact page shows.
* ``metrics.txt``: the medians in the OpenMetrics text format that GitLab's metrics report
  (``artifacts:reports:metrics``) compares between a merge request and its target branch:
  ``farm_<suite>_<benchmark>_<metric>{target="…",setup="…",params="…"} <median>``.

GitLab's parser (``Gitlab::Ci::Parsers::Metrics::Generic``) deletes everything from a ``#`` to the
end of the line and then shell-splits what is left, taking the first word as the name and the
second as the value (kept as a string). So ``# TYPE``/``# HELP``/``# EOF`` lines are invisible to
it, label values must never contain ``#`` (the line would lose its closing quote and the whole
report would fail to parse): :func:`label_value` writes ``#`` as ``%23``. Values are written with
``repr`` (shortest round-trip text) so an unchanged median compares equal as a string.

Plots are drawn when :mod:`farm.results.plots` is there and offers
``write_run_plots(run_dir, records)``; it is imported lazily and skipped otherwise.
"""

from __future__ import annotations

import importlib
import math
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Iterable, Sequence

import attrs

from farm.errors import JobError, ParseError
from farm.results.csvout import read_records
from farm.results.figures import KeyFigure, group_figures
from farm.results.identity import with_cpu_scope_of_run
from farm.results.record import Record, format_params, parse_params, write_text_atomic
from farm.results.runjson import MAX_RUN_JSON_BYTES, check_run_json
from farm.results.stats import median
from farm.measure.cpustat import BOARD, CORES
from farm.measure.units import human, human_params
from farm.secrets import mask

PathLike = str | os.PathLike[str]

SUMMARY_MD = "summary.md"
METRICS_TXT = "metrics.txt"


@attrs.frozen
class StageResult:
    """One ``<testcase>`` of junit.xml."""

    name: str
    classname: str
    seconds: float
    kind: str  # pass, failure, error, skipped
    message: str


@attrs.frozen
class RunData:
    """What a run directory holds, read back."""

    path: Path
    records: tuple[Record, ...]
    info: dict[str, Any]          # run.json ({} when absent)
    stages: tuple[StageResult, ...]  # junit.xml (() when absent)
    missing: tuple[str, ...]      # which of results.csv, run.json, junit.xml were not there


@attrs.frozen
class Report:
    """What :func:`regenerate` wrote."""

    summary: Path
    metrics: Path
    figures: int
    plots: tuple[Path, ...]
    notes: tuple[str, ...]  # e.g. why there are no plots


def load_run(run_dir: PathLike) -> RunData:
    """Read a run directory; JobError when it is not one (none of the three files)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise JobError(f"{path}: no such run directory")
    missing = []
    records: list[Record] = []
    if (path / "results.csv").is_file():
        records = read_records(path / "results.csv")
    else:
        missing.append("results.csv")
    info: dict[str, Any] = {}
    if (path / "run.json").is_file():
        info = read_run_json(path / "run.json")
    else:
        missing.append("run.json")
    stages: tuple[StageResult, ...] = ()
    if (path / "junit.xml").is_file():
        stages = read_stages(path / "junit.xml")
    else:
        missing.append("junit.xml")
    if len(missing) == 3:
        raise JobError(f"{path}: not a run directory (no results.csv, run.json or junit.xml)")
    # CPU figures written before records said their CPU: a guest setup's were its vCPUs' (run.json's flow)
    records = with_cpu_scope_of_run(records, info)
    return RunData(path, tuple(records), info, stages, tuple(missing))


def read_run_records(run_dir: PathLike) -> list[Record]:
    """``run_dir``'s results.csv, its CPU figures saying their CPU: one written before records said it is
    what its run.json says its setup's shell was (a guest's: its vCPUs'; farm.results.identity)."""
    path = Path(run_dir)
    records = read_records(path / "results.csv")
    if (path / "run.json").is_file():
        records = with_cpu_scope_of_run(records, read_run_json(path / "run.json"))
    return records


def read_run_json(path: Path) -> dict[str, Any]:
    """A run.json: at most :data:`MAX_RUN_JSON_BYTES`, nested at most as deep as farm's files
    (farm.config.load_json), and of the types its readers need (farm.results.runjson); a JobError
    names the file and field."""
    from farm.config import load_json

    return check_run_json(load_json(path, "run.json", limit=MAX_RUN_JSON_BYTES), str(path))


def read_stages(path: PathLike) -> tuple[StageResult, ...]:
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ParseError(f"{path}: not XML ({e})") from None
    stages = []
    for case in root.iter("testcase"):
        kind, message = "pass", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                kind, message = child.tag, child.get("message") or (child.text or "")
                break
        try:
            seconds = float(case.get("time") or 0)
        except ValueError:
            seconds = math.nan
        stages.append(StageResult(case.get("name", ""), case.get("classname", ""), seconds, kind, message))
    return tuple(stages)


def key_figures(records: Iterable[Record]) -> list[KeyFigure]:
    """Records grouped by target, setup, suite, benchmark, params (without run lengths), metric and
    unit, in the order they were first measured (repeats and runs pooled)."""
    return group_figures(records, failed=True)


# --- summary.md ------------------------------------------------------------------------------

_MD_ESCAPES = {"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "$": "\\$", "<": "\\<",
               "\r": " ", "\n": " "}
_MD_SPECIAL = re.compile("|".join(re.escape(c) for c in _MD_ESCAPES))


def md_escape(text: Any) -> str:
    """Text that stays literal in a Markdown table cell or list item, on GitHub too: no pipe or line
    break to end the cell, no emphasis, code, HTML or ``$…$`` maths made from tool output."""
    return _MD_SPECIAL.sub(lambda m: _MD_ESCAPES[m.group()], str(text))


_md = md_escape


def _first_line(text: str, limit: int = 500) -> str:
    # a failure's first line is its whole message (a kernel panic's line, a command's error): long ones
    # are kept, only a runaway line (a console without line ends) is cut
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def summary_markdown(run: RunData, plots: Sequence[Path] = ()) -> str:
    info = run.info
    run_id = info.get("run_id") or run.path.name
    status = info.get("status", "unknown (no run.json)" if "run.json" in run.missing else "unknown")
    stages = run.stages
    passed = sum(s.kind == "pass" for s in stages)
    lines = [f"# farm run {_md(run_id)}: {_md(status)}", ""]
    if stages:
        lines += [f"{passed} of {len(stages)} stages passed.", ""]
    facts = []
    if info.get("pipeline_name") or info.get("pipeline"):
        facts.append(f"pipeline **{_md(info.get('pipeline_name', '?'))}** (`{_md(info.get('pipeline', '?'))}`)")
    if info.get("started"):
        facts.append(f"started {_md(info['started'])}, finished {_md(info.get('finished') or '-')}")
    who = [f"by {_md(info['who'])}" if info.get("who") else "",
           f"farm {_md(info['farm_version'])}" if info.get("farm_version") else "",
           f"git {_md(str(info['git_sha'])[:12])}" if info.get("git_sha") else "",
           f"CI job {_md(info['ci_job'])}" if info.get("ci_job") else ""]
    if any(who):
        facts.append(", ".join(w for w in who if w))
    for name, image in (info.get("images") or {}).items():  # run.json: image name -> its manifest
        if isinstance(image, dict):
            facts.append(f"image {_md(image.get('name', name))} (kernel {_md(image.get('kernel_version', '?'))}, "
                         f"key {_md(str(image.get('key', '?'))[:12])})")
    targets = info.get("targets")
    if isinstance(targets, dict):
        for name, t in targets.items():
            if isinstance(t, dict):
                facts += [f"target **{_md(name)}**{line}" for line in _boot_lines(t)]
    lines += [f"- {f}" for f in facts]
    if run.missing:
        lines.append(f"- not in the run directory: {', '.join(run.missing)}")
    lines.append("")
    lines += experiment_lines(info)

    if stages:
        lines += ["## Stages", "", "| stage | result | time | message |", "|---|---|---:|---|"]
        for s in stages:
            result = s.kind if s.kind == "pass" else f"**{s.kind}**"
            time_text = f"{s.seconds:.1f} s" if math.isfinite(s.seconds) else "-"
            lines.append(f"| {_md(s.name)} | {result} | {time_text} | {_md(_first_line(s.message))} |")
        lines.append("")

    figures = key_figures(run.records)
    lines += ["## Key figures", ""]
    if figures:
        lines += ["Per benchmark: the median over repeats, n values, min–max range, coefficient of variation, "
                  "and the 95 % interval of the median (exact, order statistics; from 6 values). A sweep is one "
                  "row per point, one column per metric (medians).", ""]
        lines += key_figure_sections(figures)
    else:
        lines += ["No measurements.", ""]
    lines += setup_comparison_lines(run)
    if plots:
        lines += ["## Plots", ""] + [f"- [{_md(p.name)}]({p.relative_to(run.path).as_posix()})" for p in plots] + [""]
    return "\n".join(lines)


def experiment_lines(info: dict[str, Any]) -> list[str]:
    """The experiment's design (run.json's ``experiment``) and how each boot settled: a section of
    summary.md, empty for a run that recorded none."""
    experiment = info.get("experiment")
    if not isinstance(experiment, dict) or not experiment:
        return []
    boots = experiment.get("boots") if isinstance(experiment.get("boots"), dict) else {}
    order = str(experiment.get("order", "?"))
    seed = experiment.get("seed")
    lines = ["## Experiment", ""]
    per = ", ".join(f"{_md(name)} {n}" for name, n in boots.items())
    lines.append(f"- boots per setup: {per or '?'}; order {_md(order)}"
                 + (f" (seed {_md(seed)})" if seed is not None else "")
                 + f"; {_md(experiment.get('repeats_in_boot', 1))} run(s) of each benchmark per boot")
    rule = experiment.get("compare") if isinstance(experiment.get("compare"), dict) else {}
    if rule:
        threshold = rule.get("threshold") or 0
        band = f"1 ± {threshold:.1%}" if isinstance(threshold, (int, float)) and threshold else "1.0"
        confidence = rule.get("confidence", 0.95)
        level = f"{confidence * 100:g} %" if isinstance(confidence, (int, float)) else "?"
        lines.append(f"- ratios between setups: {_md(rule.get('interval', '?'))}, "
                     f"{level}; inconclusive below "
                     f"{_md(rule.get('min_boots', '?'))} boots a side or when the interval straddles {_md(band)}")
    lengths = []
    for bench in experiment.get("benchmarks") or []:
        if not isinstance(bench, dict) or not isinstance(bench.get("params"), dict):
            continue
        from farm.bench.registry import run_length

        given = {k: v for k, v in bench["params"].items() if k in run_length(str(bench.get("benchmark"))) and v is not None}
        if given:
            lengths.append(f"{bench.get('benchmark')} " + ", ".join(f"{k} {v}" for k, v in given.items()))
    if lengths:
        lines.append(f"- run lengths (not part of a figure's identity): {_md('; '.join(lengths))}")
    settle = experiment.get("settle")
    if isinstance(settle, dict):
        lines.append(f"- settling before the first benchmark of a boot: every core below {_md(settle.get('cpu_below'))} % "
                     f"for {_md(settle.get('for'))} s, at most {_md(settle.get('within'))} s")
        settled, times, unsettled = 0, [], []
        for target in (info.get("targets") or {}).values():
            for boot in (target.get("boots") or []) if isinstance(target, dict) else []:
                s = boot.get("settle") if isinstance(boot, dict) else None
                if not isinstance(s, dict):
                    continue
                if s.get("settled"):
                    settled += 1
                    if isinstance(s.get("seconds"), (int, float)):
                        times.append(float(s["seconds"]))
                else:
                    unsettled.append(f"{boot.get('label', '?')}" + (f" ({s['skipped']})" if s.get("skipped") else ""))
        if settled or unsettled:
            took = f" in {min(times):.1f}–{max(times):.1f} s" if times else ""
            lines.append(f"- {settled} boot(s) settled{took}" + (
                f"; **not settled** (records flagged `unsettled`): {', '.join(_md(u) for u in unsettled)}"
                if unsettled else ""))
    elif "settle" in experiment:
        lines.append("- no settling rule (settle: false)")
    return lines + [""]


def setup_comparison_lines(run: RunData) -> list[str]:
    """Per target with two or more setups, each later setup's ratio to the first for every shared
    metric, with n a side, its 95 % interval and verdict (farm.results.ratio, between boots): the
    answer a vm-vs-bare run is for. Empty when no target has two setups."""
    from farm.results.compare import compare
    from farm.results.ratio import Rule, sig

    experiment = run.info.get("experiment") if isinstance(run.info.get("experiment"), dict) else {}
    rule = Rule.from_json(experiment.get("compare"))
    n = run.info.get("repeats_in_boot", 1)
    per_boot = {str(run.info.get("run_id")): n} if isinstance(n, int) and n >= 1 else {}
    records = [r for r in run.records if r.metric != "failed"]
    lines: list[str] = []
    for target in dict.fromkeys(r.target for r in records):
        mine = [r for r in records if r.target == target]
        if len({r.setup for r in mine}) < 2:
            continue
        c = compare([(target, mine)], rule=rule, repeats_in_boot=per_boot)
        first = c.labels[0]
        rows = [(row, e, col) for row in c.rows if row.key.metric != "requested_throughput"
                for e, r, col in zip(row.estimates, row.ratios, c.labels[1:]) if r is not None]
        if not rows:
            continue
        conclusive = sum(e.conclusive for _, e, _ in rows)
        lines += [f"## Setups compared on {_md(target)}: ratio to {_md(first)}", "",
                  f"{conclusive} of {len(rows)} ratios conclusive. n = boots a side (a boot's repeats reduced to "
                  f"their median); the interval is the {rule.confidence * 100:g} % Hodges-Lehmann interval of the log "
                  "ratio; **inconclusive**: too few boots, or the interval straddles "
                  + (f"1 ± {rule.threshold:.1%}" if rule.threshold else "1.0") + ".", "",
                  "| benchmark | params | metric | setup | ratio [95 % CI] | n | verdict |",
                  "|---|---|---|---|---:|---:|---|"]
        for row, e, col in rows:
            shown = f"{sig(e.ratio)} {e.interval_text()}" if e.ratio is not None else "—"
            verdict = e.verdict if e.conclusive else f"**inconclusive** ({e.why})"
            lines.append("| " + " | ".join(_md(v) for v in (
                f"{row.key.suite}.{row.key.benchmark}", human_params(row.key.params) or "-", row.key.metric, col,
                shown, f"{e.n_base}/{e.n_other}")) + f" | {_md(verdict) if e.conclusive else verdict} |")
        lines.append("")
    return lines


#: per-core CPU utilisation of a sweep point: in results.csv, too many columns for a summary
_PER_CORE = re.compile(r"cpu\d+_utilisation")


def key_figure_sections(figures: Sequence[KeyFigure]) -> list[str]:
    """Markdown lines: a ``###`` section per benchmark. A benchmark measured at three or more
    parameter points per target and setup, three or more metrics each (a sweep), is a wide table, a
    row per point and a column per metric; any other a row per metric with its spread."""
    by_benchmark: dict[tuple[str, str], list[KeyFigure]] = {}
    for f in figures:
        by_benchmark.setdefault((f.suite, f.benchmark), []).append(f)
    lines: list[str] = []
    for (suite, benchmark), figs in by_benchmark.items():
        lines += [f"### {_md(suite)}.{_md(benchmark)}", ""]
        points: dict[tuple[str, str, str], list[KeyFigure]] = {}
        for f in figs:  # a point's CPU figures of several CPUs (cores=board, cores=vcpus) are columns of its row
            points.setdefault((f.target, f.setup, _without_cores(f.params)), []).append(f)
        per_setup: dict[tuple[str, str], int] = {}
        for target, setup, _ in points:
            per_setup[target, setup] = per_setup.get((target, setup), 0) + 1
        if min(per_setup.values()) >= 3 and min(len(v) for v in points.values()) >= 3:
            lines += _wide_table(points)
        else:
            lines += _long_table(figs)
        lines.append("")
    seen = sorted({flag for f in figures for flag, _ in f.flags})
    if seen:
        from farm.results.sanity import MEANING

        lines += ["**Flagged** values (how many of a figure's values carry the flag; they are in the figures): "
                  + "; ".join(f"`{flag}`: {_md(MEANING.get(flag, flag))}" for flag in seen) + ".", ""]
    return lines


def _long_table(figures: Sequence[KeyFigure]) -> list[str]:
    flagged = any(f.flags for f in figures)
    lines = ["| target | setup | params | metric | median | n | min–max | CV | 95 % CI |" + (" flagged |" if flagged else ""),
             "|---|---|---|---|---:|---:|---|---:|---|" + ("---|" if flagged else "")]
    for f in figures:
        spread = f"{human(f.low, f.unit)} – {human(f.high, f.unit)}" if f.n > 1 else "-"
        interval = f.interval
        lines.append("| " + " | ".join(_md(v) for v in (
            f.target, f.setup, human_params(f.params) or "-", f.metric, human(f.median, f.unit), f.n, spread,
            "-" if f.cv is None else f"{f.cv * 100:.1f} %",
            "-" if interval is None else f"{human(interval[0], f.unit)} – {human(interval[1], f.unit)}"))
            + " |" + ((f" **{_md(f.flagged)}** |" if f.flags else "  |") if flagged else ""))
    return lines


def _without_cores(text: str) -> str:
    return format_params({k: v for k, v in parse_params(text).items() if k != CORES})


def _column(figure: KeyFigure) -> str:
    """A wide table's column of a figure: its metric, a CPU figure's with its CPU when it is not the board's."""
    cores = parse_params(figure.params).get(CORES)
    return f"{figure.metric} ({cores})" if cores and cores != BOARD else figure.metric


def _wide_table(points: dict[tuple[str, str, str], list[KeyFigure]]) -> list[str]:
    params = [parse_params(p) for _, _, p in points]
    common = {k: v for k, v in params[0].items() if all(p.get(k) == v for p in params[1:])}
    metrics = list(dict.fromkeys(_column(f) for figs in points.values() for f in figs
                                 if not _PER_CORE.fullmatch(f.metric)))
    lines = []
    if common:
        lines += [f"All points: {_md(human_params(format_params(common)))}.", ""]
    if len(metrics) < len({f.metric for figs in points.values() for f in figs}):
        lines += ["Per-core CPU utilisation (cpuN_utilisation) is in results.csv.", ""]
    flagged = any(f.flags for figs in points.values() for f in figs)
    lines += ["| " + " | ".join(["target", "setup", "point", "n", *map(_md, metrics)]) + " |" + (" flagged |" if flagged else ""),
              "|---|---|---|---:|" + "---:|" * len(metrics) + ("---|" if flagged else "")]
    for (target, setup, text), figs in points.items():
        by_metric = {_column(f): f for f in figs}
        varying = format_params({k: v for k, v in parse_params(text).items() if k not in common})
        cells = [human(by_metric[m].median, by_metric[m].unit) if m in by_metric else "-" for m in metrics]
        flags: dict[str, int] = {}
        for f in figs:  # a point's flags are its metrics' (a flag marks the whole point: the most values)
            for flag, n in f.flags:
                flags[flag] = max(flags.get(flag, 0), n)
        lines.append("| " + " | ".join(_md(v) for v in (
            target, setup, human_params(varying) or "-", max(f.n for f in figs), *cells)) + " |"
            + ((" **" + _md(", ".join(f"{n} {flag}" for flag, n in sorted(flags.items()))) + "** |" if flags else " |")
               if flagged else ""))
    return lines


# --- metrics.txt -----------------------------------------------------------------------------

_NAME_JUNK = re.compile(r"[^a-zA-Z0-9_]+")


def metric_name(suite: str, benchmark: str, metric: str) -> str:
    """``farm_<suite>_<benchmark>_<metric>``, lower case, every run of other characters one ``_``
    (a valid OpenMetrics/Prometheus name, ``[a-zA-Z_][a-zA-Z0-9_]*``, no colons)."""
    parts = [_NAME_JUNK.sub("_", p).strip("_").lower() for p in ("farm", suite, benchmark, metric)]
    return "_".join(p for p in parts if p)


def label_value(text: str) -> str:
    """A label value in double quotes: OpenMetrics escapes (backslash, quote, line feed), and ``#``
    as ``%23`` since GitLab's parser cuts every line at the first ``#``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("#", "%23")
    return f'"{escaped}"'


def _help_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def metrics_text(records: Iterable[Record]) -> str:
    """The OpenMetrics exposition of the key figures' medians (one gauge family per
    suite/benchmark/metric, one sample per target, setup and params), ending in ``# EOF``.

    A family has one unit, named in its HELP line; should one metric come in two units, each unit
    gets a family of its own, named with the unit as a suffix.
    """
    by_unit: dict[tuple[str, str], dict[tuple[str, str, str], list[float]]] = {}
    descriptions: dict[str, str] = {}
    for f in key_figures(records):
        name = metric_name(f.suite, f.benchmark, f.metric)
        descriptions.setdefault(name, f"{f.suite} {f.benchmark} {f.metric}")
        by_unit.setdefault((name, f.unit), {}).setdefault((f.target, f.setup, f.params), []).extend(f.values)
    units_of: dict[str, int] = {}
    for name, _ in by_unit:
        units_of[name] = units_of.get(name, 0) + 1
    lines = []
    for (base, unit), samples in sorted(by_unit.items(), key=lambda item: item[0]):
        name = base if units_of[base] == 1 else f"{base}_{_NAME_JUNK.sub('_', unit).strip('_').lower() or 'unitless'}"
        lines.append(f"# TYPE {name} gauge")
        in_unit = f"in {_help_text(unit)}" if unit else "no unit"
        lines.append(f"# HELP {name} {_help_text(descriptions[base])}, median over repeats, {in_unit}")
        for (target, setup, params), values in sorted(samples.items()):
            labels = ",".join(f"{k}={label_value(v)}" for k, v in
                              (("target", target), ("setup", setup), ("params", params)))
            lines.append(f"{name}{{{labels}}} {_number(median(values))}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _boot_lines(target: dict) -> list[str]:
    """One line per boot of a target in run.json (``targets.<name>.boots``): setup, cores, frequency, kernel."""
    boots = target.get("boots")
    if not isinstance(boots, list):
        boots = [target]  # an older run.json kept the facts on the target itself
    several = len(boots) > 1
    lines = []
    for b in (b for b in boots if isinstance(b, dict)):
        where = f" ({_md(b.get('setup', '?'))}, repeat {b.get('repeat', 0)})" if several else ""
        if b.get("failed"):
            lines.append(f"{where}: boot failed: {_md(_first_line(str(b['failed'])))}")
            continue
        freq = b.get("frequency_hz")
        freq_text = f" @ {freq / 1e6:.0f} MHz ({_md(b.get('frequency_source', '?'))})" if isinstance(
            freq, (int, float)) and not isinstance(freq, bool) else ""
        boot = f", booted in {b['boot_seconds']:.1f} s" if isinstance(b.get("boot_seconds"), (int, float)) else ""
        lines.append(f"{where}: {_md(b.get('cpus', '?'))} cpus{freq_text}, kernel {_md(b.get('kernel', '?'))}{boot}")
    return lines


# --- regenerate ------------------------------------------------------------------------------

def _plots(run: RunData) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    try:
        plots = importlib.import_module("farm.results.plots")
    except ImportError:
        return (), ("plots: farm.results.plots is not installed",)
    write = getattr(plots, "write_run_plots", None)
    if write is None:
        return (), ("plots: farm.results.plots has no write_run_plots(run_dir, records); none drawn",)
    return tuple(Path(p) for p in (write(run.path, list(run.records)) or ())), ()


def regenerate(run_dir: PathLike, *, step_summary: PathLike | None = None) -> Report:
    """Rewrite ``summary.md`` and ``metrics.txt`` of ``run_dir`` (and its plots, see the module
    docstring) from the files in it. With ``step_summary`` (the CLI passes
    ``$GITHUB_STEP_SUMMARY``), ``summary.md`` is also appended to that file."""
    run = load_run(run_dir)
    plots, notes = _plots(run)
    existing = tuple(sorted((run.path / "plots").glob("*.png"))) if (run.path / "plots").is_dir() else ()
    summary = summary_markdown(run, plots or existing)
    write_text_atomic(run.path / SUMMARY_MD, summary)
    write_text_atomic(run.path / METRICS_TXT, metrics_text(run.records))
    if step_summary:
        append_step_summary(step_summary, summary)
    return Report(run.path / SUMMARY_MD, run.path / METRICS_TXT, len(key_figures(run.records)),
                  plots, notes)


def write_summary(run_dir: PathLike, *, step_summary: PathLike | None = None) -> Path:
    """Rewrite ``summary.md`` alone (the runner's last word, once its publish stage is recorded) and
    append it to ``step_summary`` once: a run's job summary shows its final stage count, one time."""
    run = load_run(run_dir)
    plots = tuple(sorted((run.path / "plots").glob("*.png"))) if (run.path / "plots").is_dir() else ()
    summary = summary_markdown(run, plots)
    write_text_atomic(run.path / SUMMARY_MD, summary)
    if step_summary:
        append_step_summary(step_summary, summary)
    return run.path / SUMMARY_MD


def _annotation_escape(text: str, *, prop: bool = False) -> str:
    """GitHub's workflow-command escaping: ``%``, CR, LF always; ``:`` and ``,`` in a property too."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github_annotations(run: RunData) -> list[str]:
    """An ``::error`` workflow command per failed or errored stage (junit.xml testcase): GitHub shows them
    on the run's page and its checks, the JUnit results without a third-party action (pure)."""
    out = []
    for s in run.stages:
        if s.kind not in ("failure", "error"):
            continue
        kind = "test failure" if s.kind == "failure" else "error"
        title = _annotation_escape(f"farm {kind}: {s.name}", prop=True)
        out.append(f"::error title={title}::{_annotation_escape(mask(s.message) or s.kind)}")
    return out


def append_step_summary(path: PathLike, markdown: str) -> None:
    """Append to a GitHub job summary file (several reports in one job each add theirs); one that
    cannot be appended to (a directory, a missing folder, no permission) is a JobError naming
    ``$GITHUB_STEP_SUMMARY`` (the run's own files are written before)."""
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(mask(markdown.rstrip("\n")) + "\n\n")
    except OSError as exc:
        raise JobError(f"$GITHUB_STEP_SUMMARY={path}: cannot append the job summary to it: "
                       f"{exc.strerror or exc} (the run's files are written)") from None
