"""farm.guest.channel: the board's CPU read through a second channel while a guest owns the console.

For real here: the server line in busybox sh (busybox's nc, as on the host image), read over TCP; a
channel that does not answer or answers nothing is a CpuChannelError naming its port; and an ipbench
sweep point of a guest setup, with the lab host's generator against farm_echo on this machine, records
the board's and the vCPUs' CPU through their channels at the window's edges, with no command on the
shell."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace

import attrs
import pytest

from farm.bench import loadgen
from farm.bench.context import BenchContext
from farm.bench.ipbench_sweep import _point, proc_stat_figures
from farm.bench.network import SweepParams
from farm.guest.channel import BOARD_CPU_PORT, CpuChannel, CpuChannelError, parse_answer, server_command
from farm.measure import cpustat
from tests.fakes import ScriptedShell, booted_target
from tests.loadgen_ssh import host_responder

#: the MaaXBoard EL2 twin's host CPU server's answer (port 1238 through the twin's forward) with a KVM guest
#: running pinned to core 1, as tests/guest/test_guest_on_twin.py's channel test printed it (tests/data/README.md)
TWIN = Path(__file__).parents[1] / "data" / "twin-host-cpu-lines.txt"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def direct(address: str, port: int) -> tuple[str, int]:
    return address, port


def start_server() -> tuple[int, int]:
    """The CPU server of server_command, started by busybox sh as the host's shell starts it: (port, pid)."""
    port = free_port()
    proc = subprocess.run(["busybox", "sh", "-c", server_command(port) + "; code=$?; echo pid=$!; exit $code"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return port, int(proc.stdout.split("pid=")[1])


@pytest.fixture
def server():
    port, pid = start_server()
    yield port
    os.kill(pid, signal.SIGTERM)


def test_the_server_line_answers_every_connection_with_the_cpu_lines(server):
    channel = CpuChannel("board", "127.0.0.1", server)
    first, second = channel(direct), channel(direct)
    assert set(first) == {"cpu", *(f"cpu{i}" for i in range(len(first) - 1))}
    assert len(first) - 1 == len([line for line in Path("/proc/stat").read_text().splitlines()
                                  if line.startswith("cpu") and line[3].isdigit()])
    assert second["cpu"].total >= first["cpu"].total  # a fresh read each time, not a cached one


def test_the_twins_host_answer_parses_per_core():
    cores = parse_answer(TWIN.read_text(), "the twin")
    assert sorted(cores) == ["cpu", "cpu0", "cpu1", "cpu2", "cpu3"]  # the MaaXBoard's 4 cores
    assert cores["cpu"].user >= sum(cores[f"cpu{i}"].user for i in range(4)) - 4
    # the guest's time (within user) is all on core 1, where its vCPU thread was pinned (pin: [1])
    assert cores["cpu1"].guest == cores["cpu"].guest > 0 and cores["cpu0"].guest == cores["cpu2"].guest == 0


def test_a_channel_nobody_listens_on_names_its_port():
    port = free_port()
    with pytest.raises(CpuChannelError, match=f"board CPU channel \\(10.0.2.15 port {BOARD_CPU_PORT}\\) did not "
                                              "answer: ConnectionRefusedError"):
        CpuChannel("board", "10.0.2.15", BOARD_CPU_PORT)(lambda a, p: ("127.0.0.1", port))


def test_a_forward_with_nothing_behind_it_answers_nothing():
    """QEMU's user network accepts a forwarded connection and closes it when nothing listens behind it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        closer = threading.Thread(target=lambda: listener.accept()[0].close())
        closer.start()
        with pytest.raises(CpuChannelError, match=r"vcpus CPU channel \(127.0.0.1 port 1239\) answered nothing"):
            CpuChannel("vcpus", "127.0.0.1", 1239)(lambda a, p: ("127.0.0.1", port))
        closer.join()


def test_an_answer_that_is_not_proc_stat_names_the_channel():
    with pytest.raises(CpuChannelError, match="the twin: /proc/stat: no aggregate 'cpu' line"):
        parse_answer("sh: busybox: not found\n", "the twin")


def test_the_server_port_is_checked():
    with pytest.raises(ValueError):
        server_command(0)


def test_window_figures_per_cpu():
    t = cpustat.CpuTimes
    edges = {("board", "start"): t(100, 0, 0, 300), ("board", "end"): t(150, 0, 0, 350),
             ("vcpus", "start"): t(10, 0, 0, 10), ("vcpus", "end"): t(109, 0, 0, 11)}
    assert proc_stat_figures(edges) == {"board": 50.0, "vcpus": 99.0}


class _Target:  # one boot's forwards are kept per target (weakly): a plain object is one
    pass


def test_a_guest_sweep_point_records_the_boards_and_the_vcpus_cpu_through_their_channels(
        server, tmp_path, monkeypatch):
    board_port = server
    vcpus, pid = start_server()
    try:
        import farm.boot.network as network

        monkeypatch.setattr(network, "reach", lambda target, address, port, protos=("tcp",): ("127.0.0.1", port))

        def console(command):  # the guest's console: a CPU read there under load took > 60 s on the twin
            raise AssertionError(f"a console round trip: {command}")

        booted = booted_target(ScriptedShell(console), target=_Target(), cpu_scope="vcpus",
                               cpu_channels={"board": CpuChannel("board", "10.0.2.15", board_port),
                                             "vcpus": CpuChannel("vcpus", "10.0.2.15", vcpus)})
        ctx = BenchContext(booted, SimpleNamespace(address="10.0.2.15"))
        proc, echo_port = host_responder(tmp_path)
        try:
            params = SweepParams.of({"loads": [1], "packet_size": 200, "samples": 200, "warmup": 0.2,
                                     "cooldown": 0.2, "cpu_target": False})
            source = loadgen.generator(loadgen.HOST, None)
            found = _point(ctx, params, 1.0, source, source.prepare(), "127.0.0.1", echo_port, None, None)
        finally:
            proc.kill()
            proc.wait()
    finally:
        os.kill(pid, signal.SIGTERM)
    cpu = {m.params["cores"]: m for m in found if m.metric == "cpu_utilisation"}
    assert set(cpu) == {"board", "vcpus"}
    for m in cpu.values():
        assert 0.0 <= m.value <= 100.0 and m.params["cpu"] == "proc-stat"
    assert any(m.metric == "rtt_median" for m in found)


def test_the_guests_cpu_server_is_forwarded_and_no_benchmark_may_take_a_channels_port():
    from farm.boot.flow import FlowSetup
    from farm.errors import JobError
    from farm.guest.flow import GuestFlow, guest_flow
    from farm.guest.spec import GuestSpec

    _, forwards = GuestFlow(GuestSpec(), ports=(7, 1236))._network(None)
    assert forwards == {7: 7, 1236: 1236, 1239: 1239}  # identity: the host's 1239 is the guest's
    assert BOARD_CPU_PORT not in forwards  # the host's own CPU server listens there
    with pytest.raises(JobError, match="port 1238, which a guest setup's CPU channel takes"):
        guest_flow(GuestSpec(), FlowSetup(ports=(7, 1238)))


def test_run_json_says_what_a_channel_reads():
    assert CpuChannel("board", "10.0.2.15", 1238).to_json() == {
        "scope": "board", "address": "10.0.2.15", "port": 1238, "reads": "grep ^cpu /proc/stat",
        "server": "busybox nc -ll -p 1238 -e busybox grep ^cpu /proc/stat"}


def test_settling_reads_the_vcpus_on_the_shell_and_the_board_through_its_channel():
    from farm.boot.target import Responder

    reads = []

    def shell(command):
        reads.append("shell")
        return ["cpu  10 0 0 10", "cpu0 10 0 0 10", "--", "cpu  20 0 0 10", "cpu0 20 0 0 10"]

    def channel(reach):
        reads.append("board")
        return {"cpu": cpustat.CpuTimes(len(reads), 0, 0, 100)}

    guest = booted_target(ScriptedShell(shell), cpu_scope="vcpus", cpu_channels={"board": channel})
    windows = BenchContext(guest, None).cpu_windows()
    assert list(windows) == ["vcpus", "board"]
    windows["vcpus"](0.01)
    windows["board"](0.01)
    assert reads == ["shell", "board", "board"]  # one builtin window on the shell, two channel reads
    polling = attrs.evolve(guest, responder=Responder("dpdk", (0,)))
    assert list(BenchContext(polling, None).cpu_windows()) == ["vcpus"]  # its vCPU thread polls on the board
