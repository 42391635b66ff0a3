"""``farm report``, ``farm qualify`` and ``farm baseline save|list``."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from ..errors import EXIT_OK, EXIT_TEST_FAILURE, JobError
from ..values import INTERVAL_METHODS, min_boots_arg, out_dir_arg, shown

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
#: what farm qualify writes (its junit.xml keeps that name: GitLab's reports:junit and the CI files use it)
QUALIFY_FILES = frozenset({"qualify.md", "qualify.csv", "junit.xml"})


def _step_summary(args: argparse.Namespace) -> str | None:
    return None if args.no_step_summary else (os.environ.get(STEP_SUMMARY_ENV) or None)


def cmd_report(args: argparse.Namespace) -> int:
    from ..results.publish import publish

    for run_dir in args.run_dirs:
        report = publish(run_dir, step_summary=_step_summary(args))
        if args.github_annotations:
            from ..results.github import github_annotations
            from ..results.rundata import load_run

            for line in github_annotations(load_run(run_dir)):
                print(line)
        print(f"farm: {run_dir}: {report.summary.name}, {report.metrics.name} ({report.figures} key figures"
              + (f", {len(report.plots)} plots" if report.plots else "") + ")", file=sys.stderr)
        for note in report.notes:
            print(f"farm: {run_dir}: {note}", file=sys.stderr)
        print(report.summary)
    return EXIT_OK


def _pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        base, sep, cand = item.partition("=")
        if not sep or not base or not cand:
            raise JobError(f"--pair-setup {item!r}: expected BASELINE_SETUP=CANDIDATE_SETUP")
        pairs[base] = cand
    return pairs


def cmd_qualify(args: argparse.Namespace) -> int:
    from ..results import baselines
    from ..results.qualify import parse_alpha, parse_threshold, qualify
    from ..results.qualify_outputs import write_outputs
    from ..results.outdir import prepare_out_dir
    from ..results.github import append_step_summary

    if args.require_all and args.allow_missing:
        raise JobError("qualify: --require-all and --allow-missing contradict each other")
    threshold, alpha = parse_threshold(args.threshold), parse_alpha(args.alpha)
    base_path, base_records = baselines.load_records(args.baseline)
    cand_path, cand_records = baselines.load_records(args.candidate)
    from ..results.ratio import repeats_in_boot

    boots = {**repeats_in_boot(base_path), **repeats_in_boot(cand_path)}  # run id -> values a boot gave
    result = qualify(base_records, cand_records, threshold=threshold, alpha=alpha,
                     setups=_pairs(args.pair_setup) or None, allow_missing=args.allow_missing,
                     repeats_in_boot=boots, min_boots=args.min_boots, interval=args.interval,
                     across_lengths=args.across_run_lengths)
    if not result.comparisons and not result.broken:
        raise JobError(f"no metric measured in both {base_path} and {cand_path}: nothing to qualify "
                       f"({len(result.only_in_baseline)} only in the baseline, "
                       f"{len(result.only_in_candidate)} only in the candidate)")
    out = Path(args.out) if args.out else Path("results") / (
        "qualify-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S"))
    moved = prepare_out_dir(out, force=args.force, own=QUALIFY_FILES, refuse_run_dir=(
        "qualify writes its own junit.xml, which would replace the run's; give it a directory of its own, "
        "e.g. --out results/qualify")).moved_to
    if moved is not None:
        print(f"farm: --force: the old content of {out} moved to {moved}", file=sys.stderr)
        from ..run.events import moved as results_moved

        results_moved(out, moved)  # a verdict stored from there is there now
    paths = write_outputs(result, out, baseline_label=baselines.describe(args.baseline, base_path),
                          candidate_label=baselines.describe(args.candidate, cand_path))
    if (summary := _step_summary(args)):
        append_step_summary(summary, paths["markdown"].read_text(encoding="utf-8"))
    for c in result.regressions:
        print(f"farm: REGRESSION {c.key.label()} ({c.setup}): {c.explain(threshold, alpha)}", file=sys.stderr)
    for b in result.broken:
        print(f"farm: BROKEN {b.key.label()} ({b.setup}): {b.explain()}", file=sys.stderr)
    for u in result.missing:
        print(f"farm: MISSING {u.key.label()} ({u.setup}): in the baseline (n={u.n}), not measured by the "
              "candidate (--allow-missing to accept)", file=sys.stderr)
    print(f"farm: qualify {result.headline()}", file=sys.stderr)
    from ..run.events import published

    published(cand_path, qualification={"path": out, "baseline": baselines.describe(args.baseline, base_path),
                                           "passed": result.passed, "headline": result.headline()})
    print(out)
    return EXIT_OK if result.passed else EXIT_TEST_FAILURE


def cmd_baseline_save(args: argparse.Namespace) -> int:
    from ..results.baselines import save_baseline

    b = save_baseline(args.run_dir, args.name, force=args.force, allow_failed=args.allow_failed)
    print(f"farm: baseline {b.name}: run {b.run_id} ({b.status}), {b.records} records"
          + (" (saved although it did not pass: --allow-failed)" if args.allow_failed and b.status != "passed" else ""),
          file=sys.stderr)
    print(b.path)
    return EXIT_OK


def cmd_baseline_list(args: argparse.Namespace) -> int:
    from ..results.baselines import list_baselines, store_dir

    found = list_baselines()
    if args.json:  # every listed field; an empty store is []
        import json

        print(json.dumps([{"name": b.name, "path": str(b.path), "run_id": b.run_id, "saved": b.saved,
                           "saved_by": b.saved_by, "source": b.source, "records": b.records, "status": b.status}
                          for b in found], indent=2))
        return EXIT_OK
    if not found:
        print(f"farm: no baselines in {store_dir()}", file=sys.stderr)
        return EXIT_OK
    rows = [("NAME", "SAVED", "BY", "RUN", "STATUS", "RECORDS")] + [  # baseline.json's text shown escaped
        tuple(shown(c) for c in (b.name, b.saved[:19], b.saved_by, b.run_id, b.status, str(b.records)))
        for b in found]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("report", help="write summary.md, metrics.txt, wide CSVs and plots of run directories",
                       description="Regenerate summary.md (run status, stages, key figures: median, n and "
                       "range per target/setup/benchmark/metric), metrics.txt (OpenMetrics, for GitLab's "
                       "metrics report), the network sweeps' wide CSVs (sweep-<target>-<setup>.csv, the lab's "
                       "columns) and the plots of each RUN_DIR from its results.csv, run.json and junit.xml. When "
                       f"${STEP_SUMMARY_ENV} is set (GitHub Actions) summary.md is appended to it too. "
                       "Prints each summary.md path.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directory, e.g. results/<run-id>")
    p.add_argument("--no-step-summary", action="store_true", help=f"do not append to ${STEP_SUMMARY_ENV}")
    p.add_argument("--github-annotations", action="store_true",
                   help="print an ::error workflow command per failed stage (GitHub Actions shows them)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("qualify", help="compare a candidate run with a baseline; exit 1 on a regression",
                       description="Compare every metric measured by both BASELINE and CANDIDATE (one value per "
                       "boot: the repeats inside a boot reduced to their median) by farm compare's rule: with "
                       "fewer than --min-boots boots a side (default 5) a metric is inconclusive, never a "
                       "regression, and says how many boots might decide it; with enough, a regression is a "
                       "(1 - alpha) interval of the ratio candidate/baseline lying wholly beyond --threshold in "
                       "the bad direction for its unit; one straddling the threshold is inconclusive (listed, not "
                       "failed). A release gate qualifies a pipeline that boots each setup 5 times "
                       "(pipelines/qualify.yaml). Writes "
                       "qualify.md, qualify.csv and junit.xml into --out and prints that directory; exits 1 "
                       "when anything regressed, when a candidate benchmark failed or a candidate value is NaN, "
                       "infinite or negative, or when a baseline metric was not measured by the candidate "
                       "(unless --allow-missing); 0 otherwise.")
    p.add_argument("--baseline", required=True, metavar="NAME|DIR",
                   help="a directory with results.csv (a run directory), or the name of a saved baseline "
                   "(farm baseline list); an existing directory wins")
    p.add_argument("--candidate", required=True, metavar="DIR|NAME", help="the run to qualify")
    p.add_argument("--threshold", default="5%", help="smallest relative change of the median that counts: "
                   "5%% or 0.05 (default 5%%)")
    p.add_argument("--alpha", default="0.05", help="1 - the interval's confidence (default 0.05: 95 %% intervals)")
    p.add_argument("--min-boots", type=min_boots_arg, default=5, metavar="N",
                   help="fewer boots a side is inconclusive, never a regression (default 5, farm compare's)")
    p.add_argument("--interval", choices=INTERVAL_METHODS, default=INTERVAL_METHODS[0],
                   help="the ratio's interval: hodges-lehmann (default; sides that differ by a factor) or welch "
                   "(sides of unequal spread, e.g. a guest beside bare metal; assumes log-normal boots)")
    p.add_argument("--across-run-lengths", action="store_true",
                   help="judge a metric whose two sides' records state different run lengths (samples, seconds); "
                   "by default it is inconclusive, saying the lengths")
    p.add_argument("--out", metavar="DIR", type=out_dir_arg, help="output directory (default results/qualify-<time>): new, empty or "
                   "holding only qualify's own files (made anew); never a run directory, whose junit.xml it "
                   "would replace")
    p.add_argument("--force", action="store_true", help="--out DIR holds other files: move them aside to "
                   "DIR.replaced-<time> and start it anew")
    p.add_argument("--pair-setup", action="append", default=[], metavar="BASE=CAND",
                   help="compare baseline setup BASE with candidate setup CAND (repeatable; default: same "
                   "names, or the only setup of each side)")
    p.add_argument("--allow-missing", action="store_true",
                   help="list baseline metrics the candidate did not measure instead of failing on them "
                   "(failed benchmarks and NaN or impossible values fail regardless)")
    p.add_argument("--require-all", action="store_true",
                   help="the default (kept for old CI files): a baseline metric the candidate did not "
                   "measure fails")
    p.add_argument("--no-step-summary", action="store_true", help=f"do not append to ${STEP_SUMMARY_ENV}")
    p.set_defaults(func=cmd_qualify)

    p = sub.add_parser("baseline", help="keep named baselines for farm qualify (save, list)",
                       description="Named baselines live in $FARM_BASELINES (default ~/.local/share/farm/baselines), "
                       "a directory the lab shares; each holds a run's results.csv, run.json and summary.md.")
    verbs = p.add_subparsers(dest="baseline_command", metavar="VERB", required=True)
    s = verbs.add_parser("save", help="save a run directory as a named baseline",
                         description="Copy RUN_DIR's records into the baseline store as NAME. A run that did "
                         "not pass (status, a failed or errored stage, a failed benchmark) is refused unless "
                         "--allow-failed.")
    s.add_argument("run_dir", metavar="RUN_DIR")
    s.add_argument("--name", required=True, help="letters, digits and . _ + - (no '/' or '..'), e.g. release-1.2")
    s.add_argument("--force", action="store_true", help="replace an existing baseline of that name")
    s.add_argument("--allow-failed", action="store_true",
                   help="save a run that did not pass (its status, a failed stage or benchmark); refused otherwise")
    s.set_defaults(func=cmd_baseline_save)
    s = verbs.add_parser("list", help="list the saved baselines", description="List the baselines in the store.")
    s.add_argument("--json", action="store_true", help="machine-readable output (a JSON list)")
    s.set_defaults(func=cmd_baseline_list)
