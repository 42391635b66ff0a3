"""A real sshd on 127.0.0.1 as a "remote" load generator (farm.virtual.sshd's keys and config), for
the load-generator tests: the machine is this one, reached only through ssh as a lab's would be."""

from __future__ import annotations

import getpass
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from farm.bench.loadgen import SSHLogin
from farm.virtual import sshd


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def local_sshd(directory: Path, name: str = "lg1") -> Iterator[SSHLogin]:
    port = _free_port()
    host = sshd.SSHHost(f"farm-loadgen-{name}", port, directory)
    sshd.prepare(host)
    known = directory / "known_hosts_by_address"  # ssh looks the key up as [127.0.0.1]:port
    known.write_text(f"[127.0.0.1]:{port} {' '.join(host.host_key.with_suffix('.pub').read_text().split()[:2])}\n")
    proc = subprocess.Popen(host.sshd_argv(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {proc.stderr.read() if proc.stderr else ''}")
                time.sleep(0.05)
        yield SSHLogin(name, "127.0.0.1", getpass.getuser(), port, str(host.client_key), str(known))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def host_responder(directory: Path) -> tuple[subprocess.Popen, int]:
    """farm_echo built for this host, listening on a free UDP port of 127.0.0.1."""
    from farm.bench import echo

    binary = directory / "farm_echo"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(echo.SOURCE.parent / "farm_echo.c")], check=True)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(binary), "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.2)
    return proc, port
