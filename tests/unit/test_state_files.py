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
