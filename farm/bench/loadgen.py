"""Load generators: where a sweep's ``farm_load`` runs.

By default the lab host itself (``generator: host``): farm builds ``farm_load`` with the host's gcc and
runs it as a child process. In a lab, other machines can send the load: each is a
:class:`LoadGenerator` resource of the board's target (a labgrid ``NetworkService`` with a key), in
the env file or exported with the board, named ``loadgen-<name>``; a sweep picks it with
``generator: <name>``. The resource class is :class:`farm.bench.loadgen_resource.LoadGenerator`
(``imports: [farm.bench.loadgen_resource]`` in the env file); this module does not load labgrid. farm drives it over SSH, with nothing installed there beforehand but a C
compiler (``cc``): the source goes over the connection and is built into ``~/.cache/farm/`` keyed by
its hash (built once per source). The load runs under ``timeout -s KILL`` (it dies by itself if farm
does) and is also killed by pid on every exit path of farm's. Its clock is not trusted: each client
times its own packets, and farm samples the target's CPU when the generator *prints* a window edge.
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

import attrs

from ..errors import InfrastructureError, JobError
from ..measure import BenchmarkError
from ..values import name_problem
from . import echo

PREFIX = "loadgen-"  # resource names of load generators
HOST = "host"  # the lab host itself
SSH_FAILED = 255  # ssh's own exit status (connection, authentication)
REMOTE_DIR = ".cache/farm"  # under the login's home


@attrs.frozen
class SSHLogin:
    """How farm logs in to one load generator (paths resolved)."""

    name: str
    address: str
    username: str
    port: int = 22
    keyfile: str = ""
    known_hosts: str = ""

    @property
    def where(self) -> str:
        return f"load generator {self.name} ({self.username}@{self.address}:{self.port})"


def ssh_argv(login: SSHLogin, remote: str) -> list[str]:
    """``ssh`` running the shell text ``remote`` on the generator: batch mode (no prompt ever
    blocks a job), host key checked, no tty (stdout stays the program's)."""
    argv = ["ssh", "-T", "-x", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10",
            "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR",
            "-p", str(login.port), "-l", login.username]
    if login.keyfile:
        argv += ["-i", login.keyfile, "-o", "IdentitiesOnly=yes"]
    if login.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={login.known_hosts}"]
    return [*argv, "--", login.address, remote]


def source_digest(source: Path = echo.SOURCE) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest()[:16]


def install_script(digest: str) -> str:
    """Shell text, the source on stdin: build ``farm_load`` once per source hash, print its path."""
    home = f"$HOME/{REMOTE_DIR}/farm_load-{digest}"
    return (f"set -e; d={home}; if [ ! -x \"$d/farm_load\" ]; then mkdir -p \"$d\"; cat > \"$d/farm_load.c\"; "
            f"cc -O2 -Wall -pthread -o \"$d/farm_load.$$\" \"$d/farm_load.c\" -lm; "
            f"mv \"$d/farm_load.$$\" \"$d/farm_load\"; else cat >/dev/null; fi; echo \"$d/farm_load\"")


def run_script(argv: list[str], pidfile: str, limit: float) -> str:
    """Shell text: run the load under ``timeout -s KILL limit`` and record timeout's pid, which is
    also the process group of timeout and the program (timeout makes its own group): what
    :func:`kill_script` kills. ``wait`` turns a signal that killed the program into exit 128 + N,
    where ssh would report a remote signal as its own failure (255)."""
    return (f"timeout -s KILL {limit:.0f} " + " ".join(shlex.quote(a) for a in argv)
            + f" & echo $! > {shlex.quote(pidfile)}; wait $!")


def kill_script(pidfile: str) -> str:
    """Shell text: kill the load's process group (timeout and the program)."""
    q = shlex.quote(pidfile)
    return f"if [ -f {q} ]; then p=$(cat {q}); kill -KILL -- -$p 2>/dev/null; kill -KILL $p 2>/dev/null; rm -f {q}; fi; true"


def logins(resources: Iterable[object], resolve: Callable[[str], str] = str) -> dict[str, SSHLogin]:
    """The target's load generators by name (``loadgen-<name>`` resources), paths through ``resolve``."""
    found: dict[str, SSHLogin] = {}
    for r in resources:
        if str(getattr(r, "name", "")).startswith(PREFIX) and hasattr(r, "address") and hasattr(r, "username"):
            name = str(r.name)[len(PREFIX):]
            if r.password is not None:
                raise JobError(f"{PREFIX}{name}: password is not supported (farm's ssh runs in batch mode): use keyfile")
            found[name] = SSHLogin(name, r.address, r.username, int(r.port),
                                   resolve(getattr(r, "keyfile", "")) if getattr(r, "keyfile", "") else "",
                                   resolve(getattr(r, "known_hosts", "")) if getattr(r, "known_hosts", "") else "")
    return found


def check_generator(name: object) -> str:
    problem = name_problem(name, "generator")
    if problem:
        raise JobError(f"sweep generator: {problem}")
    return str(name)


class Generator:
    """The lab host: ``farm_load`` built here, run as a child."""

    where = "the lab host"

    def prepare(self) -> str:
        return str(echo.host_generator())

    def run(self, argv: list[str], *, on_edge: Callable[[str], None], timeout: float,
            dump: str | None = None) -> tuple[str, str | None]:
        output = echo.run_load(argv + (["-o", dump] if dump else []), on_edge=on_edge, timeout=timeout)
        return output, (Path(dump).read_text() if dump else None)


@attrs.define
class RemoteGenerator:
    """A :class:`LoadGenerator` over SSH."""

    login: SSHLogin
    _run_ssh: Callable[..., subprocess.CompletedProcess] = subprocess.run

    @property
    def where(self) -> str:
        return self.login.where

    def _ssh(self, remote: str, *, input: str = "", timeout: float = 120) -> str:
        try:
            proc = self._run_ssh(ssh_argv(self.login, remote), input=input, capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            raise InfrastructureError(f"{self.where}: ssh did not finish within {timeout:.0f} s") from None
        if proc.returncode == SSH_FAILED:
            raise InfrastructureError(f"{self.where}: ssh failed: {proc.stderr.strip()[-300:]}")
        if proc.returncode != 0:
            raise BenchmarkError(echo.TOOL, f"{self.where}: '{remote[:60]}…' exit {proc.returncode}: "
                                            f"{proc.stderr.strip()[-300:]}")
        return proc.stdout

    def prepare(self) -> str:
        """Build farm_load there (once per source) and return its path there."""
        out = self._ssh(install_script(source_digest()), input=echo.SOURCE.read_text())
        lines = out.strip().splitlines()
        if not lines:
            raise BenchmarkError(echo.TOOL, f"{self.where}: the build printed no path")
        return lines[-1]

    def run(self, argv: list[str], *, on_edge: Callable[[str], None], timeout: float,
            dump: str | None = None) -> tuple[str, str | None]:
        """Run ``argv`` there; the output streams back (edges as they are printed). The program is
        killed there on every way out of here (an error, Ctrl-C, a timeout)."""
        tag = f"/tmp/farm_load-{source_digest()}-{threading.get_ident()}-{id(self)}"
        pidfile, remote_dump = f"{tag}.pid", f"{tag}.samples"
        argv = argv + (["-o", remote_dump] if dump else [])
        lines: list[str] = []
        code: int | None = None
        began = time.monotonic()
        try:
            with subprocess.Popen(ssh_argv(self.login, run_script(argv, pidfile, timeout)), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
                fired = threading.Event()
                timer = threading.Timer(timeout + 15, lambda: (fired.set(), proc.kill()))
                timer.start()
                try:
                    assert proc.stdout is not None
                    for line in proc.stdout:
                        lines.append(line)
                        if m := echo.EDGE.match(line.strip()):
                            on_edge(m["edge"])
                    stderr = proc.stderr.read() if proc.stderr else ""
                    code = proc.wait(timeout=timeout + 15)
                finally:
                    timer.cancel()
                    if proc.poll() is None:
                        proc.kill()
        finally:
            if code != 0:  # the program may still run there: kill it (best effort, never hiding the cause)
                try:
                    self._ssh(kill_script(pidfile), timeout=30)
                except (InfrastructureError, BenchmarkError):
                    pass
        if code == SSH_FAILED:
            raise InfrastructureError(f"{self.where}: ssh failed (the load generator was lost mid-sweep?): "
                                      f"{stderr.strip()[-300:]}")
        if code == 124 or fired.is_set() or (code == 137 and time.monotonic() - began >= timeout):
            raise BenchmarkError(echo.TOOL, f"{self.where}: did not finish within {timeout:.0f} s (killed)")
        if code is not None and code < 0:
            raise InfrastructureError(f"{self.where}: the ssh client here died of signal {-code}")
        if code is not None and code > 128:  # timeout passes on its child's signal as 128 + N
            # the load client is the lab's: its program killed (a reboot, the OOM killer, someone) is
            # the lab failing, as its connection lost is, not the target under test
            raise InfrastructureError(f"{self.where}: farm_load died of signal {code - 128} (exit {code}) after "
                                      f"{time.monotonic() - began:.1f} s: the load generator was lost mid-sweep"
                                      + (f": {stderr.strip()[-300:]}" if stderr.strip() else ""))
        if code != 0:
            raise BenchmarkError(echo.TOOL, f"{self.where}: exit {code}: {stderr.strip()[-300:] or ''.join(lines)[-300:]}")
        samples = self._ssh(f"cat {shlex.quote(remote_dump)}; rm -f {shlex.quote(remote_dump)} "
                            f"{shlex.quote(pidfile)}") if dump else self._ssh(f"rm -f {shlex.quote(pidfile)}")
        return "".join(lines), (samples if dump else None)


#: a sweep's ``generator: place``: the one load client taken with the farm's place (farm.places.loadgens)
PLACE = "place"


def generator(name: str, target: object, held: dict[str, dict] | None = None) -> Generator | RemoteGenerator:
    """The sweep's generator: the lab host, the target's ``loadgen-<name>``, or a load client taken
    with the place (``held``, default ``$FARM_LOADGENS``: farm.places.loadgens); ``place`` is the
    place's only one."""
    if name == HOST:
        return Generator()
    env = getattr(target, "env", None)
    resolve = (lambda p: env.config.resolve_path(p)) if env is not None else str
    found = logins(getattr(target, "resources", ()), resolve)
    if held is None:
        from farm.places.loadgens import held as taken_with_place

        held = taken_with_place()
    for gen, login in held.items():
        found.setdefault(gen, SSHLogin(gen, str(login["address"]), str(login["username"]), int(login["port"])))
    if name == PLACE:
        with_place = sorted(held)
        if len(with_place) != 1:
            raise JobError(f"sweep generator 'place': the load generator taken with the farm's place, but "
                           f"{'none was' if not with_place else 'several were: ' + ', '.join(with_place)} "
                           "(the place's tag farm_loadgens names them; farm run --farm takes them)")
        name = with_place[0]
    if name not in found:
        known = ", ".join([HOST, *sorted(found)])
        raise JobError(f"sweep generator {name!r}: the target has no {PREFIX}{name} resource (it has: {known})")
    return RemoteGenerator(found[name])
