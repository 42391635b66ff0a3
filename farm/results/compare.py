"""``farm compare``: put result directories side by side, one row per measured quantity.

The typical question is "how does the QEMU twin compare with the board?" or "what did the patch
change?": the two runs have different targets and setups, so a row is joined on what was
measured, ``(suite, benchmark, params, metric, unit)``, and not on where: the record identity
(:class:`~farm.results.identity.MetricKey`) without target and setup, whose params leave out run
lengths and measured counts.

**Columns.** Each input (a result directory) gives one column per ``(target, setup)`` found in it,
in the order they first appear; almost always that is one. Pooling two targets or setups into one
median would mix two experiments, so they are never merged; two records of one run, target, setup,
measurement and repeat (two setups that shared a name) are refused, not pooled. A column's label is its setup; when an
input holds several targets it is ``target/setup``; a label that another column already has gets
``@<input name>`` (the directory name) appended, then ``#2``, ``#3`` if that still collides.

**Values.** The values of one boot are first reduced to their median (run.json's
``repeats_in_boot``: :func:`farm.results.ratio.per_boot`), so n is the number of boots, and the
column's value is the median of those, with ``n`` beside it. ``ratio`` is last column / first column
(for two inputs: candidate / baseline); with three or more columns each later one also gets
``<label>/<first label>``. Each ratio carries n a side, the 95 % Hodges–Lehmann interval of the log
ratio and a verdict (:mod:`farm.results.ratio`: ``higher``, ``lower``, ``same`` or
``inconclusive``, under the rule of the first input's pipeline or the command's
``--min-boots``/``--threshold``); an inconclusive ratio is written as such, never as a bare number.
A ratio is left empty when either side is missing or the first is 0. Whether a ratio above 1 is
good depends on the unit (throughput up, cycles down): this module reports, :mod:`farm.results.qualify`
judges.

**Run lengths.** They are no part of the key (an 800-sample sweep joins a 200,000-sample one, ISA-L's
0.05 s a 3 s run), but RTT max and stdev depend on the sample count and a figure's noise on its
window: a ratio of two sides whose records state different run lengths is **inconclusive**, saying
them (``run lengths differ: samples=800 against samples=200000``), unless the rule allows it
(``--across-run-lengths``: judged, the difference still said). A side that states none (an import of
the lab's files) is not told apart.

**Missing.** A key present in some columns only is kept as a row with empty cells, and listed in
:attr:`Comparison.missing` and in its own section of ``compare.md``: a benchmark that silently
vanished from a run is a result too.

**Methods apart.** The ``method=`` param is part of the key, so farm's faster ``ipbench-echo`` sweep
and ipbench's own figures (an imported history, or a live ``method: ipbench`` sweep, both
``method=ipbench``), or the older ``iperf3-sockperf``, are never joined: their figures share names
but not definitions. Such pairs are listed by :func:`methods_apart` and in
``compare.md``'s section "Not joined: methods differ", so that a comparison that joined nothing says why.

This module joins and judges (pure, but for reading the inputs); farm.results.compare_outputs writes
compare.csv and compare.md, farm.results.compare_plot draws compare.png.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Mapping, Sequence

import attrs

from farm.errors import JobError
from farm.results.ratio import (HIGHER, INCONCLUSIVE, SAME, RatioEstimate, Rule, estimate_ratio, judged_across_lengths,
                                lengths_apart, per_boot)
from farm.results.stats import cv, median_interval
from farm.results.identity import FLAG, MetricKey, run_length_params
from farm.results.record import Record, check_unique, format_params, parse_params
from farm.results.sweeps import run_sweeps

PathLike = str | os.PathLike[str]
KEY_FIELDS = ("suite", "benchmark", "params", "metric", "unit")
RESULTS_FILE = "results.csv"
#: a ratio this close to 1 is drawn as "no change" (grey), neither better nor worse
SAME_BAND = 0.01


@attrs.frozen
class Column:
    """One ``(target, setup)`` of one input, and its label in the outputs."""

    label: str
    source: str  # the input's name (directory name)
    target: str
    setup: str


@attrs.frozen
class Row:
    key: MetricKey
    medians: tuple[float | None, ...]  # per column, None where the column lacks the key
    counts: tuple[int, ...]            # values behind each median: one per boot
    ratios: tuple[float | None, ...]   # column i / column 0, for i = 1 .. len(columns) - 1
    values: tuple[tuple[float, ...], ...] = ()  # per column, the values behind the median (one per boot)
    #: per later column, its ratio to column 0 with n, interval and verdict (farm.results.ratio)
    estimates: tuple[RatioEstimate, ...] = ()
    #: per column, how many of its values were flagged (farm.results.sanity: a remark on the record)
    flagged: tuple[int, ...] = ()

    @property
    def cvs(self) -> tuple[float | None, ...]:
        """Per column, the coefficient of variation of its values (None below 2 values)."""
        return tuple(cv(v) for v in self.values)

    @property
    def intervals(self) -> tuple[tuple[float, float] | None, ...]:
        """Per column, the 95 % interval of its median (None below 6 values)."""
        return tuple(median_interval(v) for v in self.values)

    @property
    def ratio_intervals(self) -> tuple[tuple[float, float] | None, ...]:
        """Per later column, the 95 % interval of its ratio to column 0 (:mod:`farm.results.ratio`)."""
        return tuple(e.interval for e in self.estimates)

    @property
    def ratio_interval(self) -> tuple[float, float] | None:
        return self.ratio_intervals[-1] if self.ratio_intervals else None

    @property
    def estimate(self) -> RatioEstimate | None:
        """Last column / first column, judged."""
        return self.estimates[-1] if self.estimates else None

    @property
    def ratio(self) -> float | None:
        """Last column / first column."""
        return self.ratios[-1] if self.ratios else None


@attrs.frozen
class Missing:
    key: MetricKey
    present: tuple[str, ...]  # labels of the columns that have it
    absent: tuple[str, ...]   # labels of the columns that do not


@attrs.frozen
class Apart:
    """Keys that are one measurement but for their ``method=``: which columns have which method."""

    key: MetricKey  # params without method=
    methods: tuple[tuple[str, tuple[str, ...]], ...]  # (method, labels of the columns that have it)


@attrs.frozen
class Comparison:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]        # every key, in order of first appearance
    missing: tuple[Missing, ...]  # the keys some columns lack, in the same order
    #: per column with a network sweep, its label and the sweep's wide rows (repeats folded):
    #: drawn as curves (compare-sweep.png), not as bars of ratios
    sweeps: tuple[tuple[str, tuple[dict, ...]], ...] = ()
    #: how each ratio was judged (farm.results.ratio.Rule)
    rule: Rule = Rule()

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(c.label for c in self.columns)


def load_result_dir(path: PathLike) -> tuple[str, list[Record]]:
    """``(directory name, records of <path>/results.csv)``; the name labels the input in
    :func:`compare`. A missing directory or results file raises :class:`~farm.errors.JobError`
    naming the path; a malformed file raises the :class:`~farm.errors.ParseError` of
    :func:`~farm.results.csvout.read_records`."""
    path = Path(path)
    results = path / RESULTS_FILE
    if not path.is_dir():
        raise JobError(f"compare: {path}: not a result directory")
    if not results.is_file():
        raise JobError(f"compare: {results}: no such file (is {path} a farm result directory?)")
    from farm.results.rundata import read_run_records  # CPU figures of before read as what they were

    return path.resolve().name or str(path), read_run_records(path)


def load_result_dirs(paths: Sequence[PathLike]) -> tuple[list[tuple[str, list[Record]]], dict[str, int], Rule | None]:
    """The inputs of :func:`compare` from result directories, the ``repeats_in_boot`` of each run
    (run.json: the boots behind the values) and the comparison rule the first one's pipeline set."""
    from farm.results.ratio import recorded_rule, repeats_in_boot

    inputs = [load_result_dir(p) for p in paths]
    boots: dict[str, int] = {}
    for p in paths:
        boots.update(repeats_in_boot(p))
    return inputs, boots, recorded_rule(paths[0]) if paths else None


