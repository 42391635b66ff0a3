"""A virtual load generator's SSH sessions, logged: what the machine saw, to check against the farm.

    ForceCommand python -m farm.virtual.sessionlog LOG      (in the generator's sshd_config)

Each session runs ``$SSH_ORIGINAL_COMMAND`` with ``/bin/sh -c`` as sshd would, its input and output
passed through, and appends two JSON lines to LOG: ``start`` (with the command) and ``end`` (with
its exit status), each with ``t`` on CLOCK_MONOTONIC (shared by every process of the machine). Two
sessions that run ``farm_load`` at once are two jobs driving one load client at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def _log(path: str, **fields) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"t": time.monotonic(), "pid": os.getpid(), **fields}) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m farm.virtual.sessionlog LOG", file=sys.stderr)
        return 2
    log, command = args[0], os.environ.get("SSH_ORIGINAL_COMMAND", "")
    _log(log, event="start", command=command)
    code = 255
    child = None
    try:
        signal.signal(signal.SIGHUP, lambda *_: child and child.send_signal(signal.SIGHUP))
        signal.signal(signal.SIGTERM, lambda *_: child and child.send_signal(signal.SIGTERM))
        child = subprocess.Popen(["/bin/sh", "-c", command] if command else ["/bin/sh", "-l"])
        code = child.wait()
    finally:
        _log(log, event="end", code=code)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
