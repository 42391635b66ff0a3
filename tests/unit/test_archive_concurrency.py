"""The archive against real processes: two runs archiving the same image at once, and a writer killed
(SIGKILL) half way through an object. Nothing partial is ever visible under an object's name."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from farm.archive import ArchiveError
from farm.archive.archiving import archive_run
from farm.archive.directory import DirArchive
from farm.archive.record import Entry
from farm.run import run_pipeline

from .archive_helpers import ROOT, fake_image, pipeline_tree, use_image, values
from ..fakes import FakeFlow

#: a child that archives one run directory; its copy is slowed (SLOW) or killed half way (KILL)
CHILD = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    import farm.archive.directory as directory
    from farm.archive.archiving import archive_run

    run_dir, root, mode, log = sys.argv[1:5]
    real = directory.copy_hashing

    def copy(src, dst):
        data = src.read()
        if mode == "KILL" and len(data) > 100_000:
            dst.write(data[:len(data) // 2])
            dst.flush()
            os.fsync(dst.fileno())
            os.kill(os.getpid(), signal.SIGKILL)
        if len(data) > 100_000:
            with open(log, "a") as f:
                f.write(f"start {os.getpid()} {time.monotonic()}\\n")
        import hashlib
        for i in range(0, len(data), 65536):  # slowly, so that two writers overlap
            dst.write(data[i:i + 65536])
            if len(data) > 100_000:
                time.sleep(0.01)
        if len(data) > 100_000:
            with open(log, "a") as f:
                f.write(f"end {os.getpid()} {time.monotonic()}\\n")
        return hashlib.sha256(data).hexdigest(), len(data)

    directory._copy = copy
    Path(log + f".ready-{os.getpid()}").touch()
    while not Path(log + ".go").exists():
        time.sleep(0.005)
    done = archive_run(Path(run_dir), directory.DirArchive(Path(root)))
    print(len(done.record.images), done.new_objects)
""")


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """Two run directories that booted one image (a 2 MB kernel), not archived yet."""
    monkeypatch.setenv("FARM_ARCHIVE", "none")
    monkeypatch.setenv("FARM_DB", "none")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    image = fake_image(tmp_path / "img", size=2_000_000)
    use_image(monkeypatch, image)
    pipeline = pipeline_tree(tmp_path / "repo")
    return image, [run_pipeline(pipeline, out=tmp_path / f"run{i}", flow_for=lambda s: FakeFlow(),
                                registry=values(1.0)) for i in range(2)]


def child(run_dir: Path, root: Path, mode: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(run_dir), str(root), mode, str(log)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_ready(log: Path, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(list(log.parent.glob(log.name + ".ready-*"))) < n:
        assert time.monotonic() < deadline, "the children did not start"
        time.sleep(0.01)
    (log.parent / (log.name + ".go")).touch()


def test_two_runs_archiving_the_same_image_at_once_both_succeed_and_one_copy_stays(runs, tmp_path):
    image, (a, b) = runs
    root, log = tmp_path / "archive", tmp_path / "log"
    procs = [child(r.path, root, "SLOW", log) for r in (a, b)]
    wait_ready(log, 2)
    kernel = hashlib.sha256((image / "Image").read_bytes()).hexdigest()
    seen = DirArchive(root).object_path(kernel)
    while any(p.poll() is None for p in procs):  # a reader meanwhile: the object is whole, or not there
        try:
            data = seen.read_bytes()
        except FileNotFoundError:
            continue
        assert hashlib.sha256(data).hexdigest() == kernel, "a partial object under its name"
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    # they really overlapped: both started the kernel's copy before either ended it
    events = [line.split() for line in log.read_text().splitlines()]
    starts = [float(t) for kind, _, t in events if kind == "start"]
    ends = [float(t) for kind, _, t in events if kind == "end"]
    assert len(starts) == 2 and max(starts) < min(ends), events
    archive = DirArchive(root)
    for run in (a, b):
        record = archive.record(run.run_id)
        assert record.images["fake"].artifacts["Image"].sha256 == kernel and not record.missing
    assert archive.object_path(kernel).read_bytes() == (image / "Image").read_bytes()
    assert len([s for s in archive.object_shas() if s == kernel]) == 1
    assert not list((root / "tmp").iterdir())  # no write left behind, no lock file


def test_a_writer_killed_half_way_leaves_no_partial_object_and_the_next_one_cleans_up(runs, tmp_path):
    image, (a, _) = runs
    root, log = tmp_path / "archive", tmp_path / "log"
    proc = child(a.path, root, "KILL", log)
    wait_ready(log, 1)
    proc.communicate(timeout=120)
    assert proc.returncode == -9
    archive = DirArchive(root)
    meta = json.loads((image / "manifest.json").read_text())["artifacts"]["Image"]
    entry = Entry(meta["sha256"], meta["size"])
    assert not archive.object_path(entry.sha256).exists() and not archive.has(entry)
    assert archive.record(a.run_id) is None  # no record names what is not there
    [left] = [p for p in (root / "tmp").iterdir() if p.is_dir()]  # the dead writer's half object
    assert (left / "object").stat().st_size == meta["size"] // 2
    (tmp_path / "out").mkdir()
    with pytest.raises(ArchiveError, match="missing from the archive"):
        archive.fetch(entry, tmp_path / "out" / "Image", "Image")
    assert not (tmp_path / "out" / "Image").exists()
    done = archive_run(a.path, archive)  # the next writer: removes the dead one's, writes it whole
    assert not left.exists() and not list((root / "tmp").iterdir())
    assert done.record.images["fake"].artifacts["Image"] == entry
    archive.fetch(entry, tmp_path / "out" / "Image", "Image")
    assert (tmp_path / "out" / "Image").read_bytes() == (image / "Image").read_bytes()
