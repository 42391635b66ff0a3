"""The ipbench-style echo load test: ``farm_load`` on the lab host, ``farm_echo`` on the target.

Both are C programs of ours (``images/src/farm_load.c``, ``images/src/farm_echo.c``). The
responder is a recipe program of the target image; the generator is built on demand for the host
with the host's ``gcc`` into farm's cache (:func:`host_generator`), keyed by the source's hash.

The method and its figures (ipbench's latency test) are described where its output is read,
:mod:`farm.measure.farmload`.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

import attrs

from farm.errors import JobError
from farm.measure import BenchmarkError
from farm.measure.farmload import (EDGE, METHOD, TOOL, ClientCounts, LoadResult, parse_load,  # noqa: F401
                                   parse_samples)

RESPONDER = "farm_echo"
ECHO_PORT = 7  # the echo service's port
SOURCE = Path(__file__).resolve().parents[2] / "images" / "src" / "farm_load.c"
MIN_SIZE, MAX_SIZE = 24, 65507  # the generator's header is 24 bytes; 65507 is the largest UDP/IPv4 payload
MAX_CLIENTS = 64
MAX_SECONDS = 86400  # a window, warm-up or cool-down longer than a day is a typo (as iperf3's -t limit)
MAX_SAMPLES = 100_000_000


# --- commands ------------------------------------------------------------------------------------


@attrs.frozen
class LoadSpec:
    """A run of the generator; checked when built (:func:`load_spec`)."""

    rate_bps: float
    size: int = 1472
    clients: int = 4
    warmup: float = 1.0
    cooldown: float = 1.0
    duration: float | None = None
    samples: int | None = None


def _positive(name: str, value: Any, *, zero: bool = False, whole: bool = False) -> None:
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) \
            or value < 0 or (value == 0 and not zero):
        what = "a whole number" if whole else "a number"
        raise JobError(f"echo load {name} {value!r}: expected {what} {'>= 0' if zero else '> 0'}")


def load_spec(rate_bps: float, *, size: int = 1472, clients: int = 4, warmup: float = 1.0, cooldown: float = 1.0,
              duration: float | None = None, samples: int | None = None) -> LoadSpec:
    """A checked :class:`LoadSpec`: exactly one of ``duration`` (s) and ``samples``; raises JobError."""
    _positive("rate", rate_bps)
    if rate_bps < 1000:
        raise JobError(f"echo load rate {rate_bps!r} bit/s: expected at least 1000 bit/s")
    _positive("packet_size", size, whole=True)
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise JobError(f"echo load packet_size {size!r}: expected {MIN_SIZE}-{MAX_SIZE} bytes")
    _positive("clients", clients, whole=True)
    if clients > MAX_CLIENTS:
        raise JobError(f"echo load clients {clients!r}: expected 1-{MAX_CLIENTS}")
    _positive("warmup", warmup, zero=True)
    _positive("cooldown", cooldown, zero=True)
    for name, value in (("warmup", warmup), ("cooldown", cooldown), ("duration", duration)):
        if value is not None and not isinstance(value, bool) and isinstance(value, (int, float)) and value > MAX_SECONDS:
            raise JobError(f"echo load {name} {value!r}: expected at most {MAX_SECONDS} s")
    if isinstance(samples, int) and not isinstance(samples, bool) and samples > MAX_SAMPLES:
        raise JobError(f"echo load samples {samples!r}: expected at most {MAX_SAMPLES}")
    if (duration is None) == (samples is None):
        raise JobError("echo load: give the measured window as duration (s) or samples, not both or neither")
    if duration is not None:
        _positive("duration", duration)
    if samples is not None:
        _positive("samples", samples, whole=True)
    return LoadSpec(float(rate_bps), size, clients, float(warmup), float(cooldown),
                    None if duration is None else float(duration), samples)


def load_command(binary: str, host: str, port: int, spec: LoadSpec, *, dump: str | None = None) -> list[str]:
    argv = [binary, "-a", host, "-p", str(port), "-r", f"{spec.rate_bps:.0f}", "-s", str(spec.size),
            "-n", str(spec.clients), "-w", f"{spec.warmup:g}", "-c", f"{spec.cooldown:g}"]
    argv += ["-d", f"{spec.duration:g}"] if spec.duration is not None else ["-N", str(spec.samples)]
    return argv + (["-o", dump] if dump else [])


def responder_command(port: int = ECHO_PORT, *, priority: int | None = None, cpu: int | None = None,
                      single: bool = False) -> str:
    """The target's shell command: (re)start the responder as a daemon with these options;
    ``single``: one datagram per recvfrom/sendto, as ipbench's echo responder (method ``ipbench``)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise JobError(f"echo port {port!r}: expected 1-65535")
    argv = [RESPONDER, "-d", "-p", str(port)] + (["-s"] if single else [])
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 99:
            raise JobError(f"echo_priority {priority!r}: expected a SCHED_FIFO priority 1-99")
        argv += ["-P", str(priority)]
    if cpu is not None:
        if isinstance(cpu, bool) or not isinstance(cpu, int) or cpu < 0:
            raise JobError(f"echo_cpu {cpu!r}: expected a core number >= 0")
        argv += ["-c", str(cpu)]
    # the pidof loop: a previous responder (other options) must be gone before the port is bound again
    return (f"kill $(pidof {RESPONDER}) 2>/dev/null; i=0; while pidof {RESPONDER} >/dev/null && [ $i -lt 50 ]; "
            f"do i=$((i+1)); usleep 20000; done; {' '.join(argv)}")


