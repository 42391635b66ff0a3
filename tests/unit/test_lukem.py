"""The cpu_target_lukem CPU target: its replies read (farm.measure.lukem), the controller's side of
ipbench's protocol (farm.bench.ipbench_target) against farm_lukem built here and against stand-ins of
the two other targets the lab has (ipbench's own on Linux, the seL4/sDDF benchmark component), and
farm_lukem against a load of known duty cycle on one core of this machine."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from farm.bench import lukem as lukem_bench
from farm.bench.ipbench_target import TargetSession, cpu_target
from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError, lukem

SRC = Path(__file__).resolve().parents[2] / "images" / "src"


# --- what comes back ---------------------------------------------------------------------------


def test_status_lines():
    assert lukem.parse_status("200 OK (Ready to go)\n") == lukem.Status(200, "OK", "Ready to go")
    assert lukem.parse_status("100 IPBENCH V1.0") == lukem.Status(100, "IPBENCH V1.0")
    assert lukem.parse_status("220 VALID DATA (Data to follow; counter=tsc hz=5)").message == \
        "Data to follow; counter=tsc hz=5"
    with pytest.raises(ParseError, match="not an ipbench status line: 'Content-length: 5'"):
        lukem.parse_status("Content-length: 5")


def test_the_three_forms_of_the_data():
    ipbench_linux = lukem.parse_data(b"12.3\n")  # cpu_target_lukem_marshall: "%.1f\n"
    assert (ipbench_linux.utilisation, ipbench_linux.idle, ipbench_linux.total) == (12.3, None, None)
    sddf = lukem.parse_data(b",750,1000\0", "Data to follow")  # utilization_socket.c: ",idle,total" and a NUL
    assert (sddf.utilisation, sddf.idle, sddf.total, sddf.hz) == (25.0, 750, 1000, None)
    farm = lukem.parse_data(b"25.0,750,1000\n", "Data to follow; counter=cntvct_el0 hz=62500000 threshold=300 cpu=-1")
    assert (farm.utilisation, farm.counter, farm.hz, farm.threshold) == (25.0, "cntvct_el0", 62_500_000, 300)
    by = {m.metric: m for m in farm.measurements("sweep", {"requested": 10})}
    assert {(k, m.unit, m.value) for k, m in by.items()} == {
        ("cpu_utilisation", "percent", 25.0), ("idle_cycles", "ticks", 750), ("total_cycles", "ticks", 1000),
        ("counter_frequency", "Hz", 62_500_000)}


@pytest.mark.parametrize("data, message", [
    (b"", "expected PERCENT, ,IDLE,TOTAL or PERCENT,IDLE,TOTAL"),
    (b"abc\n", "'abc'"),
    (b",10,5", "expected 0 <= idle <= total"),
    (b"140.0\n", "140.0 is not a percentage"),
    (b"50.0,100,1000\n", "50.0 % but the counts give 90.000 %"),
])
def test_data_it_cannot_read(data, message):
    with pytest.raises(ParseError, match=re.escape(message)):
        lukem.parse_data(data)


def test_start_command():
    assert lukem_bench.start_command().endswith("farm_lukem -d -p 1236")
    assert lukem_bench.start_command(1300, threshold=500).endswith("farm_lukem -d -p 1300 -t 500")
    with pytest.raises(JobError, match="CPU target port 0"):
        lukem_bench.start_command(0)


# --- the protocol against real and stand-in targets ------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("lukem")
    built = {}
    for name, libs in (("farm_lukem", ["-pthread"]), ("farm_duty", [])):
        built[name] = out / name
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(built[name]), str(SRC / f"{name}.c"),
                        *libs], check=True)
    return built


@pytest.fixture
def target(programs):
    def start(*args: str) -> int:
        port = _free_port()
        proc = subprocess.Popen([str(programs["farm_lukem"]), "-p", str(port), *args], stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout.readline().startswith(f"farm_lukem: port {port} pid")
        return port
    started: list[subprocess.Popen] = []
    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def _talk(port: int, *lines: str) -> list[str]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        f = s.makefile("rwb")
        replies = [f.readline().decode()]
        for line in lines:
            f.write(line.encode() + b"\n")
            f.flush()
            replies.append(f.readline().decode())
        return replies


def test_farm_lukem_speaks_ipbenchs_protocol(target):
    port = target()
    assert _talk(port, "HELP")[1] == "\n"  # the help text, then 200
    assert _talk(port, "HELLO", "LOAD latency") == [
        "100 IPBENCH V1.0\n", "200 OK (Ready to go)\n",
        "451 LOCAL PROCESSING ERROR (no test latency here: farm_lukem serves cpu_target_lukem)\n"]
    assert _talk(port, "START", "HELLO", "STOP") == [
        "100 IPBENCH V1.0\n", "500 SYNTAX ERROR\n", "200 OK (Ready to go)\n", "500 SYNTAX ERROR\n"]
    assert _talk(port, "HELLO", "QUIT")[2] == "222 CLOSING CONTROL CONNECTION (Come back soon!)\n"
    # one measurement: setup to stop, the counter's ticks, its frequency
    began = time.monotonic()
    with cpu_target("127.0.0.1", port) as session:
        time.sleep(0.3)
    w = session.window
    seconds = time.monotonic() - began
    assert w is not None and w.counter in ("tsc", "cntvct_el0") and w.threshold == 300
    assert 0 <= w.idle <= w.total and w.utilisation == pytest.approx(100 * (1 - w.idle / w.total))
    # ticks from SETUP to STOP at the counter's rate; from the spinner's first read, and the spinner is
    # SCHED_IDLE: on a loaded machine (this suite's background kernel builds) it may run late
    assert 0 < w.total / w.hz < seconds + 0.1
    # and again on the same daemon: one connection after the other
    with cpu_target("127.0.0.1", port, args="cpus=1,warmup=10") as again:
        pass
    assert again.window.total < w.total


def _stand_in(script: list[tuple[str | None, bytes]]) -> tuple[int, threading.Thread, list[str]]:
    """A target of ours that greets, then for each (expected command, reply) reads a line and sends the reply."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    heard: list[str] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as f:
            conn.sendall(b"100 IPBENCH V1.0\n")
            for expected, reply in script:
                heard.append(f.readline().decode().rstrip("\n"))
                if reply:
                    conn.sendall(reply)
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server.getsockname()[1], thread, heard


