"""farm-exitcost's console (farm.measure.exitcost) on its real output from the EL2 twin's KVM, and the
benchmark's command line and checks (farm.bench.exitcost)."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.bench.exitcost import ExitcostParams, guest_command, program_elf
from farm.errors import JobError, ParseError
from farm.images.system import describe
from farm.measure.exitcost import parse_exitcost, read_exitcost

DATA = Path(__file__).resolve().parents[1] / "data" / "exitcost-el2-twin-kvm.txt"


def test_the_twins_kvm_exits_become_counter_ticks_and_ns_per_exit():
    result = read_exitcost(DATA.read_text())
    assert (result.counter_hz, result.el) == (62500000, 1) and result.skipped == {}
    # the virtual counter's ticks (62.5 MHz on the twin), in their own unit: no "cycles" (issue #45)
    assert {(m.metric, m.unit) for m in result.measurements} == {("ticks", "ticks"), ("time", "ns")}
    ticks = {m.params["test"]: m.value for m in result.measurements if m.metric == "ticks"}
    assert set(ticks) == {"hvc", "timer-sysreg", "gicd-read", "mmio-qemu"}
    assert ticks["hvc"] == pytest.approx(6149.108)  # 6149108 ticks / 1000 exits
    hvc = next(m for m in result.measurements if m.metric == "time" and m.params["test"] == "hvc")
    assert hvc.unit == "ns" and hvc.value == pytest.approx(6149.108 / 62.5e6 * 1e9)
    assert hvc.params == {"test": "hvc", "counter": "cntvct", "counter_hz": 62500000, "iterations": 1000}


def test_a_guest_that_stopped_midway_or_never_started_is_an_error():
    text = DATA.read_text()
    with pytest.raises(ParseError, match="no 'farm-exitcost: done' line"):
        parse_exitcost(text.replace("farm-exitcost: done", ""))
    with pytest.raises(ParseError, match="no 'farm-exitcost N: counter"):
        parse_exitcost("qemu-system-aarch64: failed to initialize kvm: No such file or directory\n")
    skipped = read_exitcost(text.replace(next(l for l in text.splitlines() if l.startswith("exit mmio-qemu")),
                                         "exit mmio-qemu: skipped (no virtio-mmio transport at 0xa000000)"))
    assert skipped.skipped == {"mmio-qemu": "no virtio-mmio transport at 0xa000000"}


def test_the_program_is_built_for_a_kvm_guest_and_run_under_kvm():
    kind, elf = describe(program_elf())
    assert kind == "elf" and elf["arch"] == "arm64" and elf["entry"] == "0x40080000"
    command = guest_command(500)
    assert "-accel kvm -cpu host" in command and "iterations=500" in command and "virtio-net-device" in command
    with pytest.raises(JobError, match="expected a whole number of exits"):
        ExitcostParams.of({"iterations": 0})
    assert ExitcostParams.of({}).needs().packages == ("qemu-system-arm",)


def test_the_elf_that_ran_is_in_run_json_by_its_sha256(tmp_path, monkeypatch):
    """farm-exitcost is built at run time, in no image: run.json's programs records which bytes ran."""
    import base64
    import hashlib
    import json

    import farm.run.runner
    from farm.bench.exitcost import PROGRAM, TARGET_PATH, run_exitcost
    from farm.bench.registry import BenchmarkSpec
    from farm.images.image import Image
    from farm.run import run_pipeline

    from ..fakes import FakeFlow, ScriptedShell, booted_target, with_facts

    written: list[str] = []

    def target(command):  # the target: the program's base64 lines, its console from the EL2 twin
        if command.startswith("echo ") and TARGET_PATH in command:
            written.append(command.split()[1])
        return DATA.read_text().splitlines() if "qemu-system-aarch64" in command else []

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setattr(farm.run.runner, "build", lambda request, carried=None: Image(tmp_path, {
        "name": "fake", "arch": "arm64", "key": "k", "kernel": "Image", "initrd": "initrd.cpio.gz"}, cached=True))
    env = Path(__file__).resolve().parents[2] / "env" / "qemu-maaxboard.yaml"
    path = tmp_path / "p.yaml"
    path.write_text(f"name: exits\nimage: {tmp_path / 'fake.yaml'}\ntargets: [{{env: {env}}}]\n"
                    "benchmarks: [{exitcost: {iterations: 1000}}]\n")
    spec = BenchmarkSpec("exitcost", "virt", run_exitcost, ExitcostParams)
    flow = FakeFlow(booted=lambda: booted_target(ScriptedShell(with_facts(target))))
    run = run_pipeline(path, out=tmp_path / "run", flow_for=lambda s: flow, registry={"exitcost": spec})
    assert run.status == 0
    recorded = json.loads((run.path / "run.json").read_text())["programs"][PROGRAM]
    ran = base64.b64decode("".join(written))
    assert recorded["sha256"] == hashlib.sha256(ran).hexdigest() == hashlib.sha256(program_elf()).hexdigest()
    assert recorded["size"] == len(ran) and recorded["load_addr"] == "0x40080000"
