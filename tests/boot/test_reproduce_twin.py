"""On the twin: farm run pipelines/smoke.yaml archives what it booted; farm reproduce RUN, with an empty
farm cache of its own (FARM_CACHE), boots those very sha256s and says per figure whether it reproduced;
a tampered archive file is refused before anything boots. One boot of its own: the reproduction (the
smoke run is the session's, tests/boot/conftest.py, archived in the session's archive)."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm.archive.directory import DirArchive

from ..conftest import run_farm

pytestmark = pytest.mark.boot


def shas(info: dict) -> dict[str, dict[str, str]]:
    return {name: {a: m["sha256"] for a, m in image["artifacts"].items()} for name, image in info["images"].items()}


def test_a_smoke_run_is_archived_and_reproduced_from_an_empty_cache(smoke_run, tftp_root, tmp_path):
    archive = DirArchive(Path(os.environ["FARM_ARCHIVE"]))  # the session's (tests/conftest.py results_store)
    env = {"FARM_ARCHIVE": str(archive.root)}
    proc, out = smoke_run
    assert proc.returncode == 0, proc.stderr
    info = json.loads((out / "run.json").read_text())
    run_id = info["run_id"]
    assert f"archived run {run_id} in {archive.root}" in proc.stderr
    record = archive.record(run_id)
    assert not record.missing and record.pipeline.path == "pipelines/smoke.yaml"
    assert {r.path for r in record.recipes} == {"images/maaxboard-bench.yaml", "images/x86-bench.yaml"}
    assert {n: {a: e.sha256 for a, e in i.artifacts.items()} for n, i in record.images.items()} == shas(info)

    cache = tmp_path / "empty-cache"  # farm's cache setting: never the shared ~/.cache/farm
    again = tmp_path / "again"
    # --min-boots 1: one boot, as the original (by default a 1-boot original is reproduced with 5 boots and
    # judged by their prediction interval: tests/unit/test_archive.py, on a fake flow; here the bytes matter)
    proc = run_farm("reproduce", run_id, "--out", str(again), "--min-boots", "1",
                    env={**env, "FARM_CACHE": str(cache)}, timeout=900)
    assert proc.returncode in (0, 1, 4), proc.stderr  # 1: a figure did not reproduce; 4: inconclusive (one boot)
    reproduced = json.loads((again / "run.json").read_text())
    assert shas(reproduced) == shas(info)  # the same bytes booted, fetched into the empty cache
    assert all(str(cache) in image["dir"] for image in reproduced["images"].values())
    assert not (cache / "images").exists(), "nothing was built"
    boots = reproduced["targets"]["maaxboard-twin"]["boots"]
    assert [b["image_key"] for b in boots] == [b["image_key"] for b in info["targets"]["maaxboard-twin"]["boots"]]
    assert "FARM-READY" in (again / "console" / "maaxboard-twin.log").read_text(errors="replace")

    verdict = json.loads((again / "reproduction.json").read_text())
    lines = proc.stdout.splitlines()
    assert lines[-1] == str(again) and verdict["original_run_id"] == run_id
    figures = lines[:-1]
    assert len(figures) == len(verdict["figures"]) >= 5  # iperf3's and openssl's figures, each judged
    for line, figure in zip(figures, verdict["figures"]):
        word = figure["verdict"] if figure["verdict"] == "reproduced" else figure["verdict"].upper()
        assert line.startswith(f"{word}: "), line
        assert figure["new_n"] >= 1, line  # measured again, whatever the verdict
    assert proc.returncode == {"reproduced": 0, "inconclusive": 4}.get(verdict["verdict"], 1)
    suite = ET.parse(again / "reproduction.xml").getroot()
    assert int(suite.get("tests")) == len(verdict["figures"]) + 1 and suite.get("errors") == "0"

    # a tampered archive file (its size unchanged): refused, naming it, before anything boots (in a copy of
    # the session's archive: other tests read it)
    copy = DirArchive(tmp_path / "archive")  # hard links, but for the file tampered with
    shutil.copytree(archive.root, copy.root, symlinks=True, copy_function=os.link)
    env = {"FARM_ARCHIVE": str(copy.root)}
    kernel = record.images["maaxboard-bench"].artifacts["Image"]
    path = copy.object_path(kernel.sha256)
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)
    with open(path, "r+b") as f:
        f.seek(4096)
        byte = f.read(1)
        f.seek(4096)
        f.write(bytes([byte[0] ^ 0xFF]))
    proc = run_farm("reproduce", run_id, "--out", str(tmp_path / "refused"),
                    env={**env, "FARM_CACHE": str(tmp_path / "another-cache")})
    assert proc.returncode == 3
    assert f"run {run_id}: image maaxboard-bench: Image: corrupt in the archive" in proc.stderr
    assert not (tmp_path / "refused").exists()
