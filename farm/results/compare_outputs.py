"""What ``farm compare`` writes of a :class:`~farm.results.compare.Comparison`: ``compare.csv`` (every number,
``repr``, read back bit for bit), ``compare.md`` (for people and CI job summaries) and, drawn by
farm.results.compare_plot, ``compare.png`` and ``compare-sweep.png``."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterable

from farm.measure.units import human
from farm.results.compare import KEY_FIELDS, Comparison, PathLike, methods_apart
from farm.results.compare_plot import plot_ratios
from farm.results.csvout import spreadsheet_safe
from farm.results.ratio import INCONCLUSIVE, RatioEstimate, sig
from farm.results.record import write_text_atomic
from farm.secrets import mask

SWEEP_PNG = "compare-sweep.png"


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
              f"{rule.confidence * 100:g} % interval ({rule.method}) and n a side. A ratio is **inconclusive** "
              f"when a side has fewer than {rule.min_n} boots or its interval straddles {band}"
              + ("" if rule.across_lengths else " or its sides' run lengths differ")
              + (f"; **same** when the interval lies within {band}" if rule.threshold else "")
              + f". Rule: {rule.name()}"
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


def _spread(cv_value: float | None, interval: tuple[float, float] | None, unit: str) -> str:
    text = "—" if cv_value is None else f"{cv_value * 100:.1f} %"
    return text + ("" if interval is None else f", {human(interval[0], unit)} – {human(interval[1], unit)}")


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _repr(value: float | None) -> str:
    return "" if value is None else repr(value)
