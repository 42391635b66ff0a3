#!/usr/bin/env python3
"""The lean images boot their twins: power on to a shell, with every driver built in (the expensive proof).

    .venv/bin/python benchmarks/lean_boot.py [--recipe maaxboard-lean --recipe x86-lean] [--boots 3]

Builds each lean recipe into the user's cache (a fresh machine: ~8 niced core-minutes a kernel; cached:
under a second), then boots its twin ``--boots`` times through farm.boot.session.boot_target and checks
what tests/boot/test_lean_images.py checks on the MaaXBoard's (CI boots only that one): the kernel is the
recipe's, no module support, the NIC driven by the built-in virtio_net, the network up. Prints the
machine's load and a Markdown table of power-on-to-shell seconds per boot and their median; exit 1 when
a check fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from farm.boot.console_log import ConsoleLog  # noqa: E402
from farm.boot.facts import read_facts  # noqa: E402
from farm.boot.session import EnvFile, boot_target  # noqa: E402
from farm.images.build import build  # noqa: E402

TWINS = {"maaxboard-lean": ("qemu-maaxboard", "aarch64"), "x86-lean": ("qemu-x86", "x86_64")}


def boot_once(recipe: str, image, job: str, log_dir: Path) -> tuple[float, list[str]]:
    """One boot: its seconds from power on to the shell, and the checks that failed."""
    env_file, machine = TWINS[recipe]
    with ConsoleLog(log_dir) as console:
        with boot_target(EnvFile.load(ROOT / "env" / f"{env_file}.yaml"), image, job, console) as booted:
            facts = read_facts(booted.shell)
            checks = {
                "machine": facts.machine == machine,
                "kernel is the recipe's": facts.kernel == image.manifest["kernel_version"],
                "network up": facts.address.startswith("10.0.2."),
                "NIC on the built-in virtio_net":
                    booted.run("basename $(readlink /sys/class/net/eth0/device/driver)") == ["virtio_net"],
                "no module support": booted.run("test -e /proc/modules && echo modules || echo none") == ["none"],
            }
            failed = [name for name, ok in checks.items() if not ok]
            return booted.boot_seconds, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", action="append", choices=sorted(TWINS))
    parser.add_argument("--boots", type=int, default=3)
    args = parser.parse_args()
    recipes = args.recipe or sorted(TWINS)
    os.environ.setdefault("LG_TFTP_ROOT", tempfile.mkdtemp(prefix="farm-lean-tftp-"))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\n| recipe | boots | power on to shell, s | median, s | checks |\n|---|---|---|---|---|")
    bad = False
    for recipe in recipes:
        image = build(ROOT / "images" / f"{recipe}.yaml")
        seconds, failures = [], []
        for n in range(args.boots):
            s, failed = boot_once(recipe, image, f"lean-{recipe}-{n}", Path(tempfile.mkdtemp(prefix="farm-lean-")))
            seconds.append(s)
            failures += failed
        bad |= bool(failures)
        print(f"| {recipe} | {len(seconds)} | {', '.join(f'{s:.1f}' for s in seconds)} | "
              f"{statistics.median(seconds):.1f} | {'; '.join(sorted(set(failures))) or 'all passed'} |")
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
