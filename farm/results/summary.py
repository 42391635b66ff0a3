"""summary.md of a run directory: how the run ended, the stage table from junit.xml, the experiment's
design and how its boots settled, the key figures (per target, setup, benchmark, parameters and metric:
the median over repeats, n, the min–max range, CV and interval; a sweep a row per point), each target's
setups compared, and the plots. It is what a GitHub job summary (``$GITHUB_STEP_SUMMARY``) or a GitLab
artifact page shows."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Sequence

from farm.measure.cpustat import BOARD, CORES
from farm.measure.units import human, human_params
from farm.results.figures import KeyFigure, key_figures
from farm.results.markdown_text import md_escape as _md
from farm.results.record import format_params, parse_params
from farm.results.rundata import RunData


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
