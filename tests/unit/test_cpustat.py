"""farm.measure.cpustat against two real /proc/stat snapshots of this host (tests/data/proc-stat-*)."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import ParseError
from farm.measure.cpustat import CpuTimes, cycles_utilisation, parse_proc_stat, utilisation

DATA = Path(__file__).resolve().parent.parent / "data"


def snapshot(name: str) -> CpuTimes:
    return parse_proc_stat((DATA / f"proc-stat-{name}.txt").read_text())


def test_parses_the_aggregate_line_and_counts_cores():
    before = snapshot("before")
    assert before == CpuTimes(user=26502, nice=0, system=20320, idle=141927, iowait=828, irq=0,
                              softirq=323, steal=28, guest=0, guest_nice=0, cpus=2)
    assert before.idle_all == 141927 + 828
    assert before.total == 26502 + 20320 + 141927 + 828 + 323 + 28


def test_utilisation_of_the_captured_second():
    # deltas: user 20, system 105, idle 67, iowait 1, steal 1 -> total 194, idle+iowait 68
    value = utilisation(snapshot("before"), snapshot("after"))
    assert value == pytest.approx(100 * (1 - 68 / 194))
    assert round(value, 3) == 64.948


def test_guest_time_is_not_counted_twice():
    # a VM host: guest ticks are already inside user (and guest_nice inside nice)
    before = parse_proc_stat("cpu  100 10 50 800 0 0 0 0 0 0\n")
    after = parse_proc_stat("cpu  200 20 50 900 0 0 0 0 80 10\n")
    assert after.total - before.total == 210
    assert utilisation(before, after) == pytest.approx(100 * (1 - 100 / 210))


def test_iowait_counts_as_idle_and_steal_as_busy():
    before = parse_proc_stat("cpu 0 0 0 0 0 0 0 0\n")
    after = parse_proc_stat("cpu 10 0 0 60 20 0 0 10\n")
    assert utilisation(before, after) == pytest.approx(20.0)  # (10 user + 10 steal) of 100


def test_iowait_may_decrease_as_long_as_idle_plus_iowait_does_not():
    # proc(5): iowait "may decrease in certain conditions"; time moved back to idle is fine
    before = parse_proc_stat("cpu 10 0 10 100 30\n")
    after = parse_proc_stat("cpu 20 0 20 140 10\n")
    assert utilisation(before, after) == pytest.approx(100 * (1 - 20 / 40))


def test_old_kernels_with_four_fields():
    times = parse_proc_stat("cpu 1 2 3 4\ncpu0 1 2 3 4\n")
    assert times == CpuTimes(1, 2, 3, 4, cpus=1)


def test_bad_field_names_line_and_field():
    text = (DATA / "proc-stat-before.txt").read_text().replace("cpu  26502 0 20320", "cpu  26502 0 x20320")
    with pytest.raises(ParseError, match=r"/proc/stat line 1: system is 'x20320'"):
        parse_proc_stat(text)


def test_too_few_or_too_many_numbers():
    with pytest.raises(ParseError, match=r"line 2: 'cpu' line has 3 numbers, expected 4 to 10"):
        parse_proc_stat("intr 0\ncpu 1 2 3\n")
    with pytest.raises(ParseError, match=r"line 1: 'cpu' line has 11 numbers"):
        parse_proc_stat("cpu 1 2 3 4 5 6 7 8 9 10 11\n")


def test_no_cpu_line_shows_what_was_there():
    with pytest.raises(ParseError, match=r"no aggregate 'cpu' line; line 1 is \"cat: can't open"):
        parse_proc_stat("cat: can't open '/proc/stat': No such file or directory\n")
    with pytest.raises(ParseError, match=r"empty text"):
        parse_proc_stat("")


def test_two_snapshots_pasted_together():
    text = (DATA / "proc-stat-before.txt").read_text() + (DATA / "proc-stat-after.txt").read_text()
    with pytest.raises(ParseError, match=r"line 11: a second aggregate 'cpu' line"):
        parse_proc_stat(text)


def test_no_time_elapsed_or_counters_backwards():
    before = snapshot("before")
    with pytest.raises(ParseError, match="no CPU time elapsed"):
        utilisation(before, before)
    with pytest.raises(ParseError, match=r"user went backwards \(26522 -> 26502\).*reboot"):
        utilisation(snapshot("after"), before)


def test_cycles_utilisation_is_ipbench_formula():
    assert cycles_utilisation(750, 1000) == pytest.approx(25.0)
    with pytest.raises(ValueError):
        cycles_utilisation(10, 0)
    with pytest.raises(ValueError):
        cycles_utilisation(11, 10)
