"""Just enough QMP (QEMU's JSON machine protocol) to power a virtual board: one command list per connection."""

from __future__ import annotations

import json
import socket
from typing import Any


class QMPError(Exception):
    pass


def qmp_execute(socket_path: str, *commands: str, timeout: float = 10.0) -> list[Any]:
    """Connect to the QMP socket, negotiate, run ``commands`` in order; the ``return`` value of each."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(socket_path)
    except OSError as exc:
        raise QMPError(f"cannot connect to QMP socket {socket_path}: {exc.strerror or exc}") from None
    with sock, sock.makefile("rw", encoding="utf-8") as stream:
        try:
            greeting = json.loads(stream.readline() or "{}")
            if "QMP" not in greeting:
                raise QMPError(f"{socket_path}: not a QMP greeting: {greeting!r}")
            results = []
            for command in ("qmp_capabilities", *commands):
                stream.write(json.dumps({"execute": command}) + "\n")
                stream.flush()
                results.append(_reply(stream, command, socket_path))
        except (OSError, ValueError) as exc:
            raise QMPError(f"{socket_path}: QMP conversation failed: {exc}") from None
    return results[1:]


def _reply(stream, command: str, socket_path: str) -> Any:
    while True:  # asynchronous events ({"event": ...}) may come first
        line = stream.readline()
        if not line:
            raise QMPError(f"{socket_path}: QEMU closed the connection during '{command}'")
        message = json.loads(line)
        if "return" in message:
            return message["return"]
        if "error" in message:
            raise QMPError(f"{command}: {message['error'].get('desc', message['error'])}")
