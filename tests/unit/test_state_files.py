"""Files farm writes and reads back, damaged or edited by hand, read through their declarations (farm.schema):
each problem a job error naming the file and the field, never a traceback, nothing changed.
Cases: ``farm lab``'s lab.json, an archive's run record, a lab's image manifest.json."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from farm.archive.record import Entry, RunRecord, TextFile
from farm.errors import JobError
from farm.images.image import load_image
from farm.virtual.lab import plan_lab

from ..conftest import run_farm

SHA = "a" * 64


def _lab_json(tmp_path: Path) -> dict:
    lab = plan_lab(tmp_path, {"maaxboard": 1})
    lab.save()
    return json.loads(lab.state_file.read_text())


@pytest.mark.parametrize("spoil, words", [
    (lambda good: [], "lab.json: lab state must be a JSON object, not list"),
    (lambda good: {}, "lab.json: (top level): missing required field 'name'"),
    (lambda good: "[" * 10_000 + "]" * 10_000, "lab.json: lab state nested deeper than 64 levels"),
    (lambda good: {**good, "ssh_port": "22"}, "lab.json: ssh_port: expected an integer, got str '22'"),
    (lambda good: {**good, "pdu_port": 99999}, "lab.json: pdu_port: must be 1-65535"),
    (lambda good: {**good, "boards": [{**good["boards"][0], "model": "rpi"}]},
     "lab.json: boards[0].model: 'rpi': expected one of maaxboard"),
    (lambda good: {**good, "boards": [[]]}, "lab.json: boards: item 0 must be a mapping"),
    (lambda good: {**good, "processes": [{"name": "qemu", "pid": 1}]},
     "lab.json: processes[0]: missing required field 'processes[0].start'"),
    (lambda good: {**good, "boardz": []}, "lab.json: boardz: unknown field (allowed: boards, coordinator, name, "
                                          "pdu_port, processes, ssh_port); did you mean 'boards'?"),
])
@pytest.mark.parametrize("command", ["status", "down"])
def test_a_damaged_lab_state_is_a_job_error_naming_its_field(tmp_path, spoil, words, command):
    state = tmp_path / "lab.json"
    bad = spoil(_lab_json(tmp_path))
    state.write_text(bad if isinstance(bad, str) else json.dumps(bad))
    before = state.read_bytes()
    proc = run_farm("lab", command, "--dir", str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"farm: job error: {tmp_path}/{words}" in proc.stderr, proc.stderr
    assert state.read_bytes() == before


def _record() -> dict:
    record = RunRecord("20261129-224818-e762", "2026-11-29T22:50:00", "ci", "smoke", "passed", "2026-11-29T22:48:18",
                       {"run.json": Entry(SHA, 10)}, (TextFile(SHA, 5, "images/x.yaml"),), {},
                       pipeline=TextFile(SHA, 3, "pipelines/smoke.yaml"))
    return json.loads(json.dumps(record.as_json()))


@pytest.mark.parametrize("spoil, words", [
    (lambda r: {**r, "format": 2}, "format: 2: this farm reads format 1 (a newer farm archived it? upgrade farm)"),
    (lambda r: {**r, "run_id": "../x"}, "run_id: '../x' is not a valid run id"),
    (lambda r: {**r, "files": {"run.json": {"sha256": "x", "size": 1}}},
     "files.run.json.sha256: 'x' is not a sha256"),
    (lambda r: {**r, "files": {"/etc/passwd": {"sha256": SHA, "size": 1}}},
     "files./etc/passwd: unknown field (allowed: reproduction.json, results.csv, run.json)"),
    (lambda r: {**r, "recipes": [{"sha256": SHA, "size": 1, "path": "../../x.yaml"}]},
     "recipes[0].path: '../../x.yaml' is not a relative path inside the archived tree"),
    (lambda r: {**r, "images": {"i": {"key": "k", "manifest": {"sha256": SHA, "size": 1},
                                      "artifacts": {"../Image": {"sha256": SHA, "size": 1}}}}},
     "images.i.artifacts.../Image: '../Image' is not a plain file name"),
    (lambda r: {**r, "pipeline": {"sha256": SHA, "size": -1, "path": "p.yaml"}}, "pipeline.size: -1: not a size"),
])
def test_a_forged_archive_record_is_refused_naming_its_field(spoil, words):
    assert RunRecord.from_json(_record(), "runs/r.json").run_id == "20261129-224818-e762"
    with pytest.raises(JobError) as refused:
        RunRecord.from_json(spoil(_record()), "runs/r.json")
    assert str(refused.value).startswith(f"runs/r.json: {words}"), refused.value


def _system_dir(tmp_path: Path, **manifest) -> Path:
    path = tmp_path / "img"
    path.mkdir(parents=True)
    (path / "loader.img").write_bytes(b"\0" * 16)
    artifacts = {"loader.img": {"sha256": hashlib.sha256(b"\0" * 16).hexdigest(), "size": 16}}
    (path / "manifest.json").write_text(json.dumps({"kind": "system", "name": "client-vm", "arch": "arm64",
                                                    "boot": {"go": "loader.img"}, "load_addr": "0x50000000",
                                                    "artifacts": artifacts, **manifest}))
    return path


@pytest.mark.parametrize("manifest, words", [
    ({"boot": {"goo": "loader.img"}}, "boot.goo: unknown field (allowed: bootelf, bootm, go); did you mean 'go'?"),
    ({"boot": {"go": "other.img"}}, "boot.go: 'other.img' is not one of the artifacts"),
    ({"boot": {}}, "boot: expected the file each U-Boot command boots"),
    ({"kind": "rtos"}, "kind: 'rtos': expected one of linux, system"),
    ({"arch": None}, "missing required field 'arch'"),
    ({"artifacts": {"loader.img": {"sha256": "A" * 64, "size": 16}}}, "artifacts.loader.img.sha256: 'AAAA"),
])
def test_a_labs_system_manifest_is_read_as_declared(tmp_path, manifest, words):
    assert load_image(_system_dir(tmp_path / "good")).boots == {"go": "loader.img"}
    with pytest.raises(JobError) as refused:
        load_image(_system_dir(tmp_path, **manifest))
    assert str(refused.value).startswith(f"{tmp_path}/img/manifest.json: {words}"), refused.value
