"""Did a result hold when it was run again? Per figure "reproduced", "not reproduced" or
"inconclusive", with both values.

    rep = judge(original_records, new_records, threshold=0.05, repeats_in_boot={...})   # farm reproduce's
    rep.verdict, rep.headline()

**The rule** (:func:`figure_verdict`, one small pure function) is farm compare's (farm.results.ratio,
issue #25), on the ratio *new / original* of a figure: each side is first reduced to one value per
boot (:func:`farm.results.ratio.per_boot`, run.json's ``repeats_in_boot``: repeats inside one boot
share that boot's caches and placement, so they would narrow the interval), then
:func:`farm.results.ratio.estimate_ratio` gives the ratio's Hodges–Lehmann interval and n per side,
judged against the band ``[1 - threshold, 1 + threshold]`` (default 5 %, farm qualify's threshold):

- **reproduced** when the interval lies within the band (farm compare: ``same``);
- **not reproduced** when it lies wholly above or below it (``higher``/``lower``: two-sided, a figure
  that came out much better did not reproduce either), both values and the interval given;
- **inconclusive** when the new run has fewer than ``min_boots`` boots (default the original
  pipeline's ``compare.min_boots``, else 5), when the interval straddles an edge of the band, or when
  a value of 0 or below leaves no log ratio: the runs cannot tell. Boot more (``boots:``), or widen
  the threshold;
- **not measured** when the new run has no value of it (its benchmark failed, its target did not
  boot). A figure only the new run has is listed, not judged.

**An original of fewer boots** than ``min_boots`` (a 1-boot smoke or network run; ``farm reproduce``
boots the reproduction ``min_boots`` times) has no ratio to judge, but the question "does the
original's figure lie within what the reproduction measures?" has an answer: the reproduction's 95 %
**prediction interval** for the geometric mean of as many boots as the original had
(:func:`farm.results.stats.prediction_interval`, log-normal boots), widened by the threshold:
**reproduced** when the original's value lies within it, **not reproduced** when it lies outside.

The run's verdict: ``not reproduced`` when a figure was not reproduced or not measured (or there was
none), else ``inconclusive`` when one was, else ``reproduced``; and ``not run (infrastructure)``, no
verdict, when the reproduction measured nothing because the lab failed (:func:`not_run`: the
coordinator down, no board reserved or booted), so that a lab outage never reads as a result that
failed to hold. farm reproduce exits 1, 4
(:data:`farm.errors.EXIT_INCONCLUSIVE`) and 0 for them; in junit an inconclusive figure is a skipped
case (as farm qualify's), one not reproduced or not measured a failure.

Figures pair by the record identity (farm.results.identity.MetricKey) and setup, the target
matched by name, else by architecture (the same board type under another name: a reproduction on
another board of the lab's). Failed-benchmark markers and values that are not finite are no
measurement.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Mapping, Sequence

import attrs

from farm.measure.units import human
from farm.results.identity import MetricKey
from farm.results.junit import Case, Kind
from farm.results.ratio import HIGHER, LOWER, MIN_BOOTS, SAME, RatioEstimate, Rule, estimate_ratio, per_boot
from farm.results.record import FAILED_METRIC, Record
from farm.results.markdown_text import md_escape as _md
from farm.results.stats import median, prediction_interval

DEFAULT_THRESHOLD = 0.05
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_MEASURED = "not measured"
#: a reproduction that measured nothing because the lab failed (no board reserved, none booted): no verdict
NOT_RUN = "not run (infrastructure)"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)  # a run's
RULE = ("one value per boot; the Hodges-Lehmann interval of new/original (farm compare's) within "
        "1 ± threshold: reproduced, wholly outside: not reproduced, else (or fewer than min_boots new boots) "
        "inconclusive; an original of fewer than min_boots boots: within the new run's 95 % prediction interval "
        "(± threshold): reproduced, outside: not reproduced")


@attrs.frozen
class FigureVerdict:
    key: MetricKey              # the original's (its target)
    verdict: str
    original_n: int             # boots
    original_median: float      # of its per-boot values
    ratio: RatioEstimate | None = None  # new / original; None when not measured
    new_n: int = 0
    new_median: float = math.nan
    new_target: str = ""
    note: str = ""              # why it was not measured, or inconclusive
    prediction: tuple[float, float] | None = None  # an original of too few boots: where the new run predicts it

    @property
    def reproduced(self) -> bool:
        return self.verdict == REPRODUCED

    @property
    def change(self) -> float:
        """(new median - original median) / |original median|."""
        m = self.original_median
        return (self.new_median - m) / abs(m) if m else math.nan

    def explain(self) -> str:
        unit = self.key.unit
        was = f"original {human(self.original_median, unit)} (n={self.original_n} boots)"
        if self.verdict == NOT_MEASURED or self.ratio is None:
            return f"{was}; not measured again: {self.note}"
        change = f"{self.change:+.1%}" if math.isfinite(self.change) else "n/a"
        ratio = f"; new/original {self.ratio.interval_text()}" if self.ratio.interval else ""
        why = f"; {self.note}" if self.note else ""
        if self.prediction is not None:
            lo, hi = self.prediction
            ratio = f"; the new run's prediction interval [{human(lo, unit)} – {human(hi, unit)}]"
        return f"new {human(self.new_median, unit)} (n={self.new_n} boots, {change}); {was}{ratio}{why}"


def figure_verdict(key: MetricKey, original: Sequence[float], new: Sequence[float], rule: Rule, *,
                   new_target: str = "", note: str = "") -> FigureVerdict:
    """THE rule (module docstring): the verdict on one figure, from per-boot values of each side
    (``original`` non-empty) and ``rule`` (its ``threshold`` the band, its ``min_n`` the fewest boots)."""
    m = median(original)
    if not new:
        return FigureVerdict(key, NOT_MEASURED, len(original), m, new_target=new_target,
                             note=note or "no value in the new run")
    estimate = estimate_ratio(original, new, rule)
    if len(original) < rule.min_n <= len(new):
        return predicted_verdict(key, original, new, rule, estimate, new_target)
    verdict = {SAME: REPRODUCED, HIGHER: NOT_REPRODUCED, LOWER: NOT_REPRODUCED}.get(estimate.verdict, INCONCLUSIVE)
    return FigureVerdict(key, verdict, len(original), m, estimate, len(new), median(new), new_target,
                         "" if verdict == REPRODUCED else estimate.why + estimate.more_text)


def predicted_verdict(key: MetricKey, original: Sequence[float], new: Sequence[float], rule: Rule,
                      estimate: RatioEstimate, new_target: str = "") -> FigureVerdict:
    """An original of fewer boots than the rule's minimum against a reproduction of enough (module
    docstring): does the original's value (the geometric mean of its boots) lie within the new run's
    prediction interval for that many boots, widened by the threshold?"""
    m = median(original)
    found = prediction_interval(new, len(original), rule.confidence)
    if found is None or any(not v > 0 for v in original):
        why = "a value of 0 or below: no prediction interval" if found is None else "an original value of 0 or below"
        return FigureVerdict(key, INCONCLUSIVE, len(original), m, estimate, len(new), median(new), new_target, why)
    lo, hi = found[0] * (1 - rule.threshold), found[1] * (1 + rule.threshold)
    value = math.exp(sum(math.log(v) for v in original) / len(original))
    inside = lo <= value <= hi
    what = (f"the original's {human(value, key.unit)} lies {'within' if inside else 'outside'} the new run's "
            f"{rule.confidence:.0%} prediction interval for {len(original)} boot{'s' * (len(original) != 1)} "
            f"(from n={len(new)}{f', ± {rule.threshold:.1%}' if rule.threshold else ''})")
    return FigureVerdict(key, REPRODUCED if inside else NOT_REPRODUCED, len(original), m, estimate, len(new),
                         median(new), new_target, what, (lo, hi))


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


def _samples(records: Iterable[Record], repeats_in_boot: Mapping[str, int] | int) -> dict[MetricKey, list[float]]:
    """Per figure, one value per boot (the median of its repeats): the between-boot sample."""
    measured = [r for r in records if r.metric != FAILED_METRIC and math.isfinite(r.value)]
    out: dict[MetricKey, list[float]] = {}
    for r in per_boot(measured, repeats_in_boot):
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
    min_boots: int = MIN_BOOTS
    #: why the reproduction did not run (:func:`not_run`); then it has no verdict on any figure
    not_run_why: str = ""

    def count(self, verdict: str) -> int:
        return sum(f.verdict == verdict for f in self.figures)

    @property
    def passed(self) -> bool:
        """Every figure reproduced (and there was one)."""
        return bool(self.figures) and all(f.reproduced for f in self.figures)

    @property
    def verdict(self) -> str:
        """Not reproduced when a figure failed (or none was judged), else inconclusive when one could
        not be told, else reproduced."""
        if self.not_run_why:
            return NOT_RUN
        if not self.figures or self.count(NOT_REPRODUCED) or self.count(NOT_MEASURED):
            return NOT_REPRODUCED
        return INCONCLUSIVE if self.count(INCONCLUSIVE) else REPRODUCED

    def headline(self) -> str:
        if self.not_run_why:
            return f"NOT RUN: {self.not_run_why}: no verdict on run {self.original_run_id}'s figures"
        n = len(self.figures)
        if not n:
            return f"nothing to compare: the original run {self.original_run_id} has no measured figure"
        parts = [f"{self.count(REPRODUCED)} of {n} figure{'s' * (n != 1)} reproduced"]
        parts += [f"{self.count(v)} {v}" for v in (NOT_REPRODUCED, NOT_MEASURED, INCONCLUSIVE) if self.count(v)]
        word = {REPRODUCED: "reproduced", NOT_REPRODUCED: "NOT reproduced", INCONCLUSIVE: "INCONCLUSIVE"}
        return f"{word[self.verdict]}: " + ", ".join(parts) + \
            f" (threshold {self.threshold:.1%}, min {self.min_boots} boots a side)"

    def as_json(self) -> dict[str, Any]:
        return {"format": 2, "original_run_id": self.original_run_id, "run_id": self.run_id,
                "threshold": self.threshold, "min_boots": self.min_boots, "rule": RULE, "verdict": self.verdict,
                "headline": self.headline(), "reproduced": self.count(REPRODUCED),
                "not_reproduced": self.count(NOT_REPRODUCED), "not_measured": self.count(NOT_MEASURED),
                "inconclusive": self.count(INCONCLUSIVE), "targets": self.targets,
                "figures": [_figure_json(f) for f in self.figures],
                "only_new": [attrs.asdict(k) for k in self.only_new]}


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _figure_json(f: FigureVerdict) -> dict[str, Any]:
    r = f.ratio
    return {**attrs.asdict(f.key), "verdict": f.verdict, "new_target": f.new_target, "new_n": f.new_n,
            "new_median": _number(f.new_median), "original_n": f.original_n, "original_median": f.original_median,
            "ratio": _number(r.ratio) if r else None,
            "interval": list(r.interval) if r and r.interval else None, "note": f.note,
            "prediction_interval": list(f.prediction) if f.prediction else None}


def judge(original: Sequence[Record], new: Sequence[Record], *, threshold: float = DEFAULT_THRESHOLD,
          min_boots: int = MIN_BOOTS, repeats_in_boot: Mapping[str, int] | int = 1,
          original_run_id: str = "", run_id: str = "") -> Reproduction:
    """Every figure of ``original`` judged against ``new`` (module docstring). ``repeats_in_boot``:
    per run id (each run's run.json), or one number for both: how records' repeats group into boots."""
    if not threshold >= 0:
        raise ValueError(f"threshold {threshold}: must be 0 or more")
    if min_boots < 1:
        raise ValueError(f"min_boots {min_boots}: must be 1 or more")
    rule = Rule(min_n=min_boots, threshold=threshold)
    targets = pair_targets({r.target: r.arch for r in original}, {r.target: r.arch for r in new})
    before, after = _samples(original, repeats_in_boot), _samples(new, repeats_in_boot)
    failed = {(r.target, r.setup, r.suite, r.benchmark) for r in new if r.metric == FAILED_METRIC}
    used: set[MetricKey] = set()
    figures = []
    for key, values in sorted(before.items()):
        target = targets.get(key.target)
        if target is None:
            figures.append(figure_verdict(key, values, [], rule, note=f"no target of {key.target}'s "
                                          "architecture in the new run"))
            continue
        there = key.on(target, key.setup)
        used.add(there)
        note = ("its benchmark failed in the new run" if (target, key.setup, key.suite, key.benchmark) in failed
                else "no value in the new run")
        figures.append(figure_verdict(key, values, after.get(there, []), rule, new_target=target, note=note))
    return Reproduction(original_run_id, run_id, threshold, tuple(figures),
                        tuple(k for k in sorted(after) if k not in used), targets, min_boots)


def not_run(original_run_id: str, run_id: str, status: int, threshold: float = DEFAULT_THRESHOLD,
            min_boots: int = MIN_BOOTS) -> Reproduction:
    """The reproduction ``run_id`` that measured nothing because the lab failed (it ended with ``status``, the
    lab's or the job's exit code): recorded as not run, never as a verdict."""
    return Reproduction(original_run_id, run_id, threshold, (), (), {}, min_boots,
                        not_run_why=f"the reproduction run ended with exit code {status} before it measured anything")


def measured_nothing(new: Sequence[Record]) -> bool:
    """No record of ``new`` is a measurement (failed-benchmark markers are none)."""
    return not any(r.metric != FAILED_METRIC for r in new)


# --- outputs: lines for the terminal, reproduction.md, the junit cases, reproduction.json ---

def line(f: FigureVerdict) -> str:
    return f"{f.verdict.upper() if not f.reproduced else f.verdict}: {f.key.label()}: {f.explain()}"


def markdown(rep: Reproduction) -> str:
    lines = [f"# Reproduction of {_md(rep.original_run_id)}: {_md(rep.headline())}", "",
             f"- original run: {_md(rep.original_run_id)}", f"- this run: {_md(rep.run_id)}",
             f"- rule: {_md(RULE)} (threshold {rep.threshold:.1%}, min_boots {rep.min_boots})", ""]
    if any(o != n for o, n in rep.targets.items()):
        lines += ["Targets: " + ", ".join(f"{_md(o)} as {_md(n)}" for o, n in rep.targets.items()), ""]
    if rep.figures:
        lines += ["| verdict | target | setup | benchmark | params | metric | original (boots) | new (boots) "
                  "| new/original [interval] | change |", "|---|---|---|---|---|---|---|---|---|---:|"]
        for f in rep.figures:
            unit = f.key.unit
            verdict = _md(f.verdict) if f.reproduced else f"**{_md(f.verdict)}**"
            new = f"{human(f.new_median, unit)} (n={f.new_n})" if f.new_n else _md(f.note)
            ratio = (f"original within the new run's prediction [{human(f.prediction[0], unit)} – "
                     f"{human(f.prediction[1], unit)}]: {'yes' if f.reproduced else 'no'}" if f.prediction
                     else f.ratio.text() if f.ratio else "-")
            lines.append("| " + " | ".join([verdict, *(_md(v) for v in (
                f.key.target, f.key.setup, f"{f.key.suite}.{f.key.benchmark}", f.key.params or "-", f.key.metric,
                f"{human(f.original_median, unit)} (n={f.original_n})", new, ratio,
                f"{f.change:+.1%}" if f.new_n and math.isfinite(f.change) else "-"))]) + " |")
        lines.append("")
    if rep.only_new:
        lines += ["## Only in this run (not judged)", ""] + [f"- {_md(k.label())}" for k in rep.only_new] + [""]
    return "\n".join(lines)


def junit_cases(rep: Reproduction) -> list[Case]:
    """A testcase per figure of the original: a failure when not reproduced or not measured, skipped
    when inconclusive (farm qualify's convention; the exit code says the run could not tell)."""
    def kind(f: FigureVerdict) -> Kind:
        return "pass" if f.reproduced else "skipped" if f.verdict == INCONCLUSIVE else "failure"
    return [Case(f.key.label(), f"farm.reproduce.{f.key.suite}", 0.0, kind(f),
                 message="" if f.reproduced else f"{f.verdict}: {f.explain()}", output=f.explain())
            for f in rep.figures]


def dumps(rep: Reproduction) -> str:
    return json.dumps(rep.as_json(), indent=2, sort_keys=True) + "\n"
