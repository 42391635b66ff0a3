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

**Missing.** A key present in some columns only is kept as a row with empty cells, and listed in
:attr:`Comparison.missing` and in its own section of ``compare.md``: a benchmark that silently
vanished from a run is a result too.

**Methods apart.** The ``method=`` param is part of the key, so farm's faster ``ipbench-echo`` sweep
and ipbench's own figures (an imported history, or a live ``method: ipbench`` sweep, both
``method=ipbench``), or the older ``iperf3-sockperf``, are never joined: their figures share names
but not definitions. Such pairs are listed by :func:`methods_apart` and in
``compare.md``'s section "Not joined: methods differ", so that a comparison that joined nothing says why.
"""

from __future__ import annotations

import csv
import io
import math
import os
import statistics
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import attrs

from farm.errors import JobError
from farm.results.ratio import HIGHER, INCONCLUSIVE, METHOD, SAME, RatioEstimate, Rule, estimate_ratio, per_boot, sig
from farm.results.stats import cv, median_interval
from farm.results.csvout import spreadsheet_safe
from farm.results.ipbench import BENCHMARK as SWEEP_BENCHMARK
from farm.results.identity import FLAG, MetricKey
from farm.results.record import Record, check_unique, format_params, open_atomic, parse_params, write_text_atomic
from farm.results.sweeps import run_sweeps
from farm.measure.units import human
from farm.secrets import mask

PathLike = str | os.PathLike[str]
KEY_FIELDS = ("suite", "benchmark", "params", "metric", "unit")
RESULTS_FILE = "results.csv"
SWEEP_PNG = "compare-sweep.png"
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
    from farm.results.report import read_run_records  # CPU figures of before read as what they were

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
    order: list[MetricKey] = []
    seen: set[MetricKey] = set()
    for index, (name, records) in enumerate(inputs):
        if not records:
            raise JobError(f"compare: {name}: no records")
        check_unique(records, f"compare: {name}")  # two setups of one name are not one column
        for record in records:
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
        estimates = tuple(estimate_ratio(per_column[0], v, rule) for v in per_column[1:])
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


# --- outputs ---------------------------------------------------------------------------------


def write_compare(comparison: Comparison, out_dir: PathLike) -> dict[str, Path]:
    """Write ``compare.csv``, ``compare.md`` and ``compare.png`` into ``out_dir`` (created if
    needed, each file replaced atomically), and ``compare-sweep.png`` when a column has a network
    sweep; returns their paths by kind."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / "compare.csv", "md": out / "compare.md", "png": out / "compare.png"}
    write_text_atomic(paths["csv"], to_csv(comparison))
    write_text_atomic(paths["md"], to_markdown(comparison))
    plot_ratios(comparison, paths["png"])
    if comparison.sweeps:
        from farm.results.plots import plot_sweep

        paths["sweep_png"] = out / SWEEP_PNG
        # a picture cannot be masked afterwards: labels are masked before they are drawn
        plot_sweep({mask(label): rows for label, rows in comparison.sweeps}, paths["sweep_png"],
                   title=f"Network load sweep: {' vs '.join(mask(label) for label, _ in comparison.sweeps)}")
    return paths


def csv_header(comparison: Comparison) -> list[str]:
    labels = comparison.labels
    header = [*KEY_FIELDS]
    for label in labels:
        header += [label, f"{label}_n"]
    header.append("ratio")
    if len(labels) > 2:
        header += [f"{label}/{labels[0]}" for label in labels[1:]]
    for label in labels:
        header += [f"{label}_cv", f"{label}_ci_low", f"{label}_ci_high"]
    header += ["ratio_estimate", "ratio_ci_low", "ratio_ci_high", "ratio_verdict"]
    if len(labels) > 2:
        for label in labels[1:]:
            name = f"{label}/{labels[0]}"
            header += [f"{name}_estimate", f"{name}_ci_low", f"{name}_ci_high", f"{name}_verdict"]
    header.append("flagged")
    return header


def ratio_cell(estimate: RatioEstimate | None) -> str:
    """A ratio as compare.csv writes it: the number when conclusive, ``inconclusive`` otherwise
    (never a bare number a spreadsheet would take for a result), empty when there is none."""
    if estimate is None or estimate.ratio is None:
        return ""
    return repr(estimate.ratio) if estimate.conclusive else INCONCLUSIVE


