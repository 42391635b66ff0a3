"""``farm boot``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..values import bootarg_arg, name_arg, number_arg, out_dir_arg


def cmd_boot(args: argparse.Namespace) -> int:
    from ..boot.console_log import ConsoleLog
    from ..boot.facts import read_facts
    from ..boot.session import EnvFile, boot_target
    from ..images.image import load_image
    from ..runid import new_run_id  # not farm.run: the runner and its benchmarks

    env = EnvFile.load(args.env, args.target)
    image = load_image(args.image)
    job = args.job or new_run_id()
    log_dir = Path(args.log_dir) if args.log_dir else Path("results") / f"boot-{job}" / "console"
    with ConsoleLog(log_dir) as console:
        with boot_target(env, image, job, console, args.bootarg, attempts=args.attempts) as booted:
            facts = read_facts(booted.shell)
            print(f"farm: {booted.name} booted in {booted.boot_seconds:.1f}s: {facts.cpus} cpus, kernel "
                  f"{facts.kernel}, address {facts.address or '-'}"
                  + (f", device tree {booted.dtb['name']}" if isinstance(booted.dtb, dict) else "")
                  + f"; console log {console.path(booted.name)}",
                  file=sys.stderr)
            if args.console:
                from ..boot.terminal import interact

                print("farm: console attached, Ctrl-] to leave (the board is then powered off)", file=sys.stderr)
                interact(booted.target.get_driver("ConsoleProtocol"))
    return 0


def register(sub) -> None:
    p = sub.add_parser("boot", help="netboot an image on a target, optionally with an interactive console",
                       description="Stage IMAGE on the target's TFTP server, power-cycle the target, netboot "
                       "it through its bootloader to a Linux shell, report what booted, then power it off. "
                       "With --console you get the serial console until Ctrl-].")
    p.add_argument("--env", required=True, help="labgrid env file, e.g. env/qemu-maaxboard.yaml")
    p.add_argument("--image", required=True, metavar="DIR", help="image directory printed by `farm build`")
    p.add_argument("--target", type=name_arg, help="target name in the env file (default: its only target)")
    p.add_argument("--console", action="store_true", help="attach an interactive console once booted")
    p.add_argument("--bootarg", action="append", default=[], metavar="ARG", type=bootarg_arg,
                   help="extra kernel command-line argument (repeatable), e.g. --bootarg maxcpus=1")
    p.add_argument("--attempts", type=number_arg(1, 20, whole=True), default=2, metavar="N",
                   help="boots to try when the lab fails (no bootloader prompt, TFTP, reset); default 2")
    p.add_argument("--job", type=name_arg, help="job id for the TFTP folder (default: a new run id)")
    p.add_argument("--log-dir", metavar="DIR", type=out_dir_arg, help="where to write the console log (default results/boot-<job>/console)")
    p.set_defaults(func=cmd_boot)
