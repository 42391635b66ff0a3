#!/usr/bin/env python3
"""What zstd's level costs an initrd: the CPU of compressing it, its size, and the CPU of unpacking it.

    .venv/bin/python benchmarks/initrd_levels.py [IMAGE_DIR...] [--levels 3,9,12,15,19] [--runs 3]

Each image directory's initrd (a built image of farm's cache; default: every image in it whose initrd is
zstd, e.g. ``~/.cache/farm/images/maaxboard-bench-*``) is unpacked once, then compressed at each level as
farm's builder does (farm.images.build.zstd_command: single-threaded, so the same bytes for the same
cpio), the levels interleaved run by run, and each result unpacked again (``zstd -d``, the stand-in for the
kernel's unzstd). CPU is user + system of the zstd process (its rusage), so another process on the machine
moves it little; the table gives the medians and each level's ratios to the highest level's. Writes
nothing; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from farm.images.build import ZSTD_LEVEL, default_cache, zstd_command  # noqa: E402


def cpu_of(command: list[str], data: bytes) -> tuple[float, bytes]:
    """The CPU seconds (user + system) a child process took on ``data``, and what it wrote."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, input=data, stdout=subprocess.PIPE, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def measure(cpio: bytes, levels: list[int], runs: int) -> dict[int, dict[str, float]]:
    """Per level: median compress CPU, size, median unpack CPU (``runs`` rounds, levels interleaved)."""
    seen: dict[int, dict[str, list[float]]] = {lv: {"pack": [], "unpack": [], "size": []} for lv in levels}
    for _ in range(runs):
        for level in levels:
            pack, packed = cpu_of(zstd_command(level), cpio)
            unpack, unpacked = cpu_of(["zstd", "-q", "-d", "-c"], packed)
            assert unpacked == cpio, f"level {level}: zstd -d gave other bytes"
            seen[level]["pack"].append(pack)
            seen[level]["unpack"].append(unpack)
            seen[level]["size"].append(len(packed))
    return {lv: {k: statistics.median(v) for k, v in s.items()} for lv, s in seen.items()}


def table(name: str, cpio_bytes: int, result: dict[int, dict[str, float]]) -> str:
    top = result[max(result)]
    lines = [f"### {name} (cpio {cpio_bytes / 1e6:.1f} MB)", "",
             "| level | compress CPU, s | size, MB | unpack CPU, s | CPU / top's | size / top's |",
             "|---|---|---|---|---|---|"]
    for level in sorted(result):
        r = result[level]
        lines.append(f"| {level} | {r['pack']:.2f} | {r['size'] / 1e6:.2f} | {r['unpack']:.3f} | "
                     f"{r['pack'] / top['pack']:.3f} | {r['size'] / top['size']:.3f} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("images", nargs="*", type=Path, help="image directories (default: the zstd ones of the cache)")
    p.add_argument("--levels", default=f"3,9,12,15,{ZSTD_LEVEL}")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    cache = default_cache()
    images = args.images or sorted(d for d in (cache / "images").glob("*") if (d / "initrd.cpio.zst").is_file())
    if not images:
        print(f"no image with a zstd initrd in {cache / 'images'}: build one first (farm build RECIPE)", file=sys.stderr)
        return 2
    levels = sorted({int(x) for x in args.levels.split(",")})
    print(f"zstd levels {levels}, {args.runs} runs each, interleaved; machine load {os.getloadavg()[0]:.2f} "
          f"at the start, {os.cpu_count()} CPUs\n")
    for image in images:
        cpio = subprocess.run(["zstd", "-q", "-d", "-c", str(image / "initrd.cpio.zst")], stdout=subprocess.PIPE,
                              check=True).stdout
        print(table(image.name, len(cpio), measure(cpio, levels, args.runs)) + "\n", flush=True)
    print(f"machine load {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
