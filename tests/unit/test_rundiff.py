"""farm.results.rundiff on recorded run.json files (tests/data): what differs between two runs' inputs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from farm.results.rundiff import Difference, diff_runs

DATA = Path(__file__).resolve().parent.parent / "data"


def _info(name: str) -> dict:
    return json.loads((DATA / name / "run.json").read_text(encoding="utf-8"))


def test_two_runs_of_the_same_inputs_differ_in_none():
    assert diff_runs(_info("qualify-twin/base"), _info("qualify-twin/same")) == []


def test_the_slow_run_differs_in_its_boot_argument_and_the_cores_it_saw():
    assert diff_runs(_info("qualify-twin/base"), _info("qualify-twin/slow")) == [
        Difference("target maaxboard-twin", "default: cpus", "4", "1"),
        Difference("target maaxboard-twin", "default: online", "0-3", "0"),
        Difference("setup default", "bootargs", "[]", '["maxcpus=1"]')]


def test_packages_kernel_programs_and_farm_the_image_first():
    a = _info("qualify-twin/base")
    b = copy.deepcopy(a)
    image = b["images"]["maaxboard-bench"]
    openssl = next(p for p in image["packages"] if p["name"] == "openssl")
    was = openssl["version"]
    openssl["version"] = "3.0.99-1"
    image["packages"] = [p for p in image["packages"] if p["name"] != "iperf3"]
    image["kernel_version"] = "6.1.0-99-arm64"
    image["recipe"]["programs"][1]["source_sha256"] = "f" * 64
    image["artifacts"]["Image"]["sha256"] = "e" * 64
    b["git_sha"] = "2" * 40
    found = diff_runs(a, b)
    part = "image maaxboard-bench"
    assert found[:2] == [Difference(part, "kernel_version", "6.1.0-57-arm64", "6.1.0-99-arm64"),
                         Difference(part, "package iperf3", "3.12-1+deb12u2", None)]
    assert Difference(part, "package openssl", was, "3.0.99-1") in found
    sha = a["images"]["maaxboard-bench"]["recipe"]["programs"][1]["source_sha256"]
    assert Difference(part, "program farm_echo source_sha256", sha, "f" * 64) in found
    assert found[-1] == Difference("farm", "git commit", a["git_sha"], "2" * 40)
    parts = [d.part for d in found]
    assert parts.index("farm") > max(i for i, p in enumerate(parts) if p == part)


def test_runs_of_other_pipelines_name_images_targets_and_setups_only_one_has():
    found = diff_runs(_info("qualify-twin/base"), _info("vm-vs-bare-5-boots"))
    whole = {(d.part, d.what): (d.a, d.b) for d in found}
    assert whole[("setup kvm-guest", "setup")] == (None, "run")
    assert ("pipeline", "pipeline_name") in whole and whole[("pipeline", "pipeline_name")][0] == "qualify"
    assert all(d.a != d.b for d in found)


def test_the_pipeline_files_unified_diff_comes_from_the_archive(tmp_path):
    from farm.archive.directory import DirArchive
    from farm.archive.record import RunRecord, TextFile
    from farm.archive.texts import pipeline_diff

    archive = DirArchive(tmp_path / "archive")
    runs = {}
    for run_id, text in (("20261201-010000-a", "name: smoke\nrepeats: 1\n"), ("20261201-020000-b", "name: smoke\nrepeats: 5\n")):
        entry, _ = archive.put_bytes(text.encode())
        archive.write_record(RunRecord(run_id, "now", "ci", "smoke", "passed", "then", {},
                                       pipeline=TextFile(entry.sha256, entry.size, path="pipelines/smoke.yaml"),
                                       recipes=(), images={}))
        runs[run_id] = {"pipeline": "pipelines/smoke.yaml", "pipeline_sha256": entry.sha256}
    (a, info_a), (b, info_b) = runs.items()
    lines, note = pipeline_diff(archive, (a, info_a), (b, info_b))
    assert note == "from the archive" and lines == [
        "--- 20261201-010000-a/pipelines/smoke.yaml", "+++ 20261201-020000-b/pipelines/smoke.yaml",
        "@@ -1,2 +1,2 @@", " name: smoke", "-repeats: 1", "+repeats: 5"]
    assert pipeline_diff(archive, (a, info_a), (a, info_a)) == ([], "the same pipeline file")
    assert pipeline_diff(archive, (a, info_a), ("20261201-030000-c", {"pipeline_sha256": "0" * 64})) == (
        [], f"run 20261201-030000-c's pipeline file is not in the archive {archive.location}")
    assert pipeline_diff(None, (a, info_a), (b, info_b))[1].startswith("the archive is off")
