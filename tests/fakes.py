"""The fakes of farm's unit tests, each written once: what cannot exist in a unit test (a booted board's
shell, a boot flow that powers a board) stands in by what a test tells it, so each test still says what
it checks.

    shell = ScriptedShell(lambda command: ["1000000"], code=3)    # a board's shell: answers, exit code
    flow = FakeFlow({"a": TestFailure("panic")})                  # boots nothing; setup a's boot fails
    FakeFlow(booted=lambda: booted_target(dtb="u-boot"))          # what each boot hands over
    ctx = FakeContext(lambda command: ["openssl's output"])       # a benchmark's BenchContext
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator

from farm.boot.facts import FACTS_COMMAND
from farm.boot.session import LinuxTarget
from farm.boot.target import BootedTarget

#: what the fake target's facts command prints (farm.boot.facts): 4 cores, an arm64 Linux, an address
FACT_LINES = ["cpus=4", "online=0-3", "kernel=6.1.0-fake", "machine=aarch64", "addr=10.0.2.15/24"]

Answer = Callable[[str], list[str]]


def nothing(command: str) -> list[str]:
    return []


def with_facts(answer: Answer = nothing) -> Answer:
    """``answer``, but :data:`FACT_LINES` to the facts command (what every booted target is asked first)."""
    return lambda command: list(FACT_LINES) if command == FACTS_COMMAND else answer(command)


class ScriptedShell:
    """A booted target's shell (as labgrid's ShellDriver: ``run`` and ``run_check``): each command's output is
    ``answer(command)`` (default: the facts, nothing else), ``run``'s exit code ``code``; the commands are kept
    in ``commands``."""

    def __init__(self, answer: Answer | None = None, code: int = 0) -> None:
        self.answer = answer or with_facts()
        self.code = code
        self.commands: list[str] = []

    def run_check(self, command: str, timeout: float = 60) -> list[str]:
        self.commands.append(command)
        return self.answer(command)

    def run(self, command: str, timeout: float = 60) -> tuple[list[str], list[str], int]:
        return self.run_check(command, timeout), [], self.code


def booted_target(shell: object = None, **fields) -> LinuxTarget:
    """What a Linux flow hands over, of a target that is not there (no labgrid target, no console): the twin
    maaxboard-twin, its shell ``shell`` (default: a :class:`ScriptedShell` telling the facts)."""
    return LinuxTarget(**{"name": "maaxboard-twin", "arch": "arm64", "target": None, "console": None,
                          "boot_seconds": 1.0, "shell": shell if shell is not None else ScriptedShell(), **fields})


class FakeFlow:
    """A boot flow that boots nothing (farm.boot.flow.BootFlow): each boot hands over ``booted()`` (default:
    :func:`booted_target`, its topology the fake flow's), or raises what ``outcomes`` says for its setup (an
    exception, or a list of them taken one a boot; None: it boots). The setups it booted and powered off are
    kept in ``boots`` and ``powered_off``; a boot takes ``boot_seconds``, its power-off ``power_off_seconds``."""

    kind = "fake"

    def __init__(self, outcomes: dict | None = None, *, booted: Callable[[], BootedTarget] | None = None,
                 boot_seconds: float = 0.0, power_off_seconds: float = 0.0) -> None:
        self.outcomes = dict(outcomes or {})
        self.booted = booted or (lambda: booted_target(topology={"flow": "fake"}))
        self.boot_seconds, self.power_off_seconds = boot_seconds, power_off_seconds
        self.boots: list[str] = []
        self.powered_off: list[str] = []

    def images(self, image):
        return image

    @contextlib.contextmanager
    def boot(self, request) -> Iterator[BootedTarget]:
        setup = request.job.split("-")[-2]
        self.boots.append(setup)
        time.sleep(self.boot_seconds)
        try:
            outcome = self.outcomes.get(setup)
            if isinstance(outcome, list):
                outcome = outcome.pop(0) if outcome else None
            if outcome is not None:
                raise outcome
            yield self.booted()
        finally:
            time.sleep(self.power_off_seconds)
            self.powered_off.append(setup)


class FakeContext:
    """What a benchmark's run function is given (farm.bench.context.BenchContext) where only its commands
    matter: each command's output is ``answer(command)``; the commands are kept in ``commands``."""

    def __init__(self, answer: Answer = nothing) -> None:
        self.answer = answer
        self.commands: list[str] = []

    def run(self, command: str, *, timeout: float = 60, tool: str = "target") -> list[str]:
        self.commands.append(command)
        return self.answer(command)
