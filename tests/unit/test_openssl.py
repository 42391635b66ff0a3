"""farm.measure.openssl against real OpenSSL 3.0 ``speed -mr`` output (tests/data/openssl-*)."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError
from farm.measure.openssl import parse_speed_mr, speed_command

DATA = Path(__file__).resolve().parent.parent / "data"
AES = (DATA / "openssl-aes-128-gcm-mr.txt").read_text()
SHA = (DATA / "openssl-sha256-mr.txt").read_text()
# What OpenSSL 3.0 printed here for `openssl speed -mr -seconds 1 rsa2048` and `... ecdsap256`
RSA_LINE = "+F2:2:2048:3832.323232:60279.000000"
ECDSA_LINE = "+F4:3:256:49331.313131:16860.000000"


def test_aes_single_block():
    (m,) = parse_speed_mr(AES, params={"target": "rpi4"})
    assert m.benchmark == "openssl-speed"
    assert (m.metric, m.unit) == ("throughput", "bytes/s")
    assert m.value == 4480221184.0
    assert m.params == {"target": "rpi4", "algorithm": "aes-128-gcm", "block": 16384}


def test_mr_values_are_bytes_per_second():
    # +R:<count>:<alg>:<seconds> in the same capture: count * block / seconds is the +F value
    r_line = next(line for line in AES.splitlines() if line.startswith("+R:"))
    _, count, _, seconds = r_line.split(":")
    (m,) = parse_speed_mr(AES)
    assert m.value == pytest.approx(int(count) * 16384 / float(seconds), rel=1e-9)


def test_sha256_all_block_sizes():
    ms = parse_speed_mr(SHA)
    assert [(m.params["algorithm"], m.params["block"], m.value) for m in ms] == [
        ("sha256", 16, 125717168.0),
        ("sha256", 64, 420475008.0),
        ("sha256", 256, 992139776.0),
        ("sha256", 1024, 1496141824.0),
        ("sha256", 8192, 1771388928.0),
        ("sha256", 16384, 1795522560.0),
    ]


def test_concatenated_outputs_follow_each_header():
    ms = parse_speed_mr(AES + SHA)
    assert len(ms) == 7
    assert (ms[0].params["block"], ms[1].params["block"]) == (16384, 16)


def test_public_key_lines_are_skipped():
    assert len(parse_speed_mr(f"{SHA}\n{RSA_LINE}\n{ECDSA_LINE}")) == 6
    assert parse_speed_mr(RSA_LINE) == []


def test_bad_value_names_the_line():
    bad = SHA.replace(":992139776.00:", ":99213x9776.00:")
    number = next(i for i, line in enumerate(bad.splitlines(), 1) if line.startswith("+F:"))
    expected = rf"^openssl output line {number}: cannot parse '\+F:6:sha256:.*99213x9776"
    with pytest.raises(ParseError, match=expected):
        parse_speed_mr(bad)


def test_value_count_must_match_header():
    bad = SHA.replace(":1795522560.00", "")
    with pytest.raises(ParseError, match=r"^openssl output line 2: .*5 values for 6 block sizes"):
        parse_speed_mr(bad)


def test_truncated_result_line():
    with pytest.raises(ParseError, match=r"^openssl output line 2: cannot parse '\+F:6'"):
        parse_speed_mr("+H:16\n+F:6\n")


def test_result_before_header():
    with pytest.raises(ParseError, match=r"^openssl output line 1: .*before any \+H"):
        parse_speed_mr(SHA.splitlines()[1])


def test_bad_header_names_the_line():
    with pytest.raises(ParseError, match=r"^openssl output line 1: cannot parse '\+H:16:sixty-four'"):
        parse_speed_mr("+H:16:sixty-four\n")


def test_duplicate_result_is_refused():
    with pytest.raises(ParseError, match=r"line 4: sha256 block 16 already measured on line 2"):
        parse_speed_mr(SHA + SHA)


def test_unknown_plus_lines_are_ignored():
    assert len(parse_speed_mr("+DT:sha256:1:16\n+R:7857323:sha256:1.000000\n+X:what\n" + SHA)) == 6


def test_openssl_error_is_a_benchmark_failure():
    # stderr of `openssl speed -mr -elapsed -seconds 1 -evp nonexist-alg` (exit status 1)
    out = ("speed: nonexist-alg is an unknown cipher or digest\n"
           "40E78D0C847F0000:error:0308010C:digital envelope routines:inner_evp_generic_fetch:"
           "unsupported:../crypto/evp/evp_fetch.c:386:Global default library context\n")
    with pytest.raises(BenchmarkError, match="^openssl: nonexist-alg is an unknown cipher or digest$"):
        parse_speed_mr(out)


def test_output_without_results():
    with pytest.raises(ParseError, match="no \\+F result line"):
        parse_speed_mr("Doing sha256 for 1s on 16 size blocks: 7857323 sha256's in 1.00s\n")


def test_speed_command_one_per_algorithm():
    assert speed_command(["aes-128-gcm", "chacha20-poly1305"], seconds=3, block=16384) == [
        "openssl speed -mr -elapsed -seconds 3 -bytes 16384 -evp aes-128-gcm",
        "openssl speed -mr -elapsed -seconds 3 -bytes 16384 -evp chacha20-poly1305",
    ]


def test_speed_command_default_blocks():
    assert speed_command(["sha256"], seconds=1, block=None) == [
        "openssl speed -mr -elapsed -seconds 1 -evp sha256"]


@pytest.mark.parametrize(("algorithms", "seconds", "block"), [
    (["AES-128-GCM"], 1, None),
    (["aes-128-gcm; reboot"], 1, None),
    (["$(reboot)"], 1, None),
    ([""], 1, None),
    ([], 1, None),
    ("sha256", 1, None),  # a string is a sequence of one-letter names
    (["sha256", "sha256"], 1, None),
    (["sha256"], 0, None),
    (["sha256"], 1.5, None),
    (["sha256"], 1, -16),
])
def test_speed_command_rejects_bad_input(algorithms, seconds, block):
    with pytest.raises(JobError):
        speed_command(algorithms, seconds=seconds, block=block)


def test_multi_output_measures_the_parents_sum_of_the_children():
    """``-multi 2``: children report "Got: +F:... from N", the parent prints their sum (real output)."""
    text = (DATA / "openssl-multi2-aes-128-gcm-mr.txt").read_text()
    [m] = parse_speed_mr(text)
    assert m.value == 8443854848.0
    assert m.params == {"algorithm": "aes-128-gcm", "block": 16384, "multi": 2}  # 2 children: per process /2
    children = [float(line.split(":")[4].split()[0]) for line in text.splitlines() if line.startswith("Got: +F:")]
    assert len(children) == 2 and m.value == pytest.approx(sum(children), rel=1e-6)


def test_speed_command_multi():
    [command] = speed_command(["sha256"], seconds=2, block=None, multi=4)
    assert command == "openssl speed -mr -elapsed -seconds 2 -multi 4 -evp sha256"
