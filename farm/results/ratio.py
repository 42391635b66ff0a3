"""A ratio between two setups (or two runs) with its uncertainty: the one rule farm compare, farm
qualify, summary.md, the dashboard and ``farm reproduce`` judge a ratio by.

    base, other = per_boot_values(records_a), per_boot_values(records_b)   # one value per boot
    r = estimate_ratio(base, other, threshold=0.02)
    r.verdict     # "higher", "lower", "same" or "inconclusive"
    r.text()      # "0.626 [0.551–0.712], n 5/5" or "inconclusive: 0.97 [0.88–1.07] straddles 1.0, n 5/5"

**Between boots.** What varies from one boot to the next (caches, memory placement, what the board's
host — or the twin's — is doing) is the spread a published ratio must carry; repeats inside one boot
share it, so their spread understates it. Values of one boot are first reduced to their median
(:func:`per_boot`: a record's boot is ``repeat // repeats_in_boot``, run.json's ``repeats_in_boot``),
and n is the number of boots.

**The interval** (the rule's ``interval``), by default ``hodges-lehmann``
(:func:`farm.results.stats.ratio_interval`), the Hodges–Lehmann interval of the log ratio: of the
``n_a × n_b`` ratios of a boot of B to a boot of A, the k-th smallest and k-th largest, k from the
exact null distribution of Mann–Whitney's U; it is the set of factors a two-sided Mann–Whitney test
at 5 % would not reject. 5 boots a side give ``[r_(3), r_(23)]`` of 25 ratios (96.8 % exact
coverage). It assumes the sides differ by a factor only, their spreads alike; where one side is
much noisier (a guest beside bare metal) its coverage falls (log-sd 0.02 against 0.5: 94.6 % at 5
a side where it claims 96.8 %, 90.3 % at 10; benchmarks/interval_coverage.py), and ``welch``
(:func:`farm.results.stats.welch_ratio_interval`: Welch's t interval of the mean log ratio, which
assumes log-normal boots but not equal spreads) holds its 95 % within a point there. The point
shown is the ratio of the per-boot medians.

**The verdict**, against the band ``[1 - threshold, 1 + threshold]`` (threshold 0: the point 1.0):
``inconclusive`` when a side has fewer than ``min_n`` boots, when there is no interval (values of 0
or below have no log ratio), or when the interval straddles an edge of the band; ``same`` when it
lies within the band; ``higher``/``lower`` when it lies wholly above/below it. Whether higher is
better is the metric's direction (farm qualify turns it into improvement/regression). An
inconclusive estimate says how many boots a side might decide it (:attr:`RatioEstimate.boots_to_decide`).

The same function judges ``farm compare``, ``farm qualify``, ``farm reproduce``, summary.md and the
dashboard; each output names the rule (:meth:`Rule.name`).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import attrs

from farm.results.identity import MetricKey
from farm.schema import Invalid, between, setting
from farm.values import INTERVAL_METHODS
from farm.results.stats import CONFIDENCE, ratio_interval, welch_ratio_interval

#: the fewest boots a side for a conclusive ratio, unless a pipeline or command says otherwise
MIN_BOOTS = 5
#: what the interval is, as the outputs name it
#: the most boots a rule may ask for (a pipeline boots a setup at most this often)
MAX_MIN_BOOTS = 1000
HODGES_LEHMANN, WELCH = INTERVAL_METHODS
#: the interval methods a rule may name, and what each is, as the outputs say it
INTERVALS = {HODGES_LEHMANN: "Hodges-Lehmann interval of the log ratio (exact Mann-Whitney), per-boot values",
             WELCH: "Welch t interval of the mean log ratio (unequal spreads), per-boot values"}

HIGHER, LOWER, SAME, INCONCLUSIVE = "higher", "lower", "same", "inconclusive"
VERDICTS = (HIGHER, LOWER, SAME, INCONCLUSIVE)


def _threshold(value: Any) -> float:
    """A pipeline's ``compare.threshold``: a fraction (0.02) or a percentage (``2%``), 0 <= t < 1."""
    if isinstance(value, str):
        from farm.results.qualify import parse_threshold

        value = parse_threshold(value)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(f"{value!r}: expected a fraction like 0.02 or a percentage like 2%")
    if not 0 <= value < 1:
        raise Invalid("must be 0 or more and below 1 (100 %)")
    return float(value)


