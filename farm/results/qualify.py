"""Release qualification: is the candidate worse than the baseline, metric by metric? The verdicts, computed
from the records alone (pure); farm.results.qualify_outputs writes them (qualify.md, qualify.csv, junit.xml).

A **metric** is identified by ``(target, suite, benchmark, params, metric, unit)``, plus the setup
it ran under (see *Setups*): the record identity (farm.results.identity.MetricKey), whose params
leave out run lengths and measured counts. Its values, one per boot (the values of one boot are
first reduced to their median, :func:`farm.results.ratio.per_boot`), form one sample on each side.

**The verdict is farm compare's** (:func:`farm.results.ratio.estimate_ratio`, the one decision rule
of compare, qualify, reproduce and the dashboard) on the ratio candidate / baseline, at confidence
``1 - alpha``, turned into better or worse by the metric's direction:

* with fewer than ``min_boots`` boots on a side (5 by default), or no interval (a value of 0 or
  below), **inconclusive**: never a regression on the threshold alone (1 boot against 1 of the same
  build differ by the noise, and a 15 % noise calls 3 of 8 metrics "regressions"). The row says how
  many boots a side might decide it;
* else a **regression** only when the ratio's whole interval lies beyond the threshold in the bad
  direction (below ``1 - threshold`` where higher is better, above ``1 + threshold`` where lower is
  better), an **improvement** when it lies wholly beyond it in the good direction, **unchanged** when
  it lies within ``[1 - threshold, 1 + threshold]``, and **inconclusive** when it straddles an edge:
  the data cannot tell whether the change is beyond the threshold, whatever the medians say.

Run lengths are no part of a metric's key, but a ratio of two sides whose records state different
run lengths (an 800-sample sweep against a 200,000-sample one) is inconclusive, saying them, unless
``across_lengths`` (``--across-run-lengths``): farm compare's rule again.

Inconclusive does not fail the gate; it is listed and is a skipped JUnit case. The interval is the
rule's (``hodges-lehmann`` by default, ``welch`` for sides of unequal spread: farm.results.ratio);
the two-sided Mann–Whitney p is reported beside it. Qualify as a release gate from a pipeline that
boots each setup at least ``min_boots`` times (``pipelines/qualify.yaml``, the release jobs').

The threshold keeps a tiny but consistent change (a 0.3 % drift that 30 boots will resolve) from
failing a release, the interval and the minimum of boots keep one noisy run from doing so.

**Direction** comes from the benchmark's registration, which names the direction of each of its
units, and of a metric whose direction is not its unit's (iperf3's ``host_cpu``, the lab host's CPU,
has none: reported, never a regression of the target) (:data:`farm.bench.registry.REGISTRATIONS`);
for a benchmark farm does not register (a pytest test's ``farm_record``) from the unit
(:func:`farm.results.direction.direction`): higher is better for rates (bit/s, bytes/s, MB/s, ops/s,
...), lower is better for times (us, ms, s, ...), cycles, ticks and per-byte costs, and for percentages
of loss or CPU utilisation. A unit with no known direction (``count``, e.g. TCP retransmits, or any unit farm does
not know) is compared and its change reported, but it is never a regression: guessing a direction
would fail releases for the wrong reason.

**Setups**: the key includes the setup, because ``default`` and ``one-core`` of the same board are
different experiments. Baseline and candidate pair setups by name; when a target has exactly one
setup on each side under different names (the candidate was run as ``patched``, the baseline as
``default``) those two are paired, and the pairing is reported. An explicit ``setups`` mapping
(baseline name -> candidate name) overrides both. Metrics with no partner are listed as only in
the baseline or only in the candidate, never silently dropped.

**What fails the gate besides a regression** (a broken candidate must never pass):

* a benchmark that *failed* in the candidate (its ``metric=failed`` record);
* a candidate metric with a value that is not a measurement: NaN (not measured), infinite or
  negative (no quantity farm measures is either); the finite values of it are still compared;
* a baseline metric the candidate did not measure at all (``allow_missing=False``, the default;
  ``farm qualify --allow-missing`` lists them without failing).

Baseline values that are NaN are left out of its samples (the baseline is what passed before).
Each side's records must be one value per run, target, setup, metric and repeat: two records
under one such key mean two different setups shared a name (see
:func:`farm.results.record.check_unique`) and are refused rather than pooled into one median.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Mapping, Sequence

import attrs

from farm.errors import JobError
from farm.measure import HIGHER_IS_BETTER, LOWER_IS_BETTER, UNKNOWN_DIRECTION, impossible
from farm.measure.units import human
from farm.results.direction import direction
from farm.results.identity import MetricKey, run_length_params
from farm.results.record import FAILED_METRIC, Record, check_unique
from farm.results.ratio import (HIGHER, HODGES_LEHMANN, LOWER, MIN_BOOTS, SAME, RatioEstimate, Rule, estimate_ratio,
                                judged_across_lengths, lengths_apart, per_boot)
from farm.results.stats import Summary, mann_whitney_u, median

# verdicts
REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"            # median moved no more than the threshold
NO_DIRECTION = "no direction"      # moved more than the threshold; the unit has no known direction
INCONCLUSIVE = "inconclusive"      # too few boots, or the ratio's interval straddles the threshold

RULE_INTERVAL = "interval"


def parse_threshold(text: str) -> float:
    """``"5%"`` or ``"0.05"`` -> 0.05. A bare number above 1 is refused (``5`` is ambiguous)."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise JobError(f"threshold {text!r}: expected a fraction like 0.05 or a percentage like 5%") from None
    if not math.isfinite(value) or value < 0:
        raise JobError(f"threshold {text!r}: must be a finite value of 0 or more")
    if value >= 1 and not raw.endswith("%"):
        raise JobError(f"threshold {text!r}: a fraction must be below 1; write {raw}% for a percentage")
    return value


