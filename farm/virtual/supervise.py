"""Start a lab component again when it fails, the way a lab host's systemd does.

    python -m farm.virtual.supervise [--delay S] [--max-delay S] -- COMMAND...

labgrid-exporter exits when it loses the coordinator: with status 100 when the coordinator restarted
or cannot be reached, or when it dropped the exporter after unanswered keepalive pings (an exporter
stopped for more than ~20 s); with a gRPC traceback (status 1) when that happened while it was
sending. labgrid's systemd unit starts it again (``Restart=on-failure``, ``RestartForceExitStatus=100``);
without that the boards stay unexported for good. ``farm lab up`` runs its exporter under this
supervisor for the same reason.

COMMAND runs again ``--delay`` seconds after it failed (non-zero status, or killed by a signal); the
delay doubles after each run shorter than ``QUICK`` seconds, up to ``--max-delay`` (labgrid's unit
waits 30 s), so a command that cannot start does not spin. A status 0 ends the supervisor. SIGTERM
and SIGINT are passed on to COMMAND and end the supervisor once COMMAND has exited (``farm lab down``).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time

QUICK = 10.0  # seconds: a run shorter than this failed at start-up


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m farm.virtual.supervise")
    parser.add_argument("--delay", type=float, default=1.0, metavar="S", help="seconds before a restart (default 1)")
    parser.add_argument("--max-delay", type=float, default=30.0, metavar="S",
                        help="longest delay after failures in a row at start-up (default 30)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no COMMAND given")

    stopping = threading.Event()
    child: subprocess.Popen | None = None

    def stop(signum, frame) -> None:
        stopping.set()
        if child is not None:
            try:
                os.kill(child.pid, signum)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    delay = args.delay
    while True:
        started = time.monotonic()
        child = subprocess.Popen(command)
        code = child.wait()
        if stopping.is_set() or code == 0:
            return code if code >= 0 else 128 - code
        delay = min(delay * 2, args.max_delay) if time.monotonic() - started < QUICK else args.delay
        how = f"exited with {code}" if code > 0 else f"was killed by signal {-code}"
        print(f"farm.virtual.supervise: {os.path.basename(command[0])} {how}; starting it again in {delay:g} s",
              flush=True)
        if stopping.wait(delay):
            return 0


if __name__ == "__main__":
    sys.exit(main())