_threshold.schema = {"anyOf": [{"type": "number", "minimum": 0, "exclusiveMaximum": 1},  # type: ignore[attr-defined]
                               {"type": "string", "pattern": r"^[0-9.]+%?$"}]}


@attrs.frozen
class Rule:
    """How a ratio is judged: the fewest values a side, the band of "the same", the confidence (a
    pipeline's ``compare:``)."""

    min_n: int = setting(MIN_BOOTS, key="min_boots", check=between(1, MAX_MIN_BOOTS),
                         doc="boots a side needs before a ratio is judged")
    threshold: float = setting(0.0, parse=_threshold, doc="the band of 'the same': a fraction (0.02) or a percentage (2%)")
    confidence: float = setting(CONFIDENCE, read=False)
    #: judge a ratio of two sides measured with different run lengths (farm compare/qualify
    #: --across-run-lengths); by default such a ratio is inconclusive, saying the lengths
    across_lengths: bool = setting(False, read=False)
    interval: str = setting(HODGES_LEHMANN, choices=tuple(INTERVALS),
                            doc="the ratio's interval: hodges-lehmann (the default: sides that differ by a factor) "
                                "or welch (sides of unequal spread, log-normal boots)")

    @property
    def method(self) -> str:
        """What the interval is, in words."""
        return INTERVALS[self.interval]

    def name(self) -> str:
        """The rule as every output names it: ``interval hodges-lehmann 95 %, min 5 boots a side, threshold 2 %``."""
        return (f"interval {self.interval} {self.confidence * 100:g} %, min {self.min_n} boots a side, "
                f"threshold {self.threshold * 100:g} %")

    def interval_of(self, base: Sequence[float], other: Sequence[float]) -> tuple[float, float] | None:
        """The interval of ``other / base`` by this rule's method and confidence."""
        if self.interval == WELCH:
            return welch_ratio_interval(base, other, self.confidence)
        return ratio_interval(base, other, self.confidence)

    def describe(self) -> dict[str, Any]:
        return {"min_boots": self.min_n, "threshold": self.threshold, "confidence": self.confidence,
                "interval": self.method, "interval_method": self.interval}

    @classmethod
    def from_json(cls, data: Any) -> "Rule":
        """The rule run.json's ``experiment.compare`` recorded (defaults where it says nothing)."""
        if not isinstance(data, dict):
            return cls()
        min_n, threshold = data.get("min_boots", MIN_BOOTS), data.get("threshold", 0.0)
        ok_n = isinstance(min_n, int) and not isinstance(min_n, bool) and min_n >= 1
        ok_t = isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and 0 <= threshold < 1
        method = data.get("interval_method", HODGES_LEHMANN)
        return cls(min_n if ok_n else MIN_BOOTS, float(threshold) if ok_t else 0.0,
                   interval=method if method in INTERVALS else HODGES_LEHMANN)


@attrs.frozen
class RatioEstimate:
    """``other / base`` with n a side, its interval and its verdict (module docstring)."""

    ratio: float | None  # median(other) / median(base); None when a side is empty or base's median is 0
    interval: tuple[float, float] | None
    n_base: int
    n_other: int
    verdict: str
    why: str  # why the verdict, in words
    rule: Rule = Rule()
    boots_to_decide: int | None = None  # inconclusive: boots a side that might decide it (None: none foreseeable)

    @property
    def conclusive(self) -> bool:
        return self.verdict != INCONCLUSIVE

    @property
    def n_text(self) -> str:
        return f"n {self.n_base}/{self.n_other}"

    def interval_text(self, digits: int = 3) -> str:
        if self.interval is None:
            return "no interval"
        return f"[{sig(self.interval[0], digits)}–{sig(self.interval[1], digits)}]"

    def text(self, digits: int = 3) -> str:
        """One cell: ``0.626 [0.551–0.712], n 5/5``; an inconclusive one says so first, and why."""
        if self.ratio is None:
            return f"no ratio ({self.why})"
        shown = f"{sig(self.ratio, digits)} {self.interval_text(digits)}, {self.n_text}"
        return shown if self.conclusive else f"inconclusive: {shown} ({self.why}{self.more_text})"

    @property
    def more_text(self) -> str:
        """``; about 9 boots a side might decide it`` for an inconclusive estimate that more boots may decide."""
        if self.conclusive or self.boots_to_decide is None:
            return ""
        return f"; {self.boots_to_decide} boots a side might decide it"