def compare(inputs: Sequence[tuple[str, Sequence[Record]]], *, rule: Rule = Rule(),
            repeats_in_boot: Mapping[str, int] | int = 1) -> Comparison:
    """Join the records of several inputs, each ``(name, records)``, into a :class:`Comparison`
    (see the module docstring for columns, medians, ratios and missing keys). ``repeats_in_boot``:
    per run id, how many values of a benchmark one boot gave (run.json's; a run not named: 1);
    ``rule``: how each ratio is judged.

    At least two columns are needed, and every input must hold a record: an empty input or a
    single column raises :class:`~farm.errors.JobError`, since there would be nothing to compare.
    """
    if not inputs:
        raise JobError("compare: no inputs given")
    groups: dict[tuple[int, str, str], dict[MetricKey, list[float]]] = {}
    flags: dict[tuple[int, str, str], dict[MetricKey, int]] = {}
    lengths: dict[tuple[int, str, str], dict[MetricKey, set[str]]] = {}  # run-length params seen
    order: list[MetricKey] = []
    seen: set[MetricKey] = set()
    for index, (name, records) in enumerate(inputs):
        if not records:
            raise JobError(f"compare: {name}: no records")
        check_unique(records, f"compare: {name}")  # two setups of one name are not one column
        for record in records:
            lengths.setdefault((index, record.target, record.setup), {}).setdefault(
                MetricKey.of(record).anywhere, set()).add(run_length_params(record.benchmark, record.params))
            if FLAG in parse_params(record.params):
                column = flags.setdefault((index, record.target, record.setup), {})
                column[MetricKey.of(record).anywhere] = column.get(MetricKey.of(record).anywhere, 0) + 1
        for record in per_boot(records, repeats_in_boot):  # one value per boot: between-boot spread
            key = MetricKey.of(record).anywhere
            groups.setdefault((index, record.target, record.setup), {}).setdefault(key, []).append(
                record.value)
            if key not in seen:
                seen.add(key)
                order.append(key)
    columns = _columns(inputs, list(groups))
    if len(columns) < 2:
        raise JobError(f"compare: only one target and setup ({columns[0].target}, "
                       f"{columns[0].setup}) among the inputs; nothing to compare")
    values = list(groups.values())
    rows: list[Row] = []
    missing: list[Missing] = []
    for key in order:
        per_column = [v.get(key, []) for v in values]
        medians = tuple(statistics.median(v) if v else None for v in per_column)
        counts = tuple(len(v) for v in per_column)
        ratios = tuple(_ratio(m, medians[0]) for m in medians[1:])
        seen_lengths = [lengths.get(group, {}).get(key, set()) for group in groups]
        estimates = tuple(judged_across_lengths(estimate_ratio(per_column[0], v, rule),
                                                lengths_apart(seen_lengths[0], seen))
                          for v, seen in zip(per_column[1:], seen_lengths[1:]))
        flagged = tuple(flags.get(group, {}).get(key, 0) for group in groups)
        rows.append(Row(key, medians, counts, ratios, tuple(tuple(v) for v in per_column), estimates, flagged))
        if not all(counts):
            missing.append(Missing(
                key, tuple(c.label for c, n in zip(columns, counts) if n),
                tuple(c.label for c, n in zip(columns, counts) if not n)))
    label_of = {group: column.label for group, column in zip(groups, columns)}
    sweeps = []
    for index, (_, records) in enumerate(inputs):
        found = run_sweeps(records)
        for sweep in found:
            label = label_of[index, sweep.target, sweep.setup]
            several = sum(s.target == sweep.target and s.setup == sweep.setup for s in found) > 1
            sweeps.append((f"{label} ({sweep.method})" if several else label, tuple(sweep.rows)))
    return Comparison(tuple(columns), tuple(rows), tuple(missing), tuple(sweeps), rule)