def parse_alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise JobError(f"alpha {text!r}: expected a probability like 0.05") from None
    if not 0 < value < 1:
        raise JobError(f"alpha {text!r}: must be between 0 and 1")
    return value


@attrs.frozen
class Sample(Summary):
    """The values of one metric on one side, and their summary."""

    values: tuple[float, ...]


@attrs.frozen
class Comparison:
    key: MetricKey
    baseline_setup: str
    candidate_setup: str
    baseline: Sample
    candidate: Sample
    direction: int
    change: float           # (candidate median - baseline median) / |baseline median|
    rule: str               # RULE_INTERVAL: the one rule (farm.results.ratio)
    p_value: float          # of the Mann–Whitney U test, reported beside the interval
    test_method: str        # "exact" or "normal"
    min_p: float            # the smallest p the test could give for these sizes
    significant: bool       # the ratio's interval excludes 1
    verdict: str
    ratio_interval: tuple[float, float] | None = None  # of candidate / baseline median, at 1 - alpha
    threshold: float = 0.0  # the threshold the verdict used (the interval rule's band)
    estimate: RatioEstimate | None = None  # the decision rule's estimate the verdict came from

    @property
    def ratio(self) -> float:
        """Candidate median / baseline median (``1 + change``)."""
        return 1 + self.change

    @property
    def setup(self) -> str:
        if self.baseline_setup == self.candidate_setup:
            return self.baseline_setup
        return f"{self.baseline_setup} -> {self.candidate_setup}"

    def explain(self, threshold: float, alpha: float) -> str:
        """One sentence: what moved, by how much, and which rule made it (in)significant."""
        unit = self.key.unit
        moved = (f"median {human(self.baseline.median, unit)} -> {human(self.candidate.median, unit)} "
                 f"({format_change(self.change)}, threshold {threshold:.1%})")
        lo, hi = self.ratio_interval or (math.nan, math.nan)
        band = (1 - threshold, 1 + threshold)
        n = f"n={self.baseline.n}+{self.candidate.n} boots"
        if self.ratio_interval is None:
            why = f"no {1 - alpha:.0%} interval ({self.estimate.why if self.estimate else 'too few boots'}; {n})"
        else:
            where = ("lies within" if band[0] <= lo and hi <= band[1] else
                     "lies entirely beyond" if hi < band[0] or lo > band[1] else "straddles")
            why = (f"ratio {self.ratio:.4g}, {1 - alpha:.0%} CI {lo:.4g} – {hi:.4g} {where} the threshold "
                   f"band {band[0]:.4g} – {band[1]:.4g} ({n}; Mann-Whitney U p={self.p_value:.3g})")
        if self.estimate is not None and not self.estimate.conclusive:
            if self.ratio_interval is not None and not self.estimate.why.startswith("the interval straddles"):
                why += f": {self.estimate.why}, not judged"
            why += self.estimate.more_text
        if self.estimate is not None:
            why += f"; rule: {self.estimate.rule.name()}"
        better = {HIGHER_IS_BETTER: "higher is better", LOWER_IS_BETTER: "lower is better",
                  UNKNOWN_DIRECTION: f"unit {unit!r} has no known direction, never a regression"}
        intervals = [(side, s.interval) for side, s in (("baseline", self.baseline), ("candidate", self.candidate))]
        ci = "; ".join(f"{side} 95 % CI {human(i[0], unit)} – {human(i[1], unit)}" for side, i in intervals if i)
        return f"{self.key.metric} {self.verdict}: {moved}; {why}{f'; {ci}' if ci else ''}; {better[self.direction]}"


