"""The console as the dashboard shows it (farm.dashboard.console), on a console log recorded from the
MaaXBoard twin's smoke run: farm's typing checks folded away, typed commands shown as typed, the
board's output kept, every line under its number in the log file."""

from __future__ import annotations

from farm.dashboard.console import CHECK, OUTPUT, TYPED, fold, marked, physical_lines
from tests.conftest import ROOT

LOG = (ROOT / "tests" / "data" / "console-smoke-maaxboard-twin.log").read_bytes().decode("utf-8", "replace")


def _by_number():
    return {ln.number: ln for ln in fold(LOG)}


def test_no_marker_is_shown_and_no_board_output_is_hidden():
    lines = fold(LOG)
    shown = "\n".join(ln.text for ln in lines if ln.kind != CHECK)
    assert "''" not in shown and "MARKER=" not in shown and "run() {" not in shown and "\x1b" not in shown
    hidden = [ln.text for ln in lines if ln.kind == CHECK]
    assert all(t.strip() for t in hidden)
    for board_line in ("DHCP client bound to address 10.0.2.15 (2 ms)", "Bytes transferred = 32956352 (1f6dfc0 hex)",
                       "FARM-READY kernel=6.1.0-57-arm64 cpus=4 uptime=3.56s", "+F:25:sha256:94633984.00", "cpus=4"):
        assert board_line in shown


def test_typed_commands_read_as_typed_with_their_exit_status():
    lines = _by_number()
    assert lines[21].kind == TYPED and lines[21].text == "=> dhcp" and lines[21].status == 0
    assert lines[22].kind == CHECK and lines[25].kind == CHECK and lines[26].kind == CHECK  # marker, $?, marker
    assert lines[23].kind == OUTPUT and lines[23].text == "BOOTP broadcast 1"
    # the shell's: wrapped at 80 columns by the terminal, one line again, unquoted, under its first number
    assert lines[168].kind == TYPED
    assert lines[168].text == "root@farm-target:~# openssl speed -mr -elapsed -seconds 1 -bytes 16384 -evp sha256"
    assert lines[170].text == "+DT:sha256:1:16384"  # the marker glued to the first output line is taken off
    assert lines[174].kind == CHECK and lines[174].raw.startswith("UFXKFATSAA 0")
    # the prompt check and labgrid's helper
    assert lines[15].kind == CHECK and lines[123].kind == CHECK and lines[124].kind == CHECK


def test_line_numbers_are_the_log_files():
    physical = LOG.split("\n")
    for ln in fold(LOG):
        assert physical[ln.number - 1].rstrip("\r").startswith(ln.raw[:10].rstrip()) or ln.kind == TYPED
    assert len(physical_lines("a\r\r\nb\nc\n")) == 2  # a wrapped line and one more


def test_fatal_lines_and_quoted_lines_are_marked():
    text = "U-Boot 2023.01\r\nmounting root\r\n[    3.2] Kernel panic - not syncing: VFS: Unable to mount root fs\r\nend\r\n"
    lines = fold(text)
    assert marked(lines, []) == ({3}, set())
    # a failure's console excerpt: its last line is where farm stopped, the others led to it
    excerpt = "booting Linux: kernel panic: Kernel panic - not syncing: VFS\n--- console ---\nU-Boot 2023.01\n" \
              "mounting root\n[    3.2] Kernel panic - not syncing: VFS: Unable to mount root fs"
    assert marked(lines, [excerpt]) == ({3}, {1, 2})
    assert marked(lines, ["mount failed: mounting root"]) == ({3}, set())  # not a line of its own
    assert marked(lines, ["mounting root"]) == ({2, 3}, set())
