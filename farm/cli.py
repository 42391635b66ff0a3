"""The ``farm`` command: one sub-command per verb, each a thin call into the modules that do the work."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__
from .errors import EXIT_INTERRUPTED, EXIT_JOB_ERROR, FarmError

EPILOG = """\
exit codes: 0 passed, 1 a benchmark failed (test), 2 bad input (job: recipe, env or pipeline file),
3 the lab failed (infrastructure: power, console, TFTP, bootloader), 130 interrupted.

examples:
  farm build images/maaxboard-bench.yaml
  farm boot --env env/qemu-maaxboard.yaml --image ~/.cache/farm/images/maaxboard-bench-<key> --console
  farm run pipelines/smoke.yaml
"""


def cmd_build(args: argparse.Namespace) -> int:
    from .images.build import build

    image = build(args.recipe, out=args.out)
    m = image.manifest
    state = "cached" if image.cached else "built"
    print(f"{state} {m['name']} ({m['arch']}, kernel {m['kernel_version']}): "
          + ", ".join(f"{n} {a['size'] / 1e6:.1f} MB sha256:{a['sha256'][:12]}" for n, a in m["artifacts"].items()),
          file=sys.stderr)
    print(image.path)
    return 0


def cmd_boot(args: argparse.Namespace) -> int:
    from .boot.console_log import ConsoleLog
    from .boot.facts import read_facts
    from .boot.session import EnvFile, boot_target
    from .images.build import load_image
    from .pipeline import new_run_id

    env = EnvFile.load(args.env, args.target)
    image = load_image(args.image)
    job = args.job or new_run_id()
    log_dir = Path(args.log_dir) if args.log_dir else Path("results") / f"boot-{job}" / "console"
    with ConsoleLog(log_dir) as console:
        with boot_target(env, image, job, console, args.bootarg) as booted:
            facts = read_facts(booted.shell)
            print(f"farm: {booted.name} booted in {booted.boot_seconds:.1f}s: {facts.cpus} cpus, kernel "
                  f"{facts.kernel}, address {facts.address or '-'}; console log {console.path(booted.name)}",
                  file=sys.stderr)
            if args.console:
                from .boot.terminal import interact

                print("farm: console attached, Ctrl-] to leave (the board is then powered off)", file=sys.stderr)
                interact(booted.target.get_driver("ConsoleProtocol"))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .pipeline import run_pipeline

    run = run_pipeline(args.pipeline, out=Path(args.out) if args.out else None,
                       env_override=[Path(e) for e in args.env] if args.env else None)
    print(f"farm: run {run.run_id} {run.info['status']}: {sum(c.kind == 'pass' for c in run.cases)} of "
          f"{len(run.cases)} stages passed", file=sys.stderr)
    print(run.path)
    return run.status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="farm", description="Build images, netboot boards (or their QEMU twins) through labgrid, "
        "run benchmarks and publish JUnit XML + CSV.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"farm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("build", help="build a kernel + initrd image from a recipe",
                       description="Build the image of RECIPE (Debian kernel, initrd from Debian packages, "
                       "kernel modules) reproducibly, served from the cache when unchanged. Prints the image "
                       "directory (artifacts + manifest.json) on the last line of stdout.")
    p.add_argument("recipe", help="image recipe, e.g. images/maaxboard-bench.yaml")
    p.add_argument("--out", metavar="DIR", help="also place the image files in DIR (and print DIR)")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("boot", help="netboot an image on a target, optionally with an interactive console",
                       description="Stage IMAGE on the target's TFTP server, power-cycle the target, netboot "
                       "it through its bootloader to a Linux shell, report what booted, then power it off. "
                       "With --console you get the serial console until Ctrl-].")
    p.add_argument("--env", required=True, help="labgrid env file, e.g. env/qemu-maaxboard.yaml")
    p.add_argument("--image", required=True, metavar="DIR", help="image directory printed by `farm build`")
    p.add_argument("--target", help="target name in the env file (default: its only target)")
    p.add_argument("--console", action="store_true", help="attach an interactive console once booted")
    p.add_argument("--bootarg", action="append", default=[], metavar="ARG",
                   help="extra kernel command-line argument (repeatable), e.g. --bootarg maxcpus=1")
    p.add_argument("--job", help="job id for the TFTP folder (default: a new run id)")
    p.add_argument("--log-dir", metavar="DIR", help="where to write the console log (default results/boot-<job>/console)")
    p.set_defaults(func=cmd_boot)

    p = sub.add_parser("run", help="run a pipeline: build, boot, benchmark, publish",
                       description="Run PIPELINE stage by stage and publish results.csv, junit.xml, run.json "
                       "and console/<target>.log into results/<run-id>/ (or --out). Prints the run directory "
                       "on the last line of stdout; the exit code says how it ended (see farm --help).")
    p.add_argument("pipeline", help="pipeline file, e.g. pipelines/smoke.yaml")
    p.add_argument("--env", action="append", metavar="ENV", help="run on this env file instead of the pipeline's targets (repeatable)")
    p.add_argument("--out", metavar="DIR", help="run directory (default results/<run-id>)")
    p.set_defaults(func=cmd_run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except FarmError as exc:
        lines = str(exc).splitlines() or [type(exc).__name__]
        print(f"farm: {exc.kind} error: {lines[0]}", file=sys.stderr)
        for line in lines[1:]:
            print(f"  {line}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("farm: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
