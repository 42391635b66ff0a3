"""The ipbench-echo sweep on the MaaXBoard twin with the load sent by a "remote" load generator: a
LoadGenerator of the env file reached over SSH (a real sshd on 127.0.0.1; farm builds farm_load there
and drives it as it would a lab machine)."""

from __future__ import annotations

import pytest

from farm.bench import echo, loadgen
from farm.bench.context import BenchContext
from farm.bench.network import SweepParams, run_echo_sweep
from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.session import EnvFile, boot_target
from tests.loadgen_ssh import local_sshd

pytestmark = pytest.mark.boot


def test_a_sweep_through_a_load_generator_over_ssh(project_root, maaxboard_image, tftp_root, tmp_path):
    with local_sshd(tmp_path / "ssh") as login:
        text = (project_root / "env" / "qemu-maaxboard.yaml").read_text()
        text = text.replace("../images/", f"{project_root}/images/")
        text = text.replace("    resources:\n", f"""    resources:
      LoadGenerator:
        name: loadgen-lg1
        address: {login.address}
        port: {login.port}
        username: {login.username}
        keyfile: {login.keyfile}
        known_hosts: {login.known_hosts}
""", 1)
        text = text.replace("imports:\n", "imports:\n  - farm.bench.loadgen_resource\n", 1)
        path = tmp_path / "qemu-maaxboard-loadgen.yaml"
        path.write_text(text)
        env = EnvFile.load(path)
        seen: dict[float, tuple[echo.LoadResult, list]] = {}

        def observe(load, result, samples_text, cpu_window):
            seen[load] = (result, echo.parse_samples(samples_text))

        params = {"method": "ipbench-echo", "loads": [1, 1000], "duration": 2, "warmup": 1, "cooldown": 1,
                  "generator": "lg1"}
        with ConsoleLog(tmp_path / "console") as console:
            with boot_target(env, maaxboard_image, "t-echo-ssh", console) as booted:
                ctx = BenchContext(booted, read_facts(booted.shell))
                assert isinstance(loadgen.generator("lg1", booted.target), loadgen.RemoteGenerator)
                measurements = run_echo_sweep(ctx, SweepParams.of(params), observe=observe)
    assert set(seen) == {1.0, 1000.0}
    for load, (result, samples) in seen.items():
        assert len(samples) == result.samples > 0  # the samples came back over ssh
        for _client, _seq, tx, rx in samples:
            assert result.window_start <= tx < result.window_end, (load, tx)
            assert tx < rx <= result.load_end, (load, rx)
    idle, loaded = seen[1.0][0], seen[1000.0][0]
    assert idle.receive > 0.5 * idle.send  # (most of 1 Mb/s comes back; this machine may be busy)
    assert loaded.receive < 0.9 * loaded.requested  # past saturation on the twin
    # (how much RTT grows under load is test_echo_sweep.py's: here the path of the load is the point)
    assert {m.params["method"] for m in measurements} == {"ipbench-echo"}
    assert any(m.metric == "cpu_utilisation" for m in measurements)
