"""``farm run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import add_coordinator
from ..values import bootarg_arg, number_arg, out_dir_arg


def cmd_run(args: argparse.Namespace) -> int:
    from ..run import FarmRequest, run_pipeline

    if args.resume and args.out:
        from ..errors import JobError

        raise JobError("--resume RUN_DIR continues in RUN_DIR: leave out --out")
    if args.resume and args.force:
        from ..errors import JobError

        raise JobError("--resume finishes RUN_DIR, --force starts a run directory anew: give one of them")
    farm = None
    if args.farm:
        from ..coordinator import parse_tags

        farm = FarmRequest(parse_tags(args.farm), timeout=args.farm_timeout, coordinator=args.coordinator,
                           health_check=args.health_check, prio=args.farm_prio)
    elif args.health_check:
        from ..errors import JobError

        raise JobError("--health-check checks a place of the farm: give it with --farm name=PLACE")
    run = run_pipeline(args.pipeline, out=Path(args.out) if args.out else None,
                       env_override=[Path(e) for e in args.env] if args.env else None,
                       extra_bootargs=args.bootarg, farm=farm, resume=Path(args.resume) if args.resume else None,
                       force=args.force, image_dirs=[Path(d) for d in args.image])
    print(f"farm: run {run.run_id} {run.info.status}: {sum(c.kind == 'pass' for c in run.cases)} of "
          f"{len(run.cases)} stages passed", file=sys.stderr)
    print(run.path)
    return run.status


def register(sub) -> None:
    p = sub.add_parser("run", help="run a pipeline: build, boot, benchmark, publish",
                       description="Run PIPELINE stage by stage and publish results.csv, junit.xml, run.json "
                       "and console/<target>.log into results/<run-id>/ (or --out). Prints the run directory "
                       "on the last line of stdout; the exit code says how it ended (see farm --help).")
    p.add_argument("pipeline", help="pipeline file, e.g. pipelines/smoke.yaml")
    p.add_argument("--env", action="append", metavar="ENV", help="run on this env file instead of the pipeline's targets (repeatable)")
    p.add_argument("--out", metavar="DIR", type=out_dir_arg, help="run directory (default results/<run-id>): new or empty; "
                   "not a symbolic link")
    p.add_argument("--force", action="store_true",
                   help="--out DIR holds something (an earlier run): start it anew; its old content is moved "
                   "aside to DIR.replaced-<time>, never mixed with the new run")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="finish RUN_DIR, a run of the same pipeline that failed or was interrupted: what passed "
                   "there is kept and not measured again, the rest runs")
    p.add_argument("--image", action="append", default=[], metavar="DIR",
                   help="boot this built image (`farm build` prints it; a CI job's artifact) instead of building "
                   "the pipeline's recipe for its architecture; repeatable, one per architecture. Each artifact's "
                   "sha256 is checked against its manifest.json. A setup with its own image: still builds that. "
                   "A FILE (a lab's system image, e.g. a Microkit loader.img) is booted by the pipeline's setups "
                   "of the flow system that name no system.path (docs/system-images.md)")
    p.add_argument("--bootarg", action="append", default=[], metavar="ARG", type=bootarg_arg,
                   help="extra kernel argument for every boot of the run (repeatable), e.g. --bootarg maxcpus=1; "
                   "letters, digits and _ . , : = / + @ - only")
    p.add_argument("--farm", nargs="+", metavar="TAG=VAL",
                   help="run on a place of the farm with these tags (e.g. board=maaxboard): reserve, wait, lock, "
                   "and always power off and release it; the env file is env/<board>.yaml unless --env is given")
    p.add_argument("--farm-timeout", type=number_arg(0, 7 * 86400, low_open=True, unit="s"), default=3600, metavar="S",
                   help="give up waiting for a place after S seconds (default 3600)")
    p.add_argument("--farm-prio", type=number_arg(-1e6, 1e6, unit="(higher goes first)"), default=0.0, metavar="N",
                   help="the reservation's priority in the coordinator's queue (default 0; higher goes first, then "
                   "older); the place's load generators are reserved with it too")
    add_coordinator(p, "of --farm")
    p.add_argument("--health-check", action="store_true",
                   help="with --farm: a health check, which may take a place tagged unhealthy (farm_health); a "
                   "passing boot tags it healthy again (farm health check PLACE does this with pipelines/health.yaml)")
    p.set_defaults(func=cmd_run)
