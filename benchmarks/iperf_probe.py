"""Decompose farm's iperf3 path on one booted twin: is anything in it slower than a person's run?

Alternates, rotating the order, four ways of the same TCP host -> target run:
farm's ``run_iperf3``; by hand on one fixed QEMU forward; by hand on a fresh forward each time (as
farm makes one per run); by hand after farm's target-side server check (``start_iperf3_server``).

    .venv/bin/python benchmarks/iperf_probe.py --image DIR [--rounds 5] [--duration 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from farm_boot import _hand_iperf3  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--env", default=str(HERE.parent / "env" / "qemu-maaxboard.yaml"))
    p.add_argument("--image", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=3)
    p.add_argument("--log-dir", default="results/iperf-probe")
    args = p.parse_args()

    from farm.bench.context import BenchContext
    from farm.bench.network import IPERF3_PORT, Iperf3Params, run_iperf3, start_iperf3_server
    from farm.boot.console_log import ConsoleLog
    from farm.boot.facts import read_facts
    from farm.boot.session import EnvFile, boot_target
    from farm.images.build import load_image

    d = args.duration
    results: dict[str, list[float]] = {}
    with ConsoleLog(Path(args.log_dir)) as console:
        with boot_target(EnvFile.load(args.env), load_image(args.image), "iperf-probe", console) as booted:
            ctx = BenchContext(booted, read_facts(booted.shell))
            run_iperf3(ctx, Iperf3Params(protocol="tcp", duration=1))  # warm-up
            host, port = ctx.reach(IPERF3_PORT)
            ways = {
                "farm run_iperf3": lambda: next(m.value for m in run_iperf3(ctx, Iperf3Params(protocol="tcp", duration=d))
                                                if m.metric == "received_throughput"),
                "by hand, fixed forward": lambda: _hand_iperf3(host, port, d),
                "by hand, fresh forward": lambda: _hand_iperf3(*ctx.reach(IPERF3_PORT), d),
                "by hand after the server check": lambda: (start_iperf3_server(ctx), _hand_iperf3(host, port, d))[1],
            }
            names = list(ways)
            for r in range(args.rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    results.setdefault(name, []).append(ways[name]() / 1e6)
    for name, values in results.items():
        print(f"{name:32} median {statistics.median(values):6.0f} Mbit/s  runs {[round(v) for v in values]}")
    return 0


if __name__ == "__main__":
    from farm import signals

    sys.exit(signals.run(main))  # SIGTERM, SIGHUP unwind like Ctrl-C: boot_target powers off; exit 143, 129
