#!/usr/bin/env python3
"""The DPDK image's cold build and boot times (images/maaxboard-dpdk.yaml, docs/dpdk.md).

    .venv/bin/python benchmarks/dpdk_image.py [--boots 3] [--warm]

Builds the recipe into an empty farm cache of its own (cold: apt resolution, 282 Debian packages
downloaded and extracted, the programs compiled, the initrd; ``--warm``: the user's cache instead), then
boots it RUNS times on the MaaXBoard twin with the DPDK flow's settings of pipelines/dpdk.yaml, each
timed: the netboot (power-on to the shell, as run.json's ``boot_seconds``) and the DPDK echo's start
(NIC found to testpmd forwarding, ``dpdk_seconds``). Prints the machine's load and a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from farm.boot import dpdk  # noqa: E402
from farm.boot.console_log import ConsoleLog  # noqa: E402
from farm.boot.flow import BootRequest, NetbootFlow  # noqa: E402
from farm.boot.session import EnvFile  # noqa: E402
from farm.boot.dpdk_settings import DpdkSettings  # noqa: E402
from farm.images.build import build  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boots", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="build into the user's cache (no cold build)")
    args = parser.parse_args()
    recipe = ROOT / "images" / "maaxboard-dpdk.yaml"
    with tempfile.TemporaryDirectory(prefix="farm-dpdk-bench-") as tmp:
        cache = None if args.warm else Path(tmp) / "cache"
        os.environ.setdefault("LG_TFTP_ROOT", str(Path(tmp) / "tftp"))
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        image = build(recipe, cache=cache)
        built = time.monotonic() - t0
        env = EnvFile.load(ROOT / "env" / "qemu-maaxboard.yaml")
        boots, starts = [], []
        for i in range(args.boots):
            with ConsoleLog(Path(tmp) / f"console-{i}") as console:
                flow = NetbootFlow(cpus=2, twin_nic=dpdk.TWIN_NIC)
                with flow.boot(BootRequest(env, image, f"bench-dpdk-{i}", console)) as booted:
                    echo = dpdk.DpdkEcho(DpdkSettings(), booted.shell)
                    fields = dpdk.start_echo(echo, {})
                    echo.stop()
            boots.append(booted.boot_seconds)
            starts.append(fields["recorded"]["dpdk_seconds"])
    print(f"load average at start: {load:.1f}; {os.cpu_count()} cores")
    print(f"| what | seconds |\n|---|---|\n| {'cold' if cache else 'warm'} build | {built:.0f} |")
    print(f"| netboot to shell (median of {len(boots)}: {', '.join(f'{b:.1f}' for b in boots)}) | "
          f"{statistics.median(boots):.1f} |")
    print(f"| NIC to forwarding (median of {len(starts)}: {', '.join(f'{s:.1f}' for s in starts)}) | "
          f"{statistics.median(starts):.1f} |")
    print(f"initrd: {image.manifest['artifacts'][image.manifest['initrd']]['size'] / 1e6:.1f} MB, "
          f"{image.manifest['initrd_files']} files, {len(image.manifest['packages'])} packages in the image")
    return 0


if __name__ == "__main__":
    sys.exit(main())
