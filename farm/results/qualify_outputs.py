"""What ``farm qualify`` writes of a :class:`~farm.results.qualify.Qualification`: ``qualify.md`` (for people,
the verdict first), ``qualify.csv`` (a row per metric compared, missing or broken) and ``junit.xml`` (a
testcase per metric: a regression a failure, an inconclusive one skipped)."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from farm.measure import HIGHER_IS_BETTER, LOWER_IS_BETTER, UNKNOWN_DIRECTION
from farm.measure.units import human
from farm.results.csvout import spreadsheet_safe
from farm.results.direction import direction
from farm.results.identity import MetricKey
from farm.results.junit import Case, write_junit
from farm.results.markdown_text import md_escape as _md
from farm.results.qualify import INCONCLUSIVE, REGRESSION, Comparison, Qualification, Sample, format_change
from farm.results.record import FAILED_METRIC, write_text_atomic

CSV_FIELDS = (
    "target", "suite", "benchmark", "params", "metric", "unit", "baseline_setup", "candidate_setup",
    "baseline_n", "baseline_median", "baseline_min", "baseline_max",
    "candidate_n", "candidate_median", "candidate_min", "candidate_max",
    "change", "direction", "rule", "p_value", "test", "verdict", "ratio_low", "ratio_high",
    "boots_to_decide",
)
_DIRECTION_WORD = {HIGHER_IS_BETTER: "higher", LOWER_IS_BETTER: "lower", UNKNOWN_DIRECTION: "unknown"}


class _SafeDictWriter(csv.DictWriter):
    """Every cell :func:`~farm.results.csvout.spreadsheet_safe` (names come from the runs' records)."""

    def writerow(self, rowdict):
        return super().writerow({k: spreadsheet_safe(v) for k, v in rowdict.items()})


def csv_text(q: Qualification) -> str:
    buf = io.StringIO()
    writer = _SafeDictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for c in q.comparisons:
        writer.writerow({
            **_key_row(c.key), "baseline_setup": c.baseline_setup, "candidate_setup": c.candidate_setup,
            "baseline_n": c.baseline.n, "baseline_median": repr(c.baseline.median),
            "baseline_min": repr(c.baseline.low), "baseline_max": repr(c.baseline.high),
            "candidate_n": c.candidate.n, "candidate_median": repr(c.candidate.median),
            "candidate_min": repr(c.candidate.low), "candidate_max": repr(c.candidate.high),
            "change": repr(c.change), "direction": _DIRECTION_WORD[c.direction],
            "rule": c.estimate.rule.name() if c.estimate else c.rule,
            "p_value": repr(c.p_value), "test": c.test_method, "verdict": c.verdict,
            **({"ratio_low": repr(c.ratio_interval[0]), "ratio_high": repr(c.ratio_interval[1])}
               if c.ratio_interval else {}),
            "boots_to_decide": (c.estimate.boots_to_decide or "") if c.estimate and not c.estimate.conclusive else "",
        })
    for side, items in (("baseline", q.only_in_baseline), ("candidate", q.only_in_candidate)):
        for u in items:
            writer.writerow({**_key_row(u.key), f"{side}_setup": u.setup, f"{side}_n": u.n,
                             f"{side}_median": repr(u.median),
                             "direction": _DIRECTION_WORD[direction(u.key.metric, u.key.unit, u.key.benchmark)],
                             "verdict": f"only in {side}"})
    for b in q.broken:
        writer.writerow({**_key_row(b.key), "candidate_setup": b.setup, "candidate_n": b.n,
                         "direction": _DIRECTION_WORD[direction(b.key.metric, b.key.unit, b.key.benchmark)],
                         "verdict": "failed" if b.key.metric == FAILED_METRIC else f"broken: {b.reason}"})
    return buf.getvalue()


def _key_row(key: MetricKey) -> dict[str, str]:
    return {name: getattr(key, name) for name in CSV_FIELDS[:6]}


def junit_cases(q: Qualification) -> list[Case]:
    """One test case per compared metric (a regression is a failure, an inconclusive one skipped:
    not decided either way), plus one per metric missing
    from the candidate (a failure, or skipped with ``allow_missing``), plus a failure per failed
    benchmark or broken metric of the candidate."""
    cases = []
    for c in q.comparisons:
        name = f"{c.key.label()} {c.setup}"
        kind = {REGRESSION: "failure", INCONCLUSIVE: "skipped"}.get(c.verdict, "pass")
        text = c.explain(q.threshold, q.alpha)
        cases.append(Case(name, f"farm.qualify.{c.key.suite}", 0.0, kind,
                          message=text if kind != "pass" else "", output=text))
    for u in q.only_in_baseline:
        cases.append(Case(f"{u.key.label()} {u.setup}", f"farm.qualify.{u.key.suite}", 0.0,
                          "skipped" if q.allow_missing else "failure",
                          message=f"{u.key.metric}: in the baseline (n={u.n}) but not measured by the candidate"))
    for b in q.broken:
        cases.append(Case(f"{b.key.label()} {b.setup}", f"farm.qualify.{b.key.suite}", 0.0, "failure",
                          message=b.explain()))
    return cases


def markdown(q: Qualification, *, baseline_label: str = "baseline", candidate_label: str = "candidate") -> str:
    """The human report: verdict first, then regressions, improvements, everything, and what
    could not be compared."""
    lines = [f"# Release qualification: {_md(q.headline())}", "",
             f"- baseline: {_md(baseline_label)}", f"- candidate: {_md(candidate_label)}",
             f"- threshold {q.threshold:.1%} on the change of the median, alpha {q.alpha:g} "
             f"({1 - q.alpha:.0%} intervals)", "",
             f"- rule: {_md(q.rule.name())} ({_md(q.rule.method)})", "",
             f"Values are one per boot (the repeats inside a boot reduced to their median). The verdict is farm "
             f"compare's: with fewer than {q.min_boots} boots a side a metric is **inconclusive** (never a "
             "regression on the threshold alone; the row says how many boots might decide it). Else the "
             f"{1 - q.alpha:.0%} interval of the ratio candidate/baseline decides: a **regression** only when the "
             "whole interval lies beyond the threshold in the bad direction, **inconclusive** when it straddles "
             "the threshold (listed, does not fail), unchanged when it lies within it. Higher is better for "
             "rates (bit/s, bytes/s, ops/s), lower "
             "for times, cycles and loss/CPU percentages; a unit with no known direction is reported, never "
             "a regression.", ""]
    if q.setup_pairs:
        lines += ["Setups compared under different names: " + "; ".join(
            f"{_md(t)}: {_md(b)} (baseline) with {_md(c)} (candidate)" for t, b, c in q.setup_pairs), ""]
    if q.broken:
        lines += ["## Not measured, impossible or failed in the candidate", ""]
        lines += [f"- **{_md(b.key.label())}** ({_md(b.setup)}): {_md(b.explain())}" for b in q.broken] + [""]
    for title, items in (("Regressions", q.regressions), ("Inconclusive (too few boots, or the ratio's "
                                                           "interval straddles the threshold)", q.inconclusive),
                         ("Improvements", q.improvements)):
        if items:
            lines += [f"## {title}", ""] + [f"- **{_md(c.key.label())}** ({_md(c.setup)}): "
                                             f"{_md(c.explain(q.threshold, q.alpha))}" for c in items] + [""]
    if q.comparisons:
        lines += ["## All metrics", "",
                  "| target | setup | benchmark | params | metric | baseline median (n, range) | "
                  f"candidate median (n, range) | change | ratio ({1 - q.alpha:.0%} CI) | p | rule | verdict |",
                  "|---|---|---|---|---|---|---|---:|---:|---:|---|---|"]
        for c in q.comparisons:
            verdict = f"**{c.verdict}**" if c.verdict == REGRESSION else _md(c.verdict)
            lines.append("| " + " | ".join([*(_md(v) for v in (
                c.key.target, c.setup, f"{c.key.suite}.{c.key.benchmark}", c.key.params or "-", c.key.metric,
                _side(c.baseline, c.key.unit), _side(c.candidate, c.key.unit), format_change(c.change),
                _ratio(c), f"{c.p_value:.3g}", c.rule)), verdict]) + " |")
        lines.append("")
    for side, items in (("baseline", q.only_in_baseline), ("candidate", q.only_in_candidate)):
        if items:
            fails = side == "baseline" and not q.allow_missing
            lines += [f"## Only in the {side} ({'not measured by the candidate: fails' if fails else 'not compared'})", ""]
            lines += [f"- {_md(u.key.label())} ({_md(u.setup)}): median {_md(human(u.median, u.key.unit))}, "
                      f"n={u.n}" for u in items] + [""]
    return "\n".join(lines)


def _ratio(c: Comparison) -> str:
    if not c.baseline.median > 0:
        return "-"
    ci = f" ({c.ratio_interval[0]:.3f} – {c.ratio_interval[1]:.3f})" if c.ratio_interval else ""
    return f"{c.ratio:.3f}{ci}"


def _side(s: Sample, unit: str) -> str:
    spread = f", {human(s.low, unit)} – {human(s.high, unit)}" if s.n > 1 else ""
    return f"{human(s.median, unit)} (n={s.n}{spread})"


def write_outputs(q: Qualification, out_dir: str | os.PathLike[str], *, baseline_label: str = "baseline",
                  candidate_label: str = "candidate") -> dict[str, Path]:
    """Write ``qualify.md``, ``qualify.csv`` and ``junit.xml`` into ``out_dir`` (created)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "qualify.md", "csv": out / "qualify.csv", "junit": out / "junit.xml"}
    write_text_atomic(paths["markdown"], markdown(q, baseline_label=baseline_label, candidate_label=candidate_label))
    write_text_atomic(paths["csv"], csv_text(q))
    write_junit(paths["junit"], "farm.qualify", junit_cases(q))
    return paths
