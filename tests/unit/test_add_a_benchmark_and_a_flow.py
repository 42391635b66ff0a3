"""What a newcomer adds, and nothing else: a benchmark (a parser, its params, its registration) and a boot
flow (a fake bootloader), both in this file, run through the real runner from a pipeline file that names
them. No other farm file knows them (docs/architecture.md: where to add what)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Iterator

import attrs
import pexpect
import pytest

from farm.bench.params import Params, number_in, param
from farm.bench.registry import BenchmarkSpec, register, unregister
from farm.boot.flow import BootRequest, FlowSetup
from farm.boot.session import LinuxTarget
from farm.config import Node
from farm.errors import EXIT_OK, InfrastructureError, ParseError
from farm.flows import FlowType
from farm.flows import register as register_flow
from farm.flows import unregister as unregister_flow
from farm.images.image import load_image
from farm.images.request import ImageRequest
from farm.measure import HIGHER_IS_BETTER, LOWER_IS_BETTER, Measurement
from farm.measure.params import parse_params
from farm.results.csvout import read_records
from farm.results.identity import MetricKey
from farm.run import run_pipeline

# --- the benchmark: its parser (farm/measure would hold it), params, run and registration ---------------

TOY = "frob"


def parse_frob(text: str) -> list[Measurement]:
    """``frob <name> <bytes/s> <cycles>`` lines."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("frob "):
            try:
                _, name, rate, effort = line.split()
                out += [Measurement(TOY, "throughput", float(rate), "bytes/s", {"name": name}),
                        Measurement(TOY, "effort", float(effort), "frobs", {"name": name})]
            except ValueError:
                raise ParseError(f"frob output line {number}: {line!r}") from None
    return out


@attrs.frozen(kw_only=True)
class FrobParams(Params):
    LABEL = TOY
    rounds: int = param(2, kind=int, run_length=True, check=number_in(1, 100, whole=True))
    flavour: str = param("plain", kind=str, identity=True)


def run_frob(ctx, params: FrobParams) -> list[Measurement]:
    lines = ctx.run(f"for i in $(seq {params.rounds}); do echo frob {params.flavour}$i 1000$i 3; done")
    # its records say what was measured and how long, as farm's benchmarks' do; the key keeps only the first
    return [attrs.evolve(m, params={**m.params, "flavour": params.flavour, "rounds": params.rounds})
            for m in parse_frob("\n".join(lines))]


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
        self.process.sendline("PS1=''; stty -echo")

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
    image: Path      # a "system image" the lab brings: a directory with a manifest.json
    prompt: str = "fake> "


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
            yield LinuxTarget(name=request.env.target_name, arch=request.env.arch, target=None,
                              console=request.console, shell=FakeShell(process), boot_seconds=0.1,
                              recorded={"bootloader": "FakeBoot 1.0"})
        finally:
            process.terminate(force=True)


def read_settings(setup: Node, key: str, base: Path) -> FakeBootSettings:
    node = setup[key]
    return FakeBootSettings(base / node["image"], node.get("prompt", "fake> "))


FAKEBOOT = FlowType("fakeboot", lambda settings, setup: FakeBootFlow(settings, setup), key="fakeboot",
                    read=read_settings, describe=lambda s: {"image": str(s.image)})


@pytest.fixture
def newcomer():
    spec = register(BenchmarkSpec(TOY, "toy", run_frob, FrobParams, parsers=(parse_frob,),
                                  units={"bytes/s": HIGHER_IS_BETTER, "frobs": LOWER_IS_BETTER}))
    flow = register_flow(FAKEBOOT)
    yield spec, flow
    unregister(TOY)
    unregister_flow("fakeboot")


def test_a_toy_benchmark_and_a_toy_flow_run_through_the_real_runner(newcomer, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    image = tmp_path / "system"
    image.mkdir()
    artifacts = {}
    for name in ("kernel.elf", "initrd"):
        (image / name).write_bytes(b"\0")
        artifacts[name] = {"size": 1, "sha256": hashlib.sha256(b"\0").hexdigest()}
    (image / "manifest.json").write_text(json.dumps({"name": "toy-system", "arch": "arm64", "key": "k" * 64,
                                                     "kernel": "kernel.elf", "initrd": "initrd",
                                                     "artifacts": artifacts}))
    env = tmp_path / "toy.yaml"
    env.write_text("targets:\n  toy-board:\n    options: {arch: arm64}\n")
    pipeline = tmp_path / "toy-pipeline.yaml"
    pipeline.write_text("name: toy\nimage: unused-by-this-flow.yaml\ntargets: [{env: toy.yaml}]\n"
                        "setups:\n  - {name: fake, fakeboot: {image: system}}\n"
                        "benchmarks:\n  - frob: {rounds: 3, flavour: spicy}\n"
                        "settle: false\n")  # the toy's shell is this (busy, shared) machine's: it never settles
    run = run_pipeline(pipeline, out=tmp_path / "run")
    assert run.status == EXIT_OK, run.info.stages
    records = read_records(run.results_csv)
    throughput = sorted((r for r in records if r.metric == "throughput"), key=lambda r: r.value)
    assert [(parse_params(r.params), r.value) for r in throughput] == [
        ({"flavour": "spicy", "name": f"spicy{i}", "rounds": "3"}, 1000.0 * 10 + i) for i in (1, 2, 3)]
    # the typed params decide the record key: flavour (identity) is in it, rounds (run length) is not
    assert [parse_params(MetricKey.of(r).params) for r in throughput] == [
        {"flavour": "spicy", "name": f"spicy{i}"} for i in (1, 2, 3)]
    assert {(r.suite, r.benchmark, r.target, r.setup, r.image) for r in records} == {
        ("toy", TOY, "toy-board", "fake", "toy-system")}
    info = json.loads((run.path / "run.json").read_text())
    (boot,) = info["targets"]["toy-board"]["boots"]
    assert boot["flow"] == "fakeboot" and boot["bootloader"] == "FakeBoot 1.0" and boot["cpus"] >= 1
    assert info["setups"]["fake"]["flow"] == "fakeboot" and info["setups"]["fake"]["fakeboot"] == {
        "image": str(image)}
    assert "toy-system" in info["images"] and info["images"]["toy-system"]["given"]
    assert [s["name"] for s in info["stages"]] == ["build", "boot toy-board/fake", "toy.frob toy-board/fake",
                                                   "publish"]
