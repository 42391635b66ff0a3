"""farm.measure.iperf3 against real iperf3 3.12 output captured on 127.0.0.1 (tests/data/iperf3-*)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.errors import EXIT_TEST_FAILURE, JobError, ParseError, TestFailure
from farm.measure import BenchmarkError, Measurement
from farm.measure.iperf3 import client_command, parse_json, parse_output, parse_text, rate_to_bits_per_second

DATA = Path(__file__).resolve().parent.parent / "data"


def read(name: str) -> str:
    return (DATA / name).read_text()


def by_metric(measurements: list[Measurement]) -> dict[str, Measurement]:
    table = {m.metric: m for m in measurements}
    assert len(table) == len(measurements), "one measurement per metric"
    return table


def by_run(measurements: list[Measurement]) -> dict[int, dict[str, float]]:
    runs: dict[int, dict[str, float]] = {}
    for m in measurements:
        runs.setdefault(m.params["run"], {})[m.metric] = m.value
    return runs


# --- JSON ------------------------------------------------------------------------------------


def test_json_tcp_reads_sum_sent_sum_received_and_cpu():
    ms = by_metric(parse_json(read("iperf3-tcp.json"), params={"setup": "qemu"}))
    assert set(ms) == {"sent_throughput", "received_throughput", "retransmits", "host_cpu", "remote_cpu"}
    assert ms["sent_throughput"].value == 22636016881.957283
    assert ms["received_throughput"].value == 22588046184.79517
    assert ms["retransmits"].value == 3
    assert ms["host_cpu"].value == 18.9134077266216
    assert ms["remote_cpu"].value == 77.6020404592433
    assert ms["sent_throughput"].unit == "bit/s"
    assert ms["retransmits"].unit == "count"
    assert ms["host_cpu"].unit == "percent"
    for m in ms.values():
        assert m.benchmark == "iperf3"
        assert m.params == {"setup": "qemu", "protocol": "tcp"}


def test_json_udp_reads_loss_and_jitter_from_sum_received():
    ms = by_metric(parse_json(read("iperf3-udp.json")))
    assert set(ms) == {"sent_throughput", "received_throughput", "loss", "jitter", "host_cpu", "remote_cpu"}
    assert ms["sent_throughput"].value == 49960072.39203687
    assert ms["received_throughput"].value == 49956176.2388671
    assert ms["loss"].value == 0.0 and ms["loss"].unit == "percent"
    assert ms["jitter"].value == 0.054160329072104732 and ms["jitter"].unit == "ms"
    assert ms["remote_cpu"].value == 1.9120195081178843
    assert ms["jitter"].params == {"protocol": "udp"}


def test_json_udp_prefers_sum_received_over_sum():
    doc = json.loads(read("iperf3-udp.json"))
    doc["end"]["sum_received"].update(lost_percent=1.25, jitter_ms=0.5)
    ms = by_metric(parse_json(json.dumps(doc)))
    assert (ms["loss"].value, ms["jitter"].value) == (1.25, 0.5)


def test_json_udp_falls_back_to_sum_for_old_iperf3():
    doc = json.loads(read("iperf3-udp.json"))
    del doc["end"]["sum_received"]["lost_percent"], doc["end"]["sum_received"]["jitter_ms"]
    doc["end"]["sum"].update(lost_percent=2.0, jitter_ms=0.25)
    ms = by_metric(parse_json(json.dumps(doc)))
    assert (ms["loss"].value, ms["jitter"].value) == (2.0, 0.25)


def test_json_protocol_comes_from_the_output_not_the_caller():
    ms = parse_json(read("iperf3-tcp.json"), params={"protocol": "udp", "board": "rpi4"})
    assert {m.params["protocol"] for m in ms} == {"tcp"}
    assert {m.params["board"] for m in ms} == {"rpi4"}


def test_json_error_key_is_a_benchmark_failure_with_iperf3_message():
    with pytest.raises(BenchmarkError) as info:
        parse_json(read("iperf3-refused.json"))
    err = info.value
    assert err.message == "unable to connect to server: Connection refused"
    assert err.tool == "iperf3"
    assert str(err) == "iperf3: unable to connect to server: Connection refused"
    assert isinstance(err, TestFailure)
    assert (err.exit_code, err.kind) == (EXIT_TEST_FAILURE, "test")


def test_json_truncated_names_the_line():
    text = read("iperf3-tcp.json")[:500]
    last_line = text.count("\n") + 1
    with pytest.raises(ParseError, match=rf"^iperf3 JSON line {last_line}: "):
        parse_json(text)


def test_json_not_json_at_all_names_line_one():
    with pytest.raises(ParseError, match=r"^iperf3 JSON line 1: Expecting value .*'iperf3: error"):
        parse_json("iperf3: error - unable to connect to server: Connection refused\n")


def test_json_empty_output():
    with pytest.raises(ParseError, match="line 1"):
        parse_json("")


def test_json_missing_key_names_its_path():
    doc = json.loads(read("iperf3-tcp.json"))
    del doc["end"]["sum_sent"]
    with pytest.raises(ParseError, match=r"missing end\.sum_sent$"):
        parse_json(json.dumps(doc))


def test_json_non_number_names_its_path():
    doc = json.loads(read("iperf3-tcp.json"))
    doc["end"]["sum_received"]["bits_per_second"] = "fast"
    with pytest.raises(ParseError, match=r"end\.sum_received\.bits_per_second is 'fast'"):
        parse_json(json.dumps(doc))


# --- text ------------------------------------------------------------------------------------


def test_text_two_runs_tcp_then_udp():
    ms = parse_text(read("iperf3-two-runs.txt"), params={"target": "qemu"})
    runs = by_run(ms)
    assert runs == {
        0: {"sent_throughput": 25.6e9, "received_throughput": 25.6e9, "retransmits": 2},
        1: {"sent_throughput": 50.0e6, "received_throughput": 50.0e6, "loss": 0.0, "jitter": 0.006},
    }
    assert {m.params["protocol"] for m in ms if m.params["run"] == 0} == {"tcp"}
    assert {m.params["protocol"] for m in ms if m.params["run"] == 1} == {"udp"}
    assert {m.params["target"] for m in ms} == {"qemu"}


def test_text_parallel_prefers_sum_lines_and_reads_cpu():
    runs = by_run(parse_text(read("iperf3-parallel.txt")))
    # per-stream lines say 11.2 Gbits/sec with 2 and 1 retransmits; [SUM] says 22.5 and 3
    assert runs[0] == {"sent_throughput": 22.5e9, "received_throughput": 22.5e9, "retransmits": 3,
                       "host_cpu": 98.4, "remote_cpu": 47.5}
    # UDP -P 2 -R: the receiver [SUM] line has the jitter, the sender one says 0.000 ms
    assert runs[1] == {"sent_throughput": 40.0e6, "received_throughput": 40.0e6, "loss": 0.0,
                       "jitter": 0.009}


def test_text_udp_loss_is_computed_from_lost_and_total():
    text = read("iperf3-two-runs.txt").replace("0.006 ms  0/4243 (0%)", "0.006 ms  43/4243 (1%)")
    assert by_run(parse_text(text))[1]["loss"] == 100 * 43 / 4243


def test_text_tool_error_is_a_benchmark_failure():
    # what iperf3 3.12 prints without -J when no server listens
    with pytest.raises(BenchmarkError, match="^iperf3: unable to connect to server: Connection refused$"):
        parse_text("iperf3: error - unable to connect to server: Connection refused\n")


def test_text_bad_summary_line_names_it():
    text = read("iperf3-two-runs.txt")
    bad = "[  5]   0.00-1.00   sec  2.99 GBytes  25.6 Gbits/sec    2             sender"
    number = text.splitlines().index(bad) + 1
    text = text.replace(bad, bad.replace("Gbits/sec", "Gbots/sec"))
    with pytest.raises(ParseError, match=rf"^iperf3 output line {number}: cannot parse summary line"):
        parse_text(text)


def test_text_run_without_receiver_line_names_its_separator():
    lines = read("iperf3-two-runs.txt").splitlines()
    receiver = next(i for i, line in enumerate(lines) if line.endswith("receiver"))
    separator = max(i for i, line in enumerate(lines[:receiver]) if line.startswith("- - -")) + 1
    del lines[receiver]
    with pytest.raises(ParseError, match=rf"^iperf3 output line {separator}: run 0 has no receiver"):
        parse_text("\n".join(lines))


def test_text_without_any_summary():
    with pytest.raises(ParseError, match="no run summary found"):
        parse_text(read("iperf3-two-runs.txt").split("- - -")[0])


@pytest.mark.parametrize(("text", "bps"), [
    ("938 Mbits/sec", 938e6),
    ("1.05 Mbits/sec", 1.05e6),
    ("25.6 Gbits/sec", 25.6e9),
    ("2 Kbits/sec", 2000.0),
    ("0.00 bits/sec", 0.0),
    ("1 MBytes/sec", 1024 * 1024 * 8.0),  # -f M: Bytes are 1024-based
    ("2 KBytes/sec", 2048 * 8.0),
])
def test_rate_units(text, bps):
    assert rate_to_bits_per_second(text) == pytest.approx(bps, rel=1e-12)


def test_rate_rejects_garbage():
    with pytest.raises(ValueError):
        rate_to_bits_per_second("25.6 Gbots/sec")


# --- command ---------------------------------------------------------------------------------


def test_client_command_tcp_defaults():
    assert client_command("192.168.7.2", 5201, duration=10) == [
        "iperf3", "-c", "192.168.7.2", "-p", "5201", "-J", "-t", "10"]


def test_client_command_udp_all_options():
    argv = client_command("board.lab", 5202, duration=30.0, protocol="udp", bitrate="50M",
                          length=1472, reverse=True, omit=2)
    assert argv == ["iperf3", "-c", "board.lab", "-p", "5202", "-J", "-t", "30", "-O", "2", "-u",
                    "-b", "50M", "-l", "1472", "-R"]


@pytest.mark.parametrize("kwargs", [
    {"protocol": "sctp"},
    {"duration": 1.5},  # iperf3 would silently run 1 s
    {"duration": 0},
    {"omit": 0.5},
    {"bitrate": "fast"},
    {"bitrate": "50M; reboot"},
    {"length": 0},
    {"host": "-R"},
    {"host": ""},
    {"port": 0},
    {"port": 70000},
])
def test_client_command_rejects_bad_input(kwargs):
    args = {"host": "10.0.0.2", "port": 5201, "duration": 10, **kwargs}
    with pytest.raises(JobError):
        client_command(args.pop("host"), args.pop("port"), **args)


def test_an_imported_capture_joins_a_live_runs_identity():
    """issue #45: an import carried protocol=tcp, a live run direction=host-to-target;protocol=tcp, and farm
    compare listed every row as missing. The import says the direction as a live run does."""
    from farm.measure.params import format_params
    from farm.results.identity import identity_params
    from farm.results.importers import import_file

    live = parse_json((DATA / "iperf3-tcp.json").read_text(),
                      params={"protocol": "tcp", "duration": 3, "direction": "host-to-target"})  # run_iperf3's
    imported = import_file("iperf3", DATA / "iperf3-tcp.json", setup="default")
    live_keys = {(m.metric, identity_params("iperf3", format_params(m.params))) for m in live}
    assert {(r.metric, identity_params("iperf3", r.params)) for r in imported} == live_keys
    assert len(live_keys) == len(live) and all("direction=host-to-target" in p for _, p in live_keys)
    # text of two runs, the second with -R ("Reverse mode ..."): each run says its own direction
    runs = parse_output((DATA / "iperf3-parallel.txt").read_text(), direction=True)
    assert {m.params["direction"] for m in runs if m.params["run"] == 0} == {"host-to-target"}
    assert {m.params["direction"] for m in runs if m.params["run"] == 1} == {"target-to-host"}
    # a --bidir capture says its directions with bidir=, as a live --bidir run does: no direction= added
    both = parse_output((DATA / "iperf3-bidir-tcp.json").read_text(), direction=True)
    assert all("direction" not in m.params and m.params["bidir"] for m in both)
