"""Did a result hold when it was run again? Per figure, "reproduced" or "not reproduced", with both values.

    rep = judge(original_records, new_records, threshold=0.05)   # farm reproduce's verdict
    rep.passed, rep.headline()

**The rule** (:func:`figure_verdict`, one small pure function): a figure of the original run is
**reproduced** when the median of the new run's values lies in the original's *band*: the
original's interval (:mod:`farm.results.stats`: the 95 % distribution-free confidence interval of its
median when it has 6 values or more, else the min–max range of its values), widened to at least
``median ± threshold × |median|`` (default 5 %, farm qualify's threshold). The interval says what the
original's own repeats make plausible; the threshold is what "the same" means where the original has
too few repeats for an interval (one value: the range is a point). Two-sided: a figure that came out
much better did not reproduce either. It is **not reproduced** when the new median lies outside the
band, and **not measured** when the new run has no value of it (its benchmark failed, its target did
not boot): both fail. A figure only the new run has is listed, not judged.

Figures pair by the record identity (farm.results.identity.MetricKey) and setup, the target
matched by name, else by architecture (the same board type under another name: a reproduction on
another board of the lab's). Failed-benchmark markers and values that are not finite are no
measurement. This rule is farm's until the comparisons of issue #25 (between-boot variation,
inconclusive marking) land in farm.results: :func:`figure_verdict` is the one place to change.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Sequence

import attrs

from farm.measure.units import human
from farm.results.identity import MetricKey
from farm.results.junit import Case
from farm.results.record import FAILED_METRIC, Record
from farm.results.report import md_escape as _md
from farm.results.stats import median, median_interval, value_range

DEFAULT_THRESHOLD = 0.05
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_MEASURED = "not measured"
RULE = ("the new median within the original's interval (95 % CI of its median with n >= 6, else its "
        "min-max range), widened to at least the original median ± threshold")


@attrs.frozen
class Band:
    """What the original makes plausible: its median, interval and the band a new median must hit."""

    n: int
    median: float
    interval: tuple[float, float]
    interval_kind: str          # "ci95" | "range"
    low: float                  # the band: the interval, widened to median ± threshold
    high: float


def band(original: Sequence[float], threshold: float) -> Band:
    """The band of ``original`` (non-empty, finite values) under ``threshold``."""
    m = median(original)
    ci = median_interval(original)
    interval, kind = (ci, "ci95") if ci is not None else (value_range(original), "range")
    slack = abs(m) * threshold
    return Band(len(original), m, interval, kind, min(interval[0], m - slack), max(interval[1], m + slack))


@attrs.frozen
class FigureVerdict:
    key: MetricKey              # the original's (its target)
    verdict: str
    original: Band
    new_n: int = 0
    new_median: float = math.nan
    new_target: str = ""
    note: str = ""              # why it was not measured

    @property
    def reproduced(self) -> bool:
        return self.verdict == REPRODUCED

    @property
    def change(self) -> float:
        """(new median - original median) / |original median|."""
        m = self.original.median
        return (self.new_median - m) / abs(m) if m else math.nan

    def explain(self) -> str:
        unit, o = self.key.unit, self.original
        interval = (f"95 % CI {human(o.interval[0], unit)} – {human(o.interval[1], unit)}" if o.interval_kind == "ci95"
                    else f"range {human(o.interval[0], unit)} – {human(o.interval[1], unit)}" if o.n > 1 else "one value")
        was = f"original {human(o.median, unit)} (n={o.n}, {interval}; band {human(o.low, unit)} – {human(o.high, unit)})"
        if self.verdict == NOT_MEASURED:
            return f"{was}; not measured again: {self.note}"
        change = f"{self.change:+.1%}" if math.isfinite(self.change) else "n/a"
        return f"new {human(self.new_median, unit)} (n={self.new_n}, {change}); {was}"


def figure_verdict(key: MetricKey, original: Sequence[float], new: Sequence[float], threshold: float, *,
                   new_target: str = "", note: str = "") -> FigureVerdict:
    """THE rule (module docstring): the verdict on one figure, from the original's values and the new ones."""
    b = band(original, threshold)
    if not new:
        return FigureVerdict(key, NOT_MEASURED, b, new_target=new_target, note=note or "no value in the new run")
    m = median(new)
    verdict = REPRODUCED if b.low <= m <= b.high else NOT_REPRODUCED
    return FigureVerdict(key, verdict, b, len(new), m, new_target)


def pair_targets(original: dict[str, str], new: dict[str, str]) -> dict[str, str]:
    """Original target -> the new run's target: the same name, else the one new target of the same
    architecture left (``original``, ``new``: target -> arch)."""
    pairs = {t: t for t in original if t in new}
    left = {t: a for t, a in new.items() if t not in pairs.values()}
    for target, arch in original.items():
        if target in pairs:
            continue
        same = [t for t, a in left.items() if a == arch]
        mine = [t for t, a in original.items() if a == arch and t not in pairs]
        if len(same) == 1 and len(mine) == 1:
            pairs[target] = same[0]
            del left[same[0]]
    return pairs


def _samples(records: Iterable[Record]) -> dict[MetricKey, list[float]]:
    out: dict[MetricKey, list[float]] = {}
    for r in records:
        if r.metric != FAILED_METRIC and math.isfinite(r.value):
            out.setdefault(MetricKey.of(r), []).append(r.value)
    return out


