"""An interactive serial console on a booted target: the terminal in raw mode, bytes both ways.

Ctrl-] leaves (as in telnet and microcom); the board keeps running until the caller powers it off.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import tty

import pexpect

ESCAPE = b"\x1d"  # Ctrl-]


def interact(console, stdin=None, stdout=None) -> None:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    fd = stdin.fileno()
    saved = termios.tcgetattr(fd) if os.isatty(fd) else None
    out = stdout.buffer if hasattr(stdout, "buffer") else stdout
    try:
        if saved is not None:
            tty.setraw(fd)
        console.write(b"\n")
        while True:
            readable, _, _ = select.select([fd], [], [], 0.02)
            if readable:
                data = os.read(fd, 1024)
                if not data or ESCAPE in data:
                    break
                console.write(data)
            try:
                out.write(console.read(size=4096, timeout=0.02))
                out.flush()
            except pexpect.TIMEOUT:
                pass
    finally:
        if saved is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        print("\r\nfarm: console closed", file=sys.stderr)
