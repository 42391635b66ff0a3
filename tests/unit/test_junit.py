"""farm.results.junit: the file always parses, whatever the board printed."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from farm.results.junit import Case, write_junit, xml_safe

# ANSI reset, NUL, an undecodable byte, CDATA end, CR LF, a C1 control, a lone surrogate,
# a noncharacter, and an emoji that must survive untouched
NASTY = (b"\x00\x1b[0m\xff]]>\r\nnext\x85line".decode("utf-8", errors="surrogateescape")
         + "\x0b\ud800\ufffe\U0001F600")


def write_and_parse(tmp_path, cases) -> ET.Element:
    path = tmp_path / "junit.xml"
    write_junit(path, "bench" + NASTY, cases)
    return ET.parse(path).getroot()


def test_nasty_output_still_parses_and_counts(tmp_path):
    root = write_and_parse(tmp_path, [
        Case("iperf3 tcp", "qemu.network", 10.5, "failure", message="below gate" + NASTY, output=NASTY),
        Case("boot", "qemu.boot", 3.0, "error", message="serial timeout", output=NASTY),
        Case("openssl", "qemu.crypto", 6.0, "pass", output=NASTY),
        Case("iperf3 udp", "qemu.network", 0.0, "skipped", message="no server"),
    ])
    (suite,) = root.findall("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == \
        ("4", "1", "1", "1")
    assert suite.get("name").startswith("bench\\x00\\x1b[0m")
    failure = suite.find("testcase[@name='iperf3 tcp']/failure")
    expected = "\\x00\\x1b[0m\\xff]]>\nnext\\x85line\\x0b\\ud800\\ufffe\U0001F600"
    assert failure.text == expected
    assert failure.get("message") == "below gate" + expected
    assert suite.find("testcase[@name='boot']/error").get("message") == "serial timeout"
    assert suite.find("testcase[@name='openssl']/system-out").text == expected
    assert suite.find("testcase[@name='iperf3 udp']/skipped").get("message") == "no server"
    assert suite.find("testcase[@name='iperf3 tcp']").get("classname") == "qemu.network"
    assert float(suite.find("testcase[@name='iperf3 tcp']").get("time")) == 10.5


def test_file_has_no_raw_control_bytes(tmp_path):
    write_and_parse(tmp_path, [Case("x", "y", 1.0, "failure", message=NASTY, output=NASTY)])
    data = (tmp_path / "junit.xml").read_bytes()
    data.decode("utf-8")  # strict: no surrogates made it out
    assert not any(b < 0x20 and b not in (0x09, 0x0A) for b in data)


def test_empty_message_still_fails(tmp_path):
    # junit_xml drops a failure with neither message nor output; the case must not turn green
    root = write_and_parse(tmp_path, [Case("a", "c", 1.0, "failure"), Case("b", "c", 1.0, "error")])
    suite = root.find("testsuite")
    assert (suite.get("failures"), suite.get("errors")) == ("1", "1")
    assert suite.find("testcase[@name='a']/failure").get("message") == "failure"


def test_newline_in_message_is_kept(tmp_path):
    root = write_and_parse(tmp_path, [Case("a", "c", 1.0, "failure", message="one\ntwo")])
    assert root.find("testsuite/testcase/failure").get("message") == "one\ntwo"


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError):
        Case("a", "c", 1.0, "broken")


@pytest.mark.parametrize(("text", "safe"), [
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    (b"\xfe\xff".decode("utf-8", "surrogateescape"), "\\xfe\\xff"),
    ("a\r\nb\rc\n", "a\nb\nc\n"),
    ("tab\tok", "tab\tok"),
    ("\x7f\x85\x9f", "\\x7f\\x85\\x9f"),
    ("\ud83d", "\\ud83d"),
    ("\U0010ffff", "\\U0010ffff"),
    ("]]> é 😀", "]]> é 😀"),
])
def test_xml_safe(text, safe):
    assert xml_safe(text) == safe
