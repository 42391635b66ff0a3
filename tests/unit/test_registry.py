"""farm.bench.registry: a benchmark is one registration (a plugin's: farm.plugins), and what lists benchmarks
derives from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from farm import plugins
from farm.bench import echo, network, registry
from farm.bench.params import Params, param
from farm.bench.registry import (IMPORTS, REGISTRATIONS, BenchmarkSpec, Importer, benchmarks, by_param, importers,
                                 once, registered)
from farm.bench.context import BenchContext
from farm.cli import main
from farm.errors import EXIT_JOB_ERROR, EXIT_OK, JobError, ParseError
from farm.measure import (HIGHER_IS_BETTER, LOWER_IS_BETTER, UNKNOWN_DIRECTION, BenchmarkError, Measurement)
from farm.measure import lukem
from farm.measure.clock import UNIT as CYCLES_PER_BYTE
from farm.run import load_pipeline
from farm.results.csvout import read_records
from farm.results.importers import import_file
from farm.results.direction import direction
from farm.results.qualify import NO_DIRECTION, REGRESSION, qualify
from farm.results.record import Record
from tests.unit.labdist import LabPlugin, added
from tests.fakes import booted_target

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CAPTURES = sorted(p for p in DATA.iterdir() if p.is_file() and p.name != "README.md")


# --- every registration is complete ---------------------------------------------------------


def _parsed(parse) -> list[Measurement]:
    """What ``parse`` makes of every captured output it can read (others are another tool's)."""
    found = []
    for path in CAPTURES:
        try:
            found += parse(path.read_text(errors="replace"))
        except (ParseError, JobError, BenchmarkError, ValueError, KeyError):
            continue
    return found


@pytest.mark.parametrize("name", sorted(spec.name for spec in REGISTRATIONS))
def test_every_unit_a_benchmark_measures_has_a_direction(name):
    """Each parser of a registration reads some real captured output (tests/data), and every unit it
    gives there has its direction in the registration, so qualify never guesses for a registered
    benchmark (a new metric in a new unit fails here until its registration says which way is better)."""
    spec = registered()[name]
    assert spec.parsers, f"{name}: no parser registered"
    units: set[str] = set()
    for parse in spec.parsers:
        measured = _parsed(parse)
        assert measured, f"{name}: a parser reads none of tests/data: capture the tool's real output there"
        assert {m.benchmark for m in measured} == {name}
        units |= {m.unit for m in measured}
    if spec.cycles_per_byte:
        units.add(CYCLES_PER_BYTE)
    assert units <= set(spec.units), f"{name}: no direction for {sorted(units - set(spec.units))}"
    assert set(spec.units.values()) <= {HIGHER_IS_BETTER, LOWER_IS_BETTER, UNKNOWN_DIRECTION}


def test_names_are_defined_once_and_indexes_agree():
    assert set(benchmarks()) == {"sweep", "iperf3", "openssl-speed", "isal", "exitcost", "console"}  # vmexit: imported only
    assert registered()["vmexit"].run is None and "vmexit" in {i.benchmark for i in importers().values()}
    assert list(importers()) == ["ipbench", "iperf3", "openssl", "isal", "vmexit"]
    assert registry.suites() == ("network", "crypto", "storage", "virt", "system")
    # the suites that get cycles/byte at the target's clock (the runner reads spec.cycles_per_byte)
    assert {s.suite for s in registered().values() if s.cycles_per_byte} == {"crypto", "storage"}


@pytest.mark.parametrize("plugin, message", [
    (LabPlugin([BenchmarkSpec("iperf3", "network", None)]), "benchmark 'iperf3' is registered already, by farm.bench.registry"),
    (LabPlugin(kinds=[IMPORTS[0]]), "import kind 'ipbench' is registered already, by farm.bench.registry"),
    (LabPlugin(kinds=[Importer("frob", "frobnicate", "?", once(lambda text: []))]),
     "import kind 'frob': no benchmark 'frobnicate' is registered"),
    (LabPlugin(kinds=[Importer("frob", "sweep", "?", once(lambda text: []), (registry.ImportOption("decrypt", "?", int),))]),
     "import kind 'frob': option 'decrypt' is of type int, and kind 'openssl' declares it of type bool"),
])
def test_a_plugin_cannot_take_a_name_or_change_an_options_type(plugin, message):
    with added(plugin, "mylab"), pytest.raises(JobError, match=f"farm plugin mylab: {message}"):
        importers()
    assert "frob" not in importers() and registered()["iperf3"] is benchmarks()["iperf3"]


class _Reached(Exception):
    """Stops a run function once it has asked for its ports."""


class _FakeTarget(BenchContext):
    """A benchmark's context on a target that is not there: commands succeed with no output; ``reach``
    records the port."""

    def __init__(self) -> None:
        super().__init__(booted_target(), None)
        self.ports: list[int] = []

    def run(self, command: str, *, timeout: float = 60, tool: str = "target") -> list[str]:
        if self.ports and "/proc/stat" in command:
            raise _Reached  # a sweep point starts: every port was asked for
        return []

    def reach(self, port: int, protos: tuple[str, ...] = ("tcp",)) -> tuple[str, int]:
        self.ports.append(port)
        return "127.0.0.1", port

    def say(self, text: str) -> None:
        pass


@pytest.mark.parametrize("name, params", [
    ("iperf3", {}), ("sweep", {}), ("sweep", {"method": "iperf3-sockperf"}),
    ("openssl-speed", {}), ("isal", {}),
])
def test_the_ports_a_run_reaches_are_its_registered_ports(monkeypatch, name, params):
    """The guest setup forwards ``spec.ports`` into a VM: a run function that reaches a port its
    registration does not name would fail only in a guest. Each method's reach is recorded on a fake
    target (no process is started: the host-side programs are stubbed to stop the run)."""
    def stop(*args, **kwargs):
        raise _Reached

    monkeypatch.setattr(network, "_host_iperf3", stop)
    monkeypatch.setattr(echo, "host_generator", lambda *a, **k: Path("/bin/false"))
    monkeypatch.setattr(echo, "run_load", stop)
    target = _FakeTarget()
    try:
        benchmarks()[name].run(target, params)  # type: ignore[arg-type]
    except (_Reached, ParseError, BenchmarkError):
        pass
    assert set(target.ports) <= set(benchmarks()[name].ports), f"{name} {params}: reached {target.ports}"
    if benchmarks()[name].suite == "network":
        assert target.ports, "the fake target saw no reach: the test no longer runs the function"


def test_a_sweep_reaches_the_ports_it_chose_and_a_guest_forwards_them(monkeypatch, tmp_path):
    """sDDF's echo server listens on UDP 1235 and its CPU target on TCP 1236: the sweep reaches the ports
    its params chose (served or farm's own responder), and the runner's flow forwards those into a guest."""
    from farm.bench import ipbench_sweep, lukem as lukem_bench
    from farm.run.runner import Runner

    def stop(*args, **kwargs):
        raise _Reached

    monkeypatch.setattr(echo, "host_generator", lambda *a, **k: Path("/bin/false"))
    monkeypatch.setattr(ipbench_sweep, "cpu_target", stop)
    monkeypatch.setattr(network, "cpu_target_session", stop)
    monkeypatch.setattr(echo, "run_load", stop)
    for given, reached in (({"served": True, "echo_port": 1235, "cpu_target_port": 1236}, [1235, 1236]),
                           ({"echo_port": 1235, "cpu_target_port": 4000}, [1235, 4000]),
                           ({"method": "ipbench-echo", "echo_port": 9, "cpu_target_port": 4001}, [9, 4001])):
        params = network.SweepParams.of(given)
        commands: list[str] = []
        target = _FakeTarget()
        monkeypatch.setattr(target, "run", lambda command, **kw: commands.append(command) or [], raising=False)
        with pytest.raises(_Reached):
            benchmarks()["sweep"].run(target, params)  # type: ignore[arg-type]
        assert target.ports == reached, given
        assert set(reached) <= set(benchmarks()["sweep"].ports_for(params))
        if not params.served:  # farm's responder and farm_lukem listen where the lab host reaches them
            assert any(f"{echo.RESPONDER} -d -p {reached[0]}" in c for c in commands)
            assert lukem_bench.start_command(reached[1]) in commands
    assert network.SweepParams.of({"method": "iperf3-sockperf"}).ports() == ()
    path = tmp_path / "p.yaml"
    path.write_text(f"name: g\nimage: {ROOT / 'images' / 'maaxboard-bench.yaml'}\n"
                    f"targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]\n"
                    "setups: [{name: vm, guest: {vcpus: 1, accel: tcg}}]\n"
                    "benchmarks: [{sweep: {echo_port: 1235, cpu_target_port: 4000}}]\n")
    pipeline = load_pipeline(path)
    flow = Runner(pipeline=pipeline, run=None, hooks=None).flow(pipeline.setups[0])  # type: ignore[arg-type]
    assert {1235, 4000} <= set(flow.ports)


@pytest.mark.parametrize("given, message", [
    ({"echo_port": 0}, "sweep echo_port 0: expected a port number 1-65535"),
    ({"cpu_target_port": 65536}, "sweep cpu_target_port 65536: expected a port number 1-65535"),
    ({"echo_port": True}, ".sweep.echo_port: expected an integer, got True"),
    ({"method": "iperf3-sockperf", "echo_port": 1235}, "echo_port not a parameter of this method"),
])
def test_a_sweeps_ports_are_checked_when_the_file_is_read(tmp_path, given, message):
    path = tmp_path / "p.yaml"
    path.write_text(f"name: s\nimage: {ROOT / 'images' / 'maaxboard-bench.yaml'}\n"
                    f"targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]\n"
                    f"benchmarks:\n  - sweep: {{loads: [10], {', '.join(f'{k}: {v}' for k, v in given.items())}}}\n")
    with pytest.raises(JobError) as info:
        load_pipeline(path)
    assert str(info.value).startswith(f"{path}:5: benchmarks[0].sweep") and message in str(info.value)


def test_registered_ports():
    assert benchmarks()["iperf3"].ports == (5201,)
    assert set(benchmarks()["sweep"].ports) == {echo.ECHO_PORT, lukem.PORT, network.IPERF3_PORT, network.SOCKPERF_PORT}
    assert benchmarks()["openssl-speed"].ports == benchmarks()["isal"].ports == ()


# --- adding a benchmark: a parser, one registration, its tests -------------------------------

FROB = "frobnicate"


def parse_frob(text: str) -> list[Measurement]:
    """The toy tool's lines: ``frob <name> <bytes/s> <frobs>``: a throughput and an effort in frobs
    (a unit qualify knows no direction of, but the registration does)."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith("frob "):
            continue
        try:
            _, name, rate, effort = line.split()
            out += [Measurement(FROB, "throughput", float(rate), "bytes/s", {"name": name}),
                    Measurement(FROB, "effort", float(effort), "frobs", {"name": name})]
        except ValueError:
            raise ParseError(f"frob output line {number}: {line!r}: expected 'frob NAME RATE EFFORT'") from None
    return out


def _at_least_one(name, value):
    if value < 1:
        raise JobError(f"{name} {value!r}: expected at least 1")


@attrs.frozen(kw_only=True)
class FrobParams(Params):
    """The toy benchmark's parameters: declared once, checked when a pipeline file is read."""

    LABEL = FROB
    rounds: int = param(1, kind=int, run_length=True, check=_at_least_one)


FROB_SPEC = BenchmarkSpec(
    FROB, "toy", lambda ctx, params: parse_frob("\n".join(ctx.run(f"frob {params.rounds}"))),
    FrobParams, parsers=(parse_frob,),
    units={"bytes/s": HIGHER_IS_BETTER, "frobs": LOWER_IS_BETTER, "cycles/byte": LOWER_IS_BETTER},
    cycles_per_byte=True, ports=(4242,))
FROB_PLUGIN = LabPlugin([FROB_SPEC], [Importer("frob", FROB, "frobnicate's output", by_param(parse_frob, "round"))])


@pytest.fixture
def frob():
    """The toy benchmark and its import kind, registered by a plugin for the test: all farm is told of it."""
    plugins.add(FROB_PLUGIN)
    yield FROB_SPEC
    plugins.remove(FROB_PLUGIN)
    assert FROB not in registered() and "frob" not in importers()


def test_a_new_benchmark_is_one_registration(frob, tmp_path, capsys):
    # `farm import frob`: the CLI's choices and the import path come from the registration
    capture = tmp_path / "frob.txt"
    capture.write_text("frob alpha 100 3\nfrob beta 250.5 4\n")
    assert main(["import", "frob", str(capture), "--setup", "lab", "--frequency", "1GHz",
                 "--out", str(tmp_path / "imported")]) == EXIT_OK
    records = read_records(tmp_path / "imported" / "results.csv")
    assert {(r.suite, r.benchmark) for r in records} == {("toy", FROB)}
    assert sorted((r.metric, r.value) for r in records) == [  # cycles/byte: its registration says so
        ("cycles_per_byte", 1e9 / 250.5), ("cycles_per_byte", 1e9 / 100), ("effort", 3.0), ("effort", 4.0),
        ("throughput", 100.0), ("throughput", 250.5)]
    # a pipeline can name it, with its parameters checked when the file is read
    (tmp_path / "pipelines").mkdir()
    pipeline = tmp_path / "pipelines" / "p.yaml"
    pipeline.write_text("name: t\nimage: ../x.yaml\ntargets:\n  - env: ../a.yaml\n"
                        "benchmarks:\n  - frobnicate: {rounds: 3}\n")
    assert load_pipeline(pipeline).benchmarks[0].params == FrobParams(rounds=3)
    pipeline.write_text(pipeline.read_text().replace("rounds: 3", "rounds: 0"))
    with pytest.raises(JobError, match=r"p.yaml:6: benchmarks\[0\].frobnicate.rounds: frobnicate rounds 0: expected at least 1"):
        load_pipeline(pipeline)
    # its run function is checked like every other: an impossible value fails the benchmark
    class Target:
        def run(self, command, **kwargs):
            return ["frob alpha 12 1", "frob beta nan 1"] if command == "frob 2" else []
    with pytest.raises(BenchmarkError, match="beta.*NaN"):
        frob.run(Target(), {"rounds": 2})
    # qualify: the registration's direction, where the unit alone gives none
    assert direction("effort", "frobs", FROB) == LOWER_IS_BETTER
    assert direction("effort", "frobs") == UNKNOWN_DIRECTION
    base = _frob_records([3.0, 3.1, 2.9, 3.05, 2.95], "r1")  # 5 boots a side: what qualify judges from
    cand = _frob_records([6.0, 6.1, 5.9, 6.05, 5.95], "r2")  # twice the effort
    assert [c.verdict for c in qualify(base, cand).comparisons] == [REGRESSION]
    plugins.remove(FROB_PLUGIN)
    try:
        assert [c.verdict for c in qualify(base, cand).comparisons] == [NO_DIRECTION]
        # and the CLI no longer offers it
        assert main(["import", "frob", str(capture), "--setup", "lab", "--out", str(tmp_path / "again")]) != EXIT_OK
    except SystemExit as exit:
        assert exit.code == EXIT_JOB_ERROR
    finally:
        plugins.add(FROB_PLUGIN)
    assert "invalid choice: 'frob'" in capsys.readouterr().err


def _frob_records(values, run_id):
    return [Record(run_id=run_id, timestamp="2026-12-01T00:00:00.000+00:00", target="board", arch="arm64",
                   setup="default", image="img", suite="toy", benchmark=FROB, params="name=alpha", repeat=i,
                   metric="effort", value=v, unit="frobs") for i, v in enumerate(values)]


def test_the_cli_offers_every_registered_importer():
    help_text = subprocess.run([sys.executable, "-m", "farm.cli", "import", "--help"], capture_output=True,
                               text=True, cwd=ROOT, check=True).stdout
    assert "ipbench | iperf3 | openssl | isal | vmexit" in help_text
    for importer in importers().values():
        assert importer.what.split(":")[0] in " ".join(help_text.split())


# --- one import path, the same measurements as a live run --------------------------------------


def test_importing_isal_bench_output_gives_the_live_runs_measured_cycles(tmp_path):
    """An isal_bench capture carries its cpufreq lines; its import records the cycles/byte a live run
    records from them (the two import paths differed: the import dropped them)."""
    from farm.measure.isal import isal_measurements
    from tests.unit.test_isal import CLOCKED

    capture = tmp_path / "isal.txt"
    capture.write_text(CLOCKED)
    imported = import_file("isal", capture, setup="lab")
    live = isal_measurements(CLOCKED)
    assert [(r.metric, r.value, r.unit) for r in imported] == [(m.metric, m.value, m.unit) for m in live]
    assert sum(r.metric == "cycles_per_byte" for r in imported) == 2


@pytest.mark.parametrize("kind, capture", [("openssl", "openssl-sha256-mr.txt"), ("iperf3", "iperf3-tcp.json")])
def test_cpu_fraction_is_refused_where_it_would_be_ignored(tmp_path, kind, capture):
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "import", kind, str(DATA / capture), "--setup", "x",
                           "--cpu-fraction", "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == EXIT_JOB_ERROR, proc.stderr
    assert proc.stderr.strip() == f"farm: job error: import {kind}: --cpu-fraction applies to ipbench imports only"
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_a_utf8_bom_is_dropped_by_every_importer(tmp_path):
    """Spreadsheets save CSV and text with a BOM; one import path reads them all alike (only the
    ipbench path dropped it, openssl's refused the first line)."""
    text = (DATA / "openssl-sha256-mr.txt").read_text()
    plain, bom = tmp_path / "plain.txt", tmp_path / "bom.txt"
    plain.write_text(text)
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert [(r.metric, r.params, r.value) for r in import_file("openssl", bom, setup="x")] == \
        [(r.metric, r.params, r.value) for r in import_file("openssl", plain, setup="x")]


def test_once_and_by_param_number_the_repeats():
    ms = [Measurement("b", "m", 1.0, "u", {"run": 2}), Measurement("b", "m", 2.0, "u", {})]
    assert [r for r, _ in once(lambda text: ms)("", None)] == [0, 0]
    assert [r for r, _ in by_param(lambda text: ms, "run")("", None)] == [2, 0]


def test_measure_sits_below_bench_and_bench_below_results():
    """The layering that ends the bench <-> results import cycle, checked in a fresh interpreter:
    farm.measure loads neither farm.bench nor farm.results; farm.bench (the registrations with their
    run functions) does not load farm.results; and none of them loads labgrid (the CLI reads the
    registrations for its choices, and `farm --help` stays quick)."""
    check = """
import importlib, pkgutil, sys
import farm.measure
for m in pkgutil.iter_modules(farm.measure.__path__, "farm.measure."):
    importlib.import_module(m.name)
loaded = lambda prefix: sorted(n for n in sys.modules if n == prefix or n.startswith(prefix + "."))
assert not loaded("farm.bench") and not loaded("farm.results"), loaded("farm.bench") + loaded("farm.results")
import farm.bench.registry
assert not loaded("farm.results"), loaded("farm.results")
assert not loaded("labgrid"), loaded("labgrid")[:3]
print("layered")
"""
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout.strip() == "layered", proc.stderr


def test_the_docs_list_the_benchmarks_farm_registers():
    """docs/benchmarks.md's list is the registrations' (farm's own: a lab's plugin installed here adds none)."""
    doc = (ROOT / "docs" / "benchmarks.md").read_text()
    listed = doc.split("<!-- registered benchmarks: made by")[1].split("-->", 1)[1].split(
        "<!-- registered benchmarks: end -->")[0]
    assert listed.strip() == registry.markdown_table(REGISTRATIONS, IMPORTS).strip(), (
        "docs/benchmarks.md's list is stale: write farm.bench.registry.markdown_table(REGISTRATIONS, IMPORTS) there")
    assert {spec.name for spec in REGISTRATIONS} <= set(registered())  # farm's builtin plugin registers them all