@attrs.frozen
class Unmatched:
    """A metric (under a setup) found on one side only."""

    key: MetricKey
    setup: str
    n: int
    median: float


@attrs.frozen
class Broken:
    """A candidate metric (under a setup) with values that are not measurements, or a benchmark
    of the candidate that failed (``key.metric`` is ``failed``): either fails the gate."""

    key: MetricKey
    setup: str
    n: int          # values (or failed runs) of it in the candidate
    reason: str     # "3 of 3 values NaN (not measured)", "benchmark failed in 1 run"

    def explain(self) -> str:
        if self.key.metric == FAILED_METRIC:
            return f"{self.key.suite}.{self.key.benchmark} failed in the candidate ({self.reason})"
        return f"{self.key.metric}: {self.reason}"


@attrs.frozen
class Qualification:
    comparisons: tuple[Comparison, ...]
    only_in_baseline: tuple[Unmatched, ...]
    only_in_candidate: tuple[Unmatched, ...]
    setup_pairs: tuple[tuple[str, str, str], ...]  # (target, baseline setup, candidate setup), paired by rule
    threshold: float
    alpha: float
    allow_missing: bool = False  # a baseline metric the candidate did not measure is listed, not failed
    broken: tuple[Broken, ...] = ()  # candidate metrics that are not measurements, failed benchmarks
    min_boots: int = MIN_BOOTS  # the interval rule's fewest boots a side
    interval: str = HODGES_LEHMANN  # the rule's interval method (farm.results.ratio.INTERVALS)

    @property
    def rule(self) -> Rule:
        """The decision rule every comparison was judged by."""
        return Rule(self.min_boots, self.threshold, confidence=1 - self.alpha, interval=self.interval)

    @property
    def missing(self) -> tuple[Unmatched, ...]:
        """Baseline metrics the candidate did not measure, when that counts as failing."""
        return () if self.allow_missing else self.only_in_baseline

    @property
    def regressions(self) -> tuple[Comparison, ...]:
        return tuple(c for c in self.comparisons if c.verdict == REGRESSION)

    @property
    def improvements(self) -> tuple[Comparison, ...]:
        return tuple(c for c in self.comparisons if c.verdict == IMPROVEMENT)

    @property
    def inconclusive(self) -> tuple[Comparison, ...]:
        return tuple(c for c in self.comparisons if c.verdict == INCONCLUSIVE)

    @property
    def passed(self) -> bool:
        return not self.regressions and not self.missing and not self.broken

    def headline(self) -> str:
        n = f"{len(self.comparisons)} metric{'s' * (len(self.comparisons) != 1)}"
        problems = []
        if self.regressions:
            names = ", ".join(c.key.label() for c in self.regressions[:3])
            more = f" and {len(self.regressions) - 3} more" if len(self.regressions) > 3 else ""
            problems.append(f"{len(self.regressions)} regression{'s' * (len(self.regressions) != 1)} "
                            f"in {n}: {names}{more}")
        failed = [b for b in self.broken if b.key.metric == FAILED_METRIC]
        invalid = [b for b in self.broken if b.key.metric != FAILED_METRIC]
        if failed:
            names = ", ".join(f"{b.key.suite}.{b.key.benchmark} {b.key.target}" for b in failed[:3])
            problems.append(f"{len(failed)} benchmark{'s' * (len(failed) != 1)} failed in the candidate: {names}")
        if invalid:
            names = ", ".join(f"{b.key.label()} ({b.reason})" for b in invalid[:3])
            more = f" and {len(invalid) - 3} more" if len(invalid) > 3 else ""
            problems.append(f"{len(invalid)} candidate metric{'s' * (len(invalid) != 1)} not measured "
                            f"or impossible: {names}{more}")
        if self.missing:
            names = ", ".join(u.key.label() for u in self.missing[:3])
            more = f" and {len(self.missing) - 3} more" if len(self.missing) > 3 else ""
            problems.append(f"{len(self.missing)} baseline metric{'s' * (len(self.missing) != 1)} not "
                            f"measured by the candidate: {names}{more}")
        if problems:
            return "FAILED: " + "; ".join(problems)
        unsure = f", {len(self.inconclusive)} inconclusive" if self.inconclusive else ""
        return f"passed: no regression in {n} ({len(self.improvements)} improved{unsure})"


