"""A lab's farm plugin (its pyproject.toml declares it in the entry-point group ``farm``): a benchmark, an import
kind and a boot flow, all farm is told of them, and no farm file names them (docs/architecture.md: where to
add what).

    benchmarks: [{frob: {rounds: 3, flavour: spicy}}]      # farm run: the benchmark, on any setup with a shell
    setups: [{name: fake, fakeboot: {image: system}}]      # the flow: a fake bootloader, then a local shell
    farm import frob capture.txt --flavour spicy ...       # the import kind, with the option it declares
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path
from typing import Iterator

import attrs
import pexpect

from farm.bench.params import Params, number_in, param
from farm.bench.registry import BenchmarkSpec, ImportOption, Importer, once
from farm.boot.flow import BootRequest, FlowSetup
from farm.boot.session import LinuxTarget
from farm.errors import InfrastructureError, ParseError
from farm.flows import FlowType
from farm.hookspecs import hookimpl
from farm.images.image import load_image
from farm.images.request import ImageRequest
from farm.measure import HIGHER_IS_BETTER, LOWER_IS_BETTER, Measurement
from farm.schema import setting

# --- the benchmark: its parser (a lab's measure module), params, run and registration ---------------------

FROB = "frob"


def parse_frob(text: str) -> list[Measurement]:
    """``frob <name> <bytes/s> <frobs>`` lines."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("frob "):
            try:
                _, name, rate, effort = line.split()
                out += [Measurement(FROB, "throughput", float(rate), "bytes/s", {"name": name}),
                        Measurement(FROB, "effort", float(effort), "frobs", {"name": name})]
            except ValueError:
                raise ParseError(f"frob output line {number}: {line!r}") from None
    return out


@attrs.frozen(kw_only=True)
class FrobParams(Params):
    LABEL = FROB
    rounds: int = param(2, kind=int, run_length=True, check=number_in(1, 100, whole=True))
    flavour: str = param("plain", kind=str, identity=True)
    # needs of the booted target: Params.requires' default, a shell (farm.boot.target.ShellTarget)


def run_frob(ctx, params: FrobParams) -> list[Measurement]:
    lines = ctx.run(f"for i in $(seq {params.rounds}); do echo frob {params.flavour}$i 1000$i 3; done")
    # its records say what was measured and how long, as farm's benchmarks' do; the key keeps only the first
    return [attrs.evolve(m, params={**m.params, "flavour": params.flavour, "rounds": params.rounds})
            for m in parse_frob("\n".join(lines))]


def import_frob(text: str, options) -> list[tuple[int, Measurement]]:
    """A capture of frob's output; ``--flavour`` says which flavour it was made with (the records' identity)."""
    return [(repeat, attrs.evolve(m, params={**m.params, "flavour": options["flavour"]}) if options["flavour"] else m)
            for repeat, m in once(parse_frob)(text, options)]


# --- the flow: a fake bootloader, a local process that takes `boot` at its prompt and execs a shell -----

BOOTLOADER = r'''
import os, sys
print("FakeBoot 1.0 (press a key)", flush=True)
sys.stdin.readline()
while True:
    line = input("fake> ").strip()
    if line.startswith("boot"):
        print("Starting kernel ...", flush=True)
        os.execvp("sh", ["sh"])
    print(f"unknown command: {line}", flush=True)
'''


class FakeShell:
    """Commands on the fake target's shell, each ended by a marker with its exit code."""

    def __init__(self, process: pexpect.spawn):
        self.process = process
        # no prompt, no echo, and both in effect before the first command is typed (a command typed before
        # stty ran would come back echoed, its text among the output's lines): the marker is computed, so
        # its echo cannot match
        self.process.sendline("PS1=''; stty -echo; echo __READY$((1 + 1))__")
        self.process.expect(r"__READY2__\r?\n", timeout=30)

    def run(self, command: str, timeout: float = 30) -> tuple[list[str], list[str], int]:
        self.process.sendline(f"{command}; echo __END__ $?")
        self.process.expect(r"__END__ (\d+)\r?\n", timeout=timeout)
        lines = [line for line in self.process.before.decode().replace("\r", "").split("\n") if line.strip()]
        return lines, [], int(self.process.match.group(1))

    def run_check(self, command: str, timeout: float = 30) -> list[str]:
        lines, _, code = self.run(command, timeout)
        if code != 0:
            raise InfrastructureError(f"{command!r} exited {code}")
        return lines


@attrs.frozen
class FakeBootSettings:
    """The setup's ``fakeboot:`` settings, declared once (farm.schema): read, checked and in ``farm schema
    pipeline``."""

    image: Path = setting(relative=True, doc='a "system image" the lab brings: a directory with a manifest.json')
    prompt: str = setting("fake> ", doc="the bootloader's prompt")


@attrs.frozen
class FakeBootFlow:
    settings: FakeBootSettings
    setup: FlowSetup
    kind: str = "fakeboot"

    def images(self, image: ImageRequest) -> ImageRequest:
        return ImageRequest(given=load_image(self.settings.image), label="lab system image")

    @contextlib.contextmanager
    def boot(self, request: BootRequest) -> Iterator[LinuxTarget]:
        process = pexpect.spawn(sys.executable, ["-c", BOOTLOADER], timeout=20)
        try:
            process.expect("press a key")
            process.sendline("")
            process.expect(re.escape(self.settings.prompt))
            process.sendline(f"boot {request.image.manifest['kernel']}")
            process.expect("Starting kernel")
            # a shell and a network (its FlowType's gives, the default): farm's Linux target, no labgrid target
            yield LinuxTarget(name=request.env.target_name, arch=request.env.arch, target=None,
                              console=request.console, shell=FakeShell(process), boot_seconds=0.1,
                              recorded={"bootloader": "FakeBoot 1.0"})
        finally:
            process.terminate(force=True)


FAKEBOOT = FlowType("fakeboot", lambda settings, setup: FakeBootFlow(settings, setup), key="fakeboot",
                    settings=FakeBootSettings, needs_settings=True)


# --- what the plugin registers (farm.hookspecs) ---------------------------------------------------------

@hookimpl
def farm_benchmarks() -> list[BenchmarkSpec]:
    return [BenchmarkSpec(FROB, "toy", run_frob, FrobParams, parsers=(parse_frob,),
                          units={"bytes/s": HIGHER_IS_BETTER, "frobs": LOWER_IS_BETTER})]


@hookimpl
def farm_importers() -> list[Importer]:
    return [Importer("frob", FROB, "frob's output, lines of frob NAME RATE EFFORT", import_frob,
                     (ImportOption("flavour", "the flavour the capture was made with", str),))]


@hookimpl
def farm_flows() -> list[FlowType]:
    return [FAKEBOOT]