_SETUP = [("HELLO", b"200 OK (Ready to go)\n"), ("LOAD cpu_target_lukem", b"200 OK\n"),
          ('SETUP args::""', b"200 OK\n"), ("START", b"")]


def test_the_sddf_benchmark_components_reply():
    # utilization_socket.c: "220 VALID DATA (Data to follow)\nContent-length: N\n,IDLE,TOTAL" and a NUL, then it closes
    data = b",3000,4000\0"
    port, thread, heard = _stand_in(_SETUP + [("STOP", b"220 VALID DATA (Data to follow)\nContent-length: "
                                                        + str(len(data)).encode() + b"\n" + data)])
    with cpu_target("127.0.0.1", port) as session:
        pass
    thread.join(5)
    assert heard == ["HELLO", "LOAD cpu_target_lukem", 'SETUP args::""', "START", "STOP"]
    assert (session.window.utilisation, session.window.idle, session.window.total) == (25.0, 3000, 4000)


def test_ipbenchs_own_linux_target_reply():
    port, thread, _ = _stand_in(_SETUP + [("STOP", b"220 VALID DATA (Data to follow)\nContent-length: 5\n12.3\n")])
    with cpu_target("127.0.0.1", port) as session:
        pass
    thread.join(5)
    assert (session.window.utilisation, session.window.idle) == (12.3, None)


def test_failures_name_the_target_and_the_step():
    port = _free_port()
    with pytest.raises(BenchmarkError, match=rf"127.0.0.1:{port}: connect: .*is the CPU target running"):
        TargetSession("127.0.0.1", port).connect()
    port, thread, _ = _stand_in([("HELLO", b"200 OK (Ready to go)\n"),
                                 ("LOAD cpu_target_lukem", b"451 LOCAL PROCESSING ERROR (no plugin)\n")])
    with pytest.raises(BenchmarkError, match=rf"127.0.0.1:{port}: LOAD: 451 LOCAL PROCESSING ERROR \(no plugin\)"):
        with cpu_target("127.0.0.1", port):
            pass
    port, thread, _ = _stand_in(_SETUP + [("STOP", b"221 INVALID DATA (Data to follow)\n")])
    with pytest.raises(BenchmarkError, match="STOP: the target says its data is invalid"):
        with cpu_target("127.0.0.1", port):
            pass


def test_an_error_inside_the_block_aborts_the_measurement():
    port, thread, heard = _stand_in(_SETUP + [("ABORT", b"")])
    with pytest.raises(RuntimeError, match="the load failed"):
        with cpu_target("127.0.0.1", port):
            raise RuntimeError("the load failed")
    thread.join(5)
    assert heard[-1] == "ABORT"


# --- against a load of known duty cycle --------------------------------------------------------


def test_against_a_known_duty_cycle_on_one_core(programs, target):
    """farm_duty spins a known share of every 10 ms on one core, farm_lukem's thread is pinned there
    too. This machine is shared: other work on that core is busy time as well, so lukem may read more
    than the duty, never (beyond its lowest-priority thread's sliver) less. The twin's test
    (tests/boot/test_cpu_target.py) gives the error on a target."""
    core = str(min(1, (os.cpu_count() or 1) - 1))
    port = target("-c", core)
    for duty in (0.25, 0.75):
        load = subprocess.Popen([str(programs["farm_duty"]), "-u", str(duty), "-s", "2", "-c", core],
                                stdout=subprocess.PIPE, text=True)
        assert load.stdout.readline() == "farm_duty: running\n"
        with cpu_target("127.0.0.1", port) as session:
            time.sleep(1.2)
        out, _ = load.communicate(timeout=30)
        achieved = float(re.search(r"achieved=([0-9.]+)", out)[1])
        cpu = session.window.utilisation
        print(f"duty {duty}: spun {achieved:.3f} of the time, lukem {cpu:.1f} %")
        assert achieved > 0.05
        assert 100 * achieved - 3 <= cpu <= 100
