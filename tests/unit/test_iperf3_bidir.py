"""iperf3 --bidir, both directions, from real iperf3 3.12 output (tests/data/iperf3-bidir-*)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import ParseError
from farm.measure import iperf3

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = DATA.parents[1]


def _by(ms):
    return {(m.params.get("bidir"), m.metric): m for m in ms}


@pytest.mark.parametrize("name", ["iperf3-bidir-udp.json", "iperf3-bidir-udp.txt"])
def test_udp_bidir_both_directions(name):
    text = (DATA / name).read_text()
    ms = _by(iperf3.parse_json(text) if name.endswith(".json") else iperf3.parse_text(text))
    for direction in ("client-to-server", "server-to-client"):
        assert ms[(direction, "sent_throughput")].value == pytest.approx(200e6, rel=0.01)
        assert ms[(direction, "received_throughput")].value == pytest.approx(200e6, rel=0.01)
        assert ms[(direction, "loss")].value == 0 and ms[(direction, "loss")].params["protocol"] == "udp"
        assert (direction, "jitter") in ms
    assert {d for d, _ in ms} == {"client-to-server", "server-to-client"}


def test_udp_bidir_json_reads_the_reverse_sections():
    ms = _by(iperf3.parse_json((DATA / "iperf3-bidir-udp.json").read_text()))
    assert ms[("server-to-client", "sent_throughput")].value == 199918543.4619029  # sum_sent_bidir_reverse
    assert ms[("client-to-server", "sent_throughput")].value == 199912655.71213225  # sum_sent
    assert ("client-to-server", "host_cpu") in ms and ("server-to-client", "host_cpu") not in ms


def test_tcp_bidir_text_and_json():
    text = _by(iperf3.parse_text((DATA / "iperf3-bidir-tcp.txt").read_text()))
    assert text[("client-to-server", "sent_throughput")].value == 13.9e9
    assert text[("server-to-client", "received_throughput")].value == 12.6e9
    assert text[("server-to-client", "retransmits")].value == 1
    js = _by(iperf3.parse_json((DATA / "iperf3-bidir-tcp.json").read_text()))
    assert js[("server-to-client", "sent_throughput")].value == 12665543536.165947
    assert js[("client-to-server", "retransmits")].value == 2


def test_parallel_bidir_text_uses_the_sums():
    ms = _by(iperf3.parse_text((DATA / "iperf3-bidir-udp-parallel.txt").read_text()))
    assert ms[("client-to-server", "received_throughput")].value == 188e6
    assert ms[("server-to-client", "received_throughput")].value == 189e6
    assert ms[("server-to-client", "loss")].value == pytest.approx(100 * 918 / 16974)


def test_bidir_text_missing_a_direction_line_names_it():
    text = (DATA / "iperf3-bidir-udp.txt").read_text()
    cut = "\n".join(l for l in text.splitlines() if not ("[  7][RX-C]" in l and l.rstrip().endswith("receiver")))
    with pytest.raises(ParseError, match="no receiver summary line for server-to-client"):
        iperf3.parse_text(cut)


def test_farm_import_iperf3_bidir_text(tmp_path):
    out = tmp_path / "imp"
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "import", "iperf3", str(DATA / "iperf3-bidir-udp.txt"),
                           "--setup", "lab", "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rows = (out / "results.csv").read_text()
    assert "bidir=client-to-server" in rows and "bidir=server-to-client" in rows
