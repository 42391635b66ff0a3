"""``farm compare`` and ``farm import``: results side by side, and the lab's history brought in."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..results.outdir import OutDir, prepare_out_dir
from ..values import INTERVAL_METHODS, min_boots_arg, name_arg, out_dir_arg

COMPARE_FILES = frozenset({"compare.csv", "compare.md", "compare.png", "compare-sweep.png"})


def _say_moved(out: OutDir) -> None:
    if out.moved_to is not None:
        print(f"farm: --force: the old content of {out.path} moved to {out.moved_to}", file=sys.stderr)


def cmd_compare(args: argparse.Namespace) -> int:
    import attrs

    from ..results.compare import compare, load_result_dirs
    from ..results.compare_outputs import to_markdown, write_compare
    from ..results.ratio import Rule

    inputs, boots, recorded = load_result_dirs(args.dirs)
    rule = recorded or Rule()
    if args.min_boots is not None:
        rule = attrs.evolve(rule, min_n=args.min_boots)
    if args.threshold is not None:
        rule = attrs.evolve(rule, threshold=args.threshold)
    if args.interval is not None:
        rule = attrs.evolve(rule, interval=args.interval)
    if args.across_run_lengths:
        rule = attrs.evolve(rule, across_lengths=True)
    comparison = compare(inputs, rule=rule, repeats_in_boot=boots)
    out = Path(args.out) if args.out else Path(args.dirs[-1]) / "compare"
    _say_moved(prepare_out_dir(out, force=args.force, own=COMPARE_FILES,
                               refuse_run_dir="compare writes beside no run's files; give it a directory of its own"))
    written = write_compare(comparison, out)
    print(to_markdown(comparison), file=sys.stderr)
    print(f"farm: wrote {', '.join(str(p) for p in written.values())}", file=sys.stderr)
    print(out)
    return 0


def _threshold(text: str) -> float:
    from ..errors import JobError
    from ..results.qualify import parse_threshold

    try:
        return parse_threshold(text)
    except JobError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _frequency_arg(text: str) -> float:
    from ..results.cycles import parse_frequency

    try:
        return parse_frequency(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_import(args: argparse.Namespace) -> int:
    from ..results import importers

    options = {name: vars(args)[OPTION_DEST + name] for name in args.import_options}
    records = importers.import_file(args.kind, args.file, setup=args.setup, target=args.target, options=options)
    if args.frequency is not None:
        records = importers.with_cycles(records, args.frequency, args.kind)
    prepared = prepare_out_dir(args.out, force=args.force)  # after reading: bad input moves nothing
    _say_moved(prepared)
    out = importers.write_import(records, args.out, args.file, frequency_hz=args.frequency)
    print(f"farm: imported {len(records)} records from {args.file}", file=sys.stderr)
    from ..run.events import moved, published

    if prepared.moved_to is not None:  # the store follows the old import to where it went
        moved(prepared.path, prepared.moved_to)
    published(out)  # the results store and the lab's listeners
    print(out)
    return 0


def register(sub) -> None:
    p = sub.add_parser("compare", help="put result directories side by side: ratio table and chart",
                       description="Join the records of result directories (live runs or imports) on suite, "
                       "benchmark, params, metric and unit; the values of one boot are reduced to their median "
                       "first (n = boots). Write compare.csv (median and n per input, ratio = later / first with "
                       "its 95 % interval, by default the Hodges-Lehmann interval of the log ratio, and its verdict: higher, "
                       "lower, same or inconclusive), compare.md and compare.png (bars green when better, red when "
                       "worse, pale when inconclusive, interval bars, a line at 1.0), and "
                       "compare-sweep.png when the inputs have network sweeps (achieved throughput, RTT and CPU "
                       "against the requested rate, a colour per setup). Pairs missing from an input are listed.")
    p.add_argument("dirs", nargs="+", metavar="DIR",
                   help="result directories, the first is the reference; one run directory with several setups "
                   "(pipelines/vm-vs-bare.yaml) compares its setups, the first setup the reference")
    p.add_argument("--out", metavar="DIR", type=out_dir_arg, help="output directory (default: LAST_DIR/compare): new, empty or "
                   "holding only compare's own files (which are made anew); never a run directory")
    p.add_argument("--force", action="store_true", help="--out DIR holds other files: move them aside to "
                   "DIR.replaced-<time> and start it anew")
    p.add_argument("--min-boots", type=min_boots_arg, metavar="N", help="a ratio from fewer boots a side is "
                   "inconclusive (default: the first run's pipeline's compare.min_boots, else 5)")
    p.add_argument("--threshold", type=_threshold, metavar="T", help="the band of 'the same', e.g. 2%% or 0.02: a "
                   "ratio whose interval straddles 1 - T or 1 + T is inconclusive, within it the same (default: the "
                   "first run's pipeline's compare.threshold, else 0: an interval holding 1.0 is inconclusive)")
    p.add_argument("--interval", choices=INTERVAL_METHODS, metavar="METHOD",
                   help="the ratio's interval: hodges-lehmann (sides that differ by a factor) or welch (sides of "
                   "unequal spread, e.g. a guest beside bare metal; assumes log-normal boots) (default: the first "
                   "run's pipeline's compare.interval, else hodges-lehmann)")
    p.add_argument("--across-run-lengths", action="store_true",
                   help="judge a ratio whose two sides' records state different run lengths (an 800-sample sweep "
                   "against a 200,000-sample one, 0.05 s against 3 s); by default it is inconclusive, saying them")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("import", help="turn a captured tool output into a result directory")
    p.defer(_import_arguments)  # the kinds and their options are the plugins': found when `farm import` is used


#: where an importer's option lands in the parsed arguments (its own names never meet farm import's)
OPTION_DEST = "import_option_"


def _import_arguments(p: argparse.ArgumentParser) -> None:
    """``farm import``'s kinds and options, from the registered importers (farm's and the lab's plugins')."""
    from ..bench.registry import import_options, importer, importers
    from ..errors import JobError

    kinds = {name: importer(name) for name in importers()}
    p.description = ("Read an output captured by hand or by the lab's old tools and write DIR/results.csv in the "
                     "same record form as a live run, so `farm compare` and `farm qualify` can use it. KIND: "
                     + ", ".join(f"{name} ({imp.what}; benchmark {spec.suite}.{spec.name})"
                                 for name, (spec, imp) in kinds.items()) + ".")
    p.add_argument("kind", choices=list(kinds), metavar="KIND", help=" | ".join(kinds))
    p.add_argument("file", help="the captured output")
    p.add_argument("--setup", required=True, type=name_arg,
                   help="setup name the records carry (e.g. bare-linux, kvm-guest): letters, digits and . _ -")
    p.add_argument("--target", default="unknown", type=name_arg, help="target name the records carry")
    p.add_argument("--out", required=True, metavar="DIR", type=out_dir_arg,
                   help="result directory to write: new or empty")
    p.add_argument("--force", action="store_true", help="--out DIR holds something (an earlier import or run): "
                   "start it anew; its old content is moved aside to DIR.replaced-<time>")
    options = import_options()
    for name, (option, with_it) in options.items():
        try:
            kind = {"action": "store_true"} if option.type is bool else {"type": option.type, "metavar": name.upper()}
            p.add_argument(option.flag, dest=OPTION_DEST + name, help=f"{', '.join(with_it)}: {option.help}", **kind)
        except argparse.ArgumentError as exc:  # a lab's option named as one of farm import's own
            raise JobError(f"the import option {name!r} of {' and '.join(with_it)}: {exc}") from None
    p.set_defaults(import_options=tuple(options))
    cycles = [name for name, (spec, _) in kinds.items() if spec.cycles_per_byte]
    p.add_argument("--frequency", type=_frequency_arg, metavar="HZ",
                   help=f"{', '.join(cycles)}: the CPU clock of the capture (1.5GHz, 1500MHz, 1500000000); adds "
                   "cycles/byte per throughput, per process for openssl -multi, as a live run does")
    p.set_defaults(func=cmd_import)
