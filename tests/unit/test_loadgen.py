"""Load generators over SSH (farm.bench.loadgen): the commands, the env file's resources, and a real
sshd on 127.0.0.1 as the "remote" machine (a generator that runs, one that dies, one cut off)."""

from __future__ import annotations

import os
import shlex
import signal
import time
from pathlib import Path

import pytest

from farm.bench import echo, loadgen
from farm.bench.loadgen import RemoteGenerator, SSHLogin, install_script, kill_script, logins, run_script, ssh_argv
from farm.errors import InfrastructureError, JobError
from farm.measure import BenchmarkError
from tests.loadgen_ssh import host_responder, local_sshd

LOGIN = SSHLogin("vb04", "192.168.10.4", "bench", 2222, "/keys/id_vb04", "/keys/known_hosts")


def test_ssh_argv_is_batch_mode_with_host_key_checked_and_the_remote_text_last():
    argv = ssh_argv(LOGIN, "echo hi")
    assert argv[0] == "ssh" and argv[-3:] == ["--", "192.168.10.4", "echo hi"]
    for option in ("BatchMode=yes", "StrictHostKeyChecking=yes", "UserKnownHostsFile=/keys/known_hosts"):
        assert option in argv
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-l") + 1] == "bench"
    assert argv[argv.index("-i") + 1] == "/keys/id_vb04"
    plain = ssh_argv(SSHLogin("x", "h", "u"), "true")
    assert "-i" not in plain and not any(a.startswith("UserKnownHostsFile") for a in plain)


def test_run_script_records_the_pid_and_bounds_the_run():
    argv = echo.load_command("/home/b/.cache/farm/farm_load-1/farm_load", "10.0.0.5", 7, echo.load_spec(1e7, duration=2))
    text = run_script(argv, "/tmp/x.pid", 64)
    assert text.startswith("timeout -s KILL 64 /home/b/.cache/farm/farm_load-1/farm_load")
    assert text.endswith(" & echo $! > /tmp/x.pid; wait $!")
    assert shlex.split(text.split(" & ", 1)[0])[4:] == argv
    assert "kill -KILL -- -$p" in kill_script("/tmp/x.pid")
    assert "farm_load-abc" in install_script("abc") and "cc -O2" in install_script("abc")


class _Resource:
    def __init__(self, name, **kw):
        self.name, self.password, self.port = name, None, 22
        self.__dict__.update(kw)


def test_logins_are_the_loadgen_resources_and_a_password_is_refused():
    found = logins([_Resource("port-5201", address="a", username="root"),
                    _Resource("loadgen-vb04", address="192.168.10.4", username="bench", keyfile="id", known_hosts="kh")],
                   resolve=lambda p: f"/env/{p}")
    assert found == {"vb04": SSHLogin("vb04", "192.168.10.4", "bench", 22, "/env/id", "/env/kh")}
    with pytest.raises(JobError, match="loadgen-vb05: password is not supported"):
        logins([_Resource("loadgen-vb05", address="h", username="u", password="secret")])


def test_an_unknown_generator_names_what_the_target_has():
    class Target:
        env = None
        resources = [_Resource("loadgen-vb04", address="h", username="u")]
    with pytest.raises(JobError, match=r"no loadgen-vb09 resource \(it has: host, vb04\)"):
        loadgen.generator("vb09", Target())
    assert isinstance(loadgen.generator("host", None), loadgen.Generator)
    with pytest.raises(JobError, match="sweep generator"):
        loadgen.check_generator("../x")


def test_the_resource_class_registers_with_labgrid():
    from labgrid.factory import target_factory

    from farm.bench.loadgen_resource import LoadGenerator

    assert target_factory.resources["LoadGenerator"] is LoadGenerator
    assert {"keyfile", "known_hosts", "address", "username", "port"} <= {a.name for a in LoadGenerator.__attrs_attrs__}


# --- for real, through sshd on 127.0.0.1 -----------------------------------------------------------


@pytest.fixture
def remote(tmp_path):
    with local_sshd(tmp_path / "ssh") as login:
        yield login


@pytest.fixture
def responder(tmp_path):
    proc, port = host_responder(tmp_path)
    yield port
    proc.kill()
    proc.wait()


