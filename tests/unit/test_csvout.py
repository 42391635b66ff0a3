"""farm.results.csvout: results.csv round trips, crash-safe appends, errors that name the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import ParseError
from farm.measure import Measurement
from farm.measure.iperf3 import parse_json
from farm.measure.params import parse_params
from farm.results.csvout import append_records, read_records, write_records
from farm.results.record import RECORD_FIELDS, Record, RunContext

DATA = Path(__file__).resolve().parent.parent / "data"
CTX = RunContext(run_id="r1", target="qemu-arm64", arch="arm64", setup="qemu", image="minimal",
                 suite="network", repeat=2)


def records() -> list[Record]:
    ms = parse_json((DATA / "iperf3-tcp.json").read_text(), params={"note": 'a,b;"c"'})
    return [CTX.record(m, timestamp="2026-11-29T22:41:30.000+00:00") for m in ms]


def test_write_then_read_round_trips_exactly(tmp_path):
    path = tmp_path / "results.csv"
    write_records(path, records())
    assert path.read_text().splitlines()[0] == ",".join(RECORD_FIELDS)
    back = read_records(path)
    assert back == records()
    assert back[0].value == 22636016881.957283  # float written with repr, read back bit for bit
    assert back[0].params == 'note=a,b%3B"c";protocol=tcp'  # the value's ';' escaped: one param, not two
    assert parse_params(back[0].params) == {"note": 'a,b;"c"', "protocol": "tcp"}
    assert back[0].repeat == 2
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]  # no temporary left


def test_write_replaces_existing_file(tmp_path):
    path = tmp_path / "results.csv"
    write_records(path, records())
    write_records(path, records()[:1])
    assert len(read_records(path)) == 1


def test_append_writes_header_once(tmp_path):
    path = tmp_path / "results.csv"
    append_records(path, records()[:2])
    append_records(path, records()[2:])
    lines = path.read_text().splitlines()
    assert lines.count(",".join(RECORD_FIELDS)) == 1
    assert len(lines) == 1 + len(records())
    assert read_records(path) == records()


def test_append_to_empty_file_writes_header(tmp_path):
    path = tmp_path / "results.csv"
    path.touch()
    append_records(path, records()[:1])
    assert read_records(path) == records()[:1]


def test_append_keeps_rows_written_before_a_crash(tmp_path):
    path = tmp_path / "results.csv"

    def measured_then_died():
        yield from records()[:2]
        raise RuntimeError("board hung")

    with pytest.raises(RuntimeError):
        append_records(path, measured_then_died())
    assert read_records(path) == records()[:2]


def test_append_refuses_a_file_with_another_header(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text("run_id,value\nr0,1.0\n")
    with pytest.raises(ParseError, match=rf"^{path} line 1: header 'run_id,value'"):
        append_records(path, records())
    assert path.read_text() == "run_id,value\nr0,1.0\n"


def test_read_bad_value_names_file_and_line(tmp_path):
    path = tmp_path / "results.csv"
    write_records(path, records())
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace(",22588046184.79517,", ",fast,")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=rf"^{path} line 3: could not convert string to float: 'fast'"):
        read_records(path)


def test_read_wrong_field_count_names_line(tmp_path):
    path = tmp_path / "results.csv"
    write_records(path, records())
    with path.open("a") as f:
        f.write("r1,2026-11-29T22:41:30Z,qemu\n")
    with pytest.raises(ParseError, match=rf"^{path} line {len(records()) + 2}: 3 fields, expected 13"):
        read_records(path)


def test_read_bad_repeat(tmp_path):
    path = tmp_path / "results.csv"
    write_records(path, [Record(**{**records()[0].as_row(), "repeat": "twice"})])
    with pytest.raises(ParseError, match=rf"^{path} line 2: invalid literal for int\(\)"):
        read_records(path)


def test_read_empty_and_wrong_header(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.touch()
    with pytest.raises(ParseError, match=rf"^{empty} line 1: empty file"):
        read_records(empty)
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ParseError, match=rf"^{other} line 1: header 'a,b' is not"):
        read_records(other)


def test_read_skips_blank_lines(tmp_path):
    path = tmp_path / "results.csv"
    write_records(path, records())
    with path.open("a") as f:
        f.write("\n")
    assert read_records(path) == records()


def test_measurement_values_survive_any_text(tmp_path):
    m = Measurement("x", "y", float("inf"), "ms", {"cmd": "a\nb,c"})
    path = tmp_path / "results.csv"
    write_records(path, [CTX.record(m, timestamp="t")])
    (back,) = read_records(path)
    assert back.value == float("inf") and back.params == "cmd=a%0Ab,c" and parse_params(back.params) == {"cmd": "a\nb,c"}


@pytest.mark.parametrize("value", ["0;1", "a=b", "two words", "größe ∞ 😀", "50%", "%3B", "x;y=z %41", "\t\r\n"])
def test_a_param_value_of_any_text_round_trips_through_results_csv(tmp_path, value):
    """A value with ';', '=', spaces, '%' or any Unicode is one param and comes back as it was (the pytest
    plugin's ``cpus="0;1"`` was written as two params and crashed farm report)."""
    m = Measurement("x", "y", 1.0, "us", {"cpus": value, "size": 64})
    path = tmp_path / "results.csv"
    write_records(path, [CTX.record(m, timestamp="t")])
    (back,) = read_records(path)
    assert parse_params(back.params) == {"cpus": value, "size": "64"}


def test_params_written_before_values_were_escaped_read_as_meant():
    assert parse_params("cpus=0;1;size=64") == {"cpus": "0;1", "size": "64"}
    assert parse_params("load=50%;x=a=b") == {"load": "50%", "x": "a=b"}