def to_csv(comparison: Comparison) -> str:
    """compare.csv: key columns, then ``<label>`` (median of per-boot values) and ``<label>_n`` (boots)
    per column, then ``ratio`` (last/first: the number when conclusive, else ``inconclusive``) and, for
    three or more columns, ``<label>/<first label>`` for each later one; then per column ``<label>_cv``
    and the 95 % interval of its median ``<label>_ci_low``/``_ci_high``; then the last ratio's estimate
    (always a number), its 95 % interval and verdict (``higher``, ``lower``, ``same``,
    ``inconclusive``: :mod:`farm.results.ratio`), the same for each later column with three or more
    (``<label>/<first label>_estimate``, ``_ci_low``, ``_ci_high``, ``_verdict``),
    and ``flagged``: values of the row that a sanity rule flagged (farm.results.sanity). Missing
    values (also an interval that needs more boots) are empty cells; numbers are ``repr`` (read back
    bit for bit)."""
    buf = io.StringIO()
    writer = _SafeWriter(csv.writer(buf, lineterminator="\n"))
    writer.writerow(csv_header(comparison))
    several = len(comparison.columns) > 2
    for row in comparison.rows:
        cells: list[str] = [getattr(row.key, f) for f in KEY_FIELDS]
        for median, count in zip(row.medians, row.counts):
            cells += [_repr(median), str(count)]
        cells.append(ratio_cell(row.estimate))
        if several:
            cells += [ratio_cell(e) for e in row.estimates]
        for c, interval in zip(row.cvs, row.intervals):
            cells += [_repr(c), *(_repr(x) for x in (interval or (None, None)))]
        last = row.estimate
        cells += [_repr(row.ratio), *(_repr(x) for x in (row.ratio_interval or (None, None))),
                  last.verdict if last is not None and row.ratio is not None else ""]
        if several:
            for e, r in zip(row.estimates, row.ratios):
                cells += [_repr(r), *(_repr(x) for x in (e.interval or (None, None))), e.verdict if r is not None else ""]
        cells.append(str(sum(row.flagged)))
        writer.writerow(cells)
    return buf.getvalue()


class _SafeWriter:
    """A csv writer whose every cell is :func:`~farm.results.csvout.spreadsheet_safe`: names come from
    result directories and records, which a spreadsheet must not run as formulas."""

    def __init__(self, writer) -> None:
        self._writer = writer

    def writerow(self, cells: Iterable[object]) -> None:
        self._writer.writerow([spreadsheet_safe(c) for c in cells])


def to_markdown(comparison: Comparison) -> str:
    """compare.md: one table (medians in units people read, :func:`~farm.measure.units.human`; each
    ratio with its interval and n, an inconclusive one marked **inconclusive**), then the missing
    keys. Plain GitHub-flavoured Markdown, so it can go into a CI job summary as is."""
    labels = comparison.labels
    first = labels[0]
    rule = comparison.rule
    lines = [f"# Comparison: {' vs '.join(labels)}", ""]
    sources = "; ".join(f"`{c.label}` = {c.source} (target {c.target}, setup {c.setup})"
                        for c in comparison.columns)
    band = (f"the band {sig(1 - rule.threshold)}–{sig(1 + rule.threshold)}" if rule.threshold else "1.0")
    lines += [f"Columns: {sources}. Values are medians over boots (n = boots; the repeats inside one boot "
              f"are first reduced to their median). Ratio = {labels[-1]} / {first}, with its "
              f"{rule.confidence * 100:g} % interval ({METHOD}) and n a side. A ratio is **inconclusive** when a "
              f"side has fewer than {rule.min_n} boots or its interval straddles {band}"
              + (f"; **same** when the interval lies within {band}" if rule.threshold else "")
              + ". CV: coefficient of variation; the 95 % interval of a median is exact (order statistics, "
              "from 6 boots).", ""]
    ratio_heads = ["ratio [95 % CI], n"] if len(labels) == 2 else [f"{label}/{first} [95 % CI], n"
                                                                   for label in labels[1:]]
    head = ["suite", "benchmark", "params", "metric", "unit",
            *(f"{label} (n)" for label in labels), *ratio_heads,
            *(f"{label} CV, 95 % CI" for label in labels)]
    flagged = any(sum(r.flagged) for r in comparison.rows)
    if flagged:
        head.append("flagged")
    lines.append(_md_row(head))
    lines.append(_md_row(["---"] * 5 + ["---:"] * (len(head) - 5)))
    for row in comparison.rows:
        cells = [getattr(row.key, f) for f in KEY_FIELDS]
        cells += [f"{human(m, row.key.unit)} ({n})" if m is not None else "—"
                  for m, n in zip(row.medians, row.counts)]
        cells += [_ratio_text(e, r) for e, r in zip(row.estimates, row.ratios)]
        cells += [_spread(c, interval, row.key.unit) for c, interval in zip(row.cvs, row.intervals)]
        if flagged:
            cells.append(" / ".join(str(f) for f in row.flagged) if sum(row.flagged) else "")
        lines.append(_md_row(cells))
    inconclusive = sum(1 for r in comparison.rows for e, x in zip(r.estimates, r.ratios)
                       if x is not None and not e.conclusive)
    total = sum(1 for r in comparison.rows for x in r.ratios if x is not None)
    lines += ["", f"{total - inconclusive} of {total} ratios conclusive, {inconclusive} inconclusive."]
    if flagged:
        lines += ["", "**flagged**: values a sanity rule flagged per column (a light-load RTT above the "
                  "saturated one, received above sent, a boot that did not settle: the `flag` param in "
                  "results.csv); they are in the figures, and worth a look."]
    lines += ["", "## Missing", ""]
    if comparison.missing:
        lines.append("Measured in some columns only (kept in the table above with —):")
        lines.append("")
        for m in comparison.missing:
            k = m.key
            params = f" `{k.params}`" if k.params else ""
            lines.append(f"- {k.suite} / {k.benchmark}{params} {k.metric} ({k.unit}): "
                         f"only in {', '.join(m.present)}; not in {', '.join(m.absent)}")
    else:
        lines.append("None: every column measured every row.")
    apart = methods_apart(comparison)
    if apart:
        lines += ["", "## Not joined: methods differ", "",
                  "Measured in several columns, but by different methods (`method=`), so not joined "
                  "(their figures share names, not definitions):", ""]
        for a in apart:
            k = a.key
            params = f" `{k.params}`" if k.params else ""
            lines.append(f"- {k.suite} / {k.benchmark}{params} {k.metric} ({k.unit}): "
                         + "; ".join(f"{method} in {', '.join(labels)}" for method, labels in a.methods))
    return "\n".join(lines) + "\n"


