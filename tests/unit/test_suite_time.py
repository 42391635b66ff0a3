"""benchmarks/suite_time.py's sums by test group (on a JUnit XML report as pytest writes it), and the suite's
own ordering: the tests that boot a lean kernel last, after its background build (tests/prebuild.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ..conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

from suite_time import by_group, by_lane, cpu_line, cpu_work, file_of, group_of, read_junit, render  # noqa: E402


def test_group_of_a_testcase():
    assert group_of("tests.boot.test_twin_boot") == "tests/boot"
    assert group_of("tests.test_cli") == "tests/*"
    assert group_of("tests.unit.test_x.TestClass") == "tests/unit"
    assert group_of("x", "tests/store/test_pages.py") == "tests/store"


def test_sums_by_group_from_pytests_junit_report(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "tests").mkdir()
    for group in ("slow", "fast"):
        (tmp_path / "t" / "tests" / group).mkdir()
        (tmp_path / "t" / "tests" / group / "__init__.py").write_text("")
    (tmp_path / "t" / "tests" / "__init__.py").write_text("")
    (tmp_path / "t" / "tests" / "slow" / "test_a.py").write_text(textwrap.dedent("""
        import time
        def test_sleeps():
            time.sleep(0.3)
        def test_fails():
            assert False
    """))
    (tmp_path / "t" / "tests" / "fast" / "test_b.py").write_text("def test_quick():\n    pass\n")
    (tmp_path / "t" / "tests" / "test_top.py").write_text("import pytest\n@pytest.mark.skip\ndef test_skipped():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:labgrid",
                           f"--junitxml={tmp_path / 'junit.xml'}", "tests"], cwd=tmp_path / "t", capture_output=True, text=True)
    assert done.returncode == 1, done.stdout
    cases = read_junit(tmp_path / "junit.xml")
    groups = {g["group"]: g for g in by_group(cases)}
    assert set(groups) == {"tests/slow", "tests/fast", "tests/*"}
    assert groups["tests/slow"]["tests"] == 2 and groups["tests/slow"]["seconds"] >= 0.3
    assert groups["tests/slow"]["outcomes"] == {"passed": 1, "failure": 1}
    assert groups["tests/*"]["outcomes"] == {"skipped": 1}
    assert by_group(cases)[0]["group"] == "tests/slow"  # slowest first
    text = render({"mode": "warm", "started": "now", "command": ["pytest"], "env_note": "", "wall_seconds": 61.0,
                   "exit": 1, "commit": "abc", "cases": cases, "load": {"min": 1.0, "median": 1.5, "max": 2.0,
                                                                        "other_qemus_max": 0, "other_qemus_median": 0}})
    assert "wall time **1:01**" in text and "| tests/slow | 2 |" in text
    assert "By lane (tests/lanes.py; the longest is the critical path): rest 0:00" in text  # rounded down from 0.3 s


#: the `cpu` line of /proc/stat on a 2-core machine at the start and 27 s after the end of a cold `.ci/run`
#: (docs/speed.md round 10: 88.5 core-minutes of work in 51 minutes), as a sampler recorded them; the cpu0
#: lines and the intr line are made up, to show that only the all-CPU line is read
PROC_STAT_BEFORE = """cpu  1194608 165030 251856 10054913 7986 0 4126 1406 0 0
cpu0 597304 82515 125928 5027456 3993 0 2063 703 0 0
intr 1234 0 0
"""
PROC_STAT_AFTER = """cpu  1546178 267490 326932 10137145 9465 0 5237 1969 0 0
cpu0 773089 133745 163466 5068572 4732 0 2618 984 0 0
"""


def test_the_machines_work_from_proc_stat():
    before, after = cpu_line(PROC_STAT_BEFORE), cpu_line(PROC_STAT_AFTER)
    assert before["user"] == 1194608 and before["steal"] == 1406  # the all-cpu line, not cpu0's
    work = cpu_work(before, after, hz=100, cores=2)
    assert round(work["seconds"]["nice"] / 60, 1) == 17.1 and round(work["seconds"]["idle"] / 60, 1) == 13.7
    # busy: user + nice + system + irq + softirq + steal (idle and iowait are not work)
    assert round(work["busy_seconds"] / 60, 1) == 88.5
    assert work["floor_seconds"] == work["busy_seconds"] / 2
    text = render({"mode": "fresh", "started": "now", "command": ["pytest"], "env_note": "", "wall_seconds": 3067.0,
                   "exit": 0, "commit": "abc", "cases": [], "cpu_work": work,
                   "load": {"min": 1.0, "median": 1.5, "max": 2.0, "other_qemus_max": 0, "other_qemus_median": 0}})
    assert "**88.5 core-minutes of work** (user 58.6, nice 17.1, system 12.5; idle 13.7)" in text
    assert "no order of the same work ends under 44:13" in text
    with pytest.raises(ValueError, match="no 'cpu' line"):
        cpu_line("intr 1 2 3\n")


def test_sums_by_lane_from_the_testcases_files():
    assert file_of("tests.boot.test_twin_boot::test_x") == "tests/boot/test_twin_boot.py"
    assert file_of("tests.unit.test_lukem.TestWindows::test_y[a.b]") == "tests/unit/test_lukem.py"
    assert file_of("tests.test_cli::test_z") == "tests/test_cli.py"
    cases = [{"name": "tests.boot.test_twin_boot::a", "seconds": 100.0},
             {"name": "tests.boot.test_dpdk_guest::b", "seconds": 30.0},   # a boot test in the rest lane
             {"name": "tests.unit.test_lukem.TestW::c", "seconds": 5.0},   # a unit test in the twins lane
             {"name": "tests.farm.test_lab::d", "seconds": 50.0},
             {"name": "tests.test_cli::e", "seconds": 1.0}]
    assert by_lane(cases) == {"twins": 105.0, "farm": 50.0, "rest": 31.0}  # the longest first
    assert list(by_lane(cases[2:])) == ["farm", "twins", "rest"]


def test_the_lean_tests_run_last():
    """Collection only (which starts no build: nothing would wait for it): the order pytest would run."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/boot/test_lean_images.py",
                           "tests/unit/test_facts.py"], cwd=ROOT, capture_output=True, text=True)
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    lean = [i for i in ids if "test_lean_images" in i]
    assert lean and ids[-len(lean):] == lean and "test_facts" in ids[0], ids


