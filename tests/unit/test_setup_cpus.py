"""CPU configurations as setups: a setup's cores (``cpus``: ``maxcpus=`` on the kernel's command line,
``-smp`` on a twin) and its frequency (cpufreq on a board; on a twin the nominal value, recorded as such)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from farm.boot.facts import TargetFacts
from farm.boot.flow import TWIN_FREQUENCY, cpus_bootargs, pin_or_nominal
from farm.boot.session import EnvFile
from farm.errors import JobError
from farm.results.identity import CYCLE_SOURCE_OF_FREQUENCY
from farm.run.model import load_pipeline
from farm.run.runner import cpu_frequency

from ..fakes import ScriptedShell

ROOT = Path(__file__).resolve().parents[2]
TWIN = ROOT / "env" / "qemu-maaxboard.yaml"


def _pipeline(tmp_path: Path, setups: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: cores\nimage: {ROOT / 'images' / 'maaxboard-bench.yaml'}\ntargets: [{{env: {TWIN}}}]\n"
                    f"setups:\n{setups}benchmarks: [{{iperf3: {{}}}}]\n")
    return path


def test_a_setup_of_n_cores_boots_linux_with_maxcpus():
    assert cpus_bootargs(1, ["quiet"]) == ["maxcpus=1"]
    assert cpus_bootargs(None, []) == []
    assert cpus_bootargs(2, ["maxcpus=3"]) == []  # the setup's own bootargs say it already


def test_cpus_is_checked_when_the_pipeline_is_read(tmp_path):
    p = load_pipeline(_pipeline(tmp_path, "  - {name: one-1ghz, cpus: 1, cpu_frequency_khz: 1000000}\n"
                                          "  - {name: four, cpus: 4}\n"))
    assert [(s.cpus, s.cpu_frequency_khz) for s in p.setups] == [(1, 1000000), (4, None)]
    assert p.setups[0].describe()["cpus"] == 1
    path = _pipeline(tmp_path, "  - {name: none, cpus: 0}\n")
    with pytest.raises(JobError) as info:
        load_pipeline(path)
    assert str(info.value).startswith(f"{path}:5: setups[0].cpus: ")


@attrs.define
class _Booted:
    emulated: bool
    name: str = "t"
    shell: object = None


def test_a_twins_frequency_is_nominal_and_says_why():
    recorded = pin_or_nominal(_Booted(emulated=True), 1000000)
    assert recorded == {"requested_khz": 1000000, "pinned": False, "nominal_hz": 1e9, "why": TWIN_FREQUENCY}
    assert "-icount" in TWIN_FREQUENCY and "MTTCG" in TWIN_FREQUENCY


def test_the_setups_frequency_is_the_runs_when_the_target_says_none(tmp_path):
    p = load_pipeline(_pipeline(tmp_path, "  - {name: one-1ghz, cpus: 1, cpu_frequency_khz: 1000000}\n  - {name: b}\n"))
    env = EnvFile.load(TWIN)
    none = TargetFacts(cpus=1, online="0", frequency_hz=None, frequency_source="unknown", governor="", kernel="",
                       machine="", address="")
    assert cpu_frequency(none, p, env, p.setups[0]) == (1e9, "setup")
    assert CYCLE_SOURCE_OF_FREQUENCY["setup"] == "nominal"
    assert cpu_frequency(none, p, env, p.setups[1]) == (1.5e9, "env")  # the env file's nominal value
    measured = attrs.evolve(none, frequency_hz=1.2e9, frequency_source="cpufreq")
    assert cpu_frequency(measured, p, env, p.setups[0]) == (1.2e9, "cpufreq")  # what the board says wins


def _shell(code: int) -> ScriptedShell:
    """A board's shell answering the pin command with ``code`` (3: no cpufreq)."""
    return ScriptedShell(lambda command: ["1000000"], code=code)


def test_a_board_is_pinned_through_cpufreq_and_one_without_it_fails_the_setup():
    from farm.errors import TestFailure

    shell = _shell(0)
    assert pin_or_nominal(_Booted(emulated=False, shell=shell), 1000000) == {"requested_khz": 1000000, "pinned": True}
    assert "scaling_setspeed" in shell.commands[0]
    with pytest.raises(TestFailure, match="t: cannot pin the CPUs to 1000000 kHz: it has no cpufreq"):
        pin_or_nominal(_Booted(emulated=False, shell=_shell(3)), 1000000)
