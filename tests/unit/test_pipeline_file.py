"""farm.run.model.load_pipeline: the real smoke pipeline loads; every broken file names file:line: field."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.bench.registry import benchmarks
from farm.errors import JobError
from farm.bench.network import Iperf3Params
from farm.run.model import Benchmark, Setup, load_pipeline

ROOT = Path(__file__).resolve().parent.parent.parent
SMOKE = ROOT / "pipelines" / "smoke.yaml"

GOOD = """\
name: t
image: ../images/x.yaml
targets:
  - env: ../env/a.yaml
  - env: /srv/farm/env/b.yaml
benchmarks:
  - iperf3: {protocol: tcp, duration: 3}
  - openssl-speed:
      seconds: 1
"""


def _write(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "pipelines"
    folder.mkdir(exist_ok=True)
    path = folder / "p.yaml"
    path.write_text(text)
    return path


def _error(path: Path) -> str:
    with pytest.raises(JobError) as info:
        load_pipeline(path)
    return str(info.value)


def test_smoke_pipeline_loads():
    pipeline = load_pipeline(SMOKE)
    assert pipeline.name == "smoke"
    assert pipeline.source == SMOKE
    # paths are relative to the pipeline file, not to the current directory
    assert pipeline.images["arm64"] == SMOKE.parent / "../images/maaxboard-bench.yaml"
    assert pipeline.images["arm64"].resolve() == ROOT / "images" / "maaxboard-bench.yaml"
    assert pipeline.images["amd64"].resolve() == ROOT / "images" / "x86-bench.yaml"
    assert all(p.is_file() for p in pipeline.images.values())
    assert [e.resolve() for e in pipeline.envs] == [ROOT / "env" / "qemu-maaxboard.yaml"]
    assert all(e.is_file() for e in pipeline.envs)
    assert pipeline.setups == (Setup("default"),)
    assert pipeline.repeats == 1
    assert [b.name for b in pipeline.benchmarks][:2] == ["iperf3", "openssl-speed"]
    assert pipeline.benchmarks[0] == Benchmark("iperf3", Iperf3Params(protocol="tcp", duration=3),
                                               {"protocol": "tcp", "duration": 3})
    assert all(b.name in benchmarks() for b in pipeline.benchmarks)


def test_smoke_pipeline_loads_from_another_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    pipeline = load_pipeline(SMOKE)
    assert pipeline.images["arm64"].resolve() == ROOT / "images" / "maaxboard-bench.yaml"


def test_relative_and_absolute_paths(tmp_path):
    path = _write(tmp_path, GOOD)
    pipeline = load_pipeline(path)
    assert pipeline.images['*'] == tmp_path / "pipelines" / "../images/x.yaml"
    assert pipeline.envs == (tmp_path / "pipelines" / "../env/a.yaml", Path("/srv/farm/env/b.yaml"))
    assert [b.given for b in pipeline.benchmarks] == [{"protocol": "tcp", "duration": 3}, {"seconds": 1}]
    assert pipeline.benchmarks[0].params.duration == 3 and pipeline.benchmarks[1].params.seconds == 1


def test_setups_and_repeats(tmp_path):
    path = _write(tmp_path, GOOD + "repeats: 3\nsetups:\n  - name: base\n  - name: nosmt\n    bootargs: [nosmt, mitigations=off]\n")
    pipeline = load_pipeline(path)
    assert pipeline.repeats == 3
    assert pipeline.setups == (Setup("base"), Setup("nosmt", ("nosmt", "mitigations=off")))


def test_benchmark_without_params(tmp_path):
    pipeline = load_pipeline(_write(tmp_path, GOOD.replace("  - iperf3: {protocol: tcp, duration: 3}", "  - iperf3:")))
    assert pipeline.benchmarks[0] == Benchmark("iperf3", Iperf3Params(), {})


# --- errors ---

def test_unknown_benchmark(tmp_path):
    path = _write(tmp_path, GOOD.replace("  - openssl-speed:", "  - dhrystone:"))
    message = _error(path)
    assert message.startswith(f"{path}:8: benchmarks[1].dhrystone: unknown benchmark (known: ")
    assert "iperf3" in message and "openssl-speed" in message


@pytest.mark.parametrize("old, new, line, field, expected", [
    ("duration: 3", 'duration: "three"', 7, "benchmarks[0].iperf3.duration", "expected an integer or a number, got str 'three'"),
    ("duration: 3", "duration: true", 7, "benchmarks[0].iperf3.duration", "expected an integer or a number, got True"),
    ("protocol: tcp", "protocol: 6", 7, "benchmarks[0].iperf3.protocol", "expected a string, got int 6"),
    ("seconds: 1", 'seconds: "1"', 9, "benchmarks[1].openssl-speed.seconds", "expected an integer, got str '1'"),
    ("seconds: 1", "seconds: 1.5", 9, "benchmarks[1].openssl-speed.seconds", "expected an integer, got float 1.5"),
    ("seconds: 1", "algorithms: sha256", 9, "benchmarks[1].openssl-speed.algorithms", "expected a list, got str 'sha256'"),
])
def test_bad_param_type(tmp_path, old, new, line, field, expected):
    path = _write(tmp_path, GOOD.replace(old, new))
    assert _error(path) == f"{path}:{line}: {field}: {expected}"


def test_whole_float_duration_is_fine_a_fraction_is_refused_before_any_boot(tmp_path):
    pipeline = load_pipeline(_write(tmp_path, GOOD.replace("duration: 3", "duration: 2.0")))
    assert pipeline.benchmarks[0].params.duration == 2.0
    path = _write(tmp_path, GOOD.replace("duration: 3", "duration: 2.5"))
    assert _error(path) == (f"{path}:7: benchmarks[0].iperf3: iperf3 duration 2.5: expected whole seconds, 1-86400 "
                            "(iperf3 truncates fractions and refuses more)")


@pytest.mark.parametrize("bad", ["x;touch /tmp/pwned", "$(id)", "a b", "x'y"])
def test_target_command_values_are_checked_when_the_file_is_read(tmp_path, bad):
    text = GOOD.replace("  - iperf3: {protocol: tcp, duration: 3}", "  - openssl-speed: {algorithms: [" + repr(bad) + "]}")
    path = _write(tmp_path, text)
    assert "openssl algorithm" in _error(path)


def test_unknown_param(tmp_path):
    path = _write(tmp_path, GOOD.replace("duration: 3", "durration: 3"))
    message = _error(path)
    assert message.startswith(f"{path}:7: benchmarks[0].iperf3.durration: unknown field (allowed: ")
    assert "duration" in message and "protocol" in message
    path = _write(tmp_path, GOOD.replace("seconds: 1", "secs: 1"))
    assert _error(path).startswith(f"{path}:9: benchmarks[1].openssl-speed.secs: unknown field (allowed: ")


def test_missing_targets(tmp_path):
    path = _write(tmp_path, GOOD.replace("targets:\n  - env: ../env/a.yaml\n  - env: /srv/farm/env/b.yaml\n", ""))
    assert _error(path) == f"{path}:1: (top level): missing required field 'targets'"


def test_empty_or_null_targets(tmp_path):
    targets = "targets:\n  - env: ../env/a.yaml\n  - env: /srv/farm/env/b.yaml\n"
    path = _write(tmp_path, GOOD.replace(targets, "targets: []\n"))
    assert _error(path) == f"{path}:3: targets: at least one target is needed"
    path = _write(tmp_path, GOOD.replace(targets, "targets:\n"))
    assert "missing required field 'targets'" in _error(path)


def test_bad_target_items(tmp_path):
    path = _write(tmp_path, GOOD.replace("  - env: ../env/a.yaml\n", "  - ../env/a.yaml\n"))
    assert _error(path) == f"{path}:3: targets: item 0 must be a mapping like {{env: ../env/x.yaml}}"
    path = _write(tmp_path, GOOD.replace("  - env: ../env/a.yaml\n", "  - env: ../env/a.yaml\n    place: rack1\n"))
    assert _error(path).startswith(f"{path}:5: targets[0].place: unknown field (allowed: env)")
    path = _write(tmp_path, GOOD.replace("  - env: ../env/a.yaml\n", "  - {}\n"))
    assert _error(path).startswith(f"{path}:4: targets[0]: missing required field 'targets[0].env'")


@pytest.mark.parametrize("value, expected", [("0", "must be 1-1000"), ("-2", "must be 1-1000"), ("1001", "must be 1-1000"),
                                             ("two", "expected an integer, got str 'two'"),
                                             ("true", "expected an integer, got True")])
def test_bad_repeats(tmp_path, value, expected):
    path = _write(tmp_path, GOOD + f"repeats: {value}\n")
    assert _error(path) == f"{path}:10: repeats: {expected}"


def test_benchmark_items_must_be_single_pairs(tmp_path):
    path = _write(tmp_path, GOOD.replace("  - iperf3: {protocol: tcp, duration: 3}", "  - iperf3"))
    assert _error(path).startswith(f"{path}:6: benchmarks: item 0 must be one 'name: {{params}}' pair")
    path = _write(tmp_path, GOOD.replace("  - iperf3: {protocol: tcp, duration: 3}", "  - iperf3: {}\n    openssl-speed: {}"))
    # a mapping of two: named at its own line, with what it holds
    assert _error(path).startswith(f"{path}:7: benchmarks[0]: expected one 'name: {{params}}' pair, e.g. 'iperf3: "
                                   "{duration: 3}', got mapping {'iperf3': {}, 'openssl-speed': {}}")
    path = _write(tmp_path, GOOD.replace("  - iperf3: {protocol: tcp, duration: 3}", "  - iperf3: [tcp]"))
    assert _error(path) == f"{path}:7: benchmarks[0].iperf3: parameters must be a mapping"


def test_unknown_top_level_field_and_missing_image(tmp_path):
    path = _write(tmp_path, GOOD + "timeout: 10\n")
    assert _error(path).startswith(f"{path}:10: timeout: unknown field (allowed: ")
    path = _write(tmp_path, GOOD.replace("image: ../images/x.yaml\n", ""))
    assert _error(path) == f"{path}:1: (top level): setups[0] (default) boots a Linux image: give 'image' (one recipe) or 'images' (a recipe per architecture)"


def test_bad_setup(tmp_path):
    path = _write(tmp_path, GOOD + "setups:\n  - name: a\n  - nam: b\n")
    assert _error(path).startswith(f"{path}:12: setups[1].nam: unknown field (allowed: bootargs, boots, cpu_frequency_khz, cpus, dpdk, flow, guest, image, name, system)")
    path = _write(tmp_path, GOOD + "setups:\n  - name: a\n    bootargs: [quiet, 3]\n")
    assert _error(path) == f"{path}:12: setups[0].bootargs: item 1 must be a string, got int 3"


def test_not_found(tmp_path):
    assert _error(tmp_path / "nope.yaml") == f"{tmp_path / 'nope.yaml'}: pipeline file not found"


def test_two_setups_of_one_name_are_refused_when_the_file_is_read(tmp_path):
    """Results are keyed by setup name: a 4-core and a 1-core setup both called 'default' would be
    pooled into one median by report, compare and qualify."""
    text = GOOD + "setups:\n  - name: default\n  - {name: default, bootargs: [maxcpus=1]}\n"
    path = _write(tmp_path, text)
    assert _error(path) == (f"{path}:12: setups[1].name: 'default' is already the name of setups[0]: results "
                            "are keyed by setup name, two setups of one name would be pooled into one median")
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "run", str(path), "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "setups[1].name: 'default' is already the name" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "run").exists()


# --- every value checked when the file is read (issue 17): names, kernel arguments, bounds ---------------

SETUPS = GOOD + "setups:\n  - name: four\n  - {name: 'SETUP', bootargs: [maxcpus=1]}\n"


@pytest.mark.parametrize("bad", ["a b", "x/../../t", "..", ".hidden", "-x", "a" * 65, "t\\n", ""])
def test_setup_names_that_would_become_paths_are_refused(tmp_path, bad):
    path = _write(tmp_path, SETUPS.replace("SETUP", bad))
    message = _error(path)
    assert message.startswith(f"{path}:12: setups[1].name: ")
    assert "is not a valid setup name (letters, digits and . _ -" in message


def test_a_good_setup_name_is_kept(tmp_path):
    assert [s.name for s in load_pipeline(_write(tmp_path, SETUPS.replace("SETUP", "one-core_1.5")))
            .setups] == ["four", "one-core_1.5"]


def test_pipeline_name_is_checked(tmp_path):
    path = _write(tmp_path, GOOD.replace("name: t", "name: '../t'"))
    assert _error(path).startswith(f"{path}:1: name: '../t' is not a valid pipeline name")


@pytest.mark.parametrize("bad", ["x; reset", "a b", "$(id)", "quiet\"", "../x"])
def test_setup_bootargs_are_checked_when_read(tmp_path, bad):
    path = _write(tmp_path, SETUPS.replace("SETUP", "one").replace("maxcpus=1", f"'{bad}'"))
    message = _error(path)
    assert message.startswith(f"{path}:12: setups[1].bootargs: item 0 {bad!r}: ")
    assert "is not an allowed kernel argument" in message


@pytest.mark.parametrize("old, new, expected", [
    ("duration: 3", "duration: 1000000000", "iperf3 duration 1000000000: expected whole seconds, 1-86400"),
    ("duration: 3", "duration: .inf", "iperf3 duration inf: expected whole seconds"),
    ("{protocol: tcp, duration: 3}", "{protocol: udp, duration: 3, length: 100000}",
     "iperf3 length 100000: expected 16-65507 bytes for UDP (the largest UDP/IPv4 payload)"),
    ("{protocol: tcp, duration: 3}", "{protocol: tcp, duration: 3, length: 2000000}",
     "iperf3 length 2000000: expected 1-1048576 bytes for TCP"),
    ("{protocol: tcp, duration: 3}", "{protocol: tcp, duration: 3, omit: 61}", "iperf3 omit 61: expected whole seconds, 0-60"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {packet_size: 100000}", "sweep packet_size 100000: expected 24-65507"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {warmup: 100000}", "sweep warmup 100000: expected a number >= 0, at most 86400"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {samples: 1000000000000}", "sweep samples 1000000000000: expected a whole number > 0, at most"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {timeout: 0}", "sweep timeout 0: expected a number > 0"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {method: ipbench-echo, packet_size: 100000}",
     "echo load packet_size 100000: expected 24-65507"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {method: ipbench-echo, duration: 100000}",
     "echo load duration 100000: expected at most 86400 s"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {method: iperf3-sockperf, packet_size: 100000}",
     "iperf3 length 100000: expected 16-65507"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {method: iperf3-sockperf, duration: 100000}",
     "iperf3 duration 100000: expected whole seconds, 1-86400"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {loads: [10, 1.0e+12]}", "sweep loads [10, 1000000000000.0]: expected a list of 1-100 rates in Mb/s, 0 < rate <= 400000"),
    ("iperf3: {protocol: tcp, duration: 3}", "sweep: {method: iperf3-sockperf, rtt_rate: 100000000}",
     "sockperf rate 100000000: expected a whole number"),
])
def test_durations_and_sizes_are_bounded_when_read(tmp_path, old, new, expected):
    path = _write(tmp_path, GOOD.replace(old, new))
    message = _error(path)
    assert message.startswith(f"{path}:7: benchmarks[0].")
    assert expected in message


def test_openssl_seconds_are_bounded(tmp_path):
    path = _write(tmp_path, GOOD.replace("seconds: 1", "seconds: 1000000000"))
    assert _error(path) == (f"{path}:8: benchmarks[1].openssl-speed: openssl seconds 1000000000: "
                            "expected a whole number, 1-3600")


@pytest.mark.parametrize("text, field, expected", [
    ("cpu_frequency_hz: .nan", "cpu_frequency_hz", "expected a number, got nan"),
    ("cpu_frequency_hz: .inf", "cpu_frequency_hz", "expected a number, got inf"),
    ("cpu_frequency_hz: 1.0e+15", "cpu_frequency_hz", "out of range"),
    ("boot_attempts: 1000", "boot_attempts", "must be 1-20"),
])
def test_pipeline_numbers_are_bounded(tmp_path, text, field, expected):
    path = _write(tmp_path, GOOD + text + "\n")
    message = _error(path)
    assert message.startswith(f"{path}:10: {field}: ") and expected in message


def test_setup_frequency_is_bounded(tmp_path):
    path = _write(tmp_path, SETUPS.replace("SETUP", "one").replace("bootargs: [maxcpus=1]", "cpu_frequency_khz: 100000000000"))
    assert _error(path).startswith(f"{path}:12: setups[1].cpu_frequency_khz: 100000000000 is out of range")


def test_repeats_in_boot(tmp_path):
    from farm.run import load_pipeline

    assert load_pipeline(_write(tmp_path, GOOD)).repeats_in_boot == 1
    assert load_pipeline(_write(tmp_path, GOOD + "repeats_in_boot: 5\n")).repeats_in_boot == 5
    path = _write(tmp_path, GOOD + "repeats_in_boot: 0\n")
    assert _error(path) == f"{path}:10: repeats_in_boot: must be 1-1000"
