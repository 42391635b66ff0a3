#!/usr/bin/env python3
"""Does farm_load hold 1 Gb/s of 1472-byte packets? Side by side with iperf3 on this machine's loopback.

    .venv/bin/python benchmarks/echo_rate.py [--rounds 3] [--duration 3] [--rate 1e9] [--out DIR]

Interleaved, ``--rounds`` times each (order rotated, so the host's load drifts over all alike):

- ``farm_load -> farm_echo``: the sweep's generator (4 clients) to our responder, both built here
  with gcc; achieved rate = its ``Send_Throughput`` over the measured window (warm-up and cool-down
  1 s each around it), and what came back;
- ``farm_load -> sink``: the same to a socket that never reads (no echoes to receive: the
  generator's cost of sending alone);
- ``iperf3 -u -b 1G -l 1472``: iperf3's client to ``iperf3 -s`` on loopback; achieved rate =
  ``end.sum_sent.bits_per_second``;
- ``farm_load -S 1``: the generator with 1 µs timer slack instead of its default 50 µs (more exact
  pacing, more wake-ups).

CPU cost is the client process's user+system CPU seconds per second of its run (from the
kernel's rusage of the child, so threads are included), over its whole run (farm_load's warm-up and
cool-down too). It prints a Markdown table and writes results.json and report.md into ``--out``
(default results/echo-rate). Every process it starts is killed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from farm.bench import echo  # noqa: E402
from farm.measure.iperf3 import parse_json  # noqa: E402


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_child(argv: list[str]) -> tuple[str, float, float]:
    """Run argv; (stdout, wall seconds, the child's CPU seconds: user + system, all its threads)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=3, help="measured seconds of each run (whole: iperf3 -t)")
    p.add_argument("--rate", type=float, default=1e9, help="bit/s of UDP payload")
    p.add_argument("--size", type=int, default=1472)
    p.add_argument("--out", default="results/echo-rate")
    args = p.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    load_before = os.getloadavg()[0]
    gen = str(echo.host_generator())
    tmp = Path(tempfile.mkdtemp(prefix="echo-rate-"))
    responder = tmp / "farm_echo"
    subprocess.run(["gcc", "-O2", "-o", str(responder), str(echo.SOURCE.parent / "farm_echo.c")], check=True)
    echo_port, iperf_port = free_udp_port(), free_udp_port()
    started = [subprocess.Popen([str(responder), "-p", str(echo_port)], stdout=subprocess.DEVNULL),
               subprocess.Popen(["iperf3", "-s", "-p", str(iperf_port)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)]
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sink.bind(("127.0.0.1", 0))
    sink_port = sink.getsockname()[1]
    time.sleep(0.5)
    spec = echo.load_spec(args.rate, size=args.size, duration=args.duration, warmup=1, cooldown=1)
    bitrate = f"{args.rate / 1e6:g}M"

    def farm_load(port: int, extra: tuple[str, ...] = ()) -> dict:
        text, wall, cpu = run_child(echo.load_command(gen, "127.0.0.1", port, spec) + list(extra))
        try:
            r = echo.parse_load(text)
            achieved, back, n = r.send, r.receive, r.samples
        except Exception:  # the sink echoes nothing: n=0 is expected there
            line = next(l for l in text.splitlines() if l.startswith("result "))
            kv = dict(item.split("=", 1) for item in line.split()[1:])
            achieved, back, n = float(kv["send"]), float(kv["receive"]), 0
        return {"achieved": achieved, "received": back, "n": n, "cpu_per_s": cpu / wall, "wall": wall}

    def iperf3() -> dict:
        argv = ["iperf3", "-c", "127.0.0.1", "-p", str(iperf_port), "-u", "-b", bitrate, "-l", str(args.size),
                "-t", str(args.duration), "-J"]
        text, wall, cpu = run_child(argv)
        ms = {m.metric: m.value for m in parse_json(text)}
        return {"achieved": ms["sent_throughput"], "received": ms["received_throughput"], "n": None,
                "cpu_per_s": cpu / wall, "wall": wall}

    ways = {"farm_load -> farm_echo": lambda: farm_load(echo_port),
            "farm_load -> sink": lambda: farm_load(sink_port),
            f"iperf3 -u -b {bitrate} -l {args.size}": iperf3,
            "farm_load -S 1 (1 us timer slack) -> farm_echo": lambda: farm_load(echo_port, ("-S", "1"))}
    results: dict[str, list[dict]] = {name: [] for name in ways}
    names = list(ways)
    try:
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                results[name].append(ways[name]())
                print(f"round {r}: {name}: {results[name][-1]}", file=sys.stderr)
    finally:
        for proc in started:
            proc.kill()
            proc.wait()
        sink.close()

    load_after = os.getloadavg()[0]
    iperf_rate = statistics.median(x["achieved"] for x in results[names[2]])  # the iperf3 way
    lines = [f"# farm_load vs iperf3 on loopback, {args.rate / 1e9:g} Gb/s of {args.size}-byte packets",
             "", f"{os.uname().nodename} ({os.cpu_count()} cores), {args.rounds} rounds of {args.duration} s, "
             f"{time.strftime('%Y-%m-%d %H:%M %Z')}, load average {load_before:.1f} before, {load_after:.1f} after; "
             "medians over rounds (min-max)", "",
             "| way | achieved Mb/s | / requested | / iperf3 | came back Mb/s | CPU s per s |", "|---|---|---|---|---|---|"]
    summary = {}
    for name, runs in results.items():
        achieved = [x["achieved"] for x in runs]
        cpu = [x["cpu_per_s"] for x in runs]
        med = statistics.median(achieved)
        back = statistics.median(x["received"] for x in runs)
        summary[name] = {"achieved_median": med, "ratio_to_iperf3": med / iperf_rate, "cpu_per_s_median":
                         statistics.median(cpu), "runs": runs}
        lines.append(f"| {name} | {med / 1e6:.1f} ({min(achieved) / 1e6:.1f}-{max(achieved) / 1e6:.1f}) | "
                     f"{med / args.rate:.4f} | {med / iperf_rate:.4f} | {back / 1e6:.1f} | "
                     f"{statistics.median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f}) |")
    report = "\n".join(lines) + "\n"
    (out_dir / "report.md").write_text(report)
    (out_dir / "results.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
