"""Writers never follow a symlink they did not create: the atomic writer's temporary file is made
exclusively (a random name, O_EXCL), appends refuse a symlinked results.csv."""

from __future__ import annotations

import os
import stat

import pytest

from farm.errors import JobError
from farm.measure import Measurement
from farm.results.csvout import append_records, read_records
from farm.results.record import RunContext, write_text_atomic

CTX = RunContext(run_id="r1", target="t", arch="arm64", setup="s", image="i", suite="network", repeat=0)


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_text("precious\n")
    return path


@pytest.mark.parametrize("name", ["run.json", "junit.xml", "results.csv", "summary.md"])
def test_a_planted_symlink_at_the_old_temporary_name_is_not_followed(tmp_path, victim, name):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    planted = run_dir / f".{name}.tmp"  # the name the writer used to open with O_TRUNC, following links
    planted.symlink_to(victim)
    write_text_atomic(run_dir / name, "new\n")
    assert victim.read_text() == "precious\n"
    assert (run_dir / name).read_text() == "new\n" and not (run_dir / name).is_symlink()
    assert planted.is_symlink()  # left alone: not ours
    assert sorted(p.name for p in run_dir.iterdir()) == sorted([name, planted.name])  # no temporary left


def test_a_symlink_at_the_path_itself_is_replaced_not_written_through(tmp_path, victim):
    link = tmp_path / "run.json"
    link.symlink_to(victim)
    write_text_atomic(link, "{}\n")
    assert victim.read_text() == "precious\n"
    assert not link.is_symlink() and link.read_text() == "{}\n"


def test_the_file_gets_the_mode_open_would_give_it(tmp_path):
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.txt", "x")
        os.umask(0o077)
        write_text_atomic(tmp_path / "b.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o644  # mkstemp alone gives 0o600
    assert stat.S_IMODE((tmp_path / "b.txt").stat().st_mode) == 0o600


def test_a_writer_that_fails_replaces_nothing_and_leaves_no_temporary(tmp_path):
    from farm.results.record import open_atomic

    path = tmp_path / "plot.png"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with open_atomic(path, "wb") as f:
            f.write(b"half")
            raise RuntimeError("the plot failed")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]


def test_compare_png_does_not_follow_a_planted_temporary(tmp_path, victim):
    from farm.results.compare import compare
    from farm.results.compare_outputs import write_compare
    from farm.results.csvout import write_records

    dirs = []
    for name, value in (("a", 100.0), ("b", 90.0)):
        d = tmp_path / name
        d.mkdir()
        write_records(d / "results.csv", [CTX.record(Measurement("iperf3", "throughput", value, "bit/s"))])
        dirs.append(d)
    from farm.results.compare import load_result_dir

    out = tmp_path / "out"
    out.mkdir()
    (out / ".compare.png.tmp").symlink_to(victim)
    write_compare(compare([load_result_dir(d) for d in dirs]), out)
    assert victim.read_text() == "precious\n"
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_append_refuses_a_symlinked_results_csv(tmp_path, victim):
    link = tmp_path / "results.csv"
    link.symlink_to(victim)
    with pytest.raises(JobError, match="results.csv: is a symbolic link"):
        append_records(link, [CTX.record(Measurement("iperf3", "throughput", 1.0, "bit/s"))])
    assert victim.read_text() == "precious\n"
    plain = tmp_path / "plain.csv"
    append_records(plain, [CTX.record(Measurement("iperf3", "throughput", 1.0, "bit/s"))])
    assert len(read_records(plain)) == 1