def _ratio_text(estimate: RatioEstimate, ratio: float | None) -> str:
    if ratio is None:
        return "—"
    text = f"{sig(ratio, 3)} {estimate.interval_text()}, {estimate.n_text}"
    return text if estimate.conclusive else f"**inconclusive** {text} ({estimate.why})"


@attrs.frozen
class Bar:
    """One bar of compare.png: a row's ratio of one later column to the first, judged."""

    row: Row
    series: int          # which later column (0: the second column)
    ratio: float
    verdict: str         # better | worse | same | unknown (no known better direction) | inconclusive
    estimate: RatioEstimate | None = None

    @property
    def interval(self) -> tuple[float, float] | None:
        return self.estimate.interval if self.estimate is not None else None


def verdict(ratio: float, better: int, estimate: RatioEstimate | None = None) -> str:
    """How a bar is coloured. With the ratio's ``estimate`` (:mod:`farm.results.ratio`):
    ``inconclusive``, ``same`` (within the rule's band), else ``better``/``worse`` by the metric's
    direction (:func:`farm.results.qualify.direction`) or ``unknown`` when it has none. Without one
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


def ratio_bars(comparison: Comparison) -> dict[tuple[str, str], list[Bar]]:
    """The bars of compare.png, per panel (metric, unit): every row with a ratio, except the network
    sweep's rows when the sweep is drawn as curves (its requested rate is a setting, its ratio
    always 1)."""
    from farm.results.qualify import direction

    panels: dict[tuple[str, str], list[Bar]] = {}
    for row in comparison.rows:
        if comparison.sweeps and row.key.benchmark == SWEEP_BENCHMARK:
            continue
        better = direction(row.key.metric, row.key.unit, row.key.benchmark)  # the registration says, then the unit
        for s, (r, e) in enumerate(zip(row.ratios, row.estimates or (None,) * len(row.ratios))):
            if r is not None and math.isfinite(r):
                panels.setdefault((row.key.metric, row.key.unit), []).append(
                    Bar(row, s, r, verdict(r, better, e), e))
    return panels


#: bar colours by verdict: the lab's green/red, grey for no change or no known direction, pale and
#: outlined for an inconclusive ratio (its interval bar shows why)
VERDICT_COLOURS = {"better": "#2e9e44", "worse": "#d0342c", "same": "#9a9a9a", "unknown": "#5b7fb5",
                   INCONCLUSIVE: "#e4e4e4"}
_HATCHES = ("", "//", "..", "xx", "\\\\", "++")


def plot_ratios(comparison: Comparison, path: PathLike) -> None:
    """compare.png: horizontal bars of each row's ratio(s) to the first column, one panel per
    metric and unit, a vertical line at 1.0, each bar with its 95 % interval drawn as an error bar
    and written beside it with n; a bar is green when the later column is better, red when worse
    (by the metric's direction and the ratio's verdict, :mod:`farm.results.ratio`), grey when the
    same within the rule's band, blue when the metric has no better direction, and pale with a dashed
    outline, labelled "inconclusive", when the ratio is inconclusive. With three or more columns each
    later one has its own hatching. Rows without a
    ratio are left out (the Markdown lists them), and so are a sweep's (compare-sweep.png draws
    them as curves); with none at all the picture says so rather than being blank."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # here: the dashboard imports this module
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    panels = ratio_bars(comparison)
    labels = tuple(mask(label) for label in comparison.labels)  # a picture cannot be masked afterwards
    series = labels[1:]
    keys = {k: list(dict.fromkeys(id(b.row) for b in bars)) for k, bars in panels.items()}
    height = 1.8 + sum(0.9 + 0.28 * len(rows) * max(1, len(series) * 0.6) for rows in keys.values())
    fig = Figure(figsize=(10, min(40.0, max(3.0, height))), layout="constrained")
    FigureCanvasAgg(fig)
    if not panels:
        ax = fig.subplots()
        ax.axis("off")
        why = "only network sweeps: see compare-sweep.png" if comparison.sweeps else "no row has a ratio to plot"
        ax.text(0.5, 0.5, f"{why} (and compare.md)", ha="center", va="center")
    else:
        axes = fig.subplots(len(panels), 1, squeeze=False,
                            height_ratios=[max(1, len(rows)) for rows in keys.values()])[:, 0]
        width = 0.8 / len(series)
        for ax, ((metric, unit), bars) in zip(axes, panels.items()):
            order = keys[metric, unit]
            rows = {id(b.row): b.row for b in bars}
            for b in bars:
                y = order.index(id(b.row)) - 0.4 + width * (b.series + 0.5)
                pale = b.verdict == INCONCLUSIVE
                ax.barh([y], [b.ratio], height=width * 0.9, color=VERDICT_COLOURS[b.verdict],
                        hatch=_HATCHES[b.series % len(_HATCHES)] if len(series) > 1 else None,
                        edgecolor="#555555" if pale else "white", linestyle="--" if pale else "-")
                end = b.ratio
                if b.interval is not None:
                    lo, hi = b.interval
                    ax.errorbar([b.ratio], [y], xerr=[[max(0.0, b.ratio - lo)], [max(0.0, hi - b.ratio)]],
                                fmt="none", ecolor="black", elinewidth=1, capsize=3)
                    end = max(end, hi)
                text = _sig(b.ratio, 3) + (f" [{_sig(b.interval[0], 3)}–{_sig(b.interval[1], 3)}]"
                                           if b.interval is not None else "")
                if b.estimate is not None:
                    text += f" {b.estimate.n_text}" + (" inconclusive" if pale else "")
                ax.annotate(text, (end, y), xytext=(3, 0), textcoords="offset points",
                            va="center", fontsize="x-small")
            ax.axvline(1.0, color="black", linewidth=1.2)
            ax.set_yticks(range(len(order)), [mask(_row_label(rows[i].key)) for i in order], fontsize="small")
            ax.invert_yaxis()  # first row on top, as in the table
            ax.set_title(mask(f"{metric} ({unit})"), fontsize="medium", loc="left")
            ax.grid(True, axis="x", alpha=0.3)
            ax.set_xlabel(f"ratio to {labels[0]}")
        seen = {b.verdict for bars in panels.values() for b in bars}
        same = (f"same (interval within {_sig(1 - comparison.rule.threshold, 3)}–"
                f"{_sig(1 + comparison.rule.threshold, 3)})" if comparison.rule.threshold else "same")
        handles = [Patch(facecolor=VERDICT_COLOURS[v], edgecolor="#555555" if v == INCONCLUSIVE else None,
                         linestyle="--" if v == INCONCLUSIVE else "-", label=text) for v, text in (
            ("better", "better"), ("worse", "worse"), ("same", same),
            ("unknown", "no better direction"), (INCONCLUSIVE, "inconclusive")) if v in seen]
        if len(series) > 1:
            handles += [Patch(facecolor="white", edgecolor="black", hatch=_HATCHES[s % len(_HATCHES)],
                              label=f"{label} / {labels[0]}") for s, label in enumerate(series)]
        fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)), fontsize="small")
        fig.suptitle(f"{' vs '.join(labels[1:])} relative to {labels[0]} (bars: 95 % interval, n boots a side)")
    path = Path(path)
    with open_atomic(path, "wb") as f:
        fig.savefig(f, format="png", dpi=100)


def _spread(cv_value: float | None, interval: tuple[float, float] | None, unit: str) -> str:
    text = "—" if cv_value is None else f"{cv_value * 100:.1f} %"
    return text + ("" if interval is None else f", {human(interval[0], unit)} – {human(interval[1], unit)}")


def _row_label(key: MetricKey) -> str:
    params = f" {key.params}" if key.params else ""
    return f"{key.benchmark}{params}"


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _repr(value: float | None) -> str:
    return "" if value is None else repr(value)


def _sig(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, trailing zeros kept (1.00, 0.500, 12.3)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    text = f"{value:#.{digits}g}"
    mantissa, e, exponent = text.partition("e")
    return mantissa.rstrip(".") + (e + exponent if e else "")
