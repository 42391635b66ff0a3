"""A CI job in miniature, run as a separate process by the tests: ``python -m tests.farm.job MODE ...``.

    hold TAGS...            acquired_place, print "LOCKED <place> <time>", hold it until stdin closes
                            (--loadgens: with the load clients the place names, "LOADGENS <json>")
    boot TAGS... --image D  acquired_place, boot env/maaxboard.yaml on it, print one JSON line
                            (console log in --log-dir)

While waiting for a place it prints "WAITING ..." (acquired_place's on_wait). Exit 130 when
interrupted (Ctrl-C or SIGTERM), like farm.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import select
import signal
import sys
import time
from pathlib import Path

from farm.coordinator import parse_tags
from farm.errors import FarmError
from farm.places import acquired_place

ROOT = Path(__file__).resolve().parents[2]


def say(text: str) -> None:
    print(text, flush=True)


def main() -> int:
    # a job is Ctrl-C'able even when started from a shell that ignores SIGINT for background
    # children (`cmd &` in a script, as a CI runner may do): Python then keeps SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    faulthandler.register(signal.SIGUSR1)  # the tests ask a stuck job where it is stuck
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("hold", "boot"))
    parser.add_argument("tags", nargs="+")
    parser.add_argument("--image")
    parser.add_argument("--job", default="test-job")
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--log-dir", default="console")
    parser.add_argument("--loadgens", action="store_true")
    args = parser.parse_args()
    try:
        with acquired_place(parse_tags(args.tags), timeout=args.timeout, coordinator=None, job=args.job,
                            on_wait=lambda text: say(f"WAITING {text}"), loadgens=args.loadgens) as lease:
            say(f"LOCKED {lease.place} {time.time():.3f}")
            if args.loadgens:
                say("LOADGENS " + json.dumps([[name, place] for name, place, _ in lease.loadgens]))
            if args.mode == "hold":
                hold_until_stdin_closes()
            else:
                boot(lease, Path(args.image), args.job, Path(args.log_dir))
    except FarmError as exc:
        say(f"ERROR {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        say("INTERRUPTED")
        return 130
    return 0


def hold_until_stdin_closes() -> None:
    """Wait for EOF on stdin, polling: a signal the kernel hands to another thread (gRPC has some)
    does not interrupt a blocking read in this one, so the handler would not run until EOF."""
    while not select.select([sys.stdin], [], [], 0.2)[0]:
        pass
    sys.stdin.read()


def boot(lease, image_dir: Path, job: str, log_dir: Path) -> None:
    from farm.boot.console_log import ConsoleLog
    from farm.boot.facts import read_facts
    from farm.boot.session import EnvFile, boot_target
    from farm.images.build import load_image

    env = EnvFile.load(ROOT / "env" / "maaxboard.yaml")
    with ConsoleLog(log_dir) as console:
        with boot_target(env, load_image(image_dir), job, console) as booted:
            facts = read_facts(booted.shell)
            say(json.dumps({"place": lease.place, "cpus": facts.cpus, "machine": facts.machine,
                            "boot_seconds": round(booted.boot_seconds, 1), "booted_at": time.time()}))


if __name__ == "__main__":
    sys.exit(main())