def band_verdict(interval: tuple[float, float], threshold: float = 0.0) -> str:
    """Where an interval of a ratio lies against ``[1 - threshold, 1 + threshold]``."""
    lo, hi = interval
    if lo > 1 + threshold:
        return HIGHER
    if hi < 1 - threshold:
        return LOWER
    if 1 - threshold <= lo and hi <= 1 + threshold and threshold > 0:
        return SAME
    if threshold == 0 and lo == hi == 1:  # every value equal on both sides
        return SAME
    return INCONCLUSIVE


def estimate_ratio(base: Sequence[float], other: Sequence[float], rule: Rule = Rule()) -> RatioEstimate:
    """The ratio ``other / base`` of two samples of per-boot values, judged by ``rule``."""
    base = [v for v in base if math.isfinite(v)]
    other = [v for v in other if math.isfinite(v)]
    nb, no = len(base), len(other)
    if not nb or not no:
        return RatioEstimate(None, None, nb, no, INCONCLUSIVE, "a side has no value", rule)
    mb, mo = statistics.median(base), statistics.median(other)
    ratio = mo / mb if mb else None
    interval = rule.interval_of(base, other)
    band = (f"the band {sig(1 - rule.threshold, 3)}–{sig(1 + rule.threshold, 3)}" if rule.threshold
            else "1.0")
    if min(nb, no) < rule.min_n:
        why = f"fewer than {rule.min_n} boots a side"
        more = boots_to_decide(base, other, rule, interval)
        return RatioEstimate(ratio, interval, nb, no, INCONCLUSIVE, why, rule, more)
    if ratio is None or interval is None:
        why = "a value of 0 or below: no log ratio" if any(v <= 0 for v in (*base, *other)) else "no interval"
        return RatioEstimate(ratio, interval, nb, no, INCONCLUSIVE, why, rule)
    verdict = band_verdict(interval, rule.threshold)
    why = {HIGHER: f"the interval lies above {band}", LOWER: f"the interval lies below {band}",
           SAME: f"the interval lies within {band}", INCONCLUSIVE: f"the interval straddles {band}"}[verdict]
    more = boots_to_decide(base, other, rule, interval) if verdict == INCONCLUSIVE else None
    return RatioEstimate(ratio, interval, nb, no, verdict, why, rule, more)


def boots_to_decide(base: Sequence[float], other: Sequence[float], rule: Rule,
                    interval: tuple[float, float] | None) -> int | None:
    """Boots a side that might decide an inconclusive ratio: at least the rule's minimum; with an
    interval, as many as would narrow it (roughly as 1/sqrt(n)) until it clears the nearer edge of
    the band its log-midpoint lies beyond, or fits inside the band. A forecast from the spread seen
    so far, not a promise; None when no number of boots is foreseeable (the midpoint on an edge, a
    value of 0 or below) or it would pass :data:`MAX_MIN_BOOTS`."""
    n = min(len(base), len(other))
    if interval is None or not all(v > 0 for v in interval):
        return rule.min_n if n < rule.min_n and all(v > 0 for v in (*base, *other)) else None
    lo, hi = math.log(interval[0]), math.log(interval[1])
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    edges = [math.log(1 + rule.threshold)] + ([math.log(1 - rule.threshold)] if rule.threshold else [])
    # to clear the band: half-width below the midpoint's distance to the nearer edge beyond which it lies;
    # to fit inside it (threshold > 0, midpoint within the band): below the distance to the nearer edge
    room = min(abs(mid - e) for e in edges)
    if half == 0 or room == 0:
        return max(rule.min_n, n) if n < rule.min_n else None
    needed = max(math.ceil(n * (half / room) ** 2), rule.min_n, n + 1)
    return needed if needed <= MAX_MIN_BOOTS else None


def lengths_apart(base: Iterable[str], other: Iterable[str]) -> str | None:
    """Why two sides' run lengths (their records' run-length params, farm.results.identity.
    run_length_params) make them unlike, or None: ``samples=800 against samples=200000``. A side that
    says none (an import of the lab's files, a benchmark without run lengths) is not told apart.
    RTT max and stdev depend on the sample count, a throughput's noise on the window's seconds."""
    a, b = sorted({t for t in base if t}), sorted({t for t in other if t})
    if not a or not b or a == b:
        return None
    return f"run lengths differ: {' | '.join(a)} against {' | '.join(b)}"