def _running(binary: str, port: int) -> list[int]:
    """Processes of this program (by /proc/<pid>/exe: not the ssh client whose command line names it)
    sending to this test's responder ``port`` (a boot test's sweep beside it, in the other xdist worker,
    runs the same program)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if (entry.name.isdigit() and os.readlink(entry / "exe") == binary
                    and str(port).encode() in (entry / "cmdline").read_bytes().split(b"\0")):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_a_remote_generator_builds_runs_and_streams_its_edges(remote, responder):
    gen = RemoteGenerator(remote)
    binary = gen.prepare()
    assert binary.endswith(f"farm_load-{loadgen.source_digest()}/farm_load")
    assert gen.prepare() == binary  # built once per source
    edges = []
    spec = echo.load_spec(1e6, size=200, clients=2, duration=0.5, warmup=0.2, cooldown=0.2)
    output, samples = gen.run(echo.load_command(binary, "127.0.0.1", responder, spec),
                              on_edge=lambda e: edges.append((e, time.monotonic())), timeout=30, dump="x")
    result = echo.parse_load(output)
    assert [e for e, _ in edges] == ["start", "end"]
    assert 0.3 < edges[1][1] - edges[0][1] < 1.5  # the edges came as printed, not at the end
    assert result.samples == len(echo.parse_samples(samples or "")) > 0
    assert not _running(binary, responder)


def test_a_generator_that_dies_is_the_lab_failing_naming_the_machine(remote, responder):
    """The load client is the lab's: its program killed mid-sweep is class 3 (retried), not a test
    failure of the target (issue 31)."""
    from farm.errors import EXIT_INFRA_ERROR, InfrastructureError

    gen = RemoteGenerator(remote)
    binary = gen.prepare()
    spec = echo.load_spec(1e6, size=200, clients=1, duration=20, warmup=0, cooldown=0)

    def die(edge):  # the program dies there, mid-window (killed by someone else)
        for pid in _running(binary, responder):
            os.kill(pid, signal.SIGKILL)

    with pytest.raises(InfrastructureError) as caught:
        gen.run(echo.load_command(binary, "127.0.0.1", responder, spec), on_edge=die, timeout=60)
    assert f"load generator lg1 ({remote.username}@127.0.0.1:{remote.port})" in str(caught.value)
    assert "farm_load died of signal 9" in str(caught.value) and "lost mid-sweep" in str(caught.value)
    assert caught.value.exit_code == EXIT_INFRA_ERROR


def test_an_error_here_stops_the_load_there(remote, responder):
    gen = RemoteGenerator(remote)
    binary = gen.prepare()
    spec = echo.load_spec(1e6, size=200, clients=1, duration=30, warmup=0, cooldown=0)

    def fail(edge):  # e.g. the target's /proc/stat could not be read
        raise BenchmarkError("cpu", "the target went away")

    with pytest.raises(BenchmarkError, match="the target went away"):
        gen.run(echo.load_command(binary, "127.0.0.1", responder, spec), on_edge=fail, timeout=60)
    deadline = time.monotonic() + 5
    while _running(binary, responder) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(binary, responder)


def test_an_unreachable_machine_is_an_infrastructure_error_naming_it(remote):
    gone = SSHLogin("vb07", "127.0.0.1", remote.username, 1, remote.keyfile, remote.known_hosts)
    with pytest.raises(InfrastructureError, match=r"load generator vb07 \(.*@127.0.0.1:1\): ssh failed"):
        RemoteGenerator(gone).prepare()


def test_an_env_file_names_its_load_generators(tmp_path):
    from labgrid import Environment

    env = tmp_path / "lab.yaml"
    env.write_text("""\
targets:
  board:
    resources:
      - LoadGenerator:
          name: loadgen-vb04
          address: 192.168.10.4
          username: bench
          keyfile: keys/id_vb04
          known_hosts: keys/known_hosts
      - NetworkService:
          name: port-5201
          address: 192.168.10.31
          username: root
imports:
  - farm.bench.loadgen_resource
""")
    target = Environment(str(env)).get_target("board")
    gen = loadgen.generator("vb04", target)
    assert isinstance(gen, RemoteGenerator)
    assert gen.login == SSHLogin("vb04", "192.168.10.4", "bench", 22, str(tmp_path / "keys" / "id_vb04"),
                                 str(tmp_path / "keys" / "known_hosts"))


def test_the_sweep_checks_its_generator_before_any_boot():
    from farm.bench.network import SweepParams

    check_sweep = SweepParams.of

    check_sweep({"loads": [10], "generator": "vb04"})
    with pytest.raises(JobError, match="sweep generator"):
        check_sweep({"loads": [10], "generator": "vb 04; rm"})
    with pytest.raises(JobError, match="generator not a parameter of this method"):
        check_sweep({"method": "iperf3-sockperf", "loads": [10], "generator": "vb04"})


@pytest.mark.parametrize("benchmarks, takes_loadgens", [
    ("  - sweep: {method: ipbench-echo, loads: [1], duration: 1, generator: place}\n", True),
    ("  - sweep: {loads: [1], generator: lg1}\n", True),
    ("  - sweep: {loads: [1]}\n", False),                          # the lab host's own load
    ("  - openssl-speed: {algorithms: [sha256]}\n", False),        # typed params without a generator
])
def test_farm_run_takes_the_load_generators_of_a_sweep_that_drives_one(tmp_path, benchmarks, takes_loadgens):
    """farm run --farm reserves the place's load clients with the board when a sweep's generator is not
    the lab host (farm.places.loadgens), whatever params class each benchmark has."""
    from farm.run import drives_load_generators, load_pipeline

    (tmp_path / "t.yaml").write_text("targets: {main: {resources: [], drivers: []}}\n")
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"name: p\nimage: images/x.yaml\ntargets: [{{env: t.yaml}}]\nbenchmarks:\n{benchmarks}")
    assert drives_load_generators(load_pipeline(pipeline)) is takes_loadgens
