"""The contract between a flow and a benchmark (farm.boot.target): a flow says what its targets give (a shell,
a served network, a system's console), a benchmark what it needs; a pipeline pairing a benchmark with a
setup whose flow cannot give it is refused when the file is read, and a flow that hands over less than it
promised fails its boot as a job error, naming what was missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.bench.context import BenchContext
from farm.boot.system import SystemTarget
from farm.boot.target import OFFERS, BootedTarget, ConsoleTarget, ServedTarget, ShellTarget
from farm.errors import EXIT_JOB_ERROR, JobError
from farm.flows import flow_types
from farm.run import run_pipeline
from farm.run.model import load_pipeline
from tests.fakes import FakeFlow, booted_target
from tests.unit.test_runner import ENV, cases, constant, pipeline, registry  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]


def _system_target() -> SystemTarget:
    return SystemTarget(name="sel4", arch="arm64", target=None, console=None, boot_seconds=1.0)


def test_farms_targets_implement_what_their_flows_say_they_give():
    linux, system = booted_target(), _system_target()
    assert [isinstance(linux, p) for p in (BootedTarget, ShellTarget, ServedTarget, ConsoleTarget)] == [
        True, True, True, False]
    assert [isinstance(system, p) for p in (BootedTarget, ShellTarget, ServedTarget, ConsoleTarget)] == [
        True, False, True, True]
    gives = {name: flow.gives for name, flow in flow_types().items()}
    assert gives == {"netboot": (ShellTarget, ServedTarget), "netboot+guest": (ShellTarget, ServedTarget),
                     "dpdk": (ShellTarget, ServedTarget), "system": (ServedTarget, ConsoleTarget)}


def test_every_benchmark_asks_for_what_farm_knows():
    from farm.bench.registry import benchmarks

    registered = benchmarks()
    for name, spec in registered.items():
        needs = spec.requires(spec.params.of({}))
        assert needs and set(needs) <= set(OFFERS), name
    assert registered["console"].requires(registered["console"].params.of({})) == (ConsoleTarget,)
    assert registered["openssl-speed"].requires(registered["openssl-speed"].params.of({})) == (ShellTarget,)


def test_a_benchmark_is_refused_a_setup_whose_flow_cannot_give_what_it_needs(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(f"name: c\nimage: {ROOT / 'images' / 'maaxboard-bench.yaml'}\ntargets: [{{env: {ENV}}}]\n"
                    "setups: [{name: bare}]\nbenchmarks:\n  - openssl-speed: {}\n  - console: {}\n")
    with pytest.raises(JobError) as info:
        load_pipeline(path)
    assert str(info.value) == (f"{path}:7: benchmarks[1].console: needs a system image's console on the target, "
                               f"and setup bare ({path}:4: setups[0].name) has none: its flow, netboot, gives a "
                               "shell and a network the lab host reaches")


def test_a_benchmark_reaches_the_target_only_as_the_protocol_it_asks_for():
    ctx = BenchContext(_system_target(), None)
    assert ctx.console_target is ctx.booted and ctx.served_target is ctx.booted
    with pytest.raises(JobError, match=r"needs a shell on the target \(ShellTarget\), and its setup's flow handed "
                                       r"over a SystemTarget, which has none"):
        ctx.run("uname -a")
    assert ctx.cpu_readers() == {} and ctx.cpu_scope == "board"  # a system's CPU is read by its own CPU target
    linux = BenchContext(booted_target(cpu_scope="vcpus"), None)
    assert linux.cpu_scope == "vcpus" and list(linux.cpu_readers()) == ["vcpus"]
    with pytest.raises(JobError, match=r"needs a system image's console on the target \(ConsoleTarget\)"):
        linux.console_target  # noqa: B018


def test_a_flow_that_hands_over_less_than_it_promised_fails_its_boot_as_a_job_error(pipeline, tmp_path):  # noqa: F811
    # the setups' flow type is netboot's (a shell and a network); this flow hands over a system's target
    shell_less = FakeFlow(booted=_system_target)
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: shell_less,
                       registry=registry(count=constant))
    assert run.status == EXIT_JOB_ERROR and cases(run.path)["boot maaxboard-twin/a"] == "error"
    info = json.loads((run.path / "run.json").read_text())
    (boot,) = [s for s in info["stages"] if s["name"] == "boot maaxboard-twin/a"]
    assert boot["message"] == ("setup a: its flow, netboot, gives a shell and a network the lab host reaches, and "
                               "handed over a SystemTarget, which is no ShellTarget")