def judged_across_lengths(estimate: RatioEstimate, apart: str | None) -> RatioEstimate:
    """``estimate`` made inconclusive when its sides' run lengths differ (``apart``, from
    :func:`lengths_apart`) and its rule does not allow that (``across_lengths``); the difference is
    said either way."""
    if apart is None:
        return estimate
    if estimate.rule.across_lengths:
        return attrs.evolve(estimate, why=f"{estimate.why}; {apart}")
    return attrs.evolve(estimate, verdict=INCONCLUSIVE, why=f"{apart} (--across-run-lengths to judge them)",
                        boots_to_decide=None)


# --- one value per boot ------------------------------------------------------------------------


def boot_of(repeat: int, repeats_in_boot: int) -> int:
    """The boot a record's ``repeat`` belongs to (the runner numbers repeat = boot * N + i)."""
    return repeat // max(1, repeats_in_boot)


def per_boot(records: Iterable[Any], repeats_in_boot: Mapping[str, int] | int = 1) -> list[Any]:
    """``records`` with the values of one boot (run, target, setup, record identity, boot) reduced
    to their median: one record per boot, its ``repeat`` the boot's number, in the order first
    seen. ``repeats_in_boot``: per run id (run.json's), or one number for all; a run it does not
    name has 1. Values that are not finite are left out (a boot of NaN alone gives none)."""
    def n_of(run_id: str) -> int:
        return repeats_in_boot if isinstance(repeats_in_boot, int) else repeats_in_boot.get(run_id, 1)

    groups: dict[tuple, list[Any]] = {}
    for r in records:
        if not math.isfinite(r.value):
            continue
        run_id = _run_id(r)
        groups.setdefault((run_id, MetricKey.of(r), boot_of(r.repeat, n_of(run_id))), []).append(r)
    out = []
    for (_, _, boot), group in groups.items():
        value = float(group[0].value if len(group) == 1 else statistics.median(r.value for r in group))
        first = group[0]
        if attrs.has(type(first)):
            out.append(attrs.evolve(first, value=value, repeat=boot))
        else:  # a store row
            out.append(BootValue(_run_id(first), first.target, first.setup, first.suite, first.benchmark,
                                 first.params, first.metric, first.unit, boot, value))
    return out


def _run_id(row: Any) -> str:
    """A record's run id (a store row has its run's number instead)."""
    run_id = getattr(row, "run_id", None)
    return run_id if isinstance(run_id, str) else str(getattr(row, "run", ""))


@attrs.frozen
class BootValue:
    """One boot's value of a metric, made from rows that are not records (the store's)."""

    run_id: str
    target: str
    setup: str
    suite: str
    benchmark: str
    params: str
    metric: str
    unit: str
    repeat: int
    value: float


def _run_info(run_dir: str | Path) -> dict:
    """A run directory's run.json as a mapping; {} when it has none or it does not read (its own
    reader, farm.results.runjson, names what is wrong: here the run only has no per-boot facts)."""
    try:
        info = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: a run.json nested too deep
        return {}
    return info if isinstance(info, dict) else {}


def repeats_in_boot(run_dir: str | Path) -> dict[str, int]:
    """run id -> ``repeats_in_boot`` of a run directory's run.json (empty when it has none: an
    import, a pytest session's records: every repeat is then a boot of its own)."""
    info = _run_info(run_dir)
    if not isinstance(info.get("run_id"), str):
        return {}
    n = info.get("repeats_in_boot", 1)
    return {info["run_id"]: n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else 1}


def recorded_rule(run_dir: str | Path) -> Rule | None:
    """The comparison rule a run's pipeline set (run.json ``experiment.compare``), if it set one."""
    experiment = _run_info(run_dir).get("experiment")
    if not isinstance(experiment, dict) or not isinstance(experiment.get("compare"), dict):
        return None
    return Rule.from_json(experiment["compare"])


def sig(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, trailing zeros kept (1.00, 0.500, 12.3)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    text = f"{value:#.{digits}g}"
    mantissa, e, exponent = text.partition("e")
    return mantissa.rstrip(".") + (e + exponent if e else "")