def methods_apart(comparison: Comparison) -> tuple[Apart, ...]:
    """The missing keys that another column has under another ``method=`` (and the same suite,
    benchmark, other params, metric and unit), in the comparison's order: what was kept apart only
    because the methods differ."""
    groups: dict[MetricKey, dict[str, set[str]]] = {}
    for m in comparison.missing:
        params = parse_params(m.key.params)
        method = params.pop("method", "")
        bare = attrs.evolve(m.key, params=format_params(params))
        groups.setdefault(bare, {}).setdefault(method, set()).update(m.present)
    order = {label: i for i, label in enumerate(comparison.labels)}
    return tuple(Apart(key, tuple((method or "(none)", tuple(sorted(labels, key=order.__getitem__)))
                                  for method, labels in sorted(found.items())))
                 for key, found in groups.items() if len(found) > 1)


def _columns(inputs: Sequence[tuple[str, Sequence[Record]]],
             groups: list[tuple[int, str, str]]) -> list[Column]:
    targets_per_input: dict[int, set[str]] = {}
    for index, target, _ in groups:
        targets_per_input.setdefault(index, set()).add(target)
    wanted = [setup if len(targets_per_input[index]) == 1 else f"{target}/{setup}"
              for index, target, setup in groups]
    labels: list[str] = []
    for (index, _, _), label in zip(groups, wanted):
        if wanted.count(label) > 1:
            label = f"{label}@{inputs[index][0]}"
        unique, n = label, 1
        while unique in labels:
            n += 1
            unique = f"{label}#{n}"
        labels.append(unique)
    return [Column(label, inputs[index][0], target, setup)
            for label, (index, target, setup) in zip(labels, groups)]


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return value / base


def verdict(ratio: float, better: int, estimate: RatioEstimate | None = None) -> str:
    """How a bar is coloured. With the ratio's ``estimate`` (:mod:`farm.results.ratio`):
    ``inconclusive``, ``same`` (within the rule's band), else ``better``/``worse`` by the metric's
    direction (:func:`farm.results.direction.direction`) or ``unknown`` when it has none. Without one
    (a bare ratio): ``same`` within :data:`SAME_BAND` of 1, else by direction."""
    if estimate is not None:
        if not estimate.conclusive:
            return INCONCLUSIVE
        if estimate.verdict == SAME:
            return "same"
        if not better:
            return "unknown"
        return "better" if (estimate.verdict == HIGHER) == (better > 0) else "worse"
    if abs(ratio - 1) < SAME_BAND:
        return "same"
    if not better:
        return "unknown"
    return "better" if (ratio - 1) * better > 0 else "worse"