def test_the_background_build_is_niced_until_a_test_waits_for_it(tmp_path):
    import os

    from tests.prebuild import Prebuild, _group_pids, _live

    def nice_of(pid: int) -> int:
        stat = open(f"/proc/{pid}/stat").read()
        return int(stat[stat.rindex(")") + 2:].split()[16])

    build = Prebuild(tmp_path / "log", script="sleep 30 & wait")
    try:
        deadline = 50
        while len(_group_pids(build.proc.pid)) < 2 and deadline:  # sh and its sleep
            deadline -= 1
            __import__("time").sleep(0.1)
        pids = _group_pids(build.proc.pid)
        assert len(pids) == 2 and all(nice_of(p) == 19 for p in pids)
        build.raise_priority()
        if os.geteuid() == 0:  # lowering a nice value needs the privilege
            assert all(nice_of(p) == 0 for p in pids)
    finally:
        build.stop()
    assert build.proc.poll() is not None and _live(_group_pids(build.proc.pid)) == []


def test_it_runs_the_suite_as_make_test_does():
    from suite_time import MAKE_TEST

    recipe = (ROOT / "Makefile").read_text().split("\ntest: setup\n", 1)[1].splitlines()[0]
    assert recipe.split() == [".venv/bin/pytest", *MAKE_TEST]


def test_the_lanes_and_their_order():
    from pathlib import Path

    from tests.lanes import FARM, REST, TWINS, lane, rank

    t = Path("/src/farm/tests")
    assert [lane(t / p) for p in ("boot/test_a.py", "guest/test_b.py", "images/test_c.py")] == [TWINS] * 3
    assert [lane(t / p) for p in ("unit/test_a.py", "test_cli.py", "store/test_d.py", "faults/test_e.py")] == [REST] * 4
    assert lane(t / "farm/test_b.py") == FARM
    assert lane(t / "boot/test_dpdk_guest.py") == REST and lane(t / "unit/test_lukem.py") == TWINS
    order = [("images/test_build.py", False), ("guest/test_g.py", False), ("boot/test_twin_boot.py", False),
             ("boot/test_cpu_target.py", False), ("boot/test_dpdk_guest.py", False),
             ("farm/test_lab.py", False), ("boot/test_lean_images.py", True)]
    assert sorted(order, key=lambda o: rank(t / o[0], o[1])) == order
    assert sorted(reversed(order), key=lambda o: rank(t / o[0], o[1])) == order


def test_make_test_ends_with_the_suites_weight_and_junit_carries_each_tests_cpu(tmp_path):
    """tests/weight.py through tests/conftest.py's hooks, in a real pytest run of the suite's own conftest:
    a test that burns CPU in a child the worker reaps is charged with it, and the last lines say so."""
    burner = tmp_path / "test_weight_probe.py"  # outside tests/: the suite's conftest is loaded as a plugin
    burner.write_text("import subprocess, sys\n\n"
                      "def test_burns_a_second_in_a_child():\n"
                      "    subprocess.run([sys.executable, '-c', 'import time\\nt=time.process_time()\\n"
                      "while time.process_time() - t < 1.0: pass'], check=True)\n\n"
                      "def test_idle():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-p",
                           "tests.conftest", "-q", f"--junitxml={tmp_path / 'j.xml'}", str(burner)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    tail = done.stdout.splitlines()
    weight = next(i for i, line in enumerate(tail) if line.startswith("suite weight: wall "))
    assert "core-minutes" in tail[weight] and "(2 tests)" in tail[weight]
    assert tail[weight + 2].split()[1].endswith("::test_burns_a_second_in_a_child")  # the heaviest first
    assert "passed" in tail[-1]  # pytest's own closing line stays last
    cpu = {c["name"].split("::")[-1]: c["cpu_seconds"] for c in read_junit(tmp_path / "j.xml")}
    assert cpu["test_burns_a_second_in_a_child"] >= 0.9 and cpu["test_idle"] < 0.5, cpu


def test_the_weight_summary_lines():
    from tests.weight import busy_seconds, summary

    work = busy_seconds(cpu_line(PROC_STAT_BEFORE), cpu_line(PROC_STAT_AFTER), hz=100)
    lines = summary(3067.0, work, 2, [("a", 30.0), ("b", 600.0), ("c", 90.0)], heaviest=2)
    assert lines[0] == ("suite weight: wall 51:07, the machine's work 88.5 core-minutes (/proc/stat; on 2 cores no "
                        "order of it ends under 44:13), the tests' own CPU 12.0 core-minutes (3 tests)")
    assert lines[1:] == ["the 2 heaviest by CPU (core-seconds, with the children they reaped):",
                         "    600.0  b", "     90.0  c"]
    assert summary(1.0, None, 2, [])[0] == "suite weight: wall 0:01, the tests' own CPU 0.0 core-minutes (0 tests)"