def format_change(change: float) -> str:
    if math.isnan(change):
        return "n/a"
    if math.isinf(change):
        return "+inf (baseline 0)" if change > 0 else "-inf (baseline 0)"
    return f"{change:+.1%}"


def relative_change(baseline: float, candidate: float) -> float:
    if baseline == 0:
        return 0.0 if candidate == 0 else math.copysign(math.inf, candidate)
    return (candidate - baseline) / abs(baseline)


def compare(key: MetricKey, baseline_setup: str, candidate_setup: str, baseline: Sequence[float],
            candidate: Sequence[float], *, threshold: float, alpha: float, min_boots: int = MIN_BOOTS,
            interval: str = HODGES_LEHMANN, apart: str | None = None,
            across_lengths: bool = False) -> Comparison:
    """Compare one metric's two samples, one value per boot, by the one decision rule (module docstring);
    ``apart``: how the two sides' run lengths differ (farm.results.ratio.lengths_apart), if they do."""
    base, cand = Sample(tuple(baseline)), Sample(tuple(candidate))
    sign = direction(key.metric, key.unit, key.benchmark)
    change = relative_change(base.median, cand.median)
    test = mann_whitney_u(base.values, cand.values)
    rule = Rule(min_boots, threshold, confidence=1 - alpha, interval=interval, across_lengths=across_lengths)
    estimate = judged_across_lengths(estimate_ratio(base.values, cand.values, rule), apart)
    ratio_ci = estimate.interval
    significant = ratio_ci is not None and not ratio_ci[0] <= 1 <= ratio_ci[1]
    if sign == UNKNOWN_DIRECTION:
        verdict = NO_DIRECTION if abs(change) > threshold else UNCHANGED
    else:
        verdict = {HIGHER: IMPROVEMENT if sign == HIGHER_IS_BETTER else REGRESSION,
                   LOWER: REGRESSION if sign == HIGHER_IS_BETTER else IMPROVEMENT,
                   SAME: UNCHANGED}.get(estimate.verdict, INCONCLUSIVE)
    return Comparison(key=key, baseline_setup=baseline_setup, candidate_setup=candidate_setup,
                      baseline=base, candidate=cand, direction=sign, change=change, rule=RULE_INTERVAL,
                      p_value=test.p_value, test_method=test.method, min_p=test.min_p, significant=significant,
                      verdict=verdict, ratio_interval=ratio_ci, threshold=threshold, estimate=estimate)


Samples = dict[tuple[str, str], dict[MetricKey, list[float]]]


def _key(record: Record) -> MetricKey:
    """The record's identity on its target, the setup apart: baseline and candidate pair setups."""
    return MetricKey.of(record).on(record.target)


def _lengths(records: Iterable[Record]) -> dict[tuple[str, str, MetricKey], set[str]]:
    """target, setup, metric -> the run-length params its records state (farm.results.ratio.lengths_apart)."""
    out: dict[tuple[str, str, MetricKey], set[str]] = defaultdict(set)
    for r in records:
        out[r.target, r.setup, _key(r)].add(run_length_params(r.benchmark, r.params))
    return out


def _samples(records: Iterable[Record], repeats_in_boot: Mapping[str, int] | int = 1) -> Samples:
    """target, setup -> metric -> values, one per boot (every boot of every run given); NaN values and
    failed benchmarks left out (NaN has no rank; the candidate's are reported by :func:`_broken`)."""
    out: Samples = defaultdict(lambda: defaultdict(list))
    for r in per_boot(records, repeats_in_boot):
        if math.isnan(r.value) or r.metric == FAILED_METRIC:
            continue
        out[r.target, r.setup][_key(r)].append(r.value)
    return out


def _broken(records: Iterable[Record]) -> tuple[Broken, ...]:
    """The candidate's failed benchmarks and metrics with values that are not measurements."""
    values: dict[tuple[str, MetricKey], list[float]] = defaultdict(list)
    for r in records:
        values[r.setup, _key(r)].append(r.value)
    out = []
    for (setup, key), vs in sorted(values.items()):
        if key.metric == FAILED_METRIC:
            out.append(Broken(key, setup, len(vs), f"benchmark failed in {len(vs)} run{'s' * (len(vs) != 1)}"))
            continue
        reasons: dict[str, int] = {}
        for v in vs:
            if (why := impossible(v)) is not None:
                reasons[why] = reasons.get(why, 0) + 1
        if reasons:
            out.append(Broken(key, setup, len(vs), ", ".join(
                f"{count} of {len(vs)} value{'s' * (len(vs) != 1)} {why.removeprefix('is ')}" for why, count in reasons.items())))
    return tuple(out)


