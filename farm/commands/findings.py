"""``farm changes`` and ``farm diff``: where the history's figures moved, and what differs between two runs."""

from __future__ import annotations

import argparse
import json
import statistics

from ..errors import EXIT_OK
from ..measure.units import human
from ..values import shown


def cmd_changes(args: argparse.Namespace) -> int:
    from ..store.changes import find_changes
    from .db import require_store, store_errors

    eng = require_store()
    with store_errors(), eng.connect() as connection:
        found = find_changes(connection, metric=args.metric, target=args.target, setup=args.setup,
                             benchmark=args.benchmark, since=args.since, alpha=args.alpha)
    if args.json:
        print(json.dumps(found.as_json(), indent=2))
        return EXIT_OK
    series = None
    for c in found.changes:  # names come from runs: no terminal escape of theirs reaches the terminal
        if c.series is not series:
            series = c.series
            print(shown(series.label()))
        s, unit = c.step, series.unit
        print(f"  {c.id}  {shown(c.time[:19])}  {shown(c.judged)}: {shown(c.ratio_text())}, p {s.p_value:.2g}  "
              f"median {shown(human(statistics.median(s.before), unit))} -> {shown(human(statistics.median(s.after), unit))}")
        print(f"      last run before {shown(c.before[-1].x)}, first after {shown(c.after[0].x)}  "
              f"(farm diff {shown(c.before[-1].x)} {shown(c.after[0].x)})")
    print(f"farm: {len(found.changes)} change point(s) in {found.searched} series "
          f"(p <= {found.alpha:g}, at least {found.min_side} runs a side)")
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from ..results.rundiff import diff_runs
    from ..store.runinfo import run_json

    from ..archive import open_archive
    from ..archive.texts import pipeline_diff

    (id_a, a), (id_b, b) = run_json(args.run_a), run_json(args.run_b)
    differences = diff_runs(a, b)
    pipeline_lines, pipeline_note = pipeline_diff(open_archive(), (id_a, a), (id_b, b))
    if args.json:
        print(json.dumps({"a": id_a, "b": id_b, "differences": [d.as_json() for d in differences],
                          "pipeline_diff": pipeline_lines, "pipeline_diff_note": pipeline_note}, indent=2))
        return EXIT_OK
    print(f"farm diff {shown(id_a)} {shown(id_b)}: {len(differences)} input(s) differ"
          + ("" if differences else " (as far as run.json records them)"))
    part = None
    for d in differences:
        if d.part != part:
            part = d.part
            print(shown(part))
        print(f"  {shown(d.what):38} {shown(_value(d.a))} -> {shown(_value(d.b))}")
    if pipeline_lines or any(d.what == "pipeline_sha256" for d in differences):
        print(f"pipeline file ({shown(pipeline_note)})")
        for line in pipeline_lines:
            print(f"  {shown(line)}")
    return EXIT_OK


def _value(text: str | None) -> str:
    return "(none)" if text is None else text


def register(sub) -> None:
    from ..results.changes import ALPHA, MIN_SIDE

    p = sub.add_parser("changes", help="change points of every series of the results store: when a figure moved, "
                       "by how much (ratio, 95 %% interval, n a side), p-value", description=(
                           "Search every series of the results store ($FARM_DB; one measurement on one target and "
                           "setup, one point per run: its median) for the points where its level changed: ruptures' "
                           "kernel change-point detection on the log values, each change kept when the two-sided "
                           "Mann-Whitney test between its sides gives p <= --alpha, reported with the runs on both "
                           "sides, the ratio of their medians with its 95 % interval (Hodges-Lehmann, as compare), "
                           f"n a side (at least {MIN_SIDE} runs) and a stable id. See docs/changes.md."))
    p.add_argument("--metric", help="only this metric (default: every metric of the store)")
    p.add_argument("--target")
    p.add_argument("--setup")
    p.add_argument("--benchmark")
    p.add_argument("--since", metavar="DATE", help="only runs started from DATE on (ISO: 2026-12-01 or 2026-12-01T08:00)")
    p.add_argument("--alpha", type=_alpha, default=ALPHA, help=f"the largest p-value of a change reported (default {ALPHA:g})")
    p.add_argument("--json", action="store_true", help="print the changes as JSON")
    p.set_defaults(func=cmd_changes)

    d = sub.add_parser("diff", help="the inputs that differ between two runs (image, packages, kernel, programs, "
                       "boards, setups, pipeline, farm)", description=(
                           "What differs between the inputs of two runs, from their run.json and the image manifests "
                           "it holds, most likely to matter first: each image's kernel (version, source, config), "
                           "Debian packages with both versions, farm's programs (source sha256), the rest of the "
                           "recipe and the artifacts; the place and load generators; each target's env file, cores, "
                           "frequency and booted kernel; the setups; the experiment (benchmarks, params, boots); the "
                           "pipeline file (path, sha256, and the unified diff of its text when the archive, $FARM_ARCHIVE, "
                           "holds both runs'); farm's git commit and version. A run is a run directory or a run id of "
                           "the results store. See docs/changes.md."))
    d.add_argument("run_a", metavar="RUN_A", help="a run directory or a run id of the results store")
    d.add_argument("run_b", metavar="RUN_B", help="a run directory or a run id of the results store")
    d.add_argument("--json", action="store_true", help="print the differences as JSON")
    d.set_defaults(func=cmd_diff)


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a p-value between 0 and 1, e.g. 0.01")
    return value
