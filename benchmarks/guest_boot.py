#!/usr/bin/env python3
"""A guest setup's extra boot time: host ready -> the guest's FARM-READY, on the MaaXBoard's EL2 twin.

    .venv/bin/python benchmarks/guest_boot.py [--runs 5] [--vcpus 1] [--memory 512]

One boot of the host image (the bench recipe plus QEMU and the guest, as `farm run` builds it for
pipelines/vm-vs-bare.yaml), then RUNS guest starts and stops on it (farm.guest.start, what GuestFlow
does per boot), each timed from the line typed on the host's shell to the guest's FARM-READY. Prints
the machine's load, the host boot, each run, and the median as a Markdown table. The guest runs under
KVM inside the twin (KVM on EL2 emulated by TCG): on a board the figure is the board's own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from farm.boot.console_log import ConsoleLog  # noqa: E402
from farm.boot.session import EnvFile, boot_target  # noqa: E402
from farm.guest.command import guest_forwards  # noqa: E402
from farm.guest.spec import GuestSpec  # noqa: E402
from farm.guest.start import start_guest, stop_guest  # noqa: E402
from farm.images.build import build  # noqa: E402
from farm.images.host import guest_files  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--vcpus", type=int, default=1)
    parser.add_argument("--memory", type=int, default=512, help="MiB")
    parser.add_argument("--recipe", default=str(ROOT / "images" / "maaxboard-bench.yaml"),
                        help="the host's recipe (default images/maaxboard-bench.yaml)")
    parser.add_argument("--guest-recipe", help="the guest's recipe (default: the host's)")
    parser.add_argument("--log", help="keep the console log here (a directory)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line last")
    args = parser.parse_args()
    load_before = os.getloadavg()
    guest_image = build(args.guest_recipe or args.recipe)
    host_image = build(args.recipe, guest=guest_image)
    env = EnvFile.load(ROOT / "env" / "qemu-maaxboard-el2.yaml")
    spec = GuestSpec(vcpus=args.vcpus, memory_mb=args.memory)
    kernel, initrd = guest_files(host_image.manifest)
    seconds: list[float] = []
    with tempfile.TemporaryDirectory(prefix="farm-guest-boot-") as tmp, ConsoleLog(Path(args.log or tmp)) as console:
        t0 = time.monotonic()
        with boot_target(env, host_image, f"guest-boot-{os.getpid()}", console) as host:
            host_seconds = time.monotonic() - t0
            serial = host.target.get_driver("ConsoleProtocol")
            for i in range(args.runs):
                info = start_guest(host.shell, serial, spec, kernel, initrd, guest_forwards(()), arch=env.arch)
                seconds.append(info.boot_seconds)
                print(f"run {i + 1}: host ready -> guest ready {info.boot_seconds:.2f} s", file=sys.stderr)
                stop_guest(host.shell, serial)
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}; {os.cpu_count()} cores\n")
    print("| what | median | runs |")
    print("|---|---|---|")
    print(f"| host boot (power-on -> shell, host image) | {host_seconds:.2f} s | 1 |")
    print(f"| guest boot (host ready -> guest FARM-READY), {args.vcpus} vCPU, {args.memory} MiB | "
          f"{statistics.median(seconds):.2f} s | {len(seconds)}: {', '.join(f'{s:.2f}' for s in seconds)} |")
    if args.json:
        print(json.dumps({"host_image": host_image.name, "guest_image": guest_image.name, "host_seconds": host_seconds,
                          "guest_seconds": seconds, "vcpus": args.vcpus, "memory_mb": args.memory,
                          "load_before": load_before[0], "load_after": load_after[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
