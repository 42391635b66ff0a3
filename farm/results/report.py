"""Publishing a run directory for people and for CI, from what it holds on disk alone.

:func:`regenerate` reads ``results.csv``, ``run.json`` and ``junit.xml`` (whichever exist: a run
that died early still gets a report, farm.results.rundata) and (re)writes ``summary.md``
(farm.results.summary) and ``metrics.txt`` (farm.results.openmetrics), and appends the summary to a
GitHub job summary when asked (farm.results.github).

Plots are drawn when :mod:`farm.results.plots` is there and offers
``write_run_plots(run_dir, records)``; it is imported lazily and skipped otherwise.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import attrs

from farm.results.figures import key_figures
from farm.results.github import append_step_summary
from farm.results.openmetrics import metrics_text
from farm.results.record import write_text_atomic
from farm.results.rundata import PathLike, RunData, load_run
from farm.results.summary import summary_markdown

SUMMARY_MD = "summary.md"
METRICS_TXT = "metrics.txt"


@attrs.frozen
class Report:
    """What :func:`regenerate` wrote."""

    summary: Path
    metrics: Path
    figures: int
    plots: tuple[Path, ...]
    notes: tuple[str, ...]  # e.g. why there are no plots


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
