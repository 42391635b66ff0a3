"""Restart a lab component when it asks to be restarted, the way a lab host's systemd does.

    python -m farm.virtual.supervise [--restart-exit 100] [--delay S] -- COMMAND...

labgrid-exporter exits with status 100 when it loses the coordinator: the coordinator restarted or
cannot be reached, or it dropped the exporter after unanswered keepalive pings (an exporter that
was stopped for longer than ~20 s). labgrid's systemd unit then starts it again
(``Restart=on-failure``, ``RestartForceExitStatus=100``); on a lab host without that, the boards
stay unexported for good. ``farm lab up`` runs its exporter under this supervisor for the same
reason: COMMAND runs again ``--delay`` seconds after it exited with ``--restart-exit``. Any other
exit ends the supervisor with COMMAND's status. SIGTERM and SIGINT are passed on to COMMAND and end
the supervisor once COMMAND has exited (``farm lab down``).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m farm.virtual.supervise")
    parser.add_argument("--restart-exit", type=int, default=100, metavar="CODE",
                        help="restart COMMAND when it exits with CODE (default 100, labgrid-exporter's)")
    parser.add_argument("--delay", type=float, default=1.0, metavar="S", help="seconds before a restart")
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
    while True:
        child = subprocess.Popen(command)
        code = child.wait()
        if stopping.is_set() or code != args.restart_exit:
            return code if code >= 0 else 128 - code
        print(f"farm.virtual.supervise: {os.path.basename(command[0])} exited with {code}; "
              f"starting it again in {args.delay:g} s", flush=True)
        if stopping.wait(args.delay):
            return 0


if __name__ == "__main__":
    sys.exit(main())