@attrs.frozen
class Reproduction:
    original_run_id: str
    run_id: str
    threshold: float
    figures: tuple[FigureVerdict, ...]
    only_new: tuple[MetricKey, ...]
    targets: dict[str, str]         # original target -> new target

    def count(self, verdict: str) -> int:
        return sum(f.verdict == verdict for f in self.figures)

    @property
    def passed(self) -> bool:
        """Every figure reproduced (and there was one)."""
        return bool(self.figures) and all(f.reproduced for f in self.figures)

    @property
    def verdict(self) -> str:
        return REPRODUCED if self.passed else NOT_REPRODUCED

    def headline(self) -> str:
        n = len(self.figures)
        if not n:
            return f"nothing to compare: the original run {self.original_run_id} has no measured figure"
        parts = [f"{self.count(REPRODUCED)} of {n} figure{'s' * (n != 1)} reproduced"]
        parts += [f"{self.count(v)} {v}" for v in (NOT_REPRODUCED, NOT_MEASURED) if self.count(v)]
        return f"{'reproduced' if self.passed else 'NOT reproduced'}: " + ", ".join(parts) + \
            f" (threshold {self.threshold:.1%})"

    def as_json(self) -> dict[str, Any]:
        return {"format": 1, "original_run_id": self.original_run_id, "run_id": self.run_id,
                "threshold": self.threshold, "rule": RULE, "verdict": self.verdict, "headline": self.headline(),
                "reproduced": self.count(REPRODUCED), "not_reproduced": self.count(NOT_REPRODUCED),
                "not_measured": self.count(NOT_MEASURED), "targets": self.targets,
                "figures": [_figure_json(f) for f in self.figures],
                "only_new": [attrs.asdict(k) for k in self.only_new]}


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _figure_json(f: FigureVerdict) -> dict[str, Any]:
    o = f.original
    return {**attrs.asdict(f.key), "verdict": f.verdict, "new_target": f.new_target, "new_n": f.new_n,
            "new_median": _number(f.new_median), "original_n": o.n, "original_median": o.median,
            "interval": list(o.interval), "interval_kind": o.interval_kind, "band": [o.low, o.high],
            "note": f.note}


def judge(original: Sequence[Record], new: Sequence[Record], *, threshold: float = DEFAULT_THRESHOLD,
          original_run_id: str = "", run_id: str = "") -> Reproduction:
    """Every figure of ``original`` judged against ``new`` (module docstring)."""
    if not threshold >= 0:
        raise ValueError(f"threshold {threshold}: must be 0 or more")
    targets = pair_targets({r.target: r.arch for r in original}, {r.target: r.arch for r in new})
    before, after = _samples(original), _samples(new)
    failed = {(r.target, r.setup, r.suite, r.benchmark) for r in new if r.metric == FAILED_METRIC}
    used: set[MetricKey] = set()
    figures = []
    for key, values in sorted(before.items()):
        target = targets.get(key.target)
        if target is None:
            figures.append(figure_verdict(key, values, [], threshold, note=f"no target of {key.target}'s "
                                          "architecture in the new run"))
            continue
        there = key.on(target, key.setup)
        used.add(there)
        note = ("its benchmark failed in the new run" if (target, key.setup, key.suite, key.benchmark) in failed
                else "no value in the new run")
        figures.append(figure_verdict(key, values, after.get(there, []), threshold, new_target=target, note=note))
    return Reproduction(original_run_id, run_id, threshold, tuple(figures),
                        tuple(k for k in sorted(after) if k not in used), targets)


# --- outputs: lines for the terminal, reproduction.md, the junit cases, reproduction.json ---

def line(f: FigureVerdict) -> str:
    return f"{f.verdict.upper() if not f.reproduced else f.verdict}: {f.key.label()}: {f.explain()}"


def markdown(rep: Reproduction) -> str:
    lines = [f"# Reproduction of {_md(rep.original_run_id)}: {_md(rep.headline())}", "",
             f"- original run: {_md(rep.original_run_id)}", f"- this run: {_md(rep.run_id)}",
             f"- rule: {_md(RULE)} (threshold {rep.threshold:.1%})", ""]
    if any(o != n for o, n in rep.targets.items()):
        lines += ["Targets: " + ", ".join(f"{_md(o)} as {_md(n)}" for o, n in rep.targets.items()), ""]
    if rep.figures:
        lines += ["| verdict | target | setup | benchmark | params | metric | original (n, interval) | band | new (n) "
                  "| change |", "|---|---|---|---|---|---|---|---|---|---:|"]
        for f in rep.figures:
            o, unit = f.original, f.key.unit
            verdict = _md(f.verdict) if f.reproduced else f"**{_md(f.verdict)}**"
            new = f"{human(f.new_median, unit)} (n={f.new_n})" if f.new_n else _md(f.note)
            lines.append("| " + " | ".join([verdict, *(_md(v) for v in (
                f.key.target, f.key.setup, f"{f.key.suite}.{f.key.benchmark}", f.key.params or "-", f.key.metric,
                f"{human(o.median, unit)} (n={o.n}, {o.interval_kind} {human(o.interval[0], unit)} – "
                f"{human(o.interval[1], unit)})", f"{human(o.low, unit)} – {human(o.high, unit)}", new,
                f"{f.change:+.1%}" if f.new_n and math.isfinite(f.change) else "-"))]) + " |")
        lines.append("")
    if rep.only_new:
        lines += ["## Only in this run (not judged)", ""] + [f"- {_md(k.label())}" for k in rep.only_new] + [""]
    return "\n".join(lines)


def junit_cases(rep: Reproduction) -> list[Case]:
    """A testcase per figure of the original: a failure when not reproduced or not measured."""
    return [Case(f.key.label(), f"farm.reproduce.{f.key.suite}", 0.0, "pass" if f.reproduced else "failure",
                 message="" if f.reproduced else f"{f.verdict}: {f.explain()}", output=f.explain())
            for f in rep.figures]


def dumps(rep: Reproduction) -> str:
    return json.dumps(rep.as_json(), indent=2, sort_keys=True) + "\n"
