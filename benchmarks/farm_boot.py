"""One farm boot of a target + two commands, in a process of its own (benchmarks/run.py starts it).

Timed exactly as a farm user sees it: from the call to ``farm.boot.session.boot_target`` (env file
parsing, staging, QEMU start) to the return of the second ``LinuxTarget.run``. The console's
markers are timestamped from labgrid's console read events (the same events farm's console log
uses), so nothing in farm is changed to measure it. Prints one line ``RESULT {json}`` last.

``--patch`` applies an experimental change to labgrid's drivers in this process only, to measure
what it would gain (see PATCHES); farm itself is never modified.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from markers import MarkerClock  # noqa: E402

COMMANDS = ("uname -r", "cat /proc/cpuinfo | head -1")


# --- experimental driver changes, measured here and proposed as subclasses -------------------
# Each returns an undo function. They wrap or neuter one thing of farm's current drivers (whatever
# the env file names: labgrid's stock classes or farm's subclasses), so they follow farm's code.

class _NoSleep:
    """Stands in for the ``time`` module of a driver module: sleep() returns at once."""

    @staticmethod
    def sleep(_seconds):
        return None

    def __getattr__(self, name):
        return getattr(time, name)


def _patch_read_nosleep():
    """QEMU console reads without the 10 ms sleep after select() (labgrid's QEMUDriver._read and
    farm's TwinQEMUDriver._read both sleep so that a burst arrives in one read)."""
    import importlib

    undo = []
    for name in ("labgrid.driver.qemudriver", "farm.boot.qemu"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "time"):
            undo.append((module, "time", module.time))
            module.time = _NoSleep()
    return lambda: [setattr(m, a, v) for m, a, v in reversed(undo)]


def _patch_check_prompt_always():
    """labgrid's stock ShellDriver behaviour: an `echo MARKER` round trip before every command.
    farm's FarmShellDriver skips it after a command that ended cleanly at the prompt; this puts it
    back, to measure what the skip gains."""
    from farm.boot.shell import FarmShellDriver

    original = FarmShellDriver._run

    def _run(self, cmd, **kw):
        self._at_prompt = False
        return original(self, cmd, **kw)

    FarmShellDriver._run = _run
    return lambda: setattr(FarmShellDriver, "_run", original)


def _patch_batch_uboot():
    """UBootNetbootStrategy: all U-Boot commands in one line joined by `&&`, one marker round trip
    instead of one per command (farm's own _netboot runs the joined line as one command)."""
    from farm.boot.uboot import UBootNetbootStrategy

    original = UBootNetbootStrategy._netboot

    def _netboot(self, commands):
        return original(self, [" && ".join(commands)])

    UBootNetbootStrategy._netboot = _netboot
    return lambda: setattr(UBootNetbootStrategy, "_netboot", original)


PATCHES = {
    "read-nosleep": _patch_read_nosleep,
    "check-prompt-always": _patch_check_prompt_always,
    "batch-uboot": _patch_batch_uboot,
}


# --- the measurement --------------------------------------------------------------------------

def _subscribe(clock: MarkerClock) -> dict:
    """Console reads feed the marker clock; other labgrid steps (power, staging, driver activation,
    U-Boot commands) longer than 20 ms are kept with their start and duration: the trace."""
    from labgrid.step import steps

    stats = {"reads": 0, "trace": []}

    def notify(event):
        step = event.step
        state = event.data.get("state")
        if step.tag == "console" and step.title == "read":
            if state == "stop" and step.result:
                stats["reads"] += 1
                clock.feed(step.result)
            return
        if state == "stop" and step.title != "expect" and step.duration >= 0.02:
            source = type(step.source).__name__ if step.source is not None else ""
            args = step.args or {}
            detail = str(args.get("cmd") or args.get("status") or args.get("filename") or "")[:60]
            stats["trace"].append((round(time.monotonic() - step.duration - clock.t0, 3), round(step.duration, 3),
                                   f"{source}.{step.title}" + (f"({detail})" if detail else "")))

    steps.subscribe(notify)
    return stats


def _vm_hwm_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _hand_iperf3(host: str, port: int, duration: int) -> float:
    """The same client command a person types, parsed with json, not with farm's parser. Like a
    person, it tries again when the server is not ready yet: QEMU's forward accepts at once and then
    resets while the target's iperf3 is still finishing the previous test."""
    for attempt in range(10):
        out = subprocess.run(["iperf3", "-c", host, "-p", str(port), "-J", "-t", str(duration)],
                             capture_output=True, text=True, timeout=duration + 60).stdout
        doc = json.loads(out)
        if "error" not in doc:
            return float(doc["end"]["sum_received"]["bits_per_second"])
        time.sleep(0.5)
    raise RuntimeError(f"iperf3 by hand: {doc['error']}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--env", required=True)
    p.add_argument("--image", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--log-dir", required=True)
    p.add_argument("--bootarg", action="append", default=[])
    p.add_argument("--patch", action="append", default=[], choices=sorted(PATCHES))
    p.add_argument("--place", help="boot this place of a (virtual) farm: LG_PLACE + acquired_place")
    p.add_argument("--start-at", type=float, help="time.time() at which to start (parallel boots)")
    p.add_argument("--iperf", type=int, default=0, help="then this many farm/by-hand iperf3 pairs")
    p.add_argument("--iperf-duration", type=int, default=3)
    args = p.parse_args()

    import contextlib

    from farm import lglazy

    lglazy.install()  # as farm's own commands load labgrid (farm.cli.command_line): only what the env file names
    from farm.boot.console_log import ConsoleLog
    from farm.boot.session import EnvFile, boot_target
    from farm.images.image import load_image

    for name in args.patch:
        PATCHES[name]()
    env = EnvFile.load(args.env)
    image = load_image(args.image)
    result: dict = {"job": args.job, "patches": args.patch, "place": args.place}
    place_cm = contextlib.nullcontext()
    if args.place:
        from farm.places import acquired_place

        place_cm = acquired_place({"name": args.place}, timeout=120, coordinator=None, job=args.job)
    with place_cm, ConsoleLog(Path(args.log_dir)) as console:
        if args.start_at:
            time.sleep(max(0.0, args.start_at - time.time()))
        clock = MarkerClock()
        result["t0_wall"] = time.time()
        stats = _subscribe(clock)
        t0 = clock.t0
        with boot_target(env, image, args.job, console, args.bootarg) as booted:
            outputs = [booted.run(command) for command in COMMANDS]
            result["seconds"] = time.monotonic() - t0
            result["boot_seconds"] = booted.boot_seconds
            result["outputs"] = ["\n".join(o) for o in outputs]
            result["marks"] = clock.marks
            result["console_reads"] = stats["reads"]
            result["trace"] = list(stats["trace"])
            if args.iperf:
                from farm.bench.context import BenchContext
                from farm.bench.network import IPERF3_PORT, Iperf3Params, run_iperf3
                from farm.boot.facts import read_facts

                ctx = BenchContext(booted, read_facts(booted.shell))
                farm_bps, hand_bps = [], []
                params = Iperf3Params(protocol="tcp", duration=args.iperf_duration)
                host, port = ctx.reach(IPERF3_PORT)  # the forward the person uses (QEMU hostfwd)

                def by_farm():
                    found = run_iperf3(ctx, params)
                    farm_bps.append(next(m.value for m in found if m.metric == "received_throughput"))

                def by_hand():
                    hand_bps.append(_hand_iperf3(host, port, args.iperf_duration))

                run_iperf3(ctx, Iperf3Params(protocol="tcp", duration=1))  # warm-up, unmeasured: the first
                # run after a boot is slower whoever makes it
                for i in range(args.iperf):  # ABBA order: drift of the host's load hits both alike
                    for run in ((by_farm, by_hand) if i % 2 == 0 else (by_hand, by_farm)):
                        run()
                result["iperf_farm_bps"], result["iperf_hand_bps"] = farm_bps, hand_bps
            log_text = console.path(booted.name).read_bytes().decode("utf-8", "replace")
            capped = re.search(r"Capping tftp block size option to (\d+)", log_text)
            result["tftp_blocksize_capped_to"] = int(capped.group(1)) if capped else None
        result["total_with_power_off"] = time.monotonic() - t0
    result["vm_hwm_kb"] = _vm_hwm_kb()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["ru_maxrss_kb"] = usage.ru_maxrss
    result["cpu_seconds"] = usage.ru_utime + usage.ru_stime  # the orchestrator's own CPU, taken from the guest's 2 cores
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    from farm import signals

    sys.exit(signals.run(main))  # SIGTERM, SIGHUP unwind like Ctrl-C: boot_target powers off; exit 143, 129