def pair_setups(baseline: Iterable[tuple[str, str]], candidate: Iterable[tuple[str, str]],
                explicit: Mapping[str, str] | None = None) -> list[tuple[str, str, str]]:
    """Pairs ``(target, baseline setup, candidate setup)`` to compare (rules: module docstring)."""
    base_by_target: dict[str, set[str]] = defaultdict(set)
    cand_by_target: dict[str, set[str]] = defaultdict(set)
    for target, setup in baseline:
        base_by_target[target].add(setup)
    for target, setup in candidate:
        cand_by_target[target].add(setup)
    pairs = []
    for target in sorted(base_by_target.keys() & cand_by_target.keys()):
        bs, cs = base_by_target[target], cand_by_target[target]
        if explicit:
            pairs += [(target, b, explicit.get(b, b)) for b in sorted(bs) if explicit.get(b, b) in cs]
        elif len(bs) == 1 and len(cs) == 1:
            pairs.append((target, next(iter(bs)), next(iter(cs))))
        else:
            pairs += [(target, s, s) for s in sorted(bs & cs)]
    return pairs


def qualify(baseline_records: Iterable[Record], candidate_records: Iterable[Record], *,
            threshold: float = 0.05, alpha: float = 0.05, setups: Mapping[str, str] | None = None,
            allow_missing: bool = False, repeats_in_boot: Mapping[str, int] | int = 1,
            min_boots: int = MIN_BOOTS, interval: str = HODGES_LEHMANN,
            across_lengths: bool = False) -> Qualification:
    """Compare every metric present in both record sets; see the module docstring. ``repeats_in_boot``:
    per run id, the values one boot gave of a benchmark (run.json's; a run not named: 1)."""
    if not threshold >= 0:
        raise JobError(f"threshold {threshold}: must be 0 or more")
    if not 0 < alpha < 1:
        raise JobError(f"alpha {alpha}: must be between 0 and 1")
    baseline_records, candidate_records = list(baseline_records), list(candidate_records)
    check_unique(baseline_records, "baseline")
    check_unique(candidate_records, "candidate")
    broken = _broken(candidate_records)
    base, cand = _samples(baseline_records, repeats_in_boot), _samples(candidate_records, repeats_in_boot)
    pairs = pair_setups(base, cand, setups)
    base_lengths, cand_lengths = _lengths(baseline_records), _lengths(candidate_records)
    comparisons: list[Comparison] = []
    used_base: set[tuple[str, str, MetricKey]] = set()
    used_cand: set[tuple[str, str, MetricKey]] = set()
    for target, bsetup, csetup in pairs:
        bm, cm = base[target, bsetup], cand[target, csetup]
        for key in sorted(bm.keys() & cm.keys()):
            comparisons.append(compare(key, bsetup, csetup, bm[key], cm[key], threshold=threshold, alpha=alpha,
                                       min_boots=min_boots, interval=interval, across_lengths=across_lengths,
                                       apart=lengths_apart(base_lengths[target, bsetup, key],
                                                           cand_lengths[target, csetup, key])))
            used_base.add((target, bsetup, key))
            used_cand.add((target, csetup, key))

    # a baseline metric whose candidate values were all NaN is reported as broken, not as missing
    broken_keys = {(b.key.target, b.key) for b in broken}
    used_base |= {(target, setup, key) for (target, setup), metrics in base.items() for key in metrics
                  if (target, key) in broken_keys}

    def unmatched(samples, used) -> tuple[Unmatched, ...]:
        return tuple(Unmatched(key, setup, len(values), median(values))
                     for (target, setup), metrics in sorted(samples.items())
                     for key, values in sorted(metrics.items()) if (target, setup, key) not in used)

    renamed = tuple(p for p in pairs if p[1] != p[2])
    return Qualification(comparisons=tuple(comparisons), only_in_baseline=unmatched(base, used_base),
                         only_in_candidate=unmatched(cand, used_cand), setup_pairs=renamed,
                         threshold=threshold, alpha=alpha, allow_missing=allow_missing, broken=broken,
                         min_boots=min_boots, interval=interval)