# --- the host-side binary ------------------------------------------------------------------------


def host_generator(cache: Path | None = None, source: Path = SOURCE) -> Path:
    """``farm_load`` built for this host with ``gcc`` into ``<cache>/host/farm_load-<hash>/``.

    The hash covers the source and the compiler (path, size, mtime), so an edited source or an
    upgraded compiler gives a new binary; a finished build is moved into place atomically (two jobs
    may build it at once). A compile error is a :class:`~farm.errors.JobError` naming the source.
    """
    from farm.images.build import default_cache
    from farm.images.cachefs import tool_fingerprint

    cc = shutil.which("gcc")
    if cc is None:
        raise JobError("no host C compiler (gcc) to build farm_load: `make setup` installs it")
    digest = hashlib.sha256(source.read_bytes() + f"\0{tool_fingerprint(cc)}".encode()).hexdigest()[:16]
    home = (cache or default_cache()) / "host" / f"farm_load-{digest}"
    binary = home / "farm_load"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="farm_load-", dir=home.parent) as tmp:
        out = Path(tmp) / "farm_load"
        proc = subprocess.run([cc, "-O2", "-Wall", "-pthread", "-o", str(out), str(source), "-lm"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr.strip()[:300])
            raise JobError(f"{source}: does not compile for the host: {first}")
        built = Path(tmp) / "done"
        built.mkdir()
        out.rename(built / "farm_load")
        try:
            built.rename(home)
        except OSError:
            if not binary.is_file():  # another job's rename won only if it left a binary
                raise
    return binary


def run_load(argv: list[str], *, on_edge: Callable[[str], None], timeout: float) -> str:
    """Run the generator; ``on_edge("start"|"end")`` is called as each window edge is printed
    (to sample the target's CPU there). Returns the whole output."""
    lines: list[str] = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if m := EDGE.match(line.strip()):
                    on_edge(m["edge"])
            stderr = proc.stderr.read() if proc.stderr else ""
            code = proc.wait(timeout=timeout)
        except BaseException:
            proc.kill()
            raise
        finally:
            timer.cancel()
    if code < 0:
        raise BenchmarkError(TOOL, f"did not finish within {timeout:.0f} s (killed)")
    if code != 0:
        raise BenchmarkError(TOOL, f"exit {code}: {stderr.strip() or ''.join(lines)[-300:]}")
    return "".join(lines)
